#!/bin/bash
# bench/runtimes/run.sh: the cost of vmtrace on stock Ruby (uprobes on
# libruby-3.1's allocation functions and its own USDT probes), side by side
# with bpftrace doing the same counting at the same places, in one run.
# Needs root.
#
# Usage: bench/runtimes/run.sh [VMTRACE] [ITERATIONS] [REPEATS]
#   VMTRACE     default build/bin/vmtrace
#   ITERATIONS  default 200000 (each: 5 Ruby method calls, 3 allocations), for
#               the configurations that trap per event; those that run in
#               the process (untraced, the extension, ObjectSpace, stackprof)
#               run 5 times as many: at 200000 they last 40 ms, where the
#               machine's noise and a fresh process's first touches weigh
#               as much as the tracing (every row is per iteration)
#   REPEATS     default 3 (the median is shown)
#
# Configurations (the workload times its own loop, after the tracer attached):
#   untraced                 no tracer
#   untraced+tracepoint      no tracer, an empty TracePoint(:call, :return): the
#                            price Ruby >= 2.5 asks before it fires method__entry
#   vmtrace --no-methods     allocations by class and site (one trap an object:
#                            the site from the frame walk)
#   bpftrace no-methods      the same counting as a one-liner (the site from
#                            Ruby's site probes: a second trap)
#   vmtrace (methods)        + innermost Ruby method, from the frame walk too
#                            (no TracePoint, no method probe)
#   vmtrace --stack vm       + the whole Ruby stack per object, walked in the
#                            same BPF program (no TracePoint, no method probe)
#   bpftrace (methods)       the same keys from a per-thread stack kept at
#                            method__entry/return (with the TracePoint they need)
#   ext dormant              vmtrace's Ruby extension loaded (-rvmtrace), no tracer
#   ext (methods)            vmtrace record -p of a Ruby with the extension: counted
#                            inside Ruby, no trap (class, method, site)
#   ext --stack vm           + the whole Ruby stack per object
#   ext --live               + frees (FREEOBJ): what is still alive, by class, method, site
#   ObjectSpace              ObjectSpace.trace_object_allocations (Ruby's own: file
#                            and line of every object), no tracer
#   stackprof object mode    StackProf mode: :object, interval: 1 (every object, its
#                            whole stack), no tracer
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VMTRACE=${1:-$HERE/../../build/bin/vmtrace}
ITER=${2:-200000}
IN_ITER=$((5 * ITER))
REPEATS=${3:-3}
RUBY=/usr/bin/ruby
# libruby as the dynamic linker finds it for ruby (the probes live there)
LIB=$(ldd "$RUBY" | awk '/libruby/ { print $3 }')
LIB=$(readlink -f "$LIB")
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (BPF)" >&2; exit 1; }
[ -x "$VMTRACE" ] || { echo "run.sh: no vmtrace at $VMTRACE" >&2; exit 1; }
command -v bpftrace >/dev/null || { echo "run.sh: bpftrace not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

U="usdt:$LIB:ruby"
P="uprobe:$LIB"
# the same probes vmtrace attaches (bench_ruby_sites prints where, and which
# registers hold the class and flags there): the USDT site probes announce a
# site, the allocation functions count (class, type, site). vmtrace probes
# each function at its first instruction the kernel emulates (one trap);
# bpftrace 0.17 refuses a uprobe inside a symbol of a stripped library, so
# it probes each at its entry, where five of the ten single-step (two traps).
SITES_TOOL=$(dirname "$VMTRACE")/bench_ruby_sites
[ -x "$SITES_TOOL" ] || { echo "run.sh: no bench_ruby_sites beside $VMTRACE" >&2; exit 1; }
SITES=$("$SITES_TOOL" --entry "$LIB")
site_probes() { # $1: the extra key fields (the method), empty or ", @c[tid, @d[tid]], ..."
	echo "$U:object__create, $U:string__create, $U:array__create, $U:hash__create { @f[tid] = str(arg1); @l[tid] = arg2; }"
	while read -r func off kreg freg type ivars _; do
		local k=0 t=$type b=""
		[ "$kreg" != - ] && k="reg(\"$kreg\")"
		[ "$type" = - ] && t="(reg(\"$freg\") & 0x1f)"
		# a plain object's ivar buffer: 8 bytes per ivar of its class past 3
		[ "$ivars" = 1 ] && b="\$n = *(uint64 *)(*(uint64 *)(*(uint64 *)($k + 24)) + 16); if (\$n > 3) { @b[$k, $t $1, @f[tid], @l[tid]] = sum(\$n * 8); }"
		echo "$P:$off { @a[$k, $t $1, @f[tid], @l[tid]] = count(); $b delete(@f[tid]); } // $func"
	done <<<"$SITES"
}
BT_GC="$U:gc__mark__begin { @gm[tid] = nsecs; }
$U:gc__mark__end /@gm[tid]/ { @mark = hist(nsecs - @gm[tid]); delete(@gm[tid]); }
$U:gc__sweep__begin { @gs[tid] = nsecs; }
$U:gc__sweep__end /@gs[tid]/ { @sweep = hist(nsecs - @gs[tid]); delete(@gs[tid]); }"
BT_NOMETHODS="BEGIN { printf(\"attached\\n\"); }
$(site_probes "")
$BT_GC"
M=', @c[tid, @d[tid]], @m[tid, @d[tid]]'
BT_METHODS="BEGIN { printf(\"attached\\n\"); }
$U:method__entry { @d[tid]++; @c[tid, @d[tid]] = str(arg0); @m[tid, @d[tid]] = str(arg1); }
$U:method__return /@d[tid] > 0/ { @d[tid]--; }
$(site_probes "$M")
$BT_GC"

. "$HERE/lib.sh"
EXT=(env RUBYOPT="-I$(dirname "$VMTRACE")/../lib/ruby -rvmtrace")

# Round robin: every repeat runs every configuration once, so a change in the
# machine's load touches all of them alike.
CONFIGS=(base base_tp vm_nom bt_nom vm_m bt_m vm_st ext_dorm ext_m ext_st ext_live objspace stackprof)
for _ in $(seq "$REPEATS"); do
	one_run none "" $RUBY "$HERE/bench.rb" "$IN_ITER" >>"$TMP/base"
	one_run none "" $RUBY "$HERE/bench.rb" "$IN_ITER" --tracepoint >>"$TMP/base_tp"
	one_run vmtrace --no-methods $RUBY "$HERE/bench.rb" "$ITER" >>"$TMP/vm_nom"
	one_run bpftrace "$BT_NOMETHODS" $RUBY "$HERE/bench.rb" "$ITER" >>"$TMP/bt_nom"
	one_run vmtrace "" $RUBY "$HERE/bench.rb" "$ITER" >>"$TMP/vm_m"
	one_run bpftrace "$BT_METHODS" $RUBY "$HERE/bench.rb" "$ITER" --tracepoint >>"$TMP/bt_m"
	one_run vmtrace "--stack vm" $RUBY "$HERE/bench.rb" "$ITER" >>"$TMP/vm_st"
	one_run none "" "${EXT[@]}" $RUBY "$HERE/bench.rb" "$IN_ITER" >>"$TMP/ext_dorm"
	one_run vmtrace "" "${EXT[@]}" $RUBY "$HERE/bench.rb" "$IN_ITER" --armed >>"$TMP/ext_m"
	one_run vmtrace "--stack vm" "${EXT[@]}" $RUBY "$HERE/bench.rb" "$IN_ITER" --armed >>"$TMP/ext_st"
	one_run vmtrace "--live" "${EXT[@]}" $RUBY "$HERE/bench.rb" "$IN_ITER" --armed >>"$TMP/ext_live"
	one_run none "" $RUBY -robjspace -e 'ObjectSpace.trace_object_allocations_start; load ARGV.shift' \
		"$HERE/bench.rb" "$IN_ITER" >>"$TMP/objspace"
	one_run none "" $RUBY -rstackprof -e 'StackProf.start(mode: :object, interval: 1); load ARGV.shift' \
		"$HERE/bench.rb" "$IN_ITER" >>"$TMP/stackprof"
done
for c in "${CONFIGS[@]}"; do
	declare "$c=$(median <"$TMP/$c")"
done

echo "ruby $(ruby -e 'print RUBY_VERSION') ($LIB), $ITER iterations ($IN_ITER in the process's own configurations) x 5 method calls + 3 allocations, median of $REPEATS"
row() { awk -v n="$1" -v v="$2" -v b="$base" -v r="$3" \
	'BEGIN { printf "%-28s %10d ns/iter %7.2fx untraced %s\n", n, v, v / b, r }'; }
printf "%-28s %10s\n" configuration "per iteration"
row "untraced" "$base" ""
row "untraced+tracepoint" "$base_tp" ""
row "vmtrace --no-methods" "$vm_nom" "$(awk -v a="$vm_nom" -v b="$bt_nom" 'BEGIN { printf "(bpftrace/vmtrace %.2f)", b / a }')"
row "bpftrace no-methods" "$bt_nom" ""
row "vmtrace (methods)" "$vm_m" "$(awk -v a="$vm_m" -v b="$bt_m" 'BEGIN { printf "(bpftrace/vmtrace %.2f)", b / a }')"
row "bpftrace (methods)" "$bt_m" ""
row "vmtrace --stack vm" "$vm_st" "$(awk -v a="$vm_st" -v b="$bt_m" 'BEGIN { printf "(bpftrace methods/vmtrace %.2f)", b / a }')"
row "ext dormant" "$ext_dorm" ""
row "ext (methods)" "$ext_m" "$(awk -v a="$ext_m" -v b="$vm_m" 'BEGIN { printf "(uprobes/ext %.2f)", b / a }')"
row "ext --stack vm" "$ext_st" "$(awk -v a="$ext_st" -v b="$vm_st" 'BEGIN { printf "(uprobes/ext %.2f)", b / a }')"
row "ext --live" "$ext_live" ""
row "ObjectSpace tracing" "$objspace" ""
row "stackprof object mode" "$stackprof" ""
awk -v a="$vm_nom" -v m="$vm_m" -v ba="$bt_nom" -v bm="$bt_m" -v b="$base" -v t="$base_tp" 'BEGIN {
	printf "per-method attribution over no-methods: vmtrace %.0f ns per iteration, bpftrace %.0f (%.0f ns per Ruby call, of which the TracePoint alone %.0f ns per iteration)\n", m - a, bm - ba, (bm - ba) / 5, t - b }'
awk -v a="$vm_nom" -v s="$vm_st" 'BEGIN { printf "whole stacks over no-methods: vmtrace --stack vm / --no-methods %.2fx\n", s / a }'
