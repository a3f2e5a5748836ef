#!/usr/bin/python3.11
"""A prefork server's master attached by pid (workloads/prefork.rb, a Ruby,
and prefork.py, a CPython, each loading vmtrace and forking its workers),
with and without --children.

  children-hint   record -p MASTER alone: the master's own counts, and one
                  line saying how many processes are below it and that
                  --children takes them
  children-ruby   record -p MASTER --children: each worker's Foo objects
                  under its own pid, exactly (1000, 2000), the master's Bar
                  under its pid only (500), and a worker forked while
                  recording found, said to be late by a figure, and counted
                  exactly from there (3000)
  children-serve  serve -p MASTER --children: /metrics has each process's
                  Foo and Bar series under its own pid, exact, the late
                  worker's too; top -p MASTER --children names them in its
                  header
  children-python the same shape in CPython 3.11 with vmtrace's extension:
                  at the line that makes the objects, each process's own
                  Foo or Bar objects under its pid, exactly (500, 1000,
                  2000, 3000)

Usage: children_test.py VMTRACE CASE
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import runtime_test as rt
from runtime_test import check

HERE = os.path.dirname(os.path.abspath(__file__))
PREFORK_RB = os.path.join(HERE, "workloads", "prefork.rb")
PREFORK_PY = os.path.join(HERE, "workloads", "prefork.py")


class Server:
    def __init__(self, vmtrace, runtime="ruby"):
        lib = os.path.realpath(os.path.join(os.path.dirname(vmtrace), "..", "lib", runtime))
        if runtime == "ruby":
            argv, env = ["/usr/bin/ruby", "-I", lib, "-rvmtrace", PREFORK_RB], None
        else:
            argv, env = [rt.PYTHON, PREFORK_PY], dict(os.environ, PYTHONPATH=lib)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
        self.done = set()  # the processes that said "done PID", in any order
        self.workers = [int(p) for p in self.expect("workers ").split()[1:]]
        self.pid = int(self.expect("ready ").split()[1])

    def expect(self, prefix):
        for line in self.proc.stdout:
            if line.startswith("done "):
                self.done.add(int(line.split()[1]))
            if line.startswith(prefix):
                return line.strip()
        raise SystemExit(f"prefork.rb ended before printing {prefix!r}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


def wait_for(errpath, text, rec, what):
    for _ in range(400):
        with open(errpath) as f:
            if text in f.read():
                return
        if rec.poll() is not None:
            raise SystemExit(f"vmtrace record ended before {what}: " + open(errpath).read())
        time.sleep(0.05)
    raise SystemExit(f"vmtrace record: no {what}: " + open(errpath).read())


def counts(j):
    """{(pid, class): count} of the report's rows."""
    out = {}
    for a in j["allocations"]:
        key = (a.get("pid"), a["class"])
        out[key] = out.get(key, 0) + a["count"]
    return out


def case_hint(vmtrace, tmp):
    srv = Server(vmtrace)
    try:
        r = subprocess.run([vmtrace, "record", "-p", str(srv.pid), "-d", "0.5", "-o",
                            os.path.join(tmp, "m.data")], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"record -p MASTER exits 0: {r.stderr[-300:]}")
        says = [l for l in r.stderr.splitlines() if "below it" in l]
        check(len(says) == 1 and f"pid {srv.pid} has 2 processes below it" in says[0] and
              f"-p {srv.pid} --children" in says[0] and all(str(w) in says[0] for w in srv.workers),
              f"one line names the master's two workers and --children: {says}")
    finally:
        srv.stop()


def record_tree(vmtrace, tmp, srv, comm):
    """record -p MASTER --children while every worker and the master make
    their objects and the master forks one more: the record file and the
    late worker's pid."""
    data, errpath = os.path.join(tmp, "tree.data"), os.path.join(tmp, "rec.err")
    try:
        with open(errpath, "w") as err:
            rec = subprocess.Popen([vmtrace, "record", "-p", str(srv.pid), "--children", "-o", data,
                                    "--report-file", os.path.join(tmp, "rep.txt")],
                                   stdout=subprocess.DEVNULL, stderr=err)
        wait_for(errpath, "vmtrace: recording 3 processes", rec, "its three processes")
        for w in srv.workers:
            os.kill(w, signal.SIGUSR1)
        os.kill(srv.pid, signal.SIGUSR1)
        late = int(srv.expect("forked ").split()[1])
        wait_for(errpath, f"pid {late} ({comm}): a new child, recorded from", rec, "the new worker")
        os.kill(late, signal.SIGUSR2)
        while len(srv.done) < 4:
            srv.expect("done ")
        time.sleep(0.5)
        rec.send_signal(signal.SIGINT)
        rec.wait(timeout=60)
        stderr = open(errpath).read()
        check(rec.returncode == 0, f"record --children exits 0: {stderr[-400:]}")
        lines = [l for l in stderr.splitlines() if "a new child, recorded from" in l]
        check(len(lines) == 1 and " ms after it started" in lines[0],
              f"the late worker, with how late: {lines}")
        return data, late
    finally:
        srv.stop()


