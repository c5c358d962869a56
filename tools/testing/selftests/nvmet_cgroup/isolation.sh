#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Isolation, pass/fail: the bench's isolation scenario on the debug kernel.
# A noisy namespace N (io.weight 25, randread qd32 x2) and a quiet one Q
# (io.weight 100, randread qd1 at a fixed rate) behind one nvme-tcp
# controller, on one null_blk under io.cost with a fixed linear model that
# N saturates.  With the module's execution context, Q keeps >= 90 % of the
# IOPS it gets alone.  With the inline_assoc=1 diagnostic mode (the cgroup
# associated in the transport's thread, no execution context) N's commands
# sleep in io.cost inside the transport's thread and Q's commands wait
# behind them: the same check must fail there, so the test can fail.  N's
# two jobs are pinned one per CPU, so that both of the host's I/O queues
# (one per CPU) carry N's commands, whichever CPU Q's job runs on.
# Rates come from a calibration in the same boot: Q's rate is a quarter of
# what it reaches alone at qd1, the io.cost model twice Q's rate.
# It runs over each of ISOLATION_TRANSPORTS (by default
# NVMET_LONG_TRANSPORTS; make check gives tcp only) in turn, calibrated on
# each.  The
# inline_assoc=1 control fails the check only where the transport runs
# many commands in one thread (tcp's io_work, rdma's completion queue
# work); nvme-loop and nvme-fcloop hand each command to a work item of its
# own, where a command that sleeps in io.cost holds up no other, so over
# them the control is both namespaces bound to N's cgroup: Q's one command
# queued in io.cost behind N's 64.  (Without cgroup_id both would be in the
# root cgroup, which io.cost never throttles: Q kept 99 % over loop.)
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:isolation
NSDIR=$NVMET_CFS/subsystems/$NQN/namespaces
RUNTIME=${ISO_RUNTIME:-10}
KEEP_PCT=90
STATE=/tmp/isolation.rate

TRANSPORTS=${ISOLATION_TRANSPORTS:-$NVMET_LONG_TRANSPORTS}

setup() {
	modprobe nvmet && nullb_create nullb0 1024 &&
	cg_create iso/noisy && cg_create iso/quiet &&
	echo "default 25" > "$CG/iso/noisy/io.weight" &&
	echo "default 100" > "$CG/iso/quiet/io.weight" &&
	subsys_create "$NQN" && ns_create "$NQN" 1 /dev/nullb0 && ns_create "$NQN" 2 /dev/nullb0 &&
	ports_create "$TRANSPORTS" "$NQN"
}

# the control that must fail the check over TRANSPORT (see the top)
control() {	# TRANSPORT
	case "$1" in tcp|rdma) echo inline ;; *) echo shared ;; esac
}

# q_job DEV [fio options]: Q's qd1 randread at the highest priority (the
# initiator shares the guest's CPUs with the target); prints its IOPS with
# one decimal, from the I/Os done and the runtime (fio's IOPS field is a
# whole number, too coarse at the 10-20 IOPS of a debug guest)
q_job() {
	local dev=$1
	shift
	nice -n -20 fio --name=quiet --filename="$dev" --rw=randread --bs=4k --direct=1 \
		--ioengine=libaio --iodepth=1 --time_based --runtime="$RUNTIME" --minimal "$@" |
		awk -F';' '{ if ($9 > 0) printf "%.1f\n", $6 / 4 * 1000 / $9; else print 0 }'
}

# Q alone over TR, unthrottled and without io.cost: its rate is a quarter
# of that.
calibrate() {
	local q max
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" || return
	host_connect "$TR" "$NQN" && q=$(host_dev "$NQN" 2) || return
	max=$(q_job "$q") || return
	host_disconnect "$NQN" || return
	echo "Q alone at qd1, no policy: $max IOPS"
	max=${max%.*}
	[ "${max:-0}" -ge 8 ] || fail "too slow to calibrate: $max IOPS" || return
	echo "$((max / 4)) $((max / 2))" > "$STATE"
	echo "Q's rate $((max / 4)) IOPS, io.cost model $((max / 2)) IOPS"
	iocost_enable /dev/nullb0 $((max / 2))
}

