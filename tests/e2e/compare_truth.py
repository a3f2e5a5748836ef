#!/usr/bin/python3
"""compare_truth.py [--allocations] TRUTH.json REPORT.json

Exits 0 when vmtrace's JSON report (vmtrace report --format json, grouped
by class,method) says exactly what demovm's truth file says: allocations
per class and method (count and bytes), frees per class, method cache
resets, constant cache resets, global serial increments and the last
serial, GC collections by kind, signals received. Nothing may be lost
(loss counters that only say a string was read from /proc are allowed).
Otherwise prints every difference and exits 1. With --allocations, for a
recording of allocations only (record --events alloc), only the
allocations and the losses are compared.
"""
import json
import sys

# loss counters that mean "counted, but read another way": not a loss
HARMLESS = ("(read from /proc)",)


def table(rows, keys, values):
    out = {}
    for r in rows:
        k = tuple(r.get(x, "") for x in keys)
        if k in out:
            raise SystemExit("duplicate row %r" % (k,))
        out[k] = tuple(r[v] for v in values)
    return out


def diff(name, want, got, problems):
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            problems.append("%s %r: truth %r, vmtrace %r" % (name, k, want.get(k), got.get(k)))


def others(truth, rep, problems):
    """Everything but the allocations: frees, cache resets, serials, GC, signals."""
    if "frees" in truth:
        diff("free", table(truth["frees"], ("class",), ("count", "bytes")),
             table(rep.get("frees", []), ("class",), ("count", "bytes")), problems)
    diff("method cache reset",
         table(truth["method_cache_resets"], ("class", "method"), ("count",)),
         table(rep["method_cache_resets"], ("class", "method"), ("count",)), problems)
    diff("constant cache reset", table(truth["constant_cache_resets"], ("name",), ("count",)),
         table(rep["constant_cache_resets"], ("name",), ("count",)), problems)
    diff("global serial inc", table(truth["global_serial_incs"], ("reason",), ("count",)),
         table(rep["global_serial_incs"], ("reason",), ("count",)), problems)
    if truth.get("global_serial_incs") and truth.get("global_serial") != rep.get("global_serial"):
        problems.append("last global serial: truth %r, vmtrace %r"
                        % (truth.get("global_serial"), rep.get("global_serial")))
    for kind in ("minor", "major"):
        if truth["gc"][kind] != rep["gc"][kind]:
            problems.append("gc %s: truth %r, vmtrace %r" % (kind, truth["gc"][kind], rep["gc"][kind]))
    if rep["gc"].get("pauses") != rep["gc"][ "minor"] + rep["gc"]["major"]:
        problems.append("gc pauses %r for %r collections" % (rep["gc"].get("pauses"),
                        rep["gc"]["minor"] + rep["gc"]["major"]))
    diff("signal", table(truth["signals"], ("signo",), ("received",)),
         table(rep["signals"], ("signo",), ("received",)), problems)


def main():
    args = sys.argv[1:]
    only_allocations = args[:1] == ["--allocations"]
    if only_allocations:
        args = args[1:]
    if len(args) != 2:
        raise SystemExit(__doc__)
    truth = json.load(open(args[0]))
    rep = json.load(open(args[1]))
    problems = []

    if rep.get("group_by", "class,method") != "class,method":
        problems.append("report grouped by %r, need class,method" % rep.get("group_by"))
    diff("allocation", table(truth["allocations"], ("class", "method"), ("count", "bytes")),
         table(rep["allocations"], ("class", "method"), ("count", "bytes")), problems)
    if not only_allocations:
        others(truth, rep, problems)
    for lost in rep["lost"]:
        if lost["count"] and not lost["what"].endswith(HARMLESS):
            problems.append("lost: %s: %d" % (lost["what"], lost["count"]))

    for p in problems:
        print(p)
    if problems:
        print("%d difference(s) between %s and %s" % (len(problems), args[0], args[1]))
        return 1
    if only_allocations:
        print("vmtrace's allocations equal the truth: %d rows" % len(truth["allocations"]))
        return 0
    print("vmtrace's report equals the truth: %d allocation rows, %d collections, %d signals"
          % (len(truth["allocations"]), truth["gc"]["minor"] + truth["gc"]["major"],
             sum(s["received"] for s in truth["signals"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
