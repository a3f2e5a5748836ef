#!/usr/bin/env bash
# Installs exactly what vmtrace's build, tests and demo need on Debian 12,
# and mounts tracefs where it is missing. Idempotent: a second run installs
# nothing. Run as root.
set -euo pipefail

PACKAGES=(
	build-essential cmake pkg-config git      # the build
	clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev  # BPF programs and skeletons
	systemtap-sdt-dev                         # sys/sdt.h and dtrace(1) for the probe header
	libcmocka-dev libclang-rt-14-dev          # unit tests, sanitizers and libFuzzer
	bpftrace ruby python3.11 python3          # bpftrace tests, stock runtimes
	ruby3.1-dev ruby-stackprof                # the Ruby extension's headers; bench/runtimes' Ruby peer
	python3.11-dev                            # the CPython extension's headers (internal ones too)
	jq                                        # test scripts compare JSON
	libjansson-dev                            # the report fuzzer parses its JSON output
	nodejs                                    # runs the flame graph page's script in its test
	protobuf-c-compiler libprotobuf-c-dev     # --format pprof: profile.proto to C
	golang-github-google-pprof-dev            # profile.proto itself
	golang-go                                 # go tool pprof reads the pprof tests' output
	libmicrohttpd-dev libcurl4-openssl-dev    # serve's /metrics endpoint, record --push
	curl python3-prometheus-client            # scrape /metrics and parse it in the tests
	openjdk-17-jdk-headless php8.2-cli       # stock HotSpot (javac builds the test program) and PHP
	php8.2-dev                                # PHP 8.2's headers: its layout row checked against them
	heaptrack bc                              # bench/live and run_pydoc_ext.sh: a peer of record --live
	python3-scalene                           # bench/runtimes/run_pydoc_ext.sh: the Python peer that samples
	prometheus                                # a real server scrapes serve in the tests
	help2man man-db                           # man pages from --help, and rendering them
	libncurses-dev tmux                       # top's terminal, and a terminal to test it in
	debootstrap                               # the version matrix's roots (scripts/matrix/roots.sh)
)

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (apt-get and tracefs need it)" >&2
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# bpftrace and uprobe detach need tracefs.
if [ ! -e /sys/kernel/tracing/uprobe_events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
