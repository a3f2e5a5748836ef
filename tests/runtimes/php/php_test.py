#!/usr/bin/python3.11
"""Integration tests: vmtrace on Debian's stock php8.2 through PHP's own
USDT probes and uprobes on the Zend engine's object constructors.
workloads/objects.php makes known numbers of objects of known classes from
known functions; each case records it (spawned, or attached by pid) and
checks the report's JSON exactly.

Usage: php_test.py VMTRACE CASE
Cases: php-spawn, php-pid, php-pid-no-dtrace. Exit 0 pass, 1 fail, 77 skip (not root).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/runtimes: the harness
import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIMES = os.path.dirname(HERE)  # tests/runtimes: the workloads
OBJECTS_PHP = os.path.join(RUNTIMES, "workloads", "objects.php")
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
    stderr = []
    env = {k: v for k, v in os.environ.items() if k != "USE_ZEND_DTRACE"}
    data, _ = rt.record_spawn(vmtrace, [PHP, OBJECTS_PHP], tmp, env=env, stderr=stderr)
    check(ENV_NOTE in stderr, "spawned: says it set USE_ZEND_DTRACE=1")
    j = report(vmtrace, data)
    check_objects(j, "spawned", True)
    check_calls(j, "spawned")


def case_php_pid(vmtrace, tmp):
    data, _ = rt.record_pid(vmtrace, ["env", "USE_ZEND_DTRACE=1", PHP, OBJECTS_PHP], tmp)
    j = report(vmtrace, data)
    check_objects(j, "attached", True)
    check_calls(j, "attached")


def case_php_pid_no_dtrace(vmtrace, tmp):
    """Started without USE_ZEND_DTRACE=1: the function probes never fire,
    so no calls and no functions; objects per class still exact."""
    data, _ = rt.record_pid(vmtrace, ["env", "-u", "USE_ZEND_DTRACE", PHP, OBJECTS_PHP], tmp)
    j = report(vmtrace, data)
    check_objects(j, "no dtrace", False)
    check(j["calls"] == [], "no dtrace: no calls")
    check(any("USE_ZEND_DTRACE=1" in p for p in j["probes"]),
          f"no dtrace: the probes line names USE_ZEND_DTRACE=1: {j['probes']}")


CASES = {"php-spawn": case_php_spawn, "php-pid": case_php_pid,
         "php-pid-no-dtrace": case_php_pid_no_dtrace}


if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
