#!/usr/bin/python3
"""bench.py BIN_DIR [OPS] [ROUNDS]: what counting allocations per VM stack
costs demovm, side by side in one run (see run.sh).

For each workload (alloc: Bench#churn under Object#main, 2 frames; mixed:
nested calls and Tree#grow recursion, 2 to 8 frames) and each round, three
runs of `demovm --workload W --ops OPS --wait`: untraced, `vmtrace record
-p` (batched, one frame: the probe's method), and `vmtrace record --stack
vm -p` (batched, the whole VM stack walked at each allocation). demovm
reports its workers' CPU time for the workload, after SIGUSR1, so attaching
is not in it. Medians; the ratio that matters is stacks / one frame. Each
traced run's counts are checked against demovm's truth (stacks: per stack).
"""
import collections
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile

BIN = sys.argv[1]
OPS = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
DEMOVM = os.path.join(BIN, "demovm")
VMTRACE = os.path.join(BIN, "vmtrace")
WORK = tempfile.mkdtemp(prefix="vmtrace-bench-stacks.")
WORKLOADS = {"alloc": OPS, "mixed": OPS}


def run(workload, mode, i):
    truth = f"{WORK}/{workload}-{mode}-{i}.json"
    dv = subprocess.Popen([DEMOVM, "--workload", workload, "--ops", str(WORKLOADS[workload]),
                           "--wait", "--truth", truth], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    assert dv.stdout.readline().strip() == "ready"
    vt = None
    if mode != "untraced":
        args = [VMTRACE, "record", "-p", str(dv.pid), "-o", f"{WORK}/{mode}.data", "--force",
                "--format", "folded"]
        if mode == "stacks":
            args += ["--stack", "vm"]
        vt = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not re.search(r"^vmtrace: recording pid", vt.stderr.readline()):
            pass
    dv.send_signal(signal.SIGUSR1)
    _, err = dv.communicate()
    m = re.search(r"workers' cpu ([0-9.]+) s", err)
    assert dv.returncode == 0 and m, err
    if vt:
        out, _ = vt.communicate()
        assert vt.returncode == 0
        check(truth, out, mode)
    return float(m.group(1))


def check(truth, folded, mode):
    t = json.load(open(truth))
    got = collections.Counter()
    for line in folded.splitlines():
        key, _, n = line.rpartition(" ")
        got[key] += int(n)
    if mode == "stacks":
        want = {s["stack"] + ";" + s["class"]: s["count"] for s in t["stacks"]}
    else:
        want = collections.Counter()
        for a in t["allocations"]:
            want[a["class"] + ";" + a["method"]] += a["count"]
    assert dict(got) == dict(want), f"{mode}: counts differ from the truth"


def main():
    print(f"{ROUNDS} rounds, medians of the workers' CPU time")
    print(f"{'workload':9} {'allocations':>11} {'untraced':>9} {'one frame':>10} {'stacks':>9} "
          f"{'stacks/one frame':>17}")
    for w in WORKLOADS:
        res = {"untraced": [], "frame": [], "stacks": []}
        for i in range(ROUNDS):  # interleaved, so drift hits all three alike
            for mode in res:
                res[mode].append(run(w, mode, i))
        med = {k: statistics.median(v) for k, v in res.items()}
        allocs = sum(a["count"] for a in json.load(open(f"{WORK}/{w}-untraced-0.json"))["allocations"])
        print(f"{w:9} {allocs:11d} {med['untraced'] * 1e3:7.1f}ms {med['frame'] * 1e3:8.1f}ms "
              f"{med['stacks'] * 1e3:7.1f}ms {med['stacks'] / med['frame']:16.2f}x")


if __name__ == "__main__":
    main()
