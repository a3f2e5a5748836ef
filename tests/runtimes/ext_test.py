"""Integration tests: vmtrace's Ruby extension (provider/ruby) in Debian's
stock ruby: libvmtrace inside Ruby, counting through Ruby's own hooks; and
its CPython extension (provider/python) in python3.11 (case py-lines).

Exactness is checked against ObjectSpace on workloads/objects.rb, which
makes every kind of object the stock-Ruby tests cover and counts per class
the objects its workload made (ObjectSpace.each_object, GC off). vmtrace
counts everything from arming on, so its rows are compared where their site
lies in the workload's lines (kw..workload).

Usage: ext_test.py VMTRACE CASE
Cases: ext-spawn, ext-pid, ext-stack, ext-live, ext-dormant, ext-hint, ext-fork, ext-gem, ext-serials,
ext-freed-code, ext-hold, py-hold, py-lines, py-types, py-spawn, py-freed-code.
Exit 0 pass, 1 fail, 77 skip (not root, or no extension built).
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
FORK_RB = os.path.join(HERE, "workloads", "fork_ext.rb")
PY_LINES = os.path.join(HERE, "workloads", "py_lines.py")
PY_SAMPLED = os.path.join(HERE, "workloads", "py_sampled.py")
PY_STACKS = os.path.join(HERE, "workloads", "py_stacks.py")
PY_LEAK = os.path.join(HERE, "workloads", "py_leak.py")
PY_SPAWN = os.path.join(HERE, "workloads", "py_spawn.py")
PY_TYPES = os.path.join(HERE, "workloads", "py_types.py")
PY_MANY_STACKS = os.path.join(HERE, "workloads", "py_many_stacks.py")
FREED_CODE_RB = os.path.join(HERE, "workloads", "freed_code.rb")
PY_FREED_CODE = os.path.join(HERE, "workloads", "py_freed_code.py")
LIVE_RB = os.path.join(HERE, "workloads", "live.rb")


def ext_dir(vmtrace):
    return os.path.normpath(os.path.join(os.path.dirname(vmtrace), "..", "lib", "ruby"))


def workload_lines():
    """The lines of objects.rb from `def kw` to the end of `workload`."""
    first = last = None
    with open(rt.OBJECTS_RB) as f:
        for n, text in enumerate(f, 1):
            if text.startswith("def kw"):
                first = n
            if text.startswith("CLASSES = "):
                last = n - 1
    return first, last


def in_workload(site):
    first, last = workload_lines()
    m = re.match(r"(.*):(\d+)$", site or "")
    return bool(m) and m.group(1).endswith("objects.rb") and first <= int(m.group(2)) <= last


def workload_counts(vmtrace, data):
    """class -> objects vmtrace counted at the workload's sites"""
    got = {}
    for a in report(vmtrace, data, "--by", "site")["allocations"]:
        if in_workload(a["site"]):
            got[a["class"]] = got.get(a["class"], 0) + a["count"]
    return got


def check_objects(vmtrace, data, truth, mode):
    got = workload_counts(vmtrace, data)
    n = truth["n"]
    for klass, want in truth["objectspace"].items():
        check(got.get(klass, 0) == want, f"{mode}: {klass}: vmtrace {got.get(klass, 0)} == "
              f"ObjectSpace {want}")
    check(truth["objectspace"]["Point"] == n and truth["objectspace"]["Proc"] == n,
          f"{mode}: ObjectSpace sees {n} Point and Proc")
    j = report(vmtrace, data)
    check(j["runtime"] == "vmtrace", f"{mode}: through the extension's probes ({j['runtime']})")
    in_method = {a["class"]: a["count"] for a in j["allocations"] if a["method"] == "Object#workload"}
    check(in_method.get("Point") == n and in_method.get("Wide") == n,
          f"{mode}: Point and Wide in Object#workload ({in_method.get('Point')}, "
          f"{in_method.get('Wide')})")
    wide = sum(a["bytes"] for a in report(vmtrace, data, "--by", "site")["allocations"]
               if a["class"] == "Wide" and in_workload(a["site"]))
    check(wide == truth["wide_bytes"] == n * (40 + 5 * 8),
          f"{mode}: Wide: slot and ivar buffer, {wide} bytes == ObjectSpace.memsize_of's "
          f"{truth['wide_bytes']}")
    lost = rt.real_losses(j)
    check(not lost, f"{mode}: nothing lost {lost}")
    if mode == "spawn":
        check(rt.made_before(j) > 0, f"{mode}: what Ruby made before counting began is stated "
              f"({rt.made_before(j)})")
    return j


