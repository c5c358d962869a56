#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The cgroup_id attribute: where it exists, what store accepts, what enable
# checks, and module lifetime (v12 ABI; see Documentation/ABI/).
cd "$(dirname "$0")" || exit 1
. ./ktap.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:attr
SUB=$NVMET_CFS/subsystems/$NQN
CGP=nvmet-attr

setup() {
	modprobe nvmet && nullb_create nullb0 256 && brd_create 64 &&
	subsys_create "$NQN" &&
	# created before the module is loaded
	mkdir "$SUB/namespaces/1" && echo -n /dev/nullb0 > "$SUB/namespaces/1/device_path" &&
	modprobe nvmet_cgroup &&
	cg_create "$CGP"
}

# 1. the attribute: absent from a namespace created before the module
# loaded (the documented rule), present with 0 on every later one.
attr_exists() {
	[ ! -e "$SUB/namespaces/1/cgroup_id" ] ||
		fail "namespace created before the module load has cgroup_id"
	mkdir "$SUB/namespaces/2" || return
	[ "$(cat "$SUB/namespaces/2/cgroup_id")" = 0 ] || fail "default is not 0"
	rmdir "$SUB/namespaces/1" && mkdir "$SUB/namespaces/1" || return
	[ "$(cat "$SUB/namespaces/1/cgroup_id")" = 0 ] ||
		fail "re-created namespace has no cgroup_id 0"
	echo -n /dev/nullb0 > "$SUB/namespaces/1/device_path" &&
	echo -n /dev/ram0 > "$SUB/namespaces/2/device_path"
}

# store VALUE EXPECTED_VALUE_AFTER: write, compare what show prints
store_ok() {
	printf '%s' "$1" > "$SUB/namespaces/1/cgroup_id" || fail "store '$1' failed"
	[ "$(cat "$SUB/namespaces/1/cgroup_id")" = "$2" ] ||
		fail "after '$1': $(cat "$SUB/namespaces/1/cgroup_id"), expected $2"
}

store_rejected() {	# VALUE ERRNO_TEXT
	local before err
	before=$(cat "$SUB/namespaces/1/cgroup_id")
	if err=$( { printf '%s' "$1" > "$SUB/namespaces/1/cgroup_id"; } 2>&1); then
		fail "store '$1' was accepted"
		return
	fi
	case "$err" in
	*"$2"*) ;;
	*) fail "store '$1': '$err', expected $2"; return ;;
	esac
	[ "$(cat "$SUB/namespaces/1/cgroup_id")" = "$before" ] ||
		fail "store '$1' changed the value"
}

# 2. parsing like kstrtou64(..., 0, ...)
store_parses() {
	store_ok 12 12 && store_ok 0x1f 31 && store_ok 017 15 &&
	store_ok 0 0 && store_ok $'42\n' 42 &&
	store_rejected $'\n' "Invalid argument" &&
	store_rejected abc "Invalid argument" &&
	store_rejected -1 "Invalid argument" &&
	store_rejected "1 2" "Invalid argument" &&
	store_rejected 18446744073709551616 "Numerical result out of range" &&
	store_ok 0 0
}

store_busy_while_enabled() {
	echo 1 > "$SUB/namespaces/1/enable" || return
	store_rejected 5 "Device or resource busy" || return
	echo 0 > "$SUB/namespaces/1/enable"
}

# 3. enable checks: an unknown cgroup, buffered_io; nothing half-applied
# enable_fails NSID ERROR_TEXT PR_ERR_TEXT: the write to enable fails with
# that error, the namespace stays disabled, the kernel log says why.
enable_fails() {
	local ns=$SUB/namespaces/$1 err
	if err=$( { echo 1 > "$ns/enable"; } 2>&1); then
		fail "enable of namespace $1 succeeded"
		return
	fi
	echo "$err" | grep -q "$2" || fail "unexpected error: $err" || return
	[ "$(cat "$ns/enable")" = 0 ] || fail "namespace $1 is enabled" || return
	dmesg | grep -q "$3" || fail "no pr_err '$3'"
}

