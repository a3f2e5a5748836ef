#!/usr/bin/env python3
"""compare_native.py TRUTH FOLDED: demovm's allocations against vmtrace's
folded native stacks (--stack native): every allocation under a stack that
runs from the worker thread through vm_new into libvmtrace, and the Node
allocations per depth of the Tree#grow recursion (tree_grow frames) equal
to the VM truth's per depth."""
import collections
import json
import sys

truth = json.load(open(sys.argv[1]))
rows = []
for line in open(sys.argv[2]):
    key, _, n = line.rstrip("\n").rpartition(" ")
    rows.append((key.split(";"), int(n)))
total = sum(a["count"] for a in truth["allocations"])
got = sum(n for _, n in rows)
if got != total:
    sys.exit(f"native stacks hold {got} allocations, the truth {total}")
# libvmtrace's frames below vm_new: the word path's entry
# (vmtrace__alloc_live), then vmtrace__alloc_at, or alloc_general when
# vmtrace__alloc_at (the batched leaf) tail-called it
PROVIDER = ("vmtrace__alloc_live", "vmtrace__alloc_at", "alloc_general")


def below_vm_new(frames):
    """frames from vm_new to the class: vm_new, libvmtrace's, the class"""
    i = len(frames) - 2
    while i >= 0 and frames[i] in PROVIDER:
        i -= 1
    return i >= 0 and frames[i] == "vm_new" and i < len(frames) - 2


for frames, n in rows:
    if not below_vm_new(frames) or "worker_main" not in frames:
        sys.exit(f"a stack not from worker_main through vm_new: {';'.join(frames)}")
want, have = collections.Counter(), collections.Counter()
for s in truth["stacks"]:
    if s["class"] == "Node":
        want[s["stack"].split(";").count("Tree#grow")] += s["count"]
for frames, n in rows:
    if frames[-1] == "Node":
        have[frames.count("tree_grow")] += n
if want != have:
    sys.exit(f"Node per recursion depth: truth {dict(want)}, native {dict(have)}")
print(f"native stacks: {got} allocations; Node per recursion depth {sorted(have.items())} equal the truth")
