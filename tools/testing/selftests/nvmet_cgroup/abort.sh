#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A heavily throttled namespace (io.max riops=50) with commands queued when
# the host disconnects: the disconnect returns within 30 s, the commands
# complete, and the namespace can be disabled and enabled again and serve I/O.
# io.max on a bdev namespace runs on the fast path, so those commands wait in
# blk-throttle, never in the execution context.  The last cases reload the
# module with fast_path=0 and export a device that completes one request per
# 0.5 s with one tag: the lane's worker waits for the tag, the commands
# behind it stay in the lane, and a host controller reset must find them
# there when it deletes the queues and complete them with ABORT_QUEUE
# (counted by a kprobe on the glue's nvmet_cgroup_req_abort), none lost (the
# disable after it returns) and none completed twice (the console check).
# Each case runs over each of NVMET_LONG_TRANSPORTS (loop, tcp, rdma, fc).
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:abort

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 256 && cg_create abort &&
	io_set abort io.max /dev/nullb0 riops=50 &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id abort)" &&
	ports_create "$NVMET_LONG_TRANSPORTS" "$NQN"
}

disconnect_with_queued_commands() {	# TRANSPORT
	local dev pid
	io_set abort io.max /dev/nullb0 riops=50 &&
	host_connect "$1" "$NQN" && dev=$(host_dev "$NQN" 1) || return
	# --thread: one process, so that killing it ends the job too
	fio --name=q --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=64 --time_based --runtime=120 --thread --minimal > /dev/null 2>&1 &
	pid=$!
	sleep 3
	disconnect_with_fio "$NQN" $pid || return
	# reap it: killed, its status is 137
	wait $pid || true
}

disable_enable_again() {	# TRANSPORT
	local dev
	timeout 30 bash -c "echo 0 > $NVMET_CFS/subsystems/$NQN/namespaces/1/enable" ||
		fail "disable hung" || return
	echo 1 > "$NVMET_CFS/subsystems/$NQN/namespaces/1/enable" || return
	io_set abort io.max /dev/nullb0 riops=max &&
	host_connect "$1" "$NQN" && dev=$(host_dev "$NQN" 1) && fio_verify "$dev" &&
	host_disconnect "$NQN"
}

TRACE=/sys/kernel/debug/tracing
ABORT_PROBE='p:nvmet_cgroup_test/abort nvmet_cgroup:nvmet_cgroup_req_abort'
ABORT_EVENT=$TRACE/events/nvmet_cgroup_test/abort

# namespace 2 on the slow device, through the lanes only
lanes_setup() {
	local ns=$NVMET_CFS/subsystems/$NQN/namespaces/1
	echo 0 > "$ns/enable" &&
	rmmod nvmet_cgroup && modprobe nvmet_cgroup fast_path=0 &&
	echo 1 > "$ns/enable" &&
	nullb_create nullb1 64 irqmode=2 completion_nsec=500000000 hw_queue_depth=1 &&
	ns_create "$NQN" 2 /dev/nullb1 cgroup_id="$(cg_id abort)" || return
	echo 0 > "$TRACE/options/record-cmd" &&
	echo 0 > /proc/sys/debug/kprobes-optimization &&
	echo "$ABORT_PROBE" >> "$TRACE/kprobe_events" || fail "cannot add the kprobe"
}

# The host's controller reset: the host cancels its commands and shuts the
# sockets down at once, so the target deletes the queues with commands still
# in the lane.  (nvme disconnect would not do: it removes the namespaces
# first, which waits for every command to complete normally.)
# queued_behind HOSTDISK: nullb1 holds a command and the host has 16 or
# more outstanding on HOSTDISK
queued_behind() {
	local r w
	read -r r w < /sys/block/nullb1/inflight && [ "$((r + w))" -ge 1 ] &&
	read -r r w < "/sys/block/$1/inflight" && [ "$((r + w))" -ge 16 ]
}

