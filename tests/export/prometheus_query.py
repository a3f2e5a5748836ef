#!/usr/bin/env python3
"""Checks what a real Prometheus server scraped from `vmtrace serve`, through
its HTTP API on 127.0.0.1 (exports.sh prometheus): the target is up with no
scrape error, series came in, no loss series moved, no pause bucket ever went down (no counter
reset), every pause counted is a collection counted, and the p50 and p99
Prometheus computes from the buckets lie within a bucket of those of a
`vmtrace record` of the same run.

Usage: prometheus_query.py PROMETHEUS_PORT RECORD.json
"""
import json
import math
import sys
import time
import urllib.parse
import urllib.request

port, record = int(sys.argv[1]), sys.argv[2]
failures = []


def query(q):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=5) as r:
        d = json.load(r)
    assert d["status"] == "success", d
    return d["data"]["result"]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=5))
active = targets["data"]["activeTargets"]
check(len(active) == 1 and active[0]["health"] == "up" and not active[0]["lastError"],
      f"the target is up with no scrape error: {[(t['health'], t['lastError']) for t in active]}")
up = query('up{job="vmtrace"}')
check(up and up[0]["value"][1] == "1", f"up == 1: {up}")
allocs = query("sum(vmtrace_allocations_total)")
check(allocs and float(allocs[0]["value"][1]) > 0, f"allocations scraped: {allocs}")
lost = query("sum(vmtrace_lost_total)")
check(lost and float(lost[0]["value"][1]) == 0, f"no loss series moved on a healthy run: {lost}")
resets = query("sum(resets(vmtrace_gc_pause_seconds_bucket[5m]))")
check(resets and float(resets[0]["value"][1]) == 0, f"no pause bucket went down: {resets}")
counts = {r["metric"]["kind"]: float(r["value"][1])
          for r in query("sum by (kind) (vmtrace_gc_pause_seconds_count)")}
colls = {r["metric"]["kind"]: float(r["value"][1])
         for r in query("sum by (kind) (vmtrace_gc_collections_total)")}
check(counts and counts == colls, f"every collection's pause counted: _count {counts}, collections {colls}")

rec = json.load(open(record))["gc"]
for q, field in ((0.5, "pause_p50_ns"), (0.99, "pause_p99_ns")):
    r = query(f"histogram_quantile({q}, sum by (le) (vmtrace_gc_pause_seconds_bucket))")
    got = float(r[0]["value"][1]) if r else math.nan
    want = rec[field] / 1e9
    # the buckets double: within a bucket is within a factor of two either way
    check(want > 0 and want / 2 <= got <= want * 2,
          f"p{int(q * 100)} pause: Prometheus {got * 1e6:.1f} us from the buckets, "
          f"record's {want * 1e6:.1f} us (same run)")
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
