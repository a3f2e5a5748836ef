#!/usr/bin/env bash
# install_test.sh BUILD_DIR VMTRACE_D: install the build into a scratch
# prefix and build hosts against it three ways (pkg-config shared,
# find_package shared and static). Each must run, and each module that holds
# the sites (libvmtrace.so, or the static host itself) must carry every probe
# of VMTRACE_D with a semaphore.
set -euo pipefail
build=$1 dfile=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >/dev/null
prefix=$work/prefix
libdir=$(find "$prefix" -name 'libvmtrace.so' -printf '%h\n' | head -n1)
[ -n "$libdir" ] || fail "no libvmtrace.so under the install prefix"
for f in include/vmtrace/vmtrace.h include/vmtrace/bus.h; do
	[ -f "$prefix/$f" ] || fail "$f is not installed"
done
[ -f "$libdir/libvmtrace.a" ] || fail "libvmtrace.a is not installed"
[ -f "$libdir/pkgconfig/vmtrace.pc" ] || fail "vmtrace.pc is not installed"
[ -f "$libdir/cmake/vmtrace/vmtraceConfig.cmake" ] || fail "the CMake package config is not installed"
# a man page per command, each rendering; completions that offer a command's options
for page in vmtrace vmtrace-record vmtrace-report vmtrace-top vmtrace-serve vmtrace-list vmtrace-diff; do
	f=$prefix/share/man/man1/$page.1
	[ -f "$f" ] || fail "$page.1 is not installed"
	out=$(MANWIDTH=80 man -l "$f" 2>&1) || fail "$page.1 does not render: $out"
	grep -q "^NAME" <<<"$out" && grep -q "^SYNOPSIS" <<<"$out" || fail "$page.1: $out"
done
[ -f "$prefix/share/zsh/vendor-completions/_vmtrace" ] || fail "no zsh completion"
got=$(bash -c 'source "$1"; COMP_WORDS=("$2" record --map); COMP_CWORD=2; _vmtrace; echo "${COMPREPLY[*]}"' \
	_ "$prefix/share/bash-completion/completions/vmtrace" "$prefix/bin/vmtrace")
[ "$got" = "--map-entries" ] || fail "bash completion of 'vmtrace record --map': '$got'"
for bt in "$here"/../../scripts/*.bt; do
	[ -x "$prefix/share/vmtrace/scripts/$(basename "$bt")" ] ||
		fail "$(basename "$bt") is not installed under share/vmtrace/scripts"
done
# vmtrace's Ruby extension, where this Ruby looks for site extensions
# (below the prefix), loads and stays dormant
if [ -f "$build/lib/ruby/vmtrace_ext.so" ]; then
	ext=$(find "$prefix" -name vmtrace_ext.so -printf '%h\n' | head -n1)
	[ -n "$ext" ] && [ -f "$ext/vmtrace.rb" ] || fail "the Ruby extension is not installed"
	out=$(ruby -I"$ext" -rvmtrace -e 'p [Vmtrace.armed?, Vmtrace.hooks]' 2>&1) ||
		fail "the installed Ruby extension does not load: $out"
	[ "$out" = "[false, []]" ] || fail "the installed Ruby extension is not dormant: $out"
fi

# every probe of the .d file, with a non-zero semaphore, in module $1
probes_of() {
	readelf -n "$1" | awk '
		/Name:/ { name = $2 }
		/Semaphore:/ { if ($NF ~ /^0x0*[1-9a-fA-F]/) print name }' | sort -u
}
expected=$(grep -oE 'probe +[a-z_]+' "$dfile" | awk '{ print $2 }' | sort -u)
check_probes() {
	local got
	got=$(probes_of "$1")
	[ "$got" = "$expected" ] || fail "$1: probes with semaphores differ from $(basename "$dfile"): $(diff <(echo "$expected") <(echo "$got") | tr '\n' ' ')"
}

# pkg-config, shared
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -Wall -Werror "$here/host.c" $(pkg-config --cflags --libs vmtrace) -Wl,-rpath,"$libdir" -o "$work/host_pc"
[ "$("$work/host_pc")" = "enabled=0" ] || fail "the pkg-config host did not run untraced"
# the headers are C++ too (a runtime written in C++ includes them)
c++ -std=c++17 -Wall -Werror -x c++ "$here/host.c" -x none $(pkg-config --cflags --libs vmtrace) \
	-Wl,-rpath,"$libdir" -o "$work/host_cxx" || fail "the headers do not compile as C++"
[ "$("$work/host_cxx")" = "enabled=0" ] || fail "the C++ host did not run untraced"
check_probes "$libdir/libvmtrace.so"

# find_package, shared and static
mkdir "$work/src"
cp "$here/host.c" "$work/src/host.c"
cp "$here/CMakeLists.host.txt" "$work/src/CMakeLists.txt"
cmake -S "$work/src" -B "$work/hostbuild" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/hostbuild" >/dev/null
[ "$("$work/hostbuild/host_shared")" = "enabled=0" ] || fail "the find_package shared host did not run"
[ "$("$work/hostbuild/host_static")" = "enabled=0" ] || fail "the find_package static host did not run"
check_probes "$work/hostbuild/host_static"
ldd "$work/hostbuild/host_static" | grep -q libvmtrace && fail "host_static still needs libvmtrace.so"
echo "install test: headers, libraries, vmtrace.pc and the CMake package work; probes present in libvmtrace.so and the static host"
