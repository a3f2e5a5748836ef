#!/usr/bin/env bash
# live.sh CASE BIN HARNESS: vmtrace record --live against demovm --leak.
#   leak_spawn   demovm (probes in the executable) started by vmtrace: the
#                live rows of the report, and of the record read back, equal
#                demovm's truth exactly (class, method, site, count, bytes),
#                the leaked Sessions among them; nothing lost
#   leak_shared  the same with demovm-shared (probes in libvmtrace.so)
#   leak_uncached the same with demovm's plain calls (--uncached): the
#                address path rather than each object's word
#   leak_attach  the same with vmtrace attached by pid to a demovm waiting
#                to start: the provider takes --temp and the recording from
#                the consumer's write into the process
#   diff         vmtrace diff of a run without the leak and one with it shows
#                exactly the leaked rows as growth, in every format
#   top          top --live shows the live heap of a running demovm that leaks
#                Sessions all along, with its Session row
#   timeline     the record's timeline: per class, allocations and frees over
#                its seconds add up to the record's totals, the leaking
#                class's live bytes grow every second; json and the HTML page;
#                with --timeline-step 0.25s, steps of a quarter second
#   temps        with --temp longer than the run every free is a temporary:
#                temporaries per class equal demovm's frees exactly, and per
#                class and method, temporaries and live objects add up to the
#                allocations; by each object's word and by the address path
#   bad_flags    --live-max, --temp and --timeline-step refuse bad values with
#                one line
set -uo pipefail
CASE=$1 BIN=$2
. "$3"
vt_harness "live-$CASE"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
vmtrace=$BIN/vmtrace

# The truth's live rows against a report's, as sorted JSON lines.
compare() { # report.json label
	jq -S -c '[.live[] | {class, method, site, count, bytes}] | sort_by(.class, .method, .site)' \
		truth.json >want.json
	jq -S -c '[.live.rows[] | select(.count > 0) | {class, method, site, count, bytes}]
		| sort_by(.class, .method, .site)' "$1" >got.json || fail "$2: no live rows"
	cmp -s want.json got.json || fail "$2: live rows differ from the truth:
want $(cat want.json)
got  $(cat got.json)"
	jq -e '[.live.rows[] | select(.class == "Session" and .method == "Registry#remember")
		| .count] == [80]' "$1" >/dev/null || fail "$2: the 80 leaked Sessions are not one row"
	jq -e '.lost_total == 0' "$1" >/dev/null || fail "$2: something was lost"
	jq -e '.live.peak_bytes >= ([.live.rows[].bytes] | add)' "$1" >/dev/null ||
		fail "$2: the peak is below what is alive at the end"
}

case $CASE in
leak_spawn | leak_shared | leak_uncached | leak_attach)
	vm=demovm extra=()
	[ "$CASE" = leak_shared ] && vm=demovm-shared
	[ "$CASE" = leak_uncached ] && extra=(--uncached)
	if [ "$CASE" = leak_attach ]; then
		"$BIN/$vm" --ops 1500 --threads 2 --leak 40 --truth truth.json --quiet --wait >vm.out &
		PIDS+=($!)
		for _ in $(seq 100); do grep -q ready vm.out && break; sleep 0.1; done
		"$vmtrace" record --live -p "${PIDS[0]}" -o run.data --format json >report.json 2>record.err &
		rec=$!
		for _ in $(seq 100); do grep -q '^vmtrace: recording pid' record.err && break; sleep 0.1; done
		kill -USR1 "${PIDS[0]}"
		wait "$rec" || fail "record --live -p failed: $(cat record.err)"
	else
		"$vmtrace" record --live -o run.data --format json --report-file report.json -- "$BIN/$vm" \
			--ops 1500 --threads 2 --leak 40 --truth truth.json --quiet "${extra[@]}" 2>record.err ||
			fail "record --live failed"
	fi
	compare report.json "record"
	"$vmtrace" report --format json run.data >again.json 2>report.err || fail "report failed"
	compare again.json "report of the record"
	head -1 run.data | grep -qx 'vmtrace-record 5' || fail "the record is not version 5"
	"$vmtrace" report run.data >text.out 2>&1 || fail "text report failed"
	grep -q '^Live heap at the end' text.out || fail "no live heap section in the text report"
	# pprof: inuse_objects and inuse_space per class and method are the truth's live heap
	"$vmtrace" report --format pprof run.data >run.pb.gz || fail "pprof report failed"
	python3 "$(dirname "$3")/../export/pprof_top.py" --inuse run.pb.gz truth.json >pprof.out 2>&1 ||
		fail "pprof inuse differs from the truth: $(cat pprof.out)"
	python3 "$(dirname "$3")/../export/pprof_top.py" run.pb.gz truth.json >pprof.out 2>&1 ||
		fail "pprof alloc differs from the truth: $(cat pprof.out)"
	;;
