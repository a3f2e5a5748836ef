#!/bin/bash
# bench/runtimes/run_rdoc_root.sh: run_rdoc.sh's comparison for a Ruby of the
# version matrix, in its container (a root of scripts/matrix/roots.sh entered
# with its own mount and pid namespaces): rdoc over that Ruby's stdlib
# folders, whole-command wall time from the container's start to its exit,
# side by side in one run. vmtrace traces it from the host by pid, the
# gem (installed in the root by tests/runtimes/ruby/versions_test.py) loaded by
# RUBYOPT and the program held until armed (workloads/wait_armed.rb), so a
# traced run's time includes vmtrace's start and attach. Needs root.
#
# Usage: bench/runtimes/run_rdoc_root.sh RUBY [VMTRACE] [REPEATS]
#   RUBY     ruby3.3 (root trixie) or ruby3.4 (root sid)
#   VMTRACE  default build/bin/vmtrace
#   REPEATS  default 5 interleaved pairs (each run after an untraced one)
#
# Configurations: untraced; gem dormant (RUBYOPT=-rvmtrace, no tracer);
# ObjectSpace.trace_object_allocations; stackprof object mode, interval 1
# (where the root has ruby-stackprof for that Ruby); vmtrace record -p:
# exact, --stack vm, --live, --sample 32K.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUBY=${1:?usage: run_rdoc_root.sh RUBY [VMTRACE] [REPEATS]}
VMTRACE=$(readlink -f "${2:-$HERE/../../build/bin/vmtrace}")
REPEATS=${3:-5}
case $RUBY in
ruby3.3) SUITE=trixie ;;
ruby3.4) SUITE=sid ;;
*) echo "run_rdoc_root.sh: no root for $RUBY" >&2; exit 1 ;;
esac
ROOT=${VMTRACE_ROOTS:-/var/cache/vmtrace/roots}/$SUITE
API=${RUBY#ruby}
[ "$(id -u)" = 0 ] || { echo "run_rdoc_root.sh: needs root (BPF, namespaces)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_rdoc_root.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
in_root() { unshare --mount --pid --fork --mount-proc="$ROOT/proc" chroot "$ROOT" "$@"; }
in_root "$RUBY" -e 'require "vmtrace"' 2>/dev/null ||
	{ echo "run_rdoc_root.sh: no vmtrace gem in $ROOT for $RUBY (tests/runtimes/ruby/versions_test.py $RUBY-gem installs it)" >&2; exit 1; }
STACKPROF=1
in_root "$RUBY" -e 'require "stackprof"' 2>/dev/null || STACKPROF=0
IN=/tmp/vmtrace-bench
TMP=$(mktemp -d)
mkdir -p "$ROOT$IN"
trap 'rm -rf "$TMP" "$ROOT$IN"' EXIT
cp "$HERE/../../tests/runtimes/workloads/wait_armed.rb" "$ROOT$IN/"
echo 'require "objspace"; ObjectSpace.trace_object_allocations_start' >"$ROOT$IN/objspace.rb"
cat >"$ROOT$IN/stackprof.rb" <<RB
require "stackprof"
StackProf.start(mode: :object, interval: 1, raw: false)
at_exit { StackProf.stop; StackProf.results("$IN/stackprof.dump") }
RB
RDOC=("$RUBY" /usr/bin/rdoc -q -o "$IN/doc" "/usr/lib/ruby/$API.0/uri" "/usr/lib/ruby/$API.0/net")

now() { date +%s%N; }
# the untraced and the Ruby's own tools: the container's command alone
alone() { # RUBYOPT
	rm -rf "$ROOT$IN/doc"
	sync
	local t0 t1
	t0=$(now)
	in_root env RUBYOPT="$1" "${RDOC[@]}" >/dev/null 2>"$TMP/err" ||
		{ echo "run_rdoc_root.sh: rdoc failed: $(tail -c 300 "$TMP/err")" >&2; exit 1; }
	t1=$(now)
	echo $(((t1 - t0) / 1000))
}
# vmtrace record -p OPTIONS... of the container's Ruby, from its start
traced() {
	rm -rf "$ROOT$IN/doc"
	sync
	local t0 t1 outer pid
	t0=$(now)
	in_root env RUBYOPT="-rvmtrace -r$IN/wait_armed.rb" "${RDOC[@]}" >/dev/null 2>"$TMP/err" &
	outer=$!
	pid=
	until [ -n "$pid" ] && grep -q vmtrace_ext.so "/proc/$pid/maps" 2>/dev/null; do
		pid=$(pgrep -P "$(pgrep -P $outer)" 2>/dev/null | head -1) || true
		sleep 0.005
	done
	"$VMTRACE" record -p "$pid" -o "$TMP/r.data" --force "$@" >/dev/null 2>"$TMP/rec.err" ||
		{ echo "run_rdoc_root.sh: record failed: $(tail -c 300 "$TMP/rec.err")" >&2; exit 1; }
	wait $outer || { echo "run_rdoc_root.sh: rdoc failed: $(tail -c 300 "$TMP/err")" >&2; exit 1; }
	t1=$(now)
	echo $(((t1 - t0) / 1000))
}
run_config() {
	case $1 in
	base) alone "" ;;
	dormant) alone "-rvmtrace" ;;
	objspace) alone "-r$IN/objspace.rb" ;;
	stackprof) alone "-r$IN/stackprof.rb" ;;
	ext) traced ;;
	ext_stack) traced --stack vm ;;
	ext_live) traced --live ;;
	ext_sampled) traced --sample 32K ;;
	esac
}
. "$HERE/pairs.sh"
configs=(dormant objspace stackprof ext ext_stack ext_live ext_sampled)
[ "$STACKPROF" = 1 ] || configs=(dormant objspace ext ext_stack ext_live ext_sampled)
pairs_run "$REPEATS" base "${configs[@]}"
echo "rdoc over uri and net; $RUBY $(in_root "$RUBY" -e 'print RUBY_VERSION') in a $SUITE container;" \
	"wall time, $REPEATS pairs each (the untraced run before each), round robin"
pairs_table base base=untraced "dormant=gem dormant" objspace=ObjectSpace "stackprof=stackprof object" \
	"ext=vmtrace -p exact" "ext_stack=vmtrace -p --stack vm" "ext_live=vmtrace -p --live" \
	"ext_sampled=vmtrace -p --sample 32K"
