#!/usr/bin/env python3
"""What is not an HTTP request gets a 400 and a close from /metrics, at
once: binary garbage, a line that is no request, a request line without a
version, a TLS ClientHello; a real request still gets its 200, also one
whose first line comes in pieces, and a first byte alone held for a second
costs the server no busy loop (its CPU time, with SERVE_PID). Each answer
must come within 2 s (the server's idle timeout is 10 s). Only talks to
127.0.0.1.

Usage: serve_garbage.py PORT [SERVE_PID]
"""
import os
import socket
import sys
import time

port = int(sys.argv[1])
serve_pid = int(sys.argv[2]) if len(sys.argv) > 2 else 0
# a TLS 1.2 ClientHello's record header and the start of its handshake
TLS_HELLO = bytes.fromhex("160301005a0100005603035e4f") + b"\x00" * 60
CASES = [
    ("binary garbage", b"\x00\xff\x13garbage\r\n\r\n", b"HTTP/1.1 400 "),
    ("a line that is no request", b"garbage\r\n\r\n", b"HTTP/1.1 400 "),
    ("a request line without a version", b"GET /metrics\r\n\r\n", b"HTTP/1.1 400 "),
    ("a TLS ClientHello", TLS_HELLO, b"HTTP/1.1 400 "),
    ("a request", b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"HTTP/1.1 200 "),
]
failed = 0


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# a first line in pieces: held, then served
s = socket.create_connection(("127.0.0.1", port), timeout=5)
before = cpu_s(serve_pid) if serve_pid else 0.0
s.sendall(b"GE")
time.sleep(1.0)
spent = cpu_s(serve_pid) - before if serve_pid else 0.0
s.sendall(b"T /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
s.settimeout(2)
got = b""
try:
    while (chunk := s.recv(65536)):
        got += chunk
except socket.timeout:
    pass
s.close()
ok = got.startswith(b"HTTP/1.1 200 ") and spent < 0.3
print(("ok   " if ok else "FAIL ") + f"a first line in pieces: {got[:20]!r}; "
      f"the server's CPU while it waited 1 s: {spent:.2f} s")
failed += not ok
for what, data, want in CASES:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(2)
    t0 = time.monotonic()
    s.sendall(data)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        got += b"<no close within 2 s>"
    took = time.monotonic() - t0
    s.close()
    ok = got.startswith(want) and not got.endswith(b"<no close within 2 s>")
    print(("ok   " if ok else "FAIL ") + f"{what}: {got[:40]!r} in {took:.2f} s")
    failed += not ok
sys.exit(1 if failed else 0)
