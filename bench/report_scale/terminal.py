#!/usr/bin/env python3
"""`vmtrace report` for a person and for a program: whole-command wall time of
the text report into a pipe (every row, names whole) and on an 80-column
pseudo-terminal (the top 20 rows of each section, fitted, no pager), beside
another vmtrace's pipe (the same work before a change), interleaved run by
run; then the lines and the widest line each way. Needs no root.

Usage: bench/report_scale/terminal.py VMTRACE OTHER_VMTRACE RECORD [RUNS] [REPORT ARGS...]
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "cli"))
import terminal_test  # noqa: E402  (its pseudo-terminal)


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    new, old, record = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    extra = sys.argv[5:]
    env = dict(os.environ, PAGER="cat")

    def piped(binary):
        t0 = time.monotonic()
        subprocess.run([binary, "report", record, *extra], stdout=subprocess.DEVNULL, check=True)
        return time.monotonic() - t0

    def tty():
        t0 = time.monotonic()
        terminal_test.on_terminal([new, "report", record, *extra], 80, 50, env)
        return time.monotonic() - t0

    times = {"other, piped": [], "this, piped": [], "this, 80 columns": []}
    for _ in range(runs):
        times["other, piped"].append(piped(old))
        times["this, piped"].append(piped(new))
        times["this, 80 columns"].append(tty())
    for k, v in times.items():
        print(f"{k:18s} median {statistics.median(v):.4f} s  min {min(v):.4f} s")
    out = subprocess.run([new, "report", record, *extra], capture_output=True, text=True).stdout.splitlines()
    rc, text = terminal_test.on_terminal([new, "report", record, *extra], 80, 50, env)
    lines = text.splitlines()
    print(f"piped: {len(out)} lines, widest {max(map(len, out))}; "
          f"80 columns: {len(lines)} lines, widest {max(map(len, lines))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
