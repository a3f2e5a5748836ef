#!/usr/bin/python3.11
"""Integration tests: a hostile target's user cannot redirect what vmtrace
does in the target's filesystem (docs/security.md).

A JVM runs as an unprivileged user (nobody) in a working directory of its
own. Before vmtrace attaches (`record -p PID --runtime vmtrace`, as root),
that user, or the test for the user, plants a symbolic link, a FIFO, a
directory or a file of another uid at each path vmtrace uses there: the
trigger .attach_pid<PID> in the working directory and in /tmp, and the attach
socket /tmp/.java_pid<PID>; also a link to a root-owned socket, a socket of
another uid, and a listener of the user's own that answers lies. Each attach
must either work or fail with one line, and afterwards every planted entry,
a root-owned victim file and a root-owned directory are as they were: no
file outside vmtrace's own created, opened for writing, chowned or removed.
The container case runs the JVM in a root the user owns (its own mount and
pid namespaces), with links there that are absolute in the container's view
and name the victims in the host's.

Usage: target_fs_test.py VMTRACE CASE
Cases: jvm-cwd, jvm-tmp, jvm-socket, jvm-lies, jvm-container.
Exit 0 pass, 1 fail, 77 skip (not root, no java).
"""
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
IDLE_JAVA = os.path.join(HERE, "workloads", "Idle.java")
JAVA = "/usr/bin/java"
JAVAC = "/usr/bin/javac"
USER = 65534            # nobody: the JVM's user, who plants
FOREIGN = 4242          # a third user, owner of the "foreign" plants
KINDS = ("symlink", "fifo", "dir", "foreign")
AS_USER = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups"]

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def as_user(*argv):
    subprocess.run([*AS_USER, *argv], check=True, timeout=30)


class RootListener:
    """A root-owned Unix socket nobody but root may reach, counting the
    connections it takes: a planted link to it must bring none."""

    def __init__(self, path):
        self.path = path
        self.accepted = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o600)
        self.sock.listen(8)
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            c.close()


class Scene:
    """The host's side: a root-owned victim file, directory and socket, and
    the user's working directory."""

    def __init__(self, tmp):
        self.tmp = tmp
        os.chmod(tmp, 0o755)
        self.victim = os.path.join(tmp, "victim")
        with open(self.victim, "w") as f:
            f.write("root's secret\n")
        os.chmod(self.victim, 0o600)
        self.victim_dir = os.path.join(tmp, "victim.d")
        os.mkdir(self.victim_dir, 0o755)
        self.listener = RootListener(os.path.join(tmp, "root.sock"))
        self.cwd = os.path.join(tmp, "cwd")
        os.mkdir(self.cwd)
        os.chown(self.cwd, USER, USER)
        self.classes = os.path.join(tmp, "classes")
        subprocess.run([JAVAC, "-d", self.classes, IDLE_JAVA], check=True, timeout=120)
        for d, _, files in os.walk(self.classes):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)

    def victims(self):
        st = os.lstat(self.victim)
        with open(self.victim) as f:
            text = f.read()
        dst = os.lstat(self.victim_dir)
        return ((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), text),
                (dst.st_uid, stat.S_IMODE(dst.st_mode), sorted(os.listdir(self.victim_dir))),
                self.listener.accepted)


def plant(path, kind, link_to):
    """kind at path, as the user (the foreign file as root, for its uid)."""
    if kind == "symlink":
        as_user("ln", "-s", link_to, path)
    elif kind == "fifo":
        as_user("mkfifo", path)
    elif kind == "dir":
        as_user("mkdir", path)
    else:
        with open(path, "w") as f:
            f.write("another user's file\n")
        os.chown(path, FOREIGN, FOREIGN)
        os.chmod(path, 0o644)


