#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# restore checks the device stack before it writes anything for a namespace.
# With the nvmet-cgroup CLI (target/release/nvmet-cgroup): namespace 1 on a
# dm-linear device (with a dm UUID, as LVM gives) over nullb0 and namespace
# 2 on nullb1 are bound, limited and saved.  The dm device is then rebuilt,
# same name and UUID, over nullb2: restore must refuse namespace 1 (exit 1, a
# message naming the old and new stacks), write neither its cgroup_id nor an
# io.max line anywhere, and still restore namespace 2.  Rebuilt over nullb0
# again, the record restores.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./cli_lib.sh

NQN=nqn.2026-12.io.nvmet-cgroup:stack
DM=stack-tenant
UUID=TEST-stack-tenant-0001
SAVED=/tmp/restore-stack.json
NS=$NVMET_CFS/subsystems/$NQN/namespaces

# dm_over DISK: the dm-linear device $DM over DISK, at /dev/mapper/$DM (no
# udev here: dmsetup mknodes makes the node)
dm_over() {
	local sectors
	sectors=$(blockdev --getsz "$1") &&
	dmsetup create --noudevsync "$DM" --uuid "$UUID" --table "0 $sectors linear $1 0" &&
	dmsetup mknodes "$DM" &&
	wait_for 5 test -b "/dev/mapper/$DM" || fail "/dev/mapper/$DM did not appear over $1"
}

setup() {
	cli_built || return
	modprobe nvmet && modprobe nvmet_cgroup && nullb_create nullb0 64 && nullb_create nullb1 64 &&
	nullb_create nullb2 64 && dm_over /dev/nullb0 && subsys_create "$NQN" &&
	ns_create "$NQN" 1 "/dev/mapper/$DM" && ns_create "$NQN" 2 /dev/nullb1
}

save_records_the_stack() {
	"$CLI" bind "$NQN" 1 --cgroup stack/a --create --reenable &&
	"$CLI" bind "$NQN" 2 --cgroup stack/b --create --reenable &&
	blkg_prime stack/a /dev/nullb0 && blkg_prime stack/b /dev/nullb1 &&
	"$CLI" limit "$NQN" 1 --riops 500 && "$CLI" limit "$NQN" 2 --riops 700 &&
	"$CLI" save "$SAVED" || return
	cat "$SAVED"
	grep -qF "\"dm uuid=$UUID > disk name=nullb0\"" "$SAVED" ||
		fail "namespace 1's stack (dm over nullb0) is not recorded" || return
	grep -qF '"disk name=nullb1"' "$SAVED" || fail "namespace 2's stack is not recorded"
}

# The next boot, with the volume rebuilt over another disk: nothing bound,
# no limits, the dm device over nullb2.
dm_rebuilt_over_another_disk_is_refused() {
	local out st
	echo 0 > "$NS/1/enable" && echo 0 > "$NS/1/cgroup_id" && echo 0 > "$NS/2/enable" &&
	echo 0 > "$NS/2/cgroup_id" && echo 1 > "$NS/2/enable" || return
	io_set stack/a io.max /dev/nullb0 riops=max &&
	io_set stack/b io.max /dev/nullb1 riops=max || return
	dmsetup remove --noudevsync "$DM" && dm_over /dev/nullb2 || return
	out=$("$CLI" restore "$SAVED" 2>&1)
	st=$?
	echo "$out"
	[ $st = 1 ] || fail "restore exited $st, not 1" || return
	grep -q "nsid 1: the device stack under /dev/mapper/$DM changed since it was saved" <<< "$out" &&
	grep -qF "now: dm uuid=$UUID > disk name=nullb2" <<< "$out" ||
		fail "restore does not say what changed" || return
	[ "$(cat "$NS/1/cgroup_id")" = 0 ] || fail "namespace 1 was bound" || return
	[ -z "$(cat "$CG/stack/a/io.max")" ] ||
		fail "a limit was written for namespace 1: $(cat "$CG/stack/a/io.max")" || return
	[ "$(cat "$NS/2/cgroup_id")" = "$(cg_id stack/b)" ] &&
	grep -q "^$(devnum /dev/nullb1) .*riops=700" "$CG/stack/b/io.max" &&
	[ "$(cat "$NS/2/enable")" = 1 ] || fail "namespace 2 was not restored"
}

dm_back_over_its_disk_restores() {
	dmsetup remove --noudevsync "$DM" && dm_over /dev/nullb0 || return
	"$CLI" restore "$SAVED" || fail "restore failed with the stack as saved" || return
	[ "$(cat "$NS/1/cgroup_id")" = "$(cg_id stack/a)" ] || fail "namespace 1 not bound" || return
	grep -q "^$(devnum /dev/nullb0) .*riops=500" "$CG/stack/a/io.max" ||
		fail "namespace 1's limit is not on nullb0: $(cat "$CG/stack/a/io.max")" || return
	echo 1 > "$NS/1/enable" && [ "$(cat "$NS/1/enable")" = 1 ] || fail "namespace 1 does not enable"
}

teardown() {
	subsys_destroy "$NQN" && dmsetup remove --noudevsync "$DM" && rmmod nvmet_cgroup &&
	cg_remove stack && nullb_destroy nullb0 && nullb_destroy nullb1 && nullb_destroy nullb2 &&
	rmmod null_blk
}

ktap_print_header
ktap_set_plan 5
run_case "setup" setup
run_case "save_records_the_device_stack" save_records_the_stack
run_case "dm_rebuilt_over_another_disk_is_refused_and_nothing_written" dm_rebuilt_over_another_disk_is_refused
run_case "dm_back_over_its_disk_restores" dm_back_over_its_disk_restores
run_case "teardown" teardown
ktap_finished
