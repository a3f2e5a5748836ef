#!/usr/bin/python3.11
"""Integration tests on real programs nobody here wrote, from Debian's
packages, recorded with vmtrace's default flags: nothing may be lost, and
the totals must equal the runtime's own count, taken in the same process.

  rdoc        rdoc over a stdlib folder (uri): every object, against Ruby's
              GC.stat(:total_allocated_objects) at exit (workloads/gc_total.rb)
  rdoc-sampled  rdoc over uri and net sampled at 4 KiB against an exact run:
              the classes over 5% of its objects within 10%
  erb         erb rendering a template, the same way
  pydoc       python3.11 -m pydoc -w over three modules: calls of every
              function of the modules it runs, against sys.setprofile's count
              of their returns (workloads/count_calls.py)
  compileall  python3.11 -m compileall over a copy of a stdlib package, the same way
  javac       javac of the JVM workload, through vmtrace's JVM agent: nothing lost,
              every class counted

Usage: corpus_test.py VMTRACE CASE
Cases: corpus-rdoc, corpus-rdoc-sampled, corpus-rdoc-uprobes, corpus-erb, corpus-pydoc, corpus-compileall, corpus-javac.
Exit 0 pass, 1 fail, 77 skip (not root).
"""
import json
import os
import shutil
import subprocess
import sys

import runtime_test as rt
from runtime_test import check, report

HERE = os.path.dirname(os.path.abspath(__file__))
GC_TOTAL_RB = os.path.join(HERE, "workloads", "gc_total.rb")
COUNT_CALLS_PY = os.path.join(HERE, "workloads", "count_calls.py")
ALLOCS_JAVA = os.path.join(HERE, "workloads", "Allocs.java")
STDLIB_PY = "/usr/lib/python3.11"


def record(vmtrace, tmp, argv, env=None, cwd=None, extra=()):
    data = os.path.join(tmp, "corpus.data")
    if os.path.exists(data):
        os.unlink(data)
    r = subprocess.run([vmtrace, "record", "-o", data, *extra, "--", *argv], capture_output=True,
                       text=True, timeout=600, env=env, cwd=cwd)
    check(r.returncode == 0, f"{argv[0]}: vmtrace record exits 0: {r.stderr.strip()[-300:]}")
    return r, report(vmtrace, data)


BEFORE = "made before counting began (objects)"


def nothing_lost(j, what):
    lost = [l for l in j["lost"] if l["count"] and "fixed part only" not in l["what"] and
            l["what"] != BEFORE]
    check(not lost, f"{what}: nothing lost with the default flags: {lost}")


def made_before(j):
    return sum(l["count"] for l in j["lost"] if l["what"] == BEFORE)


def ruby_total(vmtrace, tmp, what, argv, cwd=None, runtime="vmtrace", before_share=1.0):
    """Every object Ruby made, by Ruby's own count: through vmtrace's Ruby
    extension (runtime vmtrace: its rows and what the report says Ruby made
    before counting began, that under 1%) or Ruby's own probes (--runtime
    ruby)."""
    env = dict(os.environ, RUBYOPT=f"-r{GC_TOTAL_RB}")
    extra = ["--runtime", runtime] if runtime != "vmtrace" else []
    r, j = record(vmtrace, tmp, argv, env=env, cwd=cwd, extra=extra)
    lines = [l for l in r.stderr.splitlines() if l.startswith("vmtrace-gc-total ")]
    want = int(lines[-1].split()[1]) if lines else -1
    got = sum(a["count"] for a in j["allocations"])
    nothing_lost(j, what)
    check(j["runtime"] == runtime and len(j["allocations"]) > 200,
          f"{what}: {runtime}, {len(j['allocations'])} allocation rows")
    before = made_before(j)
    check(want > 0 and got + before == want,
          f"{what}: every object: vmtrace {got} + {before} made before counting began, "
          f"Ruby's GC.stat {want}")
    check(runtime != "vmtrace" or 0 < before < want * before_share,
          f"{what}: made before counting began: {before} of {want}, stated, "
          f"under {before_share:.0%}")


def case_corpus_rdoc(vmtrace, tmp):
    ruby_total(vmtrace, tmp, "rdoc", ["rdoc", "-q", "-o", os.path.join(tmp, "doc"),
                                      "/usr/lib/ruby/3.1.0/uri"], before_share=0.01)


