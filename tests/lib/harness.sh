# harness.sh: what the end-to-end shell tests share. Source it, then call
# `vt_harness NAME`: it makes a scratch folder $WORK and enters it, and on
# exit SIGKILLs every pid in PIDS, unmounts every path in MOUNTS and removes
# $WORK. fail prints the case, the reason and the *.err/*.out files of $WORK.
# The caller sets CASE; vt_need_root skips the case unless root. wait_line waits for a line in a file (while a pid
# lives); expect runs $VMTRACE and wants one exit status and one stderr line.

vt_need_root() { # skip the case (77) unless root: these tests load real BPF
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: $CASE needs root (real BPF)"
		exit 77
	fi
}

vt_harness() {
	WORK=$(mktemp -d "/tmp/vmtrace-$1.XXXXXX")
	chmod 755 "$WORK"
	PIDS=()
	MOUNTS=()
	trap vt_harness_cleanup EXIT
	cd "$WORK" || exit 1
}

vt_harness_cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$WORK"
}

fail() {
	echo "FAIL [$CASE]: $*"
	for f in "$WORK"/*.err "$WORK"/*.out; do
		[ -s "$f" ] && { echo "--- $f"; head -c 3000 "$f"; echo; }
	done
	exit 1
}

wait_line() { # FILE REGEX [PID]: until FILE has a line matching REGEX; 30 s at most
	for _ in $(seq 300); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			grep -qE "$2" "$1" 2>/dev/null && return 0
			fail "pid $3 ended before a line matching '$2' in $1"
		fi
		sleep 0.1
	done
	fail "no line matching '$2' in $1"
}

expect() { # STATUS REGEX ARGS...: $VMTRACE ARGS exits STATUS with one stderr line matching REGEX
	local want=$1 re=$2
	shift 2
	"$VMTRACE" "$@" >err.out 2>err.err
	local got=$?
	[ "$got" = "$want" ] || fail "vmtrace $*: exit $got, want $want"
	[ "$(wc -l <err.err)" = 1 ] || fail "vmtrace $*: want one line on stderr, got: $(cat err.err)"
	grep -qE -e "$re" err.err || fail "vmtrace $*: '$(cat err.err)' does not match '$re'"
	echo "ok: vmtrace $* -> $(cat err.err)"
}
