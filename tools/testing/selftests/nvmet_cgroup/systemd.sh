#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A systemd host: Debian's systemd is PID 1 (scripts/vm --systemd, a boot of
# its own in scripts/check; not in TEST_PROGS, whose boots have no systemd).
# The nvmet-cgroup CLI binds a namespace to a slice and limits it; systemd
# owns the slice's cgroup, so the CLI goes through it (`set-property
# --runtime`), and a `systemctl daemon-reload` leaves the io controller
# above the slice, the limits in io.max and the binding in place; `restore`
# brings limits back the same way.  A control does the same behind
# systemd's back (+io and io.max written directly into a slice systemd
# started): that is undone when systemd next realizes the slice, which is
# why the CLI must not write there itself.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./cli_lib.sh

NQN=nqn.2026-12.io.nvmet-cgroup:systemd
SLICE=tenants-a.slice
A=tenants.slice/tenants-a.slice
SAVED=/tmp/systemd-cgroup.json
NS=$NVMET_CFS/subsystems/$NQN/namespaces

# limits_in_io_max: nullb0's io.max line in the slice holds both limits
limits_in_io_max() {
	local line
	line=$(grep "^$(devnum /dev/nullb0) " "$CG/$A/io.max")
	echo "io.max of $A for nullb0: ${line:-none}"
	[[ " $line " == *" riops=500 "* && " $line " == *" wbps=10000000 "* ]] ||
		fail "expected riops=500 and wbps=10000000"
}

setup() {
	cli_built || return
	[ "$(cat /proc/1/comm)" = systemd ] && [ -d /run/systemd/system ] ||
		fail "PID 1 is $(cat /proc/1/comm), not systemd (run under scripts/vm --systemd)" || return
	systemctl --version | head -n 1
	modprobe nvmet && modprobe nvmet_cgroup && nullb_create nullb0 64 && subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0
}

bind_and_limit_through_systemd() {
	"$CLI" bind "$NQN" 1 --slice "$SLICE" --create --reenable &&
	blkg_prime "$A" /dev/nullb0 &&
	"$CLI" limit "$NQN" 1 --riops 500 --wbps 10M || return
	[ "$(cat "$NS/1/cgroup_id")" = "$(cg_id $A)" ] || fail "not bound to $A" || return
	limits_in_io_max || return
	systemctl show "$SLICE" -p IOAccounting -p IOReadIOPSMax -p IOWriteBandwidthMax
	systemctl show "$SLICE" -p IOReadIOPSMax | grep -q "/dev/nullb0 500" ||
		fail "systemd does not know the limit" || return
	ls /run/systemd/system.control/"$SLICE".d/ || fail "no runtime drop-in for $SLICE"
}

daemon_reload_keeps_them() {
	systemctl daemon-reload || return
	# realized again: a unit started in the slice's parent
	systemctl start tenants-other.slice || return
	grep -qw io "$CG/tenants.slice/cgroup.subtree_control" ||
		fail "io is gone from tenants.slice's subtree_control" || return
	limits_in_io_max || return
	[ "$(cat "$NS/1/cgroup_id")" = "$(cg_id $A)" ] && [ "$(cat "$NS/1/enable")" = 1 ] ||
		fail "the binding changed"
}

# The control: what the CLI wrote before it went through systemd.
direct_writes_are_undone_by_systemd() {
	local line
	systemctl start other-x.slice || return
	echo +io > "$CG/other.slice/cgroup.subtree_control" &&
	io_set other.slice/other-x.slice io.max /dev/nullb0 riops=100 || return
	line=$(grep "^$(devnum /dev/nullb0) " "$CG/other.slice/other-x.slice/io.max")
	echo "written behind systemd's back: other.slice +io, other-x.slice io.max: $line"
	systemctl daemon-reload && systemctl start other-y.slice || return
	echo "after daemon-reload and a start in other.slice: subtree_control:" \
		"'$(cat "$CG/other.slice/cgroup.subtree_control")'," \
		"io.max: '$(cat "$CG/other.slice/other-x.slice/io.max" 2>&1)'"
	! grep -qw io "$CG/other.slice/cgroup.subtree_control" ||
		fail "systemd kept a +io written behind its back: this control shows nothing" || return
}

restore_goes_through_systemd() {
	"$CLI" save "$SAVED" || return
	"$CLI" limit "$NQN" 1 --riops infinity --wbps infinity && "$CLI" unbind "$NQN" 1 --reenable || return
	! grep -q "^$(devnum /dev/nullb0) .*riops=500" "$CG/$A/io.max" || fail "the limit is still there" || return
	"$CLI" restore "$SAVED" || return
	limits_in_io_max || return
	systemctl daemon-reload || return
	limits_in_io_max && [ "$(cat "$NS/1/cgroup_id")" = "$(cg_id $A)" ] || fail "not restored for good"
}

teardown() {
	subsys_destroy "$NQN" && rmmod nvmet_cgroup && nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 6
run_case "setup" setup
run_case "bind_and_limit_through_systemd" bind_and_limit_through_systemd
run_case "daemon_reload_keeps_the_limits_and_the_binding" daemon_reload_keeps_them
run_case "control_direct_writes_are_undone_by_systemd" direct_writes_are_undone_by_systemd
run_case "restore_goes_through_systemd" restore_goes_through_systemd
run_case "teardown" teardown
ktap_finished