def spawn_objects(vmtrace, tmp, extra, mode):
    data = os.path.join(tmp, "ext.data")
    r = subprocess.run([vmtrace, "record", "-o", data, "--force", *extra, "--", rt.RUBY,
                        rt.OBJECTS_RB, "--armed"], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"{mode}: record exits 0: {r.stderr.strip()[-300:]}")
    check("loading vmtrace's Ruby extension" in r.stderr,
          f"{mode}: record says it loads the extension: {r.stderr.strip()[:300]}")
    said = [l for l in r.stdout.splitlines() if l.startswith('{"objectspace"')]
    truth = json.loads(said[-1]) if said else {}
    check(bool(said), f"{mode}: the workload printed its counts")
    return data, truth


def case_spawn(vmtrace, tmp):
    """record -- ruby: the extension loaded and armed before Ruby runs."""
    data, truth = spawn_objects(vmtrace, tmp, [], "spawn")
    check_objects(vmtrace, data, truth, "spawn")


def case_stack(vmtrace, tmp):
    """--stack vm: the same counts, each under its whole Ruby stack."""
    data, truth = spawn_objects(vmtrace, tmp, ["--stack", "vm"], "stack")
    check_objects(vmtrace, data, truth, "stack")
    # objects.rb's workload, called from the top level, makes 5 objects an
    # iteration through Class#new (Array.new, Hash.new, Point, Empty, Wide)
    # and one through Kernel#proc; C methods are frames of their own. Ruby
    # also makes a hidden call cache or two the first time a call runs,
    # under the same stacks: at most 3 more.
    rows = {a["stack"]: a["count"] for a in report(vmtrace, data, "--by", "stack")["allocations"]}
    n = truth["n"]
    new = sum(c for st, c in rows.items() if st.endswith("<main>;Object#workload;Class#new"))
    procs = sum(c for st, c in rows.items() if st.endswith("<main>;Object#workload;Kernel#proc"))
    check(0 <= new - 5 * n <= 3 and 0 <= procs - n <= 3,
          f"stack: through Object#workload's Class#new {new} == {5 * n}, Kernel#proc {procs} == {n}")


def case_freed_code(vmtrace, tmp):
    """Methods made, run and removed one after another (freed_code.rb):
    the tables are keyed by the addresses of Ruby's code, which a freed
    method gives back, so what they name is kept alive. Each method's
    Marker objects under its own name, by method and by stack."""
    data = os.path.join(tmp, "freed.data")
    for extra in ([], ["--stack", "vm"]):
        mode = " ".join(extra) or "methods"
        r = subprocess.run([vmtrace, "record", "-o", data, "--force", *extra, "--", rt.RUBY,
                            FREED_CODE_RB, "300"], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0 and "done 300 3" in r.stdout, f"{mode}: record exits 0: {r.stderr[-300:]}")
        got = {}
        if extra:
            # folded: ...;Gen.make_N;Class#new;Marker COUNT
            folded = subprocess.run([vmtrace, "report", data, "--format", "folded"], capture_output=True,
                                    text=True, timeout=60).stdout
            for line in folded.splitlines():
                frames, count = line.rsplit(" ", 1)
                frames = frames.split(";")
                if frames[-1] == "Marker":
                    got[frames[-3]] = got.get(frames[-3], 0) + int(count)
        else:
            for a in report(vmtrace, data)["allocations"]:
                if a["class"] == "Marker":
                    got[a["method"]] = got.get(a["method"], 0) + a["count"]
        wrong = {m: c for m, c in got.items() if c != 3}
        check(len(got) == 300 and not wrong,
              f"{mode}: 300 methods with 3 Markers each: {len(got)} methods, wrong {list(wrong.items())[:4]}")


def case_pid(vmtrace, tmp):
    """record -p of a Ruby that loaded the extension itself: armed on
    attach, disarmed when the recording ends (its hooks go off)."""
    data = os.path.join(tmp, "pid.data")
    err = os.path.join(tmp, "rec.err")
    env = dict(os.environ, RUBYOPT=f"-I{ext_dir(vmtrace)} -rvmtrace")
    target = subprocess.Popen([rt.RUBY, rt.OBJECTS_RB, "--armed", "--wait-detach"],
                              stdout=subprocess.PIPE, text=True, env=env)
    time.sleep(0.3)
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.pid), "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    truth = json.loads(target.stdout.readline())
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    check(rc == 0, f"pid: record exits 0 at Ctrl-C ({rc}): {open(err).read().strip()[-300:]}")
    after = json.loads(target.stdout.readline())
    check(target.wait(timeout=60) == 0, "pid: the workload exits 0")
    check(after["hooks_after_detach"] == [],
          f"pid: Ruby's hooks off once the recording ended: {after['hooks_after_detach']}")
    check_objects(vmtrace, data, truth, "pid")


