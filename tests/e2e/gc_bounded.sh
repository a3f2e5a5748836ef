#!/usr/bin/env bash
# gc_bounded.sh BIN_DIR: more GC pauses than --gc-pauses keeps, end to end
# with real BPF (root; 77 = skipped). The summary must count every pause
# demovm's truth counts while the list holds exactly the bound, and the
# record file must give the same figures back.
set -uo pipefail

CASE=gc_bounded
BIN=$1
VMTRACE=$BIN/vmtrace
KEEP=3

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_need_root
vt_harness gc

# the alloc workload's 4 MiB young generation: a collection every few thousand ops
"$VMTRACE" record --gc-pauses $KEEP --format json -o r.data --report-file rec.out -- \
	"$BIN/demovm" --workload alloc --ops 60000 --truth truth.json --quiet 2>rec.err ||
	fail "record failed"
"$VMTRACE" report --format json r.data >rep.out 2>rep.err || fail "report of the record failed"
/usr/bin/python3 - "$KEEP" rec.out rep.out truth.json <<'PY' || fail "GC figures wrong"
import json, sys
keep = int(sys.argv[1])
rec, rep, truth = (json.load(open(f)) for f in sys.argv[2:5])
want = truth["gc"]
gc = rec["gc"]
total = sum(want.values())
assert total > keep, f"only {total} collections: the workload no longer outgrows the bound"
kinds = {k["name"]: k for k in gc["kinds"]}
for name, n in want.items():
    assert kinds[name]["pauses"] == n, (name, kinds[name]["pauses"], n)
    assert kinds[name]["collections"] == n, (name, kinds[name]["collections"], n)
assert gc["pauses"] == total, (gc["pauses"], total)
assert len(gc["pause_list"]) == keep, len(gc["pause_list"])
assert gc["pauses_not_kept"] == total - keep, gc["pauses_not_kept"]
assert gc["percentiles_estimated"] is True
kept = [p["duration_ns"] for p in gc["pause_list"]]
assert gc["pause_total_ns"] > sum(kept) and gc["pause_max_ns"] >= max(kept)
assert sum(b["count"] for b in gc["pause_hist_us"]) == total
# the list keeps the longest: the longest of all, and every pause of a
# histogram bucket above the shortest kept one's
assert gc["pause_max_ns"] == max(kept), (gc["pause_max_ns"], kept)
def low(ns):  # the low end of the pause's log2 bucket of microseconds
    b = max(ns // 1000, 1).bit_length() - 1
    return 1 << b if b else 0
floor = low(min(kept))
above = sum(b["count"] for b in gc["pause_hist_us"] if b["low"] > floor)
assert above == sum(low(d) > floor for d in kept), (above, kept)
assert rep["gc"] == gc, "the record gives back other GC figures"
print(f"ok: {total} pauses counted, the {keep} longest kept")
PY
"$VMTRACE" report r.data >text.out 2>text.err || fail "text report of the record failed"
grep -q "the pause list keeps the $KEEP longest of [0-9]* pauses" text.out ||
	fail "the text report does not say which pauses it keeps"
