#!/usr/bin/python3.11
"""Integration tests: vmtrace on Debian's stock ruby and python3.11 through
their own USDT probes. Each case runs a workload whose numbers are known by
construction (workloads/allocs.rb, workloads/calls.py), records it with
vmtrace by pid or by spawning it, and checks the report's JSON exactly.

Usage: runtime_test.py VMTRACE CASE
Cases: ruby-pid, ruby-spawn, ruby-spawn-rubyopt, ruby-spawn-no-methods,
       ruby-crosscheck, ruby-silent, ruby-objects, ruby-objects-methods, python-pid,
       python-spawn, python-objects, python-sizes, python-pauses-counted, top-python, top-ruby. Exit 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# each runtime's tests are in its room (tests/runtimes/NAME/), and a test of
# one takes checks from another's (a version test, its runtime's): all importable
sys.path.extend(os.path.join(HERE, room) for room in ("ruby", "python", "jvm", "php", "vmtrace"))
ALLOCS_RB = os.path.join(HERE, "workloads", "allocs.rb")
CALLS_PY = os.path.join(HERE, "workloads", "calls.py")
OBJECTS_RB = os.path.join(HERE, "workloads", "objects.rb")
OBJECTS_PY = os.path.join(HERE, "workloads", "objects.py")
SIZES_PY = os.path.join(HERE, "workloads", "sizes.py")
TRACEMALLOC_NOTE = ("vmtrace: python: set PYTHONTRACEMALLOC=1 in the spawned process so its "
                    "objects are seen")
RUBY = "/usr/bin/ruby"
PYTHON = "/usr/bin/python3.11"  # `python3` on PATH may be a shim without probes

# (class, innermost Ruby method) -> count, by construction (see allocs.rb).
# With the method probes armed, Ruby's probe set-up (rb_dtrace_setup ->
# rb_class_path) allocates one String per method__entry and one per
# method__return; vmtrace counts them as ObjectSpace does: the return's in
# the returning method (make_strings once, each Bar#initialize once more).
# (class, method) -> count with methods from the frame walk: no method probe,
# so no String of Ruby's probe set-up
RUBY_WALK_EXPECTED = {
    ("Foo", "Object#make_foo"): 1000,
    ("Foo", "Object#make_foo_block"): 200,
    ("Array", "Object#build_rows"): 500,
    ("Hash", "Object#make_hashes"): 200,
    ("String", "Object#make_strings"): 300,
    ("Bar", "Object#make_bar"): 100,
    ("String", "Bar#initialize"): 100,
    ("Baz", "Object#thread_work"): 500,
}
# ... with methods from method__entry/return (--no-frame-walk): the Strings of
# rb_dtrace_setup counted too
RUBY_EXPECTED = {
    ("Foo", "Object#make_foo"): 1000,
    ("Foo", "Object#make_foo_block"): 200,
    ("Array", "Object#build_rows"): 500,
    ("Hash", "Object#make_hashes"): 200,
    ("String", "Object#make_strings"): 301,
    ("Bar", "Object#make_bar"): 100,
    ("String", "Bar#initialize"): 200,
    ("Baz", "Object#thread_work"): 500,
}
# marker in allocs.rb -> (class, count)
RUBY_SITES = {
    "make_foo": ("Foo", 1000), "make_foo_block": ("Foo", 200), "build_rows": ("Array", 500),
    "make_hashes": ("Hash", 200), "make_strings": ("String", 300), "make_bar": ("Bar", 100),
    "bar_name": ("String", 100), "thread_work": ("Baz", 500),
}
PY_CALLS = {"leaf": 1000, "middle": 10, "outer": 1, "fib": 177, "tick": 600, "ticker": 2,
            "squares": 6, "make_cycles": 6, "collect": 6, "workload": 1}

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def site_lines():
    lines = {}
    with open(ALLOCS_RB) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"# site:(\w+)$", text.rstrip())
            if m:
                lines[m.group(1)] = n
    return lines


class Target:
    """A workload that prints "ready", waits for a line, works, prints "done"
    and waits for a second line before it exits."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.out = []
        self.expect("ready")

    def expect(self, word):
        for line in self.proc.stdout:
            self.out.append(line.rstrip("\n"))
            if line.strip() == word:
                return
        raise SystemExit(f"workload ended before printing {word!r}")

    def step(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()


def wait_attached(rec, errpath):
    # vmtrace says it is recording once every probe is attached
    for _ in range(300):
        with open(errpath) as f:
            if "recording pid" in f.read():
                return
        if rec.poll() is not None:
            raise SystemExit("vmtrace record ended early: " + open(errpath).read())
        time.sleep(0.05)
    raise SystemExit("vmtrace record did not attach")


def record_pid(vmtrace, argv, tmp, extra=()):
    """Start the workload, attach by pid, run it; the record file's path."""
    data = os.path.join(tmp, "pid.data")
    err = os.path.join(tmp, "record.err")
    if os.path.exists(data):
        os.unlink(data)              # a case may record twice
    target = Target(argv)
    if argv[0] == JAVA:
        extra = stock_ruby(argv, extra)
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.proc.pid), "-o", data,
                                *extra], stdout=subprocess.DEVNULL, stderr=ef)
    wait_attached(rec, err)
    target.step()
    target.expect("done")
    target.proc.stdin.write("bye\n")
    target.proc.stdin.close()
    target.out += [l.rstrip("\n") for l in target.proc.stdout]
    check(target.proc.wait(timeout=60) == 0, "workload exits 0")
    check(rec.wait(timeout=60) == 0, "vmtrace record -p exits 0 when the target exits")
    return data, target.out


