# objects.py: a Python workload whose objects per type are known by
# construction, for tests/runtimes: vmtrace's count per type must equal the
# workload's own.
#
# Usage: python3.11 objects.py
#   Stops itself (SIGSTOP: vmtrace attaches while it is stopped), makes N
#   objects of each kind below in workload(), stops itself again (vmtrace
#   detaches), then prints one JSON line: per type, how many it made. Two
#   classes have an __init__ each: two functions of one name, two rows.
import json
import os
import signal
import sys

N = int(os.environ.get("OBJECTS_N", "1000"))


class A:
    def __init__(self, x):
        self.x = x


class B:
    def __init__(self, x):
        self.x = x


def workload(n, keep):
    k = 0
    for i in range(n):
        keep[k] = A(i)              # A: one object; its __init__ makes none
        keep[k + 1] = B(i)          # B
        keep[k + 2] = {}            # dict
        keep[k + 3] = {"a": i}      # dict
        keep[k + 4] = [i, i]        # list
        keep[k + 5] = str(i + 1000)  # str: one, from int.__str__
        k += 6
    return keep


def main():
    pid = os.getpid()
    stop = signal.SIGSTOP
    keep = [None] * (6 * N)
    workload(1, keep)               # warm up before counting
    os.kill(pid, stop)
    workload(N, keep)
    os.kill(pid, stop)
    print(json.dumps({"made": {"A": N, "B": N, "dict": 2 * N, "list": N, "str": N},
                      "calls": {"A.__init__": N, "B.__init__": N}, "n": N,
                      "sizeof": {"A": sys.getsizeof(A(0)), "dict": sys.getsizeof({})}}))


main()
