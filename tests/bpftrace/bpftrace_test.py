#!/usr/bin/python3
"""
bpftrace_test.py: runs vmtrace's bpftrace scripts (scripts/*.bt) and the
one-liners of docs/probes.md with real bpftrace against a --wait'ing demovm,
and compares what bpftrace printed with demovm's own count (--truth):
exactly for counts, structurally for histograms (every event in exactly one
bucket, buckets consistent with the byte totals).

One run: start demovm --wait and read its `ready`; start bpftrace; wait
until the kernel has raised the USDT semaphore of every probe the program
uses in demovm (the kernel raises it as it installs the uprobe) and
bpftool lists a BPF program on as many of bpftrace's uprobes (bpftrace
attaches the program only after opening the uprobe); send SIGUSR1; wait for
demovm to finish and write its truth; let bpftrace -p end by itself (it
follows the pid), or stop a bpftrace without -p with SIGINT; parse its maps.

Usage: bpftrace_test.py CHECK --source DIR --demovm PATH --demovm-shared PATH --lib PATH
                         --bus-flood PATH
CHECK is one of: list, dryrun, scripts, oneliners, alloc-count, sampled.
Exit status 0 = pass, 1 = fail, 77 = skipped (no bpftrace, or not root).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
# a small fixed workload: a few seconds per run on 2 cores, enough for minor
# and major collections, resets of every kind and routed signals
WORKLOAD = ["--ops", "2000", "--threads", "2", "--seed", "7"]
INSTALLED_LIB = "/usr/local/lib/libvmtrace.so"
ATTACH_TIMEOUT = 60
RUN_TIMEOUT = 120


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


# ---------------------------------------------------------------- the ABI

def abi_probes(source):
    """Probe names of probes/vmtrace.d, in order."""
    with open(os.path.join(source, "probes", "vmtrace.d")) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    names = re.findall(r"\bprobe\s+(\w+)\s*\(", text)
    if not names:
        fail("no probe found in probes/vmtrace.d")
    return names


# ------------------------------------------------- semaphores in a process

def stapsdt_semaphores(path):
    """{probe: semaphore link-time address} of provider vmtrace in path."""
    out = subprocess.run(["readelf", "-n", "--wide", path], capture_output=True,
                         text=True).stdout
    sems = {}
    for m in re.finditer(r"Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, "
                         r"Semaphore: (0x[0-9a-f]+)", out):
        if m.group(1) == "vmtrace":
            sems[m.group(2)] = int(m.group(3), 16)
    return sems


def elf_link_bias(path):
    """(is ET_DYN, p_vaddr - p_offset of the first PT_LOAD)."""
    with open(path, "rb") as f:
        ident = f.read(64)
        if ident[:4] != b"\x7fELF" or ident[4] != 2:
            fail(f"{path}: not a 64-bit ELF file")
        e_type = struct.unpack_from("<H", ident, 16)[0]
        e_phoff = struct.unpack_from("<Q", ident, 32)[0]
        e_phentsize, e_phnum = struct.unpack_from("<HH", ident, 54)
        f.seek(e_phoff)
        for _ in range(e_phnum):
            ph = f.read(e_phentsize)
            p_type, _, p_offset, p_vaddr = struct.unpack_from("<IIQQ", ph, 0)
            if p_type == 1:
                return e_type == 3, p_vaddr - p_offset
    fail(f"{path}: no PT_LOAD segment")


def semaphore_addresses(pid):
    """{probe: run-time address of its semaphore} in process pid."""
    first_map = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or not fields[5].startswith("/"):
                continue
            path = fields[5].strip()
            start = int(fields[0].split("-")[0], 16)
            offset = int(fields[2], 16)
            if path not in first_map or start < first_map[path][0]:
                first_map[path] = (start, offset)
    addrs = {}
    for path, (start, offset) in first_map.items():
        real = f"/proc/{pid}/root{path}"
        sems = stapsdt_semaphores(real)
        if not sems:
            continue
        dyn, link = elf_link_bias(real)
        bias = (start - offset - link) if dyn else 0
        for name, addr in sems.items():
            addrs[name] = addr + bias
    return addrs


def semaphore_values(pid, addrs):
    vals = {}
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for name, addr in addrs.items():
            mem.seek(addr)
            vals[name] = struct.unpack("<H", mem.read(2))[0]
    return vals


def bpf_uprobes_of(pid):
    """Uprobes of process pid that have a BPF program attached. bpftrace
    opens each uprobe (the kernel then installs it and raises its semaphore)
    before it attaches the program: only this says the program will run."""
    bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
    out = subprocess.run([bpftool, "-j", "perf", "show"], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"bpftool perf show failed: {out.stderr.strip()}")
    return [e for e in json.loads(out.stdout or "[]")
            if e.get("pid") == pid and e.get("fd_type") == "uprobe"
            and not os.path.basename(e.get("filename", "")).startswith("bpftrace")]


# --------------------------------------------------------------- one run

class Target:
    """A traced host (demovm, or bus_flood) waiting for SIGUSR1."""

    def __init__(self, binary, tmp, args=None):
        self.truth_path = os.path.join(tmp, "truth.json")
        self.out_path = os.path.join(tmp, "target.out")
        self.err_path = os.path.join(tmp, "target.err")
        if os.path.exists(self.truth_path):
            os.unlink(self.truth_path)
        if args is None:
            args = ["--quiet"] + WORKLOAD
        self.name = os.path.basename(binary)
        self.cmd = [binary, "--wait", "--truth", self.truth_path] + args
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=err)
        deadline = time.monotonic() + 30
        while True:
            with open(self.out_path) as f:
                if "ready\n" in f.read():
                    break
            if self.proc.poll() is not None:
                fail(f"{self.name} exited ({self.proc.returncode}) before 'ready': {self.stderr()}")
            if time.monotonic() > deadline:
                self.kill()
                fail(f"{self.name} did not print 'ready' within 30 s")
            time.sleep(0.02)
        self.pid = self.proc.pid

    def stderr(self):
        with open(self.err_path) as f:
            return f.read().strip()

    def start_and_finish(self):
        os.kill(self.pid, signal.SIGUSR1)
        try:
            rc = self.proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            fail(f"{self.name} did not finish within {RUN_TIMEOUT} s")
        if rc != 0:
            fail(f"{self.name} exited with {rc}: {self.stderr()}")
        with open(self.truth_path) as f:
            return json.load(f)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def probes_in(program):
    """Probes a bpftrace program attaches to (comments left out)."""
    code = re.sub(r"/\*.*?\*/", "", program, flags=re.S)
    code = re.sub(r"//[^\n]*", "", code)
    return sorted(set(re.findall(r"\bvmtrace:(\w+)", code)))


def cpu_ticks(pid):
    """utime + stime of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def stop_bpftrace(bt, label):
    """SIGINT, as Ctrl-C; its exit status. bpftrace 0.17 can miss a SIGINT
    that arrives while it is not inside epoll_wait (it then sleeps on until
    the next event), so say it again, as a user would, but only while it still
    waits there and still catches SIGINT: one that took the first has put the
    default action back while it prints its maps and detaches (and may wait
    in epoll then too), and a second SIGINT would kill it."""
    def waiting():
        try:
            with open(f"/proc/{bt.pid}/wchan") as f:
                in_epoll = "epoll" in f.read()
            with open(f"/proc/{bt.pid}/status") as f:
                caught = next(int(l.split()[1], 16) for l in f if l.startswith("SigCgt:"))
            return in_epoll and caught & (1 << (signal.SIGINT - 1))
        except (OSError, StopIteration, ValueError):
            return False

    bt.send_signal(signal.SIGINT)
    for _ in range(30):
        try:
            return bt.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        # asleep in epoll with SIGINT caught, and still so, using no CPU,
        # a moment later: not one that is just now leaving to print its
        # maps (which puts the default action back; a SIGINT then kills it)
        ticks = cpu_ticks(bt.pid)
        if waiting():
            time.sleep(0.3)
            if waiting() and cpu_ticks(bt.pid) == ticks:
                bt.send_signal(signal.SIGINT)
    fail(f"{label}: bpftrace did not stop within 30 s of SIGINT")


