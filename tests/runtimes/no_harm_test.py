#!/usr/bin/python3.11
"""A command vmtrace starts runs as it would without vmtrace: its output,
its exit status and the environment it sees are its own, whether the
runtime loads vmtrace's provider or cannot.

  noharm-ruby-env      a Ruby that loads the extension: same output, exit
                       status and ENV as untraced; counted, with what Ruby
                       made before counting began stated
  noharm-ruby-hidden   a Ruby in its own mount namespace, where the
                       extension's directory is empty (a container without
                       it): it runs as untraced, and vmtrace says in one line
                       that it never loaded the extension
  noharm-python-env    the same for CPython and its extension
  noharm-python-hidden
  noharm-java          a java (and javac) given vmtrace's JVM agent: same
                       output, exit status, environment and stderr (no
                       "Picked up JAVA_TOOL_OPTIONS" line of the JVM's)

Usage: no_harm_test.py VMTRACE CASE
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import os
import subprocess
import sys

import runtime_test as rt
from runtime_test import check

RUBY = "/usr/bin/ruby"
JAVA, JAVAC = "/usr/bin/java", "/usr/bin/javac"
ENV_EXIT_JAVA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads", "EnvExit.java")
PYTHON = "/usr/bin/python3.11"
BEFORE = "made before counting began (objects)"

# prints its environment and exits 3: what it sees and how it ends
RUBY_PROG = 'ENV.sort.each { |k, v| puts "#{k}=#{v}" unless k == "_" }; 5.times { Object.new }; exit 3'
PY_PROG = ('import os, sys; [print(f"{k}={os.environ[k]}") for k in sorted(os.environ) if k != "_"]; '
           '[object() for _ in range(5)]; sys.exit(3)')


def lib_dir(vmtrace, runtime):
    return os.path.realpath(os.path.join(os.path.dirname(vmtrace), "..", "lib", runtime))


def hidden(argv, lib):
    """argv in a mount namespace of its own where lib is an empty tmpfs."""
    return ["unshare", "--mount", "--fork", "sh", "-c",
            'mount --make-rprivate / && mount -t tmpfs none "$0" && exec "$@"', lib, *argv]


def run_untraced(argv, tmp):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp)


def run_traced(vmtrace, argv, tmp, extra=()):
    data = os.path.join(tmp, "noharm.data")
    if os.path.exists(data):
        os.unlink(data)
    report = os.path.join(tmp, "report.txt")
    r = subprocess.run([vmtrace, "record", "-o", data, "--report-file", report, *extra, "--", *argv],
                       capture_output=True, text=True, timeout=120, cwd=tmp)
    return r, data


def same_as_untraced(what, plain, traced):
    check(traced.returncode == plain.returncode == 3,
          f"{what}: exit status {traced.returncode} traced, {plain.returncode} untraced (3)")
    check(traced.stdout == plain.stdout and plain.stdout.count("\n") > 5,
          f"{what}: output and environment the same as untraced:\n"
          f"{diff(plain.stdout, traced.stdout)}")


def diff(a, b):
    a, b = set(a.splitlines()), set(b.splitlines())
    return "\n".join([f"  untraced only: {l}" for l in sorted(a - b)] +
                     [f"  traced only:   {l}" for l in sorted(b - a)])


def program_stderr(traced):
    """What the traced command itself wrote to stderr: vmtrace's lines out."""
    return "\n".join(l for l in traced.stderr.splitlines() if not l.startswith("vmtrace"))


def loaded(vmtrace, what, argv, tmp, runtime, extra=()):
    plain = run_untraced(argv, tmp)
    traced, data = run_traced(vmtrace, argv, tmp, extra)
    same_as_untraced(what, plain, traced)
    check(program_stderr(traced) == plain.stderr,
          f"{what}: the program's stderr is its own: {program_stderr(traced)!r}")
    j = rt.report(vmtrace, data)
    total = sum(a["count"] for a in j["allocations"])
    check(j["runtime"] == "vmtrace" and total > 0,
          f"{what}: counted through the provider ({j['runtime']}, {total} allocations)")
    return j


def not_loaded(vmtrace, what, argv, tmp, runtime, extra=()):
    lib = lib_dir(vmtrace, runtime)
    plain = run_untraced(hidden(argv, lib), tmp)
    traced, _ = run_traced(vmtrace, hidden(argv, lib), tmp, extra)
    same_as_untraced(what, plain, traced)
    check(program_stderr(traced) == plain.stderr == "",
          f"{what}: no error of the program's (no LoadError): {program_stderr(traced)!r}")
    says = [l for l in traced.stderr.splitlines() if "never loaded vmtrace's" in l]
    check(len(says) == 1 and lib in says[0] and "it ran untraced" in says[0],
          f"{what}: one line says the provider was not loaded: {traced.stderr[-600:]!r}")


def case_ruby_env(vmtrace, tmp):
    j = loaded(vmtrace, "ruby", [RUBY, "-e", RUBY_PROG], tmp, "ruby")
    before = sum(l["count"] for l in j["lost"] if l["what"] == BEFORE)
    check(before > 0, f"ruby: what Ruby made before counting began is stated: {before}")


def case_ruby_hidden(vmtrace, tmp):
    not_loaded(vmtrace, "ruby in a namespace without the extension", [RUBY, "-e", RUBY_PROG], tmp,
               "ruby")


def case_python_env(vmtrace, tmp):
    loaded(vmtrace, "python", [PYTHON, "-c", PY_PROG], tmp, "python", ["--runtime", "vmtrace"])


def case_python_hidden(vmtrace, tmp):
    not_loaded(vmtrace, "python in a namespace without the extension", [PYTHON, "-c", PY_PROG], tmp,
               "python", ["--runtime", "vmtrace"])


def case_java(vmtrace, tmp):
    if not os.path.exists(JAVAC):
        print("skipped: no javac")
        sys.exit(77)
    classes = os.path.join(tmp, "classes")
    subprocess.run([JAVAC, "-d", classes, ENV_EXIT_JAVA], check=True, timeout=120)
    loaded(vmtrace, "java", [JAVA, "-cp", classes, "EnvExit"], tmp, "jvm")
    # a JDK tool: its JVM gets the agent through -J
    plain = run_untraced([JAVAC, "-d", classes, ENV_EXIT_JAVA], tmp)
    traced, data = run_traced(vmtrace, [JAVAC, "-d", classes, ENV_EXIT_JAVA], tmp)
    check(traced.returncode == plain.returncode == 0 and program_stderr(traced) == plain.stderr == "",
          f"javac: exit 0 and no line of the JVM's: {program_stderr(traced)!r}")
    j = rt.report(vmtrace, data)
    check(j["runtime"] == "vmtrace" and sum(a["count"] for a in j["allocations"]) > 1000,
          "javac: counted through the agent")


CASES = {"noharm-ruby-env": case_ruby_env, "noharm-ruby-hidden": case_ruby_hidden,
         "noharm-python-env": case_python_env, "noharm-python-hidden": case_python_hidden,
         "noharm-java": case_java}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
