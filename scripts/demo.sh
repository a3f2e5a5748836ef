#!/usr/bin/env bash
# The demo: installs what is missing, builds build/, runs demovm under load
# (two threads, waiting for the tracer), attaches `vmtrace record` to it,
# and prints vmtrace's report when demovm's run ends; then checks vmtrace's
# allocations per class and method against demovm's own count (its truth
# file). Run as root from a clone: scripts/demo.sh [SECONDS]
# (VMTRACE_BUILD_DIR picks another build directory than build/.)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-4}
case $seconds in
''|*[!0-9]*|0) echo "demo: SECONDS must be a whole number >= 1, got '$seconds'" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root (installing packages and attaching uprobes need it)" >&2
	exit 1
fi

scripts/install-deps.sh
build=${VMTRACE_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"

demovm=$(realpath "$build/bin/demovm")
vmtrace=$(realpath "$build/bin/vmtrace")
work=$(mktemp -d)
vm_pid= vt_pid=
cleanup() {
	[ -n "$vt_pid" ] && kill "$vt_pid" 2>/dev/null || true
	[ -n "$vm_pid" ] && kill -KILL "$vm_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# wait_for FILE PATTERN: until FILE has a line matching PATTERN (20 s at most)
wait_for() {
	for _ in $(seq 200); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "demo: timed out waiting for '$2' in $1" >&2
	cat "$1" >&2 || true
	exit 1
}

echo "== demovm: 2 threads for $seconds s, waiting for the tracer"
"$demovm" --threads 2 --duration "$seconds" --wait --truth "$work/truth.json" \
	>"$work/demovm.out" 2>"$work/demovm.err" &
vm_pid=$!
wait_for "$work/demovm.out" '^ready$'

echo "== vmtrace record -p $vm_pid"
"$vmtrace" record -p "$vm_pid" -o "$work/vmtrace.data" >"$work/report.txt" 2>"$work/vmtrace.err" &
vt_pid=$!
wait_for "$work/vmtrace.err" '^vmtrace: recording'

kill -USR1 "$vm_pid"      # run the workload now that the probes are attached
wait "$vm_pid"
vm_pid=
wait "$vt_pid"            # vmtrace reports when its target exits
vt_pid=
cat "$work/report.txt"
echo
cat "$work/demovm.err"

# vmtrace's counts against demovm's own
"$vmtrace" report "$work/vmtrace.data" --format json |
	jq -r '.allocations[] | "\(.class) \(.method) \(.count) \(.bytes)"' | sort >"$work/traced"
jq -r '.allocations[] | "\(.class) \(.method) \(.count) \(.bytes)"' "$work/truth.json" | sort >"$work/truth"
if cmp -s "$work/traced" "$work/truth"; then
	echo "== vmtrace's counts equal demovm's own truth: $(wc -l <"$work/truth") class/method pairs, $(awk '{ n += $3 } END { print n }' "$work/truth") allocations"
else
	echo "== vmtrace's counts differ from demovm's truth (< vmtrace, > truth):"
	diff "$work/traced" "$work/truth" || true
	exit 1
fi
