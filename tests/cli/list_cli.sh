#!/usr/bin/env bash
# `vmtrace list` end to end, no privileges needed: a binary, running
# processes (probes in the executable, in a shared library, in python), JSON,
# and one clear line with a non-zero status for every bad input.
# Usage: list_cli.sh BIN_DIR LIBVMTRACE
set -euo pipefail
bin=$(realpath "$1")
lib=$2
vmtrace=$bin/vmtrace
work=$(mktemp -d /tmp/vmtrace-list.XXXXXX)
started=()
trap 'for p in "${started[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
fail() {
	echo "list_cli: FAIL: $*" >&2
	exit 1
}

# expect STATUS MESSAGE ARGS...: vmtrace list fails with STATUS and one
# stderr line containing MESSAGE.
expect() {
	local want=$1 msg=$2 status=0
	shift 2
	"$vmtrace" list "$@" >"$work/out" 2>"$work/err" || status=$?
	[ "$status" = "$want" ] || fail "list $*: status $status, wanted $want ($(cat "$work/err"))"
	[ "$(wc -l <"$work/err")" = 1 ] || fail "list $*: wanted one line on stderr, got: $(cat "$work/err")"
	grep -q -- "$msg" "$work/err" || fail "list $*: '$(cat "$work/err")' does not say '$msg'"
	[ ! -s "$work/out" ] || fail "list $*: printed a list despite the error"
}

# A binary: every probe of the ABI, with its arguments and semaphore.
"$vmtrace" list "$lib" >"$work/lib.txt"
grep -Eq '^vmtrace +object__alloc +0x[0-9a-f]+ +0x[0-9a-f]+ +(-?[0-9]@[^ ]+ ){5}-?[0-9]@[^ ]+ +.*libvmtrace' \
	"$work/lib.txt" || fail "object__alloc row missing: $(cat "$work/lib.txt")"
tail -1 "$work/lib.txt" | grep -qx '17 probes at 17 sites in 1 module' ||
	fail "summary: $(tail -1 "$work/lib.txt")"
"$vmtrace" list --format json "$lib" >"$work/lib.json"
jq -e '[.probes[] | select(.provider == "vmtrace")] | length == 17' "$work/lib.json" >/dev/null ||
	fail "json: not 17 vmtrace probes"
jq -e '.probes[] | select(.name == "object__alloc") | .nargs == 6 and .semaphore > 0 and .address > 0' \
	"$work/lib.json" >/dev/null || fail "json: object__alloc fields"

# Processes: probes in the executable (static libvmtrace) and in libvmtrace.so.
for exe in demovm demovm-shared; do
	[ -x "$bin/$exe" ] || continue
	"$bin/$exe" --wait --quiet >"$work/$exe.out" 2>/dev/null &
	started+=("$!")
	pid=$!
	until grep -qsx ready "$work/$exe.out"; do sleep 0.05; done
	"$vmtrace" list -p "$pid" --format json >"$work/$exe.json"
	want=$bin/$exe
	[ "$exe" = demovm-shared ] && want=$(realpath "$lib")
	jq -e --arg m "$want" '[.probes[] | select(.provider == "vmtrace" and .module == $m)] | length == 17' \
		"$work/$exe.json" >/dev/null || fail "-p $exe: no 17 vmtrace probes in $want"
	kill "$pid"
done
/usr/bin/python3.11 -c 'import sys, time; print("ready", flush=True); time.sleep(60)' >"$work/py.out" &
started+=("$!")
pid=$!
until grep -qsx ready "$work/py.out"; do sleep 0.05; done
"$vmtrace" list -p "$pid" | grep -Eq '^python +function__entry ' || fail "-p python: no function__entry"

# Bad input.
printf '#!/bin/sh\n' >"$work/script"
head -c 3000 "$lib" >"$work/truncated.so"
expect 1 "not an ELF file: $work/script" "$work/script"
expect 1 "malformed ELF file: $work/truncated.so" "$work/truncated.so"
expect 1 "no USDT probes in /bin/true" /bin/true
expect 1 "No such file" "$work/missing"
expect 1 "no such process: 2147483647" -p 2147483647
expect 2 "invalid pid 'abc'" -p abc
expect 2 "invalid pid '0'" -p 0
expect 2 "unknown format 'xml'" --format xml "$lib"
expect 2 "give either -p PID or a PATH" 
expect 2 "give either -p PID or a PATH" -p 1 "$lib"
expect 2 "unknown option" --bogus
echo "list_cli: PASS"
