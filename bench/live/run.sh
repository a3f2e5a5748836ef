#!/usr/bin/env bash
# bench/live/run.sh BIN [OPS] [ROUNDS]: demovm's allocation workload untraced,
# under `vmtrace record` (exact, batched), under `vmtrace record --live`
# (batched counts, each object's word: docs/live.md), the same with demovm's
# plain calls (--uncached: batched addresses, the path of hosts that keep no
# word) and under heaptrack (the peer: it tracks every malloc and free), side
# by side in one run, the five interleaved in each of ROUNDS rounds (default
# 5), medians. Root.
#
# The headline is what the workload pays: demovm's worker threads' CPU time
# (user + system, from its summary line, as bench/consumer reads it), which
# holds the provider's work, the traps and the BPF programs run in them, and
# neither start-up nor attach and detach. Beside it, per command: the wall
# time (mostly the tracer's uprobe attach and detach), and the CPU time of
# the tracer and the workload together (user + system, children included).
#
# Each recording is checked against demovm's truth file of the same run
# (tests/e2e/compare_truth.py: exactly equal, nothing lost), after its timing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=${1:?usage: run.sh BIN [OPS] [ROUNDS]} OPS=${2:-200000} ROUNDS=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vm=("$BIN/demovm" --workload alloc --ops "$OPS")

t() { # command...: "wall cpu worker_cpu allocations" (seconds; cpu: user + system, children included)
	local TIMEFORMAT='%R %U %S' r w a
	r=$({ time "$@" >/dev/null 2>"$work/err"; } 2>&1 | tail -1)
	w=$(sed -n "s/.*workers' cpu \([0-9.]*\) s.*/\1/p" "$work/err" | tail -1)
	a=$(sed -n 's/^ *allocations \([0-9]*\) .*/\1/p' "$work/err" | tail -1)
	[ -n "$w" ] && [ -n "$a" ] || { echo "no summary from: $*" >&2; cat "$work/err" >&2; exit 1; }
	set -- $r
	echo "$1 $(echo "$2 + $3" | bc) $w $a"
}
median() { printf '%s\n' "$@" | sort -n | sed -n "$((($# + 1) / 2))p"; }
check() { # DATA TRUTH: the recording says exactly what demovm's truth says
	"$BIN/vmtrace" report --format json "$1" >"$work/report.json" &&
		/usr/bin/python3 "$here/../../tests/e2e/compare_truth.py" "$2" "$work/report.json" \
			>"$work/compare" ||
		{ echo "$1: vmtrace's counts differ from demovm's truth:" >&2; cat "$work/compare" >&2; exit 1; }
}

declare -a base exact live addr heap
for i in $(seq "$ROUNDS"); do
	base+=("$(t "${vm[@]}")")
	exact+=("$(t "$BIN/vmtrace" record -o "$work/e.data" --force -- "${vm[@]}" --truth "$work/e.json")")
	check "$work/e.data" "$work/e.json"
	live+=("$(t "$BIN/vmtrace" record --live -o "$work/l.data" --force -- "${vm[@]}" --truth "$work/l.json")")
	check "$work/l.data" "$work/l.json"
	addr+=("$(t "$BIN/vmtrace" record --live -o "$work/a.data" --force -- "${vm[@]}" --uncached --truth "$work/a.json")")
	check "$work/a.data" "$work/a.json"
	if command -v heaptrack >/dev/null; then
		heap+=("$(t heaptrack -o "$work/h.$i" "${vm[@]}")")
	fi
done
col() { # n rows...: the median of column n
	local n=$1
	shift
	median $(printf '%s\n' "$@" | cut -d' ' -f"$n")
}
allocs=$(col 4 "${base[@]}")
row() { # name rows...: worker cpu, its ratio to exact record and its ns an allocation (and its
	# free) over untraced; wall and cpu of the command, their ratios to exact record
	local w c x
	w=$(col 3 "${@:2}") x=$(col 1 "${@:2}") c=$(col 2 "${@:2}")
	printf '  %-16s %7.3f %6.2fx %9.0f   %7.3f %6.2fx   %7.3f %6.2fx\n' "$1" \
		"$w" "$(echo "$w / $ew" | bc -l)" "$(echo "($w - $bw) * 1000000000 / $allocs" | bc -l)" \
		"$x" "$(echo "$x / $ex" | bc -l)" "$c" "$(echo "$c / $ec" | bc -l)"
}
bw=$(col 3 "${base[@]}")
ew=$(col 3 "${exact[@]}") ex=$(col 1 "${exact[@]}") ec=$(col 2 "${exact[@]}")
printf 'demovm --workload alloc --ops %s: %s allocations; medians of %s interleaved rounds\n' \
	"$OPS" "$allocs" "$ROUNDS"
printf '  %-16s %-27s   %-16s   %s\n' '' "workload's cpu" 'command wall' 'tracer + workload cpu'
printf '  %-16s %7s %7s %9s   %7s %7s   %7s %7s\n' '' s 'x exact' 'ns/alloc' s 'x exact' s 'x exact'
row untraced "${base[@]}"
row 'record (exact)' "${exact[@]}"
row 'record --live' "${live[@]}"
row '--live, addresses' "${addr[@]}"
if [ ${#heap[@]} -gt 0 ]; then
	row heaptrack "${heap[@]}"
fi

# GC pauses as demovm measures them (its summary line), untraced and traced:
# a collection frees through object__free, so a trap per free lands in the
# pause itself unless the frees are batched.
pauses() { "$@" 2>&1 >/dev/null | sed -n 's/.*pauses \([0-9.]*\) ms total.*/\1/p' | tail -1; }
mixed=("$BIN/demovm" --ops 5000 --threads 2)
printf 'demovm --ops 5000 --threads 2: GC pauses, total ms\n'
printf '  untraced          %8s\n' "$(pauses "${mixed[@]}")"
printf '  record (exact)    %8s\n' "$(pauses "$BIN/vmtrace" record -o "$work/e.data" --force -- "${mixed[@]}")"
printf '  record --live     %8s\n' "$(pauses "$BIN/vmtrace" record --live -o "$work/l.data" --force -- "${mixed[@]}")"
