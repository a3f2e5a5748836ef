#!/usr/bin/python3
"""metrics_check.py TOP TRUTH.json EARLY.om FINAL.om FINAL.prom

Checks what `vmtrace serve` exposed, read with python3-prometheus-client's
own parsers (OpenMetrics and Prometheus text): the final scrape says what
demovm's truth says (allocations and bytes per class and method, with the
rows beyond TOP folded into "(other)" so the totals still add up; cache
resets; serial increments; GC collections, whose pause histogram counts
every one; signals), every loss counter is a vmtrace_lost_total{reason}
series, both formats carry the same samples, and no counter of the early
scrape went down or vanished by the final one. Exits 1 with every problem.
"""
import json
import re
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_prom

OTHER = "(other)"


def samples(families):
    out = {}
    for fam in families:
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in out:
                raise SystemExit("duplicate series %r" % (key,))
            out[key] = s.value
    return out


def series(smp, name, labels, **want):
    """{"v1|v2": value} of the series called name, keyed by the labels named,
    among those whose labels include want."""
    out = {}
    for (n, lab), v in smp.items():
        lab = dict(lab)
        if n == name and all(lab.get(a) == b for a, b in want.items()):
            out["|".join(lab.get(x, "") for x in labels)] = v
    return out


def went_down(early, final):
    """Counters never go down and series never vanish between two scrapes:
    the problems, if any."""
    problems = []
    for k, v in early.items():
        if k[0].endswith("_total") or k[0].endswith("_bucket") or k[0].endswith("_count"):
            if k not in final:
                problems.append("series %r vanished" % (k,))
            elif final[k] < v:
                problems.append("counter %r went down: %r -> %r" % (k, v, final[k]))
    return problems


def main():
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    top = int(sys.argv[1])
    truth = json.load(open(sys.argv[2]))
    early = samples(parse_om(open(sys.argv[3]).read()))
    final_fams = list(parse_om(open(sys.argv[4]).read()))
    final = samples(final_fams)
    prom = samples(parse_prom(open(sys.argv[5]).read()))
    problems = []

    def check(what, got, want):
        if got != want:
            problems.append("%s: %r, want %r" % (what, got, want))

    # the same samples in both formats (Prometheus text has no _created)
    check("Prometheus text and OpenMetrics differ in series", set(prom) ^ set(final), set())
    for k in set(prom) & set(final):
        check("value of %r" % (k,), prom[k], final[k])

    # allocations: own series for at most TOP keys, the rest in (other)
    for name, field in (("vmtrace_allocations_total", "count"), ("vmtrace_allocated_bytes_total", "bytes")):
        got = series(final, name, ("class", "method"))
        if len(got) > top + 1:
            problems.append("%s: %d series for --top %d" % (name, len(got), top))
        want = {}
        for r in truth["allocations"]:
            want[r["class"] + "|" + r["method"]] = want.get(r["class"] + "|" + r["method"], 0) + r[field]
        for key, v in got.items():
            if key != OTHER + "|" + OTHER:
                check("%s %s" % (name, key), v, want.get(key))
        check("%s summed" % name, sum(got.values()), sum(want.values()))
        if len(want) > top:
            check("%s has the fold row" % name, OTHER + "|" + OTHER in got, True)

    mcr = series(final, "vmtrace_method_cache_resets_total", ("class", "method"))
    check("method cache resets summed", sum(mcr.values()),
          sum(r["count"] for r in truth["method_cache_resets"]))
    ccr = series(final, "vmtrace_constant_cache_resets_total", ("name",))
    for r in truth["constant_cache_resets"]:
        if r["name"] in ccr:
            check("constant cache resets of %s" % r["name"], ccr[r["name"]], r["count"])
    check("constant cache resets summed", sum(ccr.values()), sum(r["count"] for r in truth["constant_cache_resets"]))
    gsi = series(final, "vmtrace_global_serial_increments_total", ("reason",))
    check("serial increments summed", sum(gsi.values()), sum(r["count"] for r in truth["global_serial_incs"]))

    gc = series(final, "vmtrace_gc_collections_total", ("kind",))
    for kind in ("minor", "major"):
        check("gc collections %s" % kind, gc.get(kind), truth["gc"][kind])
        check("gc pause histogram count %s" % kind,
              series(final, "vmtrace_gc_pause_seconds_count", ("kind",)).get(kind), truth["gc"][kind])
        check("gc pause histogram +Inf %s" % kind,
              series(final, "vmtrace_gc_pause_seconds_bucket", ("kind",), le="+Inf").get(kind),
              truth["gc"][kind])
    sig = series(final, "vmtrace_signals_received_total", ("signal",))
    check("signals received", sum(sig.values()), sum(s["received"] for s in truth["signals"]))

    lost = {k: v for k, v in final.items() if k[0] == "vmtrace_lost_total"}
    if len(lost) < 10:
        problems.append("only %d loss counters exposed" % len(lost))
    for k, v in lost.items():
        reason = dict(k[1]).get("reason", "")
        if not re.fullmatch(r"[a-z0-9_]+", reason):
            problems.append("loss reason %r is not a short name" % reason)
        if v != 0 and "(read from /proc)" not in dict(k[1]).get("what", ""):
            problems.append("lost %s: %r" % (reason, v))

    problems += went_down(early, final)

    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("serve: %d families, %d series parsed both ways; they agree with the truth" %
          (len(final_fams), len(final)))


if __name__ == "__main__":
    main()
