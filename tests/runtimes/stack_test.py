#!/usr/bin/python3.11
"""Integration tests: `vmtrace record --stack vm` on Debian's stock ruby
and python3.11, whose whole Ruby or Python stack is walked in BPF at each
allocation. workloads/nested.rb and nested.py make Leaf objects from three
known call stacks; each case records one (spawned, or attached by pid) and
checks that the report's stacks of Leaf are exactly those three with
exactly their counts, in the JSON (--by stack) and in the folded output.

Usage: stack_test.py VMTRACE CASE
Cases: ruby-stack-spawn, ruby-stack-pid, ruby-stack-native, ruby-stack-chains,
python-stack-spawn, python-stack-pid, python-stack-deep, python-stack-native. Exit 0 pass,
1 fail, 77 skip (not root).
"""
import ast
import os
import subprocess
import sys
import urllib.parse

import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
NESTED_RB = os.path.join(HERE, "workloads", "nested.rb")
NESTED_PY = os.path.join(HERE, "workloads", "nested.py")
CHAINS_RB = os.path.join(HERE, "workloads", "chains.rb")
N, M, K = 300, 200, 70
T = 40  # Python: made by c on a thread of its own

# root first, as `--by stack` and folded print them
EXPECTED = {
    "<main>;Maker#a;Maker#b;Maker#c": N,
    "<main>;Maker#d;Maker#c": M,
    "<main>;Maker#e;block in e;Maker#c": K,  # Array#each, a C method, is no Ruby frame
}
PY_EXPECTED = {
    "<module>;main;a;b;c": N,
    "<module>;main;d;c": M,
    "<module>;main;Maker.e;c": K,
    "Thread._bootstrap;Thread._bootstrap_inner;Thread.run;worker;c": T,
}


