#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A namespace's cgroup is removed while its lane workers are busy with it:
# everything after the rmdir must be charged to the parent, not to the
# root.  io.cost throttles the namespace so that its workers sleep in
# iocost's throttle with up to 32 commands queued; the rmdir then lands
# while they sleep.  The kernel falls back to the root for a bio whose
# thread is associated with a removed cgroup (bio_associate_blkg() only
# takes an online css), so a module that kept the association it made
# before the rmdir (a css looked up at enable) would send the rest to the
# root.  A worker whose command slept ends its run,
# so this does not reach the per-command css_is_dying check, which covers
# a run that spans the rmdir without sleeping (Documentation/design.rst).
#
# What is compared: every read that reached the null_blk (its own counter)
# against what the parent's io.stat counted (its own I/O and the child's,
# which the kernel folds into it when the child goes).  Nothing else uses
# the null_blk, so reads the parent missed went to the root.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:rmdir
RUNTIME=${RMDIR_RUNTIME:-12}

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 256 &&
	cg_create rmdir/parent/child &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id rmdir/parent/child)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN"
}

# io.cost at a quarter of what the namespace does unthrottled, so that its
# lane worker sleeps for budget between commands of one batch
iocost_throttle() {
	local iops model
	iops=$(fio_job "$(host_dev "$NQN" 1)" randread 4k --time_based --runtime=4 | cut -d' ' -f1)
	model=$((iops / 4))
	echo "unthrottled: $iops IOPS; io.cost model: $model IOPS"
	[ "$model" -gt 0 ] || fail "no I/O" || return
	iocost_enable /dev/nullb0 "$model"
}

# reads the null_blk completed (field 1 of its stat)
nullb_reads() {
	awk '{ print $1 }' /sys/block/nullb0/stat
}

# the child cgroup has been charged for 20 reads or more
child_busy() {
	[ "$(cg_stat rmdir/parent/child /dev/nullb0 rios)" -ge 20 ]
}

rest_of_batch_to_parent() {
	local dev pid d0 p0 d1 p1 lost
	dev=$(host_dev "$NQN" 1) && iocost_throttle || return
	d0=$(nullb_reads); p0=$(cg_stat rmdir/parent /dev/nullb0 rios)
	fio_job "$dev" randread 4k --time_based --runtime="$RUNTIME" > /tmp/rmdir-fio &
	pid=$!
	# fio takes seconds to start here: remove the cgroup only once its I/O
	# flows (before that, every command is charged to the parent anyway)
	wait_for 60 child_busy || { wait $pid; fail "no I/O in the child cgroup"; return; }
	sleep 2
	rmdir "$CG/rmdir/parent/child" || { wait $pid; fail "rmdir failed"; return; }
	wait $pid || fail "fio failed after the cgroup was removed" || return
	d1=$(nullb_reads); p1=$(cg_stat rmdir/parent /dev/nullb0 rios)
	lost=$(((d1 - d0) - (p1 - p0)))
	echo "reads: null_blk +$((d1 - d0)), parent's io.stat +$((p1 - p0)), so the root got $lost"
	[ $((d1 - d0)) -gt 0 ] || fail "no I/O" || return
	# 0, but for a command that passed the removed-cgroup check just before
	# the rmdir and submitted its bio just after it
	[ "$lost" -le 1 ] || fail "$lost reads after the rmdir were charged to the root"
}

teardown() {
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos"
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	cg_remove rmdir && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 3
run_case "setup" setup
run_case "rest_of_batch_after_rmdir_charged_to_parent" rest_of_batch_to_parent
run_case "teardown" teardown
ktap_finished
