#!/usr/bin/env bash
# Makes the version matrix's Debian roots, cached on the machine, each
# entered as a container by the tests (tests/runtimes/NAME/*versions_test.py):
#   trixie  Debian 13: Ruby 3.3 with its headers and source (the
#           extension's layout check), built with the root's own compiler;
#           ruby-stackprof, bench/runtimes/run_rdoc_root.sh's peer;
#           OpenJDK 21; PHP 8.4 with its headers (vmtrace's PHP extension
#           is built there); CPython 3.13 with its headers, setuptools and
#           pip (vmtrace's sdist is pip-installed there); heaptrack,
#           bench/runtimes/run_pydoc_root.sh's and run_loop_root.sh's peer
#   sid     Debian's unstable with experimental: Ruby 3.4 likewise;
#           OpenJDK 25; CPython 3.14 likewise; heaptrack
#   bookworm  Debian 12's Ruby 3.1 in a container (its layout checked by
#           its MJIT header, as on the host)
# A root is made once with debootstrap from Debian's archive and brought up
# to the packages listed here on each run (idempotent: a second run
# installs nothing). Usage (root): scripts/matrix/roots.sh [SUITE...]
# Roots live in $VMTRACE_ROOTS (default /var/cache/vmtrace/roots).
set -euo pipefail

ROOTS=${VMTRACE_ROOTS:-/var/cache/vmtrace/roots}
MIRROR=http://deb.debian.org/debian

# suite -> packages inside; source packages unpacked under /usr/src/<name>
declare -A PACKAGES=(
	[trixie]="ruby3.3 ruby3.3-dev build-essential dpkg-dev ruby-stackprof openjdk-21-jdk-headless php8.4-cli php8.4-dev python3.13 python3.13-dev python3-setuptools python3-pip heaptrack"
	[sid]="ruby3.4 ruby3.4-dev build-essential dpkg-dev openjdk-25-jdk-headless python3.14 python3.14-dev python3-setuptools python3-pip heaptrack"
	[bookworm]="ruby3.1 ruby3.1-dev build-essential"
)
declare -A SOURCES=(
	[trixie]="ruby3.3"
	[sid]="ruby3.4"
)
# suite -> a further archive of Debian's (its packages taken from it first)
declare -A EXTRA=(
	[sid]="experimental"
)

if [ "$(id -u)" -ne 0 ]; then
	echo "roots: run as root (debootstrap and chroot need it)" >&2
	exit 1
fi

make_root() { # suite
	local suite=$1 dir=$ROOTS/$1 missing=() p
	if [ -z "${PACKAGES[$suite]+x}" ]; then
		echo "roots: no suite '$suite' (known: ${!PACKAGES[*]})" >&2
		return 1
	fi
	if [ ! -e "$dir/.vmtrace-root" ]; then
		rm -rf "$dir.new"
		mkdir -p "$ROOTS"
		echo "roots: debootstrap $suite into $dir"
		debootstrap --variant=minbase "$suite" "$dir.new" "$MIRROR" >"$ROOTS/$suite.log" 2>&1 ||
			{ echo "roots: debootstrap $suite failed: see $ROOTS/$suite.log" >&2; return 1; }
		echo "deb-src $MIRROR $suite main" >"$dir.new/etc/apt/sources.list.d/vmtrace-src.list"
		if [ -n "${EXTRA[$suite]:-}" ]; then
			printf 'deb %s %s main\ndeb-src %s %s main\n' "$MIRROR" "${EXTRA[$suite]}" "$MIRROR" \
				"${EXTRA[$suite]}" >"$dir.new/etc/apt/sources.list.d/vmtrace-extra.list"
			printf 'Package: *\nPin: release a=%s\nPin-Priority: 990\n' "${EXTRA[$suite]}" \
				>"$dir.new/etc/apt/preferences.d/vmtrace-extra"
		fi
		# the archive here may be a snapshot older than its Valid-Until
		echo 'Acquire::Check-Valid-Until "false";' >"$dir.new/etc/apt/apt.conf.d/99vmtrace"
		touch "$dir.new/.vmtrace-root"
		mv "$dir.new" "$dir"
	fi
	for p in ${PACKAGES[$suite]}; do
		chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "roots: $suite: installing ${missing[*]}"
		chroot "$dir" apt-get update -qq
		# with its own /proc, which a JDK's set-up runs java in
		unshare --mount --pid --fork --mount-proc="$dir/proc" chroot "$dir" \
			env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			"${missing[@]}" >/dev/null
	fi
	for p in ${SOURCES[$suite]:-}; do
		if ! ls -d "$dir/usr/src/$p/$p"-*/ >/dev/null 2>&1; then
			echo "roots: $suite: source of $p"
			chroot "$dir" apt-get update -qq
			# the installed version's, else (the archive may have dropped it)
			# another of the same series: layouts hold within one
			chroot "$dir" sh -c "rm -rf /usr/src/$p && mkdir -p /usr/src/$p && cd /usr/src/$p &&
				{ apt-get source -qq $p >/dev/null 2>&1 ||
				  for v in \$(apt-cache showsrc $p | sed -n 's/^Version: //p' | sort -rV); do
					rm -rf ./*; apt-get source -qq $p=\$v >/dev/null 2>&1 && break; done; }
				ls -d $p-*/ >/dev/null" ||
				{ echo "roots: $suite: no source of $p in the archive" >&2; return 1; }
		fi
	done
}

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=("${!PACKAGES[@]}")
for s in "${suites[@]}"; do
	make_root "$s"
done
