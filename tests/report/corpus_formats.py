#!/usr/bin/python3
"""The real binary's JSON and CSV of every record in the given folders,
read back by Python's own parsers (json, csv): a second opinion beside the
fuzzer's jansson and its own CSV check. Each record renders in every format
with status 0; the JSON is one object whose totals add up; every CSV row of
a section has its header's number of fields.
Usage: corpus_formats.py VMTRACE DIR..."""
import csv
import io
import json
import os
import subprocess
import sys

FORMATS = ("text", "json", "csv", "folded", "pprof", "perfetto")


def render(vmtrace, path, fmt, *extra):
    r = subprocess.run([vmtrace, "report", path, "--format", fmt, *extra],
                       capture_output=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"FAIL {path} --format {fmt}: status {r.returncode}: {r.stderr!r}")
    return r.stdout


def check_csv(path, out):
    # byte for byte: a name's invalid UTF-8 passes through CSV as it is
    header = None
    for n, row in enumerate(csv.reader(io.StringIO(out.decode("latin-1"), newline="")), 1):
        if not row:
            header = None
            continue
        if header is None:
            header = len(row)
        elif len(row) != header:
            raise SystemExit(f"FAIL {path} csv line {n}: {len(row)} fields, header {header}")


def main():
    vmtrace, dirs = sys.argv[1], sys.argv[2:]
    files = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d))
    for path in files:
        for fmt in FORMATS:
            out = render(vmtrace, path, fmt)
            if fmt == "json":
                j = json.loads(out)
                if j["lost_total"] != sum(l["count"] for l in j["lost"]):
                    raise SystemExit(f"FAIL {path}: lost_total is not the sum of lost")
            elif fmt == "perfetto":
                json.loads(out)
            elif fmt == "csv":
                check_csv(path, out)
        for by in ("class", "method", "site"):
            json.loads(render(vmtrace, path, "json", "--by", by))
            check_csv(path, render(vmtrace, path, "csv", "--by", by))
    print(f"ok: {len(files)} records in {len(FORMATS)} formats")


if __name__ == "__main__":
    main()
