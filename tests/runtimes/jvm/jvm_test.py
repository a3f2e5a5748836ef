#!/usr/bin/python3.11
"""Integration tests: vmtrace on Debian's stock OpenJDK 17 through HotSpot's
own USDT probes in libjvm.so (--runtime hotspot; vmtrace's JVM agent, the
default, has jvm_agent_test.py). workloads/Allocs.java allocates known numbers
of its own classes from known methods; each case records it (spawned, or
attached by pid) and checks the report's JSON exactly: counts, sizes, the
method each allocation ran in, and the System.gc() collections.

Usage: jvm_test.py VMTRACE CASE
Cases: java-spawn, java-spawn-wide, java-spawn-compiled, java-pid, java-pid-flag-off.
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
ALLOCS_JAVA = os.path.join(RUNTIMES, "workloads", "Allocs.java")
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

def compile_workload(tmp):
    classes = os.path.join(tmp, "classes")
    subprocess.run([JAVAC, "-d", classes, ALLOCS_JAVA], check=True, timeout=120)
    return classes


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
    classes = compile_workload(tmp)
    stderr = []
    data, _ = rt.record_spawn(vmtrace, [JAVA, *jvm_args, "-cp", classes, "Allocs", str(GCS)], tmp,
                              stderr=stderr)
    return data, stderr


def case_java_spawn(vmtrace, tmp):
    """Only -XX:+DTraceMethodProbes given: vmtrace turns the allocation
    probes on itself, and says so."""
    data, r = spawn(vmtrace, tmp, ["-Xmx256m", "-XX:+DTraceMethodProbes"])
    check(ENABLE_NOTE in r, "spawned: says it added -XX:+DTraceAllocProbes")
    j = report(vmtrace, data)
    check_common(j, "spawned")
    check_by_method(j, "spawned")
    check_gc(j, "spawned")


def case_java_spawn_wide(vmtrace, tmp):
    """Wide class words and references: the sizes follow the layout."""
    data, r = spawn(vmtrace, tmp, ["-Xmx256m", "-XX:+DTraceAllocProbes", "-XX:-UseCompressedOops",
                                   "-XX:-UseCompressedClassPointers"])
    check(ENABLE_NOTE not in r, "wide: the flag given, nothing added")
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
    data, _ = spawn(vmtrace, tmp, ["-Xmx256m", "-Xcomp", "-XX:+DTraceAllocProbes"])
    j = report(vmtrace, data)
    check_common(j, "compiled")
    got = {a["class"]: (a["count"], a["bytes"]) for a in j["allocations"]}
    want = {k: v for (k, m), v in EXPECTED.items() if k.startswith("Allocs$")}
    for klass, w in want.items():
        check(got.get(klass) == w, f"compiled: {klass}: (count, bytes) {got.get(klass)} == {w}")
    check_gc(j, "compiled")


def case_java_pid(vmtrace, tmp):
    classes = compile_workload(tmp)
    data, _ = rt.record_pid(vmtrace, [JAVA, "-Xmx256m", "-XX:+ExtendedDTraceProbes", "-cp", classes,
                                      "Allocs", str(GCS)], tmp)
    j = report(vmtrace, data)
    check_common(j, "attached")
    check_by_method(j, "attached")
    check_gc(j, "attached")


def case_java_pid_flag_off(vmtrace, tmp):
    """A JVM started without the flag: one line naming it, non-zero exit."""
    classes = compile_workload(tmp)
    java = rt.Target([JAVA, "-Xmx256m", "-cp", classes, "Allocs"])
    try:
        r = subprocess.run([vmtrace, "record", "--runtime", "hotspot", "-p", str(java.proc.pid), "-o",
                            os.path.join(tmp, "off.data")], capture_output=True, text=True,
                           timeout=60)
    finally:
        java.proc.kill()
        java.proc.wait()
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0, f"flag off: vmtrace record -p exits non-zero ({r.returncode})")
    check(len(lines) == 1 and "-XX:+DTraceAllocProbes" in lines[0] and
          f"pid {java.proc.pid}" in lines[0], f"flag off: one line naming the flag: {lines}")
    check(not os.path.exists(os.path.join(tmp, "off.data")), "flag off: no record file")


CASES = {"java-spawn": case_java_spawn, "java-spawn-wide": case_java_spawn_wide,
         "java-spawn-compiled": case_java_spawn_compiled,
         "java-pid": case_java_pid, "java-pid-flag-off": case_java_pid_flag_off}


if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
