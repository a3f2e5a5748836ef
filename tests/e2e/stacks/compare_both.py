#!/usr/bin/env python3
"""compare_both.py TRUTH FOLDED: demovm's allocations against vmtrace's
folded stacks of --stack both ("native root;...;native leaf;VM root;...;VM
leaf;Class N"). Every row's native part (its frames before the first VM
frame, whose names hold '#') runs from worker_main through vm_new into
libvmtrace; its VM part with the class, summed over rows, equals the
truth's stacks exactly; the Tree#grow recursion shows in both parts alike
(a tree_grow native frame per Tree#grow VM frame)."""
import collections
import json
import sys

truth = json.load(open(sys.argv[1]))
want = collections.Counter()
for s in truth["stacks"]:
    want[s["stack"] + ";" + s["class"]] += s["count"]
got = collections.Counter()
# libvmtrace's frames below vm_new (compare_native.py)
PROVIDER = ("vmtrace__alloc_live", "vmtrace__alloc_at", "alloc_general")
rows = 0
for line in open(sys.argv[2]):
    key, _, n = line.rstrip("\n").rpartition(" ")
    frames = key.split(";")
    vm_at = next((i for i, f in enumerate(frames) if "#" in f), None)
    if vm_at is None or vm_at < 3:
        sys.exit(f"a stack without both parts: {key}")
    native, vm = frames[:vm_at], frames[vm_at:]
    lib = len(native)
    while lib > 0 and native[lib - 1] in PROVIDER:
        lib -= 1
    if lib == len(native) or lib == 0 or native[lib - 1] != "vm_new" or "worker_main" not in native:
        sys.exit(f"a native part not from worker_main through vm_new: {key}")
    if native.count("tree_grow") != vm.count("Tree#grow"):
        sys.exit(f"tree_grow and Tree#grow frames differ: {key}")
    got[";".join(vm)] += int(n)
    rows += 1
if not want:
    sys.exit("the truth file has no stacks")
bad = [(k, want.get(k), got.get(k)) for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
for k, w, g in bad:
    print(f"{k}: truth {w}, vmtrace {g}")
if bad:
    sys.exit(f"{len(bad)} of {len(want)} VM stacks differ")
print(f"{rows} native+VM stacks; their VM parts: {len(want)} stacks, {sum(want.values())} "
      "allocations, equal to the truth")
