#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A namespace's cgroup is removed while its lane workers are busy with it:
# everything after the rmdir must be charged to the parent, not to the
# root.  The kernel falls back to the root for a bio whose thread is
# associated with a removed cgroup (bio_associate_blkg() only takes an
# online css).
#
# rest_of_batch: io.cost throttles the namespace so that its workers sleep
# in iocost's throttle with up to 32 commands queued; the rmdir lands while
# they sleep.  A module that kept the association it made before the rmdir
# (a css looked up at enable) would send the rest to the root.  A worker
# whose command slept ends its run, so this case does not reach the
# per-command css_is_dying check.
#
# rest_of_run: that check, reached on purpose.  No io policy (nothing
# sleeps, so a run goes on until its lane is empty).  The test helper module
# nvmet_cgroup_hold (test_modules/) holds every command of the namespace at
# the start of its execution, without sleeping: each lane worker is in the
# middle of a run and the transport queues commands behind them.  No more
# are held from just before the rmdir; after it the held ones go on: their
# runs' next commands must notice the rmdir (a kretprobe on
# nvmet_cgroup_css_is_dying shows that they did) and go to the parent.  The
# held commands passed the check before the rmdir: they, and only they, may
# reach the root.  Without the check the rest of each held run goes to the
# root.
#
# What is compared: every read that reached the null_blk (its own counter)
# against what the parent's io.stat counted (its own I/O and the
# children's, which the kernel folds into it when a child goes).  Nothing
# else uses the null_blk, so reads the parent missed went to the root.
#
# The module is loaded with fast_path=0: io.cost sends rest_of_batch's
# commands to the lanes anyway, and rest_of_run has no policy that would.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:rmdir
NQN_RUN=nqn.2026-11.io.nvmet-cgroup:rmdir-run
RUNTIME=${RMDIR_RUNTIME:-12}
HOLD=/sys/module/nvmet_cgroup_hold/parameters
TRACE=/sys/kernel/debug/tracing
STALE_PROBE='r:nvmet_cgroup_test/stale nvmet_cgroup:nvmet_cgroup_css_is_dying dying=$retval:u8'
STALE_EVENT=$TRACE/events/nvmet_cgroup_test/stale

