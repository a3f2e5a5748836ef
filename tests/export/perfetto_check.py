#!/usr/bin/python3
"""perfetto_check.py TRACE RECORD [--all-timed]: the shape of a `--format
perfetto` trace (Chrome's trace-event JSON, read with the json module) and
its agreement with the record it came from.

- the file is one JSON object with a "traceEvents" list;
- every event has ph, ts, pid, tid and name; X events have dur;
- one X event per record gc_pause line that has a thread, at its start, of
  its duration, on its thread; those without a thread are counted in
  otherData (--all-timed: there are none);
- one b/e pair (same id, same thread) per signal event line, spanning its
  latency; one i event per cache reset event line, at its time;
- a thread_name for every thread used, one process_name, the record's pid
  everywhere; a thread's GC slices nest or are disjoint (as a track needs);
- no ts is negative (Perfetto drops those): the zero is the record's start,
  or the earliest event when one began before it (otherData.ts_origin_ns);
  with --all-timed (a whole recording), every time lies within it.
Exit 0 when all hold; otherwise each failure on stderr and exit 1.
"""
import json
import sys
from collections import Counter, defaultdict
from urllib.parse import unquote_to_bytes

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def field(s):
    """A record string field: '=' then %XX-escaped bytes."""
    assert s.startswith("="), s
    return unquote_to_bytes(s[1:]).decode("utf-8", "replace")


def read_record(path):
    rec = {"pauses": [], "events": []}
    with open(path, encoding="latin-1") as f:
        for line in f:
            w = line.rstrip("\n").split(" ")
            if w[0] == "pid":
                rec["pid"] = int(w[1])
            elif w[0] == "duration_s":
                rec["duration_ns"] = float.fromhex(w[1]) * 1e9
            elif w[0] == "gc_pause":
                at, tid = (int(w[6]), int(w[7])) if len(w) >= 8 else (0, 0)
                rec["pauses"].append({"kind": int(w[1]), "dur": int(w[2]), "at": at, "tid": tid})
            elif w[0] == "event":
                rec["events"].append({"kind": int(w[1]), "tid": int(w[2]), "at": int(w[3]),
                                      "dur": int(w[4]), "arg": int(w[5]), "serial": int(w[6]),
                                      "name": field(w[7]), "name2": field(w[8])})
    return rec


ORIGIN = [0]


def dns(us):
    """trace microseconds (three decimals) back to ns"""
    return round(us * 1000)


