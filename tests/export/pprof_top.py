#!/usr/bin/python3
"""pprof_top.py [--inuse] PROFILE.pb.gz [PROFILE.pb.gz...] EXPECTED.json

Reads the PROFILEs with Debian's `go tool pprof -top` (which merges several
into one: the intervals of a continuous run add up; both sample types,
every node) and compares what it prints with EXPECTED: a list of allocation rows
{"class", "method", "count", "bytes"} (vmtrace's own report, or demovm's
truth). Classes are the leaf frames, so their flat numbers must be the
per-class totals; methods are the frames below, so their cum numbers must
be the per-method totals. Exits 1 with every difference.
With --inuse the sample types are inuse_objects and inuse_space (a record
made with --live) and EXPECTED's rows are its "live" list (demovm's truth).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROW = re.compile(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+)$")


def top(profiles, index, unit):
    env = dict(os.environ, HOME=tempfile.mkdtemp(), GOFLAGS="")
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0",
                          "-sample_index=" + index, "-unit=" + unit] + profiles,
                         capture_output=True, text=True, env=env, check=True).stdout
    rows, header = {}, False
    for line in out.splitlines():
        if line.split()[:2] == ["flat", "flat%"]:
            header = True
            continue
        m = header and ROW.match(line)
        if m:
            rows[m.group(3)] = (number(m.group(1)), number(m.group(2)))
    if not header:
        raise SystemExit("go tool pprof printed no table:\n" + out)
    return rows


def number(s):
    # -unit=B prints "578993B"; counts are bare integers
    return int(s[:-1]) if s.endswith("B") else int(s)


def main():
    args = sys.argv[1:]
    inuse = bool(args) and args[0] == "--inuse"
    if inuse:
        args = args[1:]
    if len(args) < 2:
        raise SystemExit(__doc__)
    profiles = args[:-1]
    doc = json.load(open(args[-1]))
    expected = doc["live" if inuse else "allocations"] if isinstance(doc, dict) else doc
    by_class, by_method = {}, {}
    for r in expected:
        for d, k in ((by_class, r["class"]), (by_method, r["method"])):
            c, b = d.get(k, (0, 0))
            d[k] = (c + r["count"], b + r["bytes"])
    kind = "inuse" if inuse else "alloc"
    objects = top(profiles, kind + "_objects", "minimum")
    space = top(profiles, kind + "_space", "B")
    problems = []
    for name, want in sorted(by_class.items()):
        got = (objects.get(name, (None,))[0], space.get(name, (None,))[0])
        if got != want:
            problems.append("class %s: flat %r, want %r" % (name, got, want))
    for name, want in sorted(by_method.items()):
        got = (objects.get(name, (0, None))[1], space.get(name, (0, None))[1])
        if got != want:
            problems.append("method %s: cum %r, want %r" % (name, got, want))
    extra = set(objects) - set(by_class) - set(by_method)
    if extra:
        problems.append("nodes nobody expected: %s" % sorted(extra))
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("go tool pprof -top of %d profiles agrees: %d classes, %d methods, %d objects, %d bytes" %
          (len(profiles), len(by_class), len(by_method), sum(v[0] for v in by_class.values()),
           sum(v[1] for v in by_class.values())))


if __name__ == "__main__":
    main()
