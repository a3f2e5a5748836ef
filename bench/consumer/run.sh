#!/usr/bin/env bash
# The consumer benchmark (root): vmtrace record vs a bpftrace one-liner doing
# the same aggregation on demovm's allocation path, side by side in one run:
# workload time untraced and traced, per-event cost, attach latency, peak RSS.
# Usage: bench/consumer/run.sh [BUILD_DIR] [OPS] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
[ "$(id -u)" = 0 ] || { echo "run as root (BPF)" >&2; exit 1; }
exec /usr/bin/python3 "$here/bench.py" "$build/bin" "${2:-100000}" "${3:-3}"