def case_live(vmtrace, tmp):
    """--live: frees counted too (FREEOBJ), the live heap by (class, method,
    site), on both of the extension's paths: the words its slots keep
    (--live alone) and the addresses (--live --stack vm). workloads/live.rb
    makes its counts by construction: 2000 Kept held, 2000 Gone and 500 Late
    freed (every free a temporary under --temp 3600), each Late born with
    its ivars in its slot (40 bytes) and grown to a buffer before its free,
    so the live heap gives back the bytes its allocation counted and the
    free counts the bytes it held."""
    got = {}
    for opts in ([], ["--stack", "vm"]):
        name = " ".join(opts) or "words"
        data = os.path.join(tmp, "live.data")
        r = subprocess.run([vmtrace, "record", "--live", "--temp", "3600", *opts, "-o", data, "--force",
                            "--", rt.RUBY, LIVE_RB], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"live ({name}): record exits 0: {r.stderr.strip()[-300:]}")
        j = report(vmtrace, data)
        rows = {(row["class"], row["site"].rsplit("/", 1)[-1]): (row["objects"], row["bytes"], row["temp_count"],
                                                               row["temp_bytes"])
                for row in j["live"]["rows"] if row["class"] in ("Kept", "Gone", "Late")}
        frees = {f["class"]: (f["count"], f["bytes"]) for f in j["frees"] if f["class"] in ("Kept", "Gone", "Late")}
        check(rows.get(("Kept", "live.rb:13")) == (2000, 80000, 0, 0),
              f"live ({name}): 2000 Kept held, 80000 bytes: {rows.get(('Kept', 'live.rb:13'))}")
        # a full collection frees them all (the test runs no other thread
        # whose stack could hold one)
        check(rows.get(("Gone", "live.rb:13")) == (0, 0, 2000, 80000),
              f"live ({name}): every Gone freed, a temporary: {rows.get(('Gone', 'live.rb:13'))}")
        check(rows.get(("Late", "live.rb:14")) == (0, 0, 500, 20000),
              f"live ({name}): every Late freed, its 40 bytes at birth given back: {rows.get(('Late', 'live.rb:14'))}")
        late = frees.get("Late", (0, 0))
        check(late[0] == 500 and late[1] > 20000, f"live ({name}): 500 Late frees, with their grown buffers: {late}")
        check(j["lost_total"] - rt.made_before(j) == 0, f"live ({name}): nothing lost ({j['lost_total']})")
        got[name] = (rows, frees)
    check(got.get("words") == got.get("--stack vm"), f"live: both paths count the same: {got}")


def case_dormant(vmtrace, tmp):
    """Loaded and untraced: no hook on, and nothing counted."""
    env = dict(os.environ, RUBYOPT=f"-I{ext_dir(vmtrace)} -rvmtrace")
    r = subprocess.run([rt.RUBY, "-e", "p [Vmtrace.armed?, Vmtrace.hooks, Vmtrace::RUBY_BUILT_FOR, "
                        "Vmtrace.armed_at_allocations]"], capture_output=True, text=True, env=env,
                       timeout=60)
    check(r.returncode == 0 and r.stdout.strip() == '[false, [], "3.1", nil]',
          f"dormant: no hook on, never armed: {r.stdout.strip()} {r.stderr.strip()[-200:]}")


HOLD_RB = ("class Held; end; 5000.times { Held.new }; "
           "puts [ENV['VMTRACE_HOLD_FD'].inspect, Dir.children('/proc/self/fd').sort.join(',')].join(' '); "
           # the environment Ruby was exec'd with: whether it was started held
           "puts File.read('/proc/self/environ').split(\"\\0\").any? { |e| e.start_with?('VMTRACE_HOLD_FD=') }")


