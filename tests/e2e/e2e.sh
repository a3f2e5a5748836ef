#!/usr/bin/env bash
# e2e.sh CASE BIN_DIR TEST_BIN_DIR: one end-to-end test of vmtrace against a
# real process with real BPF (needs root; exits 77 = skipped otherwise).
#   BIN_DIR       holds vmtrace, demovm, demovm-shared
#   TEST_BIN_DIR  holds early_host and vt_gates (tests/e2e)
# Cases compare vmtrace's JSON with demovm's truth file exactly
# (compare_truth.py), or check one error, stop condition or fault.
set -uo pipefail

CASE=$1
BIN=$2
TBIN=$3
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
VMTRACE=$BIN/vmtrace
OPS=2000

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_need_root
vt_harness e2e
# shellcheck source=../lib/e2e_steps.sh
. "$(dirname "$0")/../lib/e2e_steps.sh"

# start_running NAME VARIANT ARGS...: demovm in the background, returned once
# it runs demovm itself (exec done) and has its probes mapped; pid in DV.
start_running() {
	local name=$1 variant=$2
	shift 2
	"$BIN/$variant" --quiet "$@" >"$name.out" 2>"$name.err" &
	DV=$!
	PIDS+=("$DV")
	local exe want_lib=
	exe=$(realpath "$BIN/$variant")
	[ "$variant" = demovm-shared ] && want_lib=libvmtrace
	for _ in $(seq 300); do
		if [ "$(readlink "/proc/$DV/exe" 2>/dev/null)" = "$exe" ] &&
		   { [ -z "$want_lib" ] || grep -q "$want_lib" "/proc/$DV/maps" 2>/dev/null; }; then
			return 0
		fi
		sleep 0.05
	done
	fail "$variant did not start"
}

# wait_pid PID: until it is gone (60 s at most).
wait_gone() {
	for _ in $(seq 600); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	fail "pid $1 still running"
}

# by pid: demovm waits, vmtrace attaches, demovm runs to its end, vmtrace
# reports what it saw when demovm exits
case_pid() { # VARIANT THREADS
	start_demovm dv "$1" --ops $OPS --threads "$2" --truth truth.json
	start_record vt -p "$DV" -o rec.data --format json
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$VT" || fail "vmtrace record exited with $?"
	grep -q "exited; reporting" vt.err || fail "vmtrace did not see the target exit"
	compare truth.json vt.out
	# the record file says the same
	"$VMTRACE" report rec.data --format json >report.json 2>report.err || fail "report exited with $?"
	compare truth.json report.json
}

# by spawning: probes live before the command's first instruction
case_spawn() { # VARIANT THREADS
	"$VMTRACE" record -o rec.data -- "$BIN/$1" --ops $OPS --threads "$2" --truth truth.json \
		--quiet >vt.out 2>vt.err || fail "vmtrace record exited with $?"
	"$VMTRACE" report rec.data --format json >report.json 2>report.err || fail "report exited with $?"
	compare truth.json report.json
}

count_of() { # JSON CLASS METHOD -> count, or "none"
	"$PY" - "$1" "$2" "$3" <<'EOF'
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["allocations"]
        if r["class"] == sys.argv[2] and r["method"] == sys.argv[3]]
print(rows[0]["count"] if rows else "none")
EOF
}

lost_of() { # JSON WHAT-PREFIX -> count
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
print(sum(l["count"] for l in json.load(open(sys.argv[1]))["lost"] if l["what"].startswith(sys.argv[2])))
EOF
}

case "$CASE" in
pid_threads1) case_pid demovm 1 ;;
pid_threads2) case_pid demovm 2 ;;
pid_shared)
	[ -x "$BIN/demovm-shared" ] || { echo "SKIP: no demovm-shared"; exit 77; }
	case_pid demovm-shared 2 ;;
spawn_threads1) case_spawn demovm 1 ;;
spawn_threads2) case_spawn demovm 2 ;;
spawn_shared)
	[ -x "$BIN/demovm-shared" ] || { echo "SKIP: no demovm-shared"; exit 77; }
	case_spawn demovm-shared 2 ;;

