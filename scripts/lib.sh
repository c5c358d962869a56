# SPDX-License-Identifier: GPL-2.0
# Shared settings for the project's scripts; sourced, never run.

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything slow to make (kernel source, kernel builds, initramfs) lives
# outside the repository so a clean clone reuses it.
CACHE=${NVMET_CGROUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nvmet-cgroup}
KERNEL_SERIES=7.3
BINDGEN_VERSION=0.73.2
# clang for the debug flavour (Rust + KASAN needs a clang-built kernel).
LLVM_SUFFIX=-19
JOBS=$(nproc)

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# apt_install PACKAGE...: installs those of the Debian packages that are not
# installed yet, from the system's apt sources; idempotent.
apt_install() {
	local p missing=() sudo=
	for p in "$@"; do
		dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	log "installing Debian packages: ${missing[*]}"
	[ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
		die "installing ${missing[*]} failed"
}

# debian_mirror: the Debian mirror this machine's own apt sources use (not
# the security one), for the private apt states of scripts/fetch-kernel and
# scripts/build-fio
debian_mirror() {
	local mirror
	mirror=$(grep -hsE '^\s*URIs:' /etc/apt/sources.list.d/*.sources |
		 awk '{print $2}' | grep -v -- '-security' | head -n 1 || true)
	if [ -z "$mirror" ]; then
		mirror=$(grep -hsE '^\s*deb\s' /etc/apt/sources.list |
			 awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' |
			 grep -v -- '-security' | head -n 1 || true)
	fi
	[ -n "$mirror" ] || die "cannot find the Debian mirror in this machine's apt sources"
	echo "$mirror"
}

# private_apt DIR LINE: set apt_opts for an apt whose sources list (LINE)
# and state live under DIR, so nothing is installed into or changed on the
# system; its package list is refreshed at most once a day
private_apt() {
	local dir=$1 stamp=$1/lists.stamp
	mkdir -p "$dir"/lists/partial "$dir"/archives/partial
	if [ "$(cat "$dir/sources.list" 2>/dev/null)" != "$2" ]; then
		echo "$2" > "$dir/sources.list"
		rm -f "$stamp"
	fi
	apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list"
		  -o Dir::Etc::SourceParts=/dev/null
		  -o "Dir::State::Lists=$dir/lists"
		  -o "Dir::Cache=$dir"
		  -o "Dir::Cache::archives=$dir/archives"
		  -o APT::Get::List-Cleanup=0
		  -o Debug::NoLocking=1
		  -o APT::Sandbox::User=root)
	if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ]; then
		log "updating the private package list ($2)"
		apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update of '$2' failed"
		touch "$stamp"
	fi
}

# backports_apt: private_apt for trixie-backports, where Debian's 7.3
# kernel packages are (scripts/fetch-kernel, debian_kernel)
backports_apt() {
	private_apt "$CACHE/apt" \
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(debian_mirror) trixie-backports main"
}

# Kernel flavours: debug (tests) and perf (benchmarks).
check_flavour() {
	case "$1" in
	debug|perf) ;;
	*) die "unknown flavour '$1' (debug or perf)" ;;
	esac
}

# fault_table RESULTS_DIR: faults.sh's fault matrix, from its KTAP (a line
# "# fault: CASE rounds=N" in each case's output, then the case's result),
# as a table: case, rounds, result.
fault_table() {
	[ -f "$1/faults.ktap" ] || return 0
	awk -v mode="${FAULT_ROUNDS:-short}" '
	/^# fault: / { split($4, kv, "="); rounds[$3] = kv[2]; order[++n] = $3 }
	/^(not )?ok [0-9]+ / { res[$NF] = ($1 == "ok") ? "ok" : "FAILED" }
	END {
		if (!n) exit
		printf "\nFault matrix (faults.sh, FAULT_ROUNDS=%s):\n", mode
		printf "  %-32s %6s  %s\n", "case", "rounds", "result"
		for (i = 1; i <= n; i++)
			printf "  %-32s %6s  %s\n", order[i], rounds[order[i]],
				(order[i] in res) ? res[order[i]] : "unfinished"
	}' "$1/faults.ktap"
}

# SPLAT_RE: the kernel reports that fail a guest run when its console shows
# one (scripts/vm, tools/blktests/report), one ERE: warnings, BUGs (soft
# lockups, workqueue lockups and KFENCE reports among them), oopses,
# KASAN, KFENCE, UBSAN, lockdep, RCU stalls, soft and hard lockups, hung
# tasks, list corruption, kmemleak, panics and Rust panics.
# scripts/check-splat tests it on sample console lines, benign ones too.
SPLAT_RE='WARNING:|BUG:|Oops|KASAN:|KFENCE:|UBSAN:|possible [a-z ]*locking|inconsistent lock state'
SPLAT_RE+='|detected stalls|self-detected stall|soft lockup|hard LOCKUP|workqueue lockup'
SPLAT_RE+='|hung task|blocked for more than|list_[a-z_]* corruption'
SPLAT_RE+='|unreferenced object|suspected memory leak|Kernel panic|rust_panic'

# vm_booting_again LOG PROGRESS VM_ARG...: scripts/vm VM_ARG... (which must
# log to LOG), booted again, three boots at most, when the guest kernel
# stopped on an "Oops: int3" before doing anything: under multi-threaded
# TCG a vCPU can run text another one is patching (Documentation/
# harness.rst), about one boot in four for the perf kernel and seen for the
# debug kernel too.  PROGRESS is a command whose output changes once the
# guest has done something (a result written); a boot that did something
# is not repeated.  The console of a boot that is repeated is kept, moved
# to LOG.attempt-N (N = 1, 2), so that its report is not overwritten by the
# next boot's.  Returns scripts/vm's status.
vm_booting_again() {
	local log=$1 progress=$2 attempt before st
	shift 2
	rm -f "$log".attempt-[0-9]
	for attempt in 1 2 3; do
		before=$($progress)
		st=0
		"$TOP/scripts/vm" "$@" || st=$?
		if [ "$st" != 0 ] && [ "$attempt" -lt 3 ] && grep -q 'Oops: int3' "$log" &&
		   [ "$($progress)" = "$before" ]; then
			mv -f "$log" "$log.attempt-$attempt"
			log "the guest kernel oopsed on code patching before doing anything; booting again" \
			    "(that boot's console is kept in $log.attempt-$attempt)"
			continue
		fi
		return "$st"
	done
}

# series_patches [block]: the patches of patches/series (nvmet's series), or
# of patches/block/series (the block layer's, which the project's kernels
# carry and DKMS cannot), in order, one per line, relative to patches/
# (packaging/dkms/build.sh, which ships without this file, reads the first
# alike).
series_patches() {
	local dir=${1:+$1/}
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e "s|^|$dir|" "$TOP/patches/${dir}series"
}

# debian_kernel: set DEBIAN_KERNEL_VERSION and DEBIAN_KERNEL_RELEASE to the
# newest Debian 7.3 kernel for amd64 in trixie-backports (the package
# version, e.g. 7.3.4-1~bpo13+1, and `uname -r`, e.g. 7.3.4+deb13-amd64),
# the same source package scripts/fetch-kernel builds the project's own
# kernels from.  Either may be given in the environment instead.
debian_kernel() {
	if [ -z "${DEBIAN_KERNEL_RELEASE:-}" ] || [ -z "${DEBIAN_KERNEL_VERSION:-}" ]; then
		backports_apt
		local pkg
		pkg=$(apt-cache "${apt_opts[@]}" search --names-only \
			"^linux-image-$KERNEL_SERIES\.[0-9]+\+deb[0-9]+-amd64\$" 2>/dev/null |
		      awk '{print $1}' | sort -V | tail -n 1)
		[ -n "$pkg" ] || die "no linux-image-$KERNEL_SERIES.*-amd64 in trixie-backports"
		DEBIAN_KERNEL_RELEASE=${DEBIAN_KERNEL_RELEASE:-${pkg#linux-image-}}
		DEBIAN_KERNEL_VERSION=${DEBIAN_KERNEL_VERSION:-$(apt-cache "${apt_opts[@]}" policy "$pkg" |
							       awk '/Candidate:/ {print $2}')}
	fi
	export DEBIAN_KERNEL_RELEASE DEBIAN_KERNEL_VERSION
}

# in_chroot ROOT CMD...: run CMD in the chroot ROOT with a clean
# environment, /proc, /sys and /dev mounted in a mount namespace of its own
# (so they go away with CMD, whatever happens), and each "HOSTDIR:DIR" of
# CHROOT_BINDS bind-mounted at ROOT/DIR.
in_chroot() {
	local root=$1
	shift
	unshare -m --propagation private bash -euc '
		root=$1
		shift
		mount -t proc proc "$root/proc"
		mount -t sysfs sys "$root/sys"
		mount --rbind /dev "$root/dev"
		for b in ${CHROOT_BINDS:-}; do
			mkdir -p "$root${b#*:}"
			mount --bind "${b%%:*}" "$root${b#*:}"
		done
		exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LC_ALL=C.UTF-8 TERM=dumb "$@"' in_chroot "$root" "$@"
}

# The host checks' report (scripts/check-*): check NAME STATUS prints
# "ok - NAME" or "not ok - NAME" and counts it in passed/failed;
# check_summary prints "N passed, N failed" (and ", N skipped" when
# skipped is set) and fails when a check did.
passed=0 failed=0
check() {	# check NAME STATUS
	if [ "$2" = 0 ]; then
		passed=$((passed + 1))
		echo "ok - $1"
	else
		failed=$((failed + 1))
		echo "not ok - $1"
	fi
}
check_summary() {
	echo "$passed passed, $failed failed${skipped:+, $skipped skipped}"
	[ "$failed" = 0 ]
}
