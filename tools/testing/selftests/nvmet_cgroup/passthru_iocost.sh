#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# io.cost holds a passthru tenant to its weight: a passthru subsystem bound
# to a cgroup with io.weight 100, and fio reading the same disk directly in
# a sibling with io.weight 300, both saturating a linear model of a fifth
# of what the passthru path reaches alone (vrate pinned at 100 %; see
# configure).  Their IOPS must split at least 2 and at least 3/4 of what
# fio in the two cgroups splits (the reference, as in iocost.sh, which says
# why the bounds are these), in one of 3 attempts.  Charged to nobody (no
# block patch, or no binding), the passthru commands would be the root's,
# which iocost never throttles, and would get most of the disk.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-12.io.nvmet-cgroup:passthru-iocost
RUNTIME=${IOCOST_RUNTIME:-15}
# DISK, the controller's disk, is set by each case that uses it: cases
# run in subshells, where setup's variables do not reach.

setup() {
	local ctrl
	modprobe nvmet && modprobe nvme_loop && modprobe nvmet_cgroup &&
	ctrl=$(pci_nvme_ctrl) &&
	cg_create ptcost/light && cg_create ptcost/heavy &&
	echo "default 100" > "$CG/ptcost/light/io.weight" &&
	echo "default 300" > "$CG/ptcost/heavy/io.weight" &&
	passthru_create "$NQN" "$ctrl" cgroup_id="$(cg_id ptcost/light)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN" &&
	host_dev "$NQN" 1 > /dev/null
}

# configure: the passthru path alone with iocost off, then iocost with a
# model of a fifth of that.  A third (iocost.sh's) leaves the split near 1
# at first: the passthru path (host, nvmet, lane, passthru, the emulated
# controller) takes most of the guest's 2 CPUs, fio in the heavy cgroup
# then falls short of its share, and iocost donates it away.
configure() {
	local iops model
	echo "$(devnum "$DISK") enable=0" > "$CG/io.cost.qos" || return
	iops=$(fio_job "$(host_dev "$NQN" 1)" randread 4k --time_based --runtime=5 --ramp_time=1 --size=256M |
		cut -d' ' -f1)
	model=$((iops / 5))
	echo "passthru alone: $iops IOPS; model: $model IOPS"
	[ "$model" -gt 0 ] || fail "no I/O" || return
	iocost_enable "$DISK" "$model"
}

# The passthru tenant reads the namespace's first 256 MiB from this shell
# (its I/O is charged to ptcost/light by the binding), and its reference
# the disk's from ptcost/light; the heavy tenant reads the disk from
# ptcost/heavy, from 512 MiB on.
passthru_weight_split_like_fio_in_the_cgroups() {
	local hd attempt pt ref heavy
	DISK=$(passthru_disk "$NQN") && hd=$(host_dev "$NQN" 1) || return
	heavy="$DISK ptcost/heavy --offset=512M"
	for attempt in 1 2 3; do
		configure || return
		pt=$(weight_split "$hd - --size=256M" "$heavy") || fail "passthru: fio failed" || return
		ref=$(weight_split "$DISK ptcost/light --size=256M" "$heavy") || fail "reference: fio failed" || return
		echo "attempt $attempt: passthru vs direct split $pt, fio in the cgroups $ref"
		awk -v n="$pt" -v r="$ref" 'BEGIN { exit !(n >= 2 && n >= 0.75 * r) }' && return
	done
	fail "in 3 attempts the passthru tenant never split at least 2 and 3/4 of the reference"
}

teardown() {
	DISK=$(passthru_disk "$NQN") && host_disconnect "$NQN" && port_destroy 1 && passthru_destroy "$NQN" &&
	echo "$(devnum "$DISK") enable=0" > "$CG/io.cost.qos" &&
	cg_remove ptcost && rmmod nvmet_cgroup nvme_loop
}

ktap_print_header
ktap_set_plan 3
run_case "setup" setup
run_case "passthru_io_weight_100_vs_300_split_like_fio_in_the_cgroups" \
	passthru_weight_split_like_fio_in_the_cgroups
run_case "teardown" teardown
ktap_finished
