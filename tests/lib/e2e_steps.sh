# e2e_steps.sh: the steps the end-to-end shell tests of vmtrace record share
# (tests/e2e). Source it after harness.sh; the caller sets BIN (vmtrace,
# demovm), VMTRACE, PY and HERE (where compare_truth.py is). wait_line,
# expect and fail are the harness's.

# start_demovm NAME VARIANT ARGS...: demovm --wait in the background,
# returned to `ready`; its pid in DV.
start_demovm() {
	local name=$1 variant=$2
	shift 2
	[ -x "$BIN/$variant" ] || fail "$BIN/$variant is missing"
	"$BIN/$variant" --wait --quiet "$@" >"$name.out" 2>"$name.err" &
	DV=$!
	PIDS+=("$DV")
	wait_line "$name.out" '^ready$' "$DV"
}

# start_record NAME ARGS...: vmtrace record in the background, returned once
# its probes are live (it says so on stderr); its pid in VT.
start_record() {
	local name=$1
	shift
	"$VMTRACE" record "$@" >"$name.out" 2>"$name.err" &
	VT=$!
	PIDS+=("$VT")
	wait_line "$name.err" '^vmtrace: recording pid' "$VT"
}

compare() { # TRUTH REPORT
	"$PY" "$HERE/compare_truth.py" "$1" "$2" >compare.out 2>&1 || fail "$(cat compare.out)"
	cat compare.out
}

