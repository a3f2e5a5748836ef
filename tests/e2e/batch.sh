#!/usr/bin/env bash
# batch.sh CASE BIN_DIR TEST_BIN_DIR: end-to-end tests of the batched exact path (real
# BPF, real demovm; needs root, exits 77 = skipped otherwise). Counts must
# equal demovm's truth file exactly (compare_truth.py), or what batch_host
# (TEST_BIN_DIR, with vt_gates) made.
set -uo pipefail

CASE=$1
BIN=$2
TBIN=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
VMTRACE=$BIN/vmtrace
OPS=2000

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_need_root
vt_harness batch
# shellcheck source=../lib/e2e_steps.sh
. "$(dirname "$0")/../lib/e2e_steps.sh"

# a case named NAME_cached runs NAME with batch_host's cached sites
HOST_MODE=()
case "$CASE" in
*_cached) CASE=${CASE%_cached}; HOST_MODE=(cached) ;;
esac

start_host() { # THREADS PER_THREAD: batch_host, returned at `ready`; pid in HOST
	"$TBIN/batch_host" "$@" "${HOST_MODE[@]}" >host.out 2>host.err &
	HOST=$!
	PIDS+=("$HOST")
	wait_line host.out '^ready$' "$HOST"
}

host_round() { # N: one round of the host's threads, returned when all are idle again
	kill -USR1 "$HOST"
	wait_line host.out "^round $1 done$" "$HOST"
}

# check_batch REPORT COUNT: the report holds exactly COUNT allocations and
# COUNT frees of Batch (24 bytes each), and nothing lost
check_batch() {
	"$PY" - "$1" "$2" <<'PYEOF' || fail "$1: not exactly $2 allocations and frees"
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2])
a = [(x["count"], x["bytes"]) for x in r["allocations"] if x["class"] == "Batch"]
f = [(x["count"], x["bytes"]) for x in r["frees"] if x["class"] == "Batch"]
lost = sum(l["count"] for l in r["lost"])
print("allocations %s frees %s lost %d (want %d each)" % (a, f, lost, n))
assert a == [(n, 24 * n)] and f == [(n, 24 * n)] and lost == 0
PYEOF
}

case "$CASE" in
threads64)
	# 64 threads, each with its own table, all exiting before the process
	start_demovm dv demovm --ops 500 --threads 64 --truth truth.json
	start_record vt -p "$DV" -o rec.data --format json
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$VT" || fail "vmtrace record exited with $?"
	compare truth.json vt.out
	;;
two_consumers)
	# two recordings of one process at once: each sees every event once
	start_demovm dv demovm --ops $OPS --threads 4 --truth truth.json
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
	start_demovm dv demovm --ops $OPS --threads 2 --truth truth.json
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
idle_reattach)
	# threads that counted and then sit idle: a recording that ends (SIGINT)
	# still gets their pending counts, through the flush round it asks for;
	# a second recording of the same process counts only its own round
	start_host 8 5000
	start_record a -p "$HOST" -o a.data --format json
	host_round 1
	kill -INT "$VT"
	wait "$VT" || fail "the first vmtrace record exited with $?"
	check_batch a.out 40000
	start_record b -p "$HOST" -o b.data --format json
	host_round 2
	kill -INT "$VT"
	wait "$VT" || fail "the second vmtrace record exited with $?"
	check_batch b.out 40000
	;;
never_counted)
	# a process that never counted a batched event has no flush thread to
	# answer the end's request: nothing is pending, so the end is no loss
	# (not a round given up for); its first events later are exact
	start_host 2 1000
	start_record a -p "$HOST" -o a.data --format json
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace record exited with $?"
	"$PY" - a.out <<'PYEOF' || fail "a.out: an idle process's recording lost something"
import json, sys
r = json.load(open(sys.argv[1]))
lost = {l["what"]: l["count"] for l in r["lost"] if l["count"]}
print("allocations %d, lost %s" % (len(r["allocations"]), lost))
assert not lost and not [x for x in r["allocations"] if x["class"] == "Batch"]
PYEOF
	start_record b -p "$HOST" -o b.data --format json
	host_round 1
	kill -INT "$VT"
	wait "$VT" || fail "the second vmtrace record exited with $?"
	check_batch b.out 2000
	;;
sigkill_flush)
	# a recording SIGKILLed while batches flow: the target goes on, its
	# semaphores fall back to 0, and a new recording is exact again
	start_host 4 200000
	start_record a -p "$HOST" -o a.data
	kill -USR1 "$HOST"
	sleep 0.2
	kill -9 "$VT"
	wait "$VT" 2>/dev/null
	wait_line host.out '^round 1 done$' "$HOST"
	ok=0
	for _ in $(seq 100); do
		"$TBIN/vt_gates" "$HOST" >gates.out 2>gates.err || fail "vt_gates: $(cat gates.err)"
		if awk '$2 != 0 { exit 1 }' gates.out; then ok=1; break; fi
		sleep 0.1
	done
	[ $ok = 1 ] || fail "semaphores still up after SIGKILL: $(cat gates.out)"
	echo "after SIGKILL: semaphores all 0: $(tr '\n' ' ' <gates.out)"
	start_record b -p "$HOST" -o b.data --format json
	host_round 2
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace record exited with $?"
	check_batch b.out 800000
	;;
bpftrace_beside)
	# bpftrace's per-event probes and a batching recording at once: both
	# get every event (their own semaphores, the same weight)
	command -v bpftrace >/dev/null || { echo "SKIP: no bpftrace"; exit 77; }
	start_host 4 5000
	start_record vt -p "$HOST" -o rec.data --format json
	bpftrace -p "$HOST" -e 'BEGIN { printf("live\n"); }
		usdt:*:vmtrace:object__alloc { @allocs = count(); }
		usdt:*:vmtrace:object__free { @frees = count(); }' >bt.out 2>bt.err &
	BT=$!
	PIDS+=("$BT")
	wait_line bt.out '^live$' "$BT"
	host_round 1
	kill -INT "$BT"
	wait "$BT" || fail "bpftrace exited with $?: $(cat bt.err)"
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace record exited with $?"
	grep -qx '@allocs: 20000' bt.out || fail "bpftrace: want @allocs: 20000, got: $(cat bt.out)"
	grep -qx '@frees: 20000' bt.out || fail "bpftrace: want @frees: 20000, got: $(cat bt.out)"
	echo "bpftrace: $(grep '^@' bt.out | tr '\n' ' ')"
	check_batch vt.out 20000
	;;
*)
	fail "unknown case $CASE"
	;;
esac
