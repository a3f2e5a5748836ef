#!/usr/bin/python3.11
"""The version matrix: vmtrace on the runtimes of other Debian releases,
each in a root made by scripts/matrix/roots.sh and entered as a container
(its own mount and pid namespaces), traced from the host.

  RUBY-gem     (ruby3.1: Debian 12's, in a bookworm root; ruby3.3: Debian
               13's; ruby3.4: experimental's, in a sid root) the gem built
               here installs offline with `gem install --local` in the
               container, compiled against that Ruby's headers, its layout
               row checked against that Ruby's MJIT header (3.1) or source
               there (VMTRACE_RUBY_SOURCE); required, it is dormant
  RUBY-pid     a Ruby in the container that required the gem (installed as
               above), recorded by its host pid: per class equal to
               ObjectSpace's counts on workloads/objects.rb, Point and Wide
               in their method, Wide's bytes its slot's
               (ObjectSpace.memsize_of); its hooks off once the recording
               ended; the report gives the host's pid
  RUBY-stack   the same with --stack vm: each object under its whole stack
  RUBY-spawn   record -- unshare ... chroot ROOT RUBY, and --stack vm --
               nsenter into a running container: the root's gem loaded in a
               Ruby that never asked for it, equal to ObjectSpace, its
               environment its own
  RUBY-unprobed  (3.3, 3.4) a Ruby that never loaded the gem (Debian's
               have no USDT probes), with no gem in its root to load into
               it (attach_test.py loads one): record -p says in one line
               how to trace it
  RUBY-live    --live by pid (workloads/live.rb): objects held and freed
  RUBY-sampled --sample 16K by pid (workloads/sampled.rb): within 5%
  RUBY-bus     Vmtrace.events from Ruby code: tests/runtimes/ruby/events_test.rb
  RUBY-rdoc    that Ruby's rdoc over uri by pid, held until armed: its rows
               and what Ruby had made when counting began add up to
               GC.stat at its exit; its collections' pauses recorded

Usage: versions_test.py VMTRACE CASE
Roots in $VMTRACE_ROOTS (default /var/cache/vmtrace/roots).
Exit 0 pass, 1 fail, 77 skip (not root, or the root not made).
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import corpus_test
import ext_test
import ruby_sampled_test
import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
ROOTS = os.environ.get("VMTRACE_ROOTS", "/var/cache/vmtrace/roots")
# runtime -> (suite, its command in the root, its gem command, the source of its layout check)
# (3.1 installs its MJIT header, which extconf.rb checks the layout against)
RUBIES = {"ruby3.1": ("bookworm", "ruby3.1", "gem3.1", None),
          "ruby3.3": ("trixie", "ruby3.3", "gem3.3", "/usr/src/ruby3.3/ruby3.3-*"),
          "ruby3.4": ("sid", "ruby3.4", "gem3.4", "/usr/src/ruby3.4/ruby3.4-*")}
INSIDE = "/tmp/vmtrace-test"  # the test's files, inside the root
WAIT_ARMED_RB = os.path.join(RUNTIMES, "workloads", "wait_armed.rb")


def root_of(runtime):
    root = os.path.join(ROOTS, RUBIES[runtime][0])
    if not os.path.exists(os.path.join(root, ".vmtrace-root")):
        print(f"skipped: no root {root} (scripts/matrix/roots.sh {RUBIES[runtime][0]})")
        sys.exit(77)
    return root


def container(root, argv, **kw):
    """argv run in root with its own mount and pid namespaces."""
    return subprocess.Popen(["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root}/proc",
                             "chroot", root, *argv], **kw)


def host_pid(outer, comm, timeout=30):
    """The host pid of the descendant of outer whose name starts with comm."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        todo = [outer.pid]
        while todo:
            p = todo.pop()
            try:
                if open(f"/proc/{p}/comm").read().startswith(comm):
                    return p
                for t in os.listdir(f"/proc/{p}/task"):
                    todo += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                continue
        time.sleep(0.05)
    raise SystemExit(f"no {comm} under pid {outer.pid}")


