#!/usr/bin/python3
"""`vmtrace report` as a person and as a script see it: a record of 3,000
allocation rows with long names, printed to a pseudo-terminal of 80 and of
200 columns and into a pipe.

On a terminal: the top 20 rows of each section and one line saying what is
left out (rows, share of allocations), every line within the terminal's
width, long names shortened in the middle with both ends kept, and a pager
for a report longer than the screen (PAGER), none with --no-pager or when
the report fits. Into a pipe: every row, every name whole, no pager.

Usage: terminal_test.py VMTRACE. Exit 0 pass, 1 fail.
"""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import tempfile
import termios

ROWS = 3000
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def klass(i):
    return f"Vendor::Library::Component::Subsystem::Widget{i:04d}"


def method(i):
    return f"Vendor::Library::Component::Handler{i:04d}#initialize_with_options"


def count(i):
    return ROWS - i


def write_record(path, grown=0):
    """A record file (docs/record-format.md) of ROWS allocation rows and two
    losses that touch no count: pause list entries and timeline events;
    each row grown by grown objects of 40 bytes."""
    items = ["runtime =vmtrace", "probes =object__alloc,gc__begin,gc__end",
             "target =./app", "pid 4242", "duration_s 0x1p+1", "sample_period 0",
             "has_allocations 1", "last_serial 0", "gc_collections 3 0 0 0"]
    for i in range(ROWS):
        n = count(i) + grown
        items.append(f"alloc ={klass(i)} ={method(i)} = {n} {n * 40} {n}")
    items.append("lost =gc%20pause%20ring%20buffer%20full%20(pauses) 42")
    items.append("lost =event%20ring%20buffer%20full%20(timeline%20events) 293")
    items.append("lost =allocation%20map%20full%20(events%3B%20raise%20--map-entries) 0")
    with open(path, "w") as f:
        f.write("vmtrace-record 1\n" + "\n".join(items) + f"\nend {len(items)}\n")


def on_terminal(argv, cols, rows, env=None):
    """argv's output on a pseudo-terminal of cols x rows, as text."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                         env=env or os.environ, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, out.decode("utf-8", "replace").replace("\r\n", "\n")


def alloc_rows(text):
    """The allocation table's rows (class, method, count) and the line after."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Allocations by"))
    rows, i = [], start + 2
    while not lines[i].startswith("  total"):
        f = lines[i].split()
        rows.append((f[0], f[1], int(f[2])))
        i += 1
    return rows, lines[i + 1]


def shortened_from(shown, full):
    """shown is full, or its start and end with '..' between."""
    if shown == full:
        return True
    head, sep, tail = shown.partition("..")
    return sep == ".." and full.startswith(head) and full.endswith(tail) and len(shown) < len(full)


def left_out_line(shown_rows):
    total = sum(count(i) for i in range(ROWS))
    rest = total - sum(count(i) for i in range(shown_rows))
    return (f"  and {ROWS - shown_rows:,} more rows, {100 * rest / total:.1f}% of allocations: "
            "--top 0 for all")