early)
	# allocations fired by a constructor, before main, are counted
	"$VMTRACE" record -o rec.data --format json --report-file vt.json -- "$TBIN/early_host" 10 \
		>vt.out 2>vt.err || fail "vmtrace record exited with $?"
	early=$(count_of vt.json Early Host#constructor)
	main=$(count_of vt.json Host Host#main)
	[ "$early" = 3 ] || fail "constructor allocations: want 3, got $early"
	[ "$main" = 10 ] || fail "main allocations: want 10, got $main"
	echo "constructor allocations counted: $early; main: $main"
	;;

names)
	# a name the kernel cannot read is read from /proc; one nobody can
	# read is named by its address and counted
	# (the command shares vmtrace's stdout: read the record, not the report)
	"$VMTRACE" record -d 2 -o rec.data -- "$TBIN/early_host" 1 --far \
		>run.out 2>vt.err || fail "vmtrace record exited with $?"
	"$VMTRACE" report rec.data --format json >vt.out 2>report.err || fail "report exited with $?"
	far=$(count_of vt.out Faraway Host#far)
	bad=$(count_of vt.out "<unreadable 0x10>" Host#bad)
	never=$(lost_of vt.out "string never readable")
	total=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["lost_total"])' vt.out)
	[ "$far" = 1 ] || fail "Faraway: want 1 allocation, got $far"
	[ "$bad" = 1 ] || fail "<unreadable 0x10>: want 1 allocation, got $bad"
	[ "$never" = 1 ] || fail "never-readable strings: want 1 counted, got $never"
	# Faraway, read from /proc after the kernel could not, is no loss
	[ "$total" = 1 ] || fail "lost_total: want 1 (0x10 alone), got $total"
	echo "Faraway named from /proc, 0x10 named <unreadable 0x10>; lost: $total"
	;;

errors)
	# a pid that does not exist: the highest pid + 1 is free unless it wrapped
	nopid=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
	kill -0 $nopid 2>/dev/null && fail "pid $nopid exists"
	expect 1 "^vmtrace: no process with pid $nopid$" record -p $nopid -o x.data
	expect 1 "^vmtrace: no process with pid $nopid$" top -p $nopid
	# a process without vmtrace probes, and what it has instead
	sleep 60 &
	SL=$!
	PIDS+=("$SL")
	expect 1 "^vmtrace: pid $SL has no vmtrace probes" record -p $SL -o x.data
	"$PY" -c 'import time; time.sleep(60)' &
	PYP=$!
	PIDS+=("$PYP")
	for _ in $(seq 100); do
		readlink "/proc/$PYP/exe" | grep -q python && break
		sleep 0.05
	done
	# python3.11 has USDT probes of its own (provider python): named
	# either as a detected runtime or in the error
	"$VMTRACE" record -p $PYP -o py.data -d 0.2 >py.out 2>py.err
	st=$?
	if [ $st != 0 ]; then
		grep -q "python" py.err || fail "a python process: $(cat py.err)"
	fi
	echo "ok: python process -> exit $st: $(head -1 py.err)"
	# bad flags: usage errors, exit 2
	expect 2 "^vmtrace: record: -p: 'abc' is not a process id" record -p abc
	expect 2 "^vmtrace: record: -p: '12x' is not a process id" record -p 12x
	expect 2 "^vmtrace: record: -p: '-5' is not a process id" record -p -5
	expect 2 "^vmtrace: record: -d: 'soon' is not a positive" record -p 1 -d soon
	expect 2 "^vmtrace: record: -d: '0' is not a positive" record -p 1 -d 0
	expect 2 "^vmtrace: record: --format: 'xml'" record -p 1 --format xml
	expect 2 "^vmtrace: record: --map-entries: '0'" record -p 1 --map-entries 0
	expect 2 "^vmtrace: record: --sample: '12q'" record -p 1 --sample 12q
	expect 2 "^vmtrace: record: nothing to trace" record
	expect 2 "^vmtrace: record: -p and a command exclude each other" record -p 1 -- /bin/true
	expect 2 "^vmtrace: record: unknown option '--bogus'" record --bogus
	expect 2 "^vmtrace: record: --events: 'alloc,bogus' is not a list of alloc, free, gc, cache, signal" record -p 1 --events alloc,bogus
	expect 2 "^vmtrace: record: --events: '' is not a list" record -p 1 --events ''
	expect 2 "^vmtrace: record: option '-p' needs a value" record -p
	expect 2 "^vmtrace: record: --by stack needs stacks: add --stack vm" record -p 1 --by stack
	expect 2 "^vmtrace: top: -i: 'x' is not a positive" top -p 1 -i x
	expect 2 "^vmtrace: top: which process" top
	expect 2 "^vmtrace: unknown command 'recrod'" recrod
	expect 2 "^vmtrace: unknown option '--frobnicate'" --frobnicate
	expect 1 "^vmtrace: cannot run no-such-command-here: command not found" record -o y.data -- no-such-command-here
	# a report file that cannot be written fails before anything runs
	expect 1 "^vmtrace: --report-file /nonexistent/r.txt: No such file or directory$" record -o y.data \
		--report-file /nonexistent/r.txt -- /bin/true
	expect 2 "^vmtrace: record: --report-file: --every writes intervals" record --every 1s --out-dir . \
		--report-file r.txt -- /bin/true
	expect 2 "^vmtrace: record: --report-file: an empty name" record --report-file '' -- /bin/true
	expect 1 "^vmtrace: record: unknown runtime|^vmtrace: unknown runtime 'cobol'" record -o y.data --runtime cobol -- "$BIN/demovm" --ops 1
	# an existing record is kept unless --force
	echo keep >exists.data
	expect 1 "^vmtrace: exists.data exists \(use --force" record -p $SL -o exists.data
	[ "$(cat exists.data)" = keep ] || fail "exists.data was changed"
	# not enough privilege for BPF: an unprivileged user
	if id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
		mkdir -p nobody && chmod 777 nobody
		(cd nobody && setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
			"$VMTRACE" record -o n.data -- "$BIN/demovm" --ops 1 --quiet) >err.out 2>err.err
		st=$?
		[ $st = 1 ] || fail "unprivileged: exit $st: $(cat err.err)"
		grep -qx "vmtrace: BPF not permitted (run as root or with CAP_BPF+CAP_PERFMON)" err.err ||
			fail "unprivileged: $(cat err.err)"
		echo "ok: unprivileged -> $(cat err.err)"
	else
		fail "cannot test the unprivileged case: no nobody user or setpriv"
	fi
	;;

exit_midrun)
	# the target exits long before -d: the report is printed, exit 0
	start_demovm dv demovm --ops 300 --threads 1 --truth truth.json
	start_record vt -p "$DV" -d 3600 -o rec.data --format json
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$VT" || fail "vmtrace record exited with $? after its target exited"
	grep -q "exited; reporting" vt.err || fail "vmtrace did not say the target exited"
	[ -s rec.data ] || fail "no record file"
	compare truth.json vt.out
	;;

