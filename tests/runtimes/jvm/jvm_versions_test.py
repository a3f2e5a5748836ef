#!/usr/bin/python3.11
"""The version matrix's JVMs: Debian's OpenJDK 21 (trixie) and 25 (sid),
each in a root made by scripts/matrix/roots.sh and entered as a container
(its own mount and pid namespaces), traced from the host with vmtrace's
JVMTI agent built here. Counts are known by construction (workloads/*.java).

  JDK-spawn     record -- unshare ... chroot ROOT java Allocs: the agent,
                placed in the container's /tmp and given as the launcher's
                first argument at its exec, counts every allocation by class
                and method (jvm_test.EXPECTED) from the JVM's start; the
                program's output its own, no "Picked up" line, the copy gone
                once the JVM ended
  JDK-spawn-sampled  the same command with --sample 64K (the period given
                to the agent as an option at the exec): Sampled.java's
                estimates within 5%
  JDK-pid-exact a JVM started with no flag, attached by host pid with
                --sample 0: the agent loaded through the attach mechanism in
                the JVM's namespaces; counted bytes and the stated unseen
                bytes add up to what its two threads made after "recording";
                the copy gone once the JVM ended
  JDK-pid-sampled  the same JVM kind sampled at 64 KiB: within 5%
                (workloads/Sampled.java)
  JDK-virtual   --stack vm on virtual threads (workloads/Virtual.java):
                each Leaf under its own virtual thread's stack, none under
                a carrier's; the main thread's Roots under main
  JDK-hotspot   --runtime hotspot by pid on a JVM with
                -XX:+DTraceAllocProbes: exact by class and method, sizes
                from the probe's argument (right from JDK 18), nothing lost
  JDK-refused   -XX:-EnableDynamicAgentLoading: record -p says so in one
                line and exits non-zero; the JVM runs on

Usage: jvm_versions_test.py VMTRACE CASE
Roots in $VMTRACE_ROOTS (default /var/cache/vmtrace/roots).
Exit 0 pass, 1 fail, 77 skip (not root, or the root not made).
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import jvm_agent_test
import jvm_test
import runtime_test as rt
from runtime_test import check, report
from versions_test import ROOTS, container, host_pid

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
# runtime -> its root's suite
JDKS = {"jdk21": "trixie", "jdk25": "sid"}
INSIDE = "/tmp/vmtrace-jvm-test"  # the test's classes, inside the root
WORKLOADS = ["Allocs.java", "Window.java", "Sampled.java", "Virtual.java"]
PLACED = "libvmtrace_jvm-"


def root_of(jdk):
    root = os.path.join(ROOTS, JDKS[jdk])
    if not os.path.exists(os.path.join(root, ".vmtrace-root")) or not glob.glob(
            f"{root}/usr/lib/jvm/java-{jdk[3:]}-openjdk-*/bin/javac"):
        print(f"skipped: no OpenJDK {jdk[3:]} in {root} (scripts/matrix/roots.sh {JDKS[jdk]})")
        sys.exit(77)
    return root


def compiled(jdk):
    """The workloads compiled by the root's own javac; (root, classpath inside)."""
    root = root_of(jdk)
    shutil.rmtree(root + INSIDE, ignore_errors=True)
    os.makedirs(root + INSIDE)
    for w in WORKLOADS:
        shutil.copy(os.path.join(RUNTIMES, "workloads", w), root + INSIDE)
    p = container(root, ["javac", "-d", INSIDE, *[f"{INSIDE}/{w}" for w in WORKLOADS]],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=300)[0]
    check(p.returncode == 0, f"{jdk}: javac in the container: {out.strip()[-300:]}")
    return root, INSIDE


def placed(root):
    return [f for f in os.listdir(os.path.join(root, "tmp")) if f.startswith(PLACED)]


def check_gone(root, mode):
    deadline = time.time() + 10
    while placed(root) and time.time() < deadline:
        time.sleep(0.1)
    check(not placed(root), f"{mode}: the agent's copy removed as the JVM ended: {placed(root)}")


def enter(root):
    return ["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root}/proc", "chroot", root]


