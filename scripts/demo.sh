#!/usr/bin/env bash
# The demo: installs what is missing, builds build/, runs demovm under load
# (two threads, waiting for the tracer), attaches a bpftrace one-liner to
# its object__alloc probe, lets it count allocations per class and method
# for a few seconds, prints them, and checks them against demovm's own count
# (its truth file). Run as root from a clone: scripts/demo.sh [SECONDS]
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
work=$(mktemp -d)
vm_pid= bt_pid=
cleanup() {
	[ -n "$bt_pid" ] && kill "$bt_pid" 2>/dev/null || true
	[ -n "$vm_pid" ] && kill -KILL "$vm_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# wait_for FILE TEXT: until FILE has a line TEXT (20 s at most)
wait_for() {
	for _ in $(seq 200); do
		grep -qx "$2" "$1" 2>/dev/null && return 0
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
wait_for "$work/demovm.out" ready

echo "== bpftrace: object__alloc per class and method (pid $vm_pid)"
bpftrace -p "$vm_pid" -e "
BEGIN { printf(\"attached\n\"); }
usdt:$demovm:vmtrace:object__alloc { @allocs[str(arg0), str(arg1)] = count(); @bytes[str(arg0), str(arg1)] = sum(arg2); }" \
	>"$work/bpftrace.out" 2>"$work/bpftrace.err" &
bt_pid=$!
wait_for "$work/bpftrace.out" attached

kill -USR1 "$vm_pid"      # run the workload now that the probes are attached
wait "$vm_pid"
vm_pid=
wait "$bt_pid"            # bpftrace prints its maps when its target exits
bt_pid=
grep -v '^attached$' "$work/bpftrace.out" | sed '/^$/d'
cat "$work/demovm.err"

# bpftrace's counts against demovm's own
sed -nE 's/^@allocs\[(.*), (.*)\]: ([0-9]+)$/\1 \2 \3/p' "$work/bpftrace.out" | sort >"$work/traced"
jq -r '.allocations[] | "\(.class) \(.method) \(.count)"' "$work/truth.json" | sort >"$work/truth"
if cmp -s "$work/traced" "$work/truth"; then
	echo "== bpftrace's counts equal demovm's own truth: $(wc -l <"$work/truth") class/method pairs, $(awk '{ n += $3 } END { print n }' "$work/truth") allocations"
else
	echo "== bpftrace's counts differ from demovm's truth (< bpftrace, > truth):"
	diff "$work/traced" "$work/truth" || true
	exit 1
fi