JAVA = "/usr/bin/java"


def stock_ruby(argv, extra):
    """These cases test the runtimes' own probes: a Ruby (a CPython, a JVM)
    that vmtrace starts or attaches to would load vmtrace's Ruby extension
    (ext_test.py; its CPython extension, ext_test.py; its JVM agent,
    jvm_agent_test.py) unless told the runtime."""
    stock = {RUBY: "ruby", PYTHON: "python", JAVA: "hotspot"}
    if argv and argv[0] in stock and "--runtime" not in extra:
        return ["--runtime", stock[argv[0]], *extra]
    return list(extra)


def record_spawn(vmtrace, argv, tmp, extra=(), env=None, stderr=None):
    data = os.path.join(tmp, "spawn.data")
    if os.path.exists(data):
        os.unlink(data)              # a case may record twice
    extra = stock_ruby(argv, extra)
    r = subprocess.run([vmtrace, "record", "-o", data, *extra, "--", *argv],
                       input="go\nbye\n", capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode == 0, "vmtrace record -- CMD exits 0: " + r.stderr.strip()[-200:])
    if stderr is not None:
        stderr.extend(r.stderr.splitlines())
    # the workload shares vmtrace's stdout: keep its own lines
    return data, r.stdout.splitlines()


def report(vmtrace, data, *args):
    r = subprocess.run([vmtrace, "report", data, "--format", "json", *args],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("vmtrace report failed: " + r.stderr)
    return json.loads(r.stdout)


def allocs_by_class_method(j):
    return {(a["class"], a["method"]): a["count"] for a in j["allocations"]}


def check_ruby_methods(j, mode, walk=True):
    check(j["runtime"] == "ruby", f"{mode}: runtime is ruby")
    if walk:
        check("sites(frame walk)" in j["probes"] and "methods(frame walk)" in j["probes"] and
              "object__create" not in j["probes"] and "method__entry" not in j["probes"],
              f"{mode}: sites and methods from the frame walk, no site or method probe")
    else:
        check("method__entry" in j["probes"] and "object__create" in j["probes"],
              f"{mode}: --no-frame-walk: sites and methods from Ruby's probes")
    check(j["has_allocations"], f"{mode}: has_allocations")
    got = allocs_by_class_method(j)
    for key, want in (RUBY_WALK_EXPECTED if walk else RUBY_EXPECTED).items():
        check(got.get(key) == want, f"{mode}: {key[0]} in {key[1]}: {got.get(key)} == {want}")
    # C methods (cmethod__*) never stand in for the Ruby method
    check(not any(m.startswith("Class#") or m.startswith("BasicObject#") for _, m in got),
          f"{mode}: no allocation attributed to a C method such as Class#new")
    silent = [l for l in j["lost"] if "silent" in l["what"]]
    check(all(l["count"] == 0 for l in silent), f"{mode}: method probes fired")
    # code outside any method is named, never an empty method
    check(all(m != "" for _, m in got), f"{mode}: no allocation with an empty method")


def case_ruby_pid(vmtrace, tmp):
    """Attached by pid, no TracePoint in the program: the frame walk gives
    the methods a spawned run gives."""
    data, _ = record_pid(vmtrace, [RUBY, ALLOCS_RB], tmp)
    j = report(vmtrace, data)
    check_ruby_methods(j, "ruby by pid")
    check(j["lost_total"] == 0, f"ruby by pid: nothing lost ({j['lost_total']})")
    # the same with Ruby's probes, which need the program's TracePoint
    data, _ = record_pid(vmtrace, [RUBY, ALLOCS_RB, "--tracepoint"], tmp, ["--no-frame-walk"])
    j = report(vmtrace, data)
    check_ruby_methods(j, "ruby by pid, --no-frame-walk", walk=False)
    check(j["lost_total"] == 0, f"ruby by pid, --no-frame-walk: nothing lost ({j['lost_total']})")


def case_ruby_spawn(vmtrace, tmp):
    data, _ = record_spawn(vmtrace, [RUBY, ALLOCS_RB, "--tracepoint"], tmp)
    j = report(vmtrace, data)
    check_ruby_methods(j, "ruby spawned")
    check(any(m == "(top level)" for _, m in allocs_by_class_method(j)),
          "ruby spawned: the script's top-level allocations are in method (top level)")
    check(j["gc"]["mark"] >= 1 and j["gc"]["sweep"] >= 1,
          "ruby spawned: boot's GC cycles seen as mark and sweep phases")


# A user's own RUBYOPT file, loaded before vmtrace's: it tells what RUBYOPT
# the spawned ruby started with (and the mode of vmtrace's file in it), and
# what the program itself sees at exit. Its name holds a quote and a
# backslash, which vmtrace's file must write back exactly.
PRELOAD_RB = """\
m = ENV["RUBYOPT"].to_s.match(/-r (\\S*vmtrace-tracepoint-\\S*\\.rb)/)
$stdout.puts "rubyopt at start: " + ENV["RUBYOPT"].inspect
$stdout.puts format("tracepoint file mode: %o", File.stat(m[1]).mode & 0o7777) if m
at_exit { $stdout.puts "rubyopt at exit: " + ENV["RUBYOPT"].inspect }
"""
TRACEPOINT_NOTE = ("vmtrace: ruby: enabled a TracePoint in the spawned process so its method "
                   "probes fire (--no-methods: class and site only)")


def spawn_with_rubyopt(vmtrace, tmp, extra):
    """allocs.rb without --tracepoint, spawned with a RUBYOPT of its own and
    TMPDIR in tmp; (record file, stdout lines, stderr lines, user RUBYOPT)."""
    pre = os.path.join(tmp, "pre'opt\\.rb")
    with open(pre, "w") as f:
        f.write(PRELOAD_RB)
    tmpdir = os.path.join(tmp, "tmpdir")
    os.mkdir(tmpdir)
    user_opt = "-W0 -r " + pre
    env = dict(os.environ, RUBYOPT=user_opt, TMPDIR=tmpdir)
    err = []
    data, out = record_spawn(vmtrace, [RUBY, ALLOCS_RB], tmp, extra, env, err)
    check(os.listdir(tmpdir) == [], f"no file left in TMPDIR: {os.listdir(tmpdir)}")
    check(f"rubyopt at exit: {json.dumps(user_opt)}" in out,
          "the program sees the user's RUBYOPT, exactly (quote and backslash kept)")
    return data, out, err, user_opt


def case_ruby_spawn_rubyopt(vmtrace, tmp):
    """No TracePoint in the program: the frame walk needs none and leaves
    RUBYOPT alone; with --no-frame-walk vmtrace enables one through RUBYOPT."""
    data, out, err, user_opt = spawn_with_rubyopt(vmtrace, tmp, [])
    check(f"rubyopt at start: {json.dumps(user_opt)}" in out, "frame walk: RUBYOPT unchanged")
    check(not any("TracePoint" in l for l in err), "frame walk: no TracePoint note")
    j = report(vmtrace, data)
    check_ruby_methods(j, "ruby spawned, no TracePoint")
    check(j["lost_total"] == 0, f"ruby spawned, no TracePoint: nothing lost ({j['lost_total']})")
    shutil.rmtree(os.path.join(tmp, "tmpdir"))
    data, out, err, user_opt = spawn_with_rubyopt(vmtrace, tmp, ["--no-frame-walk"])
    start = [l for l in out if l.startswith("rubyopt at start: ")]
    want = re.compile(r"rubyopt at start: " + re.escape(json.dumps(user_opt)[:-1]) +
                      r" -r \S*/tmpdir/vmtrace-tracepoint-\w+\.rb\"$")
    check(len(start) == 1 and want.match(start[0]),
          f"RUBYOPT extended after the user's own: {start}")
    check("tracepoint file mode: 600" in out, "vmtrace's file has mode 0600")
    check(err.count(TRACEPOINT_NOTE) == 1, "stderr says, in one line, a TracePoint was enabled")
    j = report(vmtrace, data)
    check_ruby_methods(j, "ruby spawned, TracePoint by vmtrace", walk=False)
    check(j["lost_total"] == 0, f"ruby spawned, TracePoint by vmtrace: nothing lost ({j['lost_total']})")


def case_ruby_spawn_no_methods(vmtrace, tmp):
    """--no-methods: RUBYOPT untouched, class and site only, as before."""
    data, out, err, user_opt = spawn_with_rubyopt(vmtrace, tmp, ["--no-methods"])
    check(f"rubyopt at start: {json.dumps(user_opt)}" in out, "--no-methods: RUBYOPT unchanged")
    check(not any("TracePoint" in l for l in err), "--no-methods: no TracePoint note")
    j = report(vmtrace, data)
    check("method__entry" not in j["probes"], "--no-methods: method probes not attached")
    check(all(a["method"] == "" for a in j["allocations"]), "--no-methods: no method column")
    got = {}
    for (klass, _), n in allocs_by_class_method(j).items():
        got[klass] = got.get(klass, 0) + n
    check(got.get("Foo") == 1200 and got.get("Bar") == 100 and got.get("Baz") == 500,
          f"--no-methods: Foo, Bar, Baz counts exact ({got.get('Foo')}, {got.get('Bar')}, "
          f"{got.get('Baz')})")
    check(j["lost_total"] == 0, f"--no-methods: nothing lost ({j['lost_total']})")


def by_site(vmtrace, data):
    """(class, site) -> count: Ruby's hidden internal objects made at a site
    (call caches, environments) share it with the object the line makes."""
    j = report(vmtrace, data, "--by", "site")
    got = {}
    for a in j["allocations"]:
        got[(a["class"], a["site"])] = got.get((a["class"], a["site"]), 0) + a["count"]
    return got


def case_ruby_crosscheck(vmtrace, tmp):
    """--no-methods, with Ruby's own counters beside vmtrace's."""
    cc = os.path.join(tmp, "crosscheck.json")
    data, _ = record_pid(vmtrace, [RUBY, ALLOCS_RB, "--crosscheck", cc], tmp, ["--no-methods"])
    j = report(vmtrace, data)
    check("method__entry" not in j["probes"], "--no-methods: method probes not attached")
    check(all(a["method"] == "" for a in j["allocations"]), "--no-methods: no method column")
    check(j["lost_total"] == 0, f"--no-methods: nothing lost ({j['lost_total']})")
    sites = by_site(vmtrace, data)
    ruby = json.load(open(cc))
    rsites = ruby["sites"]
    lines = site_lines()
    vm_total = 0
    for marker, (klass, want) in RUBY_SITES.items():
        line = lines[marker]
        # the frame's saved pc is that of the instruction before putstring
        # (Ruby's string__create probe, which reads it, says the same): one
        # line early here
        walk_line = line - 1 if klass == "String" else line
        got = sites.get((klass, f"{ALLOCS_RB}:{walk_line}"))
        own = rsites.get(f"{klass} {ALLOCS_RB}:{line}")
        vm_total += got or 0
        check(got == want, f"crosscheck: {klass} at {marker} (line {walk_line}): {got} == {want}")
        check(own == want, f"crosscheck: ObjectSpace agrees on {klass} at line {line}: {own}")
    # every object ObjectSpace lists at a site of the workload, vmtrace
    # gives the same site: also the threads' Proc and Thread objects, which
    # no USDT probe names
    for key, own in sorted(rsites.items()):
        klass, site = key.split(" ", 1)
        if klass in ("Proc", "Thread"):
            got = sites.get((klass, site))
            check(got == own, f"crosscheck: {klass} at {site}: {got} == ObjectSpace {own}")
    # GC.stat(:total_allocated_objects) counts every slot, also hidden
    # internal objects (instruction sequences, environments of blocks) that
    # ObjectSpace cannot list
    delta = ruby["total_allocated_objects_delta"]
    listed = sum(rsites.values())
    print(f"     GC.stat delta {delta}: vmtrace's marked sites {vm_total}, ObjectSpace lists "
          f"{listed}, hidden internal objects {delta - listed}")
    check(vm_total <= listed <= delta, "crosscheck: vmtrace <= ObjectSpace <= GC.stat delta")
    got = {}
    for a in j["allocations"]:
        got[a["class"]] = got.get(a["class"], 0) + a["count"]
    check(got.get("Proc", 0) >= 2 and got.get("Thread", 0) >= 2,
          f"crosscheck: the threads' Proc and Thread objects are counted ({got.get('Proc')}, "
          f"{got.get('Thread')})")


def case_ruby_silent(vmtrace, tmp):
    """--no-frame-walk: method probes attached, but no TracePoint: Ruby never
    fires them."""
    data, _ = record_pid(vmtrace, [RUBY, ALLOCS_RB], tmp, ["--no-frame-walk"])
    j = report(vmtrace, data)
    silent = [l["count"] for l in j["lost"] if "silent" in l["what"]]
    total = j["allocations_total"]["count"]
    check(silent == [total] and total > 0,
          f"silent method probes: every allocation counted in the loss row ({silent} vs {total})")
    check(all(a["method"] == "" for a in j["allocations"]),
          "silent method probes: the method is unknown, not (top level)")
    sites = by_site(vmtrace, data)
    lines = site_lines()
    got = sites.get(("Foo", f"{ALLOCS_RB}:{lines['make_foo']}"))
    check(got == 1000, f"silent method probes: class and site still exact ({got})")


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_stopped(proc):
    for _ in range(1200):
        if proc.poll() is not None:
            raise SystemExit("workload ended before stopping itself")
        if proc_state(proc.pid) == "T":
            return
        time.sleep(0.01)
    raise SystemExit("workload did not stop itself")


def record_between_stops(vmtrace, argv, tmp, extra=(), env=None):
    """A workload that stops itself (SIGSTOP) before and after the part to
    count: attach while it is stopped, let it run to its second stop, end
    the recording there (SIGINT), let it finish. (record file, stdout)."""
    data = os.path.join(tmp, "stops.data")
    err = os.path.join(tmp, "record.err")
    target = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    wait_stopped(target)
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.pid),
                                "-o", data, *extra], stdout=subprocess.DEVNULL, stderr=ef)
    wait_attached(rec, err)
    os.kill(target.pid, signal.SIGCONT)
    # the first stop is over once the state leaves T; then wait for the second
    for _ in range(1200):
        if proc_state(target.pid) != "T":
            break
        time.sleep(0.005)
    wait_stopped(target)
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    with open(err) as ef:
        check(rc == 0, f"vmtrace record -p exits 0 at Ctrl-C ({rc}): {ef.read().strip()[-300:]}")
    os.kill(target.pid, signal.SIGCONT)
    out = target.stdout.read()
    check(target.wait(timeout=60) == 0, "workload exits 0")
    return data, out.splitlines()


