#!/usr/bin/python3.11
"""PHP across versions: Debian 12's php8.2 on the host (its own USDT probes,
php_test.py) and Debian 13's php8.4, built without them, in a container
(a trixie root made by scripts/matrix/roots.sh). workloads/objects.php makes
known objects from known functions (php_test.OBJECTS, php_test.CALLS).

  php8.2-layout, php8.4-layout  the Zend layout row vmtrace reads for that
                PHP (consumer/src/runtimes/php/php_layout_rows.h) compiled
                against its headers (php_layout_check.c): every offset agrees
  php8.4-spawn  record -- unshare ... chroot ROOT php8.4 objects.php, with
                vmtrace's PHP extension installed there (provider/php,
                built against 8.4's headers in the container): objects per
                class and function and calls per function exact; the
                program's output its own
  php8.4-pid    a php8.4 that loaded the extension, attached by host pid:
                the same, exact
  php8.4-pid-bare  a php8.4 without the extension, attached by host pid:
                objects per class and function exact (the function read from
                the executor's globals), no calls, and the probes line says
                how to get them

Usage: php_versions_test.py VMTRACE CASE
Exit 0 pass, 1 fail, 77 skip (not root, no php8.2-dev, or the root not made).
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import php_test
import runtime_test as rt
from runtime_test import check, report
from versions_test import ROOTS, container, host_pid

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
SRC = os.path.join(RUNTIMES, "..", "..")
INSIDE = "/tmp/vmtrace-php-test"
SDT = "/usr/include/x86_64-linux-gnu/sys"  # sys/sdt.h, carried into the container


def trixie():
    root = os.path.join(ROOTS, "trixie")
    if not os.path.exists(os.path.join(root, "usr/bin/php8.4")) or \
            not os.path.exists(os.path.join(root, "usr/bin/php-config8.4")):
        print(f"skipped: no php8.4 with its headers in {root} (scripts/matrix/roots.sh trixie)")
        sys.exit(77)
    return root


def staged(root):
    """The workload, the extension's source and the layout check in the root."""
    shutil.rmtree(root + INSIDE, ignore_errors=True)
    os.makedirs(root + INSIDE + "/sdt/sys")
    shutil.copytree(os.path.join(SRC, "provider", "php"), root + INSIDE + "/php")
    shutil.copytree(os.path.join(SRC, "consumer", "src", "runtimes", "php"), root + INSIDE + "/inc/runtimes/php")
    for f in ("sdt.h", "sdt-config.h"):
        shutil.copy(os.path.join(SDT, f), root + INSIDE + "/sdt/sys")
    shutil.copy(os.path.join(HERE, "php_layout_check.c"), root + INSIDE)
    shutil.copy(php_test.OBJECTS_PHP, root + INSIDE)
    return INSIDE + "/objects.php"


def layout_check(argv_prefix, php_config, tmp, inc, src, out):
    cmd = f"gcc -D_GNU_SOURCE $({php_config} --includes) -I {inc} -o {out} {src} && {out}"
    if argv_prefix:
        p = container(argv_prefix, ["sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        text = p.communicate(timeout=120)[0]
    else:
        p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)
        text = p.stdout + p.stderr
    print(text.strip())
    check(p.returncode == 0, f"{php_config}: the layout row agrees with the headers")


def case_layout_82(vmtrace, tmp):
    if not shutil.which("php-config8.2"):
        print("skipped: no php-config8.2 (php8.2-dev)")
        sys.exit(77)
    layout_check(None, "php-config8.2", tmp, os.path.join(SRC, "consumer", "src"),
                 os.path.join(HERE, "php_layout_check.c"), os.path.join(tmp, "check"))


def case_layout_84(vmtrace, tmp):
    root = trixie()
    staged(root)
    layout_check(root, "php-config8.4", tmp, INSIDE + "/inc", INSIDE + "/php_layout_check.c", INSIDE + "/check")


def install_ext(root):
    p = container(root, ["env", f"SDT_INCLUDE={INSIDE}/sdt", "sh", f"{INSIDE}/php/build.sh", "php-config8.4"],
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.communicate(timeout=300)[0]
    check(p.returncode == 0, f"php8.4: the extension built and installed in the container: {out.strip()[-300:]}")


def remove_ext(root):
    for d in os.listdir(os.path.join(root, "usr/lib/php")):
        path = os.path.join(root, "usr/lib/php", d, "vmtrace.so")
        if os.path.exists(path):
            os.unlink(path)


def check_calls(j, mode, script):
    calls = {c["name"]: c["count"] for c in j["calls"]}
    for name, want in php_test.CALLS.items():
        check(calls.get(name) == want, f"{mode}: {name} called {calls.get(name)} == {want}")
    check(all(c["file"] == script for c in j["calls"]), f"{mode}: every call in {script}")


def case_spawn(vmtrace, tmp):
    root = trixie()
    script = staged(root)
    install_ext(root)
    data = os.path.join(tmp, "spawn.data")
    r = subprocess.run([vmtrace, "record", "-o", data, "--", "unshare", "--mount", "--pid", "--fork",
                        f"--mount-proc={root}/proc", "chroot", root, "php8.4", script],
                       input="\n\n", capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"spawn: record exits 0: {r.stderr.strip()[-300:]}")
    check(r.stdout.splitlines()[:2] == ["ready", "done"], f"spawn: the program's own output: {r.stdout[:80]!r}")
    j = report(vmtrace, data)
    php_test.check_objects(j, "php8.4 spawn", True)
    check_calls(j, "php8.4 spawn", script)


def attached(vmtrace, tmp, root, argv, name):
    """argv (a php8.4 running objects.php) in the container, recorded by its
    host pid from "ready" to its exit; the report."""
    outer = container(root, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = host_pid(outer, "php8.4")
        check(outer.stdout.readline().strip() == "ready", f"{name}: the workload is ready")
        data, err = os.path.join(tmp, name + ".data"), os.path.join(tmp, name + ".err")
        with open(err, "w") as ef:
            rec = subprocess.Popen([vmtrace, "record", "-p", str(pid), "-o", data], stdout=subprocess.DEVNULL,
                                   stderr=ef)
        rt.wait_attached(rec, err)
        outer.stdin.write("\n")
        outer.stdin.flush()
        check(outer.stdout.readline().strip() == "done", f"{name}: the workload is done")
        outer.communicate("\n", timeout=60)
        check(rec.wait(timeout=60) == 0, f"{name}: record exits 0 with the process: {open(err).read()[-300:]}")
    finally:
        outer.kill()
        outer.wait()
    return report(vmtrace, data)


def case_pid(vmtrace, tmp):
    root = trixie()
    script = staged(root)
    install_ext(root)
    j = attached(vmtrace, tmp, root, ["php8.4", "-dextension=vmtrace", script], "pid")
    php_test.check_objects(j, "php8.4 pid", True)
    check_calls(j, "php8.4 pid", script)


def case_pid_bare(vmtrace, tmp):
    root = trixie()
    script = staged(root)
    remove_ext(root)
    j = attached(vmtrace, tmp, root, ["php8.4", script], "bare")
    php_test.check_objects(j, "php8.4 bare", True)
    check(j["calls"] == [], f"php8.4 bare: no calls without the extension: {j['calls'][:3]}")
    check(any("extension" in p for p in j["probes"]), f"php8.4 bare: the probes line says how: {j['probes']}")


CASES = {"php8.2-layout": case_layout_82, "php8.4-layout": case_layout_84, "php8.4-spawn": case_spawn,
         "php8.4-pid": case_pid, "php8.4-pid-bare": case_pid_bare}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
