"""attach_busy.py: a busy CPython that never imported vmtrace, for
attach_test.py's attach/detach cycles: the main thread and two others make
objects in rounds whose result is known, one collects every 50 ms, one
waits in a read of stdin (a line there stops all), and SIGUSR1 is counted
by a handler. Prints "ready", then, when stopped, "ok SUM bad N": SUM is
one round's result, N the rounds that gave another (0 unless something
broke them).
"""
import gc
import signal
import sys
import threading
import time

signals = 0


def on_usr1(signum, frame):
    global signals
    signals += 1


signal.signal(signal.SIGUSR1, on_usr1)


def one_round(seed):
    words = []
    for i in range(300):
        words.append(f"w{seed + i}")
        {i: [i, str(i)]}
    return sum(len(w) for w in words)


WANT = one_round(7)
stop = threading.Event()
bad = [0]


def work():
    while not stop.is_set():
        if one_round(7) != WANT:
            bad[0] += 1


def collect():
    while not stop.is_set():
        gc.collect()
        time.sleep(0.05)


def read():
    sys.stdin.readline()
    stop.set()


threads = [threading.Thread(target=f) for f in (work, work, collect, read)]
for t in threads:
    t.start()
print("ready", flush=True)
work()
for t in threads:
    t.join()
print(f"ok {WANT} bad {bad[0]}", flush=True)
