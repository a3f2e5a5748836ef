#!/usr/bin/env python3
"""compare_stacks.py TRUTH FOLDED [count|bytes|by-stack]: demovm's
allocations per call path (the truth file's "stacks") against vmtrace's
folded output ("root;...;leaf;Class N"), exactly. Lines of one stack add up
(vmtrace keeps one row per allocation site). by-stack: FOLDED is instead
`report --by stack --format json`, whose rows are per stack, every class
together."""
import collections
import json
import sys

truth, folded = sys.argv[1], sys.argv[2]
field = sys.argv[3] if len(sys.argv) > 3 else "count"
want = collections.Counter()
got = collections.Counter()
if field == "by-stack":
    field = "count"
    for s in json.load(open(truth))["stacks"]:
        want[s["stack"]] += s["count"]
    for r in json.load(open(folded))["allocations"]:
        got[r["stack"]] += r["count"]
else:
    for s in json.load(open(truth))["stacks"]:
        want[s["stack"] + ";" + s["class"]] = s[field]
    for line in open(folded):
        key, _, n = line.rstrip("\n").rpartition(" ")
        got[key] += int(n)
want, got = dict(want), dict(got)
if not want:
    sys.exit("the truth file has no stacks")
bad = [(k, want.get(k), got.get(k)) for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
for k, w, g in bad:
    print(f"{k}: truth {w}, vmtrace {g}")
if bad:
    sys.exit(f"{len(bad)} of {len(want)} stacks differ ({field})")
print(f"{len(want)} stacks, {sum(want.values())} {field}: equal to the truth")
