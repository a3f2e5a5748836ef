#!/usr/bin/env bash
# `vmtrace report` as users run it: the real binary on a version 1 record
# kept in the tree (so every later vmtrace must still read it), its exit
# status (0 ok, 1 runtime error, 2 usage error) and its one-line errors.
# Usage: cli_report.sh VMTRACE FIXTURES_DIR
set -euo pipefail
vmtrace=$1
fixtures=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# expect STATUS STDERR-PREFIX ARGS...: the status and a single stderr line
expect() {
	local want=$1 prefix=$2 status=0
	shift 2
	"$vmtrace" report "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
	[ "$status" = "$want" ] || fail "report $*: status $status, wanted $want"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "report $*: stderr is not one line: $(cat "$tmp/err")"
	[[ "$(cat "$tmp/err")" == "$prefix"* ]] || fail "report $*: stderr '$(cat "$tmp/err")'"
	[ ! -s "$tmp/out" ] || fail "report $*: printed a report"
}

v1=$fixtures/v1.data

"$vmtrace" report "$v1" --format json >"$tmp/json"
[ "$(jq -c '[.allocations[] | {class, method, count, bytes}]' "$tmp/json")" = \
  '[{"class":"String","method":"Parser#tokenize","count":2349,"bytes":107156}]' ] ||
	fail "json allocations: $(jq -c .allocations "$tmp/json")"
[ "$(jq -c '[.gc.minor, .gc.major, .global_serial, .signals[0].received, .lost_total]' "$tmp/json")" = \
  '[16,5,70,46,0]' ] || fail "json gc/serial/signals/lost"
[ "$(jq -r '.method_cache_resets[0] | "\(.class)|\(.method)|\(.count)"' "$tmp/json")" = 'Shape||1' ] ||
	fail "json method cache resets"

[ "$("$vmtrace" report "$v1" --format folded --sort bytes)" = 'Parser#tokenize;String 107156' ] ||
	fail "folded"
# prometheus: text a scraper's parser takes whole (promtool), counts equal json's
"$vmtrace" report "$v1" --format prometheus >"$tmp/prom"
promtool check metrics <"$tmp/prom" >"$tmp/promtool" 2>&1 || fail "prometheus: promtool: $(cat "$tmp/promtool")"
grep -qx 'vmtrace_allocations_total{runtime="vmtrace",pid="27784",comm="demovm",class="String",method="Parser#tokenize"} 2349' "$tmp/prom" ||
	fail "prometheus allocations"
grep -qx 'vmtrace_allocated_bytes_total{runtime="vmtrace",pid="27784",comm="demovm",class="String",method="Parser#tokenize"} 107156' "$tmp/prom" ||
	fail "prometheus bytes"

# diff: the formats its renderers have (the report registry's), else a usage error
status=0
"$vmtrace" diff "$v1" "$v1" --format perfetto >"$tmp/out" 2>"$tmp/err" || status=$?
[ "$status" = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ] &&
	grep -q 'a diff is text, json, csv, folded' "$tmp/err" || fail "diff --format perfetto: $status $(cat "$tmp/err")"
"$vmtrace" diff "$v1" "$v1" --format csv >"$tmp/out" || fail "diff csv"
[ "$(cat "$tmp/out")" = 'class,method,site,base_count,new_count,delta_count,base_bytes,new_bytes,delta_bytes,base_live_count,new_live_count,delta_live_count,base_live_bytes,new_live_bytes,delta_live_bytes' ] ||
	fail "diff csv of a record with itself: $(cat "$tmp/out")"

"$vmtrace" report "$v1" >"$tmp/text"
grep -q '^vmtrace report: runtime vmtrace, pid 27784, 0.202 s$' "$tmp/text" || fail "text header"
grep -q '^Lost: nothing\.$' "$tmp/text" || fail "text loss counters"

expect 2 "vmtrace: report: unknown option '--colour'" "$v1" --colour
expect 2 "vmtrace: report: --format: 'yaml'" --format yaml "$v1"
expect 2 "vmtrace: report: --top: 'ten'" --top ten "$v1"
expect 2 "vmtrace: report: one FILE at most" "$v1" "$v1"
expect 1 "vmtrace: $0: not a vmtrace record" "$0"
# a record made without --stack has no stacks to group by: one line saying how to get them
expect 1 "vmtrace: $v1: --by stack: this record has no stacks (make it with \`vmtrace record --stack vm\`)" \
	"$v1" --by stack
expect 1 "vmtrace: $tmp/none.data: No such file or directory" "$tmp/none.data"
head -c 200 "$v1" >"$tmp/cut.data"
expect 1 "vmtrace: $tmp/cut.data: not a vmtrace record, or truncated" "$tmp/cut.data"
# a damaged record names its line and what is wrong with it
sed 's/^pid 27784$/pid 27784x/' "$v1" >"$tmp/bad.data"
expect 1 "vmtrace: $tmp/bad.data: not a vmtrace record, or truncated or damaged: line 5: 'pid' item malformed" "$tmp/bad.data"
# a file of zeros is refused on its first line, not read whole (the
# reader's own test feeds it an endless stream)
head -c 1048576 /dev/zero >"$tmp/zero.data"
expect 1 "vmtrace: $tmp/zero.data: not a vmtrace record, or truncated or damaged: line 1:" "$tmp/zero.data"
(cd "$tmp" && expect 1 "vmtrace: vmtrace.data: No such file or directory (make one with vmtrace record)")
# folded with stacks: one line per stack and class, sites added up
cat >"$tmp/sites.data" <<'REC'
vmtrace-record 4
runtime =ruby
probes =object__create
target =ruby%20x.rb
pid 7
duration_s 0x1p+0
start_unix_ns 1
sample_period 0
has_allocations 1
last_serial 0
gc_collections 3 0 0 0
stack 0 2 =main =x.rb 1 =work =x.rb 5
alloc_stack 1 =String =Object#work =x.rb:6 3 120 3
alloc_stack 1 =String =Object#work =x.rb:7 4 160 4
alloc_stack 1 =Array =Object#work =x.rb:8 1 40 1
end 14
REC
[ "$("$vmtrace" report "$tmp/sites.data" --format folded | sort)" = \
  "$(printf 'main;work;Array 1\nmain;work;String 7')" ] ||
	fail "folded stacks: $("$vmtrace" report "$tmp/sites.data" --format folded)"

# vmtrace help [COMMAND]: the overview, a command's --help, or one line
"$vmtrace" help >"$tmp/out" && grep -q '^Commands:' "$tmp/out" || fail "help: no overview"
"$vmtrace" help report >"$tmp/out" && grep -q '^Usage: vmtrace report' "$tmp/out" ||
	fail "help report: not report's help"
st=0; "$vmtrace" help nosuch >"$tmp/out" 2>"$tmp/err" || st=$?
[ "$st" = 2 ] && [ "$(cat "$tmp/err")" = "vmtrace: unknown command 'nosuch' (see vmtrace --help)" ] ||
	fail "help nosuch: $st $(cat "$tmp/err")"
cp "$v1" "$tmp/vmtrace.data"
(cd "$tmp" && "$vmtrace" report --format folded >/dev/null) || fail "default FILE"
echo "cli_report: ok"
