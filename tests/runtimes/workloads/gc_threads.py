# gc_threads.py: CPython collections on known threads, for the timeline
# tests in tests/runtimes. Automatic collection is off; the main thread runs
# gc.collect(0) twice, a second thread gc.collect(2) three times. Prints
# "ready", waits for a line, works, then prints one JSON line: each thread's
# kernel thread id and the generations it collected, in order.
import gc
import json
import sys
import threading

gc.disable()
sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdin.readline()
done = {}


def worker():
    for _ in range(3):
        gc.collect(2)
    done["worker"] = {"tid": threading.get_native_id(), "generations": [2, 2, 2]}


for _ in range(2):
    gc.collect(0)
t = threading.Thread(target=worker)
t.start()
t.join()
done["main"] = {"tid": threading.get_native_id(), "generations": [0, 0]}
sys.stdout.write(json.dumps(done) + "\n")
sys.stdout.flush()