# run MODE PARAMS...: reload the module with PARAMS, bind N and Q, Q alone
# then with N; prints "kept PERCENT" last
run_mode() {
	local mode=$1 rate model n q alone with pid kept
	shift
	read -r rate model < "$STATE" || return
	echo 0 > "$NSDIR/1/enable" && echo 0 > "$NSDIR/2/enable" || return
	if lsmod | grep -q '^nvmet_cgroup '; then rmmod nvmet_cgroup || return; fi
	modprobe nvmet_cgroup "$@" || return
	if [ "$mode" = shared ]; then
		cg_id iso/noisy > "$NSDIR/1/cgroup_id" && cg_id iso/noisy > "$NSDIR/2/cgroup_id"
	else
		cg_id iso/noisy > "$NSDIR/1/cgroup_id" && cg_id iso/quiet > "$NSDIR/2/cgroup_id"
	fi &&
	echo 1 > "$NSDIR/1/enable" && echo 1 > "$NSDIR/2/enable" || return
	host_connect "$TR" "$NQN" && n=$(host_dev "$NQN" 1) && q=$(host_dev "$NQN" 2) || return
	alone=$(q_job "$q" --rate_iops="$rate")
	fio --name=noisy --filename="$n" --rw=randread --bs=4k --direct=1 --ioengine=libaio \
		--iodepth=32 --numjobs=2 --cpus_allowed=0-1 --cpus_allowed_policy=split \
		--time_based --runtime=$((RUNTIME + 6)) --minimal \
		> /tmp/isolation-noisy 2>&1 &
	pid=$!
	sleep 3
	with=$(q_job "$q" --rate_iops="$rate")
	wait $pid
	host_disconnect "$NQN" || return
	kept=$(awk -v a="$alone" -v w="$with" 'BEGIN { printf "%d", (a > 0 ? 100 * w / a : 0) }')
	echo "$mode: Q alone $alone IOPS (rate $rate), with N $with IOPS: kept $kept %;" \
		"N $(awk -F';' '{s += $8} END {print s}' /tmp/isolation-noisy) IOPS (model $model)"
	awk -v a="$alone" -v r="$rate" 'BEGIN { exit !(a >= 0.8 * r) }' ||
		fail "Q alone did not reach 80 % of its rate" || return
	echo "kept $kept"
}

module_keeps_quiet() {
	local out kept
	out=$(run_mode module) || { echo "$out"; return 1; }
	echo "$out" | grep -v '^kept '
	kept=$(echo "$out" | sed -n 's/^kept //p')
	[ "$kept" -ge $KEEP_PCT ] || fail "Q kept $kept %, below $KEEP_PCT %"
}

# control_fails_the_check inline|shared: the module with inline_assoc=1, or
# both namespaces in N's cgroup
control_fails_the_check() {
	local out kept
	if [ "$1" = inline ]; then
		out=$(run_mode inline inline_assoc=1) || { echo "$out"; return 1; }
	else
		out=$(run_mode shared) || { echo "$out"; return 1; }
	fi
	echo "$out" | grep -v '^kept '
	kept=$(echo "$out" | sed -n 's/^kept //p')
	[ "$kept" -lt $KEEP_PCT ] ||
		fail "$1: Q kept $kept %: the check cannot tell the module from it"
}

teardown() {
	local d
	d=$(devnum /dev/nullb0)
	echo "$d enable=0" > "$CG/io.cost.qos"
	ports_destroy "$TRANSPORTS" && subsys_destroy "$NQN" && rmmod nvmet_cgroup &&
	cg_remove iso && nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
read -ra trs <<< "$TRANSPORTS"
ktap_set_plan $((2 + 3 * ${#trs[@]}))
run_case "setup" setup
for tr in "${trs[@]}"; do
	# (run_case runs a case in a subshell: TR is set here, for them all)
	TR=$tr ctl=$(control "$tr")
	run_case "${tr}_calibrate_quiet_rate_and_iocost_model" calibrate
	run_case "${tr}_execution_context_keeps_quiet_tenant_${KEEP_PCT}pct" module_keeps_quiet
	if [ "$ctl" = inline ]; then
		run_case "${tr}_inline_assoc_diagnostic_fails_the_same_check" control_fails_the_check inline
	else
		run_case "${tr}_one_cgroup_for_both_fails_the_same_check" control_fails_the_check shared
	fi
done
run_case "teardown" teardown
ktap_finished