def allocs_by_class(j):
    got = {}
    for a in j["allocations"]:
        got[a["class"]] = got.get(a["class"], 0) + a["count"]
    return got


def ruby_objects(vmtrace, tmp, args, extra, mode):
    data, out = record_between_stops(vmtrace, [RUBY, OBJECTS_RB, *args], tmp, extra)
    truth = json.loads(out[-1])
    n = truth["n"]
    j = report(vmtrace, data)
    got = allocs_by_class(j)
    for klass, want in truth["objectspace"].items():
        check(got.get(klass) == want, f"{mode}: {klass}: vmtrace {got.get(klass)} == ObjectSpace {want}")
    # what the workload makes by construction, per iteration (objects.rb)
    for klass, per in (("Proc", 1), ("Float", 1), ("Thread::Backtrace", 1), ("Point", 1),
                       ("Empty", 1), ("Wide", 1)):
        check(truth["objectspace"][klass] == per * n, f"{mode}: ObjectSpace sees {n} {klass}")
    check(truth["objectspace"]["Hash"] >= 5 * n, f"{mode}: literal, new, merge (2), keyword Hashes")
    bytes_ok = all(a["bytes"] == 40 * a["count"] for a in j["allocations"] if a["class"] != "Wide")
    check(bytes_ok and j["allocations_total"]["bytes"] > 0, f"{mode}: 40 bytes (one slot) per object")
    wide = sum(a["bytes"] for a in j["allocations"] if a["class"] == "Wide")
    check(wide == truth["wide_bytes"] == n * (40 + 5 * 8),
          f"{mode}: Wide (5 ivars): slot and ivar buffer, {wide} bytes == ObjectSpace.memsize_of's "
          f"{truth['wide_bytes']}")
    lost = {l["what"]: l["count"] for l in j["lost"] if "silent" not in l["what"]}
    check(sum(lost.values()) == 0, f"{mode}: nothing lost {lost}")
    return j


