#!/usr/bin/env bash
# The untraced cost of a vmtrace_alloc() site, measured beside the same loop
# without it (bench_probe_site). Builds build/ if needed.
# Usage: bench/probe_site/run.sh [BUILD_DIR] [-- bench_probe_site options]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$1; shift; fi
[ "${1:-}" = "--" ] && shift

if [ ! -f "$build/CMakeCache.txt" ]; then
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target bench_probe_site -j"$(nproc)" >/dev/null
echo "# $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bin/bench_probe_site" "$@"
