#!/usr/bin/python3.11
"""Integration tests: `vmtrace record -- COMMAND` where COMMAND is no runtime
itself but starts one (session/follow.c): a shim that execs python3.11 (as
pyenv's and rbenv's do), a wrapper script that runs ruby as a child, env(1),
and a command that never runs a runtime. Counts are known by construction:
each program makes N objects of a class of its own.

Usage: follow_test.py VMTRACE CASE
Cases: follow-exec-shim, follow-child-wrapper, follow-env, follow-none.
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import subprocess
import sys

import runtime_test as rt
from runtime_test import check, report

PY_PROGRAM = "class Made: pass\nkeep = [Made() for _ in range(4321)]\n"
RB_PROGRAM = "class Made; end; keep = Array.new(3210) { Made.new }"


def script(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def record(vmtrace, tmp, argv):
    data = os.path.join(tmp, "follow.data")
    if os.path.exists(data):
        os.unlink(data)
    r = subprocess.run([vmtrace, "record", "-o", data, "--", *argv], capture_output=True,
                       text=True, timeout=120)
    return r, data


def made(vmtrace, data):
    j = report(vmtrace, data)
    return j, sum(a["count"] for a in j["allocations"] if a["class"] == "Made")


def case_follow_exec_shim(vmtrace, tmp):
    """A shim that execs the interpreter (one pid throughout)."""
    shim = script(tmp, "python3", f'#!/bin/sh\nexec {rt.PYTHON} "$@"\n')
    r, data = record(vmtrace, tmp, [shim, "-c", PY_PROGRAM])
    check(r.returncode == 0, f"shim: vmtrace exits 0: {r.stderr.strip()[-300:]}")
    check(f"followed `{shim} -c" in r.stderr and f": {rt.PYTHON} -c" in r.stderr,
          f"shim: stderr names the process followed to: {r.stderr.strip()[-300:]}")
    j, n = made(vmtrace, data)
    check(j["runtime"] == "python", f"shim: runtime python: {j['runtime']}")
    check(j["target"].startswith(rt.PYTHON + " -c"), f"shim: the report names python: {j['target']}")
    check(n == 4321, f"shim: Made objects: vmtrace {n} == made 4321")


def case_follow_child_wrapper(vmtrace, tmp):
    """A wrapper that runs ruby as a child, then more: the recording ends
    with the command, whose exit status is vmtrace's."""
    wrap = script(tmp, "wrap", f'#!/bin/bash\n{rt.RUBY} "$@"\necho wrapper-after-ruby\nexit 3\n')
    r, data = record(vmtrace, tmp, [wrap, "-e", RB_PROGRAM])
    check(r.returncode == 3, f"wrapper: vmtrace exits with the command's 3: {r.returncode}: "
          f"{r.stderr.strip()[-300:]}")
    check("wrapper-after-ruby" in r.stdout, "wrapper: the command ran to its end")
    pid = json.loads(json.dumps(report(vmtrace, data)))["pid"]
    check(f"followed `{wrap} -e" in r.stderr and f"to pid {pid}: {rt.RUBY} -e" in r.stderr,
          f"wrapper: stderr names ruby's pid {pid}: {r.stderr.strip()[-300:]}")
    j, n = made(vmtrace, data)
    check(j["runtime"] == "vmtrace", f"wrapper: the Ruby extension's probes: {j['runtime']}")
    check(n == 3210, f"wrapper: Made objects: vmtrace {n} == made 3210")


def case_follow_env(vmtrace, tmp):
    """env(1), an ELF program with no probes, exec'ing ruby."""
    r, data = record(vmtrace, tmp, ["env", "VMTRACE_FOLLOW_TEST=1", rt.RUBY, "-e", RB_PROGRAM])
    check(r.returncode == 0, f"env: vmtrace exits 0: {r.stderr.strip()[-300:]}")
    j, n = made(vmtrace, data)
    check(j["runtime"] == "vmtrace" and n == 3210,
          f"env: the Ruby extension's probes ({j['runtime']}), Made objects {n} == 3210")


def case_follow_none(vmtrace, tmp):
    """A command that never runs a runtime: one line naming what it ran."""
    none = script(tmp, "none", "#!/bin/sh\n/bin/true\nexit 0\n")
    r, data = record(vmtrace, tmp, [none])
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1, f"none: vmtrace exits 1: {r.returncode}")
    check(len(lines) == 1 and lines[0].startswith(f"vmtrace: {none} ran no program with vmtrace "
                                                  "probes nor those of a known runtime (it ran: ")
          and "true" in lines[0], f"none: one line naming the programs it ran: {lines}")
    check(not os.path.exists(data), "none: no record written")


CASES = {"follow-exec-shim": case_follow_exec_shim,
         "follow-child-wrapper": case_follow_child_wrapper,
         "follow-env": case_follow_env, "follow-none": case_follow_none}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
