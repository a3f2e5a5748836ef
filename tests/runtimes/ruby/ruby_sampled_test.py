#!/usr/bin/python3.11
"""The Ruby extension sampled (provider/ruby/src/sampler.c): allocations on
Ruby's fast path between samples, each sampled object weighed, on
workloads/sampled.rb, whose 3,000,000 Small, Mid and Wide are known by
construction (at 16 KiB about 7,300 samples each: 5% is four standard
errors).

  rbsample-spawn     record --sample 16K -- ruby: each class's count and
                     bytes within 5%; the report says they are estimates;
                     no sampling point passed unseen; most objects never met
                     the hook (the fast path); the GC pauses still recorded
  rbsample-pid       the same by pid, the extension loaded by RUBYOPT; once
                     the recording ends, no hook of vmtrace's left on
  rbsample-objspace  the program traces its own allocations with ObjectSpace
                     meanwhile: its answers are what they are untraced, and
                     the estimates still within 5% (every object then meets
                     the sampler's hook, which counts it down)
  rbsample-serve     serve -p with no --sample samples the Ruby (left on:
                     sampled by default), and its /metrics has the classes

Usage: ruby_sampled_test.py VMTRACE CASE
Exit 0 pass, 1 fail, 77 skip (not root, or no extension built).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
SAMPLED_RB = os.path.join(RUNTIMES, "workloads", "sampled.rb")
METHODS = {"Small": "Object#make_small", "Mid": "Object#make_mid", "Wide": "Object#make_wide"}


def ext_dir(vmtrace):
    return os.path.normpath(os.path.join(os.path.dirname(vmtrace), "..", "lib", "ruby"))


def ext_env(vmtrace):
    return dict(os.environ, RUBYOPT=f"-I{ext_dir(vmtrace)} -rvmtrace")


def check_estimates(vmtrace, data, truth, mode):
    """Each class's count and bytes in its own method within 5%."""
    j = report(vmtrace, data)
    check(j["estimated"] and j["sample_period"] == 16384,
          f"{mode}: the report gives estimates, sampled every {j['sample_period']} bytes")
    rows = {(a["class"], a["method"]): a for a in j["allocations"]}
    for klass, method in METHODS.items():
        a = rows.get((klass, method), {"count": 0, "bytes": 0, "samples": 0})
        want, size = truth["counts"][klass], truth["bytes"][klass]
        check(abs(a["count"] - want) <= 0.05 * want and abs(a["bytes"] - want * size) <= 0.05 * want * size,
              f"{mode}: {klass}: {a['count']} objects, {a['bytes']} bytes within 5% of {want}, "
              f"{want * size} ({a['samples']} samples)")
    lost = rt.real_losses(j)
    check(not lost, f"{mode}: nothing lost {lost}")
    return j


def case_spawn(vmtrace, tmp):
    data = os.path.join(tmp, "s.data")
    r = subprocess.run([vmtrace, "record", "--sample", "16K", "-o", data, "--force", "--", rt.RUBY, SAMPLED_RB],
                       capture_output=True, text=True, timeout=180)
    check(r.returncode == 0, f"spawn: record exits 0: {r.stderr.strip()[-300:]}")
    truth = json.loads([l for l in r.stdout.splitlines() if l.startswith('{"counts"')][-1])
    j = check_estimates(vmtrace, data, truth, "spawn")
    s = truth["sampler"]
    check(s.get("gate") is True and s.get("late") == 0,
          f"spawn: allocations kept on the fast path, no point passed unseen: {s}")
    check(s.get("samples", 0) > 0 and s.get("hooked", 1 << 62) < 0.7 * truth["made"],
          f"spawn: most of the {truth['made']} objects never met the hook: {s}")
    check(j["gc"]["pauses"] > 0, f"spawn: GC pauses recorded while sampled: {j['gc']['pauses']}")


