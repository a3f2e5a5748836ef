# bash completion for vmtrace: commands, then each command's options as its
# own --help lists them (the one source), files for FILE operands.
_vmtrace() {
	local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "record report top serve list diff help --help --version --verbose" -- "$cur"))
	elif [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null |
			grep -oE -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
	elif [[ $cmd == help ]]; then
		COMPREPLY=($(compgen -W "record report top serve list diff" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}
complete -F _vmtrace vmtrace
