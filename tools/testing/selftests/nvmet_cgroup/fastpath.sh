#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The fast path under io.cost: while a namespace's device has no policy that
# can sleep the transport, its reads and writes run in the transport's thread
# and are still charged; Flush of a file namespace still goes to the
# execution context; enabling io.cost on a device under live namespaces
# moves that device's namespace, and only it, to the execution context, and
# turning it off again moves the namespace back.  The module's status file
# (debugfs nvmet_cgroup/namespaces) says the same at each step.
# (io.latency and io.max: fastpath_policies.sh, in the other boot.)
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./fastpath_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:fastpath

# Prints the namespace's cgroup's "rios wios" on DEV.
ios() {
	echo "$(cg_stat "$1" "$2" rios) $(cg_stat "$1" "$2" wios)"
}

# status_says NSID WHERE: the module's status file says the same (rw=WHERE)
status_says() {
	local line
	line=$(grep "^$NQN $1 " /sys/kernel/debug/nvmet_cgroup/namespaces)
	echo "status file: ${line:-no line for nsid $1}"
	case "$line" in *" rw=$2") ;; *) fail "expected rw=$2" ;; esac
}

# the bdev and the file namespace run inline, and every I/O is charged
no_policy_runs_inline_and_charges() {
	local ns cg dev before after
	for ns in 1:bdev:nullb0 2:file:nullb1; do
		IFS=: read -r ns cg dev <<< "$ns"
		before=$(ios "fastpath/$cg" "/dev/$dev")
		fp_expect "$NQN" "$ns" inline "$cg, no policy" || return
		after=$(ios "fastpath/$cg" "/dev/$dev")
		echo "io.stat of fastpath/$cg on $dev: rios/wios $before -> $after"
		set -- $before $after
		[ $(($3 - $1)) -ge $FP_N ] && [ $(($4 - $2)) -ge $FP_N ] ||
			fail "$cg namespace: I/O on the fast path was not charged" || return
	done
	status_says 1 transport && status_says 2 transport
}

# the file backend defers Flush to a work item: it must run in the context
flush_of_file_goes_to_the_context() {
	local runs
	runs=$(fp_runs nvme flush "$(host_dev "$NQN" 2)" -n 2) || return
	echo "nvme flush on the file namespace: inline/context $runs"
	[ "$runs" = "0 1" ] || fail "Flush did not run in the execution context"
}

# io.cost on nullb0 (a model that does not limit), enabled while both
# namespaces are live: namespace 1 moves to the context, namespace 2 stays
iocost_enabled_later_moves_to_the_context() {
	iocost_enable /dev/nullb0 1000000 || return
	fp_expect "$NQN" 1 context "bdev, io.cost on nullb0" &&
	fp_expect "$NQN" 2 inline "file on nullb1, io.cost on nullb0" &&
	status_says 1 "context: io.cost enabled" && status_says 2 transport
}

# io.cost turned off again: it stays registered on nullb0 but no longer
# throttles, so namespace 1 is back in the transport's thread
iocost_disabled_again_runs_inline() {
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" || return
	fp_expect "$NQN" 1 inline "bdev, io.cost turned off on nullb0" &&
	status_says 1 transport
}

teardown() {
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" && fp_teardown "$NQN"
}

ktap_print_header
ktap_set_plan 6
run_case "setup" fp_setup "$NQN"
run_case "no_policy_runs_inline_and_charges" no_policy_runs_inline_and_charges
run_case "flush_of_file_goes_to_the_context" flush_of_file_goes_to_the_context
run_case "iocost_enabled_later_moves_to_the_context" iocost_enabled_later_moves_to_the_context
run_case "iocost_disabled_again_runs_inline" iocost_disabled_again_runs_inline
run_case "teardown" teardown
ktap_finished
