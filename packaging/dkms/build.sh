#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The build step of the nvmet-cgroup DKMS package (MAKE[0] in dkms.conf);
# it also runs by hand from an unpacked package tree.
#
#   build.sh [--ksrc TARBALL|DIR] [--prepare-only] KBUILD [NAME=VALUE...]
#
# KBUILD is the kernel's build directory (DKMS's $kernel_source_dir, i.e.
# /lib/modules/VERSION/build).  nvmet_cgroup.ko needs an nvmet with
# patches/ applied, and a distribution ships nvmet as modules built from its
# own source, while its headers package has no drivers/nvme.  So this takes
# drivers/nvme/ from the distribution's kernel source: --ksrc, else $KSRC,
# else Debian's /usr/src/linux-source-X.Y.tar.xz (package
# linux-source-X.Y), a tarball or an unpacked tree.  It copies it into
# ksrc/ next to this script, applies patches/series there (the last patch
# adds nvmet_cgroup's sources, drivers/nvme/target/cgroup), and builds
# with the kernel's own Kbuild every module the kernel's config builds in
# drivers/nvme/target (nvmet and its transports) plus nvmet_cgroup, as
# CONFIG_NVME_TARGET_CGROUP=m would in the kernel's tree.  --prepare-only
# stops after patching.  Before anything long it checks that rustc, bindgen,
# the C compiler and pahole are the ones the kernel was built with; and
# when KBUILD has no Rust metadata (Debian's headers have none) it builds
# the kernel's build directory from the same source once per kernel
# (prepare-kernel.sh, cached in /var/cache/nvmet-cgroup/kernel/VERSION).
# NAME=VALUE arguments go to every make, but for the compiler's (below).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$here/ksrc
jobs=${JOBS:-$(nproc)}

log() { printf '[nvmet-cgroup dkms] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() { die "usage: $0 [--ksrc TARBALL|DIR] [--prepare-only] KBUILD [NAME=VALUE...]"; }

ksrc=${KSRC:-}
prepare_only=
kbuild=
make_args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--ksrc) [ $# -ge 2 ] || usage; ksrc=$2; shift ;;
	--ksrc=*) ksrc=${1#--ksrc=} ;;
	--prepare-only) prepare_only=1 ;;
	# For a clang-built kernel dkms appends its guess of the compiler
	# (LLVM=1 in current dkms, CC=clang LD=ld.lld in 3.0): unversioned
	# names, which Debian's clang-N packages do not install.  The
	# compiler is chosen below from the kernel's own config instead.
	LLVM=*|CC=*|LD=*) ;;
	*=*) make_args+=("$1") ;;
	-*) usage ;;
	*) [ -z "$kbuild" ] || usage; kbuild=$1 ;;
	esac
	shift
done
[ -n "$kbuild" ] || usage
[ -d "$kbuild" ] || die "no kernel build directory $kbuild (install linux-headers-VERSION)"

. "$here/kbuild-lib.sh"
kbuild_read_config

# dkms.conf's BUILD_EXCLUSIVE_CONFIG accepts =m and =y alike, and a
# built-in nvmet cannot be replaced by a module: say so rather than fail
# at load time.
[ "$(kconfig CONFIG_NVME_TARGET)" = m ] ||
	die "CONFIG_NVME_TARGET is '$(kconfig CONFIG_NVME_TARGET)' in $kconf: only a modular nvmet (m) can be replaced"
[ "$(kconfig CONFIG_RUST)" = y ] || die "the kernel has no CONFIG_RUST: nvmet_cgroup is a Rust module"
[ "$(kconfig CONFIG_BLK_CGROUP)" = y ] || die "the kernel has no CONFIG_BLK_CGROUP"

kbuild_llvm
kbuild_release

# Before any long step: the compilers must be the kernel's own.
. "$here/prepare-kernel.sh"
toolchain_check

if [ -z "$ksrc" ]; then
	for c in "/usr/src/linux-source-$series.tar.xz" "/usr/src/linux-source-$series.tar.bz2" \
		 "/usr/src/linux-source-$series"; do
		if [ -e "$c" ]; then
			ksrc=$c
			break
		fi
	done
fi
[ -n "$ksrc" ] ||
	die "no kernel source for Linux $series: install linux-source-$series, or give --ksrc (or KSRC=)"
[ -e "$ksrc" ] || die "no kernel source $ksrc"