diff)
	run() { # LEAK FILE
		"$vmtrace" record --live -o "$2" -- "$BIN/demovm" --ops 1500 --threads 2 --leak "$1" \
			--truth "$2.truth" --quiet >"$2.out" 2>"$2.err" || fail "record --leak $1 failed"
	}
	run 0 base.data
	run 40 new.data
	"$vmtrace" diff base.data new.data --format json >diff.json 2>diff.err || fail "diff failed"
	site=$(jq -r '.live[] | select(.class == "Session") | .site' new.data.truth)
	bytes=$(jq -r '.live[] | select(.class == "Session") | .bytes' new.data.truth)
	jq -e --arg site "$site" --argjson b "$bytes" '.live == true and .rows == [{"class": "Session",
		"method": "Registry#remember", "site": $site,
		"count": {"base": 0, "new": 80, "delta": 80}, "bytes": {"base": 0, "new": $b, "delta": $b},
		"live_count": {"base": 0, "new": 80, "delta": 80},
		"live_bytes": {"base": 0, "new": $b, "delta": $b}}]' diff.json >/dev/null ||
		fail "the diff is not exactly the leak: $(jq -c .rows diff.json)"
	"$vmtrace" diff base.data new.data >diff.out || fail "text diff failed"
	grep -q "^Session  *Registry#remember  *[^ ]*  *+80  *+$bytes  *+80  *+$bytes\$" diff.out &&
		grep -q '^1 rows changed' diff.out || fail "text diff: $(cat diff.out)"
	"$vmtrace" diff base.data new.data --format csv >diff.csv || fail "csv diff failed"
	[ "$(wc -l <diff.csv)" = 2 ] && grep -q "^Session,Registry#remember,$site,0,80,80,0,$bytes,$bytes,0,80,80,0,$bytes,$bytes$" diff.csv ||
		fail "csv diff: $(cat diff.csv)"
	"$vmtrace" diff base.data new.data --format folded >diff.folded || fail "folded diff failed"
	awk '$2 != $3' diff.folded >changed.folded
	[ "$(cat changed.folded)" = "Registry#remember;$site;Session 0 80" ] ||
		fail "folded diff: $(cat changed.folded)"
	"$vmtrace" diff base.data >/dev/null 2>err && fail "diff with one file was accepted"
	"$vmtrace" diff base.data missing.data >/dev/null 2>err && fail "a missing file was accepted"
	grep -q 'missing.data' err || fail "no error naming missing.data"
	;;
top)
	"$BIN/demovm" --duration 20 --threads 2 --leak 100000000 --quiet &
	PIDS+=($!)
	"$vmtrace" top -p "${PIDS[0]}" -n 2 -i 0.5 --live --top 0 >top.out 2>top.err || fail "top --live failed"
	grep -q '^live: [1-9][0-9]* objects, [1-9][0-9]* bytes; peak [1-9][0-9]* bytes$' top.out ||
		fail "top --live: no live line"
	grep -Eq '^ +[1-9][0-9]* +[1-9][0-9]*  Session +Registry#remember +workload.c:[0-9]+$' top.out ||
		fail "top --live: no live Session row"
	;;