def case_spawn(vmtrace, tmp, jdk):
    root, cp = compiled(jdk)
    data = os.path.join(tmp, "spawn.data")
    r = subprocess.run([vmtrace, "record", "-o", data, "--", *enter(root), "java", "-Xmx256m", "-cp", cp,
                        "Allocs", str(jvm_test.GCS)], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=300)
    mode = f"{jdk} spawn"
    check(r.returncode == 0, f"{mode}: record exits 0: {r.stderr.strip()[-300:]}")
    check(r.stdout.splitlines()[:2] == ["ready", "done"],
          f"{mode}: the program's own output: {r.stdout.splitlines()[:3]}")
    check("Picked up" not in r.stderr and "WARNING" not in r.stderr,
          f"{mode}: nothing of the JVM's about an agent: {r.stderr.strip()[-300:]}")
    j = report(vmtrace, data)
    check(j["runtime"] == "vmtrace" and not j["estimated"], f"{mode}: exact, through vmtrace's agent")
    got = {(a["class"], a["method"]): (a["count"], a["bytes"]) for a in j["allocations"]}
    for key, want in jvm_test.EXPECTED.items():
        check(got.get(key) == want, f"{mode}: {key[0]} from {key[1]}: {got.get(key)} == {want}")
    check(j["lost_total"] == 0, f"{mode}: nothing lost ({j['lost_total']})")
    check_gone(root, mode)


def case_spawn_sampled(vmtrace, tmp, jdk):
    root, cp = compiled(jdk)
    data = os.path.join(tmp, "sampled.data")
    r = subprocess.run([vmtrace, "record", "--sample", "64K", "-o", data, "--", *enter(root), "java", "-Xmx256m",
                        "-cp", cp, "Sampled"], input="\n\n", capture_output=True, text=True, timeout=300)
    mode = f"{jdk} spawn sampled"
    check(r.returncode == 0, f"{mode}: record exits 0: {r.stderr.strip()[-300:]}")
    j = report(vmtrace, data)
    check(j["sample_period"] == 65536, f"{mode}: period 64K ({j['sample_period']})")
    jvm_agent_test.check_sampled(j, mode)
    check_gone(root, mode)


class Jvm:
    """A JVM in the container with pipes to its stdin and stdout."""

    def __init__(self, root, argv):
        self.outer = container(root, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        self.pid = host_pid(self.outer, "java")
        self.expect("ready")

    def expect(self, word):
        line = self.outer.stdout.readline().strip()
        check(line == word, f"the JVM said {word!r}: {line!r}")

    def say(self):
        self.outer.stdin.write("\n")
        self.outer.stdin.flush()

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)  # the namespace's first process
        except ProcessLookupError:
            pass
        self.outer.wait()


def attach(vmtrace, tmp, jvm, name, extra=()):
    data, err = os.path.join(tmp, name), os.path.join(tmp, name + ".err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(jvm.pid), "-o", data, *extra],
                               stdout=subprocess.DEVNULL, stderr=ef)
    rt.wait_attached(rec, err)
    return rec, data, err


def finish(jvm, rec, err, mode):
    """The workload's last steps; its stderr."""
    jvm.say()
    jvm.expect("done")
    jvm.say()
    _, stderr = jvm.outer.communicate(timeout=60)
    check(jvm.outer.returncode == 0, f"{mode}: the JVM exits 0")
    rc = rec.wait(timeout=60)
    check(rc == 0, f"{mode}: record exits 0 with its JVM ({rc}): {open(err).read().strip()[-300:]}")
    return stderr


def case_pid_exact(vmtrace, tmp, jdk):
    root, cp = compiled(jdk)
    mode = f"{jdk} pid exact"
    jvm = Jvm(root, ["java", "-Xmx256m", "-cp", cp, "Window"])
    try:
        check(not placed(root), f"{mode}: no copy of the agent before attach")
        rec, data, err = attach(vmtrace, tmp, jvm, "exact.data", ["--sample", "0"])
        check(len(placed(root)) == 1, f"{mode}: the agent copied into the container's /tmp: {placed(root)}")
        time.sleep(0.2)  # the agent's watcher arms within a few ms
        stderr = finish(jvm, rec, err, mode)
    finally:
        jvm.kill()
    # JEP 451: the JVM's own word on an agent loaded into it while it runs
    check("A JVM TI agent has been loaded dynamically" in stderr,
          f"{mode}: the JVM says an agent was loaded (JEP 451): {stderr.strip()[-200:]}")
    j = report(vmtrace, data)
    truth = 100_000 * 24 + 50_000 * 40
    counted = sum(a["bytes"] for a in j["allocations"] if a["class"] in ("Window$Small", "Window$Big"))
    unseen = sum(l["count"] for l in j["lost"] if l["what"] == jvm_agent_test.UNSEEN)
    check(not j["estimated"], f"{mode}: exact")
    check(truth <= counted + unseen <= truth + 256 * 1024,
          f"{mode}: counted {counted} + unseen {unseen} = {counted + unseen} bytes, made {truth} "
          f"(+ the threads' few others)")
    check_gone(root, mode)


