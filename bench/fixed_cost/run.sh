#!/bin/bash
# bench/fixed_cost/run.sh: what a recording costs on top of a short command,
# whole-command wall time, side by side in one run with bpftrace -c counting
# at the same runtime's probes, and the command untraced. Rounds interleave
# the tools, so a slow moment of the machine falls on all of them.
# Needs root.
#
# Usage: bench/fixed_cost/run.sh [VMTRACE] [ROUNDS]
#   VMTRACE  default build/bin/vmtrace (demovm beside it)
#   ROUNDS   default 7 (min, median and max are shown)
#
# Commands: ruby -e 0, python3.11 -c pass, demovm --ops 100.
# vmtrace record writes its record (-o) and prints its report, as a user
# runs it; bpftrace counts the runtime's call or allocation probe into a map
# and prints it at the end. bpftrace -c cannot attach to a library the
# command has not loaded yet (libruby), so its Ruby row counts one uprobe
# at ruby's entry point (the program is stripped): its least cost there.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=${1:-$HERE/../../build/bin/vmtrace}
ROUNDS=${2:-7}
BIN=$(dirname "$VMTRACE")
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] && [ -x "$BIN/demovm" ] || { echo "run.sh: no vmtrace and demovm at $BIN" >&2; exit 1; }
command -v bpftrace >/dev/null || { echo "run.sh: bpftrace not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

RUBY=/usr/bin/ruby
PYTHON=/usr/bin/python3.11
RUBY_ENTRY=$(readelf -h "$RUBY" | awk '/Entry point/ { print $4 }')
DEMOVM=$(readlink -f "$BIN/demovm")

# NAME|COMMAND|BPFTRACE PROGRAM
CASES=(
	"ruby -e 0|$RUBY -e 0|uprobe:$RUBY:$RUBY_ENTRY { @ = count(); }"
	"python3.11 -c pass|$PYTHON -c pass|usdt:$PYTHON:python:function__return { @[str(arg1)] = count(); }"
	"demovm --ops 100|$DEMOVM --ops 100 --quiet|usdt:$DEMOVM:vmtrace:object__alloc { @[str(arg0)] = count(); }"
)

now() { date +%s.%N; }
# time_it OUT-FILE COMMAND...: seconds, appended to OUT-FILE
time_it() {
	local out=$1 t0 t1
	shift
	t0=$(now)
	"$@" >/dev/null 2>"$TMP/err" </dev/null || { echo "run.sh: failed: $*: $(tail -n 2 "$TMP/err")" >&2; exit 1; }
	t1=$(now)
	echo "$t1 - $t0" | bc -l >>"$out"
}
stats() { # FILE -> "min median max"
	sort -g "$1" | awk '{ v[NR] = $1 } END { printf "%.3f %.3f %.3f", v[1], v[int((NR + 1) / 2)], v[NR] }'
}

printf '%-22s %-14s %22s %8s\n' command tool "wall s (min med max)" "vs bpftrace"
for c in "${CASES[@]}"; do
	IFS='|' read -r name cmd prog <<<"$c"
	key=$(echo "$name" | tr -c 'a-z0-9\n' _)
	: >"$TMP/$key.none"; : >"$TMP/$key.vmtrace"; : >"$TMP/$key.bpftrace"
	for _ in $(seq "$ROUNDS"); do
		# shellcheck disable=SC2086
		time_it "$TMP/$key.none" $cmd
		rm -f "$TMP/rec.data"
		# shellcheck disable=SC2086
		time_it "$TMP/$key.vmtrace" "$VMTRACE" record -o "$TMP/rec.data" -- $cmd
		time_it "$TMP/$key.bpftrace" bpftrace -e "$prog" -c "$cmd"
	done
	b=$(stats "$TMP/$key.bpftrace" | awk '{ print $2 }')
	for tool in none vmtrace bpftrace; do
		read -r mn md mx <<<"$(stats "$TMP/$key.$tool")"
		printf '%-22s %-14s %8s %6s %6s %8s\n' "$name" "$tool" "$mn" "$md" "$mx" \
			"$(echo "$md / $b" | bc -l | xargs printf '%.2fx')"
	done
done
