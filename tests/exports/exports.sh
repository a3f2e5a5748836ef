#!/usr/bin/env bash
# exports.sh CASE BIN_DIR: the ecosystem formats, checked by the ecosystem's
# own readers (go tool pprof, a Prometheus text parser) and against
# demovm's truth. Cases that trace need root (exit 77 = skipped otherwise).
#   pprof_fixture  a record kept in the tree, as pprof, against vmtrace's own report
#   pprof_live     a real run: pprof against the report and demovm's truth
set -uo pipefail

CASE=$1
BIN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
FIXTURES=$HERE/../report/fixtures
PY=/usr/bin/python3
VMTRACE=$BIN/vmtrace

WORK=$(mktemp -d /tmp/vmtrace-exports.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
cd "$WORK" || exit 1

fail() {
	echo "FAIL [$CASE]: $*"
	for f in "$WORK"/*.err "$WORK"/*.out; do
		[ -s "$f" ] && { echo "--- $f"; head -c 3000 "$f"; echo; }
	done
	exit 1
}

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: $CASE needs root (real BPF)"
		exit 77
	fi
}

case "$CASE" in
pprof_fixture)
	"$VMTRACE" report "$FIXTURES/v1.data" --format pprof >v1.pb.gz 2>pprof.err ||
		fail "report --format pprof exited with $?"
	"$VMTRACE" report "$FIXTURES/v1.data" --format json >v1.json 2>json.err ||
		fail "report --format json exited with $?"
	"$PY" "$HERE/pprof_top.py" v1.pb.gz v1.json || fail "pprof and the report differ"
	;;

pprof_live)
	need_root
	"$VMTRACE" record -o rec.data --format pprof -- "$BIN/demovm" --ops 2000 --threads 2 \
		--truth truth.json --quiet >live.pb.gz 2>vt.err || fail "vmtrace record exited with $?"
	"$VMTRACE" report rec.data --format json >rec.json 2>report.err || fail "report exited with $?"
	"$PY" "$HERE/pprof_top.py" live.pb.gz rec.json || fail "pprof and the report differ"
	"$PY" "$HERE/pprof_top.py" live.pb.gz truth.json || fail "pprof and demovm's truth differ"
	# the labels and the header: pid, runtime, time and duration
	HOME=$WORK go tool pprof -tags live.pb.gz >tags.out 2>tags.err || fail "pprof -tags failed"
	grep -q "vmtrace" tags.out || fail "no runtime label"
	grep -qE "^ *pid: " tags.out || fail "no pid label"
	HOME=$WORK go tool pprof -top live.pb.gz 2>/dev/null >head.out
	grep -q "^Duration: " head.out || fail "no duration"
	grep -q "^Time: " head.out || fail "no time"
	;;

*)
	echo "exports.sh: unknown case '$CASE'" >&2
	exit 2
	;;
esac
