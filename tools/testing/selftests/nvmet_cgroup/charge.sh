#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Charging: a namespace's I/O shows in its cgroup's io.stat (and only with
# cgroup_id set); removing the cgroup falls back to the parent; the file
# backend's Flush, Write Zeroes and DSM work in the namespace's context.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:charge
SUB=$NVMET_CFS/subsystems/$NQN
MNT=/mnt/charge

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 256 && brd_create 256 &&
	mkfs.ext4 -q -F -b 4096 /dev/ram0 && mkdir -p "$MNT" && mount -o noatime /dev/ram0 "$MNT" &&
	fallocate -l 128M "$MNT/ns.img" &&
	cg_create charge/a && cg_create charge/parent/child && cg_create charge/file &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id charge/a)" &&
	ns_create "$NQN" 2 /dev/nullb0 &&
	ns_create "$NQN" 3 /dev/nullb0 cgroup_id="$(cg_id charge/parent/child)" &&
	ns_create "$NQN" 4 "$MNT/ns.img" cgroup_id="$(cg_id charge/file)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN"
}

# 4. io.stat of the namespace's cgroup grows by what fio did (within 5 %)
io_stat_matches_fio() {
	local dev r0 w0 ri0 wi0 r1 w1 ri1 wi1 n=4096 bytes=$((4096 * 4096))
	dev=$(host_dev "$NQN" 1) || return
	r0=$(cg_stat charge/a /dev/nullb0 rbytes); ri0=$(cg_stat charge/a /dev/nullb0 rios)
	w0=$(cg_stat charge/a /dev/nullb0 wbytes); wi0=$(cg_stat charge/a /dev/nullb0 wios)
	fio_job "$dev" randread 4k --size=$bytes >/dev/null &&
	fio_job "$dev" randwrite 4k --size=$bytes >/dev/null || return
	r1=$(cg_stat charge/a /dev/nullb0 rbytes); ri1=$(cg_stat charge/a /dev/nullb0 rios)
	w1=$(cg_stat charge/a /dev/nullb0 wbytes); wi1=$(cg_stat charge/a /dev/nullb0 wios)
	echo "io.stat delta: rbytes=$((r1 - r0)) rios=$((ri1 - ri0)) wbytes=$((w1 - w0)) wios=$((wi1 - wi0)); fio: $bytes bytes, $n ios each way"
	within $((r1 - r0)) $bytes 5 && within $((ri1 - ri0)) $n 5 &&
	within $((w1 - w0)) $bytes 5 && within $((wi1 - wi0)) $n 5 ||
		fail "io.stat does not match fio's totals"
}

# 4. with cgroup_id 0, the cgroup's line does not grow
unset_ns_not_charged() {
	local dev before after
	dev=$(host_dev "$NQN" 2) || return
	before=$(cg_stat charge/a /dev/nullb0 rios)
	fio_job "$dev" randread 4k --size=8M >/dev/null || return
	after=$(cg_stat charge/a /dev/nullb0 rios)
	[ "$before" = "$after" ] || fail "cgroup charged for a namespace without cgroup_id: $before -> $after"
}

# 8. the cgroup is removed under I/O: I/O goes on, charged to the parent; a
# cgroup re-created at the same path has a new ID and is not picked up
cgroup_removed_under_io() {
	local dev old_id new_id p0 p1 c1 pid
	dev=$(host_dev "$NQN" 3) || return
	old_id=$(cg_id charge/parent/child)
	fio_job "$dev" randread 4k --time_based --runtime=6 > /tmp/fio8.out &
	pid=$!
	sleep 2
	rmdir "$CG/charge/parent/child" || { wait $pid; return 1; }
	p0=$(cg_stat charge/parent /dev/nullb0 rios)
	sleep 2
	mkdir "$CG/charge/parent/child" || { wait $pid; return 1; }
	new_id=$(cg_id charge/parent/child)
	wait $pid || fail "fio failed after the cgroup was removed" || return
	p1=$(cg_stat charge/parent /dev/nullb0 rios)
	c1=$(cg_stat charge/parent/child /dev/nullb0 rios)
	echo "parent rios after removal: +$((p1 - p0)); new child ($new_id, was $old_id): $c1"
	[ "$new_id" != "$old_id" ] || fail "re-created cgroup has the same id" || return
	[ $((p1 - p0)) -gt 100 ] || fail "parent not charged after the removal" || return
	[ "$c1" = 0 ] || fail "re-created cgroup was charged without re-setting cgroup_id"
}

# 11. file backend Flush, Write Zeroes and DSM run from the namespace's
# context (inline in its worker).  What io.stat can show: ext4 turns these
# into metadata changes whose I/O jbd2 writes, and brd has no cache to
# flush, so only their success and the data are checked; that they ran in
# the worker (nvmet_req_run_work) is what the KASAN/lockdep run covers.
file_flush_wz_dsm() {
	local dev
	dev=$(host_dev "$NQN" 4) || return
	nvme flush "$dev" -n 4 >/dev/null || fail "flush failed" || return
	fio_job "$dev" write 4k --size=1M >/dev/null || return
	# 4 KiB LBAs (ext4 -b 4096): 256 blocks are the 1 MiB fio wrote
	[ "$(cat "/sys/block/${dev#/dev/}/queue/logical_block_size")" = 4096 ] ||
		fail "unexpected LBA size" || return
	nvme write-zeroes "$dev" -n 4 -s 0 -c 255 >/dev/null || fail "write zeroes failed" || return
	[ "$(dd if="$dev" bs=4k count=256 iflag=direct 2>/dev/null | tr -d '\0' | wc -c)" = 0 ] ||
		fail "write zeroes did not zero the range" || return
	nvme dsm "$dev" -n 4 -d -s 0 -b 256 >/dev/null || fail "dsm failed" || return
	fio_verify "$dev"
}

teardown() {
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	umount "$MNT" && cg_remove charge && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && rmmod null_blk brd
}

ktap_print_header
ktap_set_plan 6
run_case "setup" setup
run_case "io_stat_matches_fio_totals" io_stat_matches_fio
run_case "cgroup_id_0_not_charged" unset_ns_not_charged
run_case "cgroup_removed_under_io_falls_back_to_parent" cgroup_removed_under_io
run_case "file_flush_write_zeroes_dsm" file_flush_wz_dsm
run_case "teardown" teardown
ktap_finished