class Tracer:
    """One bpftrace process attached to a target."""

    def __init__(self, argv, program, vm, tmp, label):
        self.label = label
        self.vm = vm
        n = len([f for f in os.listdir(tmp) if f.startswith("bpftrace")])
        self.out_path = os.path.join(tmp, f"bpftrace{n}.out")
        self.err_path = os.path.join(tmp, f"bpftrace{n}.err")
        # with -p, bpftrace ends itself once the target has exited
        self.follows_pid = "-p" in argv
        argv = [a.replace("{PID}", str(vm.pid)) for a in argv]
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=err, start_new_session=True)
        self.wanted = probes_in(program)

    def errors(self):
        with open(self.err_path) as f:
            return "\n".join(l for l in f.read().splitlines() if "RLIMIT_MEMLOCK" not in l)

    def wait_attached(self):
        """Until the target's semaphores of every probe the program uses are
        raised and bpftrace has a BPF program on that many uprobes."""
        addrs = semaphore_addresses(self.vm.pid)
        missing = [p for p in self.wanted if p not in addrs]
        if missing:
            fail(f"{self.label}: {self.vm.name} has no semaphore for {missing}")
        deadline = time.monotonic() + ATTACH_TIMEOUT
        while True:
            vals = semaphore_values(self.vm.pid, {p: addrs[p] for p in self.wanted})
            if all(vals.values()) and len(bpf_uprobes_of(self.proc.pid)) >= len(self.wanted):
                return
            if self.proc.poll() is not None:
                fail(f"{self.label}: bpftrace exited ({self.proc.returncode}) before attaching: "
                     f"{self.errors()}")
            if time.monotonic() > deadline:
                fail(f"{self.label}: probes not armed within {ATTACH_TIMEOUT} s: {vals}")
            time.sleep(0.05)

    def settle(self):
        """Until bpftrace has used no CPU for 0.3 s (at most 10 s): on a loaded
        machine it may still be reading the perf buffer when the target ends,
        and a SIGINT then would cut off the printf lines not yet read."""
        deadline = time.monotonic() + 10
        last, still_since = cpu_ticks(self.proc.pid), time.monotonic()
        while time.monotonic() < deadline and last is not None:
            time.sleep(0.05)
            now = cpu_ticks(self.proc.pid)
            if now != last:
                last, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= 0.3:
                return

    def stop(self):
        """What it printed, once it has ended: by itself when it follows the
        (now exited) target's pid, else by SIGINT once it is idle. A SIGINT to
        one ending by itself could land after it has put the default action
        back to print its maps, and kill it."""
        self.settle()
        if self.follows_pid:
            try:
                rc = self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                fail(f"{self.label}: bpftrace -p did not end within 30 s of its target")
        else:
            rc = stop_bpftrace(self.proc, self.label)
        if rc != 0:
            fail(f"{self.label}: bpftrace exited with {rc}: {self.errors()}")
        lost = re.findall(r"^.*\blost\b.*$", self.errors(), re.M | re.I)
        if lost:
            fail(f"{self.label}: bpftrace lost events: {lost[0]}")
        with open(self.out_path) as f:
            return f.read()

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def run_traced(argv, program, binary, tmp, label, target_args=None, prepare=None):
    """Run bpftrace argv, with {PID} for the target's pid, against a fresh
    target waiting for SIGUSR1; return (bpftrace stdout, truth).
    prepare(vm, tmp) may set the target up first and return more Tracers
    (attached before argv); their outputs are then returned too."""
    vm = Target(binary, tmp, target_args)
    tracers = []
    try:
        extra = prepare(vm, tmp) if prepare else []
        tracers.extend(extra)
        bt = Tracer(argv, program, vm, tmp, label)
        tracers.append(bt)
        bt.wait_attached()
        truth = vm.start_and_finish()
        out = bt.stop()
        if prepare:
            return out, truth, [t.stop() for t in extra]
        return out, truth
    finally:
        vm.kill()
        for t in tracers:
            t.kill()


