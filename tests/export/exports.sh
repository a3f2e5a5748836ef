#!/usr/bin/env bash
# exports.sh CASE BIN_DIR: the ecosystem formats, checked by the ecosystem's
# own readers (go tool pprof, a Prometheus text parser) and against
# demovm's truth. Cases that trace need root (exit 77 = skipped otherwise).
#   pprof_fixture  a record kept in the tree, as pprof, against vmtrace's own report
#   pprof_live     a real run: pprof against the report and demovm's truth
#   every_push     record --every: the intervals on disk and those a local
#                  ingest receiver took (after refusing the first tries) each
#                  add up to demovm's truth, none missing
#   push_unreachable  a server that is not there: bounded tries, losses counted
#   perfetto_fixture  a version 1 record (pauses without a start) as perfetto:
#                  valid trace-event JSON, the untimed pauses counted and said
#   perfetto_live  a real run as perfetto, its shape and its agreement with
#                  the record checked by perfetto_check.py
#   perfetto_every record --every as perfetto: no negative time in any
#                  interval, and the intervals' events add up to the record's
#   serve          /metrics scraped with curl on 127.0.0.1, parsed by
#                  python3-prometheus-client, against demovm's truth
set -uo pipefail

CASE=$1
BIN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
FIXTURES=$HERE/../report/fixtures
PY=/usr/bin/python3
VMTRACE=$BIN/vmtrace

# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
vt_harness exports

# wait_line FILE REGEX [COUNT]: until FILE has COUNT (default 1) matching
# lines; 60 s at most (a hang, not a measurement).
wait_line() {
	for _ in $(seq 600); do
		[ "$(grep -cE "$2" "$1" 2>/dev/null)" -ge "${3:-1}" ] && return 0
		sleep 0.1
	done
	fail "no ${3:-1} lines matching '$2' in $1"
}

start_demovm() { # ARGS...: demovm --wait in the background, pid in DV
	"$BIN/demovm" --wait --quiet "$@" >dv.out 2>dv.err &
	DV=$!
	PIDS+=("$DV")
	wait_line dv.out '^ready$'
}

start_receiver() { # ARGS...: the ingest receiver, its port in PORT
	mkdir -p recv
	"$PY" "$HERE/ingest_receiver.py" recv --limit 110 "$@" 2>recv.err &
	PIDS+=("$!")
	for _ in $(seq 100); do [ -s recv/port ] && break; sleep 0.1; done
	PORT=$(cat recv/port 2>/dev/null) || fail "the receiver did not start"
}

case "$CASE" in
pprof_fixture)
	"$VMTRACE" report "$FIXTURES/v1.data" --format pprof >v1.pb.gz 2>pprof.err ||
		fail "report --format pprof exited with $?"
	"$VMTRACE" report "$FIXTURES/v1.data" --format json >v1.json 2>json.err ||
		fail "report --format json exited with $?"
	"$PY" "$HERE/pprof_top.py" v1.pb.gz v1.json || fail "pprof and the report differ"
	# read with no warning: the program is its mapping, the period type Go's
	HOME=$WORK go tool pprof -raw v1.pb.gz >raw.out 2>raw.err || fail "pprof -raw failed"
	[ ! -s raw.err ] || fail "go tool pprof warns: $(cat raw.err)"
	grep -q '^PeriodType: space bytes$' raw.out || fail "period type: $(head -3 raw.out)"
	grep -qE '^1: .* \./demovm +\[FN\]\[FL\]\[LN\]$' raw.out || fail "mapping: $(grep -A2 Mappings raw.out)"
	;;

pprof_live)
	vt_need_root
	"$VMTRACE" record -o rec.data --format pprof --report-file live.pb.gz -- "$BIN/demovm" \
		--ops 2000 --threads 2 --truth truth.json --quiet 2>vt.err || fail "vmtrace record exited with $?"
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

