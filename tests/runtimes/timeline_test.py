#!/usr/bin/python3.11
"""Integration tests: stock Ruby's and CPython's GC pauses on the timeline.
A workload collects on known threads (workloads/gc_threads.rb, .py) and
says which; the record's gc_pause lines must carry those threads and
starts that follow the workload's order, and `--format perfetto` of the
record must pass tests/export/perfetto_check.py.

Usage: timeline_test.py VMTRACE CASE   (CASE: ruby, python)
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import subprocess
import sys

import runtime_test as rt

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "..", "export", "perfetto_check.py")


def pauses(data):
    """(kind, at_ns, duration_ns, tid) of each gc_pause line, in order."""
    out = []
    with open(data, encoding="latin-1") as f:
        for line in f:
            w = line.split()
            if w[0] == "gc_pause":
                out.append((int(w[1]), int(w[6]), int(w[2]), int(w[7])))
    return out


def record(vmtrace, argv, tmp):
    data, out = rt.record_spawn(vmtrace, argv, tmp)
    said = [json.loads(l) for l in out if l.startswith("{")]
    rt.check(len(said) == 1, f"the workload says its threads: {said}")
    return data, said[0] if said else {}


def perfetto(vmtrace, data, tmp, what):
    trace = os.path.join(tmp, "trace.json")
    with open(trace, "w") as f:
        r = subprocess.run([vmtrace, "report", data, "--format", "perfetto"], stdout=f,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    rt.check(r.returncode == 0, f"{what}: report --format perfetto exits 0: {r.stderr.strip()}")
    r = subprocess.run([sys.executable, CHECKER, trace, data, "--all-timed"],
                       capture_output=True, text=True, timeout=60)
    rt.check(r.returncode == 0, f"{what}: the perfetto trace agrees with the record: "
             + r.stderr.strip()[-600:])


def case_python(vmtrace, tmp):
    data, said = record(vmtrace, [rt.PYTHON, os.path.join(HERE, "workloads", "gc_threads.py")],
                        tmp)
    ps = pauses(data)
    pid_tids = {p[3] for p in ps}
    main, worker = said["main"]["tid"], said["worker"]["tid"]
    rt.check(0 not in pid_tids, f"python: every pause has its thread ({sorted(pid_tids)})")
    on_worker = [p for p in ps if p[3] == worker]
    rt.check([p[0] for p in on_worker] == said["worker"]["generations"],
             f"python: the worker thread's pauses are its gc.collect(2)s: {on_worker}")
    # automatic collection is off: the main thread's two gc.collect(0) come
    # right before the worker's, and each pause starts after the one before ended
    last = max(i for i, p in enumerate(ps) if p[3] == worker) if on_worker else 0
    seq = ps[last - 4:last + 1]
    rt.check([(p[0], p[3]) for p in seq] == [(0, main)] * 2 + [(2, worker)] * 3,
             f"python: two gen0 on main then three gen2 on the worker: {seq}")
    rt.check(all(b[1] >= a[1] + a[2] for a, b in zip(seq, seq[1:])),
             f"python: each of them starts after the previous ended: {seq}")
    rt.check(all(0 <= p[1] for p in ps), "python: every start lies after recording began")
    perfetto(vmtrace, data, tmp, "python")


def case_ruby(vmtrace, tmp):
    data, said = record(vmtrace, [rt.RUBY, os.path.join(HERE, "workloads", "gc_threads.rb")],
                        tmp)
    ps = pauses(data)
    worker = said["worker"]["tid"]
    rt.check(0 not in {p[3] for p in ps}, "ruby: every pause has its thread")
    marks = [p for p in ps if p[3] == worker and p[0] == 0]
    sweeps = [p for p in ps if p[3] == worker and p[0] == 1]
    rt.check(len(marks) == said["worker"]["starts"],
             f"ruby: one mark phase per GC.start on the worker thread {worker}: {marks}")
    rt.check(len(sweeps) >= said["worker"]["starts"],
             f"ruby: sweep phases on the worker thread too: {sweeps}")
    # GC is disabled: nothing else collects after the first GC.start began
    first = min(p[1] for p in marks) if marks else 0
    later = [p for p in ps if p[1] >= first and p[3] != worker]
    rt.check(not later, f"ruby: no pause on another thread once the worker collects: {later}")
    rt.check(all(0 <= p[1] for p in ps), "ruby: every start lies after recording began")
    perfetto(vmtrace, data, tmp, "ruby")


CASES = {"ruby": case_ruby, "python": case_python}


if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
