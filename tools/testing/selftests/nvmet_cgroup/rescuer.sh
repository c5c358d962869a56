#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The workqueue's rescuer serves every namespace.  When memory pressure keeps
# the pool from creating workers, the module's one rescuer runs the lanes'
# work items, and a lane whose commands sleep in io.cost must not keep it
# from the other namespaces.
# NR_A namespaces on nullb0 share a cgroup that io.cost holds to A_IOPS; B
# on nullb1 has a cgroup and no policy; the module is loaded with
# fast_path=0 so that every command runs in a lane.  B reads throughout.
# kthreadd is made to fail every slab allocation (failslab, task-filter), so
# no kworker can be created; then A's readers start.  A worker that starts
# one of A's lanes stays in it, asleep in io.cost, for as long as A's reader
# keeps it full, so A's lanes, more than the pool has workers, take every
# worker, and B's lane is left to the rescuer.  B must complete at least
# MIN_B reads in the next WINDOW_S seconds while the rescuer is seen to run.
# The case fails, rather than passing vacuously, if the rescuer did not run.
#
# It reproduces an open defect (issue #11, the rescuer item) and fails today:
# on 2026-12-02 B completed 0 reads in 8 s.  A workqueue trace of that
# window: 16 work items queued on the module's queue, nvme-loop's 380
# command works run by unbound kworkers, 11 work items of any queue started
# by high-priority kworkers, 2 by a "kworker/R-nvmet" rescuer (the module's
# or nvmet's: the trace cuts the name) and 12 by kblockd's, which shares the
# module's per-CPU pools.  Workers that ran their lane one command per
# rescuer turn gave the same 0.  It is not in
# TEST_PROGS until the defect is fixed.  Run it alone:
#   scripts/check rescuer.sh
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-12.io.nvmet-cgroup:rescuer
# B behind a controller of its own: A's readers hold every tag of theirs
NQN_B=nqn.2026-12.io.nvmet-cgroup:rescuer-b
FAILSLAB=/sys/kernel/debug/failslab
A_IOPS=40
NR_A=8
WINDOW_S=8
MIN_B=5

setup() {
	modprobe nvmet_cgroup fast_path=0 && nullb_create nullb0 256 && nullb_create nullb1 64 &&
	cg_create rescuer/a && cg_create rescuer/b && iocost_enable /dev/nullb0 "$A_IOPS" &&
	subsys_create "$NQN" || return
	for ((ns = 1; ns <= NR_A; ns++)); do
		ns_create "$NQN" "$ns" /dev/nullb0 cgroup_id="$(cg_id rescuer/a)" || return
	done
	subsys_create "$NQN_B" && ns_create "$NQN_B" 1 /dev/nullb1 cgroup_id="$(cg_id rescuer/b)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && port_add_subsys 1 "$NQN_B" &&
	host_connect loop "$NQN" && host_connect loop "$NQN_B"
}

# rescuer_pid: the module's queue's rescuer ("kworker/R-nvmet_cgroup")
rescuer_pid() {
	local c
	for c in /proc/[0-9]*/comm; do
		[ "$(cat "$c" 2>/dev/null)" = "kworker/R-nvmet_cgroup" ] && { c=${c#/proc/}; echo "${c%/comm}"; return; }
	done
	fail "no rescuer thread kworker/R-nvmet_cgroup"
}

# switches PID: how often the task has slept
switches() {
	sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "/proc/$1/status"
}

reads_done() {
	local r
	read -r r _ < "/sys/block/$1/stat" && echo "$r"
}

# kworkers_fail 1|0: make kthreadd fail (or stop failing) every slab
# allocation, so that no kernel thread can be created meanwhile
kworkers_fail() {
	if [ "$1" = 1 ]; then
		echo 0 > "$FAILSLAB/verbose" && echo N > "$FAILSLAB/ignore-gfp-wait" &&
		echo Y > "$FAILSLAB/task-filter" && echo 1 > "$FAILSLAB/interval" &&
		echo -1 > "$FAILSLAB/times" && echo 100 > "$FAILSLAB/probability" &&
		echo 1 > /proc/2/make-it-fail
	else
		echo 0 > /proc/2/make-it-fail && echo 0 > "$FAILSLAB/probability"
	fi
}

reader() {	# SECONDS IODEPTH DEV...: one reader thread per device
	local secs=$1 qd=$2 jobs=() d
	shift 2
	for d in "$@"; do
		jobs+=(--name="${d#/dev/}" --filename="$d")
	done
	fio --thread --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth="$qd" \
		--time_based --runtime="$secs" --output-format=terse "${jobs[@]}" > /dev/null 2>&1
}

# a_flows: A's device completed a read since $A0
a_flows() {
	[ "$(reads_done nullb0)" -gt "$A0" ]
}

b_progresses_while_a_holds_the_rescuer() {
	local rpid s0 s1 b0 b1 a1 ns bpid apid rc=0 dev devs=()
	rpid=$(rescuer_pid) && dev=$(host_dev "$NQN_B" 1) || return
	for ((ns = 1; ns <= NR_A; ns++)); do
		devs+=("$(host_dev "$NQN" "$ns")") || return
	done
	# B reads throughout; its reader is up before anything else starts
	reader $((WINDOW_S + 40)) 4 "$dev" &
	bpid=$!
	wait_for 60 test "$(reads_done nullb1)" -gt 0 || fail "B's reader did not start" || return
	kworkers_fail 1 || return
	A0=$(reads_done nullb0)
	reader $((WINDOW_S + 20)) 16 "${devs[@]}" &
	apid=$!
	wait_for 30 a_flows || echo "A's readers did not start within 30 s"
	sleep 2
	s0=$(switches "$rpid"); b0=$(reads_done nullb1); A0=$(reads_done nullb0)
	sleep "$WINDOW_S"
	b1=$(reads_done nullb1); a1=$(reads_done nullb0); s1=$(switches "$rpid")
	kworkers_fail 0
	echo "in ${WINDOW_S} s with no kworker creatable: B completed $((b1 - b0)) reads," \
	     "A $((a1 - A0)); the rescuer slept $((s1 - s0)) times;" \
	     "$(cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^kworker/[0-9]*:[0-9]*H') high-priority kworkers"
	for p in "$apid" "$bpid"; do
		timeout 90 tail --pid="$p" -f /dev/null || rc=1
	done
	[ "$rc" = 0 ] || fail "a reader did not finish within 90 s of kworkers coming back" || return
	[ "$((s1 - s0))" -gt 0 ] || fail "the rescuer did not run: the case did not reach its path" || return
	[ "$((b1 - b0))" -ge "$MIN_B" ] || fail "B completed fewer than $MIN_B reads while A held the rescuer"
}

teardown() {
	kworkers_fail 0
	host_disconnect "$NQN" && host_disconnect "$NQN_B" && port_destroy 1 &&
	subsys_destroy "$NQN" && subsys_destroy "$NQN_B" &&
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" &&
	cg_remove rescuer && rmmod nvmet_cgroup && rmmod nvme_loop &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 3
run_case "setup" setup
run_case "rescuer_serves_other_namespaces_while_one_sleeps_in_iocost" b_progresses_while_a_holds_the_rescuer
run_case "teardown" teardown
ktap_finished
