#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time (FUZZ_SECONDS, default 30).
# Usage: run_fuzz.sh FUZZER SCRATCH_CORPUS SEED_DIR...
# New interesting inputs go to SCRATCH_CORPUS; seed dirs are only read.
# A crash, leak or sanitizer report fails the run; the reproducer is left
# in the scratch directory (crash-*).
set -euo pipefail
fuzzer=$1 scratch=$2
shift 2
mkdir -p "$scratch"
scratch=$(realpath "$scratch")
seeds=()
for d in "$@"; do
	if [ ! -d "$d" ]; then
		echo "run_fuzz: no seed directory $d" >&2
		exit 1
	fi
	seeds+=("$(realpath "$d")")
done
cd "$scratch"
exec "$fuzzer" -max_total_time="${FUZZ_SECONDS:-30}" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 "$scratch" "${seeds[@]}"
