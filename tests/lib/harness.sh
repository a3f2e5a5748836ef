# harness.sh: what the end-to-end shell tests share. Source it, then call
# `vt_harness NAME`: it makes a scratch folder $WORK and enters it, and on
# exit SIGKILLs every pid in PIDS, unmounts every path in MOUNTS and removes
# $WORK. fail prints the case, the reason and the *.err/*.out files of $WORK.
# The caller sets CASE.

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
