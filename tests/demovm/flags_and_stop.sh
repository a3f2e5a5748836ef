#!/usr/bin/env bash
# demovm's command line: --help names every flag; each bad value is one
# line on stderr naming the flag, and exit status 2; --wait prints `ready`
# and runs only after SIGUSR1; SIGINT/SIGTERM end a run cleanly with the
# truth written and status 0.
# Usage: flags_and_stop.sh DEMOVM
set -euo pipefail
demovm=$1
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

help=$("$demovm" --help)
for flag in --duration --ops --threads --seed --wait --truth --workload --quiet --help; do
	grep -q -- "$flag" <<< "$help" || fail "--help does not mention $flag"
done

bad() { # expected flag in the message, args...
	local want=$1; shift
	local status=0
	"$demovm" "$@" >"$work/out" 2>"$work/err" || status=$?
	[ $status -eq 2 ] || fail "demovm $* exited $status, not 2"
	[ "$(wc -l < "$work/err")" -eq 1 ] || fail "demovm $*: error is not one line: $(cat "$work/err")"
	grep -q -- "$want" "$work/err" || fail "demovm $*: error does not name $want: $(cat "$work/err")"
}
bad --threads --threads 0
bad --threads --threads 65
bad --threads --threads two
bad --ops --ops 0
bad --ops --ops 12x
bad --ops --ops
bad --seed --seed -1
bad --duration --duration -3
bad --duration --duration soon
bad --workload --workload heavy
bad --truth --truth ''
bad --frobnicate --frobnicate
bad stray stray

# --wait: nothing runs before SIGUSR1
wait_ready() { # fifo -> waits for the ready line
	local line
	read -r -t 20 line < "$1" || fail "no ready line"
	[ "$line" = ready ] || fail "first line is '$line', not ready"
}
mkfifo "$work/fifo"
"$demovm" --wait --ops 300 --quiet --truth "$work/go.json" > "$work/fifo" & pid=$!
wait_ready "$work/fifo"
[ ! -e "$work/go.json" ] || fail "truth written before SIGUSR1"
kill -USR1 "$pid"
wait "$pid" || fail "--wait run exited $?"
pid=
jq -e '.ops == 300 and (.allocations | length) > 0' "$work/go.json" >/dev/null ||
	fail "--wait run did not run its ops"

# SIGTERM while waiting: clean exit, empty truth
"$demovm" --wait --quiet --truth "$work/term.json" > "$work/fifo" & pid=$!
wait_ready "$work/fifo"
kill -TERM "$pid"
wait "$pid" || fail "SIGTERM during --wait exited $?"
pid=
jq -e '(.allocations | length) == 0 and .gc.minor == 0' "$work/term.json" >/dev/null ||
	fail "a run stopped before SIGUSR1 reports work"

# SIGINT during an endless run: clean exit, truth of what ran
"$demovm" --wait --duration 0 --threads 2 --truth "$work/int.json" > "$work/fifo" 2>"$work/int.err" & pid=$!
wait_ready "$work/fifo"
kill -USR1 "$pid"
sleep 0.5
kill -INT "$pid"
wait "$pid" || fail "SIGINT during the run exited $?"
pid=
jq -e '(.allocations | length) > 0 and .threads == 2' "$work/int.json" >/dev/null ||
	fail "an interrupted run did not write what it did"
jq -e '.global_serial == ([.global_serial_incs[].count] | add)' "$work/int.json" >/dev/null ||
	fail "an interrupted run's serial does not add up"
# every SIGUSR2 raised before the stop was delivered and counted
raised=$(sed -n 's/.*signals raised \([0-9]*\), delivered by the bus \([0-9]*\).*/\1/p' "$work/int.err")
delivered=$(jq '[.signals[] | select(.signo == 12) | .received] | add // 0' "$work/int.json")
[ -n "$raised" ] && [ "$raised" -gt 0 ] || fail "no signal summary: $(cat "$work/int.err")"
[ "$raised" -eq "$delivered" ] || fail "raised $raised SIGUSR2, the truth counts $delivered"
echo "flags and stop: ok"
