# bench.py: the Python workload of bench/runtimes/run_python.sh. Each
# iteration makes 2 Python-level calls (Point.__init__, step) and 4 objects
# of its own (a Point, a dict, a list, a str); the interpreter makes about 5
# more (2 tuples, 3 ints): 9 objects per iteration, as vmtrace counts them.
#
# Usage: python3.11 bench.py ITERATIONS [--import] [--armed]
#   Prints "ready", waits for a line on stdin (the tracer attaches meanwhile),
#   runs, prints "ns_per_iter N" and exits.
#   --import  imports vmtrace's CPython extension (dormant unless armed)
#   --armed   with it imported: waits, after the line, for the attached
#             tracer to have armed it
import sys
import time

if "--import" in sys.argv or "--armed" in sys.argv:
    import vmtrace


class Point:
    def __init__(self, x):
        self.x = x


def step(i):
    return Point(i), {"i": i}, [i], str(i + 1000)


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    print("ready", flush=True)
    sys.stdin.readline()
    if "--armed" in sys.argv:
        while not vmtrace.armed():
            time.sleep(0.001)
    t0 = time.monotonic_ns()
    for i in range(iterations):
        step(i)
    t1 = time.monotonic_ns()
    print(f"ns_per_iter {(t1 - t0) // iterations}", flush=True)


main()
