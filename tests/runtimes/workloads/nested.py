# nested.py: a Python workload with known call stacks, for tests/runtimes'
# stack cases: a calls b calls c, c called N times, each call making one
# Leaf; d calls c M times; a method of Maker (a qualified name) calls c K
# times. Leaf is made nowhere else, so each stack's Leaf count is exactly
# its number below. With DEPTH, r recurses DEPTH deep and calls c once;
# with T, a thread's worker calls c T times (its own stack, from the
# threading module's bootstrap).
#
# Usage: python3.11 nested.py N M K [DEPTH [T]]
#   Traces memory (vmtrace sees objects through tracemalloc's hook),
#   prints "ready", waits for a line on stdin, runs, prints "done", waits
#   for a second line, exits.
import sys
import threading
import tracemalloc


class Leaf:
    __slots__ = ()


def c(keep):
    keep.append(Leaf())


def b(keep):
    c(keep)


def a(n, keep):
    for _ in range(n):
        b(keep)


def d(m, keep):
    for _ in range(m):
        c(keep)


def r(depth, keep):
    if depth > 1:
        r(depth - 1, keep)
    else:
        c(keep)


def worker(t, keep):
    for _ in range(t):
        c(keep)


class Maker:
    def e(self, k, keep):
        for _ in range(k):
            c(keep)


def main():
    n, m, k = (int(x) for x in sys.argv[1:4])
    depth = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    t = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    if not tracemalloc.is_tracing():
        tracemalloc.start()
    keep = []
    print("ready", flush=True)
    sys.stdin.readline()
    a(n, keep)
    d(m, keep)
    Maker().e(k, keep)
    if depth:
        r(depth, keep)
    if t:
        th = threading.Thread(target=worker, args=(t, keep))
        th.start()
        th.join()
    print("done", flush=True)
    sys.stdin.readline()


main()
