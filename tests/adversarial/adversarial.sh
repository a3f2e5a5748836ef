#!/usr/bin/env bash
# adversarial.sh CASE BIN_DIR TEST_BIN_DIR: vmtrace used as a hostile or
# careless user would, end to end with real BPF (root; 77 = skipped).
#   BIN_DIR       holds vmtrace and demovm
#   TEST_BIN_DIR  holds hostile_host (tests/adversarial)
# Each case is one defect that once existed; it must stay fixed.
set -uo pipefail

CASE=$1
BIN=$2
TBIN=$3
VMTRACE=$BIN/vmtrace
HOST=$TBIN/hostile_host
PY=/usr/bin/python3

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_need_root
vt_harness adv

# wait_for CMD...: until CMD succeeds (60 s at most: a hang, not a measurement)
wait_for() {
	for _ in $(seq 600); do
		"$@" && return 0
		sleep 0.1
	done
	fail "timed out waiting for: $*"
}

# one_line STATUS REGEX STATUS_GOT FILE: the exit status and a one-line error
one_line() {
	[ "$3" = "$1" ] || fail "exit status $3, want $1"
	[ "$(wc -l <"$4")" = 1 ] || fail "want one line on stderr, got: $(cat "$4")"
	grep -qE "$2" "$4" || fail "'$(cat "$4")' does not match '$2'"
	echo "ok: $(cat "$4")"
}

json() { # FILE EXPRESSION (of the parsed report r)
	"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

case "$CASE" in
device_node)
	# -o onto a device node writes into it; the node stays a node
	mknod null c 1 3
	"$VMTRACE" record --force -o null -- "$BIN/demovm" --ops 300 --quiet >vt.out 2>vt.err ||
		fail "record exited with $?"
	[ -c null ] || fail "the device node was replaced: $(ls -l null)"
	[ "$(stat -c %t,%T null)" = "1,3" ] || fail "the node changed: $(stat -c %t,%T null)"
	# and without --force it is an existing file like any other
	"$VMTRACE" record -o null -- "$BIN/demovm" --ops 1 --quiet >vt2.out 2>vt2.err
	one_line 1 "^vmtrace: null exists \(use --force" $? vt2.err
	;;

sample_spawn)
	# --sample with a command vmtrace starts: the period reaches it
	"$VMTRACE" record -o rec.data --format json --sample 4K --report-file vt.json -- "$BIN/demovm" \
		--ops 3000 --quiet >vt.out 2>vt.err || fail "record --sample exited with $?"
	[ "$(json vt.json 'r["sample_period"]')" = 4096 ] || fail "sample_period is not 4096"
	samples=$(json vt.json 'sum(a["samples"] for a in r["allocations"])')
	count=$(json vt.json 'sum(a["count"] for a in r["allocations"])')
	[ "$samples" -gt 0 ] || fail "no samples"
	[ "$samples" -lt "$count" ] || fail "not sampled: $samples samples for $count allocations"
	echo "ok: $samples samples estimate $count allocations"
	;;

output_first)
	# a bad -o fails before the command runs, not after the recording
	"$VMTRACE" record -o "$WORK/no/such/dir/rec.data" -- "$HOST" --marker ran --exit 0 \
		>vt.out 2>vt.err
	one_line 1 "^vmtrace: cannot write $WORK/no/such/dir/rec.data: No such file or directory$" $? vt.err
	[ ! -e ran ] || fail "the command ran although -o could not be written"
	mkdir ro
	mount -t tmpfs -o ro,size=64k tmpfs ro || fail "cannot mount a read-only tmpfs"
	MOUNTS+=("$WORK/ro")
	"$VMTRACE" record -o ro/rec.data -- "$HOST" --marker ran --exit 0 >vt.out 2>vt.err
	one_line 1 "^vmtrace: cannot write ro/rec.data: Read-only file system$" $? vt.err
	[ ! -e ran ] || fail "the command ran although -o is on a read-only file system"
	mkdir dir.data
	"$VMTRACE" record --force -o dir.data -- "$HOST" --marker ran --exit 0 >vt.out 2>vt.err
	one_line 1 "^vmtrace: cannot write dir.data: Is a directory$" $? vt.err
	[ ! -e ran ] || fail "the command ran although -o is a directory"
	;;