enable_unknown_id_fails() {
	echo 4000000000 > "$SUB/namespaces/1/cgroup_id" &&
	enable_fails 1 "No such file or directory" \
		'nvmet_cgroup: failed to resolve cgroup id 4000000000'
}

enable_buffered_io_fails() {
	echo "$(cg_id "$CGP")" > "$SUB/namespaces/2/cgroup_id" &&
	echo 1 > "$SUB/namespaces/2/buffered_io" &&
	enable_fails 2 "Invalid argument" 'cgroup_id is not supported with buffered_io'
}

enable_after_fixing() {
	echo "$(cg_id "$CGP")" > "$SUB/namespaces/1/cgroup_id" &&
	echo 1 > "$SUB/namespaces/1/enable" &&
	echo 0 > "$SUB/namespaces/2/buffered_io" &&
	echo 1 > "$SUB/namespaces/2/enable" || return
	[ "$(cat "$SUB/namespaces/1/enable")$(cat "$SUB/namespaces/2/enable")" = 11 ] ||
		fail "not enabled"
}

# 12. module lifetime: pinned by enabled namespaces with a cgroup only
rmmod_refused_while_enabled() {
	local err
	if err=$(rmmod nvmet_cgroup 2>&1); then
		fail "rmmod succeeded with enabled namespaces"
		return
	fi
	lsmod | grep -q '^nvmet_cgroup ' || fail "module is gone"
	echo "$err" | grep -qi "in use" || fail "unexpected error: $err"
}

rmmod_after_disable_and_reload() {
	local err
	echo 0 > "$SUB/namespaces/1/enable" && echo 0 > "$SUB/namespaces/2/enable" &&
	rmmod nvmet_cgroup || return
	# nvmet owns the files: they stay, and say the extension is gone
	if err=$(cat "$SUB/namespaces/1/cgroup_id" 2>&1); then
		fail "cgroup_id readable without the module: $err"
		return
	fi
	echo "$err" | grep -q "No such device" || fail "unexpected error: $err" || return
	echo 1 > "$SUB/namespaces/1/enable" || fail "enable without the module failed" || return
	echo 0 > "$SUB/namespaces/1/enable" &&
	modprobe nvmet_cgroup || return
	[ "$(cat "$SUB/namespaces/1/cgroup_id")" = 0 ] || fail "attribute not restored at 0"
}

# the module's KUnit suites ran at load time: all passed, none failed
kunit_ok() {
	local log
	log=$(dmesg | grep -E '^\[ *[0-9.]+\] +(# |)(ok|not ok) [0-9]+ nvmet_cgroup_id')
	echo "$log" | grep -q ' ok [0-9]* nvmet_cgroup_id' || fail "KUnit suite nvmet_cgroup_id did not pass: $(dmesg | grep -A3 nvmet_cgroup_id | head -20)" || return
	! echo "$log" | grep -q 'not ok' || fail "a KUnit suite failed: $log"
}

teardown() {
	subsys_destroy "$NQN" && rmmod nvmet_cgroup && cg_remove "$CGP" &&
	nullb_destroy nullb0 && rmmod null_blk brd nvmet
}

ktap_begin 11
ktap_step "setup" setup
ktap_step "attr_absent_before_load_present_after" attr_exists
ktap_step "store_parses_like_kstrtou64" store_parses
ktap_step "store_busy_while_enabled" store_busy_while_enabled
ktap_step "enable_unknown_cgroup_fails_cleanly" enable_unknown_id_fails
ktap_step "enable_buffered_io_fails" enable_buffered_io_fails
ktap_step "enable_after_fixing_cause" enable_after_fixing
ktap_step "rmmod_refused_while_enabled" rmmod_refused_while_enabled
ktap_step "rmmod_after_disable_reload_restores_attr" rmmod_after_disable_and_reload
ktap_step "kunit_suites_pass" kunit_ok
ktap_step "teardown" teardown
ktap_end
