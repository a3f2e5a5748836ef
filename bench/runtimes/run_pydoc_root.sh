#!/bin/bash
# bench/runtimes/run_pydoc_root.sh: run_pydoc_ext.sh's comparison for a
# CPython of the version matrix, in its container (a root of
# scripts/matrix/roots.sh entered with its own mount and pid namespaces):
# pydoc -w over 24 stdlib modules (pydoc_driver.py), whole-command wall time
# from the container's start to vmtrace's report written, and to the
# program's exit, and pydoc's own run timed inside, side by side in one
# run, round robin: untraced, vmtrace's package imported and dormant,
# tracemalloc with 1 and 25 frames, heaptrack (every malloc with its native
# stack), and vmtrace record -p from the host of the program with the
# package imported (installed in the root by
# tests/runtimes/python/python_versions_test.py): by type, function and
# line; --stack vm; --sample 512K. run_loop_root.sh is its peer on the
# allocation loop. Needs root.
#
# Usage: bench/runtimes/run_pydoc_root.sh PYTHON [VMTRACE] [REPEATS]
#   PYTHON   python3.13 (root trixie) or python3.14 (root sid)
#   VMTRACE  default build/bin/vmtrace
#   REPEATS  default 5 runs of each
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${1:?usage: run_pydoc_root.sh PYTHON [VMTRACE] [REPEATS]}
VMTRACE=$(readlink -f "${2:-$HERE/../../build/bin/vmtrace}")
REPEATS=${3:-5}
case $PY in
python3.13) SUITE=trixie ;;
python3.14) SUITE=sid ;;
*) echo "run_pydoc_root.sh: no root for $PY" >&2; exit 1 ;;
esac
ROOT=${VMTRACE_ROOTS:-/var/cache/vmtrace/roots}/$SUITE
MODS=(json email.message argparse http.client collections typing logging unittest.case xml.dom.minidom
      asyncio.events decimal fractions pathlib subprocess threading inspect ast tarfile zipfile
      configparser datetime calendar difflib textwrap)
[ "$(id -u)" = 0 ] || { echo "run_pydoc_root.sh: needs root (BPF, namespaces)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_pydoc_root.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
in_root() { unshare --mount --pid --fork --mount-proc="$ROOT/proc" chroot "$ROOT" "$@"; }
in_root "$PY" -c 'import vmtrace' 2>/dev/null ||
	{ echo "run_pydoc_root.sh: no vmtrace package in $ROOT for $PY (tests/runtimes/python/python_versions_test.py" \
		"py${PY#python}-sdist installs it)" >&2; exit 1; }
in_root sh -c 'command -v heaptrack' >/dev/null ||
	{ echo "run_pydoc_root.sh: no heaptrack in $ROOT (scripts/matrix/roots.sh $SUITE installs it)" >&2; exit 1; }
IN=/tmp/vmtrace-bench
TMP=$(mktemp -d)
mkdir -p "$ROOT$IN"
trap 'rm -rf "$TMP" "$ROOT$IN"' EXIT
cp "$HERE/pydoc_driver.py" "$ROOT$IN/"
DRIVER=("$IN/pydoc_driver.py")

now() { date +%s%N; }
# pydoc writes its pages into the current directory: the root's scratch one
py() { in_root sh -c "cd $IN && exec $PY $*"; }
run_config() {
	local t0 t1 tp
	rm -f "$TMP/program_end"
	t0=$(now)
	case $1 in
	base) py "${DRIVER[@]}" "${MODS[@]}" >"$TMP/out" ;;
	dormant) py "${DRIVER[@]}" --import "${MODS[@]}" >"$TMP/out" ;;
	tm1) py -X tracemalloc=1 "${DRIVER[@]}" "${MODS[@]}" >"$TMP/out" ;;
	tm25) py -X tracemalloc=25 "${DRIVER[@]}" "${MODS[@]}" >"$TMP/out" ;;
	heaptrack) in_root sh -c "cd $IN && exec heaptrack -o $IN/heaptrack.data $PY ${DRIVER[*]} ${MODS[*]}" \
		>"$TMP/out" 2>/dev/null && rm -f "$ROOT$IN"/heaptrack.data* ;;
	ext) traced "" ;;
	ext_stack) traced "--stack vm" ;;
	ext_sampled) traced "--sample 512K" ;;
	esac
	t1=$(now)
	tp=$(cat "$TMP/program_end" 2>/dev/null || echo "$t1")
	grep -q '^seconds' "$TMP/out" || { echo "run_pydoc_root.sh: pydoc failed ($1)" >&2; exit 1; }
	# until vmtrace's report is written; until the program's exit; pydoc's own run
	awk -v a="$t0" -v b="$t1" -v p="$tp" -v s="$(sed -n 's/^seconds //p' "$TMP/out")" \
		'BEGIN { printf "%.4f %.4f %.4f\n", (b - a) / 1e9, (p - a) / 1e9, s }'
}
# the program with the package imported, waiting until vmtrace record -p
# (from the host, by the host's pid) arms it
traced() {
	: >"$TMP/out"
	py "${DRIVER[@]}" --armed "${MODS[@]}" >"$TMP/out" &
	local outer=$! pid=
	until grep -q ready "$TMP/out" 2>/dev/null; do sleep 0.01; done
	pid=$(pgrep -n -x "$PY") || { echo "run_pydoc_root.sh: no $PY running" >&2; exit 1; }
	# shellcheck disable=SC2086 # $1: options, split
	"$VMTRACE" record -p "$pid" -o "$TMP/rec.data" --force $1 >/dev/null 2>"$TMP/rec.err" &
	local rec=$!
	wait "$outer"
	now >"$TMP/program_end" # the program is done; vmtrace writes its report after
	wait "$rec" || { echo "run_pydoc_root.sh: record failed: $(tail -c 300 "$TMP/rec.err")" >&2; exit 1; }
}
# the slow peers last in a round, so vmtrace's runs follow their round's
# untraced one closely (the paired column)
CONFIGS=(base dormant ext ext_stack ext_sampled heaptrack tm1 tm25)
NAMES=("untraced" "package dormant" "vmtrace -p by line, types" "vmtrace -p --stack vm" "vmtrace -p --sample 512K"
       "heaptrack" "tracemalloc 1 frame" "tracemalloc 25 frames")
