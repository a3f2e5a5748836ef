#!/bin/bash
# bench/runtimes/run_javac_root.sh: what vmtrace's JVMTI agent costs javac
# on an OpenJDK of the version matrix, in its container (a root of
# scripts/matrix/roots.sh entered with its own mount and pid namespaces),
# side by side in one run with JFR's allocation sampling, the JVM's own
# tool: javac over CLASSES generated classes, whole-command wall time from
# the container's start to its exit. vmtrace starts the container's command
# and gives the agent to javac at its exec (copied into the container's
# /tmp), so a traced run's time includes vmtrace's start and end. Needs root.
#
# Usage: bench/runtimes/run_javac_root.sh JDK [VMTRACE] [REPEATS] [CLASSES]
#   JDK      jdk21 (root trixie) or jdk25 (root sid)
#   VMTRACE  default build/bin/vmtrace
#   REPEATS  default 5 interleaved pairs (each run after an untraced one)
#   CLASSES  default 2000
#
# Configurations: untraced; JFR (-XX:StartFlightRecording, settings=profile:
# ObjectAllocationSample among its events); vmtrace record: the agent
# sampled at 512 KiB, exact per class (--no-methods), exact per class and
# method. CONFIGS="jfr sampled" (of jfr sampled class exact) runs fewer.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
JDK=${1:?usage: run_javac_root.sh JDK [VMTRACE] [REPEATS] [CLASSES]}
VMTRACE=$(readlink -f "${2:-$HERE/../../build/bin/vmtrace}")
REPEATS=${3:-5}
NCLASSES=${4:-2000}
case $JDK in
jdk21) SUITE=trixie ;;
jdk25) SUITE=sid ;;
*) echo "run_javac_root.sh: no root for $JDK" >&2; exit 1 ;;
esac
ROOT=${VMTRACE_ROOTS:-/var/cache/vmtrace/roots}/$SUITE
[ "$(id -u)" = 0 ] || { echo "run_javac_root.sh: needs root (BPF, namespaces)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_javac_root.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
ls "$ROOT"/usr/lib/jvm/java-"${JDK#jdk}"-openjdk-*/bin/javac >/dev/null 2>&1 ||
	{ echo "run_javac_root.sh: no OpenJDK ${JDK#jdk} in $ROOT (scripts/matrix/roots.sh $SUITE)" >&2; exit 1; }
IN=/tmp/vmtrace-bench-javac
TMP=$(mktemp -d)
rm -rf "${ROOT:?}$IN"
mkdir -p "$ROOT$IN/src"
trap 'rm -rf "$TMP" "${ROOT:?}$IN"' EXIT
for i in $(seq "$NCLASSES"); do
	cat >"$ROOT$IN/src/C$i.java" <<JAVA
import java.util.*;
public class C$i {
	private final Map<String, List<Integer>> m = new HashMap<>();
	public int f$i(int x) { List<Integer> l = m.computeIfAbsent("k" + x, k -> new ArrayList<>()); l.add(x); return l.size() + C$(((i % NCLASSES) + 1)).g(x); }
	public static int g(int y) { StringBuilder b = new StringBuilder(); for (int j = 0; j < y; j++) b.append(j); return b.length(); }
	public String h(Object o) { return switch (o.hashCode() % 3) { case 0 -> "a"; case 1 -> String.valueOf(o); default -> o.toString() + $i; }; }
}
JAVA
done
ENTER=(unshare --mount --pid --fork --mount-proc="$ROOT/proc" chroot "$ROOT")
JFR="-J-XX:StartFlightRecording=filename=$IN/rec.jfr,settings=profile"
javac_cmd() { echo "rm -rf $IN/out && javac $1 -d $IN/out $IN/src/*.java"; }

timed() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>"$TMP/err" || { echo "run_javac_root.sh: failed: $* : $(tail -c 400 "$TMP/err")" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}
run_config() {
	case $1 in
	base) timed "${ENTER[@]}" sh -c "$(javac_cmd "")" ;;
	jfr) timed "${ENTER[@]}" sh -c "$(javac_cmd "$JFR")" ;;
	sampled) timed "$VMTRACE" record --sample 512K -o "$TMP/r.data" --force -- "${ENTER[@]}" sh -c "$(javac_cmd "")" ;;
	class) timed "$VMTRACE" record --no-methods -o "$TMP/r.data" --force -- "${ENTER[@]}" sh -c "$(javac_cmd "")" ;;
	exact) timed "$VMTRACE" record -o "$TMP/r.data" --force -- "${ENTER[@]}" sh -c "$(javac_cmd "")" ;;
	esac
}
. "$HERE/pairs.sh"
read -r -a configs <<<"${CONFIGS:-jfr sampled class exact}"
pairs_run "$REPEATS" base "${configs[@]}"
echo "javac over $NCLASSES generated classes; $("${ENTER[@]}" java -version 2>&1 | head -1) in a $SUITE" \
	"container; wall time, $REPEATS pairs each (the untraced run before each), round robin"
pairs_table base base=untraced "jfr=JFR (profile)" "sampled=vmtrace --sample 512K" \
	"class=vmtrace exact per class" "exact=vmtrace exact"
