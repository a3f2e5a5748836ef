#!/usr/bin/env bash
# The USDT notes of each ELF file match probes/vmtrace.d one to one: the
# same probe names (provider vmtrace), the argument count the .d declares,
# and a non-zero semaphore that is exactly the file's
# vmtrace_<probe>_semaphore symbol.
# Usage: elf_notes_match.sh PROBES_D ELF...
set -euo pipefail
probes_d=$1; shift

fail() { echo "FAIL: $*" >&2; exit 1; }

# "name argc" per probe of the .d file, comments removed.
expected=$(awk '
	{ text = text $0 "\n" }
	END {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
		gsub(/\/\/[^\n]*/, " ", text)
		while (match(text, /probe[ \t\n]+[A-Za-z_][A-Za-z0-9_]*[ \t\n]*\([^)]*\)/)) {
			decl = substr(text, RSTART, RLENGTH)
			text = substr(text, RSTART + RLENGTH)
			name = decl; sub(/^probe[ \t\n]+/, "", name); sub(/[ \t\n]*\(.*/, "", name)
			args = decl; sub(/^[^(]*\(/, "", args); sub(/\)$/, "", args)
			gsub(/[ \t\n]/, "", args)
			argc = (args == "" || args == "void") ? 0 : split(args, parts, ",")
			print name, argc
		}
	}' "$probes_d" | sort)
[ -n "$expected" ] || fail "no probes found in $probes_d"
[ "$(echo "$expected" | awk '{print $1}' | sort | uniq -d)" = "" ] || fail "$probes_d declares a probe twice"

for elf in "$@"; do
	[ -r "$elf" ] || fail "cannot read $elf"
	# "provider name argc semaphore" per note
	notes=$(LC_ALL=C readelf -n "$elf" | awk '
		/^[ \t]*Provider:/ { provider = $2 }
		/^[ \t]*Name:/ { name = $2 }
		/Semaphore:/ { sem = $NF }
		/^[ \t]*Arguments:/ {
			print provider, name, NF - 1, sem
			provider = name = sem = ""
		}')
	[ -n "$notes" ] || fail "$elf has no stapsdt notes"
	echo "$notes" | awk '$1 != "vmtrace" { exit 1 }' || fail "$elf: a note of another provider"

	found=$(echo "$notes" | awk '{ print $2 }' | sort -u)
	if [ "$found" != "$(echo "$expected" | awk '{ print $1 }')" ]; then
		diff <(echo "$expected" | awk '{ print $1 }') <(echo "$found") >&2 || true
		fail "$elf: probe names differ from $probes_d (< .d, > notes)"
	fi

	symbols=$(nm "$elf" 2>/dev/null || true)
	[ -n "$symbols" ] || symbols=$(nm -D "$elf")
	while read -r provider name argc sem; do
		want=$(echo "$expected" | awk -v n="$name" '$1 == n { print $2 }')
		[ "$argc" = "$want" ] || fail "$elf: $name has $argc arguments, $probes_d says $want"
		[ $((sem)) -ne 0 ] || fail "$elf: $name has no semaphore"
		# awk reads all its input: quitting at the match could kill the
		# writer of a pipe with SIGPIPE, which pipefail turns into a failure
		addr=$(awk -v s="vmtrace_${name}_semaphore" '$3 == s && a == "" { a = $1 } END { print a }' \
			<<< "$symbols")
		[ -n "$addr" ] || fail "$elf: no symbol vmtrace_${name}_semaphore"
		[ $((sem)) -eq $((16#$addr)) ] ||
			fail "$elf: $name's semaphore $sem is not vmtrace_${name}_semaphore (0x$addr)"
	done <<< "$notes"
	# distinct probes never share a semaphore
	[ "$(echo "$notes" | awk '{ print $2, $4 }' | sort -u | awk '{ print $2 }' | sort | uniq -d)" = "" ] ||
		fail "$elf: two probes share a semaphore"
	echo "$elf: $(echo "$notes" | wc -l) notes, $(echo "$found" | wc -l) probes match $probes_d"
done
