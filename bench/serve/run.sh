#!/bin/bash
# bench/serve/run.sh: `vmtrace serve` in production use, side by side in one
# run: demovm at full speed for SECONDS, untraced, under `vmtrace record`,
# and under `vmtrace serve` scraped once a second (as Prometheus would, with
# gzip). For each: demovm's throughput (ops/s, its own count) and the
# tracer's CPU (utime + stime over the run, /proc) and its RSS at the end;
# for serve, the scrapes' latency (min, median, max) and its RSS after the
# first second, to see it hold.
# Needs root.
#
# Usage: bench/serve/run.sh [VMTRACE] [SECONDS]
#   VMTRACE  default build/bin/vmtrace (demovm beside it)
#   SECONDS  default 20
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=${1:-$HERE/../../build/bin/vmtrace}
SECONDS_RUN=${2:-20}
DEMOVM=$(dirname "$VMTRACE")/demovm
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] && [ -x "$DEMOVM" ] || { echo "run.sh: no vmtrace and demovm at $(dirname "$VMTRACE")" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
HZ=$(getconf CLK_TCK)

cpu_s() { awk -v hz="$HZ" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
rss_mb() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
ops() { sed -nE 's/^demovm: ([0-9]+) ops .* in ([0-9.]+) s.*/\1 \2/p' "$1" | awk '{ printf "%.0f", $1 / $2 }'; }

run() { # MODE: prints "mode ops/s tracer-cpu-s tracer-rss-MB [scrape-ms min med max] [rss-1s]"
	local mode=$1 dv tr=
	"$DEMOVM" --wait --duration "$SECONDS_RUN" --threads 2 --workload alloc >"$TMP/dv.out" 2>&1 &
	dv=$!
	for _ in $(seq 100); do grep -q '^ready$' "$TMP/dv.out" && break; sleep 0.05; done
	case $mode in
	record)
		"$VMTRACE" record -p "$dv" -o "$TMP/r.data" --force >/dev/null 2>"$TMP/tr.err" &
		tr=$!
		for _ in $(seq 100); do grep -q 'recording pid' "$TMP/tr.err" && break; sleep 0.05; done ;;
	serve)
		"$VMTRACE" serve -p "$dv" --listen 127.0.0.1:0 --linger 2 >/dev/null 2>"$TMP/tr.err" &
		tr=$!
		for _ in $(seq 100); do grep -q 'serving pid' "$TMP/tr.err" && break; sleep 0.05; done ;;
	esac
	kill -USR1 "$dv"
	local port rss1= lat=() cpu= rss= t=0
	[ "$mode" = serve ] && port=$(sed -nE 's|.*http://127\.0\.0\.1:([0-9]+)/metrics$|\1|p' "$TMP/tr.err")
	# the tracer's CPU and RSS as of the last look before the target ends
	while kill -0 "$dv" 2>/dev/null; do
		sleep 0.2
		t=$((t + 1))
		if [ -n "$tr" ] && [ -e "/proc/$tr/stat" ]; then
			cpu=$(cpu_s "$tr") rss=$(rss_mb "$tr")
		fi
		if [ "$mode" = serve ] && [ $((t % 5)) = 0 ] && kill -0 "$dv" 2>/dev/null; then
			[ -z "$rss1" ] && rss1=$rss
			lat+=("$(curl -s --compressed -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/metrics")")
		fi
	done
	wait "$dv" || true
	local line="$mode $(ops "$TMP/dv.out")"
	[ -n "$tr" ] && line+=" $cpu $rss"
	if [ -n "$tr" ]; then
		kill -INT "$tr" 2>/dev/null || true
		wait "$tr" 2>/dev/null || true
	fi
	if [ "$mode" = serve ]; then
		line+=" $(printf '%s\n' "${lat[@]}" | sort -g | awk '{ v[NR] = $1 * 1000 } END { printf "%.1f %.1f %.1f", v[1], v[int((NR + 1) / 2)], v[NR] }') $rss1"
	fi
	echo "$line"
}

printf '%-8s %12s %8s %14s %12s %22s %10s\n' mode "demovm ops/s" "vs none" "tracer cpu s" "tracer RSS" "scrape ms (min med max)" "RSS at 1 s"
base=
for mode in none record serve; do
	read -r m o c r s1 s2 s3 r1 <<<"$(run "$mode")"
	[ -z "$base" ] && base=$o
	printf '%-8s %12s %8s %14s %12s %22s %10s\n' "$m" "$o" "$(echo "$o / $base" | bc -l | xargs printf '%.2fx')" \
		"${c:--}" "${r:+$r MB}" "${s1:+$s1 $s2 $s3}" "${r1:+$r1 MB}"
done
