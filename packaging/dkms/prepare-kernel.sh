# SPDX-License-Identifier: GPL-2.0
# Sourced by packaging/dkms/build.sh: what a Rust module needs from a
# distribution kernel beyond its headers package.  The caller has run
# kbuild_read_config, kbuild_llvm and kbuild_release (kbuild-lib.sh), and
# defines log() and die().
#
#   toolchain_check        the compilers on PATH are the kernel's, or die
#                          with one message naming the packages to install
#   prepare_check_tools    what modules_prepare runs is installed, or die
#   kernel_has_rust_meta   KBUILD carries the Rust metadata modules link to
#   kernel_prepare KSRC    a build directory for the kernel, prepared from
#                          its source: prints its path (cached)
#
# Debian's linux-headers-VERSION carries no Rust metadata (no
# rust/libkernel.rmeta, no target.json): a Rust module cannot be built
# against it.  kernel_prepare makes what `make modules_prepare` makes from
# the kernel's own source package, with the headers' .config and
# .kernelvariables (the same compiler, flags and release string), and
# takes Module.symvers and vmlinux (for module BTF) from the headers.  Only
# the compilers the kernel was built with give crate hashes that match
# its Rust exports, hence toolchain_check first.

# The directory of prepared kernels, one per release.  Not under
# /var/lib/dkms: dkms takes every directory of /var/lib/dkms/MODULE for a
# version of the module, and reports one without a source as broken.
prepare_cache=${NVMET_CGROUP_KERNEL_CACHE:-/var/cache/nvmet-cgroup/kernel}

# deb_version PACKAGE UPSTREAM: the Debian version of PACKAGE whose upstream
# part is UPSTREAM, as apt knows it (empty when apt does not).
deb_version() {
	command -v apt-cache >/dev/null || return 0
	apt-cache madison "$1" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}' |
		grep -E "^([0-9]+:)?$(printf '%s' "$2" | sed 's/[.+]/\\&/g')([-+~]|$)" | head -n 1
}

# pkgspec PACKAGE UPSTREAM: PACKAGE=DEBIAN_VERSION when apt knows it, else
# "PACKAGE (UPSTREAM)".
pkgspec() {
	local v
	v=$(deb_version "$1" "$2")
	if [ -n "$v" ]; then echo "$1=$v"; else echo "$1 ($2)"; fi
}

