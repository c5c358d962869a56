# SPDX-License-Identifier: GPL-2.0
# Sourced by packaging/dkms/build.sh (the DKMS build) and bench/build-v12:
# what both need to rebuild drivers/nvme/target out of tree against a
# kernel build directory.  The caller sets $kbuild and defines die().
#
#   kbuild_read_config      kconf and kconfig NAME (the value, unquoted)
#   kbuild_llvm             llvm=(LLVM=...) for a clang-built kernel
#   kbuild_release          release, series (X.Y) and kversion (X.Y.Z)
#   kbuild_version_modules  DIR TAG VERSION: MODULE_VERSION in each module

kbuild_read_config() {
	# auto.conf is what Kbuild itself reads; dkms prefers it too.
	kconf=$kbuild/include/config/auto.conf
	[ -f "$kconf" ] || kconf=$kbuild/.config
	[ -f "$kconf" ] || die "no kernel config in $kbuild"
}
kconfig() { sed -n "s/^$1=//p" "$kconf" | tr -d '"'; }

# A clang-built kernel's modules need the same clang: clang-N for the
# kernel's clang major N when installed under that name (Debian's clang-N,
# as the repository's Makefile uses LLVM=-19), else plain clang.  LLVM in
# the environment wins.
kbuild_llvm() {
	local major
	llvm=()
	[ "$(kconfig CONFIG_CC_IS_CLANG)" = y ] || return 0
	major=$(($(kconfig CONFIG_CLANG_VERSION) / 10000))
	if [ -n "${LLVM:-}" ]; then
		llvm=(LLVM="$LLVM")
	elif command -v "clang-$major" >/dev/null; then
		llvm=(LLVM="-$major")
	else
		llvm=(LLVM=1)
	fi
}

kbuild_release() {
	release=$(cat "$kbuild/include/config/kernel.release" 2>/dev/null ||
		  make -s -C "$kbuild" kernelrelease)
	[[ $release =~ ^([0-9]+)\.([0-9]+)(\.([0-9]+))? ]] || die "cannot parse kernel release '$release'"
	series=${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
	kversion=$series.${BASH_REMATCH[4]:-0}
}

# kbuild_version_modules DIR TAG VERSION: every module DIR's Makefile builds
# gets MODULE_VERSION("VERSION"), from one more object (DIR/M-TAG-version.c)
# that a Kbuild file, which Kbuild reads instead of the Makefile, adds; the
# sources are not touched, and modinfo and /sys/module/*/version tell the
# rebuilt modules from the kernel's own (which have none).
kbuild_version_modules() {
	local dir=$1 tag=$2 version=$3 m
	cat > "$dir/Kbuild" <<KBUILD
# Written by nvmet-cgroup's packaging/dkms/kbuild-lib.sh: the Makefile, plus
# an object with MODULE_VERSION("$version") in each module.
include \$(src)/Makefile
\$(foreach m,\$(obj-m:.o=),\$(eval \$(m)-y += \$(m)-$tag-version.o))
KBUILD
	for m in $(sed -n 's/^obj-\$(CONFIG_[A-Z_]*)[[:space:]]*+=[[:space:]]*\(.*\)\.o$/\1/p' "$dir/Makefile"); do
		printf '%s\n' '// SPDX-License-Identifier: GPL-2.0' '#include <linux/module.h>' \
			"MODULE_VERSION(\"$version\");" > "$dir/$m-$tag-version.c"
	done
}
