#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# css freshness: a namespace's cgroup changes while its lane workers are
# busy with it, and the commands after the change must be charged to the
# cgroup's effective io css as it is now, as v12 (which looks it up per
# command) does.  Three changes: the cgroup is removed (everything after
# the rmdir goes to the parent, not to the root: the kernel sends a bio
# whose thread is associated with a removed cgroup to the root, since
# bio_associate_blkg() only takes an online css); io is enabled in the
# parent's subtree (the cgroup gets an io css of its own, which must be
# charged from then on, not the parent's); io is disabled there again (its
# css dies: back to the parent, not to the root).
#
# rest_of_batch: io.cost throttles the namespace so that its workers sleep
# in iocost's throttle with up to 32 commands queued; the rmdir lands while
# they sleep.  A module that kept the association it made before the rmdir
# (a css looked up at enable) would send the rest to the root.  A worker
# whose command slept ends its run, so this case does not reach the
# per-command css_is_dying check.
#
# rest_of_run: the per-command check, reached on purpose.  No io policy (nothing
# sleeps, so a run goes on until its lane is empty).  The test helper module
# nvmet_cgroup_hold (test_modules/) holds every command of the namespace at
# the start of its execution, without sleeping: each lane worker is in the
# middle of a run and the transport queues commands behind them.  No more
# are held from just before the change; after it the held ones go on: their
# runs' next commands must notice the change (a kretprobe on
# nvmet_cgroup_e_io_css_is returning false shows that they did) and go to
# the new effective css.  The held commands passed the check before the
# change: they, and only they, may be charged to the old css (the root's,
# after an rmdir).  Without the check the rest of each held run goes there:
# the rmdir and the io disable were caught by a css_is_dying check before
# 2026-12-05, the io enable was not (the parent's css lives on).
#
# What is compared: every read that reached the null_blk (its own counter)
# against what the cgroup that must be charged counted in its io.stat: the
# parent after an rmdir or an io disable (its own I/O and the children's,
# which the kernel folds into it), the cgroup itself after an io enable.
# Nothing else uses the null_blk, so reads missing there went elsewhere.
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
# rest_of_run: how long the change may take while the workers are held, and
# the helper's longest hold, well beyond it and what comes before the change
CHANGE_S=10
MAX_HOLD_MS=25000
HOLD=/sys/module/nvmet_cgroup_hold/parameters
TRACE=/sys/kernel/debug/tracing
STALE_PROBE='r:nvmet_cgroup_test/stale nvmet_cgroup:nvmet_cgroup_e_io_css_is current=$retval:u8'
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

# run_bind CGROUP [NOIO]: the namespace of NQN_RUN bound to cgroup CGROUP
# (made, under rmdir/; with NOIO, io is then disabled in its parent's
# subtree, so that its effective io css is the parent's), enabled, the host
# connected to it and done scanning it
run_bind() {
	local ns=$NVMET_CFS/subsystems/$NQN_RUN/namespaces/1 id
	cg_create "rmdir/$1" && id=$(cg_id "rmdir/$1") || return
	if [ -n "${2:-}" ]; then
		echo -io > "$CG/rmdir/${1%/*}/cgroup.subtree_control" || return
	fi
	if [ ! -d "$ns" ]; then
		# Code is patched only while no command runs (fastpath_lib.sh says
		# why): the helper's kprobe here, before the namespace exists, and
		# the kretprobe when its event is turned on and off around fio.  No
		# kprobe optimization, which would patch later.
		echo 0 > "$TRACE/options/record-cmd" &&
		echo 0 > /proc/sys/debug/kprobes-optimization || return
		# installed by scripts/vm; in a kernel tree, built beside this test
		modprobe -q nvmet_cgroup_hold || insmod test_modules/nvmet_cgroup_hold.ko || return
		echo "$MAX_HOLD_MS" > "$HOLD/max_hold_ms" || return
		echo "$STALE_PROBE" >> "$TRACE/kprobe_events" || fail "cannot add the kretprobe" || return
		echo 'current == 0' > "$STALE_EVENT/filter" || return
		nullb_create nullb1 256 && subsys_create "$NQN_RUN" &&
		ns_create "$NQN_RUN" 1 /dev/nullb1 cgroup_id="$id" &&
		port_add_subsys 1 "$NQN_RUN" && host_connect loop "$NQN_RUN" || return
	else
		echo 0 > "$ns/enable" && echo "$id" > "$ns/cgroup_id" &&
		echo 1 > "$ns/enable" || return
	fi
	wait_for 30 nullb_quiet nullb1 || fail "the host kept reading the namespace"
}