def case_ruby_objects(vmtrace, tmp):
    """Every class, --no-methods: vmtrace per class == ObjectSpace per class."""
    ruby_objects(vmtrace, tmp, [], ["--no-methods"], "ruby objects")


def case_ruby_objects_methods(vmtrace, tmp):
    """The same with method attribution, from the frame walk (no TracePoint)."""
    j = ruby_objects(vmtrace, tmp, [], [], "ruby objects, methods")
    in_workload = {a["class"]: a["count"] for a in j["allocations"]
                   if a["method"] == "Object#workload"}
    check(in_workload.get("Point") == 1000 and in_workload.get("Proc") == 1000,
          f"ruby objects, methods: Point and Proc in Object#workload ({in_workload.get('Point')}, "
          f"{in_workload.get('Proc')})")


def py_calls(j):
    """Calls per function name (the last part of the qualified name) in
    calls.py; rows are qualname and file:first line."""
    calls = {}
    for c in j["calls"]:
        if c["file"].rsplit(":", 1)[0] == CALLS_PY:
            name = c["name"].rsplit(".", 1)[-1]
            calls[name] = calls.get(name, 0) + c["count"]
    return calls


def workload_gc(out):
    for line in out:
        if line.startswith('{"gc"'):
            return json.loads(line)["gc"]
    raise SystemExit("the workload printed no GC line")


