#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Reservation commands on a namespace with cgroup_id set: they are not
# deferred to the namespace's context and work as without the module, and
# the reservation holder's I/O still runs (and is charged) in that context.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:resv
KEY=0x1234

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 128 && cg_create resv &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 resv_enable=1 cgroup_id="$(cg_id resv)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN"
}

reservations_work() {
	local dev before after
	dev=$(host_dev "$NQN" 1) || return
	nvme resv-register "$dev" -n 1 --nrkey=$KEY --rrega=0 || fail "register failed" || return
	nvme resv-acquire "$dev" -n 1 --crkey=$KEY --rtype=1 --racqa=0 || fail "acquire failed" || return
	nvme resv-report "$dev" -n 1 --eds -o json | grep -q '"rtype" *: *1' ||
		fail "report does not show the write-exclusive reservation" || return
	before=$(cg_stat resv /dev/nullb0 wios)
	fio_verify "$dev" || fail "I/O of the holder failed" || return
	after=$(cg_stat resv /dev/nullb0 wios)
	[ "$after" -gt "$before" ] || fail "the holder's I/O was not charged" || return
	nvme resv-release "$dev" -n 1 --crkey=$KEY --rtype=1 --rrela=0 || fail "release failed" || return
	nvme resv-register "$dev" -n 1 --crkey=$KEY --rrega=1 || fail "unregister failed"
}

teardown() {
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	cg_remove resv && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 3
run_case "setup" setup
run_case "register_acquire_report_release" reservations_work
run_case "teardown" teardown
ktap_finished