container_pid)
	# a process in another mount namespace, whose files are at paths the host
	# does not have: demovm (the provider in its executable) runs from a bind
	# mount at /mnt there; by pid its probes are reached through its root,
	# and its counts are its truth
	build=$(cd "$BIN/.." && pwd)
	unshare --mount --fork --kill-child sh -c 'mount --make-rprivate / && mount --bind "$0" /mnt &&
		cd "$1" && exec /mnt/bin/demovm --wait --quiet --ops '"$OPS"' --threads 2 \
		--truth truth.json' "$build" "$PWD" >ctr.out 2>ctr.err &
	CTR=$!
	PIDS+=("$CTR")
	wait_line ctr.out '^ready$' "$CTR"
	DV=  # its host pid, by its command line (procps need not be installed)
	for p in /proc/[0-9]*; do
		case "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" in
		"/mnt/bin/demovm --wait "*) DV=${p#/proc/} ;;
		esac
	done
	[ -n "$DV" ] && grep -q ' /mnt/bin/demovm$' "/proc/$DV/maps" || fail "demovm is not running from /mnt"
	[ ! -e /mnt/bin/demovm ] || fail "the host has /mnt/bin/demovm: no namespace of its own"
	"$VMTRACE" list -p "$DV" | grep -q "/proc/$DV/root/mnt/bin/demovm$" ||
		fail "list -p: the probes are not reached through its root: $("$VMTRACE" list -p "$DV" 2>&1 | head -3)"
	start_record vt -p "$DV" -o rec.data --format json
	kill -USR1 "$DV"
	wait "$VT" || fail "vmtrace record exited with $?: $(cat vt.err)"
	wait "$CTR" || fail "demovm exited with $?"
	compare truth.json vt.out
	echo "a process in its own mount namespace, by pid: its truth"
	;;

received_nothing)
	# attached to a process whose probes never fire while it records (demovm
	# waiting for the signal that starts it): one line says nothing came
	start_demovm dv demovm --ops 100
	"$VMTRACE" record -p "$DV" -d 0.5 -o rec.data >vt.out 2>vt.err || fail "record exited with $?"
	grep -qx "vmtrace: pid $DV: attached, but none of its vmtrace probes fired while recording: nothing was received" vt.err ||
		fail "nothing received is not said: $(cat vt.err)"
	# one that did its work does not say it
	"$VMTRACE" record -o rec2.data -- "$BIN/demovm" --ops 100 --quiet >vt.out 2>vt.err || fail "record exited with $?"
	! grep -q "nothing was received" vt.err || fail "said of a run that sent its events"
	echo "a recording that received nothing says so"
	;;