# ------------------------------------------------------ bpftrace's output

SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def bound(s):
    m = re.fullmatch(r"(-?\d+)([KMGTP]?)", s.strip())
    if not m:
        fail(f"bad histogram bound {s!r}")
    return int(m.group(1)) * SUFFIX[m.group(2)]


def parse_maps(text):
    """bpftrace's printed maps: {name: {key tuple: int or [(lo, hi, n)]}}.
    Keys are tuples of strings; a map without a key has the key ()."""
    maps = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^(@\w*)(?:\[(.*)\])?: ?(.*)$", line)
        if m:
            name, key, value = m.group(1), m.group(2), m.group(3).strip()
            key = tuple(key.split(", ")) if key is not None else ()
            entries = maps.setdefault(name, {})
            if value == "":
                cur = entries.setdefault(key, [])  # a histogram follows
            else:
                entries[key] = entries.get(key, 0) + int(value)
                cur = None
            continue
        h = re.match(r"^\[([^,\]\)]+)(?:, ([^\)]+))?[\)\]]\s+(\d+) \|", line)
        if h and cur is not None:
            lo = bound(h.group(1))
            hi = bound(h.group(2)) if h.group(2) else lo + 1
            cur.append((lo, hi, int(h.group(3))))
            continue
        if line.strip() == "":
            cur = None
    return maps


def expect_equal(label, what, got, want):
    if got != want:
        missing = {k: v for k, v in want.items() if got.get(k) != v}
        extra = {k: v for k, v in got.items() if k not in want}
        fail(f"{label}: {what} differs from the truth\n  expected {want}\n  got      {got}\n"
             f"  wrong or missing {missing}\n  unexpected {extra}")


def truth_allocs(truth, field="count"):
    return {(a["class"], a["method"]): a[field] for a in truth["allocations"] if a[field]}


def truth_per_class(truth, field):
    out = {}
    for a in truth["allocations"]:
        out[(a["class"],)] = out.get((a["class"],), 0) + a[field]
    return {k: v for k, v in out.items() if v}


def truth_mcache(truth):
    return {(r["class"], r["method"]): r["count"] for r in truth["method_cache_resets"]
            if r["count"]}


def truth_constants(truth):
    return {(r["name"],): r["count"] for r in truth["constant_cache_resets"] if r["count"]}


def truth_serial(truth):
    return {(r["reason"],): r["count"] for r in truth["global_serial_incs"] if r["count"]}


def truth_signals(truth):
    return {(str(s["signo"]),): s["received"] for s in truth["signals"] if s["received"]}


def truth_gc(truth, keys=("minor", "major")):
    gc = truth["gc"]
    return {(k,): gc[n] for k, n in zip(keys, ("minor", "major")) if gc[n]}