def main():
    vmtrace = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "rows.data")
        write_record(rec)
        env = dict(os.environ, PAGER="cat")

        # into a pipe: every row, names whole, no pager even when PAGER is set
        paged = os.path.join(tmp, "paged")
        r = subprocess.run([vmtrace, "report", rec], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PAGER=f"cat > {paged}"))
        rows, after = alloc_rows(r.stdout)
        check(r.returncode == 0 and len(rows) == ROWS, f"pipe: all {ROWS} rows ({len(rows)})")
        check(all(c == klass(i) and m == method(i) for i, (c, m, _) in enumerate(rows)),
              "pipe: every name whole, in count order")
        check(after == "", f"pipe: no left-out line ({after!r})")
        check(not os.path.exists(paged), "pipe: no pager")

        for cols in (80, 200):
            rc, text = on_terminal([vmtrace, "report", rec], cols, 50, env)
            rows, after = alloc_rows(text)
            widest = max(len(l) for l in text.splitlines())
            check(rc == 0 and len(rows) == 20, f"{cols} columns: the top 20 rows ({len(rows)})")
            check(widest <= cols, f"{cols} columns: every line fits ({widest})")
            check(after == left_out_line(20), f"{cols} columns: {after!r}")
            check(all(shortened_from(c, klass(i)) and shortened_from(m, method(i))
                      and n == count(i) for i, (c, m, n) in enumerate(rows)),
                  f"{cols} columns: names whole or shortened in the middle, both ends kept: "
                  f"{rows[0][:2]}")
            if cols == 80:
                check(rows[0][1].endswith("#initialize_with_options") and ".." in rows[0][0],
                      f"80 columns: the method's own name kept ({rows[0][1]})")
            else:
                check(rows[0][:2] == (klass(0), method(0)) and "COUNT/s" in text,
                      "200 columns: names whole, the rates shown")
            check("Lost (not counted where it belongs" in text and
                  "no count above is touched" in text and "pause list only" in text and "lower bound" not in text,
                  f"{cols} columns: losses that touch no count are not called lower bounds")
            check("allocation map full" not in text, f"{cols} columns: a loss of 0 is not listed")

        rc, text = on_terminal([vmtrace, "report", rec, "--top", "5"], 80, 50, env)
        rows, after = alloc_rows(text)
        check(len(rows) == 5 and after == left_out_line(5), f"--top 5 on a terminal: {after!r}")
        rc, text = on_terminal([vmtrace, "report", rec, "--top", "0"], 80, 50, env)
        rows, after = alloc_rows(text)
        check(len(rows) == ROWS and after == "", "--top 0 on a terminal: every row")

        # the pager: past the screen it gets the report; --no-pager and a
        # report that fits the screen go straight to the terminal
        env_paged = dict(os.environ, PAGER=f"cat > {paged}")
        rc, text = on_terminal([vmtrace, "report", rec], 80, 24, env_paged)
        got = open(paged).read() if os.path.exists(paged) else ""
        check(rc == 0 and "Allocations by class and method" in got and "Allocations" not in text,
              "pager: a report past 24 lines goes through PAGER")
        check(left_out_line(20) in got and max(len(l) for l in got.splitlines()) <= 80,
              "pager: it gets the terminal's report (top rows, fitted)")
        os.unlink(paged)
        rc, text = on_terminal([vmtrace, "report", rec, "--no-pager"], 80, 24, env_paged)
        check(not os.path.exists(paged) and "Allocations by class and method" in text,
              "--no-pager: straight to the terminal")
        rc, text = on_terminal([vmtrace, "report", rec], 80, 200, env_paged)
        check(not os.path.exists(paged) and "Allocations by class and method" in text,
              "a report that fits the screen: no pager")
        rc, text = on_terminal([vmtrace, "report", rec], 80, 24,
                               dict(os.environ, PAGER="/nonexistent/pager"))
        check(rc == 0 and "Allocations by class and method" in text,
              "a pager that cannot run: the report straight to the terminal")

        # diff: the same care
        grown = os.path.join(tmp, "grown.data")
        write_record(grown, grown=7)
        r = subprocess.run([vmtrace, "diff", rec, grown], capture_output=True, text=True, timeout=60)
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and len(lines) == ROWS + 2 and lines[-1].startswith(f"{ROWS} rows changed")
              and klass(0) in r.stdout and method(0) in r.stdout, "diff into a pipe: every row, names whole")
        rc, text = on_terminal([vmtrace, "diff", rec, grown], 80, 50, env)
        lines = text.splitlines()
        check(rc == 0 and len(lines) == 23 and max(len(l) for l in lines) <= 80, f"diff on 80 columns: "
              f"20 rows within the width ({len(lines)} lines, {max(len(l) for l in lines)} wide)")
        check(lines[21] == f"  and {ROWS - 20:,} more rows, 99.3% of the bytes changed: --top 0 for all",
              f"diff on 80 columns: {lines[21]!r}")

    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