def wait_mapped(pid, name, timeout=30):
    """Until pid has mapped a file called name (a provider it loads)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if name in open(f"/proc/{pid}/maps").read():
            return
        time.sleep(0.05)
    raise SystemExit(f"pid {pid} never loaded {name}")


def place(root, path):
    """path copied into the root's INSIDE; its path there."""
    os.makedirs(root + INSIDE, exist_ok=True)
    shutil.copy(path, root + INSIDE)
    return os.path.join(INSIDE, os.path.basename(path))


def install_gem(vmtrace, tmp, runtime):
    root = root_of(runtime)
    build = os.path.dirname(os.path.dirname(vmtrace))
    script = os.path.join(RUNTIMES, "..", "..", "provider", "ruby", "gem", "build-gem.sh")
    r = subprocess.run([script, os.path.join(build, "generated"), tmp], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0, f"{runtime}: gem build offline: {r.stderr.strip()[-300:]}")
    gem = place(root, os.path.join(tmp, "vmtrace.gem"))
    env = []
    if RUBIES[runtime][3]:
        source = glob.glob(root + RUBIES[runtime][3])
        check(len(source) == 1, f"{runtime}: the root holds Ruby's source for the layout check: {source}")
        env = ["env", f"VMTRACE_RUBY_SOURCE={source[0][len(root):]}"] if source else []
    p = container(root, [*env, RUBIES[runtime][2], "install", "--local", "--no-document", gem],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=600)[0]
    check(p.returncode == 0, f"{runtime}: gem install --local in the container: {out.strip()[-400:]}")
    return root


def case_gem(vmtrace, tmp, runtime):
    root = install_gem(vmtrace, tmp, runtime)
    p = container(root, [RUBIES[runtime][1], "-e", 'require "vmtrace"; puts Vmtrace.armed?.inspect; '
                         'puts $LOADED_FEATURES.grep(/vmtrace_ext/)[0]'],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=60)[0].split("\n")
    check(p.returncode == 0 and out[0] == "false" and "/gems/" in out[1],
          f"{runtime}: required in the container, dormant: {out}")


def record_objects(vmtrace, tmp, runtime, extra=()):
    """workloads/objects.rb in runtime's container, with the gem, recorded
    by its host pid until it printed its counts; (data, its counts, pid)."""
    root = install_gem(vmtrace, tmp, runtime)
    workload = place(root, rt.OBJECTS_RB)
    data = os.path.join(tmp, "pid.data")
    err = os.path.join(tmp, "rec.err")
    outer = container(root, ["env", "RUBYOPT=-rvmtrace", RUBIES[runtime][1], workload, "--armed",
                             "--wait-detach"], stdout=subprocess.PIPE, text=True)
    pid = host_pid(outer, "ruby")
    wait_mapped(pid, "vmtrace_ext.so")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "-o", data, *extra],
                               stdout=subprocess.DEVNULL, stderr=ef)
    line = outer.stdout.readline()
    if not line:
        rec.kill()
        raise SystemExit(f"{runtime}: the workload printed nothing: {open(err).read().strip()}")
    truth = json.loads(line)
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    check(rc == 0, f"{runtime} pid: record exits 0 at Ctrl-C ({rc}): {open(err).read().strip()[-300:]}")
    after = json.loads(outer.stdout.readline())
    check(outer.wait(timeout=60) == 0, f"{runtime} pid: the workload exits 0")
    check(after["hooks_after_detach"] == [],
          f"{runtime} pid: Ruby's hooks off once the recording ended: {after['hooks_after_detach']}")
    return data, truth, pid


def case_pid(vmtrace, tmp, runtime):
    data, truth, pid = record_objects(vmtrace, tmp, runtime)
    j = ext_test.check_objects(vmtrace, data, truth, f"{runtime} pid")
    check(j["pid"] == pid, f"{runtime} pid: the report gives the host's pid {pid}: {j['pid']}")


