#!/usr/bin/env bash
# all.sh CASE BIN_DIR: vmtrace record --all, end to end with real BPF (root;
# 77 = skipped).
#   all         two demovm processes running before it attached, a Ruby
#               started after: each pid's rows equal its truth (demovm's
#               truth file; allocs.rb's counts by construction); a Ruby that
#               forks: the child's rows under the child's pid; a CPython
#               started after: its objects of two classes as it made them;
#               one that dlopens libvmtrace once running: its allocations
#   all_jvm_php two JVMs with the allocation flag (one with method probes
#               too) and one without, a PHP with USE_ZEND_DTRACE=1 and one
#               without, all started after it attached: each pid's rows are
#               Allocs.java's and objects.php's known counts (per class and
#               method or function where the process fires those probes),
#               the flagless JVM has none; calls of the PHP script exact
#   serve       serve --all (twice: every key, and --top 3) started first,
#               then two demovm-shared (libvmtrace beside vmtrace): after
#               they exit, each pid's vmtrace_allocations_total and bytes
#               series equal its truth (metrics_all_check.py, with
#               prometheus_client's parsers); the bounded one folds the rest
#               into "(other)"; no counter went down since a scrape taken
#               before they ran
#   top         top --all started first, then two demovm-shared: its last
#               view has each pid's rows (PID, COMM) at its truth's counts
#   all_errors  --all with -p, a command, --cgroup, --live, --every, --stack;
#               --runtime of an unknown runtime; top and serve with what
#               --all cannot take
set -uo pipefail

CASE=$1
BIN=$2
VMTRACE=$BIN/vmtrace
PY=/usr/bin/python3
RUBY=/usr/bin/ruby
PYTHON=/usr/bin/python3.11
JAVA=/usr/bin/java
JAVAC=/usr/bin/javac
PHP=/usr/bin/php8.2
RBDIR=$(realpath "$(dirname "$0")/../runtimes/workloads")
EXPORTS=$(realpath "$(dirname "$0")/../export")

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

