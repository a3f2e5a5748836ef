#!/usr/bin/python3.11
"""Integration tests: `vmtrace record --stack vm` on Debian's stock ruby,
whose whole Ruby stack is walked in BPF at each allocation.
workloads/nested.rb makes Leaf objects from three known call stacks; each
case records it (spawned, or attached by pid) and checks that the report's
stacks of Leaf are exactly those three with exactly their counts, in the
JSON (--by stack) and in the folded output.

Usage: stack_test.py VMTRACE CASE
Cases: ruby-stack-spawn, ruby-stack-pid, ruby-stack-native. Exit 0 pass,
1 fail, 77 skip (not root).
"""
import os
import subprocess
import sys

import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
NESTED_RB = os.path.join(HERE, "workloads", "nested.rb")
N, M, K = 300, 200, 70

# root first, as `--by stack` and folded print them
EXPECTED = {
    "<main>;Maker#a;Maker#b;Maker#c": N,
    "<main>;Maker#d;Maker#c": M,
    "<main>;Maker#e;block in e;Maker#c": K,  # Array#each, a C method, is no Ruby frame
}


def check_stacks(vmtrace, data, mode):
    # folded: root;...;leaf frame;class count, so Leaf's stacks are exact
    r = subprocess.run([vmtrace, "report", data, "--format", "folded"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, f"{mode}: folded report exits 0: {r.stderr.strip()}")
    folded = {}
    for line in r.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        if stack.endswith(";Leaf"):
            folded[stack[:-len(";Leaf")]] = folded.get(stack[:-len(";Leaf")], 0) + int(n)
    check(folded == EXPECTED, f"{mode}: folded Leaf stacks {folded} == {EXPECTED}")
    # --by stack: each of them a row, with at least its Leaf objects (a
    # first call also makes Ruby's call caches there)
    j = report(vmtrace, data, "--by", "stack")
    rows = {a["stack"]: a["count"] for a in j["allocations"]}
    for stack, n in EXPECTED.items():
        check(rows.get(stack, 0) >= n, f"{mode}: --by stack row {stack}: {rows.get(stack)} >= {n}")
    lost = {l["what"]: l["count"] for l in j["lost"] if l["count"]}
    check(not lost, f"{mode}: nothing lost {lost}")
    r = subprocess.run([vmtrace, "report", data, "--format", "flamegraph"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and "Maker#c" in r.stdout and "Maker#e" in r.stdout,
          f"{mode}: the flame graph holds the Ruby frames")


def case_spawn(vmtrace, tmp):
    data, _ = rt.record_spawn(vmtrace, [rt.RUBY, NESTED_RB, str(N), str(M), str(K)], tmp,
                              ["--stack", "vm"])
    check_stacks(vmtrace, data, "ruby stacks, spawned")


def case_pid(vmtrace, tmp):
    data, _ = rt.record_pid(vmtrace, [rt.RUBY, NESTED_RB, str(N), str(M), str(K)], tmp,
                            ["--stack", "vm"])
    check_stacks(vmtrace, data, "ruby stacks, by pid")


def case_native(vmtrace, tmp):
    """--stack native is refused for Ruby, with a one-line reason."""
    r = subprocess.run([vmtrace, "record", "--stack", "native", "-o", os.path.join(tmp, "n.data"),
                        "--", rt.RUBY, "-e", "1"], capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "--stack native" in r.stderr,
          f"ruby --stack native refused ({r.returncode}): {r.stderr.strip()}")


CASES = {"ruby-stack-spawn": case_spawn, "ruby-stack-pid": case_pid,
         "ruby-stack-native": case_native}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
