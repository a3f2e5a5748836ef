#!/usr/bin/env bash
# all.sh CASE BIN_DIR: vmtrace record --all, end to end with real BPF (root;
# 77 = skipped).
#   all         two demovm processes running before it attached, a Ruby
#               started after: each pid's rows equal its truth (demovm's
#               truth file; allocs.rb's counts by construction); a Ruby that
#               forks: the child's rows under the child's pid; a CPython
#               started after: its objects of two classes as it made them;
#               one that dlopens libvmtrace once running: its allocations
#   all_errors  --all with -p, a command, --cgroup, --live, --every, --stack;
#               --runtime of an unknown runtime; top and serve refuse it
set -uo pipefail

CASE=$1
BIN=$2
VMTRACE=$BIN/vmtrace
PY=/usr/bin/python3
RUBY=/usr/bin/ruby
PYTHON=/usr/bin/python3.11
RBDIR=$(realpath "$(dirname "$0")/../runtimes/workloads")

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_need_root
vt_harness all
# shellcheck source=../lib/e2e_steps.sh
. "$(dirname "$0")/../lib/e2e_steps.sh"

# ruby_rows REPORT.json PID CLASS:METHOD=N...: that pid's rows have those
# counts, and no row of another pid has its classes
ruby_rows() {
	"$PY" - "$@" <<'PY' || fail "pid $2's Ruby rows are wrong"
import json, sys
rep, pid = json.load(open(sys.argv[1])), int(sys.argv[2])
want = {}
for w in sys.argv[3:]:
    km, n = w.rsplit("=", 1)
    k, m = km.split(":", 1)
    want[(k, m)] = int(n)
got = {}
for r in rep["allocations"]:
    key = (r["class"], r["method"])
    if r["pid"] == pid:
        assert r["comm"] == "ruby", r["comm"]
        got[key] = got.get(key, 0) + r["count"]
    elif key in want:
        raise AssertionError(f"pid {r['pid']} has a row {key} of pid {pid}")
bad = [(k, n, got.get(k)) for k, n in want.items() if got.get(k) != n]
assert not bad, bad
print(f"ok: pid {pid}: {len(want)} Ruby rows as constructed")
PY
}

case_all() {
	start_demovm a demovm --ops 1500 --seed 3 --truth a.json
	A=$DV
	start_demovm b demovm --workload alloc --ops 4000 --seed 9 --threads 2 --truth b.json
	B=$DV
	"$VMTRACE" record --all -o rec.data --by pid,class,method --format json >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: recording every process' "$VT"
	grep -q "ruby probes in " vt.err || fail "--all found no libruby ($(cat vt.err))"
	kill -USR1 "$A" "$B"
	# started after the probes went live: the file-wide uprobes reach it
	"$RUBY" "$RBDIR/allocs.rb" </dev/null >rb.out 2>rb.err &
	R=$!
	"$RUBY" "$RBDIR/fork.rb" </dev/null >fork.out 2>fork.err || fail "fork.rb failed: $(cat fork.err)"
	# a process that loads libvmtrace with dlopen once running
	"$PYTHON" "$RBDIR/dlopen.py" "$BIN/../lib/libvmtrace.so" 777 >dl.out 2>dl.err ||
		fail "dlopen.py failed: $(cat dl.err)"
	DL=$(cat dl.out)
	# a CPython tracing memory, started after too: it stops itself twice
	PYTHONTRACEMALLOC=1 "$PYTHON" "$RBDIR/objects.py" >py.out 2>py.err &
	P=$!
	for _ in 1 2; do
		for _ in $(seq 200); do
			[ "$(awk '{ print $3 }' "/proc/$P/stat" 2>/dev/null)" = T ] && break
			sleep 0.05
		done
		kill -CONT "$P"
	done
	wait "$P" || fail "objects.py failed: $(cat py.err)"
	wait "$R" || fail "allocs.rb failed: $(cat rb.err)"
	wait "$A" || fail "demovm a exited with $?"
	wait "$B" || fail "demovm b exited with $?"
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace record --all exited with $? ($(cat vt.err))"
	per_pid vt.out "$A" a.json
	per_pid vt.out "$B" b.json
	ruby_rows vt.out "$R" Foo:Object#make_foo=1000 Foo:Object#make_foo_block=200 \
		Array:Object#build_rows=500 Hash:Object#make_hashes=200 \
		String:Object#make_strings=300 Bar:Object#make_bar=100 String:Bar#initialize=100 \
		Baz:Object#thread_work=500
	CHILD=$(sed -n 's/^child //p' fork.out)
	PARENT=$(sed -n 's/^parent //p' fork.out)
	[ -n "$CHILD" ] && [ -n "$PARENT" ] || fail "fork.rb printed no pids"
	ruby_rows vt.out "$CHILD" ChildObj:Object#child_work=700
	ruby_rows vt.out "$PARENT" ParentObj:Object#parent_work=300
	# A and B: what its workload made, and the whole run's three more (its
	# warm-up's A and B, sys.getsizeof(A(0))), all under its pid
	"$PY" - vt.out "$P" py.out <<'PY' || fail "the CPython rows are wrong"
import json, sys
rep, pid = json.load(open(sys.argv[1])), int(sys.argv[2])
made = json.loads(open(sys.argv[3]).read().splitlines()[-1])["made"]
got = {}
for r in rep["allocations"]:
    if r["class"] in ("A", "B"):
        assert r["pid"] == pid and r["comm"].startswith("python"), r
        got[r["class"]] = got.get(r["class"], 0) + r["count"]
assert got == {"A": made["A"] + 2, "B": made["B"] + 1}, (got, made)
print(f"ok: pid {pid}: A and B as made")
PY
	"$PY" - vt.out "$DL" <<'PY' || fail "the dlopen'ed library's rows are wrong"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["allocations"] if r["class"] == "Dl"]
got = [(r["pid"], r["method"], r["count"], r["bytes"]) for r in rows]
assert got == [(int(sys.argv[2]), "dl_make", 777, 777 * 32)], got
print("ok: the library dlopen'ed after attach: its 777 allocations under its pid")
PY
	"$PY" - vt.out <<'PY' || fail "something was lost"
import json, sys
# (CPython's notes on bytes of variable-size objects are no losses)
lost = [l for l in json.load(open(sys.argv[1]))["lost"]
        if l["count"] and not l["what"].startswith("bytes of ")]
assert not lost, lost
PY
	# the record file keeps every process
	"$VMTRACE" report rec.data --by pid,class,method --format json >rep.json 2>rep.err ||
		fail "report: $(cat rep.err)"
	per_pid rep.json "$A" a.json
	ruby_rows rep.json "$CHILD" ChildObj:Object#child_work=700
	grep -q "^process $R =ruby =" rec.data || fail "the record names no process $R"
}

case_all_errors() {
	expect 2 "not with -p" record --all -p 1 -o x.data
	expect 2 "not with -p" record --all -o x.data -- /bin/true
	expect 2 "not with -p" record --all --cgroup / -o x.data
	expect 2 "--live takes one process" record --all --live -o x.data
	expect 2 "--every takes one process" record --all --every 1s --out-dir . -o x.data
	expect 2 "--stack takes one process" record --all --stack vm -o x.data
	expect 1 "--runtime nosuch: unknown runtime" record --all --runtime nosuch -o x.data
	expect 2 "top follows one process" top --all
	expect 2 "serve follows one process" serve --all
	[ ! -e x.data ] || fail "a failed record left x.data"
}

"case_$CASE"
echo "ok: $CASE"