def case_pid_sampled(vmtrace, tmp, jdk):
    root, cp = compiled(jdk)
    mode = f"{jdk} pid sampled"
    jvm = Jvm(root, ["java", "-Xmx256m", "-cp", cp, "Sampled"])
    try:
        rec, data, err = attach(vmtrace, tmp, jvm, "sampled.data", ["--sample", "64K"])
        finish(jvm, rec, err, mode)
    finally:
        jvm.kill()
    j = report(vmtrace, data)
    check(j["sample_period"] == 65536, f"{mode}: period 64K ({j['sample_period']})")
    jvm_agent_test.check_sampled(j, mode)
    check_gone(root, mode)


def case_virtual(vmtrace, tmp, jdk):
    root, cp = compiled(jdk)
    mode = f"{jdk} virtual threads"
    data = os.path.join(tmp, "virtual.data")
    r = subprocess.run([vmtrace, "record", "--stack", "vm", "-o", data, "--", *enter(root), "java", "-cp", cp,
                        "Virtual"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"{mode}: record exits 0: {r.stderr.strip()[-300:]}")
    f = subprocess.run([vmtrace, "report", data, "--by", "stack", "--format", "folded"], capture_output=True,
                       text=True, timeout=60)
    check(f.returncode == 0, f"{mode}: report --format folded")
    rows = {}
    for line in f.stdout.splitlines():
        path, n = line.rsplit(" ", 1)
        rows[path] = rows.get(path, 0) + int(n)
    leaves = {st: n for st, n in rows.items() if st.endswith(";Virtual$Leaf")}
    own = sum(n for st, n in leaves.items()
              if "java.lang.VirtualThread.run" in st and st.endswith(";Virtual.lambda$main$0;Virtual.work;Virtual$Leaf"))
    carrier = [st for st in leaves if "ForkJoin" in st]
    check(own == 50 * 200 and sum(leaves.values()) == own,
          f"{mode}: every Leaf under its virtual thread's own run() and work(): {own} of {sum(leaves.values())}")
    check(not carrier, f"{mode}: no Leaf under a carrier thread's stack: {carrier[:2]}")
    check(rows.get("Virtual.main;Virtual.makeRoots;Virtual$Root") == 1000,
          f"{mode}: the main thread's Roots under main: {rows.get('Virtual.main;Virtual.makeRoots;Virtual$Root')}")


def case_hotspot(vmtrace, tmp, jdk):
    root, cp = compiled(jdk)
    mode = f"{jdk} hotspot"
    jvm = Jvm(root, ["java", "-Xmx256m", "-XX:+DTraceAllocProbes", "-XX:+DTraceMethodProbes", "-cp", cp,
                      "Allocs"])
    try:
        rec, data, err = attach(vmtrace, tmp, jvm, "hotspot.data", ["--runtime", "hotspot"])
        finish(jvm, rec, err, mode)
    finally:
        jvm.kill()
    j = report(vmtrace, data)
    check(j["runtime"] == "hotspot" and not j["estimated"], f"{mode}: exact, through HotSpot's probes")
    got = {(a["class"], a["method"]): (a["count"], a["bytes"]) for a in j["allocations"]}
    for key, want in jvm_test.EXPECTED.items():
        check(got.get(key) == want, f"{mode}: {key[0]} from {key[1]}: {got.get(key)} == {want}")
    check(j["lost_total"] == 0, f"{mode}: sizes from the probe taken as right, nothing lost: {j['lost']}")


def case_refused(vmtrace, tmp, jdk):
    root, cp = compiled(jdk)
    mode = f"{jdk} refused"
    jvm = Jvm(root, ["java", "-XX:-EnableDynamicAgentLoading", "-cp", cp, "Window"])
    try:
        r = subprocess.run([vmtrace, "record", "-p", str(jvm.pid), "-o", os.path.join(tmp, "refused.data")],
                           capture_output=True, text=True, timeout=60)
        check(jvm.outer.poll() is None, f"{mode}: the JVM runs on")
        check(not placed(root), f"{mode}: nothing placed in its /tmp: {placed(root)}")
    finally:
        jvm.kill()
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0, f"{mode}: exits non-zero ({r.returncode})")
    check(len(lines) == 1 and "-XX:-EnableDynamicAgentLoading" in lines[0],
          f"{mode}: one line with the reason: {lines}")


CASES = {}
for _jdk in JDKS:
    for _name, _fn in (("spawn", case_spawn), ("spawn-sampled", case_spawn_sampled), ("pid-exact", case_pid_exact), ("pid-sampled", case_pid_sampled),
                       ("virtual", case_virtual), ("hotspot", case_hotspot), ("refused", case_refused)):
        CASES[f"{_jdk}-{_name}"] = lambda vmtrace, tmp, j=_jdk, f=_fn: f(vmtrace, tmp, j)

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
