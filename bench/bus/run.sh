#!/bin/sh
# Build bench_bus in an optimised build dir and run it once.
# Usage: bench/bus/run.sh [--quick]   (BUILD=dir to choose the build dir)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build-bench}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target bench_bus -j"$(nproc)" >/dev/null
exec "$build/bin/bench_bus" "$@"