def case_pid(vmtrace, tmp):
    data = os.path.join(tmp, "p.data")
    err = os.path.join(tmp, "rec.err")
    target = subprocess.Popen([rt.RUBY, SAMPLED_RB, "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=ext_env(vmtrace))
    check(target.stdout.readline().strip() == "ready", "pid: the workload is ready")
    with open(err, "w") as ef:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(target.pid), "--sample", "16K", "-o", data],
                               stdout=subprocess.DEVNULL, stderr=ef)
    rt.wait_attached(rec, err)
    target.stdin.write("go\n")
    target.stdin.flush()
    truth = json.loads(target.stdout.readline())
    rec.send_signal(signal.SIGINT)
    rc = rec.wait(timeout=60)
    check(rc == 0, f"pid: record exits 0 at Ctrl-C ({rc}): {open(err).read().strip()[-300:]}")
    time.sleep(0.5)  # the extension's watcher sees the probes gone
    target.stdin.write("end\n")
    target.stdin.flush()
    after = json.loads(target.stdout.readline())
    check(target.wait(timeout=60) == 0, "pid: the workload exits 0")
    check(after["hooks"] == [], f"pid: no hook of vmtrace's on once the recording ended: {after['hooks']}")
    check_estimates(vmtrace, data, truth, "pid")
    check(truth["sampler"].get("gate") is True and truth["sampler"].get("late") == 0,
          f"pid: on the fast path, no point passed unseen: {truth['sampler']}")


def case_objspace(vmtrace, tmp):
    plain = subprocess.run([rt.RUBY, SAMPLED_RB, "--objspace"], capture_output=True, text=True, timeout=180)
    untraced = json.loads(plain.stdout.splitlines()[-1])
    data = os.path.join(tmp, "o.data")
    r = subprocess.run([vmtrace, "record", "--sample", "16K", "-o", data, "--force", "--", rt.RUBY, SAMPLED_RB,
                        "--objspace"], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"objspace: record exits 0: {r.stderr.strip()[-300:]}")
    truth = json.loads([l for l in r.stdout.splitlines() if l.startswith('{"counts"')][-1])
    check(truth["objspace"] == untraced["objspace"] and truth["objspace"][1],
          f"objspace: ObjectSpace answers as untraced: {truth['objspace']} == {untraced['objspace']}")
    check_estimates(vmtrace, data, truth, "objspace")
    s = truth["sampler"]
    check(s.get("late") == 0 and s.get("hooked", 0) >= sum(truth["counts"].values()),
          f"objspace: with ObjectSpace's hook on, every object met the sampler's hook: {s}")


def case_serve(vmtrace, tmp):
    target = subprocess.Popen([rt.RUBY, SAMPLED_RB, "--wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=ext_env(vmtrace))
    check(target.stdout.readline().strip() == "ready", "serve: the workload is ready")
    err = os.path.join(tmp, "serve.err")
    with open(err, "w") as ef:
        srv = subprocess.Popen([vmtrace, "serve", "-p", str(target.pid), "--listen", "127.0.0.1:0"],
                               stdout=subprocess.DEVNULL, stderr=ef)
    url = None
    for _ in range(200):
        m = re.search(r"(http://127\.0\.0\.1:\d+/metrics)", open(err).read())
        if m:
            url = m.group(1)
            break
        time.sleep(0.05)
    check(url is not None, f"serve: it serves: {open(err).read().strip()[-300:]}")
    target.stdin.write("go\n")
    target.stdin.flush()
    truth = json.loads(target.stdout.readline())
    time.sleep(1.5)  # a refresh after the work
    body = urllib.request.urlopen(url, timeout=10).read().decode()
    srv.send_signal(signal.SIGINT)
    srv.wait(timeout=60)
    target.stdin.write("end\n")
    target.stdin.flush()
    target.stdout.readline()
    target.wait(timeout=60)
    s = truth["sampler"]
    check(s.get("samples", 0) > 0 and s.get("hooked", 1 << 62) < 0.7 * truth["made"],
          f"serve: sampled by default, most objects on the fast path: {s}")
    wide = [l for l in body.splitlines() if 'class="Wide"' in l and not l.startswith("#")]
    check(bool(wide), f"serve: /metrics has the Wide objects: {body[:300]}")
    period = [l for l in body.splitlines() if l.startswith("vmtrace_sample_period_bytes{")]
    check(len(period) == 1 and period[0].endswith(" 524288"),
          f"serve: /metrics says the counts are sampled, every 512 KiB: {period}")
    check("sampled, estimates" in open(err).read(), f"serve: it says it samples: {open(err).read().strip()[-200:]}")


CASES = {"rbsample-spawn": case_spawn, "rbsample-pid": case_pid, "rbsample-objspace": case_objspace,
         "rbsample-serve": case_serve}

if __name__ == "__main__":
    if len(sys.argv) == 3 and not os.path.exists(os.path.join(ext_dir(sys.argv[1]), "vmtrace_ext.so")):
        print("skipped: the Ruby extension is not built")
        sys.exit(77)
    sys.exit(rt.run(CASES, __doc__))
