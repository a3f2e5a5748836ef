#!/usr/bin/env bash
# Cost of allocation tracing on demovm's allocation-heavy workload, side by
# side in one run: untraced, traced exactly by `vmtrace record`, and traced by
# `vmtrace record --sample 512K` (docs/sampling.md). A fourth row isolates the
# provider's sampling: a bpftrace script that holds sample__armed and sums
# object__alloc's weights, with nothing else attached (the period written by
# tests' sample_state helper). Each round runs the modes back to back, in a
# rotating order; the table gives the median of
# the CPU time of demovm's worker (start-up and attach excluded; CPU time,
# because wall time on a shared VM swings by tens of percent), the cost per
# allocation, and each slowdown as a ratio to untraced.
#
# Usage (root): bench/sampling/run.sh
#   BUILD=dir   build directory holding bin/vmtrace and bin/demovm (default build)
#   OPS=N       workload iterations (default 200000, 16 allocations each)
#   ROUNDS=N    rounds (default 5)
#   PERIOD=B    sampling period in bytes (default 524288)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
ops=${OPS:-200000}
rounds=${ROUNDS:-5}
period=${PERIOD:-524288}

if [ "$(id -u)" -ne 0 ]; then
	echo "bench/sampling: run as root (BPF)" >&2
	exit 1
fi
for b in vmtrace demovm sample_state; do
	if [ ! -x "$build/bin/$b" ]; then
		cmake -S "$root" -B "$build" >/dev/null
		cmake --build "$build" --target vmtrace_cli demovm sample_state -j"$(nproc)" >/dev/null
		break
	fi
done
work=$(mktemp -d /tmp/vmtrace-bench-sampling.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

# run_once MODE: one demovm run; prints "seconds allocations samples".
run_once() {
	local mode=$1 dv rec=
	rm -f "$work/dv.out" "$work/dv.err" # a stale "ready" would signal too early
	"$build/bin/demovm" --wait --ops "$ops" --threads 1 --seed 1 --workload alloc \
		>"$work/dv.out" 2>"$work/dv.err" &
	dv=$!
	pids+=("$dv")
	until grep -qsx ready "$work/dv.out"; do sleep 0.02; done
	if [ "$mode" = bt-sampled ]; then
		"$build/bin/sample_state" "$dv" "$period" >/dev/null
		local so="usdt:$build/bin/demovm:vmtrace"
		bpftrace -p "$dv" -e "$so:sample__armed { } $so:object__alloc { @samples = count(); }" \
			>"$work/bt.out" 2>&1 &
		rec=$!
		pids+=("$rec")
		until "$build/bin/sample_state" "$dv" | grep -q "armed=1 alloc=1"; do
			kill -0 "$rec" 2>/dev/null || { cat "$work/bt.out" >&2; exit 1; }
			sleep 0.05
		done
	elif [ "$mode" != untraced ]; then
		local sample=()
		[ "$mode" = sampled ] && sample=(--sample "$period")
		rm -f "$work/rec.data" "$work/rec.json" "$work/rec.log"
		"$build/bin/vmtrace" record -p "$dv" -o "$work/rec.data" --format json "${sample[@]}" \
			>"$work/rec.json" 2>"$work/rec.log" &
		rec=$!
		pids+=("$rec")
		until grep -qs "recording pid" "$work/rec.log"; do
			kill -0 "$rec" 2>/dev/null || { cat "$work/rec.log" >&2; exit 1; }
			sleep 0.02
		done
	fi
	kill -USR1 "$dv"
	wait "$dv" || { echo "bench/sampling: demovm failed: $(cat "$work/dv.err")" >&2; exit 1; }
	local samples=0
	if [ "$mode" = bt-sampled ]; then
		kill -INT "$rec"
		wait "$rec" || true
		samples=$(sed -n 's/^@samples: //p' "$work/bt.out")
	elif [ -n "$rec" ]; then
		wait "$rec"
		samples=$(jq '[.allocations[].samples] | add // 0' "$work/rec.json")
	fi
	# "demovm: N ops on 1 thread(s) in S s (seed 1), workers' cpu C s" / "allocations A (B bytes)"
	local secs allocs
	secs=$(sed -n "s/.*workers' cpu \([0-9.]*\) s.*/\1/p" "$work/dv.err" | head -1)
	allocs=$(sed -n 's/.*allocations \([0-9]*\) .*/\1/p' "$work/dv.err" | head -1)
	echo "$secs $allocs $samples"
}

modes=(untraced exact sampled bt-sampled)
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < 4; i++)); do
		m=${modes[$(((i + r) % 4))]}
		echo "$m $(run_once "$m")" >>"$work/results"
	done
done

echo "demovm --workload alloc --ops $ops --threads 1: median of $rounds rounds"
echo "sampled at $period bytes; kernel $(uname -r), $(nproc) CPUs"
awk -v modes="untraced exact sampled bt-sampled" '
	{ secs[$1] = secs[$1] " " $2; allocs[$1] = $3; samples[$1] = $4 }
	function median(list,    a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 1; i <= n; i++)
			for (j = i + 1; j <= n; j++)
				if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		printf "%-10s %10s %12s %11s %9s %10s\n", "mode", "cpu s", "allocations", "ns/alloc", "slowdown", "samples"
		split(modes, m, " ")
		base = median(secs["untraced"])
		for (k = 1; k <= 4; k++) {
			s = median(secs[m[k]])
			printf "%-10s %10.4f %12d %11.1f %8.3fx %10d\n", m[k], s, allocs[m[k]],
				s * 1e9 / allocs[m[k]], s / base, samples[m[k]]
		}
	}' "$work/results"
