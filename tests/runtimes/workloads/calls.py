# calls.py: a CPython workload whose calls per function and GC collections
# are known by construction, for tests/runtimes.
#
# Usage: python3.11 calls.py [--profile]
#   Prints "ready", waits for one line on stdin (vmtrace attaches meanwhile),
#   runs the workload, prints one JSON line with what gc.collect() returned,
#   then "done", waits for a second line and leaves with os._exit(0) (no
#   interpreter shutdown, whose own collections would blur the count).
#   --profile  sets a C-level profile function (the builtin `slice`, which
#              accepts any three arguments and does nothing) in every thread:
#              CPython 3.11 fires function__entry only while one is set.
#
# Expected calls (function: count):
#   leaf 1000 (middle calls it 100 times, 10 middles), middle 10, outer 1,
#   fib 177 (fib(10), recursive), tick 600 (two threads, 300 each),
#   squares 6 (a generator yielding 5 values: CPython's probes fire once per
#   start or resume, 1 + 5).
# Expected GC (automatic collection disabled): gen2 3, gen0 2, gen1 1; each
# collection finds the cycles made just before it.
import gc
import json
import os
import sys
import threading


def leaf(x):
    return x + 1


def middle(n):
    s = 0
    for i in range(n):
        s += leaf(i)
    return s


def outer(k):
    total = 0
    for _ in range(k):
        total += middle(100)
    return total


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def tick(i):
    return i * 2


def ticker(n):
    for i in range(n):
        tick(i)


def squares(n):
    for i in range(n):
        yield i * i


def make_cycles(n):
    for _ in range(n):
        a = []
        a.append(a)


def collect(generation, cycles):
    make_cycles(cycles)
    return gc.collect(generation)


def workload():
    outer(10)
    fib(10)
    total = 0
    for v in squares(5):
        total += v
    threads = [threading.Thread(target=ticker, args=(300,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = []
    for generation, cycles in ((2, 40), (2, 50), (2, 60), (0, 30), (0, 20), (1, 10)):
        found.append({"generation": generation, "collected": collect(generation, cycles)})
    return found


gc.disable()
if "--profile" in sys.argv:
    threading.setprofile(slice)
    sys.setprofile(slice)
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.readline()
result = workload()
sys.stdout.write(json.dumps({"gc": result}) + "\n")
sys.stdout.write("done\n")
sys.stdout.flush()
sys.stdin.readline()
os._exit(0)
