#!/usr/bin/env bash
# Sampled allocation tracing end to end (docs/sampling.md), as root:
#  1. accuracy: demovm (fixed seed, 2 threads) recorded with --sample; every
#     class/method row holding >= 1% of the bytes is estimated within 5% of
#     demovm's own truth, from at least a few thousand samples per row.
#  2. reset: after `record --sample` detaches (-d) and after it is SIGKILLed,
#     the sample__armed semaphore read from the target's memory is back at 0
#     (the period variable still holds the old value: the semaphore alone
#     turns sampling off), and an exact recording made next equals the truth.
# Usage: sampling_e2e.sh BIN_DIR   (vmtrace, demovm, demovm-shared, sample_state)
# Exit 77 (skipped) when not root.
set -euo pipefail

bin=$(realpath "$1")
if [ "$(id -u)" -ne 0 ]; then
	echo "sampling_e2e: needs root for BPF; skipped"
	exit 77
fi
for b in vmtrace demovm sample_state; do
	[ -x "$bin/$b" ] || { echo "sampling_e2e: $bin/$b is missing" >&2; exit 1; }
done
demovm_shared=$bin/demovm-shared
[ -x "$demovm_shared" ] || demovm_shared=$bin/demovm

work=$(mktemp -d /tmp/vmtrace-sampling.XXXXXX)
started=()
cleanup() {
	for p in "${started[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	echo "sampling_e2e: FAIL: $*" >&2
	exit 1
}

# wait_until SECONDS CMD...: poll until CMD succeeds.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.05
	done
}

# start_demovm NAME BINARY ARGS...: sets DEMOVM to its pid once it says ready.
start_demovm() {
	local name=$1 exe=$2
	shift 2
	"$exe" --wait --quiet "$@" >"$work/$name.out" 2>"$work/$name.err" &
	DEMOVM=$!
	started+=("$DEMOVM")
	wait_until 20 grep -qsx ready "$work/$name.out" ||
		fail "$name: demovm never printed ready: $(cat "$work/$name.err")"
}

# start_record NAME ARGS...: vmtrace record in the background, JSON report
# to NAME.json; sets RECORD to its pid once it says it is recording.
start_record() {
	local name=$1
	shift
	"$bin/vmtrace" record -o "$work/$name.data" --format json "$@" \
		>"$work/$name.json" 2>"$work/$name.log" &
	RECORD=$!
	started+=("$RECORD")
	recording() {
		grep -qs "recording pid" "$work/$name.log" && return 0
		kill -0 "$RECORD" 2>/dev/null || fail "$name: vmtrace record failed: $(cat "$work/$name.log")"
		return 1
	}
	wait_until 20 recording || fail "$name: vmtrace record never started recording"
}

