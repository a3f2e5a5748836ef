#!/bin/bash
# bench/report_scale/run.sh: `vmtrace report` time against the number of
# rows, for every format, on records of 10k, 40k and 300k allocation rows
# (plain, with whole stacks, with the live heap: make_record.py). Beside
# each time, microseconds per row: flat when the format is linear in rows.
# Needs no root.
#
# Usage: bench/report_scale/run.sh [VMTRACE] [SIZES...]
#   VMTRACE  default build/bin/vmtrace
#   SIZES    default 10000 40000 300000
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=${1:-$HERE/../../build/bin/vmtrace}
shift || true
SIZES=${*:-10000 40000 300000}
FORMATS="text json csv folded pprof flamegraph perfetto timeline"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
printf '%-8s %-7s' rows kind
for f in $FORMATS; do printf ' %16s' "$f"; done
printf '\n%-16s' ''
for f in $FORMATS; do printf ' %16s' "s (us/row)"; done
echo
for n in $SIZES; do
	for kind in plain stacks live; do
		opt=
		[ "$kind" != plain ] && opt=--$kind
		# shellcheck disable=SC2086
		python3 "$HERE/make_record.py" "$n" $opt >"$TMP/r.data"
		printf '%-8s %-7s' "$n" "$kind"
		for f in $FORMATS; do
			t0=$(now)
			"$VMTRACE" report "$TMP/r.data" --format "$f" >"$TMP/out" 2>"$TMP/err" ||
				{ echo "run.sh: report --format $f failed: $(cat "$TMP/err")" >&2; exit 1; }
			t1=$(now)
			printf ' %16s' "$(echo "$t1 - $t0" | bc -l | awk -v n="$n" '{ printf "%.2f (%.1f)", $1, 1e6 * $1 / n }')"
		done
		echo
	done
done