for _ in $(seq "$REPEATS"); do
	for c in "${CONFIGS[@]}"; do
		run_config "$c" >>"$TMP/$c.t"
	done
done
# column c of a configuration's runs: the minimum and the median
stat() { sort -n -k"$2" "$TMP/$1.t" | awk -v c="$2" '{ v[NR] = $c } END { print v[1], v[int((NR + 1) / 2)] }'; }
# the median of each round's whole time over that round's untraced one:
# this machine's speed drifts by more than the margins between rounds
paired() { paste -d' ' "$TMP/$1.t" "$TMP/base.t" | awk '{ print $1 / $4 }' | sort -n |
	awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
read -r _ base <<<"$(stat base 1)"
read -r _ base_p <<<"$(stat base 3)"
echo "pydoc -w ${MODS[*]}; $PY $(in_root "$PY" -c 'import sys; print(sys.version.split()[0])') in a $SUITE" \
	"container; whole-command wall time, $REPEATS runs each, round robin"
echo "(whole: until vmtrace has written its report; program: until the program's exit, the attach"
echo " included; pydoc: pydoc's own run, timed inside the program once armed; each a ratio of"
echo " medians; paired: the median of each round's whole over that round's untraced)"
printf "%-28s %9s %9s %9s %9s %9s %9s\n" configuration "min s" "median s" "whole" "program" "pydoc" "paired"
for i in "${!CONFIGS[@]}"; do
	read -r mn md <<<"$(stat "${CONFIGS[$i]}" 1)"
	read -r _ mp <<<"$(stat "${CONFIGS[$i]}" 2)"
	read -r _ ms <<<"$(stat "${CONFIGS[$i]}" 3)"
	awk -v n="${NAMES[$i]}" -v a="$mn" -v b="$md" -v p="$mp" -v s="$ms" -v u="$base" -v up="$base_p" \
		-v r="$(paired "${CONFIGS[$i]}")" \
		'BEGIN { printf "%-28s %9.3f %9.3f %8.2fx %8.2fx %8.2fx %8.2fx\n", n, a, b, b / u, p / u, s / up, r }'
done
