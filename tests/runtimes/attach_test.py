#!/usr/bin/python3.11
"""record -p of a Ruby or CPython that never loaded vmtrace: vmtrace loads
its provider into the running process (consumer/src/runtimes/
provider_load.h: one thread stopped for three calls, the runtime's own
queue runs the require or import at its next safe point) and records
through it. Ruby 3.1 and CPython 3.11 on the host, with the extensions
built here; Ruby 3.3 and 3.4, CPython 3.13 and 3.14 in the version
matrix's containers, with the gem or the package installed there (not
loaded).

  RUNTIME-exact   Ruby: workloads/objects.rb --attached, each class equal
                  to ObjectSpace's count, Point and Wide in their method.
                  CPython: workloads/py_lines.py --attached, the bytes and
                  allocations at its line equal to tracemalloc's snapshot.
                  record says it loaded the provider.
  RUNTIME-cycles  attach/detach cycles (VMTRACE_ATTACH_CYCLES, default 20;
                  a fresh process every 10) into workloads/attach_busy.*:
                  threads making objects, one in a read, collections,
                  SIGUSR1 every 20 ms: each record exits 0, counting
                  through the provider, and the program's output and exit
                  status are those of an untraced run
  RUNTIME-traced  a process already under ptrace: one line saying so, and
                  the runtime's own probes record it (Ruby 3.1, CPython
                  3.11 carry them)
  py3.14-nodebug  a CPython 3.14 with PYTHON_DISABLE_REMOTE_DEBUG: nothing
                  loaded into it, one line says why, and its own probes
                  (collections: 3.14 has no allocation probes) record it
  py3.14-offsets  the row of python_debug_rows.h for 3.14, compiled against
                  that version's headers in its root (python_debug_check.c):
                  every offset agrees

Usage: attach_test.py VMTRACE CASE
Exit 0 pass, 1 fail, 77 skip (not root, or the root not made).
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

import ext_test
import python_versions_test as pv
import runtime_test as rt
import versions_test as vv
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")
CYCLES = int(os.environ.get("VMTRACE_ATTACH_CYCLES", "20"))
PER_PROCESS = 10
# runtime -> (its root's suite or None for the host, its command)
RUNTIMES = {"ruby3.1": (None, "/usr/bin/ruby3.1"), "ruby3.3": ("trixie", "ruby3.3"),
            "ruby3.4": ("sid", "ruby3.4"), "py3.11": (None, rt.PYTHON), "py3.13": ("trixie", "python3.13"),
            "py3.14": ("sid", "python3.14")}


def prepare(vmtrace, tmp, runtime):
    """The root (None: the host) with the provider installed, not loaded."""
    if RUNTIMES[runtime][0] is None:
        return None
    if runtime.startswith("ruby"):
        return vv.install_gem(vmtrace, tmp, runtime)
    return pv.install(vmtrace, tmp, runtime)


def start(root, runtime, workload, *args):
    """workload (a file of workloads/) under runtime, pipes to its stdin and
    stdout, waited for its "ready" when it says one: (the process, its pid)."""
    command = RUNTIMES[runtime][1]
    if root is None:
        p = subprocess.Popen([command, os.path.join(WORKLOADS, workload), *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return p, p.pid
    inside = vv.place(root, os.path.join(WORKLOADS, workload))
    p = vv.container(root, [command, inside, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    return p, vv.host_pid(p, os.path.basename(command)[:15])


def record(vmtrace, pid, data, *extra):
    err = data + ".err"
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "-o", data, "--force", *extra],
                               stdout=subprocess.DEVNULL, stderr=ef)
    return rec, err


def ended(rec, err, mode):
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    said = open(err).read()
    check(rc == 0, f"{mode}: record exits 0 ({rc}): {said.strip()[-300:]}")
    check("extension loaded into pid" in said, f"{mode}: record says it loaded the provider: {said.strip()[:300]}")
    return said


def case_exact(vmtrace, tmp, runtime):
    root = prepare(vmtrace, tmp, runtime)
    data = os.path.join(tmp, "attach.data")
    if runtime.startswith("ruby"):
        p, pid = start(root, runtime, "objects.rb", "--attached", "--wait-detach")
        try:
            rec, err = record(vmtrace, pid, data)
            line = p.stdout.readline()
            check(bool(line), f"{runtime}: the workload counted: {open(err).read().strip()[-300:]}")
            truth = json.loads(line)
            ended(rec, err, runtime)
            after = json.loads(p.stdout.readline())
            check(p.wait(timeout=60) == 0, f"{runtime}: the workload exits 0")
        finally:
            p.kill()
            p.wait()
        check(after["hooks_after_detach"] == [], f"{runtime}: the hooks off once the recording ended: {after}")
        ext_test.check_objects(vmtrace, data, truth, f"{runtime} attached")
        return
    p, pid = start(root, runtime, "py_lines.py", "--attached")
    try:
        check(p.stdout.readline().strip() == "ready", f"{runtime}: the workload started")
        rec, err = record(vmtrace, pid, data)
        line = p.stdout.readline()
        check(bool(line), f"{runtime}: the workload counted: {open(err).read().strip()[-300:]}")
        truth = json.loads(line)
        ended(rec, err, runtime)
        check(p.wait(timeout=60) == 0, f"{runtime}: the workload ends once the tracer left")
    finally:
        p.kill()
        p.wait()
    j = report(vmtrace, data, "--by", "site")
    site = f"{truth['file']}:{truth['line']}"
    rows = [a for a in j["allocations"] if a["site"] == site]
    got = (sum(a["count"] for a in rows), sum(a["bytes"] for a in rows))
    check(j["runtime"] == "vmtrace" and truth["count"] == 2000 and got == (truth["count"], truth["bytes"]),
          f"{runtime}: {site}: vmtrace {got} == tracemalloc's {(truth['count'], truth['bytes'])}")


def busy_file(runtime):
    return "attach_busy.rb" if runtime.startswith("ruby") else "attach_busy.py"


def case_cycles(vmtrace, tmp, runtime):
    root = prepare(vmtrace, tmp, runtime)
    # what the program prints untraced
    p, _ = start(root, runtime, busy_file(runtime))
    want = p.communicate("\n", timeout=120)
    check(p.returncode == 0 and want[0].startswith("ready\nok ") and want[0].endswith(" bad 0\n"),
          f"{runtime} cycles: untraced run: {want}")
    data = os.path.join(tmp, "cycle.data")
    done, loaded, slowest = 0, 0, 0.0
    while done < CYCLES:
        p, pid = start(root, runtime, busy_file(runtime))
        check(p.stdout.readline() == "ready\n", f"{runtime} cycles: the workload started")
        stop = threading.Event()

        def signals():
            while not stop.is_set():
                try:
                    os.kill(pid, signal.SIGUSR1)
                except ProcessLookupError:
                    return
                time.sleep(0.02)

        sender = threading.Thread(target=signals, daemon=True)
        sender.start()
        try:
            for _ in range(min(PER_PROCESS, CYCLES - done)):
                t0 = time.monotonic()
                r = subprocess.run([vmtrace, "record", "-p", str(pid), "-d", "0.05", "-o", data, "--force"],
                                   capture_output=True, text=True, timeout=60)
                slowest = max(slowest, time.monotonic() - t0)
                check(r.returncode == 0 and "(vmtrace probes" in r.stderr and "nothing was received" not in r.stderr,
                      f"{runtime} cycle {done}: counted through the provider: {r.stderr.strip()[-300:]}")
                loaded += "extension loaded into pid" in r.stderr
                check(p.poll() is None, f"{runtime} cycle {done}: the program runs on")
                done += 1
        finally:
            stop.set()
            sender.join()
        out = p.communicate("\n", timeout=120)
        check(p.returncode == 0 and ("ready\n" + out[0], out[1]) == want,
              f"{runtime} cycles: the program's output and status are its own: {out} vs {want}")
    check(loaded == (CYCLES + PER_PROCESS - 1) // PER_PROCESS,
          f"{runtime} cycles: loaded once per process, armed again after ({loaded})")
    print(f"{runtime}: {CYCLES} cycles, the slowest record of 0.05 s took {slowest:.3f} s")


def case_traced(vmtrace, tmp, runtime):
    """A tracer holds the process already: vmtrace says so in one line and
    takes the runtime's own probes."""
    p, pid = start(None, runtime, busy_file(runtime))
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        check(p.stdout.readline() == "ready\n", f"{runtime} traced: the workload started")
        check(libc.ptrace(0x4206, pid, None, None) == 0, f"{runtime} traced: seized by the test")  # PTRACE_SEIZE
        r = subprocess.run([vmtrace, "record", "-p", str(pid), "-d", "0.2", "-o", os.path.join(tmp, "t.data"),
                            "--force"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and "is traced already" in r.stderr and "own probes" in r.stderr,
              f"{runtime} traced: recorded by its own probes, and why: {r.stderr.strip()[-300:]}")
        line = [l for l in r.stderr.splitlines() if "is traced already" in l]
        check(len(line) == 1, f"{runtime} traced: said in one line: {line}")
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
        out = p.communicate("\n", timeout=120)
        check(p.returncode == 0 and out[0].endswith(" bad 0\n"), f"{runtime} traced: the program ends well: {out}")
    finally:
        p.kill()
        p.wait()


def case_nodebug(vmtrace, tmp):
    root = prepare(vmtrace, tmp, "py3.14")
    inside = vv.place(root, os.path.join(WORKLOADS, "attach_busy.py"))
    p = vv.container(root, ["env", "PYTHON_DISABLE_REMOTE_DEBUG=1", "python3.14", inside], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid = vv.host_pid(p, "python3.14")
        check(p.stdout.readline() == "ready\n", "py3.14 nodebug: the workload started")
        r = subprocess.run([vmtrace, "record", "-p", str(pid), "-d", "0.2", "-o", os.path.join(tmp, "n.data"),
                            "--force"], capture_output=True, text=True, timeout=60)
        why = [l for l in r.stderr.splitlines() if "remote debugging off" in l]
        check(r.returncode == 0 and len(why) == 1 and "own probes" in why[0] and "(python probes" in r.stderr,
              f"py3.14 nodebug: recorded by its own probes, one line on why: {r.stderr.strip()}")
        check("vmtrace.cpython" not in open(f"/proc/{pid}/maps").read(), "py3.14 nodebug: nothing loaded into it")
        out = p.communicate("\n", timeout=120)
        check(p.returncode == 0 and out[0].endswith(" bad 0\n") and out[1] == "",
              f"py3.14 nodebug: the program ends as its own: {out}")
    finally:
        p.kill()
        p.wait()


def case_offsets(vmtrace, tmp):
    root = vv.os.path.join(vv.ROOTS, "sid")
    if not os.path.exists(root + "/usr/include/python3.14/internal/pycore_debug_offsets.h"):
        print(f"skipped: no python3.14 headers in {root} (scripts/matrix/roots.sh sid)")
        sys.exit(77)
    src = os.path.join(HERE, "..", "..", "consumer", "src", "runtimes", "python", "python_debug_rows.h")
    os.makedirs(root + pv.INSIDE + "/inc/runtimes/python", exist_ok=True)
    subprocess.run(["cp", src, root + pv.INSIDE + "/inc/runtimes/python/"], check=True)
    subprocess.run(["cp", os.path.join(HERE, "python", "python_debug_check.c"), root + pv.INSIDE], check=True)
    cmd = (f"gcc -DPy_BUILD_CORE -I/usr/include/python3.14 -I{pv.INSIDE}/inc -o {pv.INSIDE}/check "
           f"{pv.INSIDE}/python_debug_check.c && {pv.INSIDE}/check")
    p = vv.container(root, ["sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.communicate(timeout=120)[0].strip())
    check(p.returncode == 0, "py3.14: the debug offsets' row agrees with its headers")


CASES = {"py3.14-nodebug": case_nodebug, "py3.14-offsets": case_offsets}
for _r in RUNTIMES:
    CASES[f"{_r}-exact"] = lambda vmtrace, tmp, r=_r: case_exact(vmtrace, tmp, r)
    CASES[f"{_r}-cycles"] = lambda vmtrace, tmp, r=_r: case_cycles(vmtrace, tmp, r)
for _r in ("ruby3.1", "py3.11"):
    CASES[f"{_r}-traced"] = lambda vmtrace, tmp, r=_r: case_traced(vmtrace, tmp, r)

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