def require_workload(truth):
    """The comparisons mean little on an empty run: the fixed workload must
    exercise every kind of event."""
    need = {"allocations": truth_allocs(truth), "frees": truth["frees"],
            "method cache resets": truth_mcache(truth),
            "constant cache resets": truth_constants(truth),
            "global serial increments": truth_serial(truth), "collections": truth_gc(truth),
            "signals": truth_signals(truth)}
    empty = [k for k, v in need.items() if not v]
    if empty:
        fail(f"demovm {' '.join(WORKLOAD)} produced no {', '.join(empty)}: "
             "the workload no longer covers every probe")


def hist_totals(label, entries):
    out = {}
    for key, buckets in entries.items():
        if not isinstance(buckets, list):
            fail(f"{label}: {key} is not a histogram")
        out[key] = sum(n for _, _, n in buckets)
    return out


# ------------------------------------------------------- script checks

def check_allocs(label, maps, truth, text):
    expect_equal(label, "@allocs", maps.get("@allocs", {}), truth_allocs(truth))
    expect_equal(label, "@bytes", maps.get("@bytes", {}), truth_allocs(truth, "bytes"))


def check_allocsites(label, maps, truth, text):
    count, size = {}, {}
    for (site, klass), n in maps.get("@allocs", {}).items():
        if site != "(no site)" and not re.fullmatch(r".+:\d+", site):
            fail(f"{label}: site {site!r} is not file:line")
        count[(klass,)] = count.get((klass,), 0) + n
    for (site, klass), n in maps.get("@bytes", {}).items():
        size[(klass,)] = size.get((klass,), 0) + n
    expect_equal(label, "@allocs summed over sites", count, truth_per_class(truth, "count"))
    expect_equal(label, "@bytes summed over sites", size, truth_per_class(truth, "bytes"))


def check_allocsizes(label, maps, truth, text):
    size = maps.get("@size", {})
    expect_equal(label, "objects in @size", hist_totals(label, size),
                 truth_per_class(truth, "count"))
    expect_equal(label, "@allocs", maps.get("@allocs", {}), truth_per_class(truth, "count"))
    bytes_ = truth_per_class(truth, "bytes")
    for key, buckets in size.items():
        lo = sum(b_lo * n for b_lo, _, n in buckets)
        hi = sum((b_hi - 1) * n for _, b_hi, n in buckets)
        if not lo <= bytes_[key] <= hi:
            fail(f"{label}: @size[{key[0]}] buckets hold {lo}..{hi} bytes, "
                 f"the truth says {bytes_[key]}")


def check_mcache(label, maps, truth, text):
    def whole(entries):
        return {(k, "" if m == "(whole class)" else m): n for (k, m), n in entries.items()}
    want = truth_mcache(truth)
    expect_equal(label, "@total", whole(maps.get("@total", {})), want)
    # the per-second lines may miss a reset that lands between print and
    # clear, never count one twice
    per_second = whole(maps.get("@resets", {}))
    over = {k: n for k, n in per_second.items() if n > want.get(k, 0)}
    if over:
        fail(f"{label}: per-second lines add up to more than the truth: {over}")
    seconds = re.findall(r"^\d\d:\d\d:\d\d$", text, re.M)
    if len(seconds) < 2 or not re.search(r"^\d\d:\d\d:\d\d \(partial second\)$", text, re.M):
        fail(f"{label}: expected two or more whole seconds and the last, partial one")


def check_constcache(label, maps, truth, text):
    want = truth_constants(truth)
    expect_equal(label, "@resets", maps.get("@resets", {}), want)
    # demovm's constant state starts at 1 and moves by one per reset
    serial = maps.get("@serial", {}).get(())
    if serial != 1 + sum(want.values()):
        fail(f"{label}: @serial is {serial}, expected {1 + sum(want.values())}")


def check_gserial(label, maps, truth, text):
    want = truth_serial(truth)
    expect_equal(label, "@incs", maps.get("@incs", {}), want)
    if maps.get("@serial", {}).get(()) != truth["global_serial"]:
        fail(f"{label}: @serial is {maps.get('@serial')}, expected {truth['global_serial']}")
    lines = re.findall(r"^\d\d:\d\d:\d\d\s+(\d+)\s+(\d+)\s+(.+)$", text, re.M)
    per_reason = {}
    for _, _, reason in lines:
        per_reason[(reason,)] = per_reason.get((reason,), 0) + 1
    expect_equal(label, "event lines per reason", per_reason, want)
    serials = sorted(int(s) for _, s, _ in lines)
    if serials != list(range(1, truth["global_serial"] + 1)):
        fail(f"{label}: the serials printed are not 1..{truth['global_serial']} once each")


def check_gcpause(label, maps, truth, text):
    want = truth_gc(truth)
    expect_equal(label, "@collections", maps.get("@collections", {}), want)
    expect_equal(label, "pauses in @pause_us", hist_totals(label, maps.get("@pause_us", {})),
                 want)
    between = hist_totals(label, maps.get("@alloc_bytes", {}))
    unmeasured = maps.get("@unmeasured", {})
    got = {k: between.get(k, 0) + unmeasured.get(k, 0) for k in set(between) | set(unmeasured)}
    expect_equal(label, "@alloc_bytes + @unmeasured", got, want)
    if sum(unmeasured.values()) > truth["threads"]:
        fail(f"{label}: more unmeasured collections ({unmeasured}) than threads")


