#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# io.cost: two namespaces on one blk-mq null_blk, in sibling cgroups with
# io.weight 100 and 300, both saturating a fixed linear model (vrate pinned
# at 100 %) -> their IOPS split as fio's own in the same cgroups does.
# iocost is work conserving: the model must be the bottleneck, so it allows
# a third of the rate one namespace reaches unthrottled (under emulation the
# guest's CPU, not 1000 IOPS, bounds the nvme-loop path).  At the 40-100
# IOPS that leaves, iocost steers coarsely: fio in the two cgroups, straight
# on the null_blk, splits 2.3-2.8 rather than 3, and now and then (more
# often on a loaded host) iocost hands the cgroups' unused budget back as a
# higher vrate (vtime_err) and the namespaces, whose commands take more
# hops under emulation than fio's, run nearly unsplit above the model.  So
# an attempt configures iocost afresh, splits the namespaces, then measures
# that reference; the case passes on the first of 3 attempts where the
# namespaces split at least 2 and at least 3/4 of the reference.  Without
# the cgroups' weights (uncharged, or one cgroup for both) every attempt
# splits about 1.  The case runs over each of NVMET_LONG_TRANSPORTS in turn
# (loop, tcp, rdma, fc): the host reconnects over it, and the model is
# calibrated again on that transport's rate.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:iocost
RUNTIME=${IOCOST_RUNTIME:-15}

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 256 &&
	cg_create iocost/light && cg_create iocost/heavy &&
	echo "default 100" > "$CG/iocost/light/io.weight" &&
	echo "default 300" > "$CG/iocost/heavy/io.weight" || return
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id iocost/light)" &&
	ns_create "$NQN" 2 /dev/nullb0 cgroup_id="$(cg_id iocost/heavy)" &&
	ports_create "$NVMET_LONG_TRANSPORTS" "$NQN"
}

over() {	# TRANSPORT: the host connected over it (alone)
	nvme disconnect -n "$NQN" > /dev/null 2>&1
	host_connect "$1" "$NQN"
}

# iocost_configure: measure one namespace unthrottled with iocost off, then
# enable iocost with a linear model of a third of that rate.
iocost_configure() {
	local d iops model
	d=$(devnum /dev/nullb0)
	echo "$d enable=0" > "$CG/io.cost.qos" || return
	iops=$(fio_job "$(host_dev "$NQN" 1)" randread 4k --time_based --runtime=5 --ramp_time=1 | cut -d' ' -f1)
	model=$((iops / 3))
	echo "one namespace unthrottled: $iops IOPS; model: $model IOPS"
	[ "$model" -gt 0 ] || fail "no I/O" || return
	iocost_enable /dev/nullb0 "$model"
}

weights_split_like_fio_in_the_cgroups() {
	local d1 d2 attempt ns ref
	d1=$(host_dev "$NQN" 1) && d2=$(host_dev "$NQN" 2) || return
	for attempt in 1 2 3; do
		iocost_configure || return
		ns=$(weight_split "$d1 -" "$d2 -") || fail "namespaces: fio failed" || return
		ref=$(weight_split "/dev/nullb0 iocost/light" "/dev/nullb0 iocost/heavy") ||
			fail "reference: fio failed" || return
		echo "attempt $attempt: the namespaces split $ns, fio in the cgroups $ref"
		awk -v n="$ns" -v r="$ref" 'BEGIN { exit !(n >= 2 && n >= 0.75 * r) }' && return
	done
	fail "in 3 attempts the namespaces never split at least 2 and 3/4 of the reference"
}

teardown() {
	host_disconnect "$NQN" && ports_destroy "$NVMET_LONG_TRANSPORTS" && subsys_destroy "$NQN" &&
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" &&
	cg_remove iocost && rmmod nvmet_cgroup &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
read -ra trs <<< "$NVMET_LONG_TRANSPORTS"
ktap_set_plan $((2 + 2 * ${#trs[@]}))
run_case "setup" setup
for tr in "${trs[@]}"; do
	run_case "setup_$tr" over "$tr"
	run_case "${tr}_io_weight_100_vs_300_split_like_fio_in_the_cgroups" weights_split_like_fio_in_the_cgroups
done
run_case "teardown" teardown
ktap_finished
