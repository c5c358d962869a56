#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# On a distribution's own kernel (make check-debian boots Debian's vmlinuz
# with the modules dkms installed): the kernel is the distribution's, nvmet
# and its transports come from dkms's updates/dkms, signed; the shipped
# softdep loads nvmet_cgroup with `modprobe nvmet`; and on a kernel without
# io.latency (Debian's) the CLI says so instead of failing obscurely.
# DISTRO_KVER is the release the host installed.  Not in TEST_PROGS: it
# needs that kernel and scripts/mkinitramfs --distro's /distro/etc.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./cli_lib.sh

KVER=$(uname -r)
NQN=nqn.2026-12.io.nvmet-cgroup:distro
SOFTDEP=/etc/modprobe.d/nvmet-cgroup.conf

kernel_is_the_distributions() {
	echo "uname -r: $KVER; expected: ${DISTRO_KVER:-?}"
	head -c 200 /proc/version
	echo
	[ -n "${DISTRO_KVER:-}" ] && [ "$KVER" = "$DISTRO_KVER" ] || fail "not the distribution's kernel"
}

modules_from_dkms() {
	local m ko v
	for m in nvmet nvmet_tcp nvme_loop nvmet_cgroup; do
		ko=$(modinfo -n "$m") || return
		echo "$m: $ko"
		[[ $ko == "/lib/modules/$KVER/updates/dkms/"* ]] ||
			fail "modprobe would take $m from $ko, not updates/dkms" || return
		[ -n "$(modinfo -F signer "$m")" ] || fail "$m is not signed" || return
	done
	for m in nvmet nvmet_tcp nvme_loop; do
		v=$(modinfo -F version "$m")
		[[ $v == nvmet-cgroup-* ]] || fail "$m has version '$v', not the package's" || return
	done
}

softdep_loads_nvmet_cgroup() {
	[ -f "/distro$SOFTDEP" ] || fail "no $SOFTDEP from make install-tools" || return
	mkdir -p /etc/modprobe.d && cp "/distro$SOFTDEP" "$SOFTDEP" || return
	grep -v '^#' "$SOFTDEP"
	! lsmod | grep -qE '^nvmet(_cgroup)? ' || fail "nvmet is loaded already" || return
	modprobe nvmet || return
	lsmod | grep -E '^nvmet(_cgroup)? '
	lsmod | grep -q '^nvmet_cgroup ' || fail "modprobe nvmet did not load nvmet_cgroup"
}

# Debian's kernel has no CONFIG_BLK_CGROUP_IOLATENCY: a cgroup with io
# enabled has io.max and no io.latency, and the CLI's limit --latency says
# so, writing nothing; io.max limits go through.
io_latency_unavailable() {
	local out
	cli_built || return
	nullb_create nullb0 64 && subsys_create "$NQN" && ns_create "$NQN" 1 /dev/nullb0 &&
	"$CLI" bind "$NQN" 1 --cgroup distro --create --reenable || return
	[ -f "$CG/distro/io.max" ] || fail "no io.max in $CG/distro" || return
	[ ! -e "$CG/distro/io.latency" ] || fail "this kernel has io.latency" || return
	if out=$("$CLI" limit "$NQN" 1 --latency 5ms 2>&1); then
		fail "limit --latency succeeded: $out"
		return
	fi
	echo "limit --latency: $out"
	[[ $out == *"io.latency is not available on this kernel"* ]] || fail "no clear message" || return
	"$CLI" limit "$NQN" 1 --riops 100 || return
	echo "io.max: $(cat "$CG/distro/io.max")"
	grep -q 'riops=100' "$CG/distro/io.max" || fail "io.max was not written"
}

# The softdep goes first, whatever else fails: the tests after this one
# load and unload nvmet_cgroup on their own.
teardown() {
	rm -f "$SOFTDEP"
	subsys_destroy "$NQN" && nullb_destroy nullb0 && cg_remove distro &&
	rmmod nvmet_cgroup nvmet null_blk
}

ktap_print_header
ktap_set_plan 5
run_case "kernel_is_the_distributions" kernel_is_the_distributions
run_case "nvmet_and_nvmet_cgroup_from_dkms_signed" modules_from_dkms
run_case "modprobe_nvmet_loads_nvmet_cgroup_by_softdep" softdep_loads_nvmet_cgroup
run_case "io_latency_unavailable_said_by_the_cli" io_latency_unavailable
run_case "teardown" teardown
ktap_finished
