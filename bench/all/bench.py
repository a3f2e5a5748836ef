#!/usr/bin/python3
"""bench.py BIN_DIR [OPS] [ROUNDS]: record --all beside record -p and a
bpftrace one-liner for every process (see run.sh).

For each round, interleaved, one `demovm --workload alloc --ops OPS --wait`
each: untraced; `vmtrace record -p PID --events alloc`; `vmtrace record
--all --events alloc` (every process of vmtrace's provider, libruby or CPython on
the machine, so the keys carry the process); bpftrace attached to demovm's
file for every process (no -p), keyed by pid as --all is:
`usdt:DEMOVM:vmtrace:object__alloc { @[pid, str(arg0), str(arg1)] = count();
@b[pid, str(arg0), str(arg1)] = sum(arg2); }`. Workload time is demovm's
worker CPU time (bench/consumer/bench.py, whose helpers this uses); the
one-liner must count every allocation. Attach = until the tracer says it is
live (--all reads every process's mappings first).

Then stock Ruby, whose every object is a trap (no batching): bench/runtimes'
bench.rb (3 allocations per iteration, RUBY_ITER iterations) untraced, under
`record -p PID --no-methods` and under `record --all --no-methods`; the
difference per object is what the process slot costs an event.
"""
import importlib.util
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

spec = importlib.util.spec_from_file_location(
    "consumer_bench", os.path.join(os.path.dirname(__file__), "..", "consumer", "bench.py"))
cb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cb)


def run_pid(i):
    return cb.run_vmtrace(i, ("--events", "alloc"), "p")


def run_all(i):
    truth = f"{cb.WORK}/all{i}.json"
    dv = cb.start_demovm(truth)
    t0 = time.monotonic()
    vt = subprocess.Popen([cb.VMTRACE, "record", "--all", "--events", "alloc", "-o",
                           f"{cb.WORK}/all{i}.data", "--force", "--format", "json",
                           "--by", "pid,class,method"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    cb.wait_line(vt.stderr, r"^vmtrace: recording every process")
    attach = time.monotonic() - t0
    t = cb.finish_demovm(dv)
    vt.send_signal(signal.SIGINT)
    out, _ = vt.communicate()
    rss = cb.reap(vt) if vt.returncode is None else 0
    rows = json.loads(out)["allocations"]
    counted = sum(r["count"] for r in rows if r["pid"] == dv.pid)
    allocs = sum(a["count"] for a in json.load(open(truth))["allocations"])
    assert counted == allocs, (counted, allocs)
    return t, attach, rss, truth


def run_bpftrace_all(i):
    truth = f"{cb.WORK}/ball{i}.json"
    dv = cb.start_demovm(truth)
    prog = ('BEGIN { printf("live\\n"); } '
            f'usdt:{cb.DEMOVM}:vmtrace:object__alloc '
            '{ @[pid, str(arg0), str(arg1)] = count(); @b[pid, str(arg0), str(arg1)] = sum(arg2); }')
    t0 = time.monotonic()
    bt = subprocess.Popen(["bpftrace", "-e", prog], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    cb.wait_line(bt.stdout, r"^live$")
    attach = time.monotonic() - t0
    t = cb.finish_demovm(dv)
    bt.send_signal(signal.SIGINT)
    out = bt.stdout.read()
    rss = cb.reap(bt)
    counted = sum(int(n) for n in re.findall(rf"^@\[{dv.pid}, .*\]: (\d+)$", out, re.M))
    allocs = sum(a["count"] for a in json.load(open(truth))["allocations"])
    assert counted == allocs, (counted, allocs)
    return t, attach, rss, truth


RUBY = "/usr/bin/ruby"
BENCH_RB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtimes", "bench.rb")
RUBY_ITER = 200000


def ruby_run(tracer):
    rb = subprocess.Popen([RUBY, BENCH_RB, str(RUBY_ITER)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    assert rb.stdout.readline().strip() == "ready"
    vt = None
    if tracer:
        target = ["-p", str(rb.pid)] if tracer == "-p" else ["--all"]
        vt = subprocess.Popen([cb.VMTRACE, "record", *target, "--no-methods", "-o",
                               f"{cb.WORK}/rb.data", "--force"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        cb.wait_line(vt.stderr, r"^vmtrace: recording")
    rb.stdin.write("go\n")
    rb.stdin.flush()
    out = rb.communicate()[0]
    if vt:
        vt.send_signal(signal.SIGINT)
        vt.communicate()
    return float(re.search(r"ns_per_iter ([0-9.]+)", out).group(1))


def ruby_main():
    res = {"untraced": [], "-p": [], "--all": []}
    for _ in range(cb.ROUNDS):
        for name in res:
            res[name].append(ruby_run(None if name == "untraced" else name))
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"ruby bench.rb {RUBY_ITER} x 3 objects, --no-methods, {cb.ROUNDS} rounds, medians (ns/iteration)")
    for k, v in med.items():
        print(f"{k:22} {v:8.0f} ns  {v / med['untraced']:5.2f}x")
    print(f"per object, --all over -p: {(med['--all'] - med['-p']) / 3:.0f} ns; "
          f"--all / -p: {med['--all'] / med['-p']:.2f}")


def main():
    runs = {"untraced": cb.run_untraced, "vmtrace record -p": run_pid,
            "vmtrace record --all": run_all, "bpftrace, every pid": run_bpftrace_all}
    res = {name: [] for name in runs}
    for i in range(cb.ROUNDS):
        for name, run in runs.items():
            res[name].append(run(i))
    base = statistics.median(r[0] for r in res["untraced"])
    print(f"demovm --workload alloc --ops {cb.OPS}, allocations only, {cb.ROUNDS} rounds, medians")
    print(f"{'':22} {'workload':>10} {'slowdown':>9} {'attach':>9}")
    print(f"{'untraced':22} {base * 1e3:8.1f}ms {'1.00x':>9} {'-':>9}")
    t = {}
    for name in list(runs)[1:]:
        t[name] = statistics.median(r[0] for r in res[name])
        att = statistics.median(r[1] for r in res[name])
        print(f"{name:22} {t[name] * 1e3:8.1f}ms {t[name] / base:8.2f}x {att * 1e3:7.1f}ms")
    print(f"--all / -p workload time: {t['vmtrace record --all'] / t['vmtrace record -p']:.2f}; "
          f"--all / bpftrace every pid: {t['vmtrace record --all'] / t['bpftrace, every pid']:.2f}")
    ruby_main()


if __name__ == "__main__":
    main()
