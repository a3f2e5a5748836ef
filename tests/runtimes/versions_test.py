#!/usr/bin/python3.11
"""The version matrix: vmtrace on the runtimes of other Debian releases,
each in a root made by scripts/matrix/roots.sh and entered as a container
(its own mount and pid namespaces), traced from the host.

  RUBY-gem     (ruby3.3: Debian 13's; ruby3.4: experimental's, in a sid root)
               the gem built here installs offline with `gem install
               --local` in the container, compiled against that Ruby's
               headers, its layout row checked against that Ruby's source
               there (VMTRACE_RUBY_SOURCE); required, it is dormant
  RUBY-pid     a Ruby in the container that required the gem (installed as
               above), recorded by its host pid: per class equal to
               ObjectSpace's counts on workloads/objects.rb, Point and Wide
               in their method, Wide's bytes its slot's
               (ObjectSpace.memsize_of); its hooks off once the recording
               ended; the report gives the host's pid

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

import ext_test
import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOTS = os.environ.get("VMTRACE_ROOTS", "/var/cache/vmtrace/roots")
# runtime -> (suite, its command in the root, its gem command, the source of its layout check)
RUBIES = {"ruby3.3": ("trixie", "ruby3.3", "gem3.3", "/usr/src/ruby3.3/ruby3.3-*"),
          "ruby3.4": ("sid", "ruby3.4", "gem3.4", "/usr/src/ruby3.4/ruby3.4-*")}
INSIDE = "/tmp/vmtrace-test"  # the test's files, inside the root


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
    script = os.path.join(HERE, "..", "..", "provider", "ruby", "gem", "build-gem.sh")
    r = subprocess.run([script, os.path.join(build, "generated"), tmp], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0, f"{runtime}: gem build offline: {r.stderr.strip()[-300:]}")
    gem = place(root, os.path.join(tmp, "vmtrace.gem"))
    source = glob.glob(root + RUBIES[runtime][3])
    check(len(source) == 1, f"{runtime}: the root holds Ruby's source for the layout check: {source}")
    env = ["env", f"VMTRACE_RUBY_SOURCE={source[0][len(root):]}"] if source else []
    p = container(root, [*env, RUBIES[runtime][2], "install", "--local", "--no-document", gem],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=600)[0]
    check(p.returncode == 0, f"{runtime}: gem install --local in the container: {out.strip()[-400:]}")
    return root


def case_gem(vmtrace, tmp, runtime="ruby3.3"):
    root = install_gem(vmtrace, tmp, runtime)
    p = container(root, [RUBIES[runtime][1], "-e", 'require "vmtrace"; puts Vmtrace.armed?.inspect; '
                         'puts $LOADED_FEATURES.grep(/vmtrace_ext/)[0]'],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=60)[0].split("\n")
    check(p.returncode == 0 and out[0] == "false" and "/gems/" in out[1],
          f"{runtime}: required in the container, dormant: {out}")


def case_pid(vmtrace, tmp, runtime="ruby3.3"):
    root = install_gem(vmtrace, tmp, runtime)
    workload = place(root, rt.OBJECTS_RB)
    data = os.path.join(tmp, "pid.data")
    err = os.path.join(tmp, "rec.err")
    outer = container(root, ["env", "RUBYOPT=-rvmtrace", RUBIES[runtime][1], workload, "--armed",
                             "--wait-detach"], stdout=subprocess.PIPE, text=True)
    pid = host_pid(outer, "ruby")
    wait_mapped(pid, "vmtrace_ext.so")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "-o", data],
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
    j = ext_test.check_objects(vmtrace, data, truth, f"{runtime} pid")
    check(j["pid"] == pid, f"{runtime} pid: the report gives the host's pid {pid}: {j['pid']}")


CASES = {}
for _ruby in RUBIES:
    CASES[f"{_ruby}-gem"] = lambda vmtrace, tmp, r=_ruby: case_gem(vmtrace, tmp, r)
    CASES[f"{_ruby}-pid"] = lambda vmtrace, tmp, r=_ruby: case_pid(vmtrace, tmp, r)

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
