#!/usr/bin/python3.11
"""Integration tests: vmtrace's JVMTI agent (provider/jvm) in Debian's stock
OpenJDK 17, started with no flag. A java vmtrace starts gets the agent at
its start and is counted exactly; a running JVM gets it through the attach
mechanism and is sampled by bytes. Counts are known by construction:
workloads/Allocs.java (exact, jvm_test.EXPECTED) and workloads/Sampled.java
(sampled estimates within 5%).

Usage: jvm_agent_test.py VMTRACE CASE
Cases: agent-spawn, agent-classes, agent-stack, agent-pid-sampled,
agent-pid-exact, agent-pid-twice, agent-refused.
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import jvm_test
import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
SAMPLED_JAVA = os.path.join(RUNTIMES, "workloads", "Sampled.java")
DEEP_JAVA = os.path.join(RUNTIMES, "workloads", "Deep.java")
WINDOW_JAVA = os.path.join(RUNTIMES, "workloads", "Window.java")
UNSEEN = "allocated while armed, unseen by the provider (bytes)"
JAVA = jvm_test.JAVA
AGENT_NOTE = "loading vmtrace's JVM agent"
# Sampled.java: class -> (method, count, bytes each)
SAMPLED = {"Sampled$Small": ("Sampled.makeSmall", 40_000_000, 24),
           "Sampled$Big": ("Sampled.makeBig", 12_000_000, 40),
           "long[]": ("Sampled.makeArrays", 1_000_000, 528)}


def compile_sampled(tmp):
    classes = os.path.join(tmp, "classes")
    subprocess.run([jvm_test.JAVAC, "-d", classes, SAMPLED_JAVA], check=True, timeout=120)
    return classes


def spawn_agent(vmtrace, tmp, extra=()):
    classes = jvm_test.compile_workload(tmp)
    err = []
    data, _ = rt.record_spawn(vmtrace, [JAVA, "-Xmx256m", "-cp", classes, "Allocs", str(jvm_test.GCS)],
                              tmp, extra=["--runtime", "vmtrace", *extra], stderr=err)
    return data, err


def case_agent_spawn(vmtrace, tmp):
    """Every allocation of a JVM vmtrace starts, by class and method, with
    the sizes the JVM gives; the System.gc() collections."""
    data, err = spawn_agent(vmtrace, tmp)
    check(any(AGENT_NOTE in l for l in err), f"spawn: says it loads the agent: {err}")
    j = report(vmtrace, data)
    check(j["runtime"] == "vmtrace" and not j["estimated"], "spawn: exact, through vmtrace's probes")
    got = {(a["class"], a["method"]): (a["count"], a["bytes"]) for a in j["allocations"]}
    for key, want in jvm_test.EXPECTED.items():
        check(got.get(key) == want, f"spawn: {key[0]} from {key[1]}: {got.get(key)} == {want}")
    check(j["lost_total"] == 0, f"spawn: nothing lost ({j['lost_total']})")
    check(j["gc"]["collections"] >= jvm_test.GCS and j["gc"]["pauses"] == j["gc"]["collections"],
          f"spawn: the {jvm_test.GCS} System.gc() pauses seen: {j['gc']['collections']}")


def case_agent_classes(vmtrace, tmp):
    """--no-methods: every allocation per class, no frame read (the cheap
    exact mode); the same counts and bytes per class, no method named."""
    data, _ = spawn_agent(vmtrace, tmp, ["--no-methods"])
    j = report(vmtrace, data, "--by", "class")
    got = {a["class"]: (a["count"], a["bytes"]) for a in j["allocations"]}
    want = {}
    for (klass, _), (n, b) in jvm_test.EXPECTED.items():
        c, s = want.get(klass, (0, 0))
        want[klass] = (c + n, s + b)
    for klass, w in want.items():
        if klass.startswith("Allocs$"):
            check(got.get(klass) == w, f"classes: {klass}: {got.get(klass)} == {w}")
    rows = report(vmtrace, data)["allocations"]
    check(rows and all(a["method"] == "" for a in rows), "classes: no method read")


def case_agent_stack(vmtrace, tmp):
    """--stack vm: whole Java stacks, each frame the program's call path."""
    data, _ = spawn_agent(vmtrace, tmp, ["--stack", "vm"])
    r = subprocess.run([vmtrace, "report", data, "--by", "stack", "--format", "folded"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "stack: report --format folded")
    folded = {}
    for line in r.stdout.splitlines():
        path, n = line.rsplit(" ", 1)
        folded[path] = folded.get(path, 0) + int(n)
    want = {"Allocs.main;Allocs.makeAlpha;Allocs$Alpha": 1000,
            "Allocs.main;Allocs.makeBeta;Allocs$Beta": 300,
            "Allocs.main;Allocs.makeDelta;Allocs.fail;java.lang.IllegalStateException": 100,
            "Allocs.main;Allocs.makeDelta;Allocs$Delta": 100}
    for path, n in want.items():
        check(folded.get(path) == n, f"stack: {path}: {folded.get(path)} == {n}")
    gamma = [p for p in folded if p.endswith(";Allocs.makeGamma;Allocs$Gamma")]
    check(len(gamma) == 1 and folded[gamma[0]] == 200 and not gamma[0].startswith("Allocs.main"),
          f"stack: Gamma on its own thread, from its run(): {gamma}")
    # deeper than the 128 frames kept: cut, and counted as such
    classes = os.path.join(tmp, "deep")
    subprocess.run([jvm_test.JAVAC, "-d", classes, DEEP_JAVA], check=True, timeout=120)
    data, _ = rt.record_spawn(vmtrace, [JAVA, "-cp", classes, "Deep"], tmp,
                              extra=["--runtime", "vmtrace", "--stack", "vm"])
    j = report(vmtrace, data)
    cut = {l["what"]: l["count"] for l in j["lost"]}.get("stack cut at 128 frames (allocations)")
    check(cut is not None and cut >= 100, f"stack: 100 Leaf 200 calls deep counted as cut: {cut}")


def sampled_target(tmp):
    return rt.Target([JAVA, "-Xmx256m", "-cp", compile_sampled(tmp), "Sampled"])


def record_attached(vmtrace, tmp, target, name, extra=()):
    data = os.path.join(tmp, name)
    errpath = data + ".err"
    t0 = time.monotonic()
    with open(errpath, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.proc.pid), "-o", data, *extra],
                               stdout=subprocess.DEVNULL, stderr=ef)
    rt.wait_attached(rec, errpath)
    return rec, data, errpath, time.monotonic() - t0


