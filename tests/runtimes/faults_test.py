#!/usr/bin/python3.11
"""A provider's fault never takes the runtime down: a Ruby that loaded
vmtrace and allocates without a pause (workloads/steady.rb), while its
consumers fail in the ways a consumer can.

  faults-killed   ten recordings, each SIGKILLed right after it was asked to
                  end (in its last flush round): the Ruby keeps running, is
                  disarmed (no hook on) within 2 s of the last, ends with its
                  own output, and its RSS is where it was after one clean
                  recording (within 8 MiB)
  faults-garbage  what a consumer writes into the process (the sampling
                  period, the flush request, the stacks epoch) overwritten
                  with garbage, with no consumer and during a recording: the
                  Ruby keeps running, the recording ends and is read, the
                  Ruby is disarmed after it and ends with its own output

Usage: faults_test.py VMTRACE CASE
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import signal
import subprocess
import sys
import time

import runtime_test as rt
from runtime_test import check

HERE = os.path.dirname(os.path.abspath(__file__))
STEADY = os.path.join(HERE, "workloads", "steady.rb")
GARBAGE = [0, 1, 7, 1 << 63, (1 << 64) - 1, 0xdeadbeefcafef00d]


class Steady:
    def __init__(self, vmtrace):
        lib = os.path.realpath(os.path.join(os.path.dirname(vmtrace), "..", "lib", "ruby"))
        self.proc = subprocess.Popen(["/usr/bin/ruby", "-I", lib, "-rvmtrace", STEADY],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def state(self):
        self.proc.stdin.write("state\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def disarmed(self, seconds=2.0):
        t0 = time.monotonic()
        while True:
            s = self.state()
            s["after_s"] = time.monotonic() - t0
            if (not s["armed"] and not s["hooks"]) or s["after_s"] > seconds:
                return s
            time.sleep(0.05)

    def end(self):
        self.proc.stdin.write("end\n")
        self.proc.stdin.flush()
        out = self.proc.stdout.readline()
        return self.proc.wait(timeout=30), out

    def write(self, addr, value):
        with open(f"/proc/{self.proc.pid}/mem", "r+b", buffering=0) as m:
            m.seek(addr)
            m.write(value.to_bytes(8, "little"))


def start_recording(vmtrace, tmp, pid, name, extra=()):
    data, errpath = os.path.join(tmp, name + ".data"), os.path.join(tmp, name + ".err")
    with open(errpath, "w") as err:
        rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "-o", data, "--force", *extra],
                               stdout=subprocess.DEVNULL, stderr=err)
    rt.wait_attached(rec, errpath)
    return rec, data, errpath


def check_end(ruby, what):
    status, out = ruby.end()
    check(status == 0 and out.startswith("sum ok "), f"{what}: the Ruby ends with its own output: "
          f"{status} {out.strip()!r}")


def case_killed(vmtrace, tmp):
    ruby = Steady(vmtrace)
    ruby.state()
    rec, _, _ = start_recording(vmtrace, tmp, ruby.proc.pid, "clean")
    time.sleep(0.3)
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=60)
    base = ruby.disarmed()["rss_kib"]
    for i in range(10):
        rec, _, _ = start_recording(vmtrace, tmp, ruby.proc.pid, f"killed{i}")
        time.sleep(0.2)
        rec.send_signal(signal.SIGINT)  # it asks for the last round...
        time.sleep(0.01 * (i % 5))
        rec.kill()                      # ... and dies in it
        rec.wait(timeout=30)
        check(ruby.proc.poll() is None, f"killed {i}: the Ruby runs on")
    s = ruby.disarmed(30)
    check(not s["armed"] and not s["hooks"] and s["after_s"] < 2,
          f"killed: disarmed within 2 s: {s['armed']} {s['hooks']} after {s['after_s']:.2f} s")
    check(s["rss_kib"] <= base + 8192,
          f"killed: RSS {s['rss_kib']} KiB after ten killed recordings, {base} KiB after a clean one")
    check_end(ruby, "killed")


def case_garbage(vmtrace, tmp):
    ruby = Steady(vmtrace)
    vars_ = ruby.state()["vars"]
    for name, addr in vars_.items():
        for v in GARBAGE:
            ruby.write(addr, v)
    check(ruby.proc.poll() is None, "garbage with no consumer: the Ruby runs on")
    rec, data, errpath = start_recording(vmtrace, tmp, ruby.proc.pid, "garbage")
    for _ in range(3):
        for name, addr in vars_.items():
            for v in GARBAGE:
                ruby.write(addr, v)
                time.sleep(0.01)
    check(ruby.proc.poll() is None, "garbage during a recording: the Ruby runs on")
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=60)
    check(rec.returncode == 0, f"garbage: the recording ends: {open(errpath).read()[-300:]}")
    j = rt.report(vmtrace, data)
    check(j["runtime"] == "vmtrace", "garbage: the record is read")
    s = ruby.disarmed()
    check(not s["armed"] and not s["hooks"], f"garbage: disarmed after: {s['armed']} {s['hooks']}")
    check_end(ruby, "garbage")


CASES = {"faults-killed": case_killed, "faults-garbage": case_garbage}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
