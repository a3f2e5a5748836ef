#!/bin/bash
# bench/serve/run_ruby.sh: `vmtrace serve` left on a Ruby service, as in
# production: bench/serve/service.rb at full speed for SECONDS untraced,
# then as long with vmtrace's Ruby extension loaded and `vmtrace serve -p`
# on it (sampled, serve's default for a provider inside the runtime: 512
# KiB) scraped every second with gzip as Prometheus would, then untraced
# again. For each: the service's throughput (its own count of operations);
# for serve, its CPU, its RSS every minute (flat: nothing grows with time),
# and the scrapes' latency.
# Needs root.
#
# Usage: bench/serve/run_ruby.sh [VMTRACE] [SECONDS] [SERVE-OPTION...]
#   VMTRACE  default build/bin/vmtrace
#   SECONDS  default 600
#   SERVE-OPTION  more options for serve (--events alloc, --sample 32K)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=$(readlink -f "${1:-$HERE/../../build/bin/vmtrace}")
SECONDS_RUN=${2:-600}
shift 2 2>/dev/null || shift $#
SERVE_OPTS=("$@")
EXT_DIR=$(dirname "$VMTRACE")/../lib/ruby
SERVICE=$HERE/service.rb
[ "$(id -u)" = 0 ] || { echo "run_ruby.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_ruby.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
[ -f "$EXT_DIR/vmtrace_ext.so" ] || { echo "run_ruby.sh: no Ruby extension in $EXT_DIR" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
HZ=$(getconf CLK_TCK)

cpu_s() { awk -v hz="$HZ" '{ print ($14 + $15) / hz }' "/proc/$1/stat"; }
rss_mb() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
ops_s() { sed -nE 's/^service: ([0-9]+) ops in ([0-9.]+) s$/\1 \2/p' "$1" | awk '{ printf "%.0f", $1 / $2 }'; }

untraced() { # prints ops/s
	ruby "$SERVICE" "$SECONDS_RUN" >"$TMP/none.out"
	ops_s "$TMP/none.out"
}

served() { # prints "ops/s cpu-s rss-list scrape-ms-min-med-max"
	local svc srv port t=0 lat=() rss=()
	RUBYOPT="-I$EXT_DIR -rvmtrace" ruby "$SERVICE" "$SECONDS_RUN" >"$TMP/svc.out" &
	svc=$!
	for _ in $(seq 100); do grep -q '^ready$' "$TMP/svc.out" && break; sleep 0.05; done
	"$VMTRACE" serve -p "$svc" --listen 127.0.0.1:0 "${SERVE_OPTS[@]}" >/dev/null 2>"$TMP/serve.err" &
	srv=$!
	for _ in $(seq 100); do grep -q '/metrics$' "$TMP/serve.err" && break; sleep 0.05; done
	port=$(sed -nE 's|.*http://127\.0\.0\.1:([0-9]+)/metrics$|\1|p' "$TMP/serve.err")
	local cpu=
	while kill -0 "$svc" 2>/dev/null; do
		sleep 1
		t=$((t + 1))
		kill -0 "$svc" 2>/dev/null || break
		lat+=("$(curl -s --compressed -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port/metrics")")
		cpu=$(cpu_s "$srv")
		[ $((t % 60)) = 1 ] && rss+=("$(rss_mb "$srv")")
	done
	wait "$svc" || true
	kill -INT "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	echo "$(ops_s "$TMP/svc.out") $cpu $(IFS=,; echo "${rss[*]}")" \
		"$(printf '%s\n' "${lat[@]}" | sort -g | awk '{ v[NR] = $1 * 1000 } END { printf "%.1f/%.1f/%.1f", v[1], v[int((NR + 1) / 2)], v[NR] }')"
}

echo "service.rb, $SECONDS_RUN s each; ruby $(ruby -e 'print RUBY_VERSION')"
a=$(untraced)
read -r s cpu rss lat <<<"$(served)"
b=$(untraced)
echo "untraced (before, after) ops/s: $a $b"
echo "serve ${SERVE_OPTS[*]:-(sampled, 512 KiB)}  ops/s: $s  = $(echo "2 * $s / ($a + $b)" | bc -l | xargs printf '%.3fx') untraced"
echo "serve: CPU ${cpu} s over the run; RSS MB each minute: $rss; scrape ms min/median/max: $lat"
