#!/usr/bin/env bash
# The --all benchmark (root): what `vmtrace record --all` costs a process
# beside `record -p PID`, and beside bpftrace doing the same per-process
# aggregation for every process, side by side in one run.
# Usage: bench/all/run.sh [BUILD_DIR] [OPS] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
[ "$(id -u)" = 0 ] || { echo "run as root (BPF)" >&2; exit 1; }
exec /usr/bin/python3 "$here/bench.py" "$build/bin" "${2:-100000}" "${3:-3}"
