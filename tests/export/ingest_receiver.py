#!/usr/bin/python3
"""ingest_receiver.py DIR [--fail-first N] [--limit SECONDS]

A Pyroscope-compatible ingest endpoint for the tests, on 127.0.0.1 only:
POST /ingest?name=APP{labels}&from=S&until=S&format=pprof with the profile
as the multipart field "profile" and, beside it, "sample_type_config" (JSON:
each sample type's units and aggregation, none cumulative, or Pyroscope
would subtract one interval from the next). Each profile it takes is saved as
DIR/N.pb.gz beside DIR/N.json (the query). The port it listens on goes to
DIR/port once it listens.

--fail-first N answers 503 to the first N requests, so the sender must
retry. It stops by itself after --limit seconds (default 120) or on
SIGTERM: a test can never leave it running.
"""
import argparse
import email.parser
import email.policy
import http.server
import json
import os
import signal
import sys
import threading
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--limit", type=float, default=120)
    args = ap.parse_args()
    state = {"requests": 0, "taken": 0}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def answer(self, code, text):
            body = (text + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with lock:
                state["requests"] += 1
                if state["requests"] <= args.fail_first:
                    return self.answer(503, "try again")
            if url.path != "/ingest":
                return self.answer(404, "no such endpoint")
            q = urllib.parse.parse_qs(url.query, strict_parsing=True)
            for need in ("name", "from", "until"):
                if need not in q:
                    return self.answer(400, "missing " + need)
            if q.get("format", ["folded"])[0] != "pprof":
                return self.answer(400, "want format=pprof")
            ctype = self.headers.get("Content-Type", "")
            if not ctype.startswith("multipart/form-data"):
                return self.answer(400, "want multipart/form-data")
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
            profile = config = None
            for part in msg.iter_parts():
                if part.get_param("name", header="content-disposition") == "profile":
                    profile = part.get_payload(decode=True)
                if part.get_param("name", header="content-disposition") == "sample_type_config":
                    config = json.loads(part.get_payload(decode=True))
            if not profile or profile[:2] != b"\x1f\x8b":
                return self.answer(400, "no gzipped profile part")
            # Pyroscope's sample_type_config: no type may read as cumulative
            if not config or any(c.get("cumulative", True) for c in config.values()) or \
                    config.get("alloc_space", {}).get("units") != "bytes":
                return self.answer(400, "want a sample_type_config of deltas")
            with lock:
                state["taken"] += 1
                n = state["taken"]
            with open(os.path.join(args.dir, "%d.pb.gz" % n), "wb") as f:
                f.write(profile)
            with open(os.path.join(args.dir, "%d.json" % n), "w") as f:
                json.dump({k: v[0] for k, v in q.items()}, f)
            self.answer(200, "ok")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(os.path.join(args.dir, "port.tmp"), "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(os.path.join(args.dir, "port.tmp"), os.path.join(args.dir, "port"))
    signal.signal(signal.SIGTERM, lambda *a: threading.Thread(target=server.shutdown).start())
    threading.Timer(args.limit, server.shutdown).start()
    server.serve_forever()
    os._exit(0)  # the limit timer may still be pending


if __name__ == "__main__":
    main()
