"""pydoc_driver.py: pydoc -w over modules, timed from inside, for
run_pydoc_ext.sh. With --armed (vmtrace's CPython extension imported),
prints "ready" and waits for a tracer to arm the extension first; with
--import, imports it and runs dormant; with --attached (never imported),
prints "ready" and waits for a tracer to load the extension into it and arm
it (vmtrace record -p: docs/runtimes.md, "Attaching"); prints "seconds S"
for the pydoc run alone."""
import os
import runpy
import sys
import time

armed = "--armed" in sys.argv
attached = "--attached" in sys.argv
mods = [a for a in sys.argv[1:] if a not in ("--armed", "--import", "--attached")]
if "--import" in sys.argv:
    import vmtrace  # noqa: F401 (loaded, dormant)
if armed:
    import vmtrace
    print("ready", flush=True)
    while not vmtrace.armed():
        time.sleep(0.001)
if attached:
    print("ready", flush=True)
    while "vmtrace" not in sys.modules or not sys.modules["vmtrace"].armed():
        time.sleep(0.001)
sys.argv = ["pydoc", "-w", *mods]
t0 = time.perf_counter()
with open(os.devnull, "w") as null:
    out, sys.stdout = sys.stdout, null
    runpy.run_module("pydoc", run_name="__main__")
    sys.stdout = out
print("seconds %.4f" % (time.perf_counter() - t0), flush=True)