def case_corpus_rdoc_sampled(vmtrace, tmp):
    """rdoc sampled, the Ruby extension keeping allocations on Ruby's fast
    path between samples: each class of over 5% of the exact run's objects
    estimated within 10% of that run's count, and the estimated total within
    5% of GC.stat's. At 4 KiB a class of 5% (85,000 objects) gets about 830
    samples, so 10% is 2.9 standard errors (at 32 KiB, about 1)."""
    argv = ["rdoc", "-q", "-o", os.path.join(tmp, "doc"), "/usr/lib/ruby/3.1.0/uri", "/usr/lib/ruby/3.1.0/net"]
    env = dict(os.environ, RUBYOPT=f"-r{GC_TOTAL_RB}")
    runs = {}
    for mode, extra in (("exact", []), ("sampled", ["--sample", "4K"])):
        shutil.rmtree(os.path.join(tmp, "doc"), ignore_errors=True)
        r, j = record(vmtrace, tmp, argv, env=env, extra=extra)
        nothing_lost(j, f"rdoc {mode}")
        lines = [l for l in r.stderr.splitlines() if l.startswith("vmtrace-gc-total ")]
        by_class = {}
        for a in j["allocations"]:
            by_class[a["class"]] = by_class.get(a["class"], 0) + a["count"]
        runs[mode] = (j, by_class, int(lines[-1].split()[1]) if lines else -1)
    exact, sampled = runs["exact"][1], runs["sampled"][1]
    total = sum(exact.values())
    big = {k: n for k, n in exact.items() if n > 0.05 * total}
    far = {k: (n, sampled.get(k, 0)) for k, n in big.items() if abs(sampled.get(k, 0) - n) > 0.1 * n}
    check(runs["sampled"][0]["estimated"] and len(big) >= 2 and not far,
          f"rdoc sampled: the {len(big)} classes over 5% of {total} objects within 10% of the exact "
          f"run's: {[(k, n, sampled.get(k, 0)) for k, n in sorted(big.items(), key=lambda kv: -kv[1])]}")
    j, by_class, want = runs["sampled"]
    est = sum(by_class.values()) + made_before(j)
    check(want > 0 and abs(est - want) <= 0.05 * want,
          f"rdoc sampled: {est} objects estimated (with those made before counting began), "
          f"GC.stat {want}")


def case_corpus_rdoc_uprobes(vmtrace, tmp):
    ruby_total(vmtrace, tmp, "rdoc (uprobes)", ["rdoc", "-q", "-o", os.path.join(tmp, "doc"),
                                                "/usr/lib/ruby/3.1.0/uri"], runtime="ruby")


def case_corpus_erb(vmtrace, tmp):
    template = os.path.join(tmp, "page.erb")
    with open(template, "w") as f:
        f.write("<% 2000.times do |i| %><li><%= i %>: <%= (i * 7).to_s(16) %></li>\n<% end %>\n")
    ruby_total(vmtrace, tmp, "erb", ["erb", template])


def python_calls(vmtrace, tmp, what, module_args, files, least, cwd=None):
    counts = os.path.join(tmp, "calls.json")
    # calls come from CPython's own probes (the extension counts bytes by line)
    r, j = record(vmtrace, tmp, [rt.PYTHON, COUNT_CALLS_PY, counts, *module_args], cwd=cwd,
                  extra=["--runtime", "python"])
    with open(counts) as f:
        want = {(q, f"{fn}:{line}"): n for q, fn, line, n in json.load(f)}
    got = {(c["name"], c["file"]): c["count"] for c in j["calls"]}
    ours = lambda k: k[1].rsplit(":", 1)[0] in files
    keys = {k for k in set(want) | set(got) if ours(k)}
    bad = sorted((k, want.get(k), got.get(k)) for k in keys if want.get(k) != got.get(k))
    nothing_lost(j, what)
    check(len(keys) >= least and not bad,
          f"{what}: calls of the {len(keys)} functions of {', '.join(os.path.basename(f) for f in files)} "
          f"({sum(want.get(k, 0) for k in keys)} in all) equal sys.setprofile's count: {bad[:5]}")
    objects = sum(a["count"] for a in j["allocations"])
    check(objects > 10000, f"{what}: objects seen: {objects}")


def case_corpus_pydoc(vmtrace, tmp):
    python_calls(vmtrace, tmp, "pydoc", ["pydoc", "-w", "json", "email.message", "argparse"],
                 [f"{STDLIB_PY}/pydoc.py", f"{STDLIB_PY}/inspect.py", f"{STDLIB_PY}/argparse.py"],
                 100, cwd=tmp)


def case_corpus_compileall(vmtrace, tmp):
    src = os.path.join(tmp, "email")
    shutil.copytree(f"{STDLIB_PY}/email", src)
    python_calls(vmtrace, tmp, "compileall", ["compileall", "-q", "-f", src],
                 [f"{STDLIB_PY}/compileall.py", f"{STDLIB_PY}/py_compile.py"], 10)


def case_corpus_javac(vmtrace, tmp):
    if not os.path.exists("/usr/bin/javac"):
        print("skipped: no javac")
        sys.exit(77)
    r, j = record(vmtrace, tmp, ["/usr/bin/javac", "-d", tmp, ALLOCS_JAVA])
    nothing_lost(j, "javac")
    classes = {a["class"] for a in j["allocations"]}
    total = sum(a["count"] for a in j["allocations"])
    # a JVM vmtrace starts gets vmtrace's agent (jvm_agent_test.py): every allocation
    check(j["runtime"] == "vmtrace" and not j["estimated"] and total > 10000 and
          "java.lang.String" in classes,
          f"javac: {total} objects of {len(classes)} classes, java.lang.String among them")
    check("loading vmtrace's JVM agent" in r.stderr, "javac: says it loads the agent")
    check(os.path.exists(os.path.join(tmp, "Allocs.class")), "javac: compiled")


CASES = {"corpus-rdoc": case_corpus_rdoc, "corpus-rdoc-sampled": case_corpus_rdoc_sampled,
         "corpus-rdoc-uprobes": case_corpus_rdoc_uprobes, "corpus-erb": case_corpus_erb,
         "corpus-pydoc": case_corpus_pydoc, "corpus-compileall": case_corpus_compileall,
         "corpus-javac": case_corpus_javac}

if __name__ == "__main__":
    sys.exit(rt.run(CASES, __doc__))