# state PID FIELD: period, armed or alloc, from the target's memory.
state() {
	"$bin/sample_state" "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

semaphores_released() {
	[ "$(state "$1" armed)" = 0 ] && [ "$(state "$1" alloc)" = 0 ]
}

# finish NAME: end demovm's wait, let it run and exit, then collect vmtrace.
finish() {
	local name=$1 status=0
	kill -USR1 "$DEMOVM"
	wait "$DEMOVM" || fail "$name: demovm exited with an error"
	wait "$RECORD" || status=$?
	[ "$status" = 0 ] || fail "$name: vmtrace record exited with $status: $(cat "$work/$name.log")"
}

# ---- 1. accuracy of the estimates ----
period=256
start_demovm accuracy "$bin/demovm" --ops 160000 --threads 2 --seed 11 --workload mixed \
	--truth "$work/accuracy.truth"
[ "$(state "$DEMOVM" armed)" = 0 ] || fail "accuracy: sample__armed held before anyone attached"
start_record accuracy -p "$DEMOVM" --sample "$period"
[ "$(state "$DEMOVM" period)" = "$period" ] || fail "accuracy: the period was not written"
[ "$(state "$DEMOVM" armed)" -ge 1 ] || fail "accuracy: sample__armed is not held while recording"
finish accuracy

jq -e '.estimated == true and .sample_period == '"$period" "$work/accuracy.json" >/dev/null ||
	fail "accuracy: the report does not say it is an estimate at period $period"
# One line per checked row: class, method, true bytes, estimated bytes, samples, error.
jq -r --slurpfile est "$work/accuracy.json" '
	(.allocations | map(.bytes) | add) as $total
	| .allocations[] | select(.bytes * 100 >= $total) | . as $t
	| ([$est[0].allocations[] | select(.class == $t.class and .method == $t.method)] | first) as $e
	| [$t.class, $t.method, $t.bytes, ($e.bytes // 0), ($e.samples // 0),
	   ((($e.bytes // 0) - $t.bytes) / $t.bytes * 100 | . * 100 | round / 100)]
	| @tsv' "$work/accuracy.truth" >"$work/accuracy.rows"
rows=$(wc -l <"$work/accuracy.rows")
[ "$rows" -ge 10 ] || fail "accuracy: only $rows rows hold >= 1% of the bytes"
echo "class/method rows with >= 1% of the bytes (truth bytes, estimate, samples, error %):"
column -t -s $'\t' "$work/accuracy.rows"
awk -F'\t' '
	$5 < 2000 { printf "accuracy: %s %s rests on only %d samples\n", $1, $2, $5; bad = 1 }
	$6 > 5 || $6 < -5 { printf "accuracy: %s %s off by %s%%\n", $1, $2, $6; bad = 1 }
	END { exit bad }' "$work/accuracy.rows" || fail "accuracy: estimates outside 5%"
# It really sampled: far fewer probe hits than allocations.
jq -e --slurpfile t "$work/accuracy.truth" '
	(.allocations | map(.samples) | add) * 3 < ($t[0].allocations | map(.count) | add)' \
	"$work/accuracy.json" >/dev/null || fail "accuracy: nearly every allocation was a sample"

# ---- 2. back to exact after detach and after SIGKILL ----
start_demovm reset "$demovm_shared" --ops 20000 --threads 2 --seed 5 --workload mixed \
	--truth "$work/reset.truth"
semaphores_released "$DEMOVM" || fail "reset: semaphores held before anyone attached"

start_record detach -p "$DEMOVM" --sample 4096 -d 1
[ "$(state "$DEMOVM" armed)" -ge 1 ] || fail "detach: sample__armed not held while recording"
wait "$RECORD" || true
wait_until 10 semaphores_released "$DEMOVM" ||
	fail "detach: semaphores still held after vmtrace detached: $("$bin/sample_state" "$DEMOVM")"
[ "$(state "$DEMOVM" period)" = 4096 ] || fail "detach: the period variable changed"

start_record killed -p "$DEMOVM" --sample 8192
[ "$(state "$DEMOVM" armed)" -ge 1 ] || fail "killed: sample__armed not held while recording"
kill -9 "$RECORD"
wait "$RECORD" 2>/dev/null || true
wait_until 10 semaphores_released "$DEMOVM" ||
	fail "killed: semaphores still held after SIGKILL of vmtrace: $("$bin/sample_state" "$DEMOVM")"
[ "$(state "$DEMOVM" period)" = 8192 ] || fail "killed: the period variable changed"
echo "after detach and after SIGKILL: $("$bin/sample_state" "$DEMOVM") (exact: armed=0)"

start_record exact -p "$DEMOVM"
[ "$(state "$DEMOVM" armed)" = 0 ] || fail "exact: an exact recording holds sample__armed"
finish exact
jq -e '.estimated == false and .sample_period == 0' "$work/exact.json" >/dev/null ||
	fail "exact: the report calls itself an estimate"
jq -e 'all(.allocations[]; .samples == .count)' "$work/exact.json" >/dev/null ||
	fail "exact: some allocations carried a weight other than 1"
norm='[.allocations[] | {class, method, count, bytes}] | sort_by(.class, .method)'
if ! diff <(jq -S "$norm" "$work/reset.truth") <(jq -S "$norm" "$work/exact.json") >"$work/exact.diff"; then
	head -40 "$work/exact.diff" >&2
	fail "exact: allocations differ from the truth after sampling consumers left"
fi
echo "exact recording after the sampling consumers left equals the truth"
echo "sampling_e2e: PASS"
