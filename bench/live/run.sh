#!/usr/bin/env bash
# bench/live/run.sh BIN [OPS]: demovm's allocation workload untraced, under
# `vmtrace record` (exact, batched) and under `vmtrace record --live`
# (batched counts and addresses) and under heaptrack (the peer: it tracks
# every malloc and free), side by side in one run, each three times,
# reporting the median wall time and the ratios, and beside them the median
# CPU time (user + system of the tracer and the workload, BPF programs
# included: they run in the workload's system time), which the other jobs of
# a shared machine move less than the wall time. Root.
set -euo pipefail
BIN=${1:?usage: run.sh BIN [OPS]} OPS=${2:-200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vm=("$BIN/demovm" --workload alloc --ops "$OPS" --quiet)

t() { # command...: "wall cpu" seconds (cpu: user + system, children included)
	local TIMEFORMAT='%R %U %S' r
	r=$({ time "$@" >/dev/null 2>&1; } 2>&1 | tail -1)
	set -- $r
	echo "$1 $(echo "$2 + $3" | bc)"
}
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

declare -a base exact live heap
for i in 1 2 3; do
	base+=("$(t "${vm[@]}")")
	exact+=("$(t "$BIN/vmtrace" record -o "$work/e.data" --force -- "${vm[@]}")")
	live+=("$(t "$BIN/vmtrace" record --live -o "$work/l.data" --force -- "${vm[@]}")")
	if command -v heaptrack >/dev/null; then
		heap+=("$(t heaptrack -o "$work/h.$i" "${vm[@]}")")
	fi
done
wall() { median $(printf '%s\n' "$@" | cut -d' ' -f1); }
cpu() { median $(printf '%s\n' "$@" | cut -d' ' -f2); }
row() { # name wall cpu: the line with its ratios to untraced and to exact record
	printf '  %-16s %7.3f %7.3f  %5.2fx %5.2fx untraced' "$1" "$2" "$3" \
		"$(echo "$2 / $bw" | bc -l)" "$(echo "$3 / $bc" | bc -l)"
	[ -n "${ew:-}" ] && printf '  %5.2fx %5.2fx exact record' "$(echo "$2 / $ew" | bc -l)" \
		"$(echo "$3 / $ec" | bc -l)"
	printf '\n'
}
bw=$(wall "${base[@]}") bc=$(cpu "${base[@]}")
printf 'demovm --workload alloc --ops %s (median of 3; wall s, cpu s; ratios wall, cpu)\n' "$OPS"
row untraced "$bw" "$bc"
row 'record (exact)' "$(wall "${exact[@]}")" "$(cpu "${exact[@]}")"
ew=$(wall "${exact[@]}") ec=$(cpu "${exact[@]}")
row 'record --live' "$(wall "${live[@]}")" "$(cpu "${live[@]}")"
if [ ${#heap[@]} -gt 0 ]; then
	row heaptrack "$(wall "${heap[@]}")" "$(cpu "${heap[@]}")"
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
