#!/usr/bin/env bash
# batch.sh CASE BIN_DIR: end-to-end tests of the batched exact path (real
# BPF, real demovm; needs root, exits 77 = skipped otherwise). Counts must
# equal demovm's truth file exactly (compare_truth.py).
set -uo pipefail

CASE=$1
BIN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
VMTRACE=$BIN/vmtrace
OPS=2000

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: $CASE needs root (real BPF)"
	exit 77
fi

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_harness batch

wait_line() { # FILE REGEX PID: 30 s at most (a hang, not a measurement)
	for _ in $(seq 300); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || { grep -qE "$2" "$1" 2>/dev/null && return 0; fail "pid $3 ended before '$2' in $1"; }
		sleep 0.1
	done
	fail "no line matching '$2' in $1"
}

start_demovm() { # ARGS...: demovm --wait, returned at `ready`; pid in DV
	"$BIN/demovm" --wait --quiet "$@" >dv.out 2>dv.err &
	DV=$!
	PIDS+=("$DV")
	wait_line dv.out '^ready$' "$DV"
}

start_record() { # NAME ARGS...: returned once its probes are live; pid in VT
	local name=$1
	shift
	"$VMTRACE" record "$@" >"$name.out" 2>"$name.err" &
	VT=$!
	PIDS+=("$VT")
	wait_line "$name.err" '^vmtrace: recording pid' "$VT"
}

compare() { # TRUTH REPORT
	"$PY" "$HERE/compare_truth.py" "$1" "$2" >compare.out 2>&1 || fail "$(cat compare.out)"
	cat compare.out
}

case "$CASE" in
threads64)
	# 64 threads, each with its own table, all exiting before the process
	start_demovm --ops 500 --threads 64 --truth truth.json
	start_record vt -p "$DV" -o rec.data --format json
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$VT" || fail "vmtrace record exited with $?"
	compare truth.json vt.out
	;;
two_consumers)
	# two recordings of one process at once: each sees every event once
	start_demovm --ops $OPS --threads 4 --truth truth.json
	start_record a -p "$DV" -o a.data --format json
	A=$VT
	start_record b -p "$DV" -o b.data --format json
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$A" || fail "the first vmtrace record exited with $?"
	wait "$VT" || fail "the second vmtrace record exited with $?"
	compare truth.json a.out
	compare truth.json b.out
	;;
events_alloc)
	# --events alloc: allocations exact, no free probe attached
	start_demovm --ops $OPS --threads 2 --truth truth.json
	start_record vt -p "$DV" -o rec.data --format json --events alloc
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$VT" || fail "vmtrace record exited with $?"
	"$PY" - truth.json vt.out <<'PYEOF' || fail "allocations differ from the truth"
import json, sys
t = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
want = {(a["class"], a["method"]): (a["count"], a["bytes"]) for a in t["allocations"]}
got = {(a["class"], a["method"]): (a["count"], a["bytes"]) for a in r["allocations"]}
assert want == got, (want, got)
assert not r.get("frees"), r.get("frees")
assert sum(l["count"] for l in r["lost"]) == 0, r["lost"]
print("allocations exact: %d keys, %d events; no frees" % (len(got), sum(c for c, _ in got.values())))
PYEOF
	"$VMTRACE" report rec.data >report.txt 2>report.err || fail "report exited with $?"
	probes=$(grep '^probes:' report.txt)
	case "$probes" in
	*alloc__batch*) ;;
	*) fail "--events alloc: no alloc__batch in '$probes'" ;;
	esac
	case "$probes" in
	*free*|*gc__*|*signal__*|*cache__*) fail "--events alloc attached more: '$probes'" ;;
	esac
	echo "$probes"
	;;
*)
	fail "unknown case $CASE"
	;;
esac
