#!/bin/bash
# bench/runtimes/run_java_agent.sh: what vmtrace's JVMTI agent costs a JVM,
# side by side in one run with HotSpot's DTrace probes (vmtrace's other JVM
# path) and JFR's allocation sampling, the JVM's own tool. Needs root.
#
# Usage: bench/runtimes/run_java_agent.sh [VMTRACE] [REPEATS] [ITERATIONS] [CLASSES]
#   VMTRACE     default build/bin/vmtrace
#   REPEATS     default 3 (the median is shown)
#   ITERATIONS  default 5000000 (Bench.java: 1 object, 3 calls each)
#   CLASSES     default 300 (generated classes javac compiles)
#
# Part 1, Bench.java's own timing of its loop (ns per iteration) after the
# tracer attached to the running JVM (-p), or with JFR on from the start:
#   untraced         no tracer
#   JFR sampling     -XX:StartFlightRecording, settings=profile (ObjectAllocationSample
#                    among its events, throttled to 300 a second)
#   agent 512K       vmtrace record -p: the agent loaded through the attach
#                    mechanism, sampled at the default 512 KiB
#   agent exact      vmtrace record -p --sample 0: every allocation through JVMTI,
#                    per class and method
#   agent exact class  the same with --no-methods: per class, no frame read
#   DTrace probes    -XX:+DTraceAllocProbes at start, vmtrace record --runtime hotspot -p
# and the time from `vmtrace record -p` to its "recording" line (the attach).
#
# Part 2, a real program's whole-command wall time: javac over CLASSES
# generated classes, untraced, under JFR, under vmtrace record (the agent,
# exact), --sample 512K, and --runtime hotspot (the DTrace probes).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=$(readlink -f "${1:-$HERE/../../build/bin/vmtrace}")
REPEATS=${2:-3}
ITER=${3:-5000000}
NCLASSES=${4:-300}
JAVA=/usr/bin/java
[ "$(id -u)" = 0 ] || { echo "run_java_agent.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_java_agent.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
[ -f "$(dirname "$VMTRACE")/../lib/jvm/libvmtrace_jvm.so" ] ||
	{ echo "run_java_agent.sh: no JVM agent beside $VMTRACE" >&2; exit 1; }
command -v javac >/dev/null || { echo "run_java_agent.sh: javac not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
javac -d "$TMP/classes" "$HERE/Bench.java"
. "$HERE/lib.sh"
W=(-Xmx256m -cp "$TMP/classes" Bench "$ITER")
JFR="-XX:StartFlightRecording=filename=$TMP/rec.jfr,settings=profile"

for _ in $(seq "$REPEATS"); do
	one_run none "" "$JAVA" "${W[@]}" >>"$TMP/base"
	one_run none "" "$JAVA" "$JFR" "${W[@]}" 2>/dev/null >>"$TMP/jfr"
	one_run vmtrace "" "$JAVA" "${W[@]}" >>"$TMP/agent"
	one_run vmtrace "--sample 0" "$JAVA" "${W[@]}" >>"$TMP/exact"
	one_run vmtrace "--sample 0 --no-methods" "$JAVA" "${W[@]}" >>"$TMP/exact_class"
	one_run vmtrace "--runtime hotspot" "$JAVA" -XX:+DTraceAllocProbes "${W[@]}" >>"$TMP/dtrace"
done
# the attach alone: vmtrace record -p of a waiting JVM until it says it records
attach_once() {
	local fifo=$TMP/ain out=$TMP/aout
	rm -f "$fifo" "$out"
	mkfifo "$fifo"
	"$JAVA" "${W[@]}" <"$fifo" >"$out" &
	local wpid=$!
	exec 4>"$fifo"
	until grep -q ready "$out" 2>/dev/null; do sleep 0.05; done
	local t0 t1
	t0=$(date +%s%N)
	"$VMTRACE" record -p $wpid -o "$TMP/a.data" --force >/dev/null 2>"$TMP/a.err" &
	local tpid=$!
	until grep -q "recording pid" "$TMP/a.err" 2>/dev/null; do tracer_alive $tpid $wpid; done
	t1=$(date +%s%N)
	kill -INT $tpid; wait $tpid || true
	kill $wpid; wait $wpid 2>/dev/null || true
	exec 4>&-
	echo $(((t1 - t0) / 1000000))
}
for _ in $(seq "$REPEATS"); do attach_once >>"$TMP/attach"; done

for c in base jfr agent exact exact_class dtrace attach; do
	declare "$c=$(median <"$TMP/$c")"
done
echo "$($JAVA -version 2>&1 | head -1), Bench.java: $ITER iterations x (1 object + 3 calls), median of $REPEATS"
row() { awk -v n="$1" -v v="$2" -v b="$base" 'BEGIN { printf "%-34s %8d ns/iter %8.2fx untraced\n", n, v, v / b }'; }
row "untraced" "$base"
row "JFR (settings=profile)" "$jfr"
row "vmtrace agent, sampled 512K (-p)" "$agent"
row "vmtrace agent, exact (-p)" "$exact"
row "vmtrace agent, exact per class (-p)" "$exact_class"
row "vmtrace DTrace probes (-p)" "$dtrace"
awk -v e="$exact" -v c="$exact_class" -v d="$dtrace" \
	'BEGIN { printf "DTrace probes (per class) / agent exact: %.2f by class and method, %.2f by class\n", d / e, d / c }'
echo "attach (vmtrace record -p to recording, agent loaded): median ${attach} ms"

# Part 2: javac over generated classes, whole command
mkdir -p "$TMP/src"
for i in $(seq "$NCLASSES"); do
	cat >"$TMP/src/C$i.java" <<JAVA
import java.util.*;
public class C$i {
	private final Map<String, List<Integer>> m = new HashMap<>();
	public int f$i(int x) { List<Integer> l = m.computeIfAbsent("k" + x, k -> new ArrayList<>()); l.add(x); return l.size() + C$(((i % NCLASSES) + 1)).g(x); }
	public static int g(int y) { StringBuilder b = new StringBuilder(); for (int j = 0; j < y; j++) b.append(j); return b.length(); }
	public String h(Object o) { return switch (o.hashCode() % 3) { case 0 -> "a"; case 1 -> String.valueOf(o); default -> o.toString() + $i; }; }
}
JAVA
done
timed() {
	rm -rf "$TMP/out"
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>"$TMP/err" || { echo "run_java_agent.sh: failed: $* : $(tail -c 400 "$TMP/err")" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}
JAVAC=(javac -d "$TMP/out" "$TMP"/src/*.java)
for _ in $(seq "$REPEATS"); do
	timed "${JAVAC[@]}" >>"$TMP/j_base"
	timed javac -J"$JFR" -d "$TMP/out" "$TMP"/src/*.java >>"$TMP/j_jfr"
	timed "$VMTRACE" record -o "$TMP/r.data" --force -- "${JAVAC[@]}" >>"$TMP/j_exact"
	timed "$VMTRACE" record --sample 512K -o "$TMP/r.data" --force -- "${JAVAC[@]}" >>"$TMP/j_sampled"
	timed "$VMTRACE" record --runtime hotspot -o "$TMP/r.data" --force -- "${JAVAC[@]}" >>"$TMP/j_dtrace"
done
for c in j_base j_jfr j_exact j_sampled j_dtrace; do
	declare "$c=$(median <"$TMP/$c")"
done
echo "javac over $NCLASSES generated classes, whole command, median of $REPEATS"
jrow() { awk -v n="$1" -v v="$2" -v b="$j_base" 'BEGIN { printf "%-34s %8.3f s %8.2fx untraced\n", n, v / 1e6, v / b }'; }
jrow "untraced" "$j_base"
jrow "JFR (settings=profile)" "$j_jfr"
jrow "vmtrace agent, exact" "$j_exact"
jrow "vmtrace agent, --sample 512K" "$j_sampled"
jrow "vmtrace DTrace probes" "$j_dtrace"