def real_losses(j):
    """Loss rows other than the notes on what Python's objects show and what
    a spawned Ruby made before counting began (made_before)."""
    return {l["what"]: l["count"] for l in j["lost"]
            if l["count"] and not l["what"].startswith(("bytes of ", "objects unseen", MADE_BEFORE))}


MADE_BEFORE = "made before counting began"


def made_before(j):
    """What the report says a runtime made before counting began."""
    return sum(l["count"] for l in j["lost"] if l["what"].startswith(MADE_BEFORE))


def check_python(j, gc_seen, mode, exact_gc, traced):
    check(j["runtime"] == "python", f"{mode}: runtime is python")
    check(j["has_allocations"] is True, f"{mode}: objects are watched")
    unseen = [l["count"] for l in j["lost"] if l["what"].startswith("objects unseen")]
    if traced:
        check(len(j["allocations"]) > 0 and not unseen, f"{mode}: objects counted")
    else:
        check(j["allocations"] == [] and unseen and unseen[0] > 0,
              f"{mode}: no tracemalloc in the target: no objects, and a row says why")
    calls = py_calls(j)
    for name, want in PY_CALLS.items():
        check(calls.get(name) == want, f"{mode}: calls of {name}: {calls.get(name)} == {want}")
    pauses = [(p["kind"], p["objects_collected"]) for p in j["gc"]["pause_list"]]
    want = [(g["generation"], g["collected"]) for g in gc_seen]
    check(pauses[-len(want):] == want,
          f"{mode}: each gc.collect() is one pause of its generation with what it collected")
    if exact_gc:
        check((j["gc"]["gen0"], j["gc"]["gen1"], j["gc"]["gen2"]) == (2, 1, 3),
              f"{mode}: collections per generation exact: {j['gc']['gen0']}, "
              f"{j['gc']['gen1']}, {j['gc']['gen2']}")
        check(j["gc"]["objects_collected"] == sum(g["collected"] for g in gc_seen),
              f"{mode}: objects collected equal gc.collect()'s return values")
    check(not real_losses(j), f"{mode}: nothing lost ({real_losses(j)})")