def check_signals(label, maps, truth, text):
    want = truth_signals(truth)
    expect_equal(label, "@received", maps.get("@received", {}), want)
    expect_equal(label, "@handled", maps.get("@handled", {}), want)
    expect_equal(label, "latencies in @latency_us",
                 hist_totals(label, maps.get("@latency_us", {})), want)


def truth_drops(truth):
    return {(d["kind"],): d["count"] for d in truth["dropped"] if d["count"]}


def check_busdrops(label, maps, truth, text):
    want = truth_drops(truth)
    expect_equal(label, "@dropped", maps.get("@dropped", {}), want)
    # attached before the first drop: the library's count agrees
    expect_equal(label, "@reported", maps.get("@reported", {}), want)


def check_liveheap(label, maps, truth, text):
    want = {"objects": {}, "bytes": {}}
    for r in truth["live"]:
        for k in want:
            f = "count" if k == "objects" else "bytes"
            want[k][(r["class"],)] = want[k].get((r["class"],), 0) + r[f]
    if not any(k == ("Session",) for k in want["objects"]):
        fail(f"{label}: the workload leaked no Session: {truth['live']}")
    for k in want:
        got = {c: n for c, n in maps.get("@live_" + k, {}).items() if n}
        expect_equal(label, "@live_" + k, got, want[k])


SCRIPT_CHECKS = {
    "allocs.bt": check_allocs,
    "allocsites.bt": check_allocsites,
    "allocsizes.bt": check_allocsizes,
    "mcache.bt": check_mcache,
    "constcache.bt": check_constcache,
    "gserial.bt": check_gserial,
    "gcpause.bt": check_gcpause,
    "signals.bt": check_signals,
    "busdrops.bt": check_busdrops,
    "liveheap.bt": check_liveheap,
}


def script_files(source):
    d = os.path.join(source, "scripts")
    return sorted(f for f in os.listdir(d) if f.endswith(".bt"))


def lint_script(source, name):
    path = os.path.join(source, "scripts", name)
    with open(path) as f:
        text = f.read()
    if not text.startswith("#!/usr/bin/env bpftrace\n"):
        fail(f"{name}: does not start with #!/usr/bin/env bpftrace")
    if not os.access(path, os.X_OK):
        fail(f"{name}: not executable")
    for part in ("USAGE: " + name + " -p PID", "Example output", "Fields:"):
        if part not in text:
            fail(f"{name}: header lacks {part!r}")
    if "@SAMPLE@" in text:
        fail(f"{name}: header has no sample output yet")
    if not re.search(r"^BEGIN\s*\{\s*printf\(\"Tracing", text, re.M):
        fail(f"{name}: no BEGIN banner")
    return text


# -------------------------------------------------------------- one-liners

def doc_oneliners(source):
    """{probe: [command, ...]} from the <!-- oneliner NAME --> blocks."""
    with open(os.path.join(source, "docs", "probes.md")) as f:
        text = f.read()
    found = {}
    for m in re.finditer(r"^<!-- oneliner (\w+) -->\n```\w*\n(.*?)^```", text, re.S | re.M):
        cmds = [l.strip() for l in m.group(2).splitlines() if l.strip().startswith("bpftrace ")]
        if m.group(1) in found:
            fail(f"docs/probes.md: two oneliner blocks for {m.group(1)}")
        found[m.group(1)] = cmds
    if len(found) != len(re.findall(r"^<!-- oneliner", text, re.M)):
        fail("docs/probes.md: a <!-- oneliner --> marker without a ```sh block after it")
    return found


def oneliner_forms(probe, cmds):
    """(-p form argv, path form argv) of one block, checked for shape."""
    pid_form = [c for c in cmds if " -p PID " in c]
    path_form = [c for c in cmds if f"usdt:{INSTALLED_LIB}:vmtrace:{probe}" in c and "-p" not in c]
    if len(pid_form) != 1 or len(path_form) != 1 or len(cmds) != 2:
        fail(f"docs/probes.md: {probe}: want one `bpftrace -p PID -e 'usdt:*:vmtrace:{probe} ...'`"
             f" and one `bpftrace -e 'usdt:{INSTALLED_LIB}:vmtrace:{probe} ...'`, got {cmds}")
    if f"usdt:*:vmtrace:{probe}" not in pid_form[0]:
        fail(f"docs/probes.md: {probe}: the -p form does not use usdt:*:vmtrace:{probe}")
    for c in cmds:
        # live__batch delivers only beside alloc__batch (docs/probes.md)
        allowed = [probe] if probe != "live__batch" else ["alloc__batch", "live__batch"]
        if probes_in(c) != allowed:
            fail(f"docs/probes.md: {probe}: one-liner uses other probes: {c}")
    return pid_form[0], path_form[0]


def check_oneliner(probe, label, text, truth, seen):
    try:
        check_oneliner_maps(probe, label, text, truth, seen)
    except Failure as e:
        fail(f"{e}\n--- bpftrace printed:\n{text}")


