"""py_spawn.py: for ext_test.py's py-spawn case, started by
`vmtrace record --runtime vmtrace`, which imports vmtrace's CPython extension
before it runs. Starts tracemalloc, makes 2000 bytes objects of 1000 at one
line and keeps them, and prints one JSON line: that line, and what
tracemalloc's snapshot holds there (statistics("lineno"), 1 frame)."""
import json
import tracemalloc

N = 2000
tracemalloc.start()
keep = [None] * N


def make():
    for i in range(N):
        keep[i] = bytes(1000)  # the line: every object kept


make()
snap = tracemalloc.take_snapshot()
line = make.__code__.co_firstlineno + 2
held = {(s.traceback[0].filename, s.traceback[0].lineno): (s.size, s.count)
        for s in snap.statistics("lineno")}
size, count = held.get((__file__, line), (0, 0))
print(json.dumps({"file": __file__, "line": line, "bytes": size, "count": count}), flush=True)