perfetto_fixture)
	"$VMTRACE" report "$FIXTURES/v1.data" --format perfetto >v1.json 2>v1.err ||
		fail "report --format perfetto exited with $?"
	"$PY" "$HERE/perfetto_check.py" v1.json "$FIXTURES/v1.data" || fail "the trace is not the record"
	grep -qx "vmtrace: perfetto: 1 GC pauses have no start time or thread (an older record), left off the timeline" v1.err ||
		fail "no note of the pause left off: $(cat v1.err)"
	;;

perfetto_live)
	vt_need_root
	"$VMTRACE" record -o rec.data --format perfetto --report-file live.json -- "$BIN/demovm" \
		--ops 2000 --threads 2 --truth truth.json --quiet 2>vt.err || fail "vmtrace record exited with $?"
	"$PY" "$HERE/perfetto_check.py" live.json rec.data --all-timed || fail "the trace is not the record"
	# report gives the same trace; the run had every kind of event in it
	"$VMTRACE" report rec.data --format perfetto >report.json || fail "report exited with $?"
	cmp -s live.json report.json || fail "record and report gave different traces"
	for ph in X b e i; do
		jq -e --arg ph "$ph" '[.traceEvents[] | select(.ph == $ph)] | length > 0' live.json >/dev/null ||
			fail "no '$ph' event in the trace"
	done
	# the signals are demovm's own: as many as it says it handled
	want=$(jq '[.signals[] | .received] | add' truth.json)
	got=$(jq '[.traceEvents[] | select(.ph == "b" and .cat == "signal")] | length' live.json)
	[ "$got" = "$want" ] || fail "$got signal slices, demovm handled $want"
	;;