def check_oneliner_maps(probe, label, text, truth, seen):
    maps = parse_maps(text)
    m = maps.get("@", {})
    if probe == "object__alloc":
        expect_equal(label, "@", m, truth_allocs(truth))
    elif probe == "object__free":
        want = {(f["class"],): f["bytes"] for f in truth["frees"] if f["bytes"]}
        expect_equal(label, "@", m, want)
    elif probe in ("method__entry", "method__return"):
        if not m or any(not k or "" in k for k in m):
            fail(f"{label}: no calls, or unreadable names: {m}")
        # the workload is seeded: entries and returns count the same calls
        other = seen.get("method__return" if probe == "method__entry" else "method__entry")
        if other is not None:
            expect_equal(label, "calls (against the other method probe)", m, other)
        seen[probe] = m
    elif probe == "method__cache__reset":
        expect_equal(label, "@", m, truth_mcache(truth))
    elif probe == "constant__cache__reset":
        expect_equal(label, "@", m, truth_constants(truth))
    elif probe == "global__serial__inc":
        expect_equal(label, "@", m, truth_serial(truth))
        if maps.get("@serial", {}).get(()) != truth["global_serial"]:
            fail(f"{label}: @serial is {maps.get('@serial')}, expected {truth['global_serial']}")
    elif probe == "gc__begin":
        expect_equal(label, "@", m, truth_gc(truth, ("0", "1")))
    elif probe == "gc__end":
        expect_equal(label, "collections in @", hist_totals(label, m), truth_gc(truth, ("0", "1")))
    elif probe == "signal__received":
        expect_equal(label, "@", m, truth_signals(truth))
    elif probe == "signal__handled":
        expect_equal(label, "signals in @", hist_totals(label, m), truth_signals(truth))
    elif probe == "bus__dropped":
        kinds = {"0": "alloc", "7": "gc_begin", "10": "user"}
        got = {(kinds.get(k[0], k[0]),): n for k, n in m.items()}
        expect_equal(label, "@", got, truth_drops(truth))
    elif probe in ("alloc__batch", "free__batch", "live__batch"):
        # holding the semaphore turns batching on: the workload's counts
        # come in batches, at least the process's last round
        n = m.get((), 0)
        if n < 1 or maps.get("@bytes", {}).get((), 0) < 40 * n:
            fail(f"{label}: no batches, or batches shorter than their header: {maps}")
    elif probe == "stacks__armed":
        # stacks are walked only for batched counts or for a consumer of
        # object__alloc: with neither attached, no thread starts taking stacks
        if re.search(r"^tid \d+ takes stacks", text, re.M) or maps:
            fail(f"{label}: stacks__armed fired with no batching tracer:\n{text}")
    elif probe == "sample__armed":
        # no consumer set a sampling period: the process stays exact
        if re.search(r"^tid \d+ samples every", text, re.M) or maps:
            fail(f"{label}: sample__armed fired with no sampling period set:\n{text}")
    else:
        fail(f"{label}: the test has no check for probe {probe}")


# ------------------------------------------------------------------ checks

def bpftrace_list(target):
    out = subprocess.run(["bpftrace", "-l", f"usdt:{target}:vmtrace:*"], capture_output=True,
                         text=True, timeout=60)
    if out.returncode != 0:
        fail(f"bpftrace -l on {target} failed: {out.stderr.strip()}")
    return [l.strip() for l in out.stdout.splitlines() if l.strip()]


def check_list(args, tmp):
    want = sorted(abi_probes(args.source))
    for target in (args.lib, args.demovm):
        lines = bpftrace_list(target)
        got = sorted(l.rsplit(":", 1)[1] for l in lines)
        if got != want:
            fail(f"bpftrace -l 'usdt:{target}:vmtrace:*' lists {got}, probes/vmtrace.d has {want}")
        print(f"ok: bpftrace -l 'usdt:{target}:vmtrace:*': the {len(want)} probes of vmtrace.d")


def check_dryrun(args, tmp):
    vm = Target(args.demovm, tmp)
    try:
        for name in script_files(args.source):
            lint_script(args.source, name)
            elf = os.path.join(tmp, name + ".o")
            out = subprocess.run(["bpftrace", "-p", str(vm.pid), "--emit-elf", elf,
                                  os.path.join(args.source, "scripts", name)],
                                 capture_output=True, text=True, timeout=60)
            errs = "\n".join(l for l in out.stderr.splitlines() if "RLIMIT_MEMLOCK" not in l)
            if out.returncode != 0 or not os.path.getsize(elf) or "WARNING" in errs:
                fail(f"{name}: bpftrace --emit-elf (dry run) failed ({out.returncode}): {errs}")
            print(f"ok: {name} compiles (bpftrace --emit-elf), header and banner in place")
    finally:
        vm.proc.send_signal(signal.SIGTERM)
        vm.proc.wait(timeout=30)
    names = set(script_files(args.source))
    if names != set(SCRIPT_CHECKS):
        fail(f"scripts/ has {sorted(names)}, the test checks {sorted(SCRIPT_CHECKS)}")


