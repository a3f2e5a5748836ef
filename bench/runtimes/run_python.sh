#!/bin/bash
# bench/runtimes/run_python.sh: the cost of vmtrace on Debian's stock
# python3.11 (objects through tracemalloc's hook, calls through the probes'
# helpers), side by side with bpftrace counting the same calls, in one run.
# Needs root.
#
# Usage: bench/runtimes/run_python.sh [VMTRACE] [ITERATIONS] [REPEATS]
#   VMTRACE     default build/bin/vmtrace
#   ITERATIONS  default 200000 (each: 2 Python calls, about 9 objects), for
#               the configurations that trap per event; those that run in
#               the process (untraced, tracemalloc, heaptrack, the extension)
#               run 5 times as many (as run.sh's; every row is per iteration)
#   REPEATS     default 3 (the median is shown)
#
# Configurations (the workload times its own loop, after the tracer attached):
#   untraced                 no tracer
#   untraced+tracemalloc     no tracer, PYTHONTRACEMALLOC=1: the price CPython
#                            asks before every object creation reaches a hook
#   vmtrace objects          --no-methods, with tracemalloc: objects per type
#                            and function; bpftrace cannot put a uprobe on the
#                            hook (a local function of a fixed executable), so
#                            objects have no bpftrace peer
#   vmtrace stacks           the same with --stack vm: objects per whole
#                            Python stack, walked in BPF at the hook
#   vmtrace calls            without tracemalloc: calls per function only
#   bpftrace calls           without tracemalloc: calls per (file, function)
#                            from function__return
#   untraced+tracemalloc 25  tracemalloc with 25 frames a trace, no tracer
#   heaptrack                every malloc with its native stack (whole command's
#                            loop, timed inside as the others)
#   ext dormant              vmtrace's CPython extension imported, no tracer
#   ext (by line)            vmtrace record -p of the program with the extension
#                            armed: bytes by function and line, no trap
#   ext --stack vm           + by whole Python stack
#   ext --sample 512K        sampled by bytes
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=${1:-$HERE/../../build/bin/vmtrace}
ITER=${2:-200000}
IN_ITER=$((5 * ITER))
REPEATS=${3:-3}
PY=/usr/bin/python3.11
[ "$(id -u)" = 0 ] || { echo "run_python.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_python.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
command -v bpftrace >/dev/null || { echo "run_python.sh: bpftrace not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BT_CALLS="BEGIN { printf(\"attached\\n\"); }
usdt:$PY:python:function__return { @calls[str(arg0), str(arg1)] = count(); }"

. "$HERE/lib.sh"
W=("$PY" "$HERE/bench.py" "$ITER")
IN=("$PY" "$HERE/bench.py" "$IN_ITER")

PYDIR=$(dirname "$VMTRACE")/../lib/python
EXT=(env PYTHONTRACEMALLOC=0 PYTHONPATH="$PYDIR" "${IN[@]}")
command -v heaptrack >/dev/null || { echo "run_python.sh: needs heaptrack" >&2; exit 1; }

CONFIGS=(base base_tm vm_obj vm_stacks vm_calls bt_calls base_tm25 heaptrack ext_dorm ext_line ext_st ext_samp)
for _ in $(seq "$REPEATS"); do
	one_run none "" env PYTHONTRACEMALLOC=0 "${IN[@]}" >>"$TMP/base"
	one_run none "" env PYTHONTRACEMALLOC=1 "${IN[@]}" >>"$TMP/base_tm"
	one_run vmtrace --no-methods env PYTHONTRACEMALLOC=1 "${W[@]}" >>"$TMP/vm_obj"
	one_run vmtrace "--no-methods --stack vm" env PYTHONTRACEMALLOC=1 "${W[@]}" >>"$TMP/vm_stacks"
	one_run vmtrace "" env PYTHONTRACEMALLOC=0 "${W[@]}" >>"$TMP/vm_calls"
	one_run bpftrace "$BT_CALLS" env PYTHONTRACEMALLOC=0 "${W[@]}" >>"$TMP/bt_calls"
	one_run none "" env PYTHONTRACEMALLOC=25 "${IN[@]}" >>"$TMP/base_tm25"
	one_run none "" heaptrack -o "$TMP/heaptrack.data" env PYTHONTRACEMALLOC=0 "${IN[@]}" >>"$TMP/heaptrack"
	one_run none "" "${EXT[@]}" --import >>"$TMP/ext_dorm"
	one_run vmtrace "" "${EXT[@]}" --armed >>"$TMP/ext_line"
	one_run vmtrace "--stack vm" "${EXT[@]}" --armed >>"$TMP/ext_st"
	one_run vmtrace "--sample 512K" "${EXT[@]}" --armed >>"$TMP/ext_samp"
done
for c in "${CONFIGS[@]}"; do
	declare "$c=$(median <"$TMP/$c")"
done

echo "$($PY -V), $ITER iterations ($IN_ITER in the process's own configurations) x 2 calls + 9 objects, median of $REPEATS"
row() { awk -v n="$1" -v v="$2" -v b="$base" -v r="$3" \
	'BEGIN { printf "%-28s %10d ns/iter %7.2fx untraced %s\n", n, v, v / b, r }'; }
printf "%-28s %10s\n" configuration "per iteration"
row "untraced" "$base" ""
row "untraced+tracemalloc" "$base_tm" ""
row "vmtrace objects" "$vm_obj" ""
row "vmtrace stacks" "$vm_stacks" "$(awk -v a="$vm_stacks" -v b="$vm_obj" 'BEGIN { printf "(stacks/objects %.2f)", a / b }')"
row "vmtrace calls" "$vm_calls" "$(awk -v a="$vm_calls" -v b="$bt_calls" 'BEGIN { printf "(bpftrace/vmtrace %.2f)", b / a }')"
row "bpftrace calls" "$bt_calls" ""
row "untraced+tracemalloc 25" "$base_tm25" ""
row "heaptrack" "$heaptrack" ""
row "ext dormant" "$ext_dorm" ""
row "ext (by line)" "$ext_line" "$(awk -v a="$ext_line" -v b="$vm_obj" 'BEGIN { printf "(objects path/ext %.2f)", b / a }')"
row "ext --stack vm" "$ext_st" "$(awk -v a="$ext_st" -v b="$vm_stacks" 'BEGIN { printf "(stacks path/ext %.2f)", b / a }')"
row "ext --sample 512K" "$ext_samp" ""
awk -v o="$vm_obj" -v t="$base_tm" -v b="$base" -v c="$vm_calls" -v bt="$bt_calls" 'BEGIN {
	printf "objects: %.0f ns per object over tracemalloc alone (tracemalloc %.0f); calls: vmtrace %.0f ns per call, bpftrace %.0f\n", (o - t) / 9, (t - b) / 9, (c - b) / 2, (bt - b) / 2 }'
