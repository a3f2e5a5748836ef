#!/usr/bin/python3.11
"""bench/runtimes/attach_time.py: how long `vmtrace record -p` takes to say
"recording" for a Ruby or CPython that never loaded vmtrace (the provider
loaded into it first: docs/runtimes.md, "Attaching"), and again for the same
process once it is in (armed again, nothing loaded), on the host's Ruby 3.1
and CPython 3.11 with the extensions built here. Each runtime runs two
workloads: one thread making objects (tests/runtimes/workloads/busy.*), and
tests/runtimes/workloads/attach_busy.* (three threads making objects, one
collecting, one in a read). A fresh process per first attach. Prints the
median and the largest time to "recording", and the load's own figures from
vmtrace's note (a thread's stop, the load after the queue). Needs root.

Usage: bench/runtimes/attach_time.py [VMTRACE] [RUNS]
"""
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "..", "..", "tests", "runtimes", "workloads")
VMTRACE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "build", "bin",
                                                                           "vmtrace"))
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
PROGRAMS = {"ruby3.1": "/usr/bin/ruby3.1", "python3.11": "/usr/bin/python3.11"}


def to_recording(pid, out):
    """Seconds from record's start to its "recording" line; its stderr."""
    t0 = time.monotonic()
    rec = subprocess.Popen([VMTRACE, "record", "-p", str(pid), "-o", out, "--force", "-d", "0.1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = None
    lines = []
    for line in rec.stderr:
        lines.append(line)
        if took is None and line.startswith("vmtrace: recording"):
            took = time.monotonic() - t0
    rec.wait()
    return took, "".join(lines)


def main():
    out = "/tmp/vmtrace-attach-time.data"
    print(f"{'runtime':11} {'workload':15} {'first: median':>14} {'max':>7} {'again: median':>14} {'max':>7}"
          f"  {'stop ms':>8} {'load ms':>8}")
    for runtime, program in PROGRAMS.items():
        ext = "rb" if runtime.startswith("ruby") else "py"
        for workload in (f"busy_one.{ext}", f"attach_busy.{ext}"):
            first, again, stops, loads = [], [], [], []
            for _ in range(RUNS):
                p = subprocess.Popen([program, os.path.join(WORKLOADS, workload)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
                assert p.stdout.readline().startswith("ready")
                took, said = to_recording(p.pid, out)
                m = re.search(r"one thread stopped ([0-9.]+) ms, loaded (\d+) ms later", said)
                if took is None or not m:
                    sys.exit(f"{runtime} {workload}: not loaded: {said.strip()}")
                first.append(took)
                stops.append(float(m.group(1)))
                loads.append(int(m.group(2)))
                took, said = to_recording(p.pid, out)
                again.append(took)
                p.communicate("\n", timeout=60)
            print(f"{runtime:11} {workload:15} {statistics.median(first):13.3f}s {max(first):6.3f}s "
                  f"{statistics.median(again):13.3f}s {max(again):6.3f}s  {statistics.median(stops):8.1f} "
                  f"{statistics.median(loads):8.0f}")


if __name__ == "__main__":
    main()
