#!/usr/bin/env bash
# many.sh CASE BIN_DIR: vmtrace record of several processes at once, end to
# end with real BPF (root; 77 = skipped).
#   pids         -p A,B on two demovm processes with other workloads, seeds
#                and op counts: each pid's allocation and free rows equal
#                that process's truth file exactly, in the live report and
#                in the record file's; text, csv, folded and pprof name them
#   pids_errors  a pid that does not exist, a pid twice, an empty item
#   cgroup       a demovm in a fresh cgroup, one outside: --by cgroup,pid
#                labels each with its own; --cgroup PATH records only the
#                one inside, its rows equal to its truth
set -uo pipefail

CASE=$1
BIN=$2
VMTRACE=$BIN/vmtrace
PY=/usr/bin/python3

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_need_root
vt_harness many
# shellcheck source=../lib/e2e_steps.sh
. "$(dirname "$0")/../lib/e2e_steps.sh"

case_pids() {
	start_demovm a demovm --ops 1500 --seed 3 --truth a.json
	A=$DV
	start_demovm b demovm --workload alloc --ops 4000 --seed 9 --threads 2 --truth b.json
	B=$DV
	"$VMTRACE" record -p "$A,$B" -o rec.data --format json >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: recording 2 processes' "$VT"
	kill -USR1 "$A" "$B"
	wait "$A" || fail "demovm a exited with $?"
	wait "$B" || fail "demovm b exited with $?"
	wait "$VT" || fail "vmtrace record exited with $? ($(cat vt.err))"
	grep -q "every process exited" vt.err || fail "vmtrace did not see both exit"
	per_pid vt.out "$A" a.json
	per_pid vt.out "$B" b.json
	"$VMTRACE" report rec.data --format json >rep.json 2>rep.err || fail "report: $(cat rep.err)"
	per_pid rep.json "$A" a.json
	per_pid rep.json "$B" b.json
	grep -q "^process $A =demovm =/" rec.data || fail "the record names no process $A"
	# the other formats carry pid and comm
	"$VMTRACE" report rec.data >rep.txt || fail "text report failed"
	grep -q "PID  *COMM" rep.txt || fail "text report has no PID column"
	grep -Eq "^ *$B +demovm " rep.txt || fail "text report has no row of pid $B"
	"$VMTRACE" report rec.data --format csv >rep.csv || fail "csv report failed"
	grep -q "^section,pid,comm,class,method" rep.csv || fail "csv has no pid column"
	grep -q "^allocations,$A,demovm," rep.csv || fail "csv has no row of pid $A"
	"$VMTRACE" report rec.data --format folded >rep.folded || fail "folded report failed"
	grep -q "^demovm-$A;" rep.folded || fail "folded has no root frame of pid $A"
	"$VMTRACE" report rec.data --format pprof >rep.pb.gz || fail "pprof report failed"
	zcat rep.pb.gz | grep -aq comm || fail "pprof has no comm label"
	# --by pid,class on one process's record: rows still say the pid
	"$VMTRACE" report rec.data --by pid,class --format json >cls.json || fail "--by pid,class failed"
	grep -q '"group_by": "pid,class"' cls.json || fail "--by pid,class not applied"
}

case_cgroup() {
	local root cg name=vmtrace-many-$$
	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$root" ] || fail "no cgroup2 mount"
	cg=$root/$name
	mkdir "$cg" || fail "cannot make $cg"
	trap 'rmdir "$cg" 2>/dev/null' EXIT
	start_demovm a demovm --ops 800 --seed 5 --truth a.json
	A=$DV
	echo "$A" >"$cg/cgroup.procs" || fail "cannot move $A into $cg"
	start_demovm b demovm --ops 300 --seed 6 --truth b.json
	B=$DV
	start_demovm c demovm --ops 500 --seed 7 --truth c.json
	C=$DV
	echo "$C" >"$cg/cgroup.procs" || fail "cannot move $C into $cg"
	# --cgroup: the processes in it (A and C), none outside (B)
	"$VMTRACE" record --cgroup "/$name" -o cg.data --format json >cg.out 2>cg.err &
	VT=$!
	PIDS+=("$VT")
	wait_line cg.err '^vmtrace: recording 2 processes' "$VT"
	"$VMTRACE" record -p "$A,$B" --by cgroup,pid,class,method -o ab.data --format json \
		>ab.out 2>ab.err &
	VT2=$!
	PIDS+=("$VT2")
	wait_line ab.err '^vmtrace: recording 2 processes' "$VT2"
	kill -USR1 "$A" "$B" "$C"
	wait "$A" "$B" "$C" || fail "a demovm failed"
	wait "$VT" || fail "record --cgroup exited with $? ($(cat cg.err))"
	wait "$VT2" || fail "record -p exited with $? ($(cat ab.err))"
	per_pid cg.out "$A" a.json
	per_pid cg.out "$C" c.json
	"$PY" - ab.out "$A" "$B" "/$name" cg.out <<'PY' || fail "cgroup labels wrong"
import json, sys
rep, a, b, cg = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
assert rep["group_by"] == "cgroup,pid,class,method", rep["group_by"]
rows = rep["allocations"]
assert {r["cgroup"] for r in rows if r["pid"] == a} == {cg}, "pid a not labelled with its cgroup"
assert all(r["cgroup"] != cg for r in rows if r["pid"] == b), "pid b labelled with a's cgroup"
assert {r["pid"] for r in rows} == {a, b}
assert all(r["container"] == "" for r in rows if r["pid"] == a), "a container id where the path shows none"
assert b not in {r["pid"] for r in json.load(open(sys.argv[5]))["allocations"]}, "--cgroup took b"
print("ok: cgroup labels")
PY
	"$VMTRACE" report ab.data --by cgroup,class --format csv >ab.csv || fail "csv report failed"
	grep -q "^allocations,/$name,," ab.csv || fail "csv rows carry no cgroup"
	"$VMTRACE" report ab.data --by cgroup,class --format folded >ab.folded || fail "folded failed"
	grep -q "^/$name;" ab.folded || fail "folded has no cgroup root frame"
	expect 1 "--cgroup /$name-none: No such file" record --cgroup "/$name-none" -o x.data
	expect 2 "not with -p" record --cgroup "/$name" -p "$A" -o x.data
}

case_pids_errors() {
	start_demovm a demovm --ops 10 --truth a.json
	A=$DV
	gone=$((1 << 22))
	while kill -0 "$gone" 2>/dev/null; do gone=$((gone + 1)); done
	expect 1 "pid $gone" record -p "$A,$gone" -o x.data
	expect 2 "pid $A is given twice" record -p "$A,$A" -o x.data
	expect 2 "has an empty item" record -p "$A,,$A" -o x.data
	expect 2 "has an empty item" record -p "$A," -o x.data
	expect 2 "'x1' is not a process id" record -p "$A,x1" -o x.data
	expect 2 "one process at a time" top -p "$A,1"
	[ ! -e x.data ] || fail "a failed record left x.data"
	kill -USR1 "$A"
	wait "$A"
}

"case_$CASE"
echo "ok: $CASE"
