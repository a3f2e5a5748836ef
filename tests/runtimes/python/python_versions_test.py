#!/usr/bin/python3.11
"""The version matrix's CPythons: Debian 13's 3.13 (trixie) and unstable's
3.14 (sid), each in a root made by scripts/matrix/roots.sh and entered as a
container (its own mount and pid namespaces), with vmtrace's CPython
extension installed by pip from the source distribution built here
(provider/python/sdist, `make vmtrace_sdist`), compiled against that
version's headers, its frames read as that version lays them out
(provider/python/src/frames.h). Traced from the host by pid.

  PY-sdist    pip install --no-index --no-build-isolation of the sdist in
              the container; `import vmtrace` is dormant
  PY-lines    workloads/py_lines.py by host pid: the bytes and allocations
              at its kept line equal tracemalloc's snapshot there
  PY-stack    --stack vm by host pid on workloads/py_stacks.py (run by a
              wrapper that waits to be armed): each call path with the
              objects its construction says
  PY-live     --live by host pid on workloads/py_leak.py: the leak held, the
              freed line's objects temporaries
  PY-sampled  workloads/py_sampled.py by host pid, exact and --sample 64K:
              each line's count and bytes as constructed, sampled within 5%
  PY-types    workloads/py_types.py by host pid: each class's objects under
              their type, function and line, as many as the collector finds,
              each of sys.getsizeof bytes
  PY-follow   record -- a command that enters the container (unshare and
              chroot; nsenter into a running one's namespaces) and starts
              that CPython, which never asked for vmtrace: it imports the
              package of its root, workloads/py_spawn.py's kept line equal
              to tracemalloc's snapshot; its environment its own

Usage: python_versions_test.py VMTRACE CASE
Roots in $VMTRACE_ROOTS (default /var/cache/vmtrace/roots).
Exit 0 pass, 1 fail, 77 skip (not root, or the root not made).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import ext_test
import runtime_test as rt
from runtime_test import check, report
from versions_test import ROOTS, container, host_pid

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
# runtime -> its root's suite
PYTHONS = {"py3.13": ("trixie", "python3.13"), "py3.14": ("sid", "python3.14")}
INSIDE = "/tmp/vmtrace-py-test"
# waits until a tracer armed the extension, then runs the script as __main__
ARMED_THEN_RUN = ("import runpy, sys, time, vmtrace\n"
                  "print('ready', flush=True)\n"
                  "while not vmtrace.armed(): time.sleep(0.001)\n"
                  "sys.argv = sys.argv[1:]\n"
                  "runpy.run_path(sys.argv[0], run_name='__main__')\n"
                  "print('done', flush=True)\n"
                  "sys.stdin.readline()\n")


def root_of(runtime):
    suite, python = PYTHONS[runtime]
    root = os.path.join(ROOTS, suite)
    if not os.path.exists(os.path.join(root, "usr/bin", python)) or \
            not os.path.exists(os.path.join(root, f"usr/include/{python}/Python.h")):
        print(f"skipped: no {python} with its headers in {root} (scripts/matrix/roots.sh {suite})")
        sys.exit(77)
    return root


def install(vmtrace, tmp, runtime):
    """The sdist built and pip-installed in the container; the root."""
    root = root_of(runtime)
    python = PYTHONS[runtime][1]
    build = os.path.dirname(os.path.dirname(vmtrace))
    script = os.path.join(RUNTIMES, "..", "..", "provider", "python", "sdist", "build-sdist.sh")
    r = subprocess.run([script, os.path.join(build, "generated"), tmp], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"{runtime}: sdist built: {r.stderr.strip()[-300:]}")
    sdist = r.stdout.strip().splitlines()[-1]
    shutil.rmtree(root + INSIDE, ignore_errors=True)
    os.makedirs(root + INSIDE)
    shutil.copy(sdist, root + INSIDE)
    for w in ("py_lines.py", "py_stacks.py", "py_leak.py", "py_sampled.py", "py_types.py", "py_spawn.py"):
        shutil.copy(os.path.join(RUNTIMES, "workloads", w), root + INSIDE)
    p = container(root, [python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                         "--break-system-packages", "--force-reinstall", "--root-user-action=ignore", "-q",
                         f"{INSIDE}/{os.path.basename(sdist)}"],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=600)[0]
    check(p.returncode == 0, f"{runtime}: pip install of the sdist in the container: {out.strip()[-400:]}")
    return root


def case_sdist(vmtrace, tmp, runtime):
    root = install(vmtrace, tmp, runtime)
    p = container(root, [PYTHONS[runtime][1], "-c", "import vmtrace; print(vmtrace.armed(), vmtrace.__file__)"],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=60)[0].split()
    tag = "cpython-" + PYTHONS[runtime][1][6:].replace(".", "")
    check(p.returncode == 0 and out[0] == "False" and tag in out[1],
          f"{runtime}: imported, dormant, built for that version: {out}")


def start(root, runtime, argv):
    outer = container(root, [PYTHONS[runtime][1], *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      text=True)
    # a workload left waiting (its tracer failed) ends, and the reads on it fail
    timer = threading.Timer(300, outer.kill)
    timer.daemon = True
    timer.start()
    # by the version's own name: the test's python3.11 forks the outer
    return outer, host_pid(outer, PYTHONS[runtime][1])


def record(vmtrace, tmp, pid, name, extra=()):
    data, err = os.path.join(tmp, name + ".data"), os.path.join(tmp, name + ".err")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "-o", data, *extra],
                               stdout=subprocess.DEVNULL, stderr=ef)
    return rec, data, err


def stop(rec, err, mode):
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    check(rc == 0, f"{mode}: record exits 0 ({rc}): {open(err).read().strip()[-300:]}")


def case_lines(vmtrace, tmp, runtime):
    root = install(vmtrace, tmp, runtime)
    outer, pid = start(root, runtime, [f"{INSIDE}/py_lines.py"])
    try:
        check(outer.stdout.readline().strip() == "ready", f"{runtime} lines: the workload imported vmtrace")
        rec, data, err = record(vmtrace, tmp, pid, "lines")
        truth = json.loads(outer.stdout.readline())
        stop(rec, err, f"{runtime} lines")
        check(outer.wait(timeout=60) == 0, f"{runtime} lines: the workload ends once the tracer left")
    finally:
        outer.kill()
        outer.wait()
    j = report(vmtrace, data, "--by", "site")
    site = f"{truth['file']}:{truth['line']}"
    rows = [a for a in j["allocations"] if a["site"] == site]
    got = (sum(a["count"] for a in rows), sum(a["bytes"] for a in rows))
    check(j["runtime"] == "vmtrace" and truth["count"] == 2000 and got == (truth["count"], truth["bytes"]),
          f"{runtime} lines: {site}: vmtrace {got} == tracemalloc's {(truth['count'], truth['bytes'])}")
    check(all(a["method"] == "make" for a in rows), f"{runtime} lines: in make: {rows[:2]}")


def case_follow(vmtrace, tmp, runtime):
    root = install(vmtrace, tmp, runtime)
    python = PYTHONS[runtime][1]
    holder = container(root, ["sleep", "600"])
    ns = host_pid(holder, "sleep")
    # what the program sees of PYTHONPATH, then the workload as __main__
    show_then_run = ("import os, runpy, sys\n"
                     "print('PYTHONPATH=' + repr(os.environ.get('PYTHONPATH')), flush=True)\n"
                     "sys.argv = sys.argv[1:]\n"
                     "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    try:
        entries = {
            "unshare+chroot": ["unshare", "--mount", "--pid", "--fork", f"--mount-proc={root}/proc", "chroot",
                               root],
            "nsenter": ["nsenter", "-t", str(ns), "-m", "-p", "-r", "-w"],
        }
        for how, enter in entries.items():
            mode = f"{runtime} followed through {how}"
            data = os.path.join(tmp, "follow.data")
            r = subprocess.run([vmtrace, "record", "-o", data, "--force", "--", *enter, python, "-c", show_then_run,
                                f"{INSIDE}/py_spawn.py"], capture_output=True, text=True, timeout=300)
            check(r.returncode == 0 and "never loaded" not in r.stderr,
                  f"{mode}: record exits 0, the package imported: {r.stderr.strip()[-300:]}")
            check(r.stdout.startswith("PYTHONPATH=None\n"), f"{mode}: the program sees its own environment: "
                  f"{r.stdout.splitlines()[:1]}")
            said = [l for l in r.stdout.splitlines() if l.startswith('{"file"')]
            truth = json.loads(said[-1]) if said else {"file": "", "line": 0, "bytes": -1, "count": -1}
            j = report(vmtrace, data, "--by", "site")
            site = f"{truth['file']}:{truth['line']}"
            rows = [a for a in j["allocations"] if a["site"] == site]
            got = (sum(a["count"] for a in rows), sum(a["bytes"] for a in rows))
            check(j["runtime"] == "vmtrace" and truth["count"] == 2000 and got == (truth["count"], truth["bytes"]),
                  f"{mode}: {site}: vmtrace {got} == tracemalloc's {(truth['count'], truth['bytes'])}")
    finally:
        os.kill(ns, signal.SIGKILL)  # the namespace's first process: the rest go with it
        holder.wait()


def armed_run(vmtrace, tmp, runtime, script, name, extra=(), printed=None):
    """script run by ARMED_THEN_RUN in the container, recorded by host pid
    from before it starts to its end; the record's path. What the script
    printed goes into the list printed, when given."""
    root = install(vmtrace, tmp, runtime)
    outer, pid = start(root, runtime, ["-c", ARMED_THEN_RUN, f"{INSIDE}/{script}"])
    try:
        check(outer.stdout.readline().strip() == "ready", f"{runtime} {name}: the wrapper imported vmtrace")
        rec, data, err = record(vmtrace, tmp, pid, name, extra)
        line = outer.stdout.readline().strip()
        while line and line != "done":
            if printed is not None:
                printed.append(line)
            line = outer.stdout.readline().strip()
        check(line == "done", f"{runtime} {name}: the workload ran")
        stop(rec, err, f"{runtime} {name}")
        outer.communicate("\n", timeout=60)
    finally:
        outer.kill()
        outer.wait()
    return data


def case_stack(vmtrace, tmp, runtime):
    data = armed_run(vmtrace, tmp, runtime, "py_stacks.py", "stack", ["--stack", "vm"])
    rows = {}
    for a in report(vmtrace, data, "--by", "stack")["allocations"]:
        # below the wrapper's runpy frames: the script's own <module> on
        path = a["stack"][a["stack"].rfind("<module>"):]
        rows[path] = rows.get(path, 0) + a["count"]
    # each leaf() call: 200 bytes objects, and its loop's range and iterator
    # (ext_test.case_py_stacks), which 3.14 takes from free lists (ranges,
    # range_iters in its internal/pycore_freelist_state.h): no allocation
    per_call = 200 if runtime == "py3.14" else 202
    want = {"<module>;top;mid;leaf": per_call, "<module>;top;leaf": per_call,
            "<module>;other;mid;leaf": 2 * per_call}
    for path, n in want.items():
        check(rows.get(path) == n, f"{runtime} stack: {path}: {rows.get(path)} == {n}")
    check(not [k for k in rows if k.endswith(";leaf") and k not in want],
          f"{runtime} stack: no other path to leaf: {[k for k in rows if k.endswith(';leaf')]}")


def case_live(vmtrace, tmp, runtime):
    root = install(vmtrace, tmp, runtime)
    outer, pid = start(root, runtime, [f"{INSIDE}/py_leak.py"])
    try:
        check(outer.stdout.readline().strip() == "ready", f"{runtime} live: the workload imported vmtrace")
        rec, data, err = record(vmtrace, tmp, pid, "live", ["--live"])
        check(outer.stdout.readline().strip() == "done", f"{runtime} live: the workload leaked")
        stop(rec, err, f"{runtime} live")
        outer.communicate("bye\n", timeout=60)
    finally:
        outer.kill()
        outer.wait()
    j = report(vmtrace, data, "--by", "site")
    rows = {r["site"]: r for r in j["live"]["rows"]}
    with open(os.path.join(RUNTIMES, "workloads", "py_leak.py")) as f:
        text = f.read().splitlines()
    lines = {m: next(i for i, l in enumerate(text, 1) if m in l) for m in ("LEAK_LINE", "TEMP_LINE")}
    leak = rows.get(f"{INSIDE}/py_leak.py:{lines['LEAK_LINE']}", {})
    temp = rows.get(f"{INSIDE}/py_leak.py:{lines['TEMP_LINE']}", {})
    check((leak.get("count"), leak.get("bytes")) == (1000, 1033000),
          f"{runtime} live: the leaking line holds 1000 objects, 1033000 bytes: {leak}")
    check(temp.get("count", 0) == 0 and temp.get("temp_count") == 5000,
          f"{runtime} live: the freed line holds nothing, 5000 temporaries: {temp}")


def case_sampled(vmtrace, tmp, runtime):
    runs = {mode: armed_run(vmtrace, tmp, runtime, "py_sampled.py", mode, extra)
            for mode, extra in (("exact", []), ("sampled", ["--sample", "64K"]))}
    script = f"{INSIDE}/py_sampled.py"
    with open(ext_test.PY_SAMPLED) as f:
        text = f.read().splitlines()
    for marker, count, size in (("SMALL_LINE", 3_000_000, 133), ("BIG_LINE", 100_000, 10033)):
        site = f"{script}:{next(i for i, l in enumerate(text, 1) if marker in l)}"
        for mode in ("exact", "sampled"):
            rows = [a for a in report(vmtrace, runs[mode], "--by", "site")["allocations"] if a["site"] == site]
            n, b = sum(a["count"] for a in rows), sum(a["bytes"] for a in rows)
            if mode == "exact":
                check((n, b) == (count, count * size), f"{runtime} exact: {marker}: {(n, b)} == "
                      f"{(count, count * size)}")
            else:
                check(abs(n - count) <= 0.05 * count and abs(b - count * size) <= 0.05 * count * size,
                      f"{runtime} sampled: {marker}: {n} objects, {b} bytes within 5% of {count}, "
                      f"{count * size}")


def case_types(vmtrace, tmp, runtime):
    printed = []
    data = armed_run(vmtrace, tmp, runtime, "py_types.py", "types", printed=printed)
    ext_test.check_types(vmtrace, data, json.loads(printed[-1]), f"{INSIDE}/py_types.py", runtime)


CASES = {}
for _py in PYTHONS:
    for _name, _fn in (("sdist", case_sdist), ("lines", case_lines), ("stack", case_stack), ("live", case_live),
                       ("sampled", case_sampled), ("types", case_types), ("follow", case_follow)):
        CASES[f"{_py}-{_name}"] = lambda vmtrace, tmp, p=_py, f=_fn: f(vmtrace, tmp, p)

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
