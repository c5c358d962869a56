#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make install, as a host would get it: scripts/check runs
# `make install DESTDIR=build/install-root` on the host; this copies that
# tree into the guest's root file system (the module's updates/ directory,
# /etc/modprobe.d, /usr/sbin, the unit and the man page), runs depmod, and
# checks that modprobe takes the module from updates/, that the shipped
# softdep loads it with nvmet, and that the installed CLI works.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh

ROOT=$(cd ../../../.. && pwd)/build/install-root
KVER=$(uname -r)

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
		fail "the installed nvmet-cgroup does not run"
	grep -q '^\.TH nvmet-cgroup 8' /usr/share/man/man8/nvmet-cgroup.8 || fail "no man page"
}

teardown() {
	rmmod nvmet_cgroup && rm -f "/lib/modules/$KVER/updates/nvmet_cgroup.ko" \
		/etc/modprobe.d/nvmet-cgroup.conf /usr/sbin/nvmet-cgroup && depmod -a
}

ktap_print_header
ktap_set_plan 4
run_case "installed_into_the_root_fs" installed_into_the_root_fs
run_case "softdep_loads_it_with_nvmet" softdep_loads_it_with_nvmet
run_case "installed_cli_runs" installed_cli_runs
run_case "teardown" teardown
ktap_finished
