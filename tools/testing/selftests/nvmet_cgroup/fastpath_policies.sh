#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The fast path under io.max and io.latency, configured while the namespaces
# are live: io.max keeps a bdev namespace in the transport's thread
# (blk-throttle queues bios, it does not sleep the submitter) but moves a
# file namespace to the execution context (ext4 may wait for a throttled bio
# in the caller); io.latency moves the namespaces on its device, and back
# once its last target is removed.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./fastpath_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:fastpath-policies

# io.max (limits far above the guest's rates) on both devices
iomax_keeps_bdev_inline_moves_file() {
	local d
	for d in nullb0:bdev nullb1:file; do
		io_set "fastpath/${d#*:}" io.max "/dev/${d%%:*}" "riops=1000000 wiops=1000000" ||
			return
	done
	fp_expect "$NQN" 1 inline "bdev, io.max on nullb0" &&
	fp_expect "$NQN" 2 context "file, io.max on nullb1"
}

# io.latency on nullb0: namespace 1 moves to the context
iolatency_moves_bdev_to_the_context() {
	io_set fastpath/bdev io.latency /dev/nullb0 target=100000 || return
	fp_expect "$NQN" 1 context "bdev, io.latency on nullb0"
}

# the latency target removed: iolatency stops throttling once its enable
# work (queued by the write) has cleared the queue's BIO_ISSUE_TIME flag,
# and namespace 1 is back inline
iolatency_removed_runs_inline() {
	local state=/sys/kernel/debug/block/nullb0/state
	grep -q BIO_ISSUE_TIME "$state" || fail "no BIO_ISSUE_TIME in $state: $(cat "$state")" || return
	io_set fastpath/bdev io.latency /dev/nullb0 target=max || return
	wait_for 10 eval "! grep -q BIO_ISSUE_TIME $state" ||
		fail "io.latency still enabled on nullb0: $(cat "$state")" || return
	fp_expect "$NQN" 1 inline "bdev, io.latency target removed on nullb0"
}

ktap_print_header
ktap_set_plan 5
run_case "setup" fp_setup "$NQN"
run_case "iomax_keeps_bdev_inline_moves_file" iomax_keeps_bdev_inline_moves_file
run_case "iolatency_moves_bdev_to_the_context" iolatency_moves_bdev_to_the_context
run_case "iolatency_removed_runs_inline" iolatency_removed_runs_inline
run_case "teardown" fp_teardown "$NQN"
ktap_finished