report_words)
	# record -- CMD: the command's stdout is its own, the report beside it on
	# stderr or in --report-file; an exact run ends with no lower bound, and
	# one whose allocation map overflowed says the allocation counts are
	# (a shell that says a line on its stdout, then becomes demovm)
	"$VMTRACE" record -o a.data -- /bin/sh -c 'echo own line; exec "$0" "$@"' "$BIN/demovm" --ops 20000 \
		--threads 2 --truth truth.json >vt.out 2>vt.err || fail "vmtrace record exited with $?"
	[ "$(cat vt.out)" = "own line" ] || fail "the command's stdout is not its own: $(cat vt.out)"
	grep -q '^Allocations by class and method' vt.err || fail "no report on stderr: $(cat vt.err)"
	# the allocation counts demovm made, exactly (as scripts/demo.sh checks them)
	"$VMTRACE" report a.data --format json | jq -r '.allocations[] | "\(.class) \(.method) \(.count) \(.bytes)"' |
		sort >traced
	jq -r '.allocations[] | "\(.class) \(.method) \(.count) \(.bytes)"' truth.json | sort >truth
	cmp -s traced truth || fail "the exact run's counts are not demovm's: $(diff traced truth | head)"
	! grep -q 'lower bound' vt.err || fail "an exact run is called a lower bound: $(sed -n '/^Lost/,$p' vt.err)"
	"$VMTRACE" record -o b.data --report-file rep.txt --map-entries 4 -- "$BIN/demovm" --ops 20000 \
		--threads 2 >vt.out 2>vt.err || fail "vmtrace record --map-entries 4 exited with $?"
	grep -qx "vmtrace: report written to rep.txt" vt.err || fail "where the report went is not said"
	[ ! -s vt.out ] && ! grep -q '^Allocations by' vt.err || fail "the report is not only in rep.txt"
	grep -q '^  allocation map full (events; raise --map-entries) *[1-9][0-9]*  allocations$' rep.txt ||
		fail "the full map's line: $(sed -n '/^Lost/,$p' rep.txt)"
	grep -Eq '^  [0-9,]+ not counted: the counts of allocations.* above are lower bounds\.$' rep.txt &&
		grep -qx '  A map was full: record again with a larger --map-entries.' rep.txt ||
		fail "the lower bound is not named: $(sed -n '/^Lost/,$p' rep.txt)"
	echo "report beside the command's output; exact: no lower bound; overflowed: allocations named"
	;;

target_killed)
	# a command killed by SIGKILL: said so, its status is the shell's 137,
	# and the counts its threads still held are a loss, not an exact report
	"$VMTRACE" record -o rec.data --format json --report-file vt.json -- "$BIN/demovm" \
		--ops 100000000 --threads 2 --quiet >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: recording pid' "$VT"
	DV=$(sed -n 's/^vmtrace: recording pid \([0-9]*\).*/\1/p' vt.err)
	sleep 0.5
	kill -9 "$DV"
	st=0
	wait "$VT" || st=$?
	[ $st = 137 ] || fail "vmtrace record exited with $st, not the killed command's 137: $(cat vt.err)"
	grep -qx "vmtrace: pid $DV was killed by SIGKILL; reporting what was recorded" vt.err ||
		fail "the kill is not said: $(cat vt.err)"
	n=$(lost_of vt.json "batched counts not flushed")
	[ "$n" -ge 1 ] || fail "no unflushed round counted as lost: $(cat vt.json)"
	echo "killed by SIGKILL: said, status 137, $n round(s) it held counted lost"
	;;

