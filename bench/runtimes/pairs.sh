# bench/runtimes/pairs.sh: interleaved pairs, what run_rdoc.sh and
# run_rdoc_root.sh share. Source it after setting TMP (a scratch directory)
# and defining run_config CONFIG, which runs one configuration once and
# prints its wall time in microseconds.

# pairs_run REPEATS BASE CONFIG...: round robin, each CONFIG's run right
# after a BASE run (an interleaved pair): a change in the machine's load
# touches both alike.
pairs_run() {
	local repeats=$1 base=$2 b t c
	shift 2
	for _ in $(seq "$repeats"); do
		for c in "$@"; do
			b=$(run_config "$base")
			t=$(run_config "$c")
			echo "$b" >>"$TMP/$base"
			echo "$t" >>"$TMP/$c"
			echo "$t $b" >>"$TMP/$c.pairs"
		done
	done
	echo "1 1" >"$TMP/$base.pairs"
}

# min and median of a configuration's runs
pairs_stat() { sort -n "$TMP/$1" | awk '{ v[NR] = $1 } END { print v[1], v[int((NR + 1) / 2)] }'; }
# each run over the BASE run just before it, the median of those
pairs_ratio() { awk '{ print $1 / $2 }' "$TMP/$1.pairs" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# pairs_table BASE CONFIG=NAME...: a row per configuration, "(not run)"
# for one that has no runs
pairs_table() {
	local base=$1 base_min base_med mn md c n
	shift
	read -r base_min base_med <<<"$(pairs_stat "$base")"
	printf "%-24s %9s %9s %16s %14s\n" configuration "min s" "median s" "median/untraced" "median of pairs"
	for c in "$@"; do
		n=${c#*=} c=${c%%=*}
		[ -f "$TMP/$c" ] || { printf "%-24s %s\n" "$n" "(not run)"; continue; }
		read -r mn md <<<"$(pairs_stat "$c")"
		awk -v n="$n" -v a="$mn" -v b="$md" -v u="$base_med" -v p="$(pairs_ratio "$c")" \
			'BEGIN { printf "%-24s %9.3f %9.3f %15.2fx %13.3fx\n", n, a / 1e6, b / 1e6, b / u, p }'
	done
}
