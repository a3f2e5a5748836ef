#!/bin/bash
# bench/runtimes/run_rdoc.sh: what tracing every object costs a real Ruby
# program, rdoc over stdlib folders, as whole-command wall time, side by
# side in one run: Ruby's own tools (ObjectSpace allocation tracing,
# stackprof's object mode at interval 1) and vmtrace's two Ruby paths
# (uprobes on libruby, and the Ruby extension counting inside the process).
# Needs root.
#
# Usage: bench/runtimes/run_rdoc.sh [VMTRACE] [REPEATS] [FOLDER...]
#   VMTRACE  default build/bin/vmtrace
#   REPEATS  default 5: pairs of each configuration (min and median shown, and the
#            median of each run over the untraced run just before it)
#   FOLDER   default /usr/lib/ruby/3.1.0/uri /usr/lib/ruby/3.1.0/net
#
# Configurations:
#   untraced            rdoc alone
#   ext dormant         rdoc with the extension loaded (RUBYOPT=-rvmtrace), no tracer
#   ObjectSpace         ObjectSpace.trace_object_allocations_start (file and line of each object)
#   stackprof object    StackProf mode: :object, interval: 1 (every object, whole stacks)
#   vmtrace uprobes     vmtrace record --runtime ruby (a trap per object)
#   vmtrace ext         vmtrace record (the extension: class, method, site)
#   vmtrace ext stack   vmtrace record --stack vm
#   vmtrace ext live    vmtrace record --live
#   vmtrace ext sampled vmtrace record --sample 32K (allocations on Ruby's
#                       fast path between samples: provider/ruby/src/sampler.c)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=$(readlink -f "${1:-$HERE/../../build/bin/vmtrace}")
REPEATS=${2:-5}
shift 2 2>/dev/null || shift $#
FOLDERS=("$@")
[ ${#FOLDERS[@]} -gt 0 ] || FOLDERS=(/usr/lib/ruby/3.1.0/uri /usr/lib/ruby/3.1.0/net)
EXT_DIR=$(dirname "$VMTRACE")/../lib/ruby
[ "$(id -u)" = 0 ] || { echo "run_rdoc.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run_rdoc.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
[ -f "$EXT_DIR/vmtrace_ext.so" ] || { echo "run_rdoc.sh: no Ruby extension in $EXT_DIR" >&2; exit 1; }
ruby -e 'require "stackprof"' 2>/dev/null || { echo "run_rdoc.sh: needs ruby-stackprof" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/objspace.rb" <<'RB'
require "objspace"
ObjectSpace.trace_object_allocations_start
RB
cat >"$TMP/stackprof.rb" <<RB
require "stackprof"
StackProf.start(mode: :object, interval: 1, raw: false)
at_exit { StackProf.stop; StackProf.results("$TMP/stackprof.dump") }
RB
RDOC=(rdoc -q -o "$TMP/doc" "${FOLDERS[@]}")

# one run: the command's wall time in seconds on stdout
timed() {
	rm -rf "$TMP/doc"
	# the previous run's pages written out first, not during this one
	sync
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>"$TMP/err" || { echo "run_rdoc.sh: failed: $* : $(tail -c 400 "$TMP/err")" >&2; exit 1; }
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}
run_config() {
	case $1 in
	base) timed "${RDOC[@]}" ;;
	dormant) RUBYOPT="-I$EXT_DIR -rvmtrace" timed "${RDOC[@]}" ;;
	objspace) RUBYOPT="-r$TMP/objspace.rb" timed "${RDOC[@]}" ;;
	stackprof) RUBYOPT="-r$TMP/stackprof.rb" timed "${RDOC[@]}" ;;
	uprobes) timed "$VMTRACE" record --runtime ruby -o "$TMP/r.data" --force -- "${RDOC[@]}" ;;
	ext) timed "$VMTRACE" record -o "$TMP/r.data" --force -- "${RDOC[@]}" ;;
	ext_stack) timed "$VMTRACE" record --stack vm -o "$TMP/r.data" --force -- "${RDOC[@]}" ;;
	ext_live) timed "$VMTRACE" record --live -o "$TMP/r.data" --force -- "${RDOC[@]}" ;;
	ext_sampled) timed "$VMTRACE" record --sample 32K -o "$TMP/r.data" --force -- "${RDOC[@]}" ;;
	esac
}
. "$HERE/pairs.sh"
pairs_run "$REPEATS" base dormant objspace stackprof uprobes ext ext_stack ext_live ext_sampled
echo "rdoc over ${FOLDERS[*]}; ruby $(ruby -e 'print RUBY_VERSION'); wall time, $REPEATS pairs each (the untraced" \
	"run before each), round robin"
pairs_table base base=untraced "dormant=ext dormant" objspace=ObjectSpace "stackprof=stackprof object" \
	"uprobes=vmtrace uprobes" "ext=vmtrace ext" "ext_stack=vmtrace ext --stack vm" "ext_live=vmtrace ext --live" \
	"ext_sampled=vmtrace ext --sample 32K"
