#!/usr/bin/env bash
# bench/live/run.sh BIN [OPS]: demovm's allocation workload untraced, under
# `vmtrace record` (exact, batched) and under `vmtrace record --live`
# (per-event probes with addresses) and under heaptrack (the peer: it
# tracks every malloc and free), side by side in one run, each three times,
# reporting the median wall time and the ratios. Root.
set -euo pipefail
BIN=${1:?usage: run.sh BIN [OPS]} OPS=${2:-200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vm=("$BIN/demovm" --workload alloc --ops "$OPS" --quiet)

t() { # command...: wall seconds
	local s e
	s=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	e=$(date +%s.%N)
	echo "$e - $s" | bc
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
b=$(median "${base[@]}") e=$(median "${exact[@]}") l=$(median "${live[@]}")
printf 'demovm --workload alloc --ops %s (median of 3, wall s)\n' "$OPS"
printf '  untraced          %8.3f\n' "$b"
printf '  record (exact)    %8.3f  %5.2fx untraced\n' "$e" "$(echo "$e / $b" | bc -l)"
printf '  record --live     %8.3f  %5.2fx untraced  %5.2fx exact record\n' "$l" \
	"$(echo "$l / $b" | bc -l)" "$(echo "$l / $e" | bc -l)"
if [ ${#heap[@]} -gt 0 ]; then
	h=$(median "${heap[@]}")
	printf '  heaptrack         %8.3f  %5.2fx untraced  %5.2fx exact record\n' "$h" \
		"$(echo "$h / $b" | bc -l)" "$(echo "$h / $e" | bc -l)"
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