def ns(us):
    """a trace time back to the record's ns after its start"""
    return dns(us) + ORIGIN[0]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    all_timed = "--all-timed" in sys.argv
    if len(args) != 2:
        sys.exit(__doc__)
    with open(args[0]) as f:
        doc = json.load(f)
    rec = read_record(args[1])
    if not check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
                 "not an object with a traceEvents list"):
        return
    evs = doc["traceEvents"]
    ORIGIN[0] = doc.get("otherData", {}).get("ts_origin_ns", 1)
    check(isinstance(ORIGIN[0], int) and ORIGIN[0] <= 0, f"ts_origin_ns {ORIGIN[0]}")
    timed = [e["ts"] for e in evs if e.get("ph") != "M" and "ts" in e]
    check(all(t >= 0 for t in timed), "a negative ts")
    check(ORIGIN[0] == 0 or min(timed, default=0) == 0,
          f"the zero moved back by {-ORIGIN[0]} ns, yet no event is at it")
    for e in evs:
        for k in ("ph", "ts", "pid", "tid", "name"):
            check(k in e, f"event without {k}: {e}")
        check(isinstance(e.get("ts"), (int, float)), f"ts not a number: {e}")
        check(e.get("pid") == rec["pid"], f"pid {e.get('pid')}, record's {rec['pid']}: {e}")
        check(e.get("ph") in ("M", "X", "b", "e", "i", "C"), f"unknown ph: {e}")
        if e.get("ph") == "X":
            check(isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, f"X without dur: {e}")
        if e.get("ph") in ("b", "e", "i", "X") and all_timed:
            check(0 <= ns(e["ts"]) <= rec["duration_ns"] + 1, f"outside the recording: {e}")
    if failures:
        return
    by_ph = defaultdict(list)
    for e in evs:
        # the one process-wide instant marks the pauses not kept (below)
        by_ph["mark" if e["ph"] == "i" and e.get("s") == "p" else e["ph"]].append(e)

    # GC pauses: X events, in the record's order
    timed = [p for p in rec["pauses"] if p["tid"]]
    xs = by_ph["X"]
    check(len(xs) == len(timed), f"{len(xs)} X events, {len(timed)} timed gc_pause lines")
    for x, p in zip(xs, timed):
        check((ns(x["ts"]), dns(x["dur"]), x["tid"]) == (p["at"], p["dur"], p["tid"]),
              f"X {x} is not gc_pause {p}")
    # the heap after each pause, where the runtime gives it: a counter at its end
    heap = [x for x in xs if "heap_bytes" in x["args"]]
    cs = by_ph["C"]
    check(len(cs) == len(heap), f"{len(cs)} heap counter events, {len(heap)} pauses with a heap")
    for c, x in zip(cs, heap):
        check((c["name"], ns(c["ts"]), c["args"]) ==
              ("heap", ns(x["ts"]) + dns(x["dur"]), {"bytes": x["args"]["heap_bytes"]}),
              f"counter {c} is not the heap after {x}")
    # a figure no pause has is absent, not 0
    for key in ("heap_bytes", "allocated_bytes", "objects_collected"):
        present = [key in x["args"] for x in xs]
        check(all(present) or not any(present), f"{key} in some pauses' args only")
        check(not xs or not all(present) or any(x["args"][key] for x in xs), f"{key} 0 in every pause")
    unkept = doc.get("otherData", {}).get("gc_pauses_not_kept")
    marks = by_ph["mark"]
    check(isinstance(unkept, int) and len(marks) == (1 if unkept else 0) and
          all(m["name"].startswith(f"{unkept} shorter GC pauses not drawn") for m in marks),
          f"pauses not kept: otherData {unkept}, marks {[m['name'] for m in marks]}")
    untimed = len(rec["pauses"]) - len(timed)
    check(doc.get("otherData", {}).get("gc_pauses_without_start") == untimed,
          f"otherData says {doc.get('otherData', {}).get('gc_pauses_without_start')} pauses "
          f"without a start, the record has {untimed}")
    if all_timed:
        check(untimed == 0 and len(timed) > 0, f"{len(timed)} timed and {untimed} untimed pauses")
    for tid in {x["tid"] for x in xs}:
        spans = sorted((ns(x["ts"]), -dns(x["dur"])) for x in xs if x["tid"] == tid)
        stack = []
        for start, mdur in spans:
            end = start - mdur
            while stack and stack[-1] <= start:
                stack.pop()
            check(not stack or end <= stack[-1],
                  f"thread {tid}: GC slice at {start} ns overlaps its parent without nesting")
            stack.append(end)

    # signals: a b/e pair each, spanning the latency
    sigs = [e for e in rec["events"] if e["kind"] == 0]
    bs, es = by_ph["b"], by_ph["e"]
    check(len(bs) == len(es) == len(sigs), f"{len(bs)} b, {len(es)} e, {len(sigs)} signal lines")
    ends = {e.get("id"): e for e in es}
    check(len(ends) == len(es) and all("id" in b for b in bs), "async ids missing or repeated")
    for b, s in zip(bs, sigs):
        e = ends.get(b.get("id"), {})
        check((b["tid"], e.get("tid"), ns(e.get("ts", -1)), ns(e.get("ts", -1)) - ns(b["ts"]),
               b["args"]["signo"], b["args"]["latency_ns"]) ==
              (s["tid"], s["tid"], s["at"], s["dur"], s["arg"], s["dur"]),
              f"signal pair {b} / {e} is not event {s}")

    # cache resets: instant events on their thread
    resets = [e for e in rec["events"] if e["kind"] in (1, 2)]
    iis = by_ph["i"]
    check(len(iis) == len(resets), f"{len(iis)} i events, {len(resets)} cache reset lines")
    for i, r in zip(iis, resets):
        want = {"class": r["name"], "method": r["name2"]} if r["kind"] == 1 else {"name": r["name"]}
        want["serial"] = r["serial"]
        check((ns(i["ts"]), i["tid"], i.get("s"), i.get("args")) == (r["at"], r["tid"], "t", want),
              f"instant {i} is not event {r}")

    # names: one process, every thread used
    meta = Counter(m["name"] for m in by_ph["M"])
    check(meta["process_name"] == 1, f"{meta['process_name']} process_name events")
    named = {m["tid"] for m in by_ph["M"] if m["name"] == "thread_name"}
    used = {e["tid"] for ph in "Xbei" for e in by_ph[ph]}
    check(used <= named, f"threads without a name: {sorted(used - named)}")


if __name__ == "__main__":
    main()
    for f in failures[:20]:
        print("perfetto_check: " + f, file=sys.stderr)
    sys.exit(1 if failures else 0)
