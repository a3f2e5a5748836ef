#!/bin/bash
# stacks_e2e.sh CASE BIN TBIN: allocations per VM stack (--stack vm), real
# BPF against demovm, compared with demovm's own count per call path.
#   spawn      record -- demovm: folded stacks (count and bytes) and the
#              record file read back equal the truth; the flame graph page
#              (run under node) shows them
#   pid        attach to a waiting demovm (static), then the same
#   pid_shared the same with libvmtrace.so
#   reattach   a second consumer after a first one still gets every stack's
#              frames (none lost)
#   native     record --stack native -- demovm: every allocation under its
#              native stack (frame pointers, symbolized), the recursion's
#              depths equal the VM truth's
#   both       record --stack both -- demovm (2 threads), and by pid: each
#              allocation under its native stack with its VM stack on top;
#              the VM parts equal the truth; the record file (folded from
#              it), the flame graph page and pprof keep both parts
#   errors     a host without a frame descriptor (vm and both), a bad --stack
set -uo pipefail

CASE=$1
BIN=$2
TBIN=$3
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
VMTRACE=$BIN/vmtrace
OPS=1500

. "$(dirname "$0")/../../lib/harness.sh"
vt_need_root
vt_harness stacks

compare() { # TRUTH FOLDED [count|bytes]
	"$PY" "$HERE/compare_stacks.py" "$@" >compare.out 2>&1 || fail "$(cat compare.out)"
	cat compare.out
}

lost_of() { # RECORD WHAT-PREFIX -> count
	"$VMTRACE" report "$1" --format json | "$PY" -c '
import json, sys
print(sum(l["count"] for l in json.load(sys.stdin)["lost"] if l["what"].startswith(sys.argv[1])))' "$2"
}

check_record() { # the record file keeps the stacks
	"$VMTRACE" report rec.data --format folded >report.folded 2>report.err ||
		fail "report exited with $?"
	compare truth.json report.folded
	"$VMTRACE" report rec.data --format folded --sort bytes >bytes.folded 2>report.err ||
		fail "report --sort bytes exited with $?"
	compare truth.json bytes.folded bytes
	"$VMTRACE" report rec.data --by stack --format json >bystack.json 2>report.err ||
		fail "report --by stack exited with $?"
	compare truth.json bystack.json by-stack
	for what in "stack map full" "stack cut" "stack's frames never arrived"; do
		[ "$(lost_of rec.data "$what")" = 0 ] || fail "lost: $what"
	done
}

record_pid() { # VARIANT MODE TRUTH RECORD FOLDED: attach to a waiting demovm, record it all
	"$BIN/$1" --quiet --wait --ops $OPS --threads 2 --truth "$3" >dv.out 2>dv.err &
	DV=$!
	PIDS+=("$DV")
	wait_line dv.out '^ready$' "$DV"
	"$VMTRACE" record --stack "$2" -p "$DV" -o "$4" --format folded >"$5" 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: recording pid' "$VT"
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$VT" || fail "vmtrace record exited with $?"
}

check_flamegraph() { # the flame graph page of rec.data shows report.folded's stacks
	"$VMTRACE" report rec.data --format flamegraph >alloc.html 2>report.err ||
		fail "report --format flamegraph exited with $?"
	node "$HERE/flamegraph_check.js" alloc.html report.folded >fg.out 2>&1 || fail "$(cat fg.out)"
	cat fg.out
}

pprof_traces() { # rec.data's pprof stacks into traces.out, as go tool pprof reads them
	"$VMTRACE" report rec.data --format pprof >alloc.pb.gz 2>report.err || fail "pprof exited with $?"
	go tool pprof -traces alloc.pb.gz >traces.out 2>traces.err || fail "go tool pprof: $(cat traces.err)"
}

case_pid() { # VARIANT
	record_pid "$1" vm truth.json rec.data vt.out
	compare truth.json vt.out
	check_record
}

case "$CASE" in
spawn)
	"$VMTRACE" record --stack vm -o rec.data --format folded --report-file vt.out -- "$BIN/demovm" \
		--ops $OPS --threads 2 --truth truth.json --quiet 2>vt.err || fail "vmtrace record exited with $?"
	compare truth.json vt.out
	check_record
	# the flame graph page shows the same stacks, searchable and zoomable
	check_flamegraph
	# pprof carries the whole stacks as locations
	pprof_traces
	tr -s ' \n' ' ' <traces.out | grep -q "Node Tree#grow Tree#grow Tree#grow Tree#build Object#main" ||
		fail "pprof: no Node <- Tree#grow x3 <- Tree#build <- Object#main stack"
	tr -s ' \n' ' ' <traces.out | grep -q "String Object#inspect Report#render Object#main" ||
		fail "pprof: no String <- Object#inspect <- Report#render <- Object#main stack"
	echo "pprof: whole stacks as locations"
	;;