stop_signal)
	# SIGINT and SIGTERM end a run with the report of what was collected
	for sig in INT TERM; do
		start_running dv$sig demovm --duration 0
		start_record vt$sig -p "$DV" -o rec$sig.data --format json
		# let it count something: wait until demovm has allocated (its gate is up)
		sleep 0.3
		kill -$sig "$VT"
		wait "$VT" || fail "vmtrace record exited with $? on SIG$sig"
		kill -0 "$DV" || fail "demovm died with vmtrace"
		n=$("$PY" -c 'import json,sys; print(sum(a["count"] for a in json.load(open(sys.argv[1]))["allocations"]))' vt$sig.out) ||
			fail "no JSON report after SIG$sig"
		[ "$n" -gt 0 ] || fail "no allocations recorded before SIG$sig"
		[ -s rec$sig.data ] || fail "no record file after SIG$sig"
		kill "$DV"
		echo "ok: SIG$sig ends the run; $n allocations reported"
	done
	;;

duration)
	start_running dv demovm --duration 0
	"$VMTRACE" record -p "$DV" -d 0.5 -o rec.data --format json >vt.out 2>vt.err ||
		fail "vmtrace record -d exited with $?"
	kill -0 "$DV" || fail "demovm died"
	n=$("$PY" -c 'import json,sys; print(sum(a["count"] for a in json.load(open(sys.argv[1]))["allocations"]))' vt.out)
	[ "$n" -gt 0 ] || fail "no allocations in 0.5 s"
	echo "ok: -d 0.5 ends the run; $n allocations"
	;;

sigkill)
	# vmtrace killed with SIGKILL: the target keeps running and its
	# semaphores fall back to 0 (the kernel detaches the uprobes)
	variant=${4:-demovm}
	[ -x "$BIN/$variant" ] || { echo "SKIP: no $variant"; exit 77; }
	start_running dv "$variant" --duration 0
	"$TBIN/vt_gates" "$DV" >before.out 2>gates.err || fail "vt_gates: $(cat gates.err)"
	awk '$2 != 0 { exit 1 }' before.out || fail "semaphores up before tracing: $(cat before.out)"
	start_record vt -p "$DV" -o rec.data
	"$TBIN/vt_gates" "$DV" >during.out 2>gates.err || fail "vt_gates: $(cat gates.err)"
	grep -qx "alloc__batch 1" during.out || fail "alloc__batch's semaphore is not 1 while traced: $(cat during.out)"
	kill -9 "$VT"
	wait "$VT" 2>/dev/null
	ok=0
	for _ in $(seq 100); do
		"$TBIN/vt_gates" "$DV" >after.out 2>gates.err || fail "vt_gates: $(cat gates.err)"
		if awk '$2 != 0 { exit 1 }' after.out; then ok=1; break; fi
		sleep 0.1
	done
	[ $ok = 1 ] || fail "semaphores still up after SIGKILL: $(cat after.out)"
	kill -0 "$DV" || fail "the target died with vmtrace"
	echo "semaphores while traced: $(tr '\n' ' ' <during.out)"
	echo "after SIGKILL of vmtrace: all 0, target pid $DV still running"
	;;

