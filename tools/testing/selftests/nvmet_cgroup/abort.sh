#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A heavily throttled namespace (io.max riops=50) with commands queued when
# the host disconnects: the disconnect returns within 30 s, the commands
# complete, and the namespace can be disabled and enabled again and serve I/O.
cd "$(dirname "$0")" || exit 1
. ./ktap.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:abort

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 256 && cg_create abort &&
	echo "$(devnum /dev/nullb0) riops=50" > "$CG/abort/io.max" &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id abort)" &&
	port_create 1 tcp && port_add_subsys 1 "$NQN" && host_connect tcp "$NQN"
}

disconnect_with_queued_commands() {
	local dev pid start took
	dev=$(host_dev "$NQN" 1) || return
	# --thread: one process, so that killing it ends the job too
	fio --name=q --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=64 --time_based --runtime=120 --thread --minimal > /dev/null 2>&1 &
	pid=$!
	sleep 3
	start=$SECONDS
	timeout 30 nvme disconnect -n "$NQN" || fail "disconnect failed or took over 30 s" || return
	took=$((SECONDS - start))
	# fio itself may spin on the vanished device; what matters is that no
	# I/O is stuck in the kernel: then it exits when killed.
	kill -KILL $pid 2>/dev/null
	timeout 10 tail --pid=$pid -f /dev/null || fail "fio is stuck in the kernel after the disconnect" || return
	wait $pid
	echo "disconnect took ${took}s; fio exited"
}

disable_enable_again() {
	local dev
	timeout 30 bash -c "echo 0 > $NVMET_CFS/subsystems/$NQN/namespaces/1/enable" ||
		fail "disable hung" || return
	echo 1 > "$NVMET_CFS/subsystems/$NQN/namespaces/1/enable" || return
	echo "$(devnum /dev/nullb0) riops=max" > "$CG/abort/io.max" &&
	host_connect tcp "$NQN" && dev=$(host_dev "$NQN" 1) && fio_verify "$dev"
}

teardown() {
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	cg_remove abort && rmmod nvmet_cgroup nvme_tcp nvmet_tcp &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_begin 4
ktap_step "setup" setup
ktap_step "disconnect_with_throttled_queue_returns" disconnect_with_queued_commands
ktap_step "disable_and_enable_again_serves_io" disable_enable_again
ktap_step "teardown" teardown
ktap_end
