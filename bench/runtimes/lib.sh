# bench/runtimes/lib.sh: what run.sh and run_python.sh share. Source it after
# setting TMP (a scratch directory) and VMTRACE.

# one run: $1 tracer (none|vmtrace|vmtrace_all|bpftrace), $2 tracer option, then the
# workload's command. The workload prints "ready", waits for a line on stdin
# (the tracer attaches meanwhile), runs, prints "ns_per_iter N" and exits;
# the N is printed.
one_run() {
	local tracer=$1 topt=$2 fifo=$TMP/in out=$TMP/out tpid=""
	shift 2
	rm -f "$fifo" "$out" "$TMP/rec.data"
	mkfifo "$fifo"
	"$@" <"$fifo" >"$out" &
	local wpid=$!
	exec 3>"$fifo" # opening the write end lets the workload's open of the read end return
	until grep -q ready "$out" 2>/dev/null; do sleep 0.05; done
	case $tracer in
	vmtrace)
		"$VMTRACE" record -p $wpid -o "$TMP/rec.data" $topt >/dev/null 2>"$TMP/tr.err" &
		tpid=$!
		until grep -q "recording pid" "$TMP/tr.err" 2>/dev/null; do tracer_alive $tpid $wpid; done ;;
	vmtrace_all) # record --all: every process of a known runtime, keys carry the process
		"$VMTRACE" record --all -o "$TMP/rec.data" --force $topt >/dev/null 2>"$TMP/tr.err" &
		tpid=$!
		until grep -q "recording every process" "$TMP/tr.err" 2>/dev/null; do
			tracer_alive $tpid $wpid
		done ;;
	bpftrace)
		# --unsafe: run.sh probes an address no symbol names
		bpftrace --unsafe -p $wpid -e "$topt" >"$TMP/tr.out" 2>"$TMP/tr.err" &
		tpid=$!
		until grep -q attached "$TMP/tr.out" 2>/dev/null; do tracer_alive $tpid $wpid; done ;;
	esac
	echo go >&3
	exec 3>&-
	wait $wpid
	if [ -n "$tpid" ]; then
		# vmtrace -p stops when its target exits; --all and bpftrace need a signal
		[ "$tracer" != vmtrace ] && kill -INT $tpid 2>/dev/null
		wait $tpid || true
	fi
	awk '/ns_per_iter/ { print $2 }' "$out"
}

# while a tracer starts: if it died, say why and end the run (never wait forever)
tracer_alive() {
	if ! kill -0 "$1" 2>/dev/null; then
		echo "one_run: the tracer failed: $(head -c 600 "$TMP/tr.err")" >&2
		kill "$2" 2>/dev/null
		exit 1
	fi
	sleep 0.05
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