case_all_jvm_php() {
	[ -x "$JAVA" ] && [ -x "$JAVAC" ] && [ -x "$PHP" ] || { echo "SKIP: needs java, javac, php8.2"; exit 77; }
	"$JAVAC" -d classes "$RBDIR/Allocs.java" 2>javac.err || fail "javac failed"
	# the script's own copy: PHP's calls are keyed by file, and are no row of a pid
	cp "$RBDIR/objects.php" .
	"$VMTRACE" record --all -o rec.data --by pid,class,method --format json >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: recording every process' "$VT"
	grep -q "hotspot probes in .*/lib/server/libjvm.so$" vt.err || fail "--all found no libjvm.so"
	grep -q "php probes in $(realpath "$PHP")$" vt.err || fail "--all found no php8.2"
	[ "$(grep -c -- '-XX:+DTraceAllocProbes' vt.err)" = 1 ] || fail "not one line on the JVM flags"
	[ "$(grep -c 'USE_ZEND_DTRACE=1' vt.err)" = 1 ] || fail "not one line on USE_ZEND_DTRACE"
	# started after the probes went live, all at once: two JVMs' classes
	# may share addresses, two PHPs' class names are the same strings
	printf '\n\n' | "$JAVA" -Xmx256m -XX:+DTraceAllocProbes -XX:+DTraceMethodProbes -cp classes \
		Allocs 1 >j1.out 2>j1.err &
	J1=$!
	printf '\n\n' | "$JAVA" -Xmx256m -XX:+DTraceAllocProbes -cp classes Allocs >j2.out 2>j2.err &
	J2=$!
	printf '\n\n' | "$JAVA" -Xmx256m -cp classes Allocs 1 >j3.out 2>j3.err &
	J3=$!
	printf '\n\n' | USE_ZEND_DTRACE=1 "$PHP" objects.php >p1.out 2>p1.err &
	P1=$!
	printf '\n\n' | env -u USE_ZEND_DTRACE "$PHP" objects.php >p2.out 2>p2.err &
	P2=$!
	PIDS+=("$J1" "$J2" "$J3" "$P1" "$P2")
	for p in "$J1" "$J2" "$J3" "$P1" "$P2"; do
		wait "$p" || fail "pid $p exited with $?"
	done
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace record --all exited with $? ($(cat vt.err))"
	"$VMTRACE" report rec.data --by pid,class,method --format json >rep.json 2>rep.err ||
		fail "report: $(cat rep.err)"
	for rep in vt.out rep.json; do
		"$PY" - "$rep" "$RBDIR/.." "$J1" "$J2" "$J3" "$P1" "$P2" "$WORK/objects.php" <<'PY' ||
import json, sys
sys.path.insert(0, sys.argv[2])
import runtime_test  # noqa: F401  (puts each runtime's room on the path)
import jvm_test, php_test
rep = json.load(open(sys.argv[1]))
j1, j2, j3, p1, p2 = map(int, sys.argv[3:8])
rows = {}
for r in rep["allocations"]:
    rows.setdefault(r["pid"], []).append(r)
    if r["pid"] in (j1, j2, j3, p1, p2):
        assert r["comm"] == ("java" if r["pid"] in (j1, j2, j3) else "php8.2"), r

def by(pid, known, with_method):
    """pid's rows of the known classes, and what they should be: per
    (class, method) with_method, else per class with no method."""
    classes = {k for k, _ in known}
    got, want = {}, {}
    for r in rows.get(pid, []):
        if r["class"] in classes:
            k = (r["class"], r["method"] if with_method else r["method"] or "-")
            c, b = got.get(k, (0, 0))
            got[k] = (c + r["count"], b + r["bytes"])
    for (klass, method), (c, b) in known.items():
        k = (klass, method if with_method else "-")
        wc, wb = want.get(k, (0, 0))
        want[k] = (wc + c, wb + b)
    return got, want

# Allocs.java's own classes only: long[] and the exception are the JVM's too
java_own = {k: v for k, v in jvm_test.EXPECTED.items() if k[0].startswith("Allocs$")}
for pid, known, with_method in ((j1, jvm_test.EXPECTED, True), (j2, java_own, False),
                                (p1, php_test.OBJECTS, True), (p2, php_test.OBJECTS, False)):
    got, want = by(pid, known, with_method)
    # long[] and the exception are the JVM's classes too: their other rows are not the workload's
    got = {k: v for k, v in got.items() if k in want or k[0].startswith("Allocs$") or pid in (p1, p2)}
    assert got == want, (pid, sorted(set(got.items()) ^ set(want.items())))
    print(f"ok: pid {pid}: {len(want)} rows of known counts")
assert j3 not in rows, ("the JVM without the flag has rows", rows[j3][:3])
print(f"ok: pid {j3} (no -XX:+DTraceAllocProbes): no allocation rows")
calls = {c["name"]: c["count"] for c in rep.get("calls", []) if c.get("file") == sys.argv[8]}
want = dict(php_test.CALLS, main=1)  # the top-level script: one call of main
assert calls == want, (calls, want)
print(f"ok: the PHP started with USE_ZEND_DTRACE=1: its {sum(calls.values())} calls, and none of the other")
PY
			fail "$rep: the JVM or PHP rows are wrong"
	done
	"$PY" - vt.out <<'PY' || fail "something was lost"
import json, sys
lost = [l for l in json.load(open(sys.argv[1]))["lost"]
        if l["count"] and not l["what"].startswith("bytes of ")]
assert not lost, lost
PY
}

# start_serve NAME ARGS...: vmtrace serve --all on a free loopback port,
# returned once it serves; its pid in VT, its URL in URL
start_serve() {
	local name=$1 port
	shift
	"$VMTRACE" serve --all --listen 127.0.0.1:0 "$@" >"$name.out" 2>"$name.err" &
	VT=$!
	PIDS+=("$VT")
	wait_line "$name.err" '^vmtrace: serving every process' "$VT"
	port=$(sed -nE 's|.*http://127\.0\.0\.1:([0-9]+)/metrics$|\1|p' "$name.err")
	[ -n "$port" ] || fail "no port in: $(cat "$name.err")"
	URL=http://127.0.0.1:$port
}

# two demovm-shared started after vmtrace attached, held at `ready` (A, B)
start_two() {
	start_demovm a demovm-shared --ops 1500 --seed 3 --truth a.json
	A=$DV
	start_demovm b demovm-shared --workload alloc --ops 4000 --seed 9 --threads 2 --truth b.json
	B=$DV
}

run_two() {
	kill -USR1 "$A" "$B"
	wait "$A" || fail "demovm a exited with $?"
	wait "$B" || fail "demovm b exited with $?"
}

