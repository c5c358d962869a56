#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The fast path: while a namespace's device has no io.cost or io.latency,
# its reads and writes run in the transport's thread (no work item queued on
# the module's workqueue) and are still charged; Flush of a file namespace
# still goes to the execution context; enabling io.cost on the device later
# moves that namespace's commands to the execution context, and only its.
# Where commands run is read from the workqueue_queue_work trace event.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:fastpath
MNT=/mnt/fastpath
TRACE=/sys/kernel/debug/tracing
EVENT=$TRACE/events/workqueue/workqueue_queue_work
N=1024

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 256 && nullb_create nullb1 256 &&
	mkfs.ext4 -q -F -b 4096 /dev/nullb1 && mkdir -p "$MNT" &&
	mount -o noatime /dev/nullb1 "$MNT" && fallocate -l 64M "$MNT/ns.img" &&
	cg_create fastpath/bdev && cg_create fastpath/file &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id fastpath/bdev)" &&
	ns_create "$NQN" 2 "$MNT/ns.img" cgroup_id="$(cg_id fastpath/file)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN" &&
	echo 'workqueue == "nvmet_cgroup"' > "$EVENT/filter" &&
	echo 8192 > "$TRACE/buffer_size_kb"
}

# Runs "$@" and prints how many work items it queued on the module's queue.
lane_wakeups() {
	echo > "$TRACE/trace" && echo 1 > "$EVENT/enable" || return
	"$@" >/dev/null
	local st=$?
	echo 0 > "$EVENT/enable"
	[ $st = 0 ] || { echo "command failed: $*" >&2; return 1; }
	# grep -c prints 0 but fails when nothing matched
	grep -c 'workqueue_queue_work:' "$TRACE/trace" || :
}

# $N random 4k writes then reads of the same blocks at queue depth 32 (ext4
# reads an unwritten extent without I/O)
rw_job() {
	fio_job "$1" randwrite 4k --size=$((N * 4096)) && fio_job "$1" randread 4k --size=$((N * 4096))
}

# Prints the namespace's cgroup's rios/wios on DEV.
ios() {
	echo "$(cg_stat "$1" "$2" rios) $(cg_stat "$1" "$2" wios)"
}

# the bdev and the file namespace: no work item, and every I/O charged
no_policy_runs_inline_and_charges() {
	local ns cg dev before after wakeups
	for ns in 1:bdev:nullb0 2:file:nullb1; do
		IFS=: read -r ns cg dev <<< "$ns"
		before=$(ios "fastpath/$cg" "/dev/$dev")
		wakeups=$(lane_wakeups rw_job "$(host_dev "$NQN" "$ns")") || return
		after=$(ios "fastpath/$cg" "/dev/$dev")
		echo "$cg namespace: $wakeups work items for $N writes + $N reads; io.stat rios/wios $before -> $after"
		[ "$wakeups" = 0 ] || fail "$cg namespace: commands went through the workqueue" || return
		set -- $before $after
		[ $(($3 - $1)) -ge $N ] && [ $(($4 - $2)) -ge $N ] ||
			fail "$cg namespace: I/O on the fast path was not charged" || return
	done
}

# the file backend defers Flush to a work item: it must run in the context
flush_of_file_goes_to_the_context() {
	local wakeups
	wakeups=$(lane_wakeups nvme flush "$(host_dev "$NQN" 2)" -n 2) || return
	echo "nvme flush on the file namespace: $wakeups work items"
	[ "$wakeups" -ge 1 ] || fail "Flush did not go to the execution context"
}

# io.cost on nullb0, enabled under live namespaces (a model that does not
# limit): namespace 1 moves to its lanes, namespace 2 (on nullb1) does not
iocost_enabled_later_moves_to_the_context() {
	local d w1 w2
	d=$(devnum /dev/nullb0) || return
	# qos before model: see iocost.sh
	echo "$d enable=1 ctrl=user min=100.00 max=100.00" > "$CG/io.cost.qos" &&
	echo "$d ctrl=user model=linear rbps=4294967296 rseqiops=1000000 rrandiops=1000000 wbps=4294967296 wseqiops=1000000 wrandiops=1000000" \
		> "$CG/io.cost.model" || return
	w1=$(lane_wakeups rw_job "$(host_dev "$NQN" 1)") &&
	w2=$(lane_wakeups rw_job "$(host_dev "$NQN" 2)") || return
	echo "with io.cost on nullb0: namespace 1 (nullb0) $w1 work items, namespace 2 (file on nullb1) $w2"
	[ "$w1" -ge 1 ] || fail "namespace 1 still runs inline under io.cost" || return
	[ "$w2" = 0 ] || fail "namespace 2 left the fast path for another device's policy"
}

teardown() {
	echo 0 > "$EVENT/filter"
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" &&
	umount "$MNT" && cg_remove fastpath && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && rmmod null_blk
}

ktap_begin 5
ktap_step "setup" setup
ktap_step "no_policy_runs_inline_and_charges" no_policy_runs_inline_and_charges
ktap_step "flush_of_file_goes_to_the_context" flush_of_file_goes_to_the_context
ktap_step "iocost_enabled_later_moves_to_the_context" iocost_enabled_later_moves_to_the_context
ktap_step "teardown" teardown
ktap_end
