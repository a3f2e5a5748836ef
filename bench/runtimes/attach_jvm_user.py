#!/usr/bin/env python3
"""The attach to a JVM of another user: time from `vmtrace record -p PID
--runtime vmtrace` to its "recording" line (trigger made as the JVM's user,
SIGQUIT, socket checked, agent loaded), a fresh JVM run as nobody each time,
this vmtrace and another (before a change) in turn. Root.

Usage: bench/runtimes/attach_jvm_user.py VMTRACE OTHER_VMTRACE [ROUNDS]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "security"))
import target_fs_test as scene_of  # noqa: E402  (the JVM as nobody, its directories)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binaries = {"this": sys.argv[1], "other": sys.argv[2]}
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    took = {k: [] for k in binaries}
    with tempfile.TemporaryDirectory(prefix="vt-attach-") as tmp:
        scene = scene_of.Scene(tmp)
        for _ in range(rounds):
            for name in ("other", "this"):
                jvm = scene_of.Jvm(scene)
                try:
                    t0 = time.monotonic()
                    p = subprocess.Popen([binaries[name], "record", "-p", str(jvm.pid), "--runtime", "vmtrace",
                                          "-d", "0.3", "-o", os.path.join(tmp, "a.data"), "--force"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    for line in p.stderr:
                        if "recording pid" in line:
                            took[name].append(time.monotonic() - t0)
                            break
                    p.wait(timeout=60)
                finally:
                    jvm.stop()
    for name, v in took.items():
        print(f"{name:6s} median {statistics.median(v):.3f} s  ({' '.join(f'{x:.3f}' for x in v)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