def case_stack(vmtrace, tmp, runtime):
    """--stack vm: the same counts, each under its whole Ruby stack: the
    workload makes 5 objects an iteration through a C method new (Class#new,
    or Hash.new, a method of Hash's own from 3.3) and one through
    Kernel#proc, plus at most 3 hidden call caches the first time a call
    runs."""
    data, truth, _ = record_objects(vmtrace, tmp, runtime, ["--stack", "vm"])
    ext_test.check_objects(vmtrace, data, truth, f"{runtime} stack")
    rows = {a["stack"]: a["count"] for a in report(vmtrace, data, "--by", "stack")["allocations"]}
    n = truth["n"]
    news = ("<main>;Object#workload;Class#new", "<main>;Object#workload;Hash.new",
            "<main>;Object#workload;Array.new")
    new = sum(c for st, c in rows.items() if st.endswith(news))
    procs = sum(c for st, c in rows.items() if st.endswith("<main>;Object#workload;Kernel#proc"))
    check(0 <= new - 5 * n <= 3 and 0 <= procs - n <= 3,
          f"{runtime} stack: through Object#workload's new {new} == {5 * n}, Kernel#proc {procs} == {n}")
    check(not any("#<Class:0x" in st for st in rows),
          f"{runtime} stack: singleton methods named by their class: "
          f"{[st for st in rows if '#<Class:0x' in st][:3]}")