links)
	# the probes are uprobe_multi links (one per program and binary, one
	# RCU wait each at detach, waited out together), where the kernel has them
	grep -qa bpf_uprobe_multi_link /sys/kernel/btf/vmlinux || { echo "SKIP: no uprobe_multi"; exit 77; }
	start_running dv demovm --duration 0
	start_record vt -p "$DV" -o rec.data
	types=$(cat /proc/"$VT"/fdinfo/* 2>/dev/null | awk '$1 == "link_type:" { print $2 }' | sort | uniq -c)
	echo "$types" | grep -qw uprobe_multi || fail "no uprobe_multi link: $types"
	echo "$types" | grep -qw perf_event && fail "a perf_event link beside them: $types"
	"$TBIN/vt_gates" "$DV" >during.out 2>gates.err || fail "vt_gates: $(cat gates.err)"
	grep -qx "alloc__batch 1" during.out || fail "alloc__batch's semaphore is not 1 while traced: $(cat during.out)"
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace record exited with $?"
	"$TBIN/vt_gates" "$DV" >after.out 2>gates.err || fail "vt_gates: $(cat gates.err)"
	awk '$2 != 0 { exit 1 }' after.out || fail "semaphores still up after the recording: $(cat after.out)"
	kill -0 "$DV" || fail "the target died with the recording"
	echo "links while recording: $(echo $types); semaphores 0 after it, target still running"
	;;

top_tty)
	# top on a real terminal (tmux) of 80x24: the view from the top line,
	# cut at the width; a resize redraws it; q quits at once with status 0
	# and gives the screen back
	command -v tmux >/dev/null || fail "no tmux (scripts/install-deps.sh installs it)"
	start_running dv demovm --duration 0 --threads 2
	sock=vt-e2e-$$
	tmux -L "$sock" new-session -d -x 80 -y 24 \
		"$VMTRACE top -p $DV -i 0.3; echo TOP-EXIT=\$?; sleep 60" || fail "tmux did not start"
	PIDS+=("$(tmux -L "$sock" display-message -p '#{pid}')") # the harness ends the server
	screen() { tmux -L "$sock" capture-pane -p; }
	ok=0
	for _ in $(seq 50); do
		screen >s1.txt
		grep -q 'ALLOCS/s' s1.txt && { ok=1; break; }
		sleep 0.1
	done
	[ $ok = 1 ] || fail "no view in the terminal: $(cat s1.txt)"
	head -1 s1.txt | grep -q "^vmtrace top - pid $DV " || fail "the first line is not top's header: $(head -3 s1.txt)"
	[ "$(awk 'length > 80' s1.txt | wc -l)" = 0 ] || fail "lines wider than the terminal"
	grep -q '^allocations: [1-9]' s1.txt || fail "no allocations line: $(cat s1.txt)"
	tmux -L "$sock" resize-window -x 132 -y 30 || fail "tmux cannot resize"
	sleep 1
	screen >s2.txt
	head -1 s2.txt | grep -q "^vmtrace top - pid $DV " || fail "after the resize, not top's header: $(head -3 s2.txt)"
	[ "$(awk 'length > 80' s2.txt | wc -l)" -gt 0 ] || fail "not redrawn to the new width: $(cat s2.txt)"
	tmux -L "$sock" send-keys q
	ok=0
	for _ in $(seq 10); do
		screen >s3.txt
		grep -q '^TOP-EXIT=' s3.txt && { ok=1; break; }
		sleep 0.1
	done
	[ $ok = 1 ] || fail "q did not end top within a second: $(cat s3.txt)"
	grep -q '^TOP-EXIT=0$' s3.txt || fail "top's status after q: $(grep TOP-EXIT s3.txt)"
	! grep -q 'ALLOCS/s' s3.txt || fail "the terminal was not given back: $(cat s3.txt)"
	echo "top in an 80x24 terminal: header first, lines cut; redrawn at 132x30; q quit at once"
	;;

top)
	start_running dv demovm --duration 0
	"$VMTRACE" top -p "$DV" -i 0.3 -n 3 >top.out 2>top.err || fail "vmtrace top exited with $?"
	[ "$(grep -c '^vmtrace top - pid' top.out)" = 3 ] || fail "want 3 views: $(cat top.out)"
	grep -qE '^allocations: [1-9][0-9]* \(' top.out || fail "no allocations in top: $(cat top.out)"
	grep -qE '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  (Node|String|Float|Point|Array|Hash) ' top.out ||
		fail "no allocation rows: $(cat top.out)"
	# one row per (class, method): demovm allocates one from several sites
	"$VMTRACE" top -p "$DV" -i 0.3 -n 1 --top 0 >top1.out 2>top1.err || fail "vmtrace top exited with $?"
	sed -nE 's/^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+  //p' top1.out | tr -s ' ' | sort >rows.txt
	[ -s rows.txt ] || fail "no rows: $(cat top1.out)"
	dups=$(uniq -d rows.txt)
	[ -z "$dups" ] || fail "rows shown twice: $dups"
	kill -0 "$DV" || fail "demovm died"
	# and it ends by itself when the target exits
	start_demovm dv demovm --ops 200 --threads 1
	"$VMTRACE" top -p "$DV" -i 0.2 >top2.out 2>top2.err &
	TP=$!
	PIDS+=("$TP")
	wait_line top2.out '^vmtrace top - pid' "$TP"
	kill -USR1 "$DV"
	wait "$TP" || fail "vmtrace top exited with $? after its target exited"
	grep -q "exited" top2.err || fail "top did not say the target exited"
	echo "ok: top views and target exit"
	;;

*)
	echo "unknown case $CASE"
	exit 2
	;;
esac
echo "PASS [$CASE]"
