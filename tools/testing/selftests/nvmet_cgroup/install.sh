#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make install, as a host would get it: scripts/check runs
# `make install DESTDIR=build/install-root` on the host; this copies that
# tree into the guest's root file system (the module's updates/ directory,
# /etc/modprobe.d, /usr/sbin, the unit and the man page), runs depmod, and
# checks that modprobe takes the module from updates/, that the shipped
# softdep loads it with nvmet, and that the installed CLI works.  Then the
# DKMS package the same way: scripts/check-dkms builds it on the host as
# dkms would and installs its modules (nvmet, its transports, nvmet_cgroup)
# into build/dkms-root; they are copied to updates/ here, and modprobe
# nvmet_cgroup must load them rather than the kernel's own.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

ROOT=$(cd ../../../.. && pwd)/build/install-root
DKMS_ROOT=$(cd ../../../.. && pwd)/build/dkms-root
KVER=$(uname -r)
DKMS_NQN=nqn.2026-12.io.nvmet-cgroup:dkms

installed_into_the_root_fs() {
	[ -f "$ROOT/lib/modules/$KVER/updates/nvmet_cgroup.ko" ] ||
		fail "no $ROOT/lib/modules/$KVER/updates/nvmet_cgroup.ko: run make install DESTDIR=$ROOT" || return
	if lsmod | grep -q '^nvmet_cgroup '; then rmmod nvmet_cgroup || return; fi
	mkdir -p "/lib/modules/$KVER/updates" /etc/modprobe.d /usr/share/man/man8 /lib/systemd/system &&
	cp "$ROOT/lib/modules/$KVER/updates/nvmet_cgroup.ko" "/lib/modules/$KVER/updates/" &&
	cp "$ROOT/etc/modprobe.d/nvmet-cgroup.conf" /etc/modprobe.d/ &&
	cp "$ROOT/usr/sbin/nvmet-cgroup" /usr/sbin/ &&
	cp "$ROOT/usr/share/man/man8/nvmet-cgroup.8" /usr/share/man/man8/ &&
	cp "$ROOT/lib/systemd/system/nvmet-cgroup.service" /lib/systemd/system/ || return
	# scripts/guest/init put the module under extra/ too: updates/ must win
	depmod -a && echo "modinfo: $(modinfo -n nvmet_cgroup)"
	[ "$(modinfo -n nvmet_cgroup)" = "/lib/modules/$KVER/updates/nvmet_cgroup.ko" ] ||
		fail "modprobe would not take the installed module"
}

softdep_loads_it_with_nvmet() {
	local m
	for m in nvmet_cgroup nvme_loop nvmet_tcp nvmet; do
		modprobe -r "$m" 2>/dev/null
	done
	! lsmod | grep -q '^nvmet ' || fail "nvmet cannot be unloaded: $(lsmod | grep '^nvmet ')" || return
	modprobe nvmet || return
	lsmod | grep -E '^nvmet(_cgroup)? '
	lsmod | grep -q '^nvmet_cgroup ' || fail "modprobe nvmet did not load nvmet_cgroup (softdep)"
}

installed_cli_runs() {
	/usr/sbin/nvmet-cgroup --version && /usr/sbin/nvmet-cgroup status &&
	/usr/sbin/nvmet-cgroup status --json | grep -q '"namespaces"' ||
		fail "the installed nvmet-cgroup does not run" || return
	grep -q '^\.TH nvmet-cgroup 8' /usr/share/man/man8/nvmet-cgroup.8 || fail "no man page"
}

teardown() {
	rmmod nvmet_cgroup && rm -f "/lib/modules/$KVER/updates/nvmet_cgroup.ko" \
		/etc/modprobe.d/nvmet-cgroup.conf /usr/sbin/nvmet-cgroup && depmod -a
}

unload_nvmet() {
	local m
	for m in nvmet_cgroup nvme_loop nvmet_tcp nvmet; do
		modprobe -r "$m" 2>/dev/null
	done
	! lsmod | grep -qE '^(nvmet|nvmet_cgroup|nvmet_tcp|nvme_loop) ' ||
		fail "cannot unload: $(lsmod | grep -E '^nvme')"
}