def check_scripts(args, tmp):
    names = script_files(args.source)
    if set(names) != set(SCRIPT_CHECKS):
        fail(f"scripts/ has {sorted(names)}, the test checks {sorted(SCRIPT_CHECKS)}")
    for name in names:
        text = lint_script(args.source, name)
        path = os.path.join(args.source, "scripts", name)
        # run it as a user does: the script itself, through its #! line
        if name == "busdrops.bt":
            out, truth = run_traced([path, "-p", "{PID}"], text, args.bus_flood, tmp, name, [])
        elif name == "liveheap.bt":
            # a leak to find among the churn; its two threads hold more
            # live objects than bpftrace's default 4096 map keys, so the
            # test sets more, as the script's header tells its users to
            os.environ["BPFTRACE_MAP_KEYS_MAX"] = "65536"
            try:
                out, truth = run_traced([path, "-p", "{PID}"], text, args.demovm, tmp, name,
                                        ["--quiet"] + WORKLOAD + ["--leak", "25"])
            finally:
                del os.environ["BPFTRACE_MAP_KEYS_MAX"]
            require_workload(truth)
        elif name == "mcache.bt":
            # long enough for two per-second lines with a second to spare: on
            # a loaded machine 2.5 s sometimes gave bpftrace's interval one
            out, truth = run_traced([path, "-p", "{PID}"], text, args.demovm, tmp, name,
                                    ["--quiet", "--duration", "3.5"] + WORKLOAD[2:])
            require_workload(truth)
        else:
            out, truth = run_traced([path, "-p", "{PID}"], text, args.demovm, tmp, name)
            require_workload(truth)
        if not re.search(r"^Tracing vmtrace .*Hit Ctrl-C to end\.$", out, re.M):
            fail(f"{name}: no banner in its output")
        if "(unreadable)" in out:
            fail(f"{name}: a name could not be read:\n{out}")
        maps = parse_maps(out)
        try:
            SCRIPT_CHECKS[name](name, maps, truth, out)
        except Failure as e:
            fail(f"{e}\n--- bpftrace printed:\n{out}")
        print(f"ok: {name} -p PID matches demovm's truth")


def check_oneliners(args, tmp):
    found = doc_oneliners(args.source)
    want = abi_probes(args.source)
    if sorted(found) != sorted(want):
        fail(f"docs/probes.md has one-liners for {sorted(found)}, "
             f"probes/vmtrace.d has {sorted(want)}")
    seen = {}
    for probe in want:
        pid_form, path_form = oneliner_forms(probe, found[probe])
        # -p form against the static demovm (probes in the executable), the
        # path form against demovm-shared with the library of this build;
        # bus__dropped against bus_flood (linked to the library), which
        # drops on purpose
        if probe == "bus__dropped":
            static, shared, targs = args.bus_flood, args.bus_flood, []
        else:
            static, shared, targs = args.demovm, args.demovm_shared, None
        argv = ["{PID}" if a == "PID" else a for a in shlex.split(pid_form)]
        out, truth = run_traced(argv, pid_form, static, tmp, f"{probe} (-p)", targs)
        if targs is None:
            require_workload(truth)
        check_oneliner(probe, f"docs/probes.md {probe} (-p PID, {os.path.basename(static)})",
                       out, truth, seen)
        print(f"ok: {pid_form}")
        argv = [a.replace(INSTALLED_LIB, args.lib) for a in shlex.split(path_form)]
        out, truth = run_traced(argv, path_form, shared, tmp, f"{probe} (path)", targs)
        check_oneliner(probe, f"docs/probes.md {probe} (path {args.lib}, "
                       f"{os.path.basename(shared)})", out, truth, {})
        print(f"ok: {path_form}")


def check_alloc_count(args, tmp):
    """bpftrace's count of object__alloc hits per class and method equals
    demovm's own count exactly: static and shared host, -p and path form."""
    body = "{ @[str(arg0), str(arg1)] = count(); }"
    runs = [
        ("static host, -p", args.demovm, ["bpftrace", "-p", "{PID}", "-e",
                                          f"usdt:*:vmtrace:object__alloc {body}"]),
        ("static host, path of the executable", args.demovm,
         ["bpftrace", "-e", f"usdt:{args.demovm}:vmtrace:object__alloc {body}"]),
        ("shared host, -p", args.demovm_shared, ["bpftrace", "-p", "{PID}", "-e",
                                                 f"usdt:*:vmtrace:object__alloc {body}"]),
        ("shared host, path of libvmtrace.so", args.demovm_shared,
         ["bpftrace", "-e", f"usdt:{args.lib}:vmtrace:object__alloc {body}"]),
    ]
    for label, binary, argv in runs:
        out, truth = run_traced(argv, argv[-1], binary, tmp, label)
        require_workload(truth)
        want = truth_allocs(truth)
        expect_equal(label, "object__alloc hits per class and method",
                     parse_maps(out).get("@", {}), want)
        print(f"ok: {label}: {sum(want.values())} allocations in {len(want)} "
              "(class, method) pairs, exactly as demovm counted")


