"""busy_one.py: one thread making objects until a line arrives on stdin (a
second thread waits in that read), for bench/runtimes/attach_time.py.
Prints "ready" first."""
import sys
import threading

stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
print("ready", flush=True)
while not stop.is_set():
    words = []
    for i in range(300):
        words.append(f"w{i}")
        {i: [i]}
