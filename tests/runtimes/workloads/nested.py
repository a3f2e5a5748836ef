# nested.py: a Python workload with known call stacks, for tests/runtimes'
# stack cases: a calls b calls c, c called N times, each call making one
# Leaf; d calls c M times; a method of Maker (a qualified name) calls c K
# times. Leaf is made nowhere else, so each stack's Leaf count is exactly
# its number below.
#
# Usage: python3.11 nested.py N M K
#   Traces memory (vmtrace sees objects through tracemalloc's hook),
#   prints "ready", waits for a line on stdin, runs, prints "done", waits
#   for a second line, exits.
import sys
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


class Maker:
    def e(self, k, keep):
        for _ in range(k):
            c(keep)


def main():
    n, m, k = (int(x) for x in sys.argv[1:4])
    if not tracemalloc.is_tracing():
        tracemalloc.start()
    keep = []
    print("ready", flush=True)
    sys.stdin.readline()
    a(n, keep)
    d(m, keep)
    Maker().e(k, keep)
    print("done", flush=True)
    sys.stdin.readline()


main()