# A missing build/dkms-root fails: scripts/check runs scripts/check-dkms
# before booting the guest.
dkms_modules_load_from_updates() {
	local m ko id
	[ -d "$DKMS_ROOT/lib/modules/$KVER/updates" ] ||
		fail "no $DKMS_ROOT/lib/modules/$KVER/updates: run scripts/check-dkms" || return
	unload_nvmet || return
	mkdir -p "/lib/modules/$KVER/updates" &&
	cp -r "$DKMS_ROOT/lib/modules/$KVER/updates/." "/lib/modules/$KVER/updates/" &&
	depmod -a || return
	for m in nvmet nvmet_tcp nvme_loop nvmet_cgroup; do
		ko=$(modinfo -n "$m") || return
		echo "modinfo -n $m: $ko"
		[[ $ko == "/lib/modules/$KVER/updates/"* ]] ||
			fail "modprobe would take $m from $ko, not updates/" || return
	done
	modprobe nvmet_cgroup && modprobe nvme_loop && modprobe nvmet_tcp || return
	lsmod | grep -E '^(nvmet|nvmet_cgroup|nvmet_tcp|nvme_loop) '
	# The package's modules carry a version (the kernel's own have none),
	# and taint O as modules built outside the kernel's tree do.
	for m in nvmet nvmet_tcp nvme_loop; do
		echo "$m: version $(cat "/sys/module/$m/version" 2>/dev/null), taint $(cat "/sys/module/$m/taint")"
		grep -q '^nvmet-cgroup-' "/sys/module/$m/version" && grep -q O "/sys/module/$m/taint" ||
			fail "the loaded $m is the kernel's own" || return
	done
	# A namespace has cgroup_id, and enabling it with a cgroup succeeds:
	# nvmet_cgroup registered with the package's nvmet.
	nullb_create nullb0 64 && cg_create dkms && subsys_create "$DKMS_NQN" &&
	ns_create "$DKMS_NQN" 1 /dev/nullb0 cgroup_id="$(cg_id dkms)" || return
	id=$(cat "$NVMET_CFS/subsystems/$DKMS_NQN/namespaces/1/cgroup_id")
	echo "cgroup_id: $id (cgroup dkms: $(cg_id dkms))"
	[ "$id" = "$(cg_id dkms)" ] || fail "cgroup_id reads '$id'" || return
	# The CLI (make install-tools on a DKMS host) sees it through the
	# package's modules.
	"$ROOT/usr/sbin/nvmet-cgroup" status | tee /tmp/dkms-status
	grep -q "$DKMS_NQN" /tmp/dkms-status || fail "nvmet-cgroup status does not show $DKMS_NQN"
}

# Back to the kernel's own modules for the tests that follow.
dkms_teardown() {
	subsys_destroy "$DKMS_NQN"
	nullb_destroy nullb0
	cg_remove dkms
	unload_nvmet || return
	local f
	if [ -d "$DKMS_ROOT/lib/modules/$KVER/updates" ]; then
		# what the case copied (module paths have no spaces)
		for f in $(cd "$DKMS_ROOT/lib/modules/$KVER/updates" && find . -name '*.ko'); do
			rm -f "/lib/modules/$KVER/updates/${f#./}" || return
		done
	fi
	depmod -a && echo "modinfo -n nvmet: $(modinfo -n nvmet)"
	[[ $(modinfo -n nvmet) != "/lib/modules/$KVER/updates/"* ]] ||
		fail "nvmet still resolves to updates/"
}

ktap_print_header
ktap_set_plan 6
run_case "installed_into_the_root_fs" installed_into_the_root_fs
run_case "softdep_loads_it_with_nvmet" softdep_loads_it_with_nvmet
run_case "installed_cli_runs" installed_cli_runs
run_case "teardown" teardown
run_case "dkms_modules_load_from_updates" dkms_modules_load_from_updates
run_case "dkms_teardown" dkms_teardown
ktap_finished
