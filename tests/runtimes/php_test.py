#!/usr/bin/python3.11
"""Integration tests: vmtrace on Debian's stock php8.2 through PHP's own
USDT probes and uprobes on the Zend engine's object constructors.
workloads/objects.php makes known numbers of objects of known classes from
known functions; each case records it (spawned, or attached by pid) and
checks the report's JSON exactly.

Usage: php_test.py VMTRACE CASE
Cases: php-spawn, php-pid, php-pid-no-dtrace. Exit 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OBJECTS_PHP = os.path.join(HERE, "workloads", "objects.php")
PHP = "/usr/bin/php8.2"
ENV_NOTE = "vmtrace: php: set USE_ZEND_DTRACE=1 in the spawned php so its function probes fire"

# (class, function it was made in) -> (count, bytes), by construction: the
# engine asks for sizeof(zend_object) 56 plus a 16-byte zval per declared
# property past the first (past none with a guard slot, as __get needs);
# Exception declares 7. Closure has its own create handler: no bytes.
OBJECTS = {
    ("Point", "makePoints"): (200, 200 * 72),
    ("EmptyThing", "makeEmpty"): (50, 50 * 40),
    ("Guarded", "makeGuarded"): (20, 20 * 72),
    ("Closure", "makeClosures"): (30, 0),
    ("RuntimeException", "fail"): (10, 10 * 152),
    ("EmptyThing", "afterCatch"): (10, 10 * 40),
}
CALLS = {"Point::__construct": 200, "makePoints": 1, "makeEmpty": 1, "makeGuarded": 1,
         "makeClosures": 1, "throwSome": 1, "fail": 10, "afterCatch": 10}

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def report(vmtrace, data):
    r = subprocess.run([vmtrace, "report", data, "--format", "json"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("vmtrace report failed: " + r.stderr)
    return json.loads(r.stdout)


def check_objects(j, mode, by_function):
    check(j["runtime"] == "php", f"{mode}: runtime is php")
    check(j["lost_total"] == 0, f"{mode}: nothing lost ({j['lost']})")
    got = {}
    for a in j["allocations"]:
        key = (a["class"], a["method"] if by_function else "")
        c, b = got.get(key, (0, 0))
        got[key] = (c + a["count"], b + a["bytes"])
    want = {}
    for (klass, func), (c, b) in OBJECTS.items():
        key = (klass, func if by_function else "")
        wc, wb = want.get(key, (0, 0))
        want[key] = (wc + c, wb + b)
    for key, w in want.items():
        check(got.get(key) == w, f"{mode}: {key[0]} from {key[1] or '-'}: {got.get(key)} == {w}")


def check_calls(j, mode):
    calls = {c["name"]: c["count"] for c in j["calls"]}
    for name, want in CALLS.items():
        check(calls.get(name) == want, f"{mode}: {name} called {calls.get(name)} == {want}")
    check(all(c["file"] == OBJECTS_PHP for c in j["calls"]), f"{mode}: every call in objects.php")


def case_php_spawn(vmtrace, tmp):
    data = os.path.join(tmp, "spawn.data")
    env = {k: v for k, v in os.environ.items() if k != "USE_ZEND_DTRACE"}
    r = subprocess.run([vmtrace, "record", "-o", data, "--", PHP, OBJECTS_PHP], input="go\nbye\n",
                       capture_output=True, text=True, timeout=120, env=env)
    check(r.returncode == 0, "spawned: vmtrace record -- php exits 0: " + r.stderr.strip()[-300:])
    check(ENV_NOTE in r.stderr.splitlines(), "spawned: says it set USE_ZEND_DTRACE=1")
    j = report(vmtrace, data)
    check_objects(j, "spawned", True)
    check_calls(j, "spawned")


def record_pid(vmtrace, tmp, env):
    data = os.path.join(tmp, "pid.data")
    err = os.path.join(tmp, "record.err")
    php = subprocess.Popen([PHP, OBJECTS_PHP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True, env=env)
    try:
        check(php.stdout.readline().strip() == "ready", "php prints ready")
        with open(err, "w") as ef:
            rec = subprocess.Popen([vmtrace, "record", "-p", str(php.pid), "-o", data],
                                   stdout=subprocess.DEVNULL, stderr=ef)
        for _ in range(600):
            if "recording pid" in open(err).read() or rec.poll() is not None:
                break
            time.sleep(0.05)
        php.stdin.write("go\n")
        php.stdin.flush()
        check(php.stdout.readline().strip() == "done", "php prints done")
        php.stdin.write("bye\n")
        php.stdin.close()
        check(php.wait(timeout=60) == 0, "php exits 0")
        check(rec.wait(timeout=60) == 0, "vmtrace record -p exits 0: " + open(err).read()[-300:])
    finally:
        if php.poll() is None:
            php.kill()
            php.wait()
    return report(vmtrace, data)


def case_php_pid(vmtrace, tmp):
    j = record_pid(vmtrace, tmp, dict(os.environ, USE_ZEND_DTRACE="1"))
    check_objects(j, "attached", True)
    check_calls(j, "attached")


def case_php_pid_no_dtrace(vmtrace, tmp):
    """Started without USE_ZEND_DTRACE=1: the function probes never fire,
    so no calls and no functions; objects per class still exact."""
    env = {k: v for k, v in os.environ.items() if k != "USE_ZEND_DTRACE"}
    j = record_pid(vmtrace, tmp, env)
    check_objects(j, "no dtrace", False)
    check(j["calls"] == [], "no dtrace: no calls")
    check(any("USE_ZEND_DTRACE=1" in p for p in j["probes"]),
          f"no dtrace: the probes line names USE_ZEND_DTRACE=1: {j['probes']}")


CASES = {"php-spawn": case_php_spawn, "php-pid": case_php_pid,
         "php-pid-no-dtrace": case_php_pid_no_dtrace}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("skipped: needs root for BPF")
        return 77
    with tempfile.TemporaryDirectory(prefix="vmtrace-php-") as tmp:
        CASES[sys.argv[2]](sys.argv[1], tmp)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