def case_hold(vmtrace, tmp):
    """record -- ruby starts Ruby before the probes are attached and holds it
    in the extension's loading (VMTRACE_HOLD_FD): every object the program
    makes is counted, and the program sees neither the variable nor the
    pipe. A hold whose writer is gone ends Ruby before the program runs."""
    env = dict(os.environ, RUBYOPT=f"-I{ext_dir(vmtrace)} -rvmtrace")
    alone = subprocess.run([rt.RUBY, "-e", HOLD_RB], capture_output=True, text=True, env=env,
                           timeout=60)
    check(alone.returncode == 0, f"hold: the program alone: {alone.stderr[-300:]}")
    data = os.path.join(tmp, "hold.data")
    r = subprocess.run([vmtrace, "record", "-o", data, "--", rt.RUBY, "-e", HOLD_RB],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"hold: record exits 0: {r.stderr[-300:]}")
    said, alone_said = r.stdout.splitlines(), alone.stdout.splitlines()
    check(len(said) >= 2 and said[1] == "true" and alone_said[1] == "false",
          f"hold: Ruby was exec'd with VMTRACE_HOLD_FD (started before the attach): {said[1:2]}")
    check(said[0] == alone_said[0],
          f"hold: the program's variables and descriptors as without vmtrace: "
          f"{said[0]!r} == {alone_said[0]!r}")
    held = sum(a["count"] for a in report(vmtrace, data)["allocations"] if a["class"] == "Held")
    check(held == 5000, f"hold: Held objects counted {held} == 5000")
    for byte, want_rc in ((b"", 127), (b"u", 0)):
        rd, wr = os.pipe()
        os.write(wr, byte)
        os.close(wr)
        r = subprocess.run([rt.RUBY, "-e", "puts :ran"], capture_output=True, text=True, timeout=60,
                           env=dict(env, VMTRACE_HOLD_FD=str(rd)), pass_fds=(rd,))
        os.close(rd)
        ran = r.stdout.strip() == "ran"
        check(r.returncode == want_rc and ran == (want_rc == 0) and
              (want_rc == 0 or "ended before it attached" in r.stderr),
              f"hold released with {byte!r}: exit {r.returncode} == {want_rc}, ran {ran}: "
              f"{r.stderr.strip()[-200:]}")


PY_HOLD = ("import os, subprocess\n"
           "child = subprocess.run(['sh', '-c', 'echo ${VMTRACE_HOLD_FD-unset}'], capture_output=True,"
           " text=True).stdout.strip()\n"
           "print(os.environ.get('VMTRACE_HOLD_FD'), child, ','.join(sorted(os.listdir('/proc/self/fd'))))\n")


def case_py_hold(vmtrace, tmp):
    """record -- python3.11 starts CPython before the probes are attached
    and holds it in the extension's import: the program, and a command it
    runs, see neither VMTRACE_HOLD_FD nor the pipe (py-spawn checks that
    its objects are counted exactly)."""
    alone = subprocess.run([rt.PYTHON, "-c", PY_HOLD], capture_output=True, text=True, timeout=60)
    check(alone.returncode == 0 and alone.stdout.startswith("None unset "),
          f"py hold: the program alone: {alone.stdout.strip()} {alone.stderr[-300:]}")
    r = subprocess.run([vmtrace, "record", "-o", os.path.join(tmp, "pyhold.data"), "--", rt.PYTHON, "-c",
                        PY_HOLD], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "loading vmtrace's CPython extension" in r.stderr,
          f"py hold: record exits 0 and loads the extension: {r.stderr[-300:]}")
    check(r.stdout.splitlines()[0] == alone.stdout.strip(),
          f"py hold: variables and descriptors as without vmtrace: "
          f"{r.stdout.splitlines()[0]!r} == {alone.stdout.strip()!r}")


def case_hint(vmtrace, tmp):
    """record -p of a Ruby without the extension, blocked in a read (no
    Ruby code runs to load it): Ruby's own probes, and a line saying why
    and how to get the in-process path."""
    target = rt.Target([rt.RUBY, rt.ALLOCS_RB])
    err = os.path.join(tmp, "hint.err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.proc.pid), "-o",
                                os.path.join(tmp, "hint.data")], stdout=subprocess.DEVNULL,
                               stderr=ef)
    rt.wait_attached(rec, err)
    target.step()
    target.expect("done")
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=60)
    target.step()
    target.proc.wait(timeout=60)
    said = open(err).read()
    check("-rvmtrace" in said and "ruby probes" in said and "not loaded into it" in said,
          f"hint: Ruby's own probes, and how to load the extension: {said.strip()[:400]}")