timeline)
	"$vmtrace" record -o run.data --format json --report-file report.json -- "$BIN/demovm" \
		--duration 2.5 --threads 2 --leak 100000000 --quiet 2>record.err || fail "record failed"
	jq -e '([.timeline[] | {k: .class, v: .allocs}] | group_by(.k) | map({(.[0].k): (map(.v) | add)}) | add)
		== ([.allocations[] | {k: .class, v: .count}] | group_by(.k) | map({(.[0].k): (map(.v) | add)}) | add)' \
		report.json >/dev/null || fail "timeline allocations do not add up to the record's"
	jq -e '([.timeline[] | select(.frees > 0) | {k: .class, v: .free_bytes}] | group_by(.k)
		| map({(.[0].k): (map(.v) | add)}) | add) == ([.frees[] | {(.class): .bytes}] | add)' \
		report.json >/dev/null || fail "timeline frees do not add up to the record's"
	jq -e '[.timeline[] | select(.class == "Session") | .live_bytes] as $l
		| ($l | length) >= 2 and ([range(1; $l | length) | $l[.] > $l[. - 1]] | all)' \
		report.json >/dev/null || fail "Session's live bytes do not grow each second: $(jq -c '[.timeline[] | select(.class == "Session")]' report.json)"
	"$vmtrace" report --format json run.data >again.json || fail "report failed"
	jq -e --slurpfile a report.json '.timeline == $a[0].timeline' again.json >/dev/null ||
		fail "the record's timeline differs from the recording's"
	"$vmtrace" report --format timeline run.data >t.html || fail "timeline report failed"
	grep -q '^<!DOCTYPE html>' t.html && grep -q '<h2>Session</h2>' t.html && grep -q '<polyline' t.html &&
		! grep -q 'http' t.html || fail "timeline page: no chart of Session, or a link out"
	# both axes ticked: seconds from 0, bytes from 0
	grep -q 'text-anchor="middle">0 s</text>' t.html && grep -q 'text-anchor="end">0</text>' t.html ||
		fail "timeline page: axes without ticks"
	jq -e '.timeline_step_s == 1 and ([.timeline[] | .start_s == .step and .second == .step] | all)' \
		report.json >/dev/null || fail "default step: not steps of a second"
	# quarter-second steps: a step begun in each quarter of the recording's
	# duration, the last partial
	"$vmtrace" record -o q.data --timeline-step 0.25s --format json --report-file q.json -- \
		"$BIN/demovm" --duration 1.5 --threads 2 --leak 100000000 --quiet 2>record.err ||
		fail "record --timeline-step failed"
	grep -qx 'series_step 250000000' q.data || fail "the record does not keep the step"
	jq -e '.timeline_step_s == 0.25 and ([.timeline[] | .start_s == .step * 0.25 and .second == (.start_s | floor)] | all)
		and (.duration_s / 0.25) as $d | ([.timeline[] | select(.class == "Session") | .step]
			| . == [range(0; length)] and length >= ($d | floor) and length <= ($d | ceil) + 1)' \
		q.json >/dev/null || fail "--timeline-step 0.25s: $(jq -c '[.timeline_step_s, [.timeline[] | select(.class == "Session") | [.step, .start_s]]]' q.json)"
	jq -e '([.timeline[] | {k: .class, v: .allocs}] | group_by(.k) | map({(.[0].k): (map(.v) | add)}) | add)
		== ([.allocations[] | {k: .class, v: .count}] | group_by(.k) | map({(.[0].k): (map(.v) | add)}) | add)' \
		q.json >/dev/null || fail "--timeline-step 0.25s: allocations do not add up to the record's"
	"$vmtrace" report --format json q.data | jq -e --slurpfile a q.json '.timeline == $a[0].timeline
		and .timeline_step_s == 0.25' >/dev/null || fail "the record's quarter-second timeline differs"
	"$vmtrace" report --format timeline q.data >q.html || fail "timeline report of q.data failed"
	grep -q 'each 0.25 s allocated' q.html && grep -q '<td>0.75</td>' q.html ||
		fail "timeline page: no quarter-second steps"
	;;
temps)
	# each object's word, then the address path (--uncached), where each
	# thread decides temporaries itself and sends them summed by key
	for how in "" --uncached; do
		# shellcheck disable=SC2086
		"$vmtrace" record --live --temp 3600 -o run.data --force --format json --report-file report.json \
			-- "$BIN/demovm" --ops 1500 --threads 2 --leak 40 --truth truth.json --quiet $how 2>record.err ||
			fail "record --live $how failed"
		jq -S -c '[.frees[] | {class, count, bytes}] | sort_by(.class)' truth.json >want.json
		jq -S -c '[.live.rows[] | select(.temp_count > 0) | {class, count: .temp_count, bytes: .temp_bytes}]
			| group_by(.class) | map({class: .[0].class, count: (map(.count) | add), bytes: (map(.bytes) | add)})' \
			report.json >got.json || fail "no live rows"
		cmp -s want.json got.json || fail "$how temporaries differ from the truth's frees:
want $(cat want.json)
got  $(cat got.json)"
		jq -S -c '[.allocations[] | {class, method, count}] | sort_by(.class, .method)' report.json >want.json
		jq -S -c '[.live.rows[] | {class, method, n: (.count + .temp_count)}] | group_by([.class, .method])
			| map({class: .[0].class, method: .[0].method, count: (map(.n) | add)})' report.json >got.json
		cmp -s want.json got.json || fail "$how temporaries and live objects do not add up to the allocations:
want $(cat want.json)
got  $(cat got.json)"
		jq -e '.lost_total == 0' report.json >/dev/null || fail "$how: something was lost"
	done
	;;
bad_flags)
	for bad in "--live-max 0" "--live-max x" "--temp -1" "--temp abc" "--timeline-step 0.1s" \
		"--timeline-step 0" "--timeline-step 2d" "--every 10s --timeline-step 1s"; do
		# shellcheck disable=SC2086
		"$vmtrace" record --live $bad -- /bin/true >out 2>err && fail "$bad was accepted"
		[ "$(wc -l <err)" -ge 1 ] && grep -q -- "${bad%% *}" err || fail "$bad: no error naming it"
	done
	;;
*) fail "unknown case $CASE" ;;
esac
echo "ok: live $CASE"
