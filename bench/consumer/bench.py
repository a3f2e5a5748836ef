#!/usr/bin/python3
"""bench.py BIN_DIR [OPS] [ROUNDS]: vmtrace record vs a bpftrace one-liner on
demovm's allocation path, side by side in one run (see run.sh).

For each round, five runs of `demovm --workload alloc --ops OPS --wait`:
untraced; traced by `vmtrace record -p` (exact, the default events); the
same with demovm --uncached (its allocation sites without key caches, the
plain vmtrace_alloc_at calls); by `vmtrace record -p --events alloc`
(exact, allocations only); by bpftrace doing the same aggregation as the
latter. demovm reports its worker's CPU time for the workload (after
SIGUSR1, so attaching is not in it; CPU time, because wall time on a shared
VM swings by tens of percent; the traps are in it). Per-event cost = (traced time - untraced time) / probe hits the
tracer took (from demovm's truth file: vmtrace traces allocations, frees,
GC, signals, serial and cache events; --events alloc and the one-liner only
allocations).
Every vmtrace record is checked against demovm's truth file of the same run
(tests/e2e/compare_truth.py: exactly equal, nothing lost), and the
one-liner's count of allocations too.
Attach latency = from starting the tracer until it says its probes are live
(vmtrace: its "recording" line, printed after attaching; bpftrace: its
BEGIN probe, which runs after every probe is attached). Peak RSS from
wait4's ru_maxrss of the tracer.
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE_TRUTH = os.path.join(HERE, "..", "..", "tests", "e2e", "compare_truth.py")
BIN = sys.argv[1]
OPS = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
DEMOVM = os.path.join(BIN, "demovm")
VMTRACE = os.path.join(BIN, "vmtrace")
WORK = tempfile.mkdtemp(prefix="vmtrace-bench.")


def start_demovm(truth, extra=()):
    p = subprocess.Popen([DEMOVM, "--workload", "alloc", "--ops", str(OPS), "--wait",
                          "--truth", truth, *extra], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.strip() == "ready", line
    return p


def finish_demovm(p):
    p.send_signal(signal.SIGUSR1)
    _, err = p.communicate()
    m = re.search(r"workers' cpu ([0-9.]+) s", err)
    assert p.returncode == 0 and m, err
    return float(m.group(1))


def wait_line(stream, pattern):
    while True:
        line = stream.readline()
        if not line:
            raise SystemExit("tracer ended before it was live")
        if re.search(pattern, line):
            return


def reap(p):
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_maxrss  # KiB


def run_untraced(i):
    p = start_demovm(f"{WORK}/u{i}.json")
    return finish_demovm(p), None, None, f"{WORK}/u{i}.json"


def check_counts(data, truth, allocations_only):
    """vmtrace's record equals demovm's truth (tests/e2e/compare_truth.py),
    checked after the run, outside its timing."""
    report = data + ".report.json"
    with open(report, "w") as f:
        subprocess.run([VMTRACE, "report", "--format", "json", data], stdout=f, check=True)
    r = subprocess.run([sys.executable, COMPARE_TRUTH,
                        *(["--allocations"] if allocations_only else []), truth, report],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{data}: vmtrace's counts differ from demovm's truth:\n{r.stdout}")


def run_vmtrace(i, extra=(), tag="v", host=()):
    truth = f"{WORK}/{tag}{i}.json"
    data = f"{WORK}/{tag}{i}.data"
    dv = start_demovm(truth, host)
    t0 = time.monotonic()
    vt = subprocess.Popen([VMTRACE, "record", "-p", str(dv.pid), "-o", data, "--force", *extra],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_line(vt.stderr, r"^vmtrace: recording pid")
    attach = time.monotonic() - t0
    t = finish_demovm(dv)
    vt.stderr.read()
    rss = reap(vt)
    assert vt.returncode == 0, vt.returncode
    check_counts(data, truth, "--events" in extra)
    return t, attach, rss, truth


def run_bpftrace(i):
    truth = f"{WORK}/b{i}.json"
    dv = start_demovm(truth)
    prog = ('BEGIN { printf("live\\n"); } '
            f'usdt:{DEMOVM}:vmtrace:object__alloc '
            '{ @[str(arg0), str(arg1)] = count(); @b[str(arg0), str(arg1)] = sum(arg2); }')
    t0 = time.monotonic()
    bt = subprocess.Popen(["bpftrace", "-p", str(dv.pid), "-e", prog], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    wait_line(bt.stdout, r"^live$")
    attach = time.monotonic() - t0
    t = finish_demovm(dv)
    bt.send_signal(signal.SIGINT)
    out = bt.stdout.read()
    rss = reap(bt)
    # the one-liner must have counted every allocation too
    counted = sum(int(n) for n in re.findall(r"^@\[.*\]: (\d+)$", out, re.M))
    allocs = sum(a["count"] for a in json.load(open(truth))["allocations"])
    assert counted == allocs, (counted, allocs)
    return t, attach, rss, truth


def run_vmtrace_alloc(i):
    return run_vmtrace(i, ("--events", "alloc"), "a")


def run_vmtrace_uncached(i):
    return run_vmtrace(i, (), "c", ("--uncached",))


def hits(truth, tracer):
    d = json.load(open(truth))
    allocs = sum(a["count"] for a in d["allocations"])
    if tracer in ("bpftrace", "vmtrace --events alloc"):
        return allocs
    frees = sum(f["count"] for f in d["frees"])
    gc = 2 * (d["gc"]["minor"] + d["gc"]["major"])
    sig = 2 * sum(s["received"] for s in d["signals"])
    rest = (sum(r["count"] for r in d["method_cache_resets"]) +
            sum(r["count"] for r in d["constant_cache_resets"]) +
            sum(r["count"] for r in d["global_serial_incs"]))
    return allocs + frees + gc + sig + rest


def main():
    runs = {"untraced": run_untraced, "vmtrace": run_vmtrace,
            "vmtrace, host uncached": run_vmtrace_uncached,
            "vmtrace --events alloc": run_vmtrace_alloc, "bpftrace": run_bpftrace}
    res = {name: [] for name in runs}
    for i in range(ROUNDS):  # interleaved, so drift hits all alike
        for name, run in runs.items():
            res[name].append(run(i))
    base = statistics.median(r[0] for r in res["untraced"])
    allocs = sum(a["count"] for a in json.load(open(res["untraced"][0][3]))["allocations"])
    print(f"demovm --workload alloc --ops {OPS}: {allocs} allocations per run, "
          f"{ROUNDS} rounds, medians")
    # paired: each round's traced run over the untraced run beside it, so
    # the machine's drift between rounds cancels; median and range
    print(f"{'':22} {'workload':>10} {'slowdown':>9} {'paired':>7} {'(min-max)':>11} "
          f"{'events':>11} {'ns/event':>9} {'attach':>9} {'peak RSS':>9}")
    print(f"{'untraced':22} {base * 1e3:8.1f}ms {'1.00x':>9} {'':>7} {'':>11} {'-':>11} "
          f"{'-':>9} {'-':>9} {'-':>9}")
    per_event = {}
    for name in ("vmtrace", "vmtrace, host uncached", "vmtrace --events alloc", "bpftrace"):
        t = statistics.median(r[0] for r in res[name])
        att = statistics.median(r[1] for r in res[name])
        rss = max(r[2] for r in res[name])
        h = hits(res[name][0][3], name)
        per_event[name] = (t - base) / h * 1e9
        paired = [r[0] / u[0] for r, u in zip(res[name], res["untraced"])]
        spread = f"{min(paired):.2f}-{max(paired):.2f}"
        print(f"{name:22} {t * 1e3:8.1f}ms {t / base:8.2f}x {statistics.median(paired):6.2f}x "
              f"{spread:>11} {h:11d} {per_event[name]:9.1f} {att * 1e3:7.1f}ms {rss / 1024:7.1f}MB")
    print(f"per-event cost of vmtrace: {per_event['vmtrace'] / per_event['bpftrace'] * 100:.1f}% "
          f"of bpftrace's")


if __name__ == "__main__":
    main()