perfetto_every)
	vt_need_root
	mkdir out
	"$VMTRACE" record --every 0.1s --out-dir out --format perfetto -o rec.data -- "$BIN/demovm" \
		--ops 4000 --threads 2 --quiet >/dev/null 2>vt.err || fail "vmtrace record exited with $?"
	n=$(grep -cE '^vmtrace: interval [0-9]+:' vt.err)
	[ "$(ls out/*.perfetto.json | wc -l)" = "$n" ] || fail "$n intervals, $(ls out | wc -l) files"
	"$PY" - rec.data out/*.perfetto.json <<'PYEOF' || fail "the intervals' timelines are not the record's"
import json, sys
from collections import Counter
want = Counter()
for line in open(sys.argv[1], encoding="latin-1"):
    w = line.split()
    if w[0] == "gc_pause":
        want["X"] += 1
    elif w[0] == "event":
        want["b" if w[1] == "0" else "i"] += 1
got = Counter()
for f in sys.argv[2:]:
    d = json.load(open(f))
    for e in d["traceEvents"]:
        assert e["ts"] >= 0, (f, e)
        got[e["ph"]] += e["ph"] in "Xbi"
    assert d["otherData"]["ts_origin_ns"] <= 0, f
got = {k: v for k, v in got.items() if v}
assert want["X"] > 0 and got == dict(want), (got, want)
PYEOF
	# an --out-dir that does not exist yet is made, with the folders above it
	"$VMTRACE" record --every 0.1s --out-dir new/a/b --format perfetto -o rec2.data -- \
		"$BIN/demovm" --ops 500 --quiet >/dev/null 2>vt2.err || fail "record to a new --out-dir: $(cat vt2.err)"
	ls new/a/b/*.perfetto.json >/dev/null 2>&1 || fail "nothing written to the new --out-dir"
	;;

every_push)
	vt_need_root
	start_receiver --fail-first 2
	start_demovm --duration 0 --threads 2 --truth truth.json
	mkdir out
	"$VMTRACE" record -p "$DV" --every 0.3s --out-dir out --push "http://127.0.0.1:$PORT" \
		-o rec.data >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: recording pid'
	kill -USR1 "$DV"
	# at least two intervals with work in them, then stop demovm
	wait_line vt.err '^vmtrace: interval [0-9]+: .* [1-9][0-9]* allocations' 2
	kill -INT "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$VT" || fail "vmtrace record exited with $?"
	n=$(grep -cE '^vmtrace: interval [0-9]+:' vt.err)
	[ "$(ls out/*.pb.gz | wc -l)" = "$n" ] || fail "$n intervals announced, $(ls out | wc -l) files"
	[ "$(ls recv/*.pb.gz | wc -l)" = "$n" ] || fail "$n intervals announced, $(ls recv/*.pb.gz | wc -l) received"
	grep -q "pushed $n of $n intervals (2 retries); 0 failed, 0 dropped" vt.err ||
		fail "push summary: $(grep pushed vt.err)"
	"$PY" - recv "$n" "$DV" <<'PYEOF' || fail "the pushed intervals are not contiguous"
import json, sys
d, n, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
q = [json.load(open("%s/%d.json" % (d, i))) for i in range(1, n + 1)]
assert all(x["name"] == "vmtrace{runtime=vmtrace,pid=%s}" % pid for x in q), q[0]
# whole seconds: each interval starts no later than the previous one ended
assert all(int(a["until"]) >= int(b["from"]) >= int(a["from"]) for a, b in zip(q, q[1:])), q
PYEOF
	# no gap, no double count: the intervals add up to the truth, both ways
	"$PY" "$HERE/pprof_top.py" out/*.pb.gz truth.json || fail "the written intervals differ from the truth"
	"$PY" "$HERE/pprof_top.py" recv/*.pb.gz truth.json || fail "the pushed intervals differ from the truth"
	# and the whole-run record says the same
	"$VMTRACE" report rec.data --format json >rec.json || fail "report exited with $?"
	"$PY" "$HERE/pprof_top.py" out/*.pb.gz rec.json || fail "the intervals differ from the record"
	;;

push_unreachable)
	vt_need_root
	start_receiver
	kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null  # its port is now refused
	"$VMTRACE" record --every 0.2s --push "http://127.0.0.1:$PORT" --push-tries 2 -o rec.data \
		-- "$BIN/demovm" --ops 2000 --quiet >vt.out 2>vt.err
	status=$?
	[ "$status" = 1 ] || fail "exit $status, want 1 (intervals not sent)"
	n=$(grep -cE '^vmtrace: interval [0-9]+:' vt.err)
	grep -q "pushed 0 of $n intervals ($n retries); $n failed" vt.err ||
		fail "push summary: $(grep pushed vt.err)"
	"$VMTRACE" report rec.data --format json >rec.json || fail "report exited with $?"
	lost=$(jq '[.lost[] | select(.what | startswith("push failed")) | .count] | add' rec.json)
	[ "$lost" = "$n" ] || fail "push losses in the record: $lost, want $n"
	# bad uses are refused before anything is traced
	"$VMTRACE" record --every 1s -- /bin/true >/dev/null 2>u1.err && fail "--every alone was taken"
	grep -q "needs --out-dir DIR or --push URL" u1.err || fail "$(cat u1.err)"
	"$VMTRACE" record --every 1s --push ftp://x -- /bin/true >/dev/null 2>u2.err && fail "ftp taken"
	grep -q "is not an http:// or https:// URL" u2.err || fail "$(cat u2.err)"
	"$VMTRACE" record --every 0s --out-dir . -- /bin/true >/dev/null 2>u3.err && fail "0s taken"
	grep -q "is not an interval" u3.err || fail "$(cat u3.err)"
	;;

serve)
	vt_need_root
	start_demovm --ops 3000 --threads 2 --truth truth.json
	"$VMTRACE" serve -p "$DV" --listen 127.0.0.1:0 --top 5 --linger 60 >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: serving pid'
	PORT=$(sed -nE 's|.*http://127\.0\.0\.1:([0-9]+)/metrics$|\1|p' vt.err)
	[ -n "$PORT" ] || fail "no port in: $(cat vt.err)"
	URL=http://127.0.0.1:$PORT
	OM='Accept: application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5'
	curl -sf --max-time 10 -H "$OM" "$URL/metrics" >early.om || fail "the first scrape failed"
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait_line vt.err '^vmtrace: serving its final counts'
	curl -sf --max-time 10 -H "$OM" "$URL/metrics" -D om.headers >final.om || fail "scrape failed"
	curl -sf --max-time 10 "$URL/metrics" -D prom.headers >final.prom || fail "scrape failed"
	grep -qi '^content-type: application/openmetrics-text; version=1.0.0' om.headers ||
		fail "OpenMetrics content type: $(cat om.headers)"
	grep -qi '^content-type: text/plain; version=0.0.4' prom.headers ||
		fail "Prometheus content type: $(cat prom.headers)"
	code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$URL/nothing")
	[ "$code" = 404 ] || fail "GET /nothing: $code, want 404"
	code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$URL/metrics")
	[ "$code" = 405 ] || fail "POST /metrics: $code, want 405"
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace serve exited with $?"
	"$PY" "$HERE/metrics_check.py" 5 truth.json early.om final.om final.prom ||
		fail "the metrics differ from the truth"
	# bad uses: one line, non-zero, nothing traced
	"$VMTRACE" serve -p "$$" --listen nonsense >/dev/null 2>l1.err
	[ $? = 2 ] || fail "--listen nonsense: want exit 2"
	grep -q "is not ADDR:PORT" l1.err || fail "$(cat l1.err)"
	"$PY" -c 'import socket,time; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' >busy.port &
	PIDS+=("$!")
	for _ in $(seq 50); do [ -s busy.port ] && break; sleep 0.1; done
	"$VMTRACE" serve -p "$$" --listen "127.0.0.1:$(cat busy.port)" >/dev/null 2>l2.err
	[ $? = 1 ] || fail "a taken port: want exit 1"
	grep -q "cannot listen on" l2.err || fail "$(cat l2.err)"
	[ "$(wc -l <l2.err)" = 1 ] || fail "more than one line: $(cat l2.err)"
	;;

prometheus)
	# a real Prometheus scraping serve (prometheus_query.py), beside a
	# vmtrace record of the same run for the pauses' quantiles
	vt_need_root
	command -v prometheus >/dev/null || fail "no prometheus (scripts/install-deps.sh installs it)"
	start_demovm --ops 20000 --threads 2
	"$VMTRACE" serve -p "$DV" --listen 127.0.0.1:0 --linger 60 >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: serving pid'
	PORT=$(sed -nE 's|.*http://127\.0\.0\.1:([0-9]+)/metrics$|\1|p' vt.err)
	"$VMTRACE" record -p "$DV" -o rec.data --format json >rec.json 2>rec.err &
	REC=$!
	PIDS+=("$REC")
	wait_line rec.err '^vmtrace: recording pid'
	PPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	printf 'global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: vmtrace\n    static_configs: [{targets: ["127.0.0.1:%s"]}]\n' \
		"$PORT" >prom.yml
	prometheus --config.file=prom.yml --storage.tsdb.path=tsdb --web.listen-address="127.0.0.1:$PPORT" \
		>prom.log 2>&1 &
	PIDS+=("$!")
	sleep 3
	kill -USR1 "$DV"
	wait "$DV" || fail "demovm exited with $?"
	wait "$REC" || fail "vmtrace record exited with $?: $(cat rec.err)"
	wait_line vt.err '^vmtrace: serving its final counts'
	sleep 4 # scrapes of the final counts
	"$PY" "$HERE/prometheus_query.py" "$PPORT" rec.json || fail "Prometheus saw something else"
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace serve exited with $?"
	;;

prometheus_latin1)
	# a class named in Latin-1 (a Ruby source in ISO-8859-1, counted by
	# vmtrace's Ruby extension): its label goes out as valid UTF-8 (the bad
	# byte replaced), so a real Prometheus keeps the target up
	vt_need_root
	command -v prometheus >/dev/null || fail "no prometheus (scripts/install-deps.sh installs it)"
	EXT=$BIN/../lib/ruby
	[ -f "$EXT/vmtrace_ext.so" ] || { echo "SKIP: no Ruby extension built"; exit 77; }
	printf '# encoding: iso-8859-1\nclass Caf\xe9; end\nt = Time.now\nwhile Time.now - t < 60\n  Caf\xe9.new\n  sleep 0.0005\nend\n' >latin1.rb
	RUBYOPT="-I$EXT -rvmtrace" ruby latin1.rb &
	RB=$!
	PIDS+=("$RB")
	sleep 0.5
	# exact: sampled (serve's default), a Café among the Times this loop makes
	# can take longer than the wait below to be drawn
	"$VMTRACE" serve -p "$RB" --sample 0 --listen 127.0.0.1:0 >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: serving pid'
	PORT=$(sed -nE 's|.*http://127\.0\.0\.1:([0-9]+)/metrics$|\1|p' vt.err)
	PPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	printf 'global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: vmtrace\n    static_configs: [{targets: ["127.0.0.1:%s"]}]\n' \
		"$PORT" >prom.yml
	prometheus --config.file=prom.yml --storage.tsdb.path=tsdb --web.listen-address="127.0.0.1:$PPORT" \
		>prom.log 2>&1 &
	PIDS+=("$!")
	"$PY" - "$PPORT" <<'PY' || fail "Prometheus did not keep the Latin-1 target"
import json, sys, time, urllib.parse, urllib.request
port = sys.argv[1]
def get(path):
    return json.load(urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path), timeout=5))["data"]
def q(expr):
    return get("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["result"]
up = rows = health = err = None
for _ in range(60):
    try:
        up = q('up{job="vmtrace"}')
        # PromQL's lexer refuses U+FFFD in a string (it is Go's RuneError),
        # so the class is matched by a pattern and its value checked below
        rows = q('vmtrace_allocations_total{class=~"Caf.+"}')
        health = [(t["health"], t.get("lastError", "")) for t in get("/api/v1/targets")["activeTargets"]]
    except OSError as e:
        err = e
    if up and rows and health:
        break
    time.sleep(0.5)
print("up:", up, "rows:", rows, "targets:", health, "last error:", err)
ok = (up and up[0]["value"][1] == "1" and rows and float(rows[0]["value"][1]) > 0
      and rows[0]["metric"]["class"] == "Caf\ufffd" and health == [("up", "")])
sys.exit(0 if ok else 1)
PY
	echo "ok: the Latin-1 class is Caf U+FFFD in Prometheus, the target up with no error"
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace serve exited with $?"
	;;

serve_flood)
	# 64 idle and 20 trickling connections cannot keep a scraper out, and
	# garbage gets a 400 (serve_flood.py); binary, TLS, a line that is no
	# request get a 400 and a close at once (serve_garbage.py)
	vt_need_root
	start_demovm --ops 3000 --threads 1
	"$VMTRACE" serve -p "$DV" --listen 127.0.0.1:0 >vt.out 2>vt.err &
	VT=$!
	PIDS+=("$VT")
	wait_line vt.err '^vmtrace: serving pid'
	PORT=$(sed -nE 's|.*http://127\.0\.0\.1:([0-9]+)/metrics$|\1|p' vt.err)
	[ -n "$PORT" ] || fail "no port in: $(cat vt.err)"
	"$PY" "$HERE/serve_flood.py" "$PORT" 64 20 5 || fail "a scraper was kept out"
	# what is no HTTP request gets a 400 and a close at once (serve_garbage.py)
	"$PY" "$HERE/serve_garbage.py" "$PORT" "$VT" || fail "a malformed request was not answered 400"
	# gzip to a client that takes it (Prometheus does), plain to one that does not
	curl -sf --max-time 5 --compressed -D gz.headers "http://127.0.0.1:$PORT/metrics" >gz.txt ||
		fail "gzip scrape failed"
	grep -qi '^content-encoding: gzip' gz.headers || fail "no gzip: $(cat gz.headers)"
	grep -q "^vmtrace_target_info{" gz.txt || fail "the gzipped body: $(head -3 gz.txt)"
	curl -sf --max-time 5 -D plain.headers "http://127.0.0.1:$PORT/metrics" >plain.txt ||
		fail "plain scrape failed"
	! grep -qi '^content-encoding' plain.headers || fail "encoded unasked: $(cat plain.headers)"
	grep -q "^vmtrace_target_info{" plain.txt || fail "the plain body: $(head -3 plain.txt)"
	kill -INT "$VT"
	wait "$VT" || fail "vmtrace serve exited with $?"
	;;

*)
	echo "exports.sh: unknown case '$CASE'" >&2
	exit 2
	;;
esac