def case_python_pid(vmtrace, tmp):
    # no profiler: CPython 3.11 fires only function__return
    data, out = record_pid(vmtrace, [PYTHON, CALLS_PY], tmp)
    j = report(vmtrace, data)
    check("function__entry(silent)" in j["probes"], "python by pid: probes say entry was silent")
    check_python(j, workload_gc(out), "python by pid", True, False)


def case_python_spawn(vmtrace, tmp):
    # with a profile function: function__entry fires too
    err = []
    data, out = record_spawn(vmtrace, [PYTHON, CALLS_PY, "--profile"], tmp, stderr=err)
    check(TRACEMALLOC_NOTE in err, "python spawned: stderr says PYTHONTRACEMALLOC was set")
    j = report(vmtrace, data)
    check("function__entry" in j["probes"], "python spawned: function__entry fired")
    # interpreter start-up runs automatic collections before gc.disable()
    check_python(j, workload_gc(out), "python spawned", False, True)


def case_python_objects(vmtrace, tmp):
    """Objects per type and calls per function against the workload's own
    count, attached by pid to a process that traces memory."""
    env = dict(os.environ, PYTHONTRACEMALLOC="1")
    data, out = record_between_stops(vmtrace, [PYTHON, OBJECTS_PY], tmp, env=env)
    truth = json.loads(out[-1])
    j = report(vmtrace, data)
    got = allocs_by_class(j)
    for typ, want in truth["made"].items():
        check(got.get(typ) == want, f"python objects: {typ}: vmtrace {got.get(typ)} == made {want}")
    rows = {(a["class"], a["method"]): a for a in j["allocations"]}
    a = rows.get(("A", "workload"))
    size = truth["sizeof"]["A"]
    check(a is not None and a["count"] == truth["n"] and a["bytes"] == a["count"] * size,
          f"python objects: A in workload, sys.getsizeof(A()) = {size} bytes each: {a}")
    calls = {(c["name"], c["file"].rsplit(":", 1)[-1]): c["count"] for c in j["calls"]
             if c["file"].rsplit(":", 1)[0] == OBJECTS_PY}
    lines = {}
    with open(OBJECTS_PY) as f:
        for n, text in enumerate(f, 1):
            m = re.match(r"class (\w+):", text)
            if m:
                lines[m.group(1)] = n + 1     # its __init__ is the next line
    for name, want in truth["calls"].items():
        key = (name, str(lines[name.split(".")[0]]))
        check(calls.get(key) == want, f"python objects: calls of {name} at line {key[1]}: "
              f"{calls.get(key)} == {want}")
    fixed = {l["what"] for l in j["lost"] if l["what"].startswith("bytes of ")}
    check("bytes of str objects: fixed part only (their items unseen)" in fixed,
          "python objects: the report says str's bytes are its fixed part only")
    check(not real_losses(j), f"python objects: nothing lost ({real_losses(j)})")