def check_stacks(vmtrace, data, mode, expected=EXPECTED, frames=("Maker#c", "Maker#e")):
    # folded: root;...;leaf frame;class count, so Leaf's stacks are exact
    r = subprocess.run([vmtrace, "report", data, "--format", "folded"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, f"{mode}: folded report exits 0: {r.stderr.strip()}")
    folded = {}
    for line in r.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        if stack.endswith(";Leaf"):
            folded[stack[:-len(";Leaf")]] = folded.get(stack[:-len(";Leaf")], 0) + int(n)
    check(folded == expected, f"{mode}: folded Leaf stacks {folded} == {expected}")
    # --by stack: each of them a row, with at least its Leaf objects (a
    # first call also makes Ruby's call caches there)
    j = report(vmtrace, data, "--by", "stack")
    rows = {a["stack"]: a["count"] for a in j["allocations"]}
    for stack, n in expected.items():
        check(rows.get(stack, 0) >= n, f"{mode}: --by stack row {stack}: {rows.get(stack)} >= {n}")
    lost = rt.real_losses(j)  # less the notes on the bytes Python's objects show
    check(not lost, f"{mode}: nothing lost {lost}")
    r = subprocess.run([vmtrace, "report", data, "--format", "flamegraph"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and all(f in r.stdout for f in frames),
          f"{mode}: the flame graph holds the frames {frames}")


def case_spawn(vmtrace, tmp):
    data, _ = rt.record_spawn(vmtrace, [rt.RUBY, NESTED_RB, str(N), str(M), str(K)], tmp,
                              ["--stack", "vm"])
    check_stacks(vmtrace, data, "ruby stacks, spawned")


def case_pid(vmtrace, tmp):
    data, _ = rt.record_pid(vmtrace, [rt.RUBY, NESTED_RB, str(N), str(M), str(K)], tmp,
                            ["--stack", "vm"])
    check_stacks(vmtrace, data, "ruby stacks, by pid")


def record_stacks(data):
    """The record file's stacks with their lines: {(stack, class, method,
    site): count}, a stack as "name:line;..." root first."""
    texts = []

    def text(tok):
        # "=string", or "#N": the file's text line N (docs/record-format.md)
        return texts[int(tok[1:]) - 1] if tok[0] == "#" else urllib.parse.unquote(tok[1:])

    stacks, allocs = [], {}
    with open(data, encoding="utf-8") as f:
        for line in f:
            t = line.split()
            if t and t[0] == "text":
                texts.append(text(t[1]))
            elif t and t[0] == "stack":
                d = int(t[2])
                stacks.append(";".join(f"{text(t[3 + 3 * i])}:{t[5 + 3 * i]}" for i in range(d)))
            elif t and t[0] == "alloc_stack":
                k = (stacks[int(t[1]) - 1], text(t[2]), text(t[3]), text(t[4]))
                allocs[k] = allocs.get(k, 0) + int(t[5])
    return allocs


def case_chains(vmtrace, tmp):
    """Stacks that only a frame's line, its method entry or its block's env
    tell apart, each coming back N times in one loop: exact, line by line
    (the record file keeps each frame's line), with the right method."""
    n = 400
    data, _ = rt.record_spawn(vmtrace, [rt.RUBY, CHAINS_RB, str(n)], tmp, ["--stack", "vm"])
    site = CHAINS_RB + ":"
    got = {k: v for k, v in record_stacks(data).items() if k[1] == "Leaf"}
    want = {
        ("<main>:43;Maker#p:19;Maker#c:18", "Leaf", "Maker#c", site + "18"): n,
        ("<main>:44;Maker#q:20;Maker#c:18", "Leaf", "Maker#c", site + "18"): n,
        ("<main>:45;block in <main>:45;Maker#p:19;Maker#c:18", "Leaf", "Maker#c", site + "18"): n,
        ("<main>:45;block in <main>:45;Copy#p:19;Copy#c:18", "Leaf", "Copy#c", site + "18"): n,
        ("<main>:46;block in <main>:46;Maker#r:21;Maker#c:18", "Leaf", "Maker#c", site + "18"): n,
        ("<main>:46;block in <main>:46;Copy#r:21;Maker#c:18", "Leaf", "Maker#c", site + "18"): n,
        ("<main>:47;Maker#two:24;Maker#c:18", "Leaf", "Maker#c", site + "18"): n,
        ("<main>:47;Maker#two:25;Maker#c:18", "Leaf", "Maker#c", site + "18"): n,
        ("<main>:47;Maker#two:26", "Leaf", "Maker#two", site + "26"): n,
        ("<main>:47;Maker#two:27", "Leaf", "Maker#two", site + "27"): n,
        ("<main>:48;block in <main>:48;block in mk:30", "Leaf", "Maker#mk", site + "30"): n,
        ("<main>:48;block in <main>:48;block in mk:30", "Leaf", "Copy#mk", site + "30"): n,
    }
    check(got == want, f"chains: Leaf by stack, method and site {got} == {want}")
    lost = rt.real_losses(report(vmtrace, data))
    check(not lost, f"chains: nothing lost {lost}")


def check_refused(vmtrace, tmp, runtime, argv):
    """--stack native and --stack both are refused for a stock runtime,
    each with a one-line reason naming it."""
    for mode in ("native", "both"):
        r = subprocess.run([vmtrace, "record", "--stack", mode, "-o", os.path.join(tmp, "n.data"),
                            *rt.stock_ruby(argv, ()), "--", *argv], capture_output=True, text=True, timeout=60)
        check(r.returncode != 0 and f"--stack {mode}:" in r.stderr and
              len(r.stderr.strip().splitlines()) == 1,
              f"{runtime} --stack {mode} refused ({r.returncode}): {r.stderr.strip()}")


def case_native(vmtrace, tmp):
    check_refused(vmtrace, tmp, "ruby", [rt.RUBY, "-e", "1"])


def call_lines(path):
    """{(function's qualified name, callee): line} of every call in a
    Python file, from its syntax tree: the line each frame of a stack
    through path must show."""
    lines = {}

    def walk(node, qual):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                walk(child, child.name if qual == "<module>" else f"{qual}.{child.name}")
                continue
            if isinstance(child, ast.Call):
                f = child.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name:
                    lines.setdefault((qual, name), child.lineno)
            walk(child, qual)

    with open(path, encoding="utf-8") as f:
        walk(ast.parse(f.read()), "<module>")
    return lines


def check_py_lines(data, mode):
    """The record file's Leaf stacks, frame by frame: each nested.py frame
    at the line of the call it is in (its running instruction's line, not
    its first), the module's frame named by its own file."""
    at = call_lines(NESTED_PY)

    def stack(*calls):
        return ";".join(f"{fn}:{at[(fn, callee)]}" for fn, callee in calls)

    site = f"{NESTED_PY}:{next(i for i, t in enumerate(open(NESTED_PY), 1) if t.startswith('def c('))}"
    tail = [("c", "Leaf")]
    want = {
        (stack(("<module>", "main"), ("main", "a"), ("a", "b"), ("b", "c"), *tail), "Leaf", "c",
         site): N,
        (stack(("<module>", "main"), ("main", "d"), ("d", "c"), *tail), "Leaf", "c", site): M,
        (stack(("<module>", "main"), ("main", "e"), ("Maker.e", "c"), *tail), "Leaf", "c",
         site): K,
    }
    got = {k: v for k, v in record_stacks(data).items()
           if k[1] == "Leaf" and k[0].startswith("<module>:")}
    check(got == want, f"{mode}: Leaf stacks with their lines {got} == {want}")
    thread = [(k, v) for k, v in record_stacks(data).items()
              if k[1] == "Leaf" and not k[0].startswith("<module>:")]
    check(len(thread) == 1 and thread[0][1] == T and
          thread[0][0][0].endswith(";" + stack(("worker", "c"), *tail)),
          f"{mode}: the thread's Leaf stack ends in worker and c at their lines: {thread}")


def case_py_spawn(vmtrace, tmp):
    data, _ = rt.record_spawn(vmtrace, [rt.PYTHON, NESTED_PY, str(N), str(M), str(K), "0",
                                        str(T)], tmp, ["--stack", "vm"])
    check_stacks(vmtrace, data, "python stacks, spawned", PY_EXPECTED, ("Maker.e", "main"))
    check_py_lines(data, "python stacks, spawned")


def case_py_pid(vmtrace, tmp):
    data, _ = rt.record_pid(vmtrace, [rt.PYTHON, NESTED_PY, str(N), str(M), str(K), "0",
                                      str(T)], tmp, ["--stack", "vm"])
    check_stacks(vmtrace, data, "python stacks, by pid", PY_EXPECTED, ("Maker.e", "main"))
    check_py_lines(data, "python stacks, by pid")


def case_py_deep(vmtrace, tmp):
    """A stack deeper than 127 frames is cut: its innermost 127 kept, the
    report's stack begins with [cut], and the Lost row counts it."""
    depth = 200
    data, _ = rt.record_spawn(vmtrace, [rt.PYTHON, NESTED_PY, "0", "0", "0", str(depth)], tmp,
                              ["--stack", "vm"])
    r = subprocess.run([vmtrace, "report", data, "--format", "folded"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, f"deep: folded report exits 0: {r.stderr.strip()}")
    leaf = [line.rpartition(" ") for line in r.stdout.splitlines()
            if line.rpartition(" ")[0].endswith(";Leaf")]
    want = "[cut];" + "r;" * 126 + "c;Leaf"
    check([(s, n) for s, _, n in leaf] == [(want, "1")],
          f"deep: one Leaf under the innermost 127 frames after [cut]: {[(s[:40], n) for s, _, n in leaf]}")
    lost = rt.real_losses(report(vmtrace, data))
    check(lost.get("stack cut at 127 Python frames", 0) >= 1, f"deep: the cut is counted {lost}")


def case_py_native(vmtrace, tmp):
    check_refused(vmtrace, tmp, "python", [rt.PYTHON, "-c", "1"])


CASES = {"ruby-stack-spawn": case_spawn, "ruby-stack-pid": case_pid,
         "ruby-stack-native": case_native, "ruby-stack-chains": case_chains, "python-stack-spawn": case_py_spawn,
         "python-stack-pid": case_py_pid, "python-stack-deep": case_py_deep,
         "python-stack-native": case_py_native}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
