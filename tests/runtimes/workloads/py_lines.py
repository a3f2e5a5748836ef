"""py_lines.py: a CPython workload with vmtrace's extension imported, for
ext_test.py's python cases. Prints "ready", waits for a tracer to arm the
extension, starts tracemalloc, makes N bytes objects of SIZE at one line and
keeps them all, then prints one JSON line: that line's number and what
tracemalloc's snapshot holds at it (statistics("lineno"), 1 frame), and how
often a metaclass's own __subclasses__ was called (never by a tracer). Then
waits for the tracer to leave (disarmed) and exits.
--attached: never imports vmtrace; waits for a tracer to load it into the
process and arm it.
"""
import json
import sys
import time
import tracemalloc

ATTACHED = "--attached" in sys.argv
if not ATTACHED:
    import vmtrace
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
N = int(ARGS[0]) if ARGS else 2000
SIZE = 1000


class Meta(type):
    """A metaclass with a __subclasses__ of its own: the program's code,
    which a tracer taking the types alive must not run."""
    calls = 0

    def __subclasses__(cls):
        Meta.calls += 1
        return type.__subclasses__(cls)


class Watched(metaclass=Meta):
    pass


def make(keep):
    for i in range(N):
        keep[i] = bytes(SIZE)  # the line: every object kept


print("ready", flush=True)
while ATTACHED and "vmtrace" not in sys.modules:
    time.sleep(0.001)
vmtrace = sys.modules["vmtrace"]
while not vmtrace.armed():
    time.sleep(0.001)
tracemalloc.start()
keep = [None] * N
make(keep)
snap = tracemalloc.take_snapshot()
line = make.__code__.co_firstlineno + 2
held = {(s.traceback[0].filename, s.traceback[0].lineno): (s.size, s.count)
        for s in snap.statistics("lineno")}
size, count = held.get((__file__, line), (0, 0))
print(json.dumps({"file": __file__, "line": line, "bytes": size, "count": count, "meta_calls": Meta.calls}),
      flush=True)
while vmtrace.armed():
    time.sleep(0.01)
