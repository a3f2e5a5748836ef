#!/bin/bash
# build-sdist.sh GENERATED_DIR OUT_DIR: stage vmtrace's CPython extension
# with libvmtrace's sources and the probe header generated from
# probes/vmtrace.d (GENERATED_DIR/vmtrace_probes.h) as a source
# distribution, OUT_DIR/vmtrace-VERSION.tar.gz, which pip builds offline
# into any CPython 3.11-3.14 that has its headers.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../..
gen=$1 out=$2
version=$(sed -n 's/^project(vmtrace VERSION \([0-9.]*\).*/\1/p' "$src/../CMakeLists.txt")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
top=$stage/vmtrace-$version
mkdir -p "$top/src" "$top/include/vmtrace" "$top/include/sys" "$top/vmtrace_autoload/autoload" "$out"
cp "$here/setup.py" "$here/pyproject.toml" "$top/"
echo "$version" >"$top/VERSION"
cp "$src/python/src/"*.c "$src/python/src/"*.h "$top/src/"
cp "$src/core/src/"*.c "$src/core/src/"*.h "$top/src/"
cp "$src/core/include/vmtrace/"*.h "$top/include/vmtrace/"
cp "$gen/vmtrace_probes.h" "$top/src/"
# the probe header's sys/sdt.h (systemtap-sdt-dev, public domain), for a
# machine or container without that package
for h in sdt.h sdt-config.h; do cp "/usr/include/x86_64-linux-gnu/sys/$h" "$top/include/sys/"; done
cp "$src/python/autoload/sitecustomize.py" "$top/vmtrace_autoload/autoload/"
: >"$top/vmtrace_autoload/__init__.py"
cat >"$top/PKG-INFO" <<INFO
Metadata-Version: 2.1
Name: vmtrace
Version: $version
Summary: vmtrace's CPython provider: allocations by function and line, dormant until a tracer arms it
INFO
tar -C "$stage" --owner=0 --group=0 --sort=name -czf "$out/vmtrace-$version.tar.gz" "vmtrace-$version"
echo "$out/vmtrace-$version.tar.gz"