def start_in(root, runtime, argv):
    """A Ruby of runtime with the gem loaded in its container, pipes to its
    stdin and stdout: (the container's process, the Ruby's host pid)."""
    outer = container(root, ["env", "RUBYOPT=-rvmtrace", RUBIES[runtime][1], *argv],
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = host_pid(outer, "ruby")
    wait_mapped(pid, "vmtrace_ext.so")
    return outer, pid


def stop_recording(rec, err, mode):
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    check(rc == 0, f"{mode}: record exits 0 at Ctrl-C ({rc}): {open(err).read().strip()[-300:]}")


def case_live(vmtrace, tmp, runtime):
    """--live by pid on workloads/live.rb: 2000 Kept held, their bytes as
    ObjectSpace.memsize_of says; every Gone and Late freed, temporaries."""
    root = install_gem(vmtrace, tmp, runtime)
    outer, pid = start_in(root, runtime, [place(root, ext_test.LIVE_RB), "--armed"])
    data, err = os.path.join(tmp, "live.data"), os.path.join(tmp, "rec.err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "--live", "--temp", "3600", "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    born = json.loads(outer.stdout.readline())
    stop_recording(rec, err, f"{runtime} live")
    outer.communicate("end\n", timeout=60)
    j = report(vmtrace, data)
    rows = {(row["class"], row["site"].rsplit("/", 1)[-1]): (row["objects"], row["bytes"], row["temp_count"])
            for row in j["live"]["rows"] if row["class"] in ("Kept", "Gone", "Late")}
    check(rows.get(("Kept", "live.rb:13")) == (2000, 2000 * born["Kept"], 0),
          f"{runtime} live: 2000 Kept held, {2000 * born['Kept']} bytes: {rows.get(('Kept', 'live.rb:13'))}")
    check(rows.get(("Gone", "live.rb:13")) == (0, 0, 2000),
          f"{runtime} live: every Gone freed, a temporary: {rows.get(('Gone', 'live.rb:13'))}")
    check(rows.get(("Late", "live.rb:14")) == (0, 0, 500),
          f"{runtime} live: every Late freed, a temporary: {rows.get(('Late', 'live.rb:14'))}")


def case_sampled(vmtrace, tmp, runtime):
    """--sample 16K by pid on workloads/sampled.rb: each class's count and
    bytes within 5% of its 3,000,000; where the layout row has no gate for
    the collector's fast path (3.3+), the hook counts every object down."""
    root = install_gem(vmtrace, tmp, runtime)
    outer, pid = start_in(root, runtime, [place(root, os.path.join(RUNTIMES, "workloads", "sampled.rb")), "--wait"])
    check(outer.stdout.readline().strip() == "ready", f"{runtime} sampled: the workload is ready")
    data, err = os.path.join(tmp, "s.data"), os.path.join(tmp, "rec.err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "--sample", "16K", "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    rt.wait_attached(rec, err)
    outer.stdin.write("go\n")
    outer.stdin.flush()
    truth = json.loads(outer.stdout.readline())
    stop_recording(rec, err, f"{runtime} sampled")
    outer.communicate("end\n", timeout=60)
    ruby_sampled_test.check_estimates(vmtrace, data, truth, f"{runtime} sampled")
    s = truth["sampler"]
    if runtime == "ruby3.1":
        check(s.get("late") == 0 and s.get("gate") is True and s.get("hooked", 1 << 62) < 0.7 * truth["made"],
              f"{runtime} sampled: on the fast path, no point passed unseen: {s}")
    else:
        check(s.get("late") == 0 and s.get("gate") is False and s.get("hooked", 0) >= 3 * 3_000_000,
              f"{runtime} sampled: no gate on this Ruby, every object counted down, no point passed: {s}")


def case_bus(vmtrace, tmp, runtime):
    """Vmtrace.events from Ruby code (tests/runtimes/ruby/events_test.rb, every case)
    with the gem in the container."""
    root = install_gem(vmtrace, tmp, runtime)
    script = place(root, os.path.join(HERE, "events_test.rb"))
    for c in ("order", "before", "keep-alive", "signal", "drops", "gc", "statsd", "fork"):
        p = container(root, [RUBIES[runtime][1], script, c], stdout=subprocess.PIPE,
                      stderr=subprocess.STDOUT, text=True)
        out = p.communicate(timeout=120)[0]
        check(p.returncode == 0, f"{runtime} bus: events_test.rb {c}: {out.strip()[-300:]}")


def case_rdoc(vmtrace, tmp, runtime):
    """That Ruby's rdoc over a stdlib folder (uri), recorded by pid from
    before it starts (workloads/wait_armed.rb): every object it made
    counted, the rows and what Ruby had made when counting began
    (Vmtrace.armed_at_allocations) adding up to Ruby's own
    GC.stat(:total_allocated_objects) at its exit (workloads/gc_total.rb)."""
    root = install_gem(vmtrace, tmp, runtime)
    api = runtime[4:]
    opt = f"-rvmtrace -r{place(root, corpus_test.GC_TOTAL_RB)} -r{place(root, WAIT_ARMED_RB)}"
    outer = container(root, ["env", f"RUBYOPT={opt}", RUBIES[runtime][1], "/usr/bin/rdoc", "-q", "-o",
                             f"{INSIDE}/doc", f"/usr/lib/ruby/{api}.0/uri"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pid = host_pid(outer, "ruby")
    wait_mapped(pid, "vmtrace_ext.so")
    data, err = os.path.join(tmp, "rdoc.data"), os.path.join(tmp, "rec.err")
    with open(err, "w") as ef:
        r = subprocess.run([vmtrace, "record", "-p", str(pid), "-o", data], stdout=subprocess.DEVNULL,
                           stderr=ef, timeout=600)
    stderr = outer.communicate(timeout=60)[1]
    check(r.returncode == 0 and outer.returncode == 0,
          f"{runtime} rdoc: record and rdoc exit 0 ({r.returncode}, {outer.returncode}): "
          f"{open(err).read().strip()[-300:]} {stderr.strip()[-300:]}")
    lines = [l for l in stderr.splitlines() if l.startswith("vmtrace-gc-total ")]
    want = int(lines[-1].split()[1]) if lines else -1
    armed = [l for l in stderr.splitlines() if l.startswith("vmtrace-armed-at ")]
    before = int(armed[-1].split()[1]) if armed else -1
    j = report(vmtrace, data)
    got = sum(a["count"] for a in j["allocations"])
    corpus_test.nothing_lost(j, f"{runtime} rdoc")
    check(want > 0 and got + before == want and len(j["allocations"]) > 200,
          f"{runtime} rdoc: every object: vmtrace {got} in {len(j['allocations'])} rows + {before} made "
          f"before counting began == Ruby's GC.stat {want}")
    check(j["gc"]["pauses"] > 0, f"{runtime} rdoc: the collector's pauses recorded: {j['gc']['pauses']}")


def case_spawn(vmtrace, tmp, runtime):
    """record -- a command that enters the container (unshare and chroot;
    nsenter into a running one's namespaces) and starts that Ruby, which
    never asked for vmtrace: it loads the gem of its root, counted from
    before RubyGems, per class equal to ObjectSpace's; its environment its
    own."""
    root = install_gem(vmtrace, tmp, runtime)
    workload = place(root, rt.OBJECTS_RB)
    ruby = RUBIES[runtime][1]
    holder = container(root, ["sleep", "600"])
    ns = host_pid(holder, "sleep")
    try:
        entries = {
            "unshare+chroot": ["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root}/proc", "chroot",
                               root],
            "nsenter": ["nsenter", "-t", str(ns), "-m", "-p", "-r", "-w"],
        }
        for how, enter in entries.items():
            # through nsenter with whole stacks
            extra = ["--stack", "vm"] if how == "nsenter" else []
            mode = f"{runtime} spawned through {how} {' '.join(extra)}".rstrip()
            data = os.path.join(tmp, "spawn.data")
            argv = [*enter, ruby, "-e", 'puts "RUBYLIB=#{ENV["RUBYLIB"].inspect}"; load ARGV[0]', workload, "--armed"]
            r = subprocess.run([vmtrace, "record", "-o", data, "--force", *extra, "--", *argv],
                               capture_output=True, text=True, timeout=300)
            check(r.returncode == 0 and "never loaded" not in r.stderr,
                  f"{mode}: record exits 0, the gem loaded: {r.stderr.strip()[-300:]}")
            check(r.stdout.startswith("RUBYLIB=nil\n"), f"{mode}: the program sees its own environment: "
                  f"{r.stdout.splitlines()[:1]}")
            said = [l for l in r.stdout.splitlines() if l.startswith('{"objectspace"')]
            check(bool(said), f"{mode}: the workload printed its counts")
            if said:
                j = ext_test.check_objects(vmtrace, data, json.loads(said[-1]), mode)
                check(rt.made_before(j) > 0, f"{mode}: what Ruby made before counting began is stated "
                      f"({rt.made_before(j)})")
    finally:
        os.kill(ns, signal.SIGKILL)  # the namespace's first process: the rest go with it
        holder.wait()


def case_unprobed(vmtrace, tmp, runtime):
    """A Ruby with no USDT probes that never loaded the extension: record
    -p says in one line how to trace it, and exits non-zero."""
    root = root_of(runtime)
    p = container(root, [RUBIES[runtime][2], "uninstall", "-a", "-x", "vmtrace"], stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=120)[0]
    check(p.returncode == 0, f"{runtime} unprobed: no gem left in the root: {out.strip()[-300:]}")
    outer = container(root, [RUBIES[runtime][1], "-e", "sleep 30"])
    pid = host_pid(outer, "ruby")
    try:
        wait_mapped(pid, "libruby")
        r = subprocess.run([vmtrace, "record", "-p", str(pid), "-o", os.path.join(tmp, "u.data")],
                           capture_output=True, text=True, timeout=60)
    finally:
        os.kill(pid, signal.SIGKILL)  # the namespace's first process: the rest go with it
        outer.wait()
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0 and len(lines) == 1 and f"runs Ruby {runtime[4:]}" in lines[0] and
          "RUBYOPT=-rvmtrace" in lines[0] and "no vmtrace gem in the root" in lines[0],
          f"{runtime} unprobed: one line on how to trace it: {lines}")


CASES = {}
for _ruby in RUBIES:
    CASES[f"{_ruby}-gem"] = lambda vmtrace, tmp, r=_ruby: case_gem(vmtrace, tmp, r)
    CASES[f"{_ruby}-pid"] = lambda vmtrace, tmp, r=_ruby: case_pid(vmtrace, tmp, r)
    CASES[f"{_ruby}-stack"] = lambda vmtrace, tmp, r=_ruby: case_stack(vmtrace, tmp, r)
    if RUBIES[_ruby][3]:  # Debian's 3.1 has USDT probes
        CASES[f"{_ruby}-unprobed"] = lambda vmtrace, tmp, r=_ruby: case_unprobed(vmtrace, tmp, r)
    CASES[f"{_ruby}-live"] = lambda vmtrace, tmp, r=_ruby: case_live(vmtrace, tmp, r)
    CASES[f"{_ruby}-sampled"] = lambda vmtrace, tmp, r=_ruby: case_sampled(vmtrace, tmp, r)
    CASES[f"{_ruby}-bus"] = lambda vmtrace, tmp, r=_ruby: case_bus(vmtrace, tmp, r)
    CASES[f"{_ruby}-rdoc"] = lambda vmtrace, tmp, r=_ruby: case_rdoc(vmtrace, tmp, r)
    CASES[f"{_ruby}-spawn"] = lambda vmtrace, tmp, r=_ruby: case_spawn(vmtrace, tmp, r)

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