# toolchain_check: the kernel's config records the compilers it was built
# with (CONFIG_CC_VERSION_TEXT, CONFIG_RUSTC_VERSION_TEXT,
# CONFIG_BINDGEN_VERSION_TEXT, CONFIG_PAHOLE_VERSION).  Any other rustc
# builds crates whose hashes match none of the kernel's Rust symbols, and
# modpost fails after minutes; so each is compared with what is on PATH
# before anything is built, and every mismatch is named in one message.
toolchain_check() {
	local want have cc ver sysroot bad=() pkgs=()
	want=$(kconfig CONFIG_CC_VERSION_TEXT)
	if [ "$(kconfig CONFIG_CC_IS_CLANG)" = y ]; then
		cc=clang${llvm[0]#LLVM=}
		[ "$cc" != clang1 ] || cc=clang
	else
		# The compiler is the first word of its version text (Debian:
		# x86_64-linux-gnu-gcc-14), as the headers' .kernelvariables names it.
		cc=${want%% *}
	fi
	have=$("$cc" --version 2>/dev/null | head -n 1 || true)
	if [ "$have" != "$want" ]; then
		bad+=("C compiler: the kernel's is '$want', this host's $cc is '${have:-missing}'")
		# Debian: "x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0"
		if [[ $want =~ ^([a-z0-9_-]*-)?(gcc-[0-9]+)\ \(Debian\ ([^\)]*)\) ]]; then
			pkgs+=("${BASH_REMATCH[2]}=${BASH_REMATCH[3]}")
		else
			pkgs+=("the compiler of '$want'")
		fi
	fi

	want=$(kconfig CONFIG_RUSTC_VERSION_TEXT)
	have=$(rustc --version 2>/dev/null || true)
	if [ "$have" != "$want" ]; then
		bad+=("rustc: the kernel's is '$want', this host's is '${have:-missing}'")
		ver=$(echo "$want" | awk '{print $2}')
		pkgs+=("$(pkgspec rustc "$ver")" "$(pkgspec rust-src "$ver")" "$(pkgspec libstd-rust-dev "$ver")")
	else
		# Kbuild compiles core from rustc's own library source.
		sysroot=$(rustc --print sysroot 2>/dev/null || true)
		if [ ! -f "$sysroot/lib/rustlib/src/rust/library/core/src/lib.rs" ]; then
			ver=$(echo "$want" | awk '{print $2}')
			bad+=("rustc $ver has no library source ($sysroot/lib/rustlib/src)")
			pkgs+=("$(pkgspec rust-src "$ver")")
		fi
	fi

	want=$(kconfig CONFIG_BINDGEN_VERSION_TEXT)
	have=$(bindgen --version 2>/dev/null || true)
	if [ -n "$want" ] && [ "$have" != "$want" ]; then
		bad+=("bindgen: the kernel's is '$want', this host's is '${have:-missing}'")
		pkgs+=("$(pkgspec bindgen "${want#bindgen }")")
	fi

	# pahole writes the modules' BTF against vmlinux's.
	want=$(kconfig CONFIG_PAHOLE_VERSION)
	if [ "$(kconfig CONFIG_DEBUG_INFO_BTF_MODULES)" = y ] && [ -n "$want" ] && [ "$want" != 0 ]; then
		have=$(pahole --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\.\([0-9]*\).*/\1\2/p' || true)
		if [ "$have" != "$want" ]; then
			ver=$((want / 100)).$((want % 100))
			bad+=("pahole: the kernel's is $ver, this host's is ${have:-missing}")
			pkgs+=("$(pkgspec dwarves "$ver")")
		fi
	fi

	[ ${#bad[@]} -gt 0 ] || return 0
	local msg
	msg=$(printf '%s; ' "${bad[@]}")
	die "the kernel $release was built with another toolchain than this host's (${msg%; }), and a Rust module links only when built with the kernel's own; nothing was built. Install: ${pkgs[*]}"
}

# prepare_check_tools: what `make modules_prepare` runs besides the
# compilers, checked before the long steps; one message names the packages.
prepare_check_tools() {
	local missing=() t
	for t in make:make flex:flex bison:bison bc:bc perl:perl python3:python3 \
		 xz:xz-utils tar:tar; do
		command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
	done
	# objtool and resolve_btfids (libelf), sign-file and extract-cert
	# (OpenSSL)
	[ -f /usr/include/gelf.h ] || [ -f /usr/include/libelf/gelf.h ] || missing+=(libelf-dev)
	[ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
	[ ${#missing[@]} = 0 ] ||
		die "preparing the kernel's build directory for $release needs: ${missing[*]} (install them)"
}

# kernel_has_rust_meta: what an out-of-tree Rust module is compiled against.
kernel_has_rust_meta() {
	[ -f "$kbuild/rust/libkernel.rmeta" ]
}

# kernel_prepare KSRC: KSRC is the kernel's source tarball (or an unpacked
# tree) of the kernel's exact version.  The prepared tree is kept in
# $prepare_cache/RELEASE, keyed by the headers' .config, .kernelvariables
# and Module.symvers, the source and the toolchain, so each kernel's is
# made once (about 2 minutes on 2 cores) and reused by every later build;
# those of kernels whose headers are gone are removed.  The key is written
# last, and a failure removes the directory: nothing half-made is reused.
kernel_prepare() {
	local ksrc=$1 dir=$prepare_cache/$release key old v
	key=$( { cat "$kbuild/.config" "$kbuild/Module.symvers"
		 cat "$kbuild/.kernelvariables" 2>/dev/null || true
		 ls -lL "$ksrc"; rustc --version; bindgen --version
		 kconfig CONFIG_CC_VERSION_TEXT; } | sha256sum | cut -c1-16)
	if [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ] && [ -f "$dir/obj/rust/libkernel.rmeta" ]; then
		log "prepared kernel tree $dir/obj (cached)"
		echo "$dir/obj"
		return 0
	fi
	mkdir -p "$prepare_cache" || die "cannot create $prepare_cache"
	for old in "$prepare_cache"/*; do
		[ -d "$old" ] && [ "$old" != "$dir" ] || continue
		[ -d "/lib/modules/$(basename "$old")/build" ] || rm -rf "$old"
	done
	rm -rf "$dir"
	mkdir -p "$dir/src" "$dir/obj" || die "cannot create $dir"
	# shellcheck disable=SC2064
	trap "rm -rf '$dir'" EXIT
	log "preparing a kernel tree for $release from $ksrc in $dir (its headers have no Rust metadata)"
	if [ -d "$ksrc" ]; then
		cp -a "$ksrc/." "$dir/src/" || die "cannot copy $ksrc"
	else
		tar -xf "$ksrc" -C "$dir/src" --strip-components=1 || die "cannot unpack $ksrc"
	fi
	cp "$kbuild/.config" "$dir/obj/.config"
	[ ! -f "$kbuild/.kernelvariables" ] || cp "$kbuild/.kernelvariables" "$dir/obj/"
	make -s -C "$dir/src" O="$dir/obj" "${llvm[@]}" olddefconfig >&2 ||
		die "make olddefconfig failed in $dir/obj"
	# The same source, config and compilers change nothing: a difference
	# means the source is not the kernel's.
	if ! diff -q <(grep '^CONFIG_' "$kbuild/.config") <(grep '^CONFIG_' "$dir/obj/.config") >/dev/null; then
		diff <(grep '^CONFIG_' "$kbuild/.config") <(grep '^CONFIG_' "$dir/obj/.config") | head -n 10 >&2
		die "$ksrc with the kernel's .config gives another config: it is not the source of $release"
	fi
	log "make modules_prepare (-j$jobs)"
	make -s -C "$dir/src" O="$dir/obj" "${llvm[@]}" -j"$jobs" modules_prepare >&2 ||
		die "make modules_prepare failed for $release"
	cp "$kbuild/Module.symvers" "$dir/obj/"
	# vmlinux for the modules' BTF: the headers' (Debian ships it there),
	# or the debug package's.
	for v in "$kbuild/vmlinux" "/usr/lib/debug/boot/vmlinux-$release"; do
		if [ -f "$v" ]; then
			cp "$v" "$dir/obj/vmlinux"
			break
		fi
	done
	# What module builds do not read: the sources of the kernel proper
	# (most of the tree).  Headers, arch/x86, scripts, rust and tools
	# stay, as in a headers package, and what build.sh patches and
	# rebuilds: drivers/nvme, block and Documentation/ABI.
	(cd "$dir/src" && rm -rf LICENSES certs crypto fs init io_uring ipc kernel lib mm net \
		samples security sound usr virt \
		$(ls -d arch/* drivers/* Documentation/* |
		  grep -vx -e arch/x86 -e arch/Kconfig -e drivers/nvme -e Documentation/ABI))
	echo "$key" > "$dir/key"
	trap - EXIT
	log "prepared $dir/obj ($(du -sm "$dir" | cut -f1) MB)"
	echo "$dir/obj"
}
