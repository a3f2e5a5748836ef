#!/bin/bash
# bench/runtimes/run_java.sh: the cost of vmtrace on Debian's stock OpenJDK
# 17 (HotSpot's own probes in libjvm.so), side by side with bpftrace's
# hotspot one-liners doing the same counting, in one run. Needs root.
#
# Usage: bench/runtimes/run_java.sh [VMTRACE] [ITERATIONS] [REPEATS]
#   VMTRACE     default build/bin/vmtrace
#   ITERATIONS  default 200000 (each: 1 object, 3 method entries)
#   REPEATS     default 3 (the median is shown)
#
# Configurations (Bench.java warms the JIT, then times its own loop after
# the tracer attached):
#   untraced                 no flag, no tracer
#   +alloc flag              -XX:+DTraceAllocProbes, no tracer: what the flag
#                            costs (every allocation leaves the fast path)
#   vmtrace allocs           the same JVM, vmtrace record -p: per class, count
#                            and bytes (the size read from the object)
#   vmtrace --all allocs     the same under record --all (every process of a
#                            known runtime: the keys carry the process)
#   bpftrace allocs          object__alloc: @[class] = count(), sum(size)
#   +both flags              -XX:+ExtendedDTraceProbes, no tracer
#   vmtrace allocs+methods   calls per method and allocations per method
#   vmtrace --all a+m        the same under record --all
#   bpftrace allocs+methods  the same three probes: allocations per class,
#                            calls per (class, method), returns counted
#                            (no stack, so no allocation per method)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=${1:-$HERE/../../build/bin/vmtrace}
ITER=${2:-200000}
REPEATS=${3:-3}
JAVA=/usr/bin/java
[ "$(id -u)" = 0 ] || { echo "run_java.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_java.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
command -v bpftrace >/dev/null || { echo "run_java.sh: bpftrace not installed" >&2; exit 1; }
command -v javac >/dev/null || { echo "run_java.sh: javac not installed (openjdk-17-jdk-headless)" >&2; exit 1; }
JVM=$(readlink -f "$(dirname "$(readlink -f "$JAVA")")/../lib/server/libjvm.so")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
javac -d "$TMP/classes" "$HERE/Bench.java"
BT_ALLOCS="BEGIN { printf(\"attached\\n\"); }
usdt:$JVM:hotspot:object__alloc { @n[str(arg1, arg2)] = count(); @b[str(arg1, arg2)] = sum(arg3); }"
BT_BOTH="BEGIN { printf(\"attached\\n\"); }
usdt:$JVM:hotspot:object__alloc { @n[str(arg1, arg2)] = count(); @b[str(arg1, arg2)] = sum(arg3); }
usdt:$JVM:hotspot:method__entry { @c[str(arg1, arg2), str(arg3, arg4)] = count(); }
usdt:$JVM:hotspot:method__return { @r = count(); }"

. "$HERE/lib.sh"
W=(-Xmx256m -cp "$TMP/classes" Bench "$ITER")

CONFIGS=(base alloc vm_alloc all_alloc bt_alloc both vm_both all_both bt_both)
for _ in $(seq "$REPEATS"); do
	one_run none "" "$JAVA" "${W[@]}" >>"$TMP/base"
	one_run none "" "$JAVA" -XX:+DTraceAllocProbes "${W[@]}" >>"$TMP/alloc"
	one_run vmtrace "" "$JAVA" -XX:+DTraceAllocProbes "${W[@]}" >>"$TMP/vm_alloc"
	one_run vmtrace_all "" "$JAVA" -XX:+DTraceAllocProbes "${W[@]}" >>"$TMP/all_alloc"
	one_run bpftrace "$BT_ALLOCS" "$JAVA" -XX:+DTraceAllocProbes "${W[@]}" >>"$TMP/bt_alloc"
	one_run none "" "$JAVA" -XX:+ExtendedDTraceProbes "${W[@]}" >>"$TMP/both"
	one_run vmtrace "" "$JAVA" -XX:+ExtendedDTraceProbes "${W[@]}" >>"$TMP/vm_both"
	one_run vmtrace_all "" "$JAVA" -XX:+ExtendedDTraceProbes "${W[@]}" >>"$TMP/all_both"
	one_run bpftrace "$BT_BOTH" "$JAVA" -XX:+ExtendedDTraceProbes "${W[@]}" >>"$TMP/bt_both"
done
for c in "${CONFIGS[@]}"; do
	declare "$c=$(median <"$TMP/$c")"
done

echo "$($JAVA -version 2>&1 | head -1), $ITER iterations x (1 object + 3 method entries), median of $REPEATS"
row() { awk -v n="$1" -v v="$2" -v b="$base" -v r="$3" \
	'BEGIN { printf "%-28s %10d ns/iter %7.2fx untraced %s\n", n, v, v / b, r }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "(bpftrace/vmtrace %.2f)", b / a }'; }
all_ratio() { awk -v a="$1" -v p="$2" 'BEGIN { printf "(--all/-p %.2f)", a / p }'; }
printf "%-28s %10s\n" configuration "per iteration"
row "untraced" "$base" ""
row "+alloc flag" "$alloc" ""
row "vmtrace allocs" "$vm_alloc" "$(ratio "$vm_alloc" "$bt_alloc")"
row "vmtrace --all allocs" "$all_alloc" "$(all_ratio "$all_alloc" "$vm_alloc")"
row "bpftrace allocs" "$bt_alloc" ""
row "+both flags" "$both" ""
row "vmtrace allocs+methods" "$vm_both" "$(ratio "$vm_both" "$bt_both")"
row "vmtrace --all allocs+methods" "$all_both" "$(all_ratio "$all_both" "$vm_both")"
row "bpftrace allocs+methods" "$bt_both" ""