def case_python_sizes(vmtrace, tmp):
    """Bytes of variable-size objects (tuple, int, bytes) as sys.getsizeof
    counts them: the fixed part and the items. The interpreter may make an
    object or two of its own in the same function (during a collection):
    those are allowed beside the N, at most 2, each under 64 bytes."""
    data, out = record_spawn(vmtrace, [PYTHON, SIZES_PY], tmp)
    truth = json.loads(next(line for line in out if line.startswith('{"n"')))
    n = truth["n"]
    j = report(vmtrace, data)
    rows = {a["class"]: a for a in j["allocations"] if a["method"] == "make"}
    for typ, size in truth["sizeof"].items():
        a = rows.get(typ, {"count": 0, "bytes": 0})
        extra = a["count"] - n
        check(0 <= extra <= 2 and n * size <= a["bytes"] <= n * size + 64 * extra,
              f"python sizes: {typ} in make: {a['count']} objects, {a['bytes']} bytes; "
              f"made {n} of sys.getsizeof {size}")
    notes = [l["what"] for l in j["lost"] if l["count"] and "fixed part only" in l["what"]]
    check(all("bytes of str objects" in w for w in notes),
          f"python sizes: only str is noted as its fixed part: {notes}")


def case_python_pauses_counted(vmtrace, tmp):
    """Collections faster than the ring drains: each pause's record may be
    lost (counted), never its count (pauses counted in BPF)."""
    data = os.path.join(tmp, "pauses.data")
    n = 300000
    r = subprocess.run([vmtrace, "record", "--runtime", "python", "-o", data, "--", PYTHON, "-c",
                        f"import gc\nfor _ in range({n}): gc.collect(0)"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"pauses: record exits 0: {r.stderr.strip()[-200:]}")
    j = report(vmtrace, data)
    gen0 = [k for k in j["gc"]["kinds"] if k["name"] == "gen0"][0]
    lost = {l["what"]: l["count"] for l in j["lost"]}
    check(gen0["collections"] >= n and gen0["pauses"] == gen0["collections"],
          f"pauses: every gen0 collection a pause ({gen0['pauses']} of {gen0['collections']})")
    check(lost.get("gc pause buffer full", 0) > 0,
          f"pauses: the ring did lose records meanwhile ({lost.get('gc pause buffer full')})")


def top_last_gc(vmtrace, argv):
    """vmtrace top on a workload of the Target kind: the gc line of its last
    view."""
    gcs = [l for l in top_views(vmtrace, argv).splitlines() if l.startswith("gc:")]
    return gcs[-1] if gcs else ""


def top_last_rows(vmtrace, argv):
    """The allocation rows of top's last view, each as its "class method" text."""
    last = top_views(vmtrace, argv).split("vmtrace top - ")[-1]
    return [m.group(1) for m in
            (re.match(r"^ *\d+ +\d+ +\d+ +\d+  (.*)$", l) for l in last.splitlines()) if m]


def top_views(vmtrace, argv):
    """vmtrace top --top 0 on a workload of the Target kind: the views after the first."""
    target = Target(argv)
    top = subprocess.Popen([vmtrace, "top", "-p", str(target.proc.pid), "-i", "0.2", "--top", "0"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in top.stdout:            # the first view: attached
        if line.startswith("vmtrace top - "):
            break
    target.step()
    target.expect("done")
    target.proc.stdin.write("bye\n")
    target.proc.stdin.close()
    rest = top.stdout.read()
    check(top.wait(timeout=60) == 0, "vmtrace top exits 0 when the target exits")
    target.proc.wait(timeout=60)
    return rest


def case_top_python(vmtrace, tmp):
    """top names CPython's three generations as record does, with their counts."""
    gc = top_last_gc(vmtrace, [PYTHON, CALLS_PY])
    want = re.compile(r"gc: 2 gen0 \([\d.]+/s\), 1 gen1 \([\d.]+/s\), 3 gen2 \([\d.]+/s\), ")
    check(bool(want.match(gc)), f"top, python: gen0 2, gen1 1, gen2 3, as record counts: {gc!r}")


def case_top_ruby(vmtrace, tmp):
    """top names Ruby's phases mark and sweep, never minor/major."""
    gc = top_last_gc(vmtrace, [RUBY, ALLOCS_RB, "--gc"])
    m = re.match(r"gc: (\d+) mark \([\d.]+/s\), (\d+) sweep \([\d.]+/s\), ", gc)
    check(bool(m) and int(m.group(1)) >= 1 and int(m.group(2)) >= 1,
          f"top, ruby: mark and sweep phases counted and named: {gc!r}")
    check("minor" not in gc and "major" not in gc, "top, ruby: no minor/major for Ruby's phases")
    rows = top_last_rows(vmtrace, [RUBY, ALLOCS_RB, "--tracepoint"])
    dups = sorted({r for r in rows if rows.count(r) > 1})
    check(rows and not dups, f"top, ruby: one row per class and method ({len(rows)} rows; twice: {dups})")
    check(any(r.split()[0] == "Foo" and r.split()[-1] == "Object#make_foo" for r in rows),
          f"top, ruby: Foo in Object#make_foo shown: {rows}")


CASES = {"python-pauses-counted": case_python_pauses_counted, "ruby-pid": case_ruby_pid, "ruby-spawn": case_ruby_spawn,
         "ruby-spawn-rubyopt": case_ruby_spawn_rubyopt,
         "ruby-spawn-no-methods": case_ruby_spawn_no_methods,
         "ruby-crosscheck": case_ruby_crosscheck, "ruby-silent": case_ruby_silent,
         "ruby-objects": case_ruby_objects, "ruby-objects-methods": case_ruby_objects_methods,
         "python-pid": case_python_pid, "python-spawn": case_python_spawn,
         "python-objects": case_python_objects, "python-sizes": case_python_sizes,
         "top-python": case_top_python,
         "top-ruby": case_top_ruby}


def run(cases, usage):
    """argv VMTRACE CASE: run one of cases in a scratch folder; the exit status."""
    if len(sys.argv) != 3 or sys.argv[2] not in cases:
        print(usage, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("skipped: needs root for BPF")
        return 77
    vmtrace = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="vmtrace-rt-") as tmp:
        cases[sys.argv[2]](vmtrace, tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run(CASES, __doc__))