def case_fork(vmtrace, tmp):
    """A forked child (a Unicorn worker) counts its own objects: record -p
    of the child sees exactly what the child made after the fork."""
    env = dict(os.environ, RUBYOPT=f"-I{ext_dir(vmtrace)} -rvmtrace")
    parent = subprocess.Popen([rt.RUBY, FORK_RB], stdout=subprocess.PIPE, text=True, env=env)
    child = int(parent.stdout.readline().split()[1])
    data = os.path.join(tmp, "fork.data")
    err = os.path.join(tmp, "fork.err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(child), "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    line = parent.stdout.readline().split()
    rc = rec.wait(timeout=60)
    parent.wait(timeout=60)
    check(rc == 0, f"fork: record of the child exits 0: {open(err).read().strip()[-300:]}")
    check(line and line[0] == "made", f"fork: the child made its objects: {line}")
    j = report(vmtrace, data)
    got = {a["class"]: a["count"] for a in j["allocations"] if a["class"] == "Worked"}
    check(got.get("Worked") == int(line[1]), f"fork: the child's Worked objects, {got} == "
          f"{line[1]}")


def case_gem(vmtrace, tmp):
    """The gem: built offline (provider/ruby/gem/build-gem.sh), installed
    with `gem install --local` (compiled there by its extconf.rb), required
    by a Ruby that knows nothing else of vmtrace, and traced by pid."""
    build = os.path.dirname(os.path.dirname(vmtrace))
    script = os.path.join(HERE, "..", "..", "provider", "ruby", "gem", "build-gem.sh")
    r = subprocess.run([script, os.path.join(build, "generated"), tmp], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0, f"gem: gem build offline: {r.stderr.strip()[-300:]}")
    home = os.path.join(tmp, "gems")
    r = subprocess.run(["gem", "install", "--local", "--no-document", "--install-dir", home,
                        os.path.join(tmp, "vmtrace.gem")], capture_output=True, text=True,
                       timeout=300)
    check(r.returncode == 0, f"gem: gem install --local compiles it: {r.stderr.strip()[-300:]}")
    env = dict(os.environ, GEM_HOME=home, GEM_PATH=home)
    env.pop("RUBYOPT", None)
    prog = ('require "vmtrace"; class Gemmed; end; puts $LOADED_FEATURES.grep(/vmtrace_ext/)[0]; '
            '$stdout.flush; sleep 0.001 until Vmtrace.armed?; 3000.times { Gemmed.new }; '
            'puts "made"; $stdout.flush; sleep 0.01 while Vmtrace.armed?')
    target = subprocess.Popen([rt.RUBY, "-e", prog], stdout=subprocess.PIPE, text=True, env=env)
    so = target.stdout.readline().strip()
    check(so.startswith(home), f"gem: the gem's extension is loaded: {so}")
    data = os.path.join(tmp, "gem.data")
    err = os.path.join(tmp, "gem.err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.pid), "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    made = target.stdout.readline().strip()
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    target.wait(timeout=60)
    check(rc == 0 and made == "made", f"gem: recorded by pid ({rc}, {made}): "
          f"{open(err).read().strip()[-300:]}")
    j = report(vmtrace, data)
    got = sum(a["count"] for a in j["allocations"] if a["class"] == "Gemmed")
    check(j["runtime"] == "vmtrace" and got == 3000,
          f"gem: through the gem's probes ({j['runtime']}), 3000 Gemmed == {got}")


def case_serials(vmtrace, tmp):
    """Ruby's global serials as cache resets: a constant defined resets
    every constant cache, a class made bumps the class serial; each seen
    at the extension's next look (every 2 ms), so 20 changes 10 ms apart are
    at least 15 events each. By pid, after Ruby's start (whose own
    constants and classes, RubyGems', a spawned Ruby's recording sees)."""
    prog = ("STDOUT.sync = true; puts :ready; STDIN.gets\n"
            "20.times { |i| Object.const_set(:\"K#{i}\", i); Class.new; sleep 0.01 }\n"
            "puts :done; STDIN.gets\n")
    data, errpath = os.path.join(tmp, "serials.data"), os.path.join(tmp, "serials.err")
    target = subprocess.Popen([rt.RUBY, "-I", ext_dir(vmtrace), "-rvmtrace", "-e", prog],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(target.stdout.readline().strip() == "ready", "serials: the program loaded vmtrace")
    with open(errpath, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "--events", "cache", "-o", data, "--force", "-p",
                                str(target.pid)], stdout=subprocess.DEVNULL, stderr=ef)
    rt.wait_attached(rec, errpath)
    time.sleep(0.1)  # the extension's watcher sees the gates within 2 ms
    target.stdin.write("go\n")
    target.stdin.flush()
    check(target.stdout.readline().strip() == "done", "serials: the program ran")
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=60)
    target.stdin.write("end\n")
    target.stdin.close()
    target.wait(timeout=30)
    check(rec.returncode == 0, f"serials: record exits 0: {open(errpath).read().strip()[-300:]}")
    j = report(vmtrace, data)
    consts = sum(c["count"] for c in j["constant_cache_resets"] if c["name"] == "(every constant cache)")
    serials = sum(c["count"] for c in j["global_serial_incs"] if c["reason"].startswith("class serial"))
    check(15 <= consts <= 21, f"serials: constant cache resets {consts} of 20 constants")
    check(15 <= serials <= 41, f"serials: class serial increments {serials} for 20 classes")


def case_py_lines(vmtrace, tmp):
    """vmtrace's CPython extension (provider/python), imported by the
    program and traced by pid: the bytes and allocations at a line equal
    what tracemalloc's snapshot holds there (every object of the line kept,
    tracemalloc started after arming, so both see the same allocations)."""
    pydir = os.path.normpath(os.path.join(os.path.dirname(vmtrace), "..", "lib", "python"))
    env = dict(os.environ, PYTHONPATH=pydir)
    target = subprocess.Popen([rt.PYTHON, PY_LINES], stdout=subprocess.PIPE, text=True, env=env)
    check(target.stdout.readline().strip() == "ready", "py: the workload imported vmtrace")
    data = os.path.join(tmp, "py.data")
    err = os.path.join(tmp, "py.err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.pid), "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    truth = json.loads(target.stdout.readline())
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    check(rc == 0, f"py: record exits 0: {open(err).read().strip()[-300:]}")
    check(target.wait(timeout=60) == 0, "py: the workload ends once the tracer left")
    j = report(vmtrace, data, "--by", "site")
    site = f"{truth['file']}:{truth['line']}"
    rows = [a for a in j["allocations"] if a["site"] == site]
    got_bytes = sum(a["bytes"] for a in rows)
    got_count = sum(a["count"] for a in rows)
    check(j["runtime"] == "vmtrace" and truth["count"] == 2000,
          f"py: through the extension ({j['runtime']}); tracemalloc holds {truth['count']} objects")
    check(got_bytes == truth["bytes"] and got_count == truth["count"],
          f"py: {site}: vmtrace {got_count} allocations, {got_bytes} bytes == tracemalloc's "
          f"{truth['count']}, {truth['bytes']}")
    check(all(a["class"] == "bytes" and a["method"] == "make" for a in rows),
          f"py: in make, bytes objects (their type read from each one's header): {rows}")
    check(truth["meta_calls"] == 0,
          f"py: taking the types alive ran no metaclass's own __subclasses__ ({truth['meta_calls']} calls)")


def check_types(vmtrace, data, truth, where, label):
    """py_types.py's Alpha and Beta each at its line of where (the
    script's path as the traced Python saw it) under its own class and
    function, with the counts and sizes the collector gave (truth)."""
    with open(PY_TYPES) as f:
        text = f.read().splitlines()
    allocations = report(vmtrace, data, "--by", "site")["allocations"]
    for klass, method, marker in (("Alpha", "make_alpha", "ALPHA_LINE"), ("Beta", "make_beta", "BETA_LINE")):
        line = next(i for i, l in enumerate(text, 1) if marker in l)
        rows = [a for a in allocations if a["site"] == f"{where}:{line}"]
        typed = [a for a in rows if a["class"] == klass]
        count, size = truth[klass]
        got = (sum(a["count"] for a in typed), sum(a["bytes"] for a in typed))
        check(got == (count, count * size) and count == {"Alpha": 1000, "Beta": 300}[klass],
              f"{label} types: {klass} at its line: {got} == the collector's {count} of {size} bytes")
        check(all(a["method"] == method for a in typed), f"{label} types: {klass} in {method}: {typed}")
        # (the first run of a line may make a few other objects: names, ints)
        check(not [a for a in rows if a["class"].startswith("(")],
              f"{label} types: no untyped block at {klass}'s line: {rows}")


def case_py_types(vmtrace, tmp):
    """record -- python3.11: each object under its type, read from its
    header at the thread's next allocation (3.11 has no reference tracer):
    py_types.py's Alpha and Beta at their lines, in their functions, as many
    as the collector finds, with their sizes."""
    data = os.path.join(tmp, "types.data")
    r = subprocess.run([vmtrace, "record", "-o", data, "--force", "--", rt.PYTHON, PY_TYPES],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"py types: record exits 0: {r.stderr.strip()[-300:]}")
    said = [l for l in r.stdout.splitlines() if l.startswith('{"Alpha"')]
    check(bool(said), f"py types: the workload printed its counts: {r.stdout[-300:]}")
    check_types(vmtrace, data, json.loads(said[-1]), PY_TYPES, "3.11")


def case_py_spawn(vmtrace, tmp):
    """record -- python3.11, by default: the extension imported before the
    program (a sitecustomize on PYTHONPATH), and said so; a kept line's
    bytes equal tracemalloc's snapshot there."""
    data = os.path.join(tmp, "pys.data")
    r = subprocess.run([vmtrace, "record", "-o", data, "--force", "--",
                        rt.PYTHON, PY_SPAWN], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"py spawn: record exits 0: {r.stderr.strip()[-300:]}")
    check("loading vmtrace's CPython extension" in r.stderr,
          f"py spawn: record says it loads the extension: {r.stderr.strip()[:300]}")
    said = [l for l in r.stdout.splitlines() if l.startswith('{"file"')]
    truth = json.loads(said[-1]) if said else {"file": "", "line": 0, "bytes": -1, "count": -1}
    site = f"{truth['file']}:{truth['line']}"
    rows = [a for a in report(vmtrace, data, "--by", "site")["allocations"] if a["site"] == site]
    got = (sum(a["count"] for a in rows), sum(a["bytes"] for a in rows))
    check(truth["count"] == 2000 and got == (truth["count"], truth["bytes"]),
          f"py spawn: {site}: vmtrace {got} == tracemalloc's {(truth['count'], truth['bytes'])}")


def py_line_rows(vmtrace, data, path, marker):
    """The report's rows at the line of path that holds marker."""
    with open(path) as f:
        line = next(i for i, l in enumerate(f, 1) if marker in l)
    site = f"{path}:{line}"
    return [a for a in report(vmtrace, data, "--by", "site")["allocations"] if a["site"] == site]


def case_py_freed_code(vmtrace, tmp):
    """Functions compiled, run and dropped one after another
    (py_freed_code.py): the sites are keyed by the code object's address,
    so the extension holds each code object it names. Each function's
    allocations under its own name, all 300 with the same count."""
    data = os.path.join(tmp, "freed.data")
    r = subprocess.run([vmtrace, "record", "-o", data, "--force", "--", rt.PYTHON, PY_FREED_CODE, "300"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "done 300" in r.stdout, f"record exits 0: {r.stderr[-300:]}")
    got = {}
    for a in report(vmtrace, data)["allocations"]:
        if (a.get("method") or "").startswith("make_"):
            got[a["method"]] = got.get(a["method"], 0) + a["count"]
    counts = sorted(set(got.values()))
    check(len(got) == 300 and len(counts) == 1,
          f"300 functions, each with the same count: {len(got)} functions, counts {counts[:6]}")


def case_py_sampled(vmtrace, tmp):
    """--sample with the CPython extension: the countdown by bytes in the
    process (docs/sampling.md). Exact, each line's bytes are what the
    workload's construction says; sampled at 64 KiB, each within 5%."""
    runs = {}
    for mode, extra in (("exact", []), ("sampled", ["--sample", "64K"])):
        data = os.path.join(tmp, f"{mode}.data")
        r = subprocess.run([vmtrace, "record", "--runtime", "vmtrace", *extra, "-o", data, "--force",
                            "--", rt.PYTHON, PY_SAMPLED], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"{mode}: record exits 0: {r.stderr.strip()[-300:]}")
        runs[mode] = data
    for marker, count, size in (("SMALL_LINE", 3_000_000, 133), ("BIG_LINE", 100_000, 10033)):
        exact = py_line_rows(vmtrace, runs["exact"], PY_SAMPLED, marker)
        got = (sum(a["count"] for a in exact), sum(a["bytes"] for a in exact))
        check(got == (count, count * size), f"exact: {marker}: {got} == {(count, count * size)}")
        est = py_line_rows(vmtrace, runs["sampled"], PY_SAMPLED, marker)
        n, b = sum(a["count"] for a in est), sum(a["bytes"] for a in est)
        samples = sum(a["samples"] for a in est)
        check(abs(n - count) <= 0.05 * count and abs(b - count * size) <= 0.05 * count * size,
              f"sampled: {marker}: {n} objects, {b} bytes within 5% of {count}, {count * size} "
              f"({samples} samples)")


def case_py_stacks(vmtrace, tmp):
    """--stack vm with the CPython extension: each call path of
    py_stacks.py with the objects its construction says. Each leaf() call
    makes 200 bytes objects, and a range and its iterator for its loop
    (the small ints it counts with are CPython's cached ones): 202."""
    data = os.path.join(tmp, "stacks.data")
    r = subprocess.run([vmtrace, "record", "--runtime", "vmtrace", "--stack", "vm", "-o", data,
                        "--force", "--", rt.PYTHON, PY_STACKS], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"stacks: record exits 0: {r.stderr.strip()[-300:]}")
    j = report(vmtrace, data, "--by", "stack")
    got = {a["stack"]: a["count"] for a in j["allocations"]}
    want = {"<module>;top;mid;leaf": 202, "<module>;top;leaf": 202, "<module>;other;mid;leaf": 404}
    for stack, n in want.items():
        check(got.get(stack) == n, f"stacks: {stack}: {got.get(stack)} == {n}")
    check(not [k for k in got if k.endswith(";leaf") and k not in want],
          f"stacks: no other path to leaf: {[k for k in got if k.endswith(';leaf')]}")
    check(j["lost_total"] - rt.made_before(j) == 0, f"stacks: nothing lost ({j['lost_total']})")


def case_py_many_stacks(vmtrace, tmp):
    """--stack vm over more stacks than one thread's table of sent stacks
    once held (16384) and the BPF map once took: py_many_stacks.py's 30000
    paths, each with its own four objects, and no stack lost."""
    data = os.path.join(tmp, "many.data")
    r = subprocess.run([vmtrace, "record", "--runtime", "vmtrace", "--stack", "vm", "-o", data,
                        "--force", "--", rt.PYTHON, PY_MANY_STACKS], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"many stacks: record exits 0: {r.stderr.strip()[-300:]}")
    j = report(vmtrace, data, "--by", "stack")
    paths = {}
    for a in j["allocations"]:
        if a["stack"].startswith("<module>;run;f_"):
            paths[a["stack"]] = paths.get(a["stack"], 0) + a["count"]
    check(len(paths) == 30000 and set(paths.values()) == {4},
          f"many stacks: 30000 paths of 4 objects each: {len(paths)} paths, counts {sorted(set(paths.values()))[:5]}")
    check(j["lost_total"] - rt.made_before(j) == 0, f"many stacks: nothing lost ({j['lost_total']})")


def case_py_live(vmtrace, tmp):
    """--live with the CPython extension, by pid: after a deliberate leak
    the leaking line holds its 1000 bytes(1000) (1033 bytes each), the line
    whose 5000 objects were freed at once holds none, all temporaries;
    the frees carry the sizes their blocks were allocated with."""
    pydir = os.path.normpath(os.path.join(os.path.dirname(vmtrace), "..", "lib", "python"))
    proc = subprocess.Popen([rt.PYTHON, PY_LEAK], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=pydir))
    check(proc.stdout.readline().strip() == "ready", "live: the workload imported vmtrace")
    data = os.path.join(tmp, "live.data")
    err = os.path.join(tmp, "live.err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(proc.pid), "--live", "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    check(proc.stdout.readline().strip() == "done", "live: the workload leaked")
    rec.send_signal(signal.SIGINT)
    check(rec.wait(timeout=60) == 0, f"live: record exits 0: {open(err).read().strip()[-300:]}")
    proc.stdin.write("bye\n")
    proc.stdin.close()
    check(proc.wait(timeout=60) == 0, "live: the workload exits 0")
    j = report(vmtrace, data, "--by", "site")
    rows = {r["site"]: r for r in j["live"]["rows"]}
    with open(PY_LEAK) as f:
        text = f.read().splitlines()
    lines = {m: next(i for i, l in enumerate(text, 1) if m in l) for m in ("LEAK_LINE", "TEMP_LINE")}
    leak = rows.get(f"{PY_LEAK}:{lines['LEAK_LINE']}", {})
    temp = rows.get(f"{PY_LEAK}:{lines['TEMP_LINE']}", {})
    check((leak.get("count"), leak.get("bytes")) == (1000, 1033000),
          f"live: the leaking line holds 1000 objects, 1033000 bytes: {leak}")
    check(temp.get("count", 0) == 0 and temp.get("temp_count") == 5000,
          f"live: the freed line holds nothing, 5000 temporaries: {temp}")
    frees = [f for f in j["frees"] if f["class"] == "(object memory)"]
    check(frees and frees[0]["count"] >= 5000 and frees[0]["bytes"] >= 5000 * 1033,
          f"live: frees with their sizes: {frees}")
    check(j["lost_total"] - rt.made_before(j) == 0, f"live: nothing lost ({j['lost_total']})")


CASES = {"ext-spawn": case_spawn, "py-lines": case_py_lines, "py-types": case_py_types, "py-freed-code": case_py_freed_code, "py-spawn": case_py_spawn, "py-live": case_py_live,
         "py-sampled": case_py_sampled, "py-stacks": case_py_stacks,
         "py-many-stacks": case_py_many_stacks, "ext-gem": case_gem, "ext-serials": case_serials, "ext-freed-code": case_freed_code, "ext-pid": case_pid, "ext-stack": case_stack,
         "ext-live": case_live, "ext-dormant": case_dormant, "ext-hint": case_hint,
         "ext-fork": case_fork,
         "ext-hold": case_hold, "py-hold": case_py_hold}

if __name__ == "__main__":
    vm = sys.argv[1] if len(sys.argv) > 1 else ""
    if vm and not os.path.exists(os.path.join(ext_dir(os.path.abspath(vm)), "vmtrace_ext.so")):
        print("SKIP: no Ruby extension built beside vmtrace")
        sys.exit(77)
    sys.exit(rt.run(CASES, __doc__))