pid) case_pid demovm ;;
pid_shared) case_pid demovm-shared ;;
native)
	"$VMTRACE" record --stack native -o rec.data --format folded --report-file vt.out -- \
		"$BIN/demovm" --ops $OPS --threads 2 --truth truth.json --quiet 2>vt.err ||
		fail "vmtrace record exited with $?"
	"$PY" "$HERE/compare_native.py" truth.json vt.out >native.out 2>&1 || fail "$(cat native.out)"
	cat native.out
	[ "$(lost_of rec.data "native stack not taken")" = 0 ] || fail "native stacks not taken"
	;;
both)
	"$VMTRACE" record --stack both -o rec.data --format folded --report-file vt.out -- \
		"$BIN/demovm" --ops $OPS --threads 2 --truth truth.json --quiet 2>vt.err ||
		fail "vmtrace record exited with $?"
	"$PY" "$HERE/compare_both.py" truth.json vt.out >both.out 2>&1 || fail "spawned: $(cat both.out)"
	cat both.out
	[ "$(lost_of rec.data "VM stack not read")" = 0 ] || fail "VM stacks not read"
	[ "$(lost_of rec.data "native stack not taken")" = 0 ] || fail "native stacks not taken"
	"$VMTRACE" report rec.data --format folded >report.folded 2>report.err || fail "report exited with $?"
	"$PY" "$HERE/compare_both.py" truth.json report.folded >both.out 2>&1 ||
		fail "the record file: $(cat both.out)"
	check_flamegraph
	pprof_traces
	tr -s ' \n' ' ' <traces.out | grep -q "Node Tree#grow Tree#build Object#main alloc_general vmtrace__alloc_live vm_new tree_grow" ||
		fail "pprof: no Node <- Tree#grow <- Tree#build <- Object#main <- alloc_general <- vmtrace__alloc_live <- vm_new <- tree_grow stack"
	echo "both, spawned: record file and pprof keep both parts"
	# by pid: the threads announce their frame pointers to this consumer
	record_pid demovm both truth2.json rec2.data vt2.out
	"$PY" "$HERE/compare_both.py" truth2.json vt2.out >both.out 2>&1 || fail "by pid: $(cat both.out)"
	cat both.out
	;;
reattach)
	"$BIN/demovm" --quiet --threads 1 --duration 0 >dv.out 2>dv.err &
	DV=$!
	PIDS+=("$DV")
	sleep 0.3
	for n in 1 2; do
		"$VMTRACE" record --stack vm -p "$DV" -d 1 -o rec$n.data >vt$n.out 2>vt$n.err ||
			fail "record $n exited with $?"
		"$VMTRACE" report rec$n.data --format folded >f$n.folded || fail "report $n"
		[ -s f$n.folded ] || fail "record $n: no stacks"
		! grep -q '\[stack lost\]' f$n.folded || fail "record $n: stacks whose frames never came"
		[ "$(lost_of rec$n.data "stack's frames never arrived")" = 0 ] || fail "record $n: lost stacks"
		grep -q '^Object#main;Tree#build;Tree#grow;Tree#grow;Node ' f$n.folded ||
			fail "record $n: no recursive stack"
	done
	echo "two consumers in turn: every stack's frames reached both"
	;;
errors)
	expect 2 "^vmtrace: record: --stack: 'deep' is not one of vm, native, both, none" \
		record --stack deep -o x.data -- "$BIN/demovm" --ops 1
	# early_host embeds libvmtrace but describes no frames
	"$TBIN/early_host" 1 --far >eh.out 2>eh.err &
	EH=$!
	PIDS+=("$EH")
	wait_line eh.out "^fired$" "$EH"
	expect 1 "--stack vm: pid $EH has not described its VM frames" record --stack vm -p "$EH" -o x.data
	expect 1 "--stack both: pid $EH has not described its VM frames" record --stack both -p "$EH" -o x.data
	;;
*)
	echo "unknown case $CASE"
	exit 2
	;;
esac
