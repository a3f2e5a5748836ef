#!/bin/sh
# Builds vmtrace's PHP extension (src/vmtrace_php.c) against the PHP whose
# php-config is given, and installs it into that PHP's extension directory
# as vmtrace.so. Needs that PHP's headers (phpN.M-dev) and a C compiler;
# sys/sdt.h from the system, else from SDT_INCLUDE (a directory holding
# sys/sdt.h, as the tests carry it into a container).
# Usage: build.sh [PHP_CONFIG] [DESTDIR]   (default: php-config, its extension dir)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
php_config=${1:-php-config}
dest=${2:-$("$php_config" --extension-dir)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2046
cc -O2 -g -fPIC -shared -D_GNU_SOURCE -Wall ${SDT_INCLUDE:+-I"$SDT_INCLUDE"} \
	$("$php_config" --includes) -o "$out/vmtrace.so" "$here/src/vmtrace_php.c"
mkdir -p "$dest"
install -m 0644 "$out/vmtrace.so" "$dest/vmtrace.so"
echo "$dest/vmtrace.so"
