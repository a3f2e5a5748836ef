#!/bin/bash
# build-gem.sh GENERATED_DIR OUT_DIR: stage vmtrace's Ruby extension with
# libvmtrace's sources and the probe header generated from probes/vmtrace.d
# (GENERATED_DIR/vmtrace_probes.h), and build the gem offline into OUT_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../..
gen=$1 out=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
ext=$stage/ext/vmtrace
mkdir -p "$ext/include/vmtrace" "$ext/include/sys" "$stage/lib" "$out"
cp "$here/vmtrace.gemspec" "$stage/"
cp "$here/extconf.rb" "$ext/"
cp "$src/ruby/src/"*.c "$src/ruby/src/"*.h "$ext/"
cp "$src/core/src/"*.c "$src/core/src/"*.h "$ext/"
cp "$src/core/include/vmtrace/"*.h "$ext/include/vmtrace/"
cp "$gen/vmtrace_probes.h" "$ext/"
# the probe header's sys/sdt.h (systemtap-sdt-dev, public domain), for a
# machine or container without that package
for h in sdt.h sdt-config.h; do cp "/usr/include/x86_64-linux-gnu/sys/$h" "$ext/include/sys/"; done
cp -r "$src/ruby/lib/." "$stage/lib/"
sed -n 's/^project(vmtrace VERSION \([0-9.]*\).*/\1/p' "$src/../CMakeLists.txt" >"$stage/VERSION"
(cd "$stage" && gem build --silent vmtrace.gemspec -o "$out/vmtrace.gem" >/dev/null)
echo "$out/vmtrace.gem"
