#!/usr/bin/env bash
# The stacks benchmark (root): demovm untraced, traced with one frame per
# allocation (vmtrace record) and traced with the whole VM stack (vmtrace
# record --stack vm), side by side in one run, counts checked against the
# truth. Usage: bench/stacks/run.sh [BUILD_DIR] [OPS] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
[ "$(id -u)" = 0 ] || { echo "run as root (BPF)" >&2; exit 1; }
exec /usr/bin/python3 "$here/bench.py" "$build/bin" "${2:-100000}" "${3:-5}"
