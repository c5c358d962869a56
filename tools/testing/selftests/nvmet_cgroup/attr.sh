#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The cgroup_id attribute (v12 ABI; see Documentation/ABI/): nvmet owns it,
# so it exists whatever the load order and keeps its value across module
# unload and reload; what store accepts; what enable checks, with the module
# and without it; module lifetime; namespaces without a cgroup are never
# affected by the module.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:attr
SUB=$NVMET_CFS/subsystems/$NQN
CGP=nvmet-attr

# Everything is configured before nvmet_cgroup is loaded, as nvmetcli
# restore does at boot.
setup() {
	! lsmod | grep -q '^nvmet_cgroup ' || rmmod nvmet_cgroup || return
	modprobe nvmet && nullb_create nullb0 256 && brd_create 64 &&
	subsys_create "$NQN" && cg_create "$CGP" &&
	mkdir "$SUB/namespaces/1" && echo -n /dev/nullb0 > "$SUB/namespaces/1/device_path" &&
	mkdir "$SUB/namespaces/2" && echo -n /dev/ram0 > "$SUB/namespaces/2/device_path"
}

# 1. the file exists on namespaces created before the module is loaded
attr_exists_without_module() {
	local ns
	for ns in 1 2; do
		[ -f "$SUB/namespaces/$ns/cgroup_id" ] ||
			fail "namespace $ns has no cgroup_id" || return
		[ "$(cat "$SUB/namespaces/$ns/cgroup_id")" = 0 ] ||
			fail "namespace $ns: default is not 0" || return
	done
}

