#!/bin/bash
# bench/runtimes/run_loop_root.sh: the allocation loop of bench.py (2 calls
# and 9 objects an iteration) on a CPython of the version matrix, in its
# container (a root of scripts/matrix/roots.sh entered with its own mount
# and pid namespaces), side by side in one run, round robin: untraced,
# vmtrace's package imported and dormant, tracemalloc with 1 and 25 frames,
# heaptrack, and vmtrace record -p from the host of the program with the
# package imported (installed in the root by
# tests/runtimes/python/python_versions_test.py): by type, function and
# line; --stack vm; --sample 512K. Each run times its own loop, after the
# tracer attached; the median per iteration is shown, its ratio to
# untraced's median, and the median of each round's ratio to that round's
# untraced run (this machine's speed drifts between rounds). run_pydoc_root.sh is
# the whole-command peer on a real program. Needs root.
#
# Usage: bench/runtimes/run_loop_root.sh PYTHON [VMTRACE] [ITERATIONS] [REPEATS]
#   PYTHON      python3.13 (root trixie) or python3.14 (root sid)
#   VMTRACE     default build/bin/vmtrace
#   ITERATIONS  default 1000000
#   REPEATS     default 5 runs of each
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${1:?usage: run_loop_root.sh PYTHON [VMTRACE] [ITERATIONS] [REPEATS]}
VMTRACE=$(readlink -f "${2:-$HERE/../../build/bin/vmtrace}")
ITER=${3:-1000000}
REPEATS=${4:-5}
case $PY in
python3.13) SUITE=trixie ;;
python3.14) SUITE=sid ;;
*) echo "run_loop_root.sh: no root for $PY" >&2; exit 1 ;;
esac
ROOT=${VMTRACE_ROOTS:-/var/cache/vmtrace/roots}/$SUITE
[ "$(id -u)" = 0 ] || { echo "run_loop_root.sh: needs root (BPF, namespaces)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_loop_root.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
in_root() { unshare --mount --pid --fork --mount-proc="$ROOT/proc" chroot "$ROOT" "$@"; }
in_root "$PY" -c 'import vmtrace' 2>/dev/null ||
	{ echo "run_loop_root.sh: no vmtrace package in $ROOT for $PY (tests/runtimes/python/python_versions_test.py" \
		"py${PY#python}-sdist installs it)" >&2; exit 1; }
in_root sh -c 'command -v heaptrack' >/dev/null ||
	{ echo "run_loop_root.sh: no heaptrack in $ROOT (scripts/matrix/roots.sh $SUITE installs it)" >&2; exit 1; }
IN=/tmp/vmtrace-bench-loop
TMP=$(mktemp -d)
mkdir -p "$ROOT$IN"
trap 'rm -rf "$TMP" "$ROOT$IN"' EXIT
cp "$HERE/bench.py" "$ROOT$IN/"

# one run of the loop: $1 vmtrace's options ("-" untraced), then the
# command inside the root after "cd $IN &&"; prints its ns per iteration
one_run() {
	local topt=$1 fifo=$TMP/in out=$TMP/out pid rec=
	shift
	rm -f "$fifo" "$out"
	mkfifo "$fifo"
	in_root sh -c "cd $IN && exec $*" <"$fifo" >"$out" 2>"$TMP/err" &
	local outer=$!
	exec 3>"$fifo"
	until grep -q ready "$out" 2>/dev/null; do sleep 0.01; done
	if [ "$topt" != - ]; then
		pid=$(pgrep -n -x "$PY") || { echo "run_loop_root.sh: no $PY running" >&2; exit 1; }
		# shellcheck disable=SC2086 # options, split
		"$VMTRACE" record -p "$pid" -o "$TMP/rec.data" --force $topt >/dev/null 2>"$TMP/rec.err" &
		rec=$!
		until grep -q "recording pid" "$TMP/rec.err" 2>/dev/null; do
			kill -0 $rec 2>/dev/null ||
				{ echo "run_loop_root.sh: record failed: $(tail -c 300 "$TMP/rec.err")" >&2; exit 1; }
			sleep 0.01
		done
	fi
	echo go >&3
	exec 3>&-
	wait "$outer"
	[ -z "$rec" ] || wait "$rec" ||
		{ echo "run_loop_root.sh: record failed: $(tail -c 300 "$TMP/rec.err")" >&2; exit 1; }
	awk '/ns_per_iter/ { print $2 }' "$out" | grep . ||
		{ echo "run_loop_root.sh: the loop failed ($*): $(tail -c 300 "$TMP/err")" >&2; exit 1; }
}
LOOP="$PY bench.py $ITER"
CONFIGS=(base dormant ext ext_stack ext_sampled heaptrack tm1 tm25)
NAMES=("untraced" "package dormant" "vmtrace -p by line, types" "vmtrace -p --stack vm" "vmtrace -p --sample 512K"
       "heaptrack" "tracemalloc 1 frame" "tracemalloc 25 frames")
for _ in $(seq "$REPEATS"); do
	one_run - "$LOOP" >>"$TMP/base.t"
	one_run - "$LOOP --import" >>"$TMP/dormant.t"
	one_run "" "$LOOP --armed" >>"$TMP/ext.t"
	one_run "--stack vm" "$LOOP --armed" >>"$TMP/ext_stack.t"
	one_run "--sample 512K" "$LOOP --armed" >>"$TMP/ext_sampled.t"
	one_run - "heaptrack -o $IN/heaptrack.data $LOOP" >>"$TMP/heaptrack.t"
	rm -f "$ROOT$IN"/heaptrack.data*
	one_run - "env PYTHONTRACEMALLOC=1 $LOOP" >>"$TMP/tm1.t"
	one_run - "env PYTHONTRACEMALLOC=25 $LOOP" >>"$TMP/tm25.t"
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
paired() { paste -d' ' "$1" "$TMP/base.t" | awk '{ print $1 / $2 }' | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
base=$(median "$TMP/base.t")
echo "bench.py's loop, $ITER iterations x (2 calls, 9 objects); $PY" \
	"$(in_root "$PY" -c 'import sys; print(sys.version.split()[0])') in a $SUITE container;" \
	"the loop's own time, median of $REPEATS, round robin"
printf "%-28s %12s %9s %9s\n" configuration "ns/iter" ratio paired
for i in "${!CONFIGS[@]}"; do
	awk -v n="${NAMES[$i]}" -v v="$(median "$TMP/${CONFIGS[$i]}.t")" -v b="$base" \
		-v r="$(paired "$TMP/${CONFIGS[$i]}.t")" 'BEGIN { printf "%-28s %12d %8.2fx %8.2fx\n", n, v, v / b, r }'
done
