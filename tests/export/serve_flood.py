#!/usr/bin/env python3
"""Holds connections to a /metrics server the way a careless or hostile
client would, while it scrapes: IDLE connections that send nothing,
TRICKLE that send a header line every half second (so an idle timeout
never fires), and one that sends garbage. Each of SCRAPES scrapes must get
its 200 within a second; the garbage must get a 400. Every loop is bounded
in count and time and only talks to 127.0.0.1.

Usage: serve_flood.py PORT IDLE TRICKLE SCRAPES
"""
import socket
import sys
import threading
import time
import urllib.request

port, idle, trickle, scrapes = (int(a) for a in sys.argv[1:5])
held = []
stop = threading.Event()


def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    held.append(s)
    return s


def trickler(s):
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    for i in range(40):
        if stop.wait(0.5):
            return
        try:
            s.sendall(b"X-Slow-%d: y\r\n" % i)
        except OSError:
            return


for _ in range(idle):
    connect()
threads = [threading.Thread(target=trickler, args=(connect(),)) for _ in range(trickle)]
for t in threads:
    t.start()
time.sleep(1)
failures = 0
for i in range(scrapes):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1) as r:
            ok = r.status == 200 and b"vmtrace_" in r.read()
    except Exception as e:
        ok = False
        print(f"scrape {i}: {e}")
    took = time.monotonic() - t0
    print(f"scrape {i}: {'ok' if ok else 'FAILED'} in {took:.3f} s with {idle} idle and "
          f"{trickle} trickling connections held")
    failures += not ok or took > 1
    time.sleep(0.3)
g = socket.create_connection(("127.0.0.1", port), timeout=5)
g.sendall(b"\x16\x03\x01garbage that is no HTTP\r\n\r\n")
reply = g.recv(4096)
status = reply.split(b"\r\n", 1)[0]
print(f"garbage: {status!r}")
failures += b" 400 " not in status + b" "
stop.set()
for t in threads:
    t.join()
for s in held:
    s.close()
sys.exit(1 if failures else 0)
