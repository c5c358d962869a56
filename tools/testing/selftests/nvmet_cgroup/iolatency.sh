#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# io.latency: a protected and a noisy namespace on one blk-mq null_blk whose
# requests complete from a timer after 0.5 ms with only 4 hardware slots, so
# the protected one queues behind the noisy one.  (Not null_blk's mbps= limit:
# its bandwidth timer can WARN in hrtimer_forward() under emulation.)  When the noisy one's I/O makes the protected one miss its
# target, blk-iolatency must throttle the noisy cgroup: with blkcg_debug_stats
# its io.stat shows a queue depth below "max".  That can only happen if the
# namespaces' I/O is charged to their cgroups.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:iolat
RUNTIME=${IOLAT_RUNTIME:-12}
DEBUG_STATS=/sys/module/blk_cgroup/parameters/blkcg_debug_stats

setup() {
	local d
	modprobe nvmet_cgroup &&
	nullb_create nullb0 256 irqmode=2 completion_nsec=500000 hw_queue_depth=4 &&
	echo 1 > "$DEBUG_STATS" &&
	cg_create iolat/protected && cg_create iolat/noisy || return
	d=$(devnum /dev/nullb0)
	echo "$d target=1000" > "$CG/iolat/protected/io.latency" &&
	echo "$d target=500000" > "$CG/iolat/noisy/io.latency" || return
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id iolat/protected)" &&
	ns_create "$NQN" 2 /dev/nullb0 cgroup_id="$(cg_id iolat/noisy)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN"
}

# the smallest "depth=" the noisy cgroup reports while both run
noisy_throttled() {
	local dq dn pq pn i line depth min=max
	dq=$(host_dev "$NQN" 1) && dn=$(host_dev "$NQN" 2) || return
	fio_job "$dn" randread 64k --time_based --runtime="$RUNTIME" > /tmp/iolat-noisy &
	pn=$!
	fio_job "$dq" randread 4k --iodepth=1 --time_based --runtime="$RUNTIME" > /tmp/iolat-prot &
	pq=$!
	for ((i = 0; i < RUNTIME * 2; i++)); do
		sleep 0.5
		line=$(grep "^$(devnum /dev/nullb0) " "$CG/iolat/noisy/io.stat")
		depth=$(echo "$line" | sed -n 's/.* depth=\([0-9a-z]*\).*/\1/p')
		if [ -n "$depth" ] && [ "$depth" != max ]; then
			if [ "$min" = max ] || [ "$depth" -lt "$min" ]; then
				min=$depth
			fi
		fi
	done
	wait $pn && wait $pq || fail "fio failed" || return
	echo "noisy: $(cut -d' ' -f1 /tmp/iolat-noisy) IOPS, protected: $(cut -d' ' -f1 /tmp/iolat-prot) IOPS"
	echo "protected io.stat: $(grep "^$(devnum /dev/nullb0) " "$CG/iolat/protected/io.stat")"
	echo "noisy io.stat: $line"
	echo "smallest noisy depth: $min"
	[ "$min" != max ] || fail "the noisy cgroup was never throttled"
}

teardown() {
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	echo 0 > "$DEBUG_STATS" &&
	cg_remove iolat && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_begin 3
ktap_step "setup" setup
ktap_step "noisy_sibling_throttled_by_io_latency" noisy_throttled
ktap_step "teardown" teardown
ktap_end