def symbol_address(pid, path_in_maps, symbol):
    """Run-time address of symbol (from the ELF symbol table) in pid."""
    out = subprocess.run(["nm", "--defined-only", path_in_maps], capture_output=True, text=True)
    m = re.search(r"^([0-9a-f]+) \w " + re.escape(symbol) + "$", out.stdout, re.M)
    if not m:
        fail(f"{path_in_maps}: no symbol {symbol}")
    with open(f"/proc/{pid}/maps") as f:
        maps = [l.split() for l in f if l.rstrip().endswith(" " + path_in_maps)]
    if not maps:
        fail(f"{path_in_maps} is not mapped in {pid}")
    start = min(int(l[0].split("-")[0], 16) for l in maps)
    dyn, link = elf_link_bias(path_in_maps)
    return int(m.group(1), 16) + ((start - link) if dyn else 0)


SAMPLE_PERIOD = 1024
SAMPLE_TOLERANCE = 0.15


def check_sampled(args, tmp):
    """Under sampling, the allocation scripts' weighted sums estimate the
    truth. A consumer samples by writing vmtrace_sample_period in the process
    and holding sample__armed's semaphore; the test does both itself: it
    writes the period into demovm's memory, and a second bpftrace attached to
    sample__armed holds the semaphore (and sees each thread arm)."""
    def prepare(vm, tmp):
        addr = symbol_address(vm.pid, os.path.realpath(args.demovm), "vmtrace_sample_period")
        with open(f"/proc/{vm.pid}/mem", "r+b") as mem:
            mem.seek(addr)
            mem.write(struct.pack("<Q", SAMPLE_PERIOD))
        prog = "usdt:*:vmtrace:sample__armed { @armed[tid] = max(arg0); }"
        holder = Tracer(["bpftrace", "-p", "{PID}", "-e", prog], prog, vm, tmp,
                        "sample__armed holder")
        holder.wait_attached()
        return [holder]

    def near(label, what, got, want):
        # about B/R samples: relative error ~ 1/sqrt(B/R), a few percent here
        if abs(got - want) > SAMPLE_TOLERANCE * want:
            fail(f"{label}: estimated {what} {got} is not within "
                 f"{SAMPLE_TOLERANCE:.0%} of the true {want}")
        return f"{what} {got} for {want} ({(got - want) / want:+.1%})"

    for name in ("allocs.bt", "allocsites.bt", "allocsizes.bt"):
        path = os.path.join(args.source, "scripts", name)
        with open(path) as f:
            text = f.read()
        label = f"{name} (sampling every {SAMPLE_PERIOD} bytes)"
        out, truth, (armed,) = run_traced([path, "-p", "{PID}"], text, args.demovm, tmp, label,
                                          prepare=prepare)
        count = sum(a["count"] for a in truth["allocations"])
        size = sum(a["bytes"] for a in truth["allocations"])
        maps = parse_maps(out)
        periods = parse_maps(armed).get("@armed", {})
        if len(periods) < truth["threads"] or set(periods.values()) != {SAMPLE_PERIOD}:
            fail(f"{label}: sample__armed should fire once per worker thread with "
                 f"{SAMPLE_PERIOD}, got {periods}")
        seen = [near(label, "objects", sum(maps.get("@allocs", {}).values()), count)]
        if name == "allocsizes.bt":
            events = sum(hist_totals(label, maps.get("@size", {})).values())
            # the histogram counts samples, far fewer than objects
            if not 0 < events < count / 4:
                fail(f"{label}: {events} sampled events for {count} objects: not sampling")
            seen.append(f"{events} events")
        else:
            seen.append(near(label, "bytes", sum(maps.get("@bytes", {}).values()), size))
        print(f"ok: {label}: {', '.join(seen)}")


CHECKS = {"list": check_list, "dryrun": check_dryrun, "scripts": check_scripts,
          "oneliners": check_oneliners, "alloc-count": check_alloc_count,
          "sampled": check_sampled}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("check", choices=sorted(CHECKS))
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--demovm", required=True, help="demovm, libvmtrace linked statically")
    ap.add_argument("--demovm-shared", required=True, help="demovm linked to libvmtrace.so")
    ap.add_argument("--lib", required=True, help="libvmtrace.so of the same build")
    ap.add_argument("--bus-flood", required=True, help="bus_flood, linked to libvmtrace.so")
    args = ap.parse_args()
    if shutil.which("bpftrace") is None:
        print("SKIP: bpftrace is not installed (scripts/install-deps.sh installs it)")
        return SKIP
    if os.geteuid() != 0:
        print("SKIP: bpftrace needs root")
        return SKIP
    for p in (args.demovm, args.demovm_shared, args.lib, args.bus_flood):
        if not os.access(p, os.X_OK if p != args.lib else os.R_OK):
            print(f"FAIL: {p} does not exist; build it first")
            return 1
    with tempfile.TemporaryDirectory(prefix="vmtrace-bpftrace-") as tmp:
        try:
            CHECKS[args.check](args, tmp)
        except Failure as e:
            print(f"FAIL: {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