def check_sampled(j, mode):
    check(j["runtime"] == "vmtrace" and j["estimated"], f"{mode}: sampled estimates")
    got = {a["class"]: a for a in j["allocations"] if a["class"] in SAMPLED}
    for klass, (method, count, size) in SAMPLED.items():
        a = got.get(klass)
        check(a is not None and a["method"] == method, f"{mode}: {klass} from {method}")
        check(abs(a["count"] - count) <= 0.05 * count and abs(a["bytes"] - count * size) <= 0.05 * count * size,
              f"{mode}: {klass}: {a['count']} objects, {a['bytes']} bytes within 5% of "
              f"{count}, {count * size} ({a['samples']} samples)")


def case_agent_pid_sampled(vmtrace, tmp):
    """A JVM started with no flag, attached by pid: the agent is loaded into
    it, sampled at 64 KiB; the estimates within 5% of the known counts."""
    target = sampled_target(tmp)
    try:
        rec, data, errpath, took = record_attached(vmtrace, tmp, target, "sampled.data",
                                                   ["--sample", "64K"])
        target.step()
        target.expect("done")
        target.proc.stdin.write("bye\n")
        target.proc.stdin.flush()
        check(target.proc.wait(timeout=60) == 0, "sampled: workload exits 0")
        check(rec.wait(timeout=60) == 0, "sampled: record exits 0")
    finally:
        target.proc.kill()
    print(f"attached in {took:.2f} s")
    j = report(vmtrace, data)
    check(j["sample_period"] == 65536, f"sampled: period 64K ({j['sample_period']})")
    check_sampled(j, "sampled")


def case_agent_pid_exact(vmtrace, tmp):
    """A JVM started with no flag, its threads running, attached by pid with
    --sample 0: each thread's allocations until its first sample are not
    seen (JVMTI takes the new interval there), and the report says how many
    bytes: the counted bytes of the two classes and that figure add up to
    what the two threads made after "recording"."""
    classes = os.path.join(tmp, "window")
    subprocess.run([jvm_test.JAVAC, "-d", classes, WINDOW_JAVA], check=True, timeout=120)
    target = rt.Target([JAVA, "-Xmx256m", "-cp", classes, "Window"])
    try:
        rec, data, _, _ = record_attached(vmtrace, tmp, target, "exact.data", ["--sample", "0"])
        time.sleep(0.2)  # the agent's watcher arms within a few ms
        target.step()
        target.expect("done")
        target.proc.stdin.write("bye\n")
        target.proc.stdin.flush()
        check(target.proc.wait(timeout=60) == 0, "exact: workload exits 0")
        check(rec.wait(timeout=60) == 0, "exact: record exits 0")
    finally:
        target.proc.kill()
    j = report(vmtrace, data)
    truth = 100_000 * 24 + 50_000 * 40
    counted = sum(a["bytes"] for a in j["allocations"] if a["class"] in ("Window$Small", "Window$Big"))
    unseen = sum(l["count"] for l in j["lost"] if l["what"] == UNSEEN)
    check(not j["estimated"] and unseen > 0,
          f"exact: the bytes not seen after attach are stated ({unseen})")
    check(truth <= counted + unseen <= truth + 256 * 1024,
          f"exact: counted {counted} + unseen {unseen} = {counted + unseen} bytes, "
          f"made {truth} (+ the threads' few others)")