# run_try COUNTED CHANGE...: one try: the lane workers held mid-run while
# the command CHANGE changes the effective io css of the namespace's
# cgroup; every read from just before the change on must be charged to
# cgroup rmdir/COUNTED (by its io.stat).  Prints "SPANNED MISSED HELD":
# runs that went on after the change and saw it (the kretprobe), the reads
# after the change that COUNTED missed, and the commands held (which passed
# the check before the change, so may go to the old css).
run_try() {
	local counted=rmdir/$1 dev pid cpid d0 dt st d1 s1 h0 t0 end missed spanned held
	shift
	dev=$(host_dev "$NQN_RUN" 1) || return
	h0=$(cat "$HOLD/holds") && t0=$(cat "$HOLD/timeouts") || return
	echo > "$TRACE/trace" && echo 1 > "$STALE_EVENT/enable" || return
	d0=$(nullb_reads nullb1)
	fio_job "$dev" randread 4k --iodepth=64 --time_based --runtime=8 > /tmp/rmdir-run-fio &
	pid=$!
	wait_for 60 eval '[ "$(nullb_reads nullb1)" -ge $((d0 + 200)) ]' ||
		{ wait $pid; fail "no I/O on the namespace"; return; }
	echo 1 > "$HOLD/hold" || { wait $pid; return 1; }
	if ! wait_for 10 eval '[ "$(cat "$HOLD/held")" -gt 0 ]'; then
		echo 0 > "$HOLD/hold"; wait $pid
		fail "no command reached nvmet_bdev_execute_rw to be held"; return
	fi
	# commands queue up behind the held ones; then none is held any more
	# (a worker that starts a run after the change looks the css up afresh)
	sleep 0.5
	echo 2 > "$HOLD/hold" && sleep 0.2 || { echo 0 > "$HOLD/hold"; wait $pid; return 1; }
	# nothing is submitted meanwhile: every worker is held
	dt=$(nullb_reads nullb1); st=$(cg_stat "$counted" /dev/nullb1 rios)
	"$@" &
	cpid=$!
	# The change completes while the workers are held: it waits for none of
	# them.  Under emulation it has taken over 3 s by itself, with the held
	# workers spinning on every CPU (at the lowest priority).
	end=$((SECONDS + CHANGE_S))
	while kill -0 $cpid 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do
		sleep 0.1
	done
	if kill -0 $cpid 2>/dev/null; then
		echo 0 > "$HOLD/hold"; wait $cpid; wait $pid
		fail "the change waited for the held workers (over $CHANGE_S s)"; return
	fi
	echo 0 > "$HOLD/hold"
	wait $cpid || { wait $pid; fail "$* failed"; return; }
	[ "$(cat "$HOLD/timeouts")" = "$t0" ] ||
		{ wait $pid; fail "a hold ran into max_hold_ms before the case released it"; return; }
	wait $pid || fail "fio failed after the change" || return
	echo 0 > "$STALE_EVENT/enable"
	spanned=$(grep -c ' stale: ' "$TRACE/trace")
	held=$(($(cat "$HOLD/holds") - h0))
	d1=$(nullb_reads nullb1); s1=$(cg_stat "$counted" /dev/nullb1 rios)
	missed=$(((d1 - dt) - (s1 - st)))
	echo "$*: $held commands held; reads after it: null_blk +$((d1 - dt))," \
		"$counted's io.stat +$((s1 - st)), missed $missed;" \
		"runs that went on after it (a css check false): $spanned" >&2
	echo "$spanned $missed $held"
}

# rest_of_run COUNTED PARENT [noio] CHANGE...: up to 3 tries, each with a
# new cgroup rmdir/PARENT/runN (run_bind; noio: without io enabled in
# PARENT's subtree), until a held run goes on after the change; in it, at
# most the held commands may miss COUNTED.  In COUNTED and CHANGE, @
# stands for the try's cgroup (PARENT/runN).
rest_of_run() {
	local counted=$1 parent=$2 noio= i r spanned missed held cg
	shift 2
	[ "$1" != noio ] || { noio=1; shift; }
	for i in 1 2 3; do
		cg=$parent/run$i
		run_bind "$cg" $noio || return
		r=$(run_try "${counted//@/$cg}" "${@//@/$cg}") || return
		read -r spanned missed held <<< "$r"
		[ "$missed" -le "$held" ] ||
			fail "$((missed - held)) reads after the change besides the held ones were charged elsewhere" ||
			return
		[ "$spanned" -ge 1 ] && return
	done
	fail "in 3 tries, no held run went on after the change"
}

rest_of_run_to_parent() {
	rest_of_run parent parent rmdir "$CG/rmdir/@"
}

# io enabled in the parent's subtree: the cgroup's own new css, not the parent's
rest_of_run_to_new_css() {
	rest_of_run @ plus noio sh -c "echo +io > $CG/rmdir/plus/cgroup.subtree_control"
}

# io disabled there again: the cgroup's css dies, back to the parent
rest_of_run_back_to_parent() {
	rest_of_run minus minus sh -c "echo -io > $CG/rmdir/minus/cgroup.subtree_control"
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
ktap_set_plan 6
run_case "setup" setup
run_case "rest_of_batch_after_rmdir_charged_to_parent" rest_of_batch_to_parent
run_case "rest_of_run_after_rmdir_charged_to_parent" rest_of_run_to_parent
run_case "rest_of_run_after_io_enabled_above_charged_to_the_new_css" rest_of_run_to_new_css
run_case "rest_of_run_after_io_disabled_above_charged_to_parent" rest_of_run_back_to_parent
run_case "teardown" teardown
ktap_finished
