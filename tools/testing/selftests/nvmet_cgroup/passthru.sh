#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Passthru subsystems: passthru/cgroup_id follows a namespace's cgroup_id
# rules (parsing, EBUSY while enabled, 0 clears, resolved at enable, refused
# without the module), the controller's I/O commands run in the execution
# context, and the block layer's passthrough charging (patches/block) puts
# them in the cgroup's io.stat on the controller's disk, one for one with
# the host's commands, and in io.latency's view: a tenant missing its target
# holds its sibling back.  The controller is the emulated NVMe PCI device
# scripts/vm attaches.  io.cost's weight split is passthru_iocost.sh's (a
# boot of its own with the other io.cost tests).
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./cli_lib.sh

NQN=nqn.2026-12.io.nvmet-cgroup:passthru
PT=$NVMET_CFS/subsystems/$NQN/passthru
STATUS=/sys/kernel/debug/nvmet_cgroup/namespaces
# DISK, the controller's disk, is set by each case that uses it: cases
# run in subshells, where setup's variables do not reach.

setup() {
	local ctrl
	modprobe nvmet && modprobe nvme_loop && modprobe nvmet_cgroup &&
	ctrl=$(pci_nvme_ctrl) &&
	cg_create pt/tenant && cg_create pt/other &&
	subsys_create "$NQN" && echo -n "$ctrl" > "$PT/device_path" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && DISK=$(passthru_disk "$NQN") || return
	echo "controller $ctrl, disk $DISK ($(devnum "$DISK"))"
}

# store VALUE EXPECTED: the write succeeds and show prints EXPECTED
store_ok() {
	printf '%s' "$1" > "$PT/cgroup_id" || fail "store '$1' failed" || return
	[ "$(cat "$PT/cgroup_id")" = "$2" ] ||
		fail "after '$1': $(cat "$PT/cgroup_id"), expected $2"
}

# store_rejected VALUE ERRNO_TEXT: the write fails so, the value stays
store_rejected() {
	local before err
	before=$(cat "$PT/cgroup_id")
	if err=$( { printf '%s' "$1" > "$PT/cgroup_id"; } 2>&1); then
		fail "store '$1' was accepted"
		return
	fi
	case "$err" in
	*"$2"*) ;;
	*) fail "store '$1': '$err', expected $2"; return ;;
	esac
	[ "$(cat "$PT/cgroup_id")" = "$before" ] || fail "store '$1' changed the value"
}

# enable_fails ERROR_TEXT PR_ERR_TEXT: enabling passthru fails with that
# error, passthru stays disabled, and the kernel log says why.
enable_fails() {
	local err lines log
	lines=$(dmesg | wc -l)
	if err=$( { echo 1 > "$PT/enable"; } 2>&1); then
		echo 0 > "$PT/enable"
		fail "passthru enabled"
		return
	fi
	case "$err" in
	*"$1"*) ;;
	*) fail "unexpected error: $err"; return ;;
	esac
	[ "$(cat "$PT/enable")" = 0 ] || fail "passthru is enabled" || return
	log=$(dmesg | tail -n +$((lines + 1)))
	echo "$log" | grep -qF "$2" || fail "no pr_err '$2' in: $log" || return
	echo "enable: $err; $(echo "$log" | grep -F "$2")"
}

cgroup_id_store_rules() {
	[ "$(cat "$PT/cgroup_id")" = 0 ] || fail "default is $(cat "$PT/cgroup_id"), not 0" || return
	store_ok 0x1f 31 && store_ok 0 0 &&
	store_rejected abc "Invalid argument" && store_rejected -1 "Invalid argument" &&
	store_rejected 18446744073709551616 "Numerical result out of range" &&
	store_ok "$(cg_id pt/tenant)" "$(cg_id pt/tenant)" && store_ok 0 0
}

# Never silently uncharged: without the module, enable is refused.
enable_without_module_fails() {
	rmmod nvmet_cgroup && echo "$(cg_id pt/tenant)" > "$PT/cgroup_id" || return
	enable_fails "Operation not supported" \
		"$NQN: passthru cgroup_id $(cg_id pt/tenant) is set, but no execution extension is registered to charge its I/O"
	local st=$?
	modprobe nvmet_cgroup || return
	return $st
}

enable_unknown_cgroup_fails() {
	echo 4000000000 > "$PT/cgroup_id" &&
	enable_fails "No such file or directory" \
		"failed to resolve cgroup id 4000000000 for passthru subsystem $NQN: ENOENT"
}

# Enabled: the value is fixed, the module lists the binding (NSID 0), and
# a host connects.
enabled_busy_and_listed() {
	echo "$(cg_id pt/tenant)" > "$PT/cgroup_id" && echo 1 > "$PT/enable" || return
	store_rejected 5 "Device or resource busy" || return
	grep -q "^$NQN 0 cgroup_id=$(cg_id pt/tenant) " "$STATUS" ||
		fail "no passthru line in $STATUS: $(cat "$STATUS")" || return
	grep "^$NQN " "$STATUS"
	host_connect loop "$NQN" && host_dev "$NQN" 1 > /dev/null
}

# host_stat DEV FIELD: a field of /sys/block/DEV/stat (1 = reads completed,
# 5 = writes completed)
host_stat() {
	awk -v f="$2" '{ print $f }' "/sys/block/${1#/dev/}/stat"
}

