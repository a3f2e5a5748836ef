#!/usr/bin/env bash
# The truth file is a function of the flags alone: the same seed gives the
# same bytes, with one thread or two, statically or dynamically linked; a
# different seed gives a different file; and what it says is consistent
# (every signal raised was delivered, the serial equals its increments).
# Usage: truth_deterministic.sh DEMOVM DEMOVM_SHARED
set -euo pipefail
demovm=$1 demovm_shared=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ops=1500

fail() { echo "FAIL: $*" >&2; exit 1; }

for threads in 1 2; do
	for run in a b; do
		"$demovm" --ops $ops --threads $threads --seed 7 --quiet --truth "$work/t$threads$run.json"
	done
	cmp "$work/t${threads}a.json" "$work/t${threads}b.json" ||
		fail "two runs with seed 7, $threads thread(s) differ"
	"$demovm_shared" --ops $ops --threads $threads --seed 7 --quiet --truth "$work/s$threads.json"
	cmp "$work/t${threads}a.json" "$work/s$threads.json" ||
		fail "demovm-shared differs from demovm ($threads thread(s))"

	t=$work/t${threads}a.json
	jq -e . "$t" >/dev/null || fail "$t is not JSON"
	check() { # jq expression that must be true, what it means
		jq -e "$1" "$t" >/dev/null || fail "$threads thread(s): $2 ($(jq -c "$1" "$t"))"
	}
	check ".seed == 7 and .ops == $ops and .threads == $threads" "run header"
	check '[.allocations[] | .class] | unique | length >= 6' "six or more classes allocated"
	check '[.allocations[] | .method] | unique | length >= 8' "eight or more methods allocate"
	check 'all(.allocations[]; .count > 0 and .bytes >= 24 * .count)' \
		"every allocation row has a count and plausible bytes"
	check '.allocations == (.allocations | sort_by(.class, .method))' "allocations sorted by class, method"
	check '.frees == (.frees | sort_by(.class))' "frees sorted by class"
	check '([.frees[].count] | add) <= ([.allocations[].count] | add)' "no more frees than allocations"
	check '[.allocations[] | select(.class == "String")] | (map(.bytes) | add) % (map(.count) | add) != 0' \
		"Strings vary in size"
	check '.gc.minor > 0 and .gc.major > 0' "minor and major collections"
	check '[.method_cache_resets[] | select(.method == "")] | length > 0' "whole-class cache resets"
	check '[.method_cache_resets[] | select(.method != "")] | length > 0' "per-method cache resets"
	check '(.constant_cache_resets | length) > 0' "constant cache resets"
	check '.global_serial == ([.global_serial_incs[].count] | add)' "serial equals its increments"
	check "[.signals[] | select(.signo == 12)][0].received == $threads * ($ops / 64 | floor)" \
		"every SIGUSR2 raised was delivered by the bus exactly once"
done

"$demovm" --ops $ops --threads 1 --seed 8 --quiet --truth "$work/seed8.json"
if cmp -s "$work/t1a.json" "$work/seed8.json"; then
	fail "seeds 7 and 8 gave the same truth"
fi
# thread i runs seed + i: two threads from seed 7 are seeds 7 and 8 side by side
jq -e --slurpfile one "$work/t1a.json" --slurpfile two "$work/seed8.json" \
	'.allocations | map({(.class + " " + .method): .count}) | add as $both
	 | ($one[0].allocations + $two[0].allocations
	    | group_by(.class + " " + .method)
	    | map({(.[0].class + " " + .[0].method): (map(.count) | add)}) | add) == $both' \
	"$work/t2a.json" >/dev/null || fail "two threads are not seed and seed + 1 side by side"

# live at the end: allocations less frees, per class
t=$work/t2a.json
check() { jq -e "$1" "$t" >/dev/null || fail "$2 ($(jq -c "$1" "$t"))"; }
check '([.allocations[] | {k: .class, v: .count}] + [.frees[] | {k: .class, v: (0 - .count)}]
	| group_by(.k) | map({(.[0].k): (map(.v) | add)}) | add | with_entries(select(.value != 0)))
	== ([.live[] | {k: .class, v: .count}] | group_by(.k) | map({(.[0].k): (map(.v) | add)}) | add)' \
	"live objects per class are allocations less frees"
check '.live_overflow == 0' "every live key counted"

# --leak N: N Sessions per thread from Registry#remember, and nothing else changes
"$demovm" --ops $ops --threads 2 --seed 7 --quiet --leak 0 --truth "$work/leak0.json"
"$demovm" --ops $ops --threads 2 --seed 7 --quiet --leak 25 --truth "$work/leak25.json"
t=$work/leak25.json
check '[.live[] | select(.class == "Session")] == [{"class": "Session", "method": "Registry#remember",
	"site": .live[] | select(.class == "Session") | .site, "count": 50, "bytes": 3600}]' \
	"--leak 25 on two threads leaves 50 Sessions of 72 bytes alive, from one site"
jq -e --slurpfile base "$work/leak0.json" \
	'(.live | map(select(.class != "Session"))) == $base[0].live
	 and (.allocations | map(select(.class != "Session"))) == $base[0].allocations
	 and .frees == $base[0].frees' "$t" >/dev/null ||
	fail "--leak 25 and --leak 0 differ in more than the Session rows"
echo "truth deterministic: ok"
