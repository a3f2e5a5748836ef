"""Runs a module as `python3.11 -m MODULE ARGS` would (runpy), counting
every return of every Python function as sys.setprofile sees it (a
'return' event, which fires on each yield too, as CPython's
function__return probe does), per (qualified name, file, first line). At
the end, with the profile function removed, writes the counts as JSON to
OUT: the runtime's own count of calls, for corpus_test.py.

Usage: python3.11 count_calls.py OUT MODULE [ARGS...]
"""
import json
import runpy
import sys
from collections import Counter

out, module = sys.argv[1], sys.argv[2]
sys.argv = [module] + sys.argv[3:]
counts = Counter()


def returned(frame, event, arg):
    if event == "return":
        code = frame.f_code
        counts[(code.co_qualname, code.co_filename, code.co_firstlineno)] += 1


sys.setprofile(returned)
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
except SystemExit:
    pass
finally:
    sys.setprofile(None)
    with open(out, "w") as f:
        json.dump([[q, fn, line, n] for (q, fn, line), n in counts.items()], f)