# Every command the host completed is in the tenant's io.stat on the
# controller's disk, reads and writes one for one; none in the sibling's.
io_charged_one_for_one() {
	local hd r0 w0 tr0 tw0 hr hw tr tw
	DISK=$(passthru_disk "$NQN") && hd=$(host_dev "$NQN" 1) || return
	echo 2 > "/sys/block/${hd#/dev/}/queue/nomerges"
	r0=$(host_stat "$hd" 1) w0=$(host_stat "$hd" 5)
	tr0=$(cg_stat pt/tenant "$DISK" rios) tw0=$(cg_stat pt/tenant "$DISK" wios)
	fio_job "$hd" randread 4k --number_ios=1500 --iodepth=8 --size=256M > /dev/null &&
	fio_job "$hd" randwrite 4k --number_ios=500 --iodepth=8 --size=256M > /dev/null || return
	hr=$(($(host_stat "$hd" 1) - r0)) hw=$(($(host_stat "$hd" 5) - w0))
	tr=$(($(cg_stat pt/tenant "$DISK" rios) - tr0)) tw=$(($(cg_stat pt/tenant "$DISK" wios) - tw0))
	echo "host: $hr reads, $hw writes; pt/tenant on $DISK: rios +$tr, wios +$tw"
	[ "$hr" -ge 1500 ] && [ "$hw" -ge 500 ] || fail "the host did not complete the I/O" || return
	[ "$tr" = "$hr" ] || fail "rios +$tr for $hr reads" || return
	[ "$tw" = "$hw" ] || fail "wios +$tw for $hw writes" || return
	[ "$(cg_stat pt/other "$DISK" rios)" = 0 ] || fail "the sibling was charged"
}

# iolat_field CGROUP FIELD: io.latency's debug field on the disk's io.stat
# line (depth=, missed=, total=), "" without one
iolat_field() {
	local line
	line=" $(grep "^$(devnum "$DISK") " "$CG/$1/io.stat") "
	case "$line" in
	*" $2="*) line=${line#*" $2="}; echo "${line%% *}" ;;
	esac
}

# io.latency: the tenant's passthru commands are timed against its target
# (io.stat's total=) and, missing a target of 1 us, hold its sibling, which
# reads the disk directly, below full queue depth.
io_latency_holds_the_tenant() {
	local hd d pid total depth
	DISK=$(passthru_disk "$NQN") && hd=$(host_dev "$NQN" 1) && d=$(devnum "$DISK") || return
	echo 1 > /sys/module/blk_cgroup/parameters/blkcg_debug_stats &&
	io_set pt/tenant io.latency "$DISK" target=1 || return
	( echo "$BASHPID" > "$CG/pt/other/cgroup.procs" &&
	  fio_job "$DISK" randread 4k --time_based --runtime=12 --offset=512M > /dev/null ) &
	pid=$!
	fio_job "$hd" randread 4k --time_based --runtime=10 --size=256M > /dev/null
	total=$(iolat_field pt/tenant total) depth=$(iolat_field pt/other depth)
	wait $pid
	echo "pt/tenant: $(grep "^$d " "$CG/pt/tenant/io.stat")"
	echo "pt/other: $(grep "^$d " "$CG/pt/other/io.stat")"
	io_set pt/tenant io.latency "$DISK" target=max
	echo 0 > /sys/module/blk_cgroup/parameters/blkcg_debug_stats
	[ -n "$total" ] && [ "$total" -gt 0 ] ||
		fail "io.latency timed none of the tenant's commands (total=$total)" || return
	[ -n "$depth" ] && [ "$depth" != max ] ||
		fail "the sibling was not held back (depth=$depth)"
}

# The CLI never writes an io.max that would not apply: it refuses with the
# reason and writes nothing; io.latency goes to the controller's disk
# (io.weight needs io.cost on it, which this boot cannot configure).
cli_refuses_io_max() {
	local out d
	cli_built && DISK=$(passthru_disk "$NQN") && d=$(devnum "$DISK") || return
	if out=$("$CLI" limit "$NQN" passthru --riops 100 2>&1); then
		fail "limit --riops was accepted: $out"
		return
	fi
	echo "$out"
	case "$out" in
	*"io.max does not apply to passthru subsystems"*) ;;
	*) fail "unexpected message: $out"; return ;;
	esac
	! grep -q "^$d " "$CG/pt/tenant/io.max" ||
		fail "io.max was written: $(cat "$CG/pt/tenant/io.max")" || return
	"$CLI" limit "$NQN" passthru --latency 5ms || fail "limit --latency failed" || return
	grep -qx "$d target=5000" "$CG/pt/tenant/io.latency" ||
		fail "io.latency: $(cat "$CG/pt/tenant/io.latency")" || return
	"$CLI" status "$NQN" passthru
}

# Disabling passthru waits for its commands and gives the context back: the
# module's line goes, and the module can be unloaded.
disable_releases_the_context() {
	host_disconnect "$NQN" && echo 0 > "$PT/enable" || return
	! grep -q "^$NQN " "$STATUS" || fail "the binding is still listed" || return
	rmmod nvmet_cgroup || fail "nvmet_cgroup is still in use" || return
	modprobe nvmet_cgroup
}

teardown() {
	port_destroy 1 && passthru_destroy "$NQN" && cg_remove pt &&
	rmmod nvmet_cgroup nvme_loop
}

ktap_print_header
ktap_set_plan 10
run_case "setup" setup
run_case "passthru_cgroup_id_store_rules" cgroup_id_store_rules
run_case "passthru_enable_without_module_fails" enable_without_module_fails
run_case "passthru_enable_unknown_cgroup_fails" enable_unknown_cgroup_fails
run_case "passthru_enabled_busy_and_listed" enabled_busy_and_listed
run_case "passthru_io_charged_one_for_one" io_charged_one_for_one
run_case "passthru_io_latency_holds_the_tenant" io_latency_holds_the_tenant
run_case "passthru_cli_refuses_io_max" cli_refuses_io_max
run_case "passthru_disable_releases_the_context" disable_releases_the_context
run_case "teardown" teardown
ktap_finished