case_serve() {
	local om='Accept: application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5'
	local -A url vt

	start_serve all --top 10000
	url[all]=$URL vt[all]=$VT
	start_serve few --top 3
	url[few]=$URL vt[few]=$VT
	start_two
	for u in all few; do
		curl -sf --max-time 10 -H "$om" "${url[$u]}/metrics" >"$u.early.om" ||
			fail "the early scrape of $u failed"
	done
	run_two
	# while scrapes come, a scrape answers from a snapshot at most a second old
	# (docs/exports.md): the counts of processes gone a moment ago come with the next
	sleep 2.5
	for u in all few; do
		curl -sf --max-time 10 -H "$om" "${url[$u]}/metrics" >"$u.om" ||
			fail "the final scrape of $u failed"
		curl -sf --max-time 10 "${url[$u]}/metrics" >"$u.prom" || fail "the final scrape of $u failed"
		kill -INT "${vt[$u]}"
		wait "${vt[$u]}" || fail "vmtrace serve --all ($u) exited with $? ($(cat "$u.err"))"
	done
	"$PY" "$EXPORTS/metrics_all_check.py" 10000 all.early.om all.om all.prom "$A=a.json" \
		"$B=b.json" || fail "serve --all: the metrics differ from the truths"
	"$PY" "$EXPORTS/metrics_all_check.py" 3 few.early.om few.om few.prom "$A=a.json" \
		"$B=b.json" || fail "serve --all --top 3: the metrics differ from the truths"
}

case_top() {
	"$VMTRACE" top --all -i 0.5 --top 0 >top.out 2>top.err &
	VT=$!
	PIDS+=("$VT")
	wait_line top.out '^vmtrace top - every process' "$VT"
	start_two
	run_two
	# two views after both exited: the events are in within a second
	local views
	views=$(grep -c '^vmtrace top - ' top.out)
	for _ in $(seq 100); do
		[ "$(grep -c '^vmtrace top - ' top.out)" -ge $((views + 2)) ] && break
		sleep 0.1
	done
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace top --all exited with $? ($(cat top.err))"
	"$PY" - top.out "$A=a.json" "$B=b.json" <<'PY' || fail "top --all's last view differs from the truths"
import json, re, sys
view = open(sys.argv[1]).read().split("vmtrace top - ")[-1].splitlines()
head = [i for i, l in enumerate(view) if l.split()[:6] == ["ALLOCS/s", "BYTES/s", "ALLOCS", "BYTES", "PID", "COMM"]]
assert head, "no PID and COMM columns in the last view: %r" % view
rows = {}
for l in view[head[0] + 1:]:
    if not l.strip():
        break
    # (another process's names may hold spaces: only these pids' rows are read)
    m = re.match(r"^ +[0-9]+ +[0-9]+ +([0-9]+) +([0-9]+)  +([0-9]+) (\S+) +(\S+) +(\S+)$", l)
    if not m:
        continue
    count, nbytes, pid, comm, klass, method = m.groups()
    rows.setdefault(pid, {})[(klass, method)] = (int(count), int(nbytes))
    if pid in [a.split("=")[0] for a in sys.argv[2:]]:
        assert comm == "demovm-shared", l
for arg in sys.argv[2:]:
    pid, path = arg.split("=", 1)
    want = {}
    for r in json.load(open(path))["allocations"]:
        c, b = want.get((r["class"], r["method"]), (0, 0))
        want[(r["class"], r["method"])] = (c + r["count"], b + r["bytes"])
    got = rows.get(pid, {})
    assert got == want, (pid, sorted(set(got.items()) ^ set(want.items()))[:10])
    print(f"ok: pid {pid}: {len(want)} rows in top --all's last view, as its truth says")
PY
}

case_all_errors() {
	expect 2 "not with -p" record --all -p 1 -o x.data
	expect 2 "not with -p" record --all -o x.data -- /bin/true
	expect 2 "not with -p" record --all --cgroup / -o x.data
	expect 2 "--live takes one process" record --all --live -o x.data
	expect 2 "--every takes one process" record --all --every 1s --out-dir . -o x.data
	expect 2 "--stack takes one process" record --all --stack vm -o x.data
	expect 1 "--runtime nosuch: unknown runtime" record --all --runtime nosuch -o x.data
	expect 2 "not with -p" top --all -p 1
	expect 2 "--live takes one process" top --all --live
	expect 2 "--live takes one process" top --all --live-max 10
	expect 2 "not with -p" serve --all -p 1
	expect 2 "not with -p" serve --all -- /bin/true
	expect 2 "--linger waits out one target's exit" serve --all --linger 5
	expect 1 "--runtime nosuch: unknown runtime" serve --all --runtime nosuch --listen 127.0.0.1:0
	expect 1 "--runtime nosuch: unknown runtime" top --all --runtime nosuch
	[ ! -e x.data ] || fail "a failed record left x.data"
}

"case_$CASE"
echo "ok: $CASE"