# store VALUE EXPECTED_VALUE_AFTER: write, compare what show prints
store_ok() {
	printf '%s' "$1" > "$SUB/namespaces/1/cgroup_id" || fail "store '$1' failed" || return
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

# parsing like kstrtou64(..., 0, ...); a rejected value leaves the old one
store_parses() {
	store_ok 12 12 && store_ok 0x1f 31 && store_ok 017 15 &&
	store_ok +5 5 && store_ok 0 0 && store_ok $'42\n' 42 &&
	store_ok 18446744073709551615 18446744073709551615 &&
	store_rejected $'\n' "Invalid argument" &&
	store_rejected abc "Invalid argument" &&
	store_rejected -1 "Invalid argument" &&
	store_rejected "1 2" "Invalid argument" &&
	store_rejected " 1" "Invalid argument" &&
	store_rejected 08 "Invalid argument" &&
	store_rejected 18446744073709551616 "Numerical result out of range" &&
	store_ok 0 0
}

# enable_fails NSID ERROR_TEXT PR_ERR_TEXT: the write to enable fails with
# that error, the namespace stays disabled, the kernel log says why.
enable_fails() {
	local ns=$SUB/namespaces/$1 err lines log
	lines=$(dmesg | wc -l)
	if err=$( { echo 1 > "$ns/enable"; } 2>&1); then
		fail "enable of namespace $1 succeeded"
		return
	fi
	echo "$err" | grep -q "$2" || fail "unexpected error: $err" || return
	[ "$(cat "$ns/enable")" = 0 ] || fail "namespace $1 is enabled" || return
	log=$(dmesg | tail -n +$((lines + 1)))
	echo "$log" | grep -q "$3" || fail "no pr_err '$3' in: $log" || return
	echo "enable of namespace $1: $err; $(echo "$log" | grep "$3")"
}

# 2. without the module, a namespace with a cgroup_id does not enable
# (never silently uncharged); one without enables normally
enable_without_module() {
	echo "$(cg_id "$CGP")" > "$SUB/namespaces/1/cgroup_id" &&
	enable_fails 1 "Operation not supported" "nsid 1: cgroup_id $(cg_id "$CGP") is set, but no execution extension is registered to charge its I/O" || return
	echo 1 > "$SUB/namespaces/2/enable" || fail "namespace 2 (no cgroup) did not enable" || return
	echo 0 > "$SUB/namespaces/2/enable"
}

# ... and loading the module lets it enable, with the value written before
enable_after_module_load() {
	modprobe nvmet_cgroup && echo 1 > "$SUB/namespaces/1/enable" || return
	[ "$(cat "$SUB/namespaces/1/enable")" = 1 ] || fail "namespace 1 is not enabled" || return
	[ "$(cat "$SUB/namespaces/1/cgroup_id")" = "$(cg_id "$CGP")" ] || fail "cgroup_id changed"
}

store_busy_while_enabled() {
	store_rejected 5 "Device or resource busy"
}

rmmod_refused_while_enabled() {
	local err
	if err=$(rmmod nvmet_cgroup 2>&1); then
		fail "rmmod succeeded with an enabled namespace with a cgroup"
		return
	fi
	lsmod | grep -q '^nvmet_cgroup ' || fail "module is gone" || return
	echo "$err" | grep -qi "in use" || fail "unexpected error: $err"
}

# the value is namespace state: it survives the module's unload and reload
value_survives_reload() {
	local id
	id=$(cg_id "$CGP")
	echo 0 > "$SUB/namespaces/1/enable" && rmmod nvmet_cgroup || return
	[ "$(cat "$SUB/namespaces/1/cgroup_id")" = "$id" ] ||
		fail "cgroup_id after rmmod: $(cat "$SUB/namespaces/1/cgroup_id"), expected $id" || return
	modprobe nvmet_cgroup || return
	[ "$(cat "$SUB/namespaces/1/cgroup_id")" = "$id" ] ||
		fail "cgroup_id after modprobe: $(cat "$SUB/namespaces/1/cgroup_id")" || return
	echo 1 > "$SUB/namespaces/1/enable" && echo 0 > "$SUB/namespaces/1/enable"
}

# enable checks of the module: an unknown cgroup, buffered_io
enable_unknown_id_fails() {
	echo 4000000000 > "$SUB/namespaces/1/cgroup_id" &&
	enable_fails 1 "No such file or directory" \
		'nvmet_cgroup: failed to resolve cgroup id 4000000000 for nsid 1: ENOENT'
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
		fail "not enabled" || return
	echo 0 > "$SUB/namespaces/1/enable" && echo 0 > "$SUB/namespaces/2/enable" &&
	echo 0 > "$SUB/namespaces/2/cgroup_id"
}

# 4. a namespace without a cgroup enables and disables, 100 times, while
# the module is unloaded and loaded in a loop: never an error, from either
reload_loop() {
	local n=0 failed=0
	while [ ! -e /tmp/attr-stop ]; do
		rmmod nvmet_cgroup || failed=$((failed + 1))
		modprobe nvmet_cgroup || failed=$((failed + 1))
		n=$((n + 1))
	done
	echo "$n $failed" > /tmp/attr-reloads
}

no_cgroup_unaffected_by_reloads() {
	local i errors=0 n failed
	rm -f /tmp/attr-stop /tmp/attr-reloads
	reload_loop &
	for ((i = 0; i < 100; i++)); do
		echo 1 > "$SUB/namespaces/2/enable" || errors=$((errors + 1))
		echo 0 > "$SUB/namespaces/2/enable" || errors=$((errors + 1))
	done
	touch /tmp/attr-stop
	wait
	read -r n failed < /tmp/attr-reloads
	echo "100 enable/disable rounds: $errors errors; meanwhile $n unload/load rounds, $failed failed"
	[ "$errors" = 0 ] && [ "$failed" = 0 ] && [ "$n" -gt 0 ] ||
		fail "a namespace without a cgroup was affected by the module's reloads"
}

# the module's KUnit suite ran at load time: it passed
kunit_ok() {
	local log
	# Built without KUnit (Debian's kernel), the module has no suite.
	if [ ! -d /sys/kernel/debug/kunit ]; then
		echo "the kernel has no KUnit (no /sys/kernel/debug/kunit)"
		return "$KSFT_SKIP"
	fi
	log=$(dmesg | grep -E '^\[ *[0-9.]+\] +(# |)(ok|not ok) [0-9]+ nvmet_cgroup_fast_path')
	echo "$log" | grep -q ' ok [0-9]* nvmet_cgroup_fast_path' ||
		fail "KUnit suite nvmet_cgroup_fast_path did not pass: $(dmesg | grep -A3 nvmet_cgroup_fast_path | head -20)" || return
	! echo "$log" | grep -q 'not ok' || fail "a KUnit suite failed: $log"
}

teardown() {
	subsys_destroy "$NQN" && rmmod nvmet_cgroup && cg_remove "$CGP" &&
	nullb_destroy nullb0 && rmmod null_blk brd nvmet
}

ktap_print_header
ktap_set_plan 15
run_case "setup_before_module_load" setup
run_case "attr_exists_before_module_load" attr_exists_without_module
run_case "store_parses_like_kstrtou64" store_parses
run_case "enable_with_cgroup_without_module_fails" enable_without_module
run_case "enable_after_module_load_uses_stored_value" enable_after_module_load
run_case "store_busy_while_enabled" store_busy_while_enabled
run_case "rmmod_refused_while_enabled" rmmod_refused_while_enabled
run_case "value_survives_module_reload" value_survives_reload
run_case "enable_unknown_cgroup_fails_cleanly" enable_unknown_id_fails
run_case "enable_buffered_io_fails" enable_buffered_io_fails
run_case "enable_after_fixing_cause" enable_after_fixing
run_case "no_cgroup_ns_unaffected_by_module_reloads" no_cgroup_unaffected_by_reloads
run_case "kunit_suite_passes" kunit_ok
run_case "module_loaded_after_reloads" modprobe nvmet_cgroup
run_case "teardown" teardown
ktap_finished
