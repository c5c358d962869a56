#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# io.latency: a protected and a noisy namespace on one blk-mq null_blk whose
# requests complete from a timer after 2 ms with only 4 hardware slots.  The
# protected cgroup's target (1 ms) is below the device's service time, so
# every one of its windows misses and blk-iolatency lowers its parent's scale
# cookie; the noisy sibling, which has no target of its own, must then be
# throttled: with blkcg_debug_stats its io.stat shows a queue depth below
# "max".  That can only happen if each namespace's I/O is charged to its
# cgroup (I/O issued from the root is never throttled by io.latency).
#
# Why no target on the noisy cgroup: a sibling with a target is only scaled
# down once it has reported samples of its own (check_scale_change() skips
# groups that did 5 % or less of the I/O), and a group only reports them when
# it misses its own target or the cookie is already lowered when its window
# (16x its target, at most 1 s) ends.  On a slow emulated host that race made
# the noisy one keep depth=max for a whole run.  (Not null_blk's mbps= limit:
# its bandwidth timer can WARN in hrtimer_forward() under emulation.)
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:iolat
RUNTIME=${IOLAT_RUNTIME:-90}
DEBUG_STATS=/sys/module/blk_cgroup/parameters/blkcg_debug_stats

setup() {
	modprobe nvmet_cgroup &&
	nullb_create nullb0 256 irqmode=2 completion_nsec=2000000 hw_queue_depth=4 &&
	echo 1 > "$DEBUG_STATS" &&
	cg_create iolat/protected && cg_create iolat/noisy || return
	io_set iolat/protected io.latency /dev/nullb0 target=1000 || return
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id iolat/protected)" &&
	ns_create "$NQN" 2 /dev/nullb0 cgroup_id="$(cg_id iolat/noisy)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN"
}

# Both run until the noisy cgroup reports a queue depth below "max" in its
# io.stat, for at most RUNTIME seconds (a slow host needs longer before the
# protected cgroup's windows end and the cookie drops, a fast one stops at
# once).
noisy_throttled() {
	local dq dn pq pn line depth= i
	dq=$(host_dev "$NQN" 1) && dn=$(host_dev "$NQN" 2) || return
	# fio itself in the background, so that an interrupt ends it early
	fio --name=noisy --filename="$dn" --rw=randread --bs=64k --direct=1 --ioengine=libaio \
		--iodepth=32 --time_based --runtime="$RUNTIME" --minimal > /tmp/iolat-noisy 2>&1 &
	pn=$!
	fio --name=protected --filename="$dq" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=1 --time_based --runtime="$RUNTIME" --minimal > /tmp/iolat-prot 2>&1 &
	pq=$!
	for ((i = 0; i < RUNTIME * 2; i++)); do
		sleep 0.5
		line=$(grep "^$(devnum /dev/nullb0) " "$CG/iolat/noisy/io.stat")
		depth=$(echo "$line" | sed -n 's/.* depth=\([0-9a-z]*\).*/\1/p')
		[ -z "$depth" ] || [ "$depth" = max ] || break
	done
	echo "after $(((i + 1) / 2)) s: noisy io.stat: $line"
	echo "protected io.stat: $(grep "^$(devnum /dev/nullb0) " "$CG/iolat/protected/io.stat")"
	kill -INT $pn $pq 2>/dev/null
	wait $pn; wait $pq
	[ -n "$depth" ] && [ "$depth" != max ] ||
		fail "the noisy cgroup was never throttled (depth=${depth:-none})"
}

teardown() {
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	echo 0 > "$DEBUG_STATS" &&
	cg_remove iolat && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 3
run_case "setup" setup
run_case "noisy_sibling_throttled_by_io_latency" noisy_throttled
run_case "teardown" teardown
ktap_finished
