"""py_leak.py: a CPython workload with vmtrace's extension imported, for
ext_test.py's py-live case. Prints "ready", waits for a tracer to arm the
extension, then leak() keeps 1000 bytes(1000) objects (1033 bytes each
through the object allocator) at one line, and temp() makes 5000 more at
another, each freed at once; prints "done" and waits for a line on stdin.
The loops count with CPython's cached small ints, so they allocate nothing.
"""
import sys
import time

import vmtrace

leaked = [[None] * 100 for _ in range(10)]


def leak():
    for a in range(10):
        for b in range(100):
            leaked[a][b] = bytes(1000)  # LEAK_LINE


def temp():
    for a in range(50):
        for b in range(100):
            bytes(1000)  # TEMP_LINE


print("ready", flush=True)
while not vmtrace.armed():
    time.sleep(0.001)
leak()
temp()
print("done", flush=True)
sys.stdin.readline()
