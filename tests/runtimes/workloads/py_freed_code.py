"""py_freed_code.py: functions compiled, run and dropped one after another.
Each makes the same objects (a list of three Markers); once dropped, its
code object is freed, and its address may come back as another's. vmtrace
must count each function's allocations under its own name: N functions,
each with the same count.

Usage: python3 py_freed_code.py N   (prints "done N" at the end)
"""
import gc
import sys


class Marker:
    pass


N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
for i in range(N):
    ns = {"Marker": Marker}
    exec(compile(f"def make_{i}():\n    return [Marker(), Marker(), Marker()]\n", "gen.py", "exec"), ns)
    ns[f"make_{i}"]()
    del ns
    if i % 10 == 9:
        gc.collect()
print(f"done {N}")
