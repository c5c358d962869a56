#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Stacked devices: io.cost on a null_blk under a stacking driver must keep
# the namespaces above it off the fast path, since the transport's thread
# could then wait for that cgroup (for a tag of the stacking device, or for
# a metadata read of the filesystem on it).  The fast path sees only the
# queue right under the namespace: loop is blk-mq, and with no policy of
# its own it looked safe.
#   1: a file on ext4 on a loop device over nullb0
#   2: a file on ext4 on a dm-linear device over nullb1 (bio-based)
#   3: the loop device itself, as a bdev namespace
#   4: a dm-linear device over nullb3, as a bdev namespace
# Namespace 4 first runs with no policy anywhere: a bio-based queue keeps
# its namespace in its context on its own (its driver may sleep the
# submitter).  The fast path's plain test asks nothing about the queue's
# kind: fast_context.rs sees it at enable.  Then io.cost is enabled on
# every null_blk.  Where commands run is counted by the kprobe of
# fastpath_lib.sh.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./fastpath_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:stacked
MNT=/mnt/stacked
DM=nvmet-cgroup-linear
DM_BDEV=nvmet-cgroup-linear-bdev

# loop_of DEV: the loop device backed by DEV (cases run in subshells, so
# nothing set in setup survives it)
loop_of() {
	losetup --noheadings --output NAME --associated "$1"
}

# dm_linear NAME DEV: a dm-linear device NAME over all of DEV; prints its
# node
dm_linear() {
	local sectors dm
	sectors=$(blockdev --getsz "$2") &&
	dmsetup create --noudevsync "$1" --table "0 $sectors linear $2 0" &&
	dm=/dev/$(dmsetup info -c --noheadings -o blkdevname "$1") &&
	wait_for 5 test -b "$dm" || fail "dm-linear device $1 did not appear" || return
	echo "$dm"
}

setup() {
	local dm loop dmdev
	modprobe nvmet_cgroup && nullb_create nullb0 256 && nullb_create nullb1 256 &&
	nullb_create nullb2 256 && nullb_create nullb3 256 || return
	loop=$(losetup --find --show --direct-io=on /dev/nullb0) || fail "losetup failed" || return
	dm=$(dm_linear "$DM" /dev/nullb1) && dmdev=$(dm_linear "$DM_BDEV" /dev/nullb3) || return
	mkdir -p "$MNT/loop" "$MNT/dm" &&
	mkfs.ext4 -q -F -b 4096 "$loop" && mount -o noatime "$loop" "$MNT/loop" &&
	mkfs.ext4 -q -F -b 4096 "$dm" && mount -o noatime "$dm" "$MNT/dm" &&
	fallocate -l 64M "$MNT/loop/ns.img" && fallocate -l 64M "$MNT/dm/ns.img" || return
	cg_create stacked/loopfile && cg_create stacked/dmfile && cg_create stacked/loopdev &&
	cg_create stacked/dmdev &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 "$MNT/loop/ns.img" cgroup_id="$(cg_id stacked/loopfile)" &&
	ns_create "$NQN" 2 "$MNT/dm/ns.img" cgroup_id="$(cg_id stacked/dmfile)" || return
	loop=$(losetup --find --show --direct-io=on /dev/nullb2) || fail "losetup failed" || return
	ns_create "$NQN" 3 "$loop" cgroup_id="$(cg_id stacked/loopdev)" &&
	ns_create "$NQN" 4 "$dmdev" cgroup_id="$(cg_id stacked/dmdev)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN" &&
	fp_tracing_options || return
	echo "$FP_PROBE" >> "$TRACE/kprobe_events" || fail "cannot add the kprobe" || return
	echo 8192 > "$TRACE/buffer_size_kb"
}

# no policy anywhere: the namespace on a bio-based device runs in its
# context (fastpath.sh shows a blk-mq one's running inline)
bio_based_keeps_the_context() {
	fp_expect "$NQN" 4 context "dm-linear device, no policy"
}

# io.cost below every stacking device: each namespace runs in its context
iocost_below_keeps_the_context() {
	# a model that does not limit
	iocost_enable /dev/nullb0 1000000 && iocost_enable /dev/nullb1 1000000 &&
		iocost_enable /dev/nullb2 1000000 && iocost_enable /dev/nullb3 1000000 || return
	fp_expect "$NQN" 1 context "file on ext4 on loop, io.cost on nullb0" &&
	fp_expect "$NQN" 2 context "file on ext4 on dm-linear, io.cost on nullb1" &&
	fp_expect "$NQN" 3 context "loop device, io.cost on nullb2" &&
	fp_expect "$NQN" 4 context "dm-linear device, io.cost on nullb3"
}

# the I/O is still charged through the stacking drivers: loop's workers
# and dm pass the bio's cgroup down to the null_blk
charged_on_the_lower_device() {
	local cg dev n
	for cg in loopfile:nullb0 dmfile:nullb1 loopdev:nullb2 dmdev:nullb3; do
		IFS=: read -r cg dev <<< "$cg"
		n=$(cg_stat "stacked/$cg" "/dev/$dev" rios)
		echo "stacked/$cg: $n reads charged on $dev"
		[ "${n:-0}" -ge "$FP_N" ] || fail "stacked/$cg: reads not charged on $dev" || return
	done
}

teardown() {
	local d
	echo '-:nvmet_cgroup_test/run' >> "$TRACE/kprobe_events"
	for d in nullb0 nullb1 nullb2 nullb3; do
		echo "$(devnum /dev/$d) enable=0" > "$CG/io.cost.qos"
	done
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	umount "$MNT/loop" && umount "$MNT/dm" &&
	losetup -d "$(loop_of /dev/nullb0)" && losetup -d "$(loop_of /dev/nullb2)" && dmsetup remove --noudevsync "$DM" &&
	dmsetup remove --noudevsync "$DM_BDEV" &&
	cg_remove stacked && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && nullb_destroy nullb2 && nullb_destroy nullb3 &&
	rmmod null_blk
}

ktap_print_header
ktap_set_plan 5
run_case "setup" setup
run_case "bio_based_device_keeps_the_context" bio_based_keeps_the_context
run_case "iocost_below_stacking_devices_keeps_the_context" iocost_below_keeps_the_context
run_case "charged_on_the_lower_device" charged_on_the_lower_device
run_case "teardown" teardown
ktap_finished
