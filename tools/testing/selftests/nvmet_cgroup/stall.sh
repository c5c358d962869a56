#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Per-namespace lifetimes: a namespace B with a cgroup on a device that
# completes one request at a time, each after STALL_S, has two reads in
# execution: one on the device, one waiting for its tag (in the transport's
# thread on the fast path, in B's lane with fast_path=0).  Meanwhile
# disabling another namespace A with a cgroup, and a discovery started with
# it, must both return before B's first read completes: then neither waited
# for B's commands.  (An earlier global SRCU, synchronized at every disable,
# made both wait until B's read completed; the SRCU-fast section nvmet
# holds across ->execute now is synchronized only when the module
# unregisters.)
# The criterion is that order, counted on the device (its completed reads
# do not change while A is disabled and the discovery runs), not a time
# limit: under emulation with KASAN a discovery alone has taken 8 s on a
# slow host.  The times are printed, with the same operations without a
# stall for comparison.  Then B's reads complete and A enables again.
# Each connect to B costs one STALL_S too: the host reads the partition
# table.  A and B are in two subsystems, so that the host's reads of A's partition
# table when A changes do not queue behind B on one nvme-tcp queue.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN_A=nqn.2026-11.io.nvmet-cgroup:stall-a
NQN_B=nqn.2026-11.io.nvmet-cgroup:stall-b
NS_A=$NVMET_CFS/subsystems/$NQN_A/namespaces/1
# 15 s: the disable and the discovery, which must both return before B's
# first read completes, took 0.6 and 1.9 s here (8 s for a discovery once,
# on a slow host); each stall is paid about 8 times in the test (the
# partition reads when nullb0 is made and at each connect, two reads a
# round), which took 205 s with 20 s stalls.
STALL_S=15

ms_now() {
	echo $(($(date +%s%N) / 1000000))
}

setup() {
	modprobe nvmet &&
	nullb_create nullb0 64 irqmode=2 completion_nsec=$((STALL_S * 1000000000)) hw_queue_depth=1 &&
	nullb_create nullb1 64 &&
	# null_blk's own request timeout (5 s) would fail B's reads
	echo 120000 > /sys/block/nullb0/queue/io_timeout &&
	cg_create stall/a && cg_create stall/b &&
	subsys_create "$NQN_A" && subsys_create "$NQN_B" && port_create 1 tcp &&
	port_add_subsys 1 "$NQN_A" && port_add_subsys 1 "$NQN_B"
}

# discover_ms: how long a discovery against the target's port takes
discover_ms() {
	local start
	start=$(ms_now)
	timeout 60 nvme discover -t tcp -a "$TCP_ADDR" -s "$TCP_PORT" > /dev/null || return
	echo $(($(ms_now) - start))
}

# disable_ms: how long disabling namespace A takes
disable_ms() {
	local start
	start=$(ms_now)
	echo 0 > "$NS_A/enable" || return
	echo $(($(ms_now) - start))
}

# disable_and_discover: disable A and discover at once; prints both times
disable_and_discover() {
	local d t
	disable_ms > /tmp/stall-disable &
	t=$(discover_ms) || fail "discovery failed" || return
	wait $! && d=$(cat /tmp/stall-disable) || fail "disabling A failed" || return
	echo "$d $t"
}

# reads_done: reads nullb0 (B's device) has completed
reads_done() {
	local r
	read -r r _ < /sys/block/nullb0/stat && echo "$r"
}

# nullb0_busy: a request is on B's device
nullb0_busy() {
	local r w
	read -r r w < /sys/block/nullb0/inflight && [ "$((r + w))" -ge 1 ]
}

# round 1|0: B on the stalling nullb0, A on nullb1, a cgroup each, the
# module loaded with fast_path=1 or 0
round() {
	local mode=$1 dev pid d0 t0 d1 t1 r0 r1
	modprobe nvmet_cgroup fast_path="$mode" &&
	ns_create "$NQN_B" 1 /dev/nullb0 cgroup_id="$(cg_id stall/b)" &&
	ns_create "$NQN_A" 1 /dev/nullb1 cgroup_id="$(cg_id stall/a)" &&
	host_connect tcp "$NQN_B" && host_connect tcp "$NQN_A" &&
	dev=$(host_dev "$NQN_B" 1) || return
	# B's second read waits 2 x STALL_S: up to the host's default 30 s
	echo 120000 > "/sys/block/${dev#/dev/}/queue/io_timeout" || return

	read -r d0 t0 <<< "$(disable_and_discover)" && [ -n "$t0" ] || return
	echo 1 > "$NS_A/enable" || return

	fio --name=stall --filename="$dev" --rw=randread --bs=4k --size=1M \
		--direct=1 --ioengine=libaio --iodepth=2 --number_ios=2 --thread \
		--output-format=terse > /dev/null 2>&1 &
	pid=$!
	wait_for 30 nullb0_busy || fail "B's first read never reached its device" || return
	# the second read reaches the target and waits for the tag
	sleep 1
	r0=$(reads_done)
	read -r d1 t1 <<< "$(disable_and_discover)" && [ -n "$t1" ] || return
	r1=$(reads_done)
	echo "fast_path=$mode: with B stalled, disabling A took $d1 ms and a discovery $t1 ms;" \
	     "without a stall $d0 ms and $t0 ms; B's reads completed meanwhile: $((r1 - r0))"
	[ "$r1" = "$r0" ] ||
		fail "disabling A or the discovery returned only after B's read completed" || return

	# B's reads still complete, and A enables again
	timeout $((3 * STALL_S)) tail --pid=$pid -f /dev/null || fail "B's I/O did not complete" || return
	wait $pid || fail "B's fio failed" || return
	echo 1 > "$NS_A/enable" || fail "A does not enable again"
}

end_round() {
	host_disconnect "$NQN_A" && host_disconnect "$NQN_B" &&
	ns_destroy "$NQN_A" 1 && ns_destroy "$NQN_B" 1 &&
	rmmod nvmet_cgroup
}

teardown() {
	port_destroy 1 && subsys_destroy "$NQN_A" && subsys_destroy "$NQN_B" &&
	cg_remove stall &&
	rmmod nvme_tcp nvmet_tcp && nullb_destroy nullb0 && nullb_destroy nullb1 &&
	rmmod null_blk
}

ktap_print_header
ktap_set_plan 6
run_case "setup" setup
run_case "fast_path_stalled_ns_does_not_delay_other_disable_or_discovery" round 1
run_case "end_round_fast_path" end_round
run_case "exec_context_stalled_ns_does_not_delay_other_disable_or_discovery" round 0
run_case "end_round_exec_context" end_round
run_case "teardown" teardown
ktap_finished