sigterm_ignored)
	# -d ends the run even when the command ignores SIGTERM
	"$VMTRACE" record -d 0.5 -o rec.data -- "$HOST" --pidfile host.pid --ignore-term \
		>vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_for test ! -d "/proc/$VT"
	wait "$VT" || fail "record exited with $?"
	pid=$(cat host.pid)
	[ ! -d "/proc/$pid" ] || fail "the command (pid $pid) still runs"
	[ -s rec.data ] || fail "no record file"
	grep -q "Daemon#serve" vt.err || fail "nothing recorded"
	echo "ok: a SIGTERM-deaf command was ended and its run reported"
	;;

exit_status)
	# the command's exit status is record's
	"$VMTRACE" record -o a.data -- "$BIN/demovm" --bogus >vt.out 2>vt.err
	st=$?
	[ $st = 2 ] || fail "demovm --bogus: record exited $st, want demovm's 2"
	"$VMTRACE" record -o b.data -- "$HOST" --exit 7 >vt.out 2>vt.err
	st=$?
	[ $st = 7 ] || fail "exit 7: record exited $st"
	[ -s b.data ] || fail "no record after a failing command"
	"$VMTRACE" record -o c.data -- /bin/sh -c 'kill -SEGV $$' >vt.out 2>vt.err
	st=$?
	# /bin/sh has no probes: that is vmtrace's own error (1), not a status
	[ $st = 1 ] || fail "a probe-less command: record exited $st, want 1"
	"$VMTRACE" record -o d.data -- "$HOST" --exit 0 >vt.out 2>vt.err || fail "exit 0: record exited $?"
	echo "ok: statuses 2, 7 and 0 passed through"
	;;

tid)
	# -p with a thread id names the process it belongs to
	"$HOST" --thread >host.out 2>host.err &
	HP=$!
	PIDS+=("$HP")
	wait_for grep -q '^tid ' host.out
	tid=$(awk '{ print $2 }' host.out)
	[ "$tid" != "$HP" ] || fail "the thread id is the pid"
	"$VMTRACE" record -p "$tid" -o t.data >vt.out 2>vt.err
	one_line 1 "^vmtrace: $tid is a thread of pid $HP, not a process \(use -p $HP\)$" $? vt.err
	;;

script)
	# a script as the command: traced through its interpreter (CPython's own
	# probes, which count calls), status kept
	printf '#!/usr/bin/python3\nimport sys\ndef work(i):\n    return i * 2\nfor i in range(500):\n    work(i)\nsys.exit(5)\n' >work.py
	chmod +x work.py
	"$VMTRACE" record --runtime python -o s.data --format json --report-file vt.json -- ./work.py \
		>vt.out 2>vt.err
	st=$?
	[ $st = 5 ] || fail "record of a script exited $st, want the script's 5"
	[ "$(json vt.json 'r["runtime"]')" = python ] || fail "not traced as python"
	n=$(json vt.json 'sum(c["count"] for c in r["calls"] if c["name"] == "work")')
	[ "$n" = 500 ] || fail "work() calls: want 500, got $n"
	# through env(1), with an option and an assignment before the name
	printf '#!/usr/bin/env -S LC_ALL=C python3.11 -E\nimport sys\nsys.exit(0)\n' >env.py
	chmod +x env.py
	PATH=/usr/bin:/bin "$VMTRACE" record -o e.data -- ./env.py >vt.out 2>vt.err ||
		fail "record of an env script exited $?"
	# a script whose interpreter has no probes, and that runs no runtime,
	# says so, naming what it ran (it is followed into what it runs)
	printf '#!/bin/sh\nexit 0\n' >plain.sh
	chmod +x plain.sh
	"$VMTRACE" record -o p.data -- ./plain.sh >vt.out 2>vt.err
	one_line 1 "^vmtrace: ./plain.sh ran no program with vmtrace probes nor those of a known runtime \(it ran: [a-z]*sh\)" $? vt.err
	echo "ok: scripts traced through python; 500 calls"
	;;

long_names)
	# names past the names map (127 bytes) and past one BPF read (4094) in a
	# target that exits at once: whole, or cut visibly and counted as cut;
	# a name read whole is never counted as lost
	"$VMTRACE" record -o n.data --format json --report-file vt.json -- "$HOST" \
		--names 100,200,4000,5000,70000 >vt.out 2>vt.err || fail "record exited with $?: $(cat vt.err)"
	"$PY" - vt.json <<'PYEOF' || fail "long names: $(cat vt.err)"
import json, sys
r = json.load(open(sys.argv[1]))
def name(n):
    return "N" + "".join(chr(48 + i % 10) for i in range(1, n))
