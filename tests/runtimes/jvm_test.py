#!/usr/bin/python3.11
"""Integration tests: vmtrace on Debian's stock OpenJDK 17 through HotSpot's
own USDT probes in libjvm.so. workloads/Allocs.java allocates known numbers
of its own classes from known methods; each case records it (spawned, or
attached by pid) and checks the report's JSON exactly: counts, sizes, the
method each allocation ran in, and the System.gc() collections.

Usage: jvm_test.py VMTRACE CASE
Cases: java-spawn, java-spawn-wide, java-spawn-compiled, java-pid, java-pid-flag-off.
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALLOCS_JAVA = os.path.join(HERE, "workloads", "Allocs.java")
JAVA = "/usr/bin/java"
JAVAC = "/usr/bin/javac"
GCS = 3  # System.gc() calls, each one full collection
ENABLE_NOTE = ("vmtrace: hotspot: added -XX:+DTraceAllocProbes to JAVA_TOOL_OPTIONS in the "
               "spawned java so its allocation probes fire")

# (class, method it ran in) -> (count, bytes) by construction, with
# compressed oops and class pointers (HotSpot's default under -Xmx32g):
# Alpha {int, long} 12+4+8 = 24, Beta {ref} 12+4 = 16, Gamma {long, long}
# 12+16 = 28 -> 32, Alpha[1000] 16+4000, long[50] 16+400.
EXPECTED = {
    ("Allocs$Alpha", "Allocs.makeAlpha"): (1000, 24000),
    ("Allocs$Alpha[]", "Allocs.makeAlpha"): (1, 4016),
    ("Allocs$Beta", "Allocs.makeBeta"): (300, 4800),
    ("long[]", "Allocs.makeBeta"): (1, 416),
    ("Allocs$Gamma", "Allocs.makeGamma"): (200, 6400),
    # Delta {} 12 -> 16, after a catch: the frames the exception unwound
    # (and fillInStackTrace's, a native method's, that never returns) are gone
    ("Allocs$Delta", "Allocs.makeDelta"): (100, 1600),
    # Throwable's 5 references and an int: 12+20+4
    ("java.lang.IllegalStateException", "Allocs.fail"): (100, 4000),
}
# Without compressed oops or class pointers the class word is 8 bytes, and
# so is a reference: Alpha 16+4+8 = 28 -> 32, Beta 16+8 = 24, Gamma 16+16,
# Alpha[1000] 24+8000 (the array header is 8+8+4, aligned to 8).
EXPECTED_WIDE = {
    "Allocs$Alpha": (1000, 32000),
    "Allocs$Alpha[]": (1, 8024),
    "Allocs$Beta": (300, 7200),
    "Allocs$Gamma": (200, 6400),
    "Allocs$Delta": (100, 1600),
}
CALLS = {"Allocs.makeAlpha": 1, "Allocs.makeBeta": 1, "Allocs.makeGamma": 1,
         "Allocs$Alpha.<init>": 1000, "Allocs$Beta.<init>": 300, "Allocs$Gamma.<init>": 200,
         "Allocs.makeDelta": 1, "Allocs.fail": 100, "Allocs$Delta.<init>": 100}

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def compile_workload(tmp):
    classes = os.path.join(tmp, "classes")
    subprocess.run([JAVAC, "-d", classes, ALLOCS_JAVA], check=True, timeout=120)
    return classes


def report(vmtrace, data):
    r = subprocess.run([vmtrace, "report", data, "--format", "json"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("vmtrace report failed: " + r.stderr)
    return json.loads(r.stdout)


def check_by_method(j, mode):
    got = {(a["class"], a["method"]): (a["count"], a["bytes"]) for a in j["allocations"]}
    for key, want in EXPECTED.items():
        check(got.get(key) == want,
              f"{mode}: {key[0]} from {key[1]}: (count, bytes) {got.get(key)} == {want}")
    calls = {c["name"]: c["count"] for c in j["calls"]}
    for name, want in CALLS.items():
        check(calls.get(name) == want, f"{mode}: {name} called {calls.get(name)} == {want}")


def check_gc(j, mode):
    gc = j["gc"]
    check(gc["major"] == GCS, f"{mode}: {GCS} System.gc() seen as full collections: {gc['major']}")
    check(gc["pauses"] == gc["collections"] and gc["pause_max_ns"] > 0,
          f"{mode}: one timed pause per collection ({gc['pauses']} of {gc['collections']})")


def check_common(j, mode):
    check(j["runtime"] == "hotspot", f"{mode}: runtime is hotspot")
    check(j["has_allocations"], f"{mode}: has_allocations")
    check(j["lost_total"] == 0, f"{mode}: nothing lost ({j['lost']})")


def spawn(vmtrace, tmp, jvm_args):
    data = os.path.join(tmp, "spawn.data")
    classes = compile_workload(tmp)
    r = subprocess.run([vmtrace, "record", "-o", data, "--", JAVA, *jvm_args, "-cp", classes,
                        "Allocs", str(GCS)],
                       input="go\nbye\n", capture_output=True, text=True, timeout=180)
    check(r.returncode == 0, "vmtrace record -- java exits 0: " + r.stderr.strip()[-300:])
    return data, r


def case_java_spawn(vmtrace, tmp):
    """Only -XX:+DTraceMethodProbes given: vmtrace turns the allocation
    probes on itself, and says so."""
    data, r = spawn(vmtrace, tmp, ["-Xmx256m", "-XX:+DTraceMethodProbes"])
    check(ENABLE_NOTE in r.stderr.splitlines(), "spawned: says it added -XX:+DTraceAllocProbes")
    j = report(vmtrace, data)
    check_common(j, "spawned")
    check_by_method(j, "spawned")
    check_gc(j, "spawned")


def case_java_spawn_wide(vmtrace, tmp):
    """Wide class words and references: the sizes follow the layout."""
    data, r = spawn(vmtrace, tmp, ["-Xmx256m", "-XX:+DTraceAllocProbes", "-XX:-UseCompressedOops",
                                   "-XX:-UseCompressedClassPointers"])
    check(ENABLE_NOTE not in r.stderr, "wide: the flag given, nothing added")
    j = report(vmtrace, data)
    check_common(j, "wide")
    got = {a["class"]: (a["count"], a["bytes"]) for a in j["allocations"]}
    for klass, want in EXPECTED_WIDE.items():
        check(got.get(klass) == want, f"wide: {klass}: (count, bytes) {got.get(klass)} == {want}")
    check(all(a["method"] == "" for a in j["allocations"]),
          "wide: no method without -XX:+DTraceMethodProbes")
    check(any("-XX:+DTraceMethodProbes" in p for p in j["probes"]),
          f"wide: the probes name the missing method flag: {j['probes']}")
    check_gc(j, "wide")


def case_java_spawn_compiled(vmtrace, tmp):
    """-Xcomp: every method compiled before it runs, so the allocations go
    through C1's and C2's fast paths, which call the probe without the
    size: the sizes still follow from the objects."""
    data, r = spawn(vmtrace, tmp, ["-Xmx256m", "-Xcomp", "-XX:+DTraceAllocProbes"])
    j = report(vmtrace, data)
    check_common(j, "compiled")
    got = {a["class"]: (a["count"], a["bytes"]) for a in j["allocations"]}
    want = {k: v for (k, m), v in EXPECTED.items() if k.startswith("Allocs$")}
    for klass, w in want.items():
        check(got.get(klass) == w, f"compiled: {klass}: (count, bytes) {got.get(klass)} == {w}")
    check_gc(j, "compiled")


class Java:
    """Allocs started on its own: prints "ready", waits for a line."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.expect("ready")

    def expect(self, word):
        for line in self.proc.stdout:
            if line.strip() == word:
                return
        raise SystemExit(f"java ended before printing {word!r}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_attached(rec, errpath):
    for _ in range(600):
        with open(errpath) as f:
            if "recording pid" in f.read():
                return
        if rec.poll() is not None:
            raise SystemExit("vmtrace record ended early: " + open(errpath).read())
        time.sleep(0.05)
    raise SystemExit("vmtrace record did not attach")


def case_java_pid(vmtrace, tmp):
    classes = compile_workload(tmp)
    data = os.path.join(tmp, "pid.data")
    err = os.path.join(tmp, "record.err")
    java = Java([JAVA, "-Xmx256m", "-XX:+ExtendedDTraceProbes", "-cp", classes, "Allocs",
                 str(GCS)])
    try:
        with open(err, "w") as ef:
            rec = subprocess.Popen([vmtrace, "record", "-p", str(java.proc.pid), "-o", data],
                                   stdout=subprocess.DEVNULL, stderr=ef)
        wait_attached(rec, err)
        java.proc.stdin.write("go\n")
        java.proc.stdin.flush()
        java.expect("done")
        java.proc.stdin.write("bye\n")
        java.proc.stdin.close()
        check(java.proc.wait(timeout=60) == 0, "attached: java exits 0")
        check(rec.wait(timeout=60) == 0, "attached: vmtrace record -p exits 0 when java exits")
    finally:
        java.kill()
    j = report(vmtrace, data)
    check_common(j, "attached")
    check(j["pid"] == java.proc.pid, "attached: the report names the pid")
    check_by_method(j, "attached")
    check_gc(j, "attached")


def case_java_pid_flag_off(vmtrace, tmp):
    """A JVM started without the flag: one line naming it, non-zero exit."""
    classes = compile_workload(tmp)
    java = Java([JAVA, "-Xmx256m", "-cp", classes, "Allocs"])
    try:
        r = subprocess.run([vmtrace, "record", "-p", str(java.proc.pid), "-o",
                            os.path.join(tmp, "off.data")], capture_output=True, text=True,
                           timeout=60)
    finally:
        java.kill()
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0, f"flag off: vmtrace record -p exits non-zero ({r.returncode})")
    check(len(lines) == 1 and "-XX:+DTraceAllocProbes" in lines[0] and
          f"pid {java.proc.pid}" in lines[0], f"flag off: one line naming the flag: {lines}")
    check(not os.path.exists(os.path.join(tmp, "off.data")), "flag off: no record file")


CASES = {"java-spawn": case_java_spawn, "java-spawn-wide": case_java_spawn_wide,
         "java-spawn-compiled": case_java_spawn_compiled,
         "java-pid": case_java_pid, "java-pid-flag-off": case_java_pid_flag_off}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("skipped: needs root for BPF")
        return 77
    with tempfile.TemporaryDirectory(prefix="vmtrace-jvm-") as tmp:
        CASES[sys.argv[2]](sys.argv[1], tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