mapfile -t patches < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/patches/series")
[ ${#patches[@]} -gt 0 ] || die "patches/series lists no patch"

# What to copy: the top Makefile (its version), drivers/nvme (target/, and
# host/'s headers that nvme-loop, nvmet-fc and passthru include), and any
# other file a patch touches (Documentation/ABI, MAINTAINERS), so that
# every patch applies whole with -p1 at the copy's root.
paths=(Makefile drivers/nvme)
while read -r f; do
	case "$f" in
	Makefile|drivers/nvme/*) ;;
	*) paths+=("$f") ;;
	esac
done < <(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "${patches[@]/#/$here/patches/}" | sort -u)

# Building nvmet from one release's source against another's kernel would
# mix internal structures: the source must be the kernel's version.  Read
# from its top Makefile before anything is unpacked.
if [ -d "$ksrc" ]; then
	top_makefile() { cat "$ksrc/Makefile"; }
else
	# Debian's tarball has one top directory (linux-source-X.Y/).
	top=$(tar -tf "$ksrc" 2>/dev/null | head -n 1 || true)
	top=${top%%/*}
	[ -n "$top" ] || die "cannot read $ksrc"
	top_makefile() { tar -xOf "$ksrc" --occurrence=1 "$top/Makefile"; }
fi
mkvar() { top_makefile 2>/dev/null | sed -n "s/^$1 = //p"; }
sversion=$(mkvar VERSION).$(mkvar PATCHLEVEL).$(mkvar SUBLEVEL)
[ "$sversion" = "$kversion" ] ||
	die "$ksrc is Linux $sversion but the kernel is $release: install the linux-source package of the kernel's version"

log "kernel $release in $kbuild; source $ksrc"

# A distribution's headers package has no Rust metadata: prepare the
# kernel's build directory from the same source (cached per kernel), and
# take nvmet's source from that unpacked copy.
if ! kernel_has_rust_meta; then
	prepare_check_tools
	kbuild=$(kernel_prepare "$ksrc") || exit 1
	ksrc=${kbuild%/obj}/src
fi

rm -rf "$work" "$work.try"
mkdir -p "$work"
if [ -d "$ksrc" ]; then
	(cd "$ksrc" && cp -a --parents "${paths[@]}" "$work/") || die "$ksrc lacks one of: ${paths[*]}"
else
	tar -xf "$ksrc" -C "$work" --strip-components=1 "${paths[@]/#/$top/}" ||
		die "cannot extract ${paths[*]} from $ksrc"
fi

# series DIR [-R]: apply the series to DIR in order, or reverse it last
# patch first.
series() {
	local dir=$1 p list=("${patches[@]}")
	shift
	[ $# = 0 ] || mapfile -t list < <(printf '%s\n' "${patches[@]}" | tac)
	for p in "${list[@]}"; do
		patch -d "$dir" -p1 -s -f --no-backup-if-mismatch "$@" < "$here/patches/$p" >&2 ||
			{ log "patch $p ${1:+($1) }does not apply"; return 1; }
	done
}

# A pristine source (Debian's tarball) takes the series as it is.  A tree
# that already carries it (scripts/build-kernel patches the repository's
# kernel tree) has it reversed first, which proves that it is exactly this
# series.  Each attempt runs on a scratch copy: a failed patch leaves
# half-applied files behind.
cp -a "$work" "$work.try"
if series "$work.try" 2>/dev/null; then
	log "applied patches/series (${#patches[@]} patches) to the pristine source"
else
	rm -rf "$work.try"
	cp -a "$work" "$work.try"
	if series "$work.try" -R && series "$work.try"; then
		log "the source already carried patches/series: reversed and applied again"
	else
		die "patches/series neither applies to $ksrc nor is applied in it"
	fi
fi
rm -rf "$work"
mv "$work.try" "$work"
[ -z "$prepare_only" ] || exit 0

target=$work/drivers/nvme/target

# dkms installs a module over the kernel's own of the same name only if
# their versions differ (dkms 3.0; later ones also compare the files), and
# modules without a version compare equal: it would keep the kernel's nvmet
# and transports and install nvmet_cgroup alone, which cannot load.
# So each rebuilt module gets a MODULE_VERSION (kbuild-lib.sh); modinfo
# and /sys/module/*/version show which nvmet is in use.
pkgver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$here/dkms.conf" 2>/dev/null)
modversion=nvmet-cgroup-${pkgver:-unknown}
kbuild_version_modules "$target" dkms "$modversion"

kmake() { make -C "$kbuild" "${llvm[@]}" "${make_args[@]}" "$@"; }

# drivers/nvme/target/Makefile picks its modules from the kernel's
# CONFIG_NVME_TARGET_* as in a kernel build: every transport the
# distribution ships is rebuilt, since each embeds struct nvmet_req (which
# the series grows) in its own requests and cannot run with the patched
# nvmet as shipped.  nvmet_cgroup, which no distribution's config has yet,
# is built by giving its option here; build.sh checked its dependencies
# (RUST, BLK_CGROUP) above.
log "building nvmet, its transports and nvmet_cgroup ${llvm[*]}"
kmake -j"$jobs" M="$target" CONFIG_NVME_TARGET_CGROUP=m modules

log "built: $(cd "$here" && echo ksrc/drivers/nvme/target/*.ko ksrc/drivers/nvme/target/cgroup/*.ko)"