MARK = "...(truncated)"
got = {a["class"]: a["count"] for a in r["allocations"]}
bad = []
cut = 0
for n in (100, 200, 4000, 5000, 70000):
    full = name(n)
    if full in got:
        continue
    heads = [k for k in got if k.endswith(MARK) and full.startswith(k[:-len(MARK)])]
    # cut at what BPF read (4095) or what /proc gives (65535)
    if n >= 4095 and len(heads) == 1 and len(heads[0]) - len(MARK) in (4095, 65535):
        cut += 1
        continue
    bad.append(f"{n} bytes: not whole and not cut visibly")
if any("unreadable" in k for k in got):
    bad.append("a name shown as unreadable")
# two names cut to the same start share a row
if sum(got.values()) != 5 or sum(c for k, c in got.items() if k.endswith(MARK)) != cut:
    bad.append(f"want 5 allocations, {cut} of them under a cut name: {list(got.values())}")
lost = {l["what"]: l["count"] for l in r["lost"]}
want = {w: c for w, c in lost.items() if "cut short" in w}
if list(want.values()) != [cut]:
    bad.append(f"cut names counted {want}, want {cut}")
if r["lost_total"] != cut:
    bad.append(f"lost_total {r['lost_total']}, want {cut} (the cut names only): {lost}")
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"ok: 5 long names, {cut} cut and counted, lost_total {r['lost_total']}")
PYEOF
	;;

top_escapes)
	# top shows the target's command line and names escaped: an escape
	# sequence in argv reaches the terminal as text, never as bytes
	"$HOST" --marker "$(printf 'm\033[2Jx\\y')" --ignore-term >host.out 2>host.err &
	HP=$!
	PIDS+=("$HP")
	wait_for [ -e "$(printf 'm\033[2Jx\\y')" ]
	"$VMTRACE" top -p "$HP" -i 0.3 -n 2 >top.out 2>top.err || fail "top exited with $?: $(cat top.err)"
	grep -q '^vmtrace top - pid' top.out || fail "no view: $(cat top.out)"
	LC_ALL=C grep -q "$(printf '\033')" top.out && fail "an escape byte reached the output"
	grep -qF 'm\x1b[2Jx\\y' top.out || fail "command line not shown escaped: $(head -1 top.out)"
	echo "ok: $(head -1 top.out)"
	;;

numeric_range)
	# every numeric flag out of its range: one usage line, exit 2, before
	# anything is attached (pid 1 would be traced otherwise)
	"$VMTRACE" record -p 1 -o r.data --sample 2000G >vt.out 2>vt.err
	one_line 2 "^vmtrace: record: --sample: '2000G' is more than 1024G bytes" $? vt.err
	"$VMTRACE" record -p 1 -o r.data --sample 18446744073709551615 >vt.out 2>vt.err
	one_line 2 "^vmtrace: record: --sample: '18446744073709551615' is more than" $? vt.err
	"$VMTRACE" record -p 1 -o r.data --sample 17179869184G >vt.out 2>vt.err
	one_line 2 "^vmtrace: record: --sample: '17179869184G' is not a number of bytes" $? vt.err
	"$VMTRACE" top -p 1 -i 86401 >vt.out 2>vt.err
	one_line 2 "^vmtrace: top: -i: '86401' is more than 86400 seconds" $? vt.err
	"$VMTRACE" top -p 1 -i 1e300 >vt.out 2>vt.err
	one_line 2 "^vmtrace: top: -i: '1e300' is not a positive number of seconds" $? vt.err
	"$VMTRACE" record -p 1 -o r.data -d 1e10 >vt.out 2>vt.err
	one_line 2 "^vmtrace: record: -d: '1e10' is not a positive number" $? vt.err
	"$VMTRACE" record -p 1 -o r.data --top 18446744073709551616 >vt.out 2>vt.err
	one_line 2 "^vmtrace: record: --top: '18446744073709551616' is not a number" $? vt.err
	"$VMTRACE" record -p 4294967297 -o r.data >vt.out 2>vt.err
	one_line 2 "^vmtrace: record: -p: '4294967297' is not a process id" $? vt.err
	"$VMTRACE" record -p 1 -o r.data --map-entries 16777217 >vt.out 2>vt.err
	one_line 2 "^vmtrace: record: --map-entries: '16777217' is not a number from 1" $? vt.err
	;;

*)
	echo "unknown case $CASE"
	exit 2
	;;
esac
echo "PASS [$CASE]"