def entry(path):
    """What a test compares before and after: type, owner, mode, content."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        what = ("link", os.readlink(path))
    elif stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            what = ("file", f.read())
    elif stat.S_ISDIR(st.st_mode):
        what = ("dir", tuple(sorted(os.listdir(path))))
    else:
        what = (stat.S_IFMT(st.st_mode),)
    return (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), st.st_ino, what)


def unplant(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def find_marked(marker, timeout=30):
    """The host pid of the process whose command line holds marker."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"java") and marker.encode() in argv:
                return int(p)
        time.sleep(0.05)
    raise SystemExit(f"no JVM with {marker} started")


def nspid(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return pid


class Jvm:
    """Idle.java as the user, in cwd (a host path), or in a container."""

    def __init__(self, scene, argv=None):
        self.marker = f"vt-sec-{os.getpid()}-{time.monotonic_ns()}"
        argv = argv or [*AS_USER, JAVA, "-Xmx64m", "-cp", scene.classes, "Idle", self.marker]
        self.proc = subprocess.Popen(argv, cwd=scene.cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"the JVM did not start: {line!r}")
        self.pid = find_marked(self.marker)
        self.nspid = nspid(self.pid)

    def stop(self):
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.kill()
        self.proc.wait(timeout=30)


def attach(vmtrace, tmp, jvm):
    """record -p through the agent only; (exit status, stderr lines)."""
    data = os.path.join(tmp, "run.data")
    r = subprocess.run([vmtrace, "record", "-p", str(jvm.pid), "--runtime", "vmtrace", "-d", "0.5",
                        "-o", data, "--force"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    return r.returncode, [l for l in r.stderr.splitlines() if l.strip()]


def check_outcome(what, rc, lines, want_ok):
    if want_ok:
        check(rc == 0 and any("recording pid" in l for l in lines), f"{what}: attached ({rc}, {lines})")
    else:
        check(rc != 0 and len(lines) == 1 and lines[0].startswith("vmtrace: ") and "JVM" in lines[0]
              and all(c.isprintable() for c in lines[0]),
              f"{what}: failed with one printable line ({rc}, {lines})")


def trigger_paths(scene, jvm, root="/"):
    return {"cwd": os.path.join(scene.cwd, f".attach_pid{jvm.nspid}"),
            "tmp": os.path.join(root, "tmp", f".attach_pid{jvm.nspid}")}


def planted_case(vmtrace, scene, where, kinds_at, want_ok, jvm=None):
    """Plant kinds_at {path: kind}, attach, compare; the JVM is stopped
    after unless one was given."""
    own = jvm is None
    jvm = jvm or Jvm(scene)
    paths = trigger_paths(scene, jvm) | {"sock": f"/tmp/.java_pid{jvm.nspid}"}
    try:
        for key, kind in kinds_at.items():
            link_to = scene.listener.path if key == "sock" else scene.victim
            plant(paths[key], kind, link_to)
        before = {k: entry(paths[k]) for k in kinds_at}
        victims = scene.victims()
        rc, lines = attach(vmtrace, scene.tmp, jvm)
        name = f"{where}: {', '.join(f'{k} {v}' for k, v in kinds_at.items())}"
        check_outcome(name, rc, lines, want_ok)
        for k in kinds_at:
            check(entry(paths[k]) == before[k], f"{name}: the planted {k} entry unchanged")
        check(scene.victims() == victims, f"{name}: victim file, directory and socket untouched "
              f"{scene.victims()}")
        for k in ("cwd", "tmp"):
            if k not in kinds_at:
                check(not os.path.lexists(paths[k]), f"{name}: no trigger left at {paths[k]}")
    finally:
        for k in kinds_at:
            unplant(paths[k])
        if own:
            jvm.stop()


def case_jvm_cwd(vmtrace, scene):
    """Something planted at the trigger in the working directory: the
    trigger is made in /tmp, and the attach works; a file of another uid
    there, which HotSpot takes first and refuses, fails with one line."""
    for kind in KINDS:
        # HotSpot stops at the first trigger it finds: another uid's refuses
        planted_case(vmtrace, scene, "cwd", {"cwd": kind}, kind != "foreign")


def case_jvm_tmp(vmtrace, scene):
    """... in /tmp: made in the working directory; in both: one line."""
    for kind in KINDS:
        planted_case(vmtrace, scene, "tmp", {"tmp": kind}, True)
    jvm = Jvm(scene)
    try:
        for kind in KINDS:
            planted_case(vmtrace, scene, "both", {"cwd": kind, "tmp": kind}, False, jvm)
    finally:
        jvm.stop()


def case_jvm_socket(vmtrace, scene):
    """Anything but the JVM's user's socket at /tmp/.java_pid<PID>: a link
    (here to a root-owned socket), a FIFO, a directory, a file or a socket of
    another uid; vmtrace neither connects nor touches it."""
    jvm = Jvm(scene)
    try:
        for kind in KINDS:
            planted_case(vmtrace, scene, "socket", {"sock": kind}, False, jvm)
        path = f"/tmp/.java_pid{jvm.nspid}"
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        other.bind(path)
        other.listen(1)
        os.chown(path, FOREIGN, FOREIGN)
        try:
            before = entry(path)
            rc, lines = attach(vmtrace, scene.tmp, jvm)
            check_outcome("socket of another uid", rc, lines, False)
            other.setblocking(False)
            try:
                other.accept()
                took = True
            except BlockingIOError:
                took = False
            check(not took, "socket of another uid: not connected to")
            check(entry(path) == before, "socket of another uid: unchanged")
        finally:
            other.close()
            os.unlink(path)
    finally:
        jvm.stop()


LIAR = r"""
import os, socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.recv(65536)
    if mode == "garbage":
        c.sendall(b"\x1b]0;owned\x07\x1b[2J9 lies\r\nreturn code: x\n" + b"\xff" * 200000)
    elif mode == "silent":
        time.sleep(30)
    c.close()
"""


def case_jvm_lies(vmtrace, scene):
    """A listener of the user's own at the JVM's socket path answers lies: a
    flood with terminal escapes, then nothing at all. One printable line
    each, within the answer's time bound."""
    jvm = Jvm(scene)
    path = f"/tmp/.java_pid{jvm.nspid}"
    try:
        for mode in ("garbage", "silent"):
            liar = subprocess.Popen([*AS_USER, sys.executable, "-c", LIAR, path, mode],
                                    stdout=subprocess.PIPE, text=True)
            try:
                liar.stdout.readline()
                victims = scene.victims()
                t0 = time.monotonic()
                rc, lines = attach(vmtrace, scene.tmp, jvm)
                took = time.monotonic() - t0
                check_outcome(f"liar {mode}", rc, lines, False)
                check(took < 30, f"liar {mode}: bounded ({took:.1f} s)")
                check(scene.victims() == victims, f"liar {mode}: victims untouched")
            finally:
                liar.kill()
                liar.wait()
                unplant(path)
    finally:
        jvm.stop()


CONTAINER = r"""
set -e
R=$1; shift
mount --make-rprivate /
for d in usr etc; do mount --rbind /$d $R/$d; done
mount --bind "$CLASSES" $R/classes
mount -t proc proc $R/proc
exec chroot $R sh -c 'cd /app && exec "$@"' sh "$@"
"""


def case_jvm_container(vmtrace, scene):
    """A JVM in a root its user owns, in its own mount and pid namespaces.
    The user plants links that are absolute in the container's view and
    name the host's victims: resolved in the host's view they would make
    vmtrace chown the victim file or write into the victim directory.
    First both triggers (the working directory's and /tmp's) as links to
    the victim file, then /tmp itself as a link to the victim directory:
    one line each, nothing of the host's touched. Then, the links gone
    but the name the agent's copy would take first planted as a link, the
    attach loads the agent from a copy in the container's /tmp made under
    the next name, the JVM user's and writable by no one; the link and the
    host's files untouched."""
    root = os.path.join(scene.tmp, "container")
    os.mkdir(root)
    for d in ("usr", "etc", "classes", "proc", "tmp", "app"):
        os.mkdir(os.path.join(root, d))
    for l in ("bin", "lib", "lib64", "sbin"):
        os.symlink(f"usr/{l}", os.path.join(root, l))
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    for d in ("", "app"):
        os.chown(os.path.join(root, d), USER, USER)
    env = dict(os.environ, CLASSES=scene.classes)
    marker = f"vt-sec-ctr-{os.getpid()}"
    argv = ["unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", CONTAINER, "sh", root,
            *AS_USER, JAVA, "-Xmx64m", "-cp", "/classes", "Idle", marker]
    proc = subprocess.Popen(argv, cwd="/", env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    pid = None
    try:
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit("the JVM in the container did not start")
        pid = find_marked(marker)
        jvm = type("J", (), {"pid": pid, "nspid": nspid(pid)})()
        check(jvm.nspid != pid, f"container: the JVM has its own pid namespace ({jvm.nspid})")
        tmp = os.path.join(root, "tmp")
        triggers = [os.path.join(root, "app", f".attach_pid{jvm.nspid}"),
                    os.path.join(tmp, f".attach_pid{jvm.nspid}")]

        def attempt(name, planted):
            before = [entry(p) for p in planted]
            victims = scene.victims()
            rc, lines = attach(vmtrace, scene.tmp, jvm)
            check_outcome(name, rc, lines, False)
            check([entry(p) for p in planted] == before, f"{name}: the planted links unchanged")
            check(scene.victims() == victims, f"{name}: the host's victims untouched {scene.victims()}")
            return lines

        for t in triggers:
            as_user("ln", "-s", scene.victim, t)
        attempt("container, triggers linked to the host's file", triggers)
        for t in triggers:
            os.unlink(t)
        as_user("mv", tmp, os.path.join(root, "tmp.away"))
        as_user("ln", "-s", scene.victim_dir, tmp)
        attempt("container, /tmp linked to the host's directory", [tmp])
        os.unlink(tmp)
        as_user("mv", os.path.join(root, "tmp.away"), tmp)
        # the name the agent's copy would take first, planted as a link
        first = os.path.join(tmp, f"libvmtrace_jvm-{pid}-0.so")
        as_user("ln", "-s", scene.victim, first)
        victims = scene.victims()
        rc, lines = attach(vmtrace, scene.tmp, jvm)
        check_outcome("container, clean", rc, lines, True)
        check(os.readlink(first) == scene.victim, "container, clean: the planted link unchanged")
        check(scene.victims() == victims, f"container, clean: the host's victims untouched {scene.victims()}")
        copy = os.path.join(tmp, f"libvmtrace_jvm-{pid}-1.so")
        st = os.lstat(copy) if os.path.lexists(copy) else None
        check(st is not None and stat.S_ISREG(st.st_mode) and st.st_uid == USER and
              stat.S_IMODE(st.st_mode) == 0o500,
              f"container, clean: the agent copied under the next name, the JVM user's, writable by none: "
              f"{st and (oct(st.st_mode), st.st_uid)}")
        check(not any(os.path.lexists(t) for t in triggers), "container, clean: no trigger left")
    finally:
        # the JVM is its namespace's first process: ended by its host pid
        if pid:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        proc.kill()
        proc.wait(timeout=30)


CASES = {"jvm-cwd": case_jvm_cwd, "jvm-tmp": case_jvm_tmp, "jvm-socket": case_jvm_socket,
         "jvm-lies": case_jvm_lies, "jvm-container": case_jvm_container}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("skip: needs root")
        return 77
    if not os.path.exists(JAVA) or not shutil.which("setpriv"):
        print("skip: needs java and setpriv")
        return 77
    with tempfile.TemporaryDirectory(prefix="vt-sec-") as tmp:
        scene = Scene(tmp)
        CASES[sys.argv[2]](os.path.abspath(sys.argv[1]), scene)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
