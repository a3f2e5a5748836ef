#!/bin/bash
# bench/runtimes/run_pydoc_ext.sh: what counting every allocation by line
# costs a real Python program, pydoc -w over several modules, timed from
# inside the program (pydoc_driver.py), side by side in one run: untraced,
# the extension imported and dormant, tracemalloc with 1 and 25 frames,
# scalene's memory and CPU sampling, heaptrack (every malloc, whole native
# stacks), vmtrace through CPython's own probes (--runtime python: objects by
# type, tracemalloc turned on in the program and a trap per object), and
# vmtrace record -p of the program with vmtrace's CPython extension
# imported: bytes by function and line, by whole Python stack (--stack vm),
# sampled by bytes (--sample 512K), and with frees, what is still held
# (--live); and by line in a program that never imported it, the extension
# loaded into it by vmtrace record -p (docs/runtimes.md, "Attaching").
# Needs root.
#
# Usage: bench/runtimes/run_pydoc_ext.sh [VMTRACE] [REPEATS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=$(readlink -f "${1:-$HERE/../../build/bin/vmtrace}")
REPEATS=${2:-5}
PY=/usr/bin/python3.11
PYDIR=$(dirname "$VMTRACE")/../lib/python
MODS=(json email.message argparse http.client)
[ "$(id -u)" = 0 ] || { echo "run_pydoc_ext.sh: needs root (BPF)" >&2; exit 1; }
ls "$PYDIR"/vmtrace.*.so >/dev/null 2>&1 || { echo "run_pydoc_ext.sh: no CPython extension in $PYDIR" >&2; exit 1; }
"$PY" -c "import scalene" 2>/dev/null || { echo "run_pydoc_ext.sh: needs python3-scalene" >&2; exit 1; }
command -v heaptrack >/dev/null || { echo "run_pydoc_ext.sh: needs heaptrack" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"

secs() { awk '/^seconds/ { print $2 }' "$1"; }
run_config() {
	case $1 in
	base) "$PY" "$HERE/pydoc_driver.py" "${MODS[@]}" >out ;;
	dormant) PYTHONPATH=$PYDIR "$PY" "$HERE/pydoc_driver.py" --import "${MODS[@]}" >out ;;
	tm1) "$PY" -X tracemalloc=1 "$HERE/pydoc_driver.py" "${MODS[@]}" >out ;;
	tm25) "$PY" -X tracemalloc=25 "$HERE/pydoc_driver.py" "${MODS[@]}" >out ;;
	scalene) "$PY" -m scalene --cli --memory --outfile scalene.txt "$HERE/pydoc_driver.py" "${MODS[@]}" >out ;;
	heaptrack) heaptrack -o heaptrack.data "$PY" "$HERE/pydoc_driver.py" "${MODS[@]}" >out 2>/dev/null ;;
	probes) "$VMTRACE" record --runtime python -o rec.data --force -- "$PY" "$HERE/pydoc_driver.py" \
		"${MODS[@]}" >out 2>rec.err ;;
	ext) traced "" ;;
	ext_stack) traced "--stack vm" ;;
	ext_sampled) traced "--sample 512K" ;;
	ext_live) traced "--live" ;;
	ext_attached) attached ;;
	esac
	secs out
}
# the program with the extension imported, waiting until vmtrace record -p arms it
traced() {
	PYTHONPATH=$PYDIR "$PY" "$HERE/pydoc_driver.py" --armed "${MODS[@]}" >out &
	local p=$!
	until grep -q ready out 2>/dev/null; do sleep 0.01; done
	# shellcheck disable=SC2086 # $1: options, split
	"$VMTRACE" record -p "$p" -o rec.data --force $1 >/dev/null 2>rec.err
	wait "$p"
}
# the program never imported it: vmtrace record -p loads the extension into it
attached() {
	"$PY" "$HERE/pydoc_driver.py" --attached "${MODS[@]}" >out &
	local p=$!
	until grep -q ready out 2>/dev/null; do sleep 0.01; done
	"$VMTRACE" record -p "$p" -o rec.data --force >/dev/null 2>rec.err
	wait "$p"
}
CONFIGS=(base dormant tm1 tm25 scalene heaptrack probes ext ext_stack ext_sampled ext_live ext_attached)
NAMES=("untraced" "ext dormant" "tracemalloc 1 frame" "tracemalloc 25 frames" "scalene --memory"
       "heaptrack" "vmtrace python probes" "vmtrace ext (by line)" "vmtrace ext --stack vm"
       "vmtrace ext --sample 512K" "vmtrace ext --live" "vmtrace ext loaded by -p")
for _ in $(seq "$REPEATS"); do
	for c in "${CONFIGS[@]}"; do
		run_config "$c" >>"$TMP/$c.t"
	done
done
stat() { sort -n "$TMP/$1.t" | awk '{ v[NR] = $1 } END { print v[1], v[int((NR + 1) / 2)] }'; }
read -r _ base <<<"$(stat base)"
echo "pydoc -w ${MODS[*]}; python $($PY -c 'import sys; print(sys.version.split()[0])'); the run timed from inside, $REPEATS runs each, round robin"
printf "%-24s %9s %9s %9s\n" configuration "min s" "median s" "median/untraced"
for i in "${!CONFIGS[@]}"; do
	read -r mn md <<<"$(stat "${CONFIGS[$i]}")"
	awk -v n="${NAMES[$i]}" -v a="$mn" -v b="$md" -v u="$base" \
		'BEGIN { printf "%-24s %9.3f %9.3f %9.2fx\n", n, a, b, b / u }'
done
