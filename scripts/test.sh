#!/usr/bin/env bash
# Installs what is missing, builds vmtrace three ways and runs every test:
#   build/       every test (unit, integration with real BPF, bpftrace, fuzz)
#   build-asan/  the unit tests under AddressSanitizer + UBSan
#   build-tsan/  the bus tests under ThreadSanitizer
# and first makes the version matrix's roots (scripts/matrix/roots.sh).
# Usage (root): scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# the version matrix's Debian roots, cached on the machine (tests/runtimes/ruby/versions_test.py and the other rooms' version tests)
scripts/matrix/roots.sh

jobs=$(nproc)
build() { # dir, cmake options...
	local dir=$1; shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j"$jobs"
}

build build -DVMTRACE_FUZZ=ON
build build-asan -DVMTRACE_SANITIZE=ON
build build-tsan -DVMTRACE_TSAN=ON

status=0
ctest --test-dir build --output-on-failure || status=1
ctest --test-dir build-asan --output-on-failure -L unit || status=1
ctest --test-dir build-tsan --output-on-failure -L tsan || status=1
exit $status
