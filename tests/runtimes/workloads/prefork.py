# A prefork server's shape (gunicorn): the master imports vmtrace and forks
# two workers at start; each waits for SIGUSR1 and then makes Foo objects,
# worker i (1, 2) 1000 * i of them, all at one line (FOO_LINE). The master,
# on its own SIGUSR1, makes 500 Bar objects (BAR_LINE) and forks a third
# worker, which waits for SIGUSR2 and makes 3000 Foo objects. Every process
# writes "done PID" when it has made its objects; the master ends on
# SIGTERM. A Foo is one allocation (no __dict__, no values: __slots__ =
# ()), counted under its class.
import os
import signal
import sys
from itertools import repeat

import vmtrace  # noqa: F401 (dormant until a consumer attaches)


class Foo:
    __slots__ = ()


class Bar:
    __slots__ = ()


def say(line):
    os.write(1, (line + "\n").encode())


def make(cls, n):
    return list(map(lambda _: cls(), repeat(None, n)))  # FOO_LINE


def worker(n, sig):
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        os.read(r, 1)
        os.close(r)
        return pid
    os.close(r)
    signal.pthread_sigmask(signal.SIG_BLOCK, {sig, signal.SIGTERM})
    os.write(w, b"r")
    os.close(w)
    signal.sigwait({sig})
    kept = make(Foo, n)
    say(f"done {os.getpid()}")
    signal.sigwait({signal.SIGTERM})
    os._exit(0 if kept else 1)


# the line's first runs make what every process would otherwise make once
# there (CPython specializes its code as it runs): before any fork
make(Foo, 1000)
workers = [worker(1000, signal.SIGUSR1), worker(2000, signal.SIGUSR1)]
mask = {signal.SIGUSR1, signal.SIGTERM}
signal.pthread_sigmask(signal.SIG_BLOCK, mask)
say("workers " + " ".join(map(str, workers)))
say(f"ready {os.getpid()}")
while signal.sigwait(mask) != signal.SIGTERM:
    bars = make(Bar, 500)
    workers.append(worker(3000, signal.SIGUSR2))
    say(f"forked {workers[-1]}")
    say(f"done {os.getpid()}")
for pid in workers:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
sys.exit(0)
