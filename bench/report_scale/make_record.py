#!/usr/bin/env python3
"""Writes a record file (docs/record-format.md) of N allocation rows, for
bench/report_scale: distinct methods and sites over 5000 classes, and with
--stacks every row under one of N/15 whole stacks 3 to 12 frames deep, with
--live a live row for every allocation row.

Usage: make_record.py N [--stacks] [--live] > FILE
"""
import random
import sys


def main(argv):
    n = int(argv[1])
    stacks, live = '--stacks' in argv, '--live' in argv
    rnd = random.Random(n)
    lines = ['runtime =vmtrace', 'probes =object__alloc', 'target =make_record.py', 'pid 1',
             'duration_s 0x1p+0', 'start_unix_ns 1', 'sample_period 0', 'has_allocations 1',
             'last_serial 0', 'gc_collections 3 0 0 0']
    if live:
        lines.append('live_heap %d 1000 %d 5' % (n, 40 * n))
    nstacks = max(1, n // 15) if stacks else 0
    for _ in range(nstacks):
        depth = rnd.randint(3, 12)
        frames = ' '.join('=fn%d =file%d.rb %d' % (rnd.randrange(3000), rnd.randrange(300),
                                                    rnd.randint(1, 500)) for _ in range(depth))
        lines.append('stack 0 %d %s' % (depth, frames))
    for i in range(n):
        key = '=C%d =m%d =f%d.rb:%d' % (i % 5000, i, i % 977, i)
        if stacks:
            lines.append('alloc_stack %d %s %d %d %d' % (i % nstacks + 1, key, i + 1, 40 * (i + 1), i + 1))
        else:
            lines.append('alloc %s %d %d %d' % (key, i + 1, 40 * (i + 1), i + 1))
        if live:
            lines.append('live %s 1 40 1 0 0' % key)
    sys.stdout.write('vmtrace-record 4\n' + '\n'.join(lines) + '\nend %d\n' % len(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