def case_ruby(vmtrace, tmp):
    srv = Server(vmtrace)
    data, late = record_tree(vmtrace, tmp, srv, "ruby")
    c = counts(rt.report(vmtrace, data))
    a, b = srv.workers
    want = {(a, "Foo"): 1000, (b, "Foo"): 2000, (late, "Foo"): 3000, (srv.pid, "Bar"): 500}
    got = {k: c.get(k, 0) for k in want}
    check(got == want, f"each process's own counts, exactly: {got}, want {want}")
    check(not c.get((srv.pid, "Foo")) and not any(c.get((w, "Bar")) for w in (a, b, late)),
          f"no process counts another's: master Foo {c.get((srv.pid, 'Foo'))}")


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def case_serve(vmtrace, tmp):
    srv = Server(vmtrace)
    errpath = os.path.join(tmp, "serve.err")
    try:
        with open(errpath, "w") as err:
            serve = subprocess.Popen([vmtrace, "serve", "-p", str(srv.pid), "--children", "--sample", "0",
                                      "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=err)
        wait_for(errpath, "/metrics", serve, "its address")
        url = re.search(r"at (http://\S+/metrics)", open(errpath).read()).group(1)
        for w in srv.workers:
            os.kill(w, signal.SIGUSR1)
        os.kill(srv.pid, signal.SIGUSR1)
        late = int(srv.expect("forked ").split()[1])
        wait_for(errpath, f"pid {late} (ruby): a new child, recorded from", serve, "the new worker")
        os.kill(late, signal.SIGUSR2)
        while len(srv.done) < 4:
            srv.expect("done ")
        a, b = srv.workers
        want = {(a, "Foo"): 1000, (b, "Foo"): 2000, (late, "Foo"): 3000, (srv.pid, "Bar"): 500}
        got = {}
        for _ in range(30):  # the processes hand over their counts within a flush round
            got = {}
            for m in re.finditer(r'^vmtrace_allocations_total\{[^}]*pid="(\d+)"[^}]*class="(\w+)"'
                                 r'[^}]*\} (\d+)$', scrape(url), re.M):
                key = (int(m.group(1)), m.group(2))
                got[key] = got.get(key, 0) + int(m.group(3))
            if all(got.get(k) == n for k, n in want.items()):
                break
            time.sleep(0.2)
        check({k: got.get(k, 0) for k in want} == want,
              f"serve: each process's own series, exactly: {({k: got.get(k, 0) for k in want})}")
        serve.send_signal(signal.SIGINT)
        check(serve.wait(timeout=60) == 0, "serve: ends at SIGINT with 0")
        top = subprocess.run([vmtrace, "top", "-p", str(srv.pid), "--children", "-n", "1", "-i", "0.5"],
                             capture_output=True, text=True, timeout=60)
        check(top.returncode == 0 and
              f"pid {srv.pid} and the processes below it (4 recorded)" in top.stdout,
              f"top: the master and its three workers: {top.stdout[:200]!r} {top.stderr[-200:]!r}")
    finally:
        srv.stop()


def case_python(vmtrace, tmp):
    with open(PREFORK_PY) as f:
        line = next(i for i, l in enumerate(f, 1) if "# FOO_LINE" in l)
    srv = Server(vmtrace, "python")
    data, late = record_tree(vmtrace, tmp, srv, "python3.11")
    site = f"{PREFORK_PY}:{line}"
    got = {}
    for r in rt.report(vmtrace, data, "--by", "pid,site")["allocations"]:
        if r.get("site") == site and r["class"] in ("Foo", "Bar"):
            key = (r["pid"], r["class"])
            got[key] = got.get(key, 0) + r["count"]
    a, b = srv.workers
    made = {(srv.pid, "Bar"): 500, (a, "Foo"): 1000, (b, "Foo"): 2000, (late, "Foo"): 3000}
    check(got == made, f"each process's own objects at the line, by class, exactly: {got} == {made}")


CASES = {"children-hint": case_hint, "children-ruby": case_ruby, "children-serve": case_serve,
         "children-python": case_python}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
