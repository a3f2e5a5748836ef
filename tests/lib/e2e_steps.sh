# e2e_steps.sh: the steps the end-to-end shell tests of vmtrace record share
# (tests/e2e). Source it after harness.sh; the caller sets BIN (vmtrace,
# demovm), VMTRACE, PY and HERE (where compare_truth.py is). wait_line,
# expect and fail are the harness's.

# start_demovm NAME VARIANT ARGS...: demovm --wait in the background,
# returned to `ready`; its pid in DV.
start_demovm() {
	local name=$1 variant=$2
	shift 2
	[ -x "$BIN/$variant" ] || fail "$BIN/$variant is missing"
	"$BIN/$variant" --wait --quiet "$@" >"$name.out" 2>"$name.err" &
	DV=$!
	PIDS+=("$DV")
	wait_line "$name.out" '^ready$' "$DV"
}

# start_record NAME ARGS...: vmtrace record in the background, returned once
# its probes are live (it says so on stderr); its pid in VT.
start_record() {
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

# per_pid REPORT.json PID TRUTH.json: that demovm pid's rows (--by pid,class,method)
# are the truth's
per_pid() {
	"$PY" - "$@" <<'PY' || fail "pid $2's rows differ from its truth"
import json, sys
rep, pid, truth = json.load(open(sys.argv[1])), int(sys.argv[2]), json.load(open(sys.argv[3]))
assert rep["group_by"] == "pid,class,method", rep["group_by"]
got = {}
for r in rep["allocations"]:
    assert "pid" in r and "comm" in r, r
    if r["pid"] == pid:
        assert r["comm"] == "demovm", r["comm"]
        k = (r["class"], r["method"])
        assert k not in got, k
        got[k] = (r["count"], r["bytes"])
want = {(a["class"], a["method"]): (a["count"], a["bytes"]) for a in truth["allocations"]}
bad = [(k, want.get(k), got.get(k)) for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
assert not bad, bad[:10]
assert want, "the truth has no allocations"
print(f"ok: pid {pid}: {len(want)} rows equal the truth")
PY
}