def case_agent_pid_twice(vmtrace, tmp):
    """Two JVMs: the second attached while the first keeps running; the
    first detached and attached again (the agent already in it, armed again);
    by default a running JVM is sampled at 512 KiB."""
    first = sampled_target(tmp)
    second = sampled_target(tmp)
    try:
        rec1, _, err1, _ = record_attached(vmtrace, tmp, first, "first.data")
        check("sampled" in open(err1).read(), "twice: a running JVM is sampled by default")
        # --all leaves a JVM's agent dormant (it samples nothing, and every allocation
        # through JVMTI would cost an event)
        r = subprocess.run([vmtrace, "record", "--all", "-d", "0.5", "-o", os.path.join(tmp, "all.data")],
                           capture_output=True, text=True, timeout=60)
        check("vmtrace's JVM agent in" in r.stderr and "left dormant" in r.stderr,
              f"twice: --all leaves the agent dormant: {r.stderr.strip()[-300:]}")
        rec2, data2, _, _ = record_attached(vmtrace, tmp, second, "second.data", ["--sample", "64K"])
        check(rec1.poll() is None, "twice: the first recording runs on")
        rec1.terminate()
        check(rec1.wait(timeout=60) == 0, "twice: first recording ends at SIGTERM")
        check(first.proc.poll() is None, "twice: the first JVM runs on after its tracer left")
        second.step()
        second.expect("done")
        second.proc.stdin.write("bye\n")
        second.proc.stdin.flush()
        check(rec2.wait(timeout=60) == 0, "twice: second recording ends with its JVM")
        check_sampled(report(vmtrace, data2), "second JVM")
        rec3, data3, _, took = record_attached(vmtrace, tmp, first, "again.data", ["--sample", "64K"])
        first.step()
        first.expect("done")
        first.proc.stdin.write("bye\n")
        first.proc.stdin.flush()
        check(rec3.wait(timeout=60) == 0, "twice: the re-attached recording ends with its JVM")
        check_sampled(report(vmtrace, data3), "re-attached")
    finally:
        for t in (first, second):
            t.proc.kill()
            t.proc.wait()


def case_agent_refused(vmtrace, tmp):
    """A JVM that refuses attach: one line with the reason, non-zero exit;
    the same JVM with HotSpot's allocation probes on is traced by them."""
    classes = compile_sampled(tmp)
    java = rt.Target([JAVA, "-XX:+DisableAttachMechanism", "-cp", classes, "Sampled"])
    try:
        r = subprocess.run([vmtrace, "record", "-p", str(java.proc.pid), "-o",
                            os.path.join(tmp, "refused.data")], capture_output=True, text=True, timeout=60)
        check(java.proc.poll() is None, "refused: the JVM runs on")
    finally:
        java.proc.kill()
        java.proc.wait()
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0, f"refused: exits non-zero ({r.returncode})")
    check(len(lines) == 1 and "DisableAttachMechanism" in lines[0], f"refused: one line with the reason: {lines}")
    # with HotSpot's allocation probes on, those trace it, and stderr says why
    data = os.path.join(tmp, "fallback.data")
    target = rt.Target([JAVA, "-XX:+DisableAttachMechanism", "-XX:+DTraceAllocProbes", "-cp",
                        jvm_test.compile_workload(tmp), "Allocs"])
    try:
        rec, data, errpath, _ = record_attached(vmtrace, tmp, target, "fallback.data")
        target.step()
        target.expect("done")
        target.proc.stdin.write("bye\n")
        target.proc.stdin.flush()
        check(rec.wait(timeout=60) == 0, "fallback: record exits 0")
    finally:
        target.proc.kill()
        target.proc.wait()
    err = open(errpath).read()
    check("DisableAttachMechanism" in err and "traced through HotSpot's probes instead" in err,
          f"fallback: says why HotSpot's probes: {err.strip()[-300:]}")
    j = report(vmtrace, data)
    got = {a["class"]: a["count"] for a in j["allocations"]}
    check(j["runtime"] == "hotspot" and got.get("Allocs$Alpha") == 1000,
          f"fallback: HotSpot's probes count Alpha: {got.get('Allocs$Alpha')}")


CASES = {"agent-spawn": case_agent_spawn, "agent-classes": case_agent_classes, "agent-stack": case_agent_stack,
         "agent-pid-sampled": case_agent_pid_sampled,
         "agent-pid-exact": case_agent_pid_exact, "agent-pid-twice": case_agent_pid_twice,
         "agent-refused": case_agent_refused}


if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
