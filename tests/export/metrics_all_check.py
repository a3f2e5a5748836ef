#!/usr/bin/python3
"""metrics_all_check.py TOP EARLY.om FINAL.om FINAL.prom PID=TRUTH.json...

Checks what `vmtrace serve --all` exposed, read with python3-prometheus-client's
own parsers (metrics_check.py's): both formats carry the same samples of
the pids named (the other processes' may change between two scrapes); each
demovm pid has a vmtrace_target_info series and its allocations and bytes per
class and method, labelled with its pid, comm, runtime and cgroup, equal its
truth exactly for every key with a series of its own (every key when the
truths' keys fit in TOP); each family has at most TOP series besides the
"(other)" one, which is there once keys were folded; no counter of the early
scrape went down or vanished by the final one. Other processes on the host
may have series too: only the pids named are checked. Exits 1 with every
problem.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_check import OTHER, parse_om, parse_prom, samples, went_down  # noqa: E402


def main():
    if len(sys.argv) < 6:
        raise SystemExit(__doc__)
    top = int(sys.argv[1])
    early = samples(parse_om(open(sys.argv[2]).read()))
    final = samples(parse_om(open(sys.argv[3]).read()))
    prom = samples(parse_prom(open(sys.argv[4]).read()))
    truths = {}
    for arg in sys.argv[5:]:
        pid, path = arg.split("=", 1)
        truths[pid] = json.load(open(path))
    problems = []

    def check(what, got, want):
        if got != want:
            problems.append("%s: %r, want %r" % (what, got, want))

    # the pids' series: theirs are final (other processes may still count)
    def mine(smp):
        return {k: v for k, v in smp.items() if dict(k[1]).get("pid") in truths}

    check("Prometheus text and OpenMetrics differ in the pids' series", set(mine(prom)) ^ set(mine(final)), set())
    for k in set(mine(prom)) & set(mine(final)):
        check("value of %r" % (k,), prom[k], final[k])

    targets = {dict(lab).get("pid"): dict(lab) for (n, lab) in final if n == "vmtrace_target_info"}
    keys = sum(len({(r["class"], r["method"]) for r in t["allocations"]}) for t in truths.values())
    for name, field in (("vmtrace_allocations_total", "count"), ("vmtrace_allocated_bytes_total", "bytes")):
        fam = [(dict(lab), v) for (n, lab), v in final.items() if n == name]
        if len(fam) > top + 1:
            problems.append("%s: %d series for --top %d" % (name, len(fam), top))
        folded = [v for lab, v in fam if lab.get("class") == OTHER]
        if keys > top:
            check("%s: the fold series" % name, len(folded), 1)
            if folded:
                lab = [lab for lab, v in fam if lab.get("class") == OTHER][0]
                check("%s: the fold series' pid" % name, lab.get("pid"), OTHER)
        for pid, truth in truths.items():
            want = {}
            for r in truth["allocations"]:
                k = (r["class"], r["method"])
                want[k] = want.get(k, 0) + r[field]
            got = {}
            for lab, v in fam:
                if lab.get("pid") != pid:
                    continue
                for label, value in (("comm", "demovm-shared"), ("runtime", "vmtrace")):
                    check("%s pid %s: %s" % (name, pid, label), lab.get(label), value)
                if not lab.get("cgroup", "").startswith("/"):
                    problems.append("%s pid %s: no cgroup label: %r" % (name, pid, lab))
                got[(lab["class"], lab["method"])] = v
            if keys <= top:
                check("%s of pid %s" % (name, pid), got, want)
            else:
                for k, v in got.items():
                    check("%s of pid %s, %s" % (name, pid, k), v, want.get(k))
            if not got and keys <= top:
                problems.append("%s: no series of pid %s" % (name, pid))
        if keys > top:
            # the fold holds what has no series: every pid's total is in there
            total = sum(v for lab, v in fam)
            want = sum(r[field] for t in truths.values() for r in t["allocations"])
            if total < want:
                problems.append("%s: %r over every series, less than the pids' %r" % (name, total, want))
    if keys <= top:
        for pid in truths:
            if pid not in targets:
                problems.append("no vmtrace_target_info series of pid %s" % pid)

    problems += went_down(early, final)

    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("serve --all: %d series parsed both ways; pids %s as their truths say (--top %d)" %
          (len(final), ",".join(sorted(truths)), top))


if __name__ == "__main__":
    main()