setup() {
	modprobe nvmet_cgroup fast_path=0 && nullb_create nullb0 256 &&
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

# reads the null_blk completed (field 1 of its stat); nullb0 by default
nullb_reads() {
	awk '{ print $1 }' "/sys/block/${1:-nullb0}/stat"
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

# the null_blk completed no read for a second (the host's scan is over)
nullb_quiet() {
	local before
	before=$(nullb_reads "$1")
	sleep 1
	[ "$(nullb_reads "$1")" = "$before" ]
}

# the namespace of NQN_RUN bound to cgroup rmdir/parent/$1, enabled, the
# host connected to it and done scanning it
run_bind() {
	local ns=$NVMET_CFS/subsystems/$NQN_RUN/namespaces/1 id
	cg_create "rmdir/parent/$1" && id=$(cg_id "rmdir/parent/$1") || return
	if [ ! -d "$ns" ]; then
		# Code is patched only while no command runs (fastpath_lib.sh says
		# why): the helper's kprobe here, before the namespace exists, and
		# the kretprobe when its event is turned on and off around fio.  No
		# kprobe optimization, which would patch later.
		echo 0 > "$TRACE/options/record-cmd" &&
		echo 0 > /proc/sys/debug/kprobes-optimization || return
		# installed by scripts/vm; in a kernel tree, built beside this test
		modprobe -q nvmet_cgroup_hold || insmod test_modules/nvmet_cgroup_hold.ko || return
		echo "$STALE_PROBE" >> "$TRACE/kprobe_events" || fail "cannot add the kretprobe" || return
		echo 'dying == 1' > "$STALE_EVENT/filter" || return
		nullb_create nullb1 256 && subsys_create "$NQN_RUN" &&
		ns_create "$NQN_RUN" 1 /dev/nullb1 cgroup_id="$id" &&
		port_add_subsys 1 "$NQN_RUN" && host_connect loop "$NQN_RUN" || return
	else
		echo 0 > "$ns/enable" && echo "$id" > "$ns/cgroup_id" &&
		echo 1 > "$ns/enable" || return
	fi
	wait_for 30 nullb_quiet nullb1 || fail "the host kept reading the namespace"
}

# one try: the lane workers held mid-run while cgroup rmdir/parent/$1 goes;
# prints "SPANNED LOST HELD"
run_try() {
	local cg=rmdir/parent/$1 dev pid rpid d0 p0 d1 p1 h0 t0 lost spanned held
	dev=$(host_dev "$NQN_RUN" 1) || return
	h0=$(cat "$HOLD/holds") && t0=$(cat "$HOLD/timeouts") || return
	echo > "$TRACE/trace" && echo 1 > "$STALE_EVENT/enable" || return
	d0=$(nullb_reads nullb1); p0=$(cg_stat rmdir/parent /dev/nullb1 rios)
	fio_job "$dev" randread 4k --iodepth=64 --time_based --runtime=8 > /tmp/rmdir-run-fio &
	pid=$!
	wait_for 60 eval '[ "$(cg_stat "$cg" /dev/nullb1 rios)" -ge 200 ]' ||
		{ wait $pid; fail "no I/O in cgroup $cg"; return; }
	echo 1 > "$HOLD/hold" || { wait $pid; return 1; }
	if ! wait_for 10 eval '[ "$(cat "$HOLD/held")" -gt 0 ]'; then
		echo 0 > "$HOLD/hold"; wait $pid
		fail "no command reached nvmet_bdev_execute_rw to be held"; return
	fi
	# commands queue up behind the held ones; then none is held any more
	# (a worker that starts a run after the rmdir looks the css up afresh)
	sleep 0.5
	echo 2 > "$HOLD/hold" && sleep 0.2 || { echo 0 > "$HOLD/hold"; wait $pid; return 1; }
	rmdir "$CG/$cg" &
	rpid=$!
	wait_for 3 eval '[ ! -d "$CG/$cg" ]'
	echo 0 > "$HOLD/hold"
	wait $rpid || { wait $pid; fail "rmdir $cg failed"; return; }
	[ "$(cat "$HOLD/timeouts")" = "$t0" ] ||
		{ wait $pid; fail "the hold timed out: the rmdir waited for the held workers"; return; }
	wait $pid || fail "fio failed after the cgroup was removed" || return
	echo 0 > "$STALE_EVENT/enable"
	spanned=$(grep -c ' stale: ' "$TRACE/trace")
	held=$(($(cat "$HOLD/holds") - h0))
	d1=$(nullb_reads nullb1); p1=$(cg_stat rmdir/parent /dev/nullb1 rios)
	lost=$(((d1 - d0) - (p1 - p0)))
	echo "try $1: $held commands held; reads: null_blk +$((d1 - d0))," \
		"parent's io.stat +$((p1 - p0)), root $lost;" \
		"runs that went on after the rmdir (css_is_dying true): $spanned" >&2
	echo "$spanned $lost $held"
}

rest_of_run_to_parent() {
	local i r spanned lost held
	for i in 1 2 3; do
		run_bind "run$i" && r=$(run_try "run$i") || return
		read -r spanned lost held <<< "$r"
		[ "$spanned" -ge 1 ] || continue
		[ "$lost" -le "$held" ] ||
			fail "$((lost - held)) reads after the rmdir besides the held ones were charged to the root"
		return
	done
	fail "in 3 tries, no held run went on after the rmdir"
}

teardown() {
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos"
	# (not connected if the case failed before it connected)
	[ -d "$NVMET_CFS/subsystems/$NQN_RUN" ] && host_disconnect "$NQN_RUN"
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	subsys_destroy "$NQN_RUN" && nullb_destroy nullb1 || return
	if grep -q nvmet_cgroup_test/stale "$TRACE/kprobe_events"; then
		echo 0 > "$STALE_EVENT/enable" &&
		echo '-:nvmet_cgroup_test/stale' >> "$TRACE/kprobe_events" || return
	fi
	if [ -d /sys/module/nvmet_cgroup_hold ]; then
		rmmod nvmet_cgroup_hold || return
	fi
	cg_remove rmdir && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 4
run_case "setup" setup
run_case "rest_of_batch_after_rmdir_charged_to_parent" rest_of_batch_to_parent
run_case "rest_of_run_after_rmdir_charged_to_parent" rest_of_run_to_parent
run_case "teardown" teardown
ktap_finished