queued_in_the_context_aborted() {	# TRANSPORT
	local dev ctrl pid start aborts rc=0 ns2=$NVMET_CFS/subsystems/$NQN/namespaces/2
	# the previous transport's case ended with namespace 2 disabled
	[ "$(cat "$ns2/enable")" = 1 ] || echo 1 > "$ns2/enable" || return
	# A keep-alive timeout of 60 s, not 5: with commands completing two a
	# second, the host sends no keep-alive (traffic-based) and the target
	# hears a command only when one completes, so a guest that stalls for
	# 5 s (its clock follows the host's, which was seen twice as slow on
	# 2026-12-06) has the target tear the controller down before the reset
	# this case is about (seen over loop: "keep-alive timer (5 seconds)
	# expired!", the host's controller removed, the reset ENETRESET).
	host_connect "$1" "$NQN" --keep-alive-tmo=60 && dev=$(host_dev "$NQN" 2) || return
	ctrl=${dev#/dev/}; ctrl=${ctrl%n*}
	echo > "$TRACE/trace" && echo 1 > "$ABORT_EVENT/enable" || return
	fio --name=q --filename="$dev" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=32 --time_based --runtime=120 --thread --minimal > /dev/null 2>&1 &
	pid=$!
	# Reset only once commands wait in the lane: one on the device and at
	# least 16 more outstanding at the host.  (A fixed sleep was not enough
	# on a slow host: fio had not issued yet, the reset found nothing.)
	wait_for 60 queued_behind "${dev#/dev/}" ||
		fail "fio's commands never queued behind nullb1's one tag" || return
	echo "before the reset: host inflight $(cat "/sys/block/${dev#/dev/}/inflight" | xargs)," \
	     "nullb1 inflight $(cat /sys/block/nullb1/inflight | xargs)"
	start=$SECONDS
	# A failed reset fails the case, after the cleanup below.  ENETRESET is
	# not a failure: the reset ran, and its first reconnect did not make the
	# controller live (nvme_reset_ctrl_sync(); seen over fc on 2026-12-05,
	# the new association's Connect aborted while nvmet-fc deleted the old
	# one), so the host reconnects on its own, and must do so within 60 s.
	if ! err=$({ echo 1 > "/sys/class/nvme/$ctrl/reset_controller"; } 2>&1); then
		case "$err" in
		*"Network dropped connection on reset"*)
			echo "the reset returned ENETRESET: $ctrl not live at once, reconnecting" ;;
		*) fail "cannot reset $ctrl: $err"; rc=1 ;;
		esac
	fi
	if [ "$rc" = 0 ]; then
		if wait_for 60 grep -qx live "/sys/class/nvme/$ctrl/state"; then
			echo "$ctrl live again $((SECONDS - start)) s after the reset"
		else
			fail "$ctrl not live again 60 s after the reset"
			rc=1
		fi
	fi
	kill -KILL $pid 2>/dev/null
	timeout 30 tail --pid=$pid -f /dev/null || fail "fio is stuck in the kernel after the reset" || return
	wait $pid
	echo 0 > "$ABORT_EVENT/enable"
	aborts=$(grep -c ' abort: ' "$TRACE/trace")
	echo "commands completed with ABORT_QUEUE from the lane: $aborts"
	host_disconnect "$NQN" || return
	# every command is back: the namespace's references all dropped
	timeout 30 bash -c "echo 0 > $NVMET_CFS/subsystems/$NQN/namespaces/2/enable" ||
		fail "disable hung: a command was never completed" || return
	[ "$aborts" -gt 0 ] || fail "the lane never aborted a queued command" || return
	return "$rc"
}

teardown() {
	echo '-:nvmet_cgroup_test/abort' >> "$TRACE/kprobe_events"
	# the last case disconnected already, unless it failed early
	nvme disconnect -n "$NQN" > /dev/null 2>&1
	ports_destroy "$NVMET_LONG_TRANSPORTS" && subsys_destroy "$NQN" &&
	cg_remove abort && rmmod nvmet_cgroup &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && rmmod null_blk
}

ktap_print_header
read -ra trs <<< "$NVMET_LONG_TRANSPORTS"
ktap_set_plan $((3 + 3 * ${#trs[@]}))
run_case "setup" setup
for tr in "${trs[@]}"; do
	run_case "${tr}_disconnect_with_throttled_queue_returns" disconnect_with_queued_commands "$tr"
	run_case "${tr}_disable_and_enable_again_serves_io" disable_enable_again "$tr"
done
run_case "setup_lanes_only_and_a_one_tag_device" lanes_setup
for tr in "${trs[@]}"; do
	run_case "${tr}_commands_queued_in_the_context_aborted_on_reset" queued_in_the_context_aborted "$tr"
done
run_case "teardown" teardown
ktap_finished
