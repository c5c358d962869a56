#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Smoke test: nvmet_cgroup loads into the real nvmet stack, and a null_blk
# bdev namespace and an ext4-file namespace carry verified I/O over nvme-tcp
# and nvme-loop; then everything is torn down and the module unloads.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:smoke
MNT=/mnt/smoke

module_loads() {
	modprobe nvmet_cgroup || return
	lsmod | grep -q '^nvmet_cgroup ' || fail "nvmet_cgroup is not listed by lsmod" || return
	# the dependency on nvmet is what makes modprobe load it first
	lsmod | awk '$1 == "nvmet" {print $4}' | grep -qw nvmet_cgroup ||
		fail "nvmet does not list nvmet_cgroup as a user" || return
	dmesg | grep -q 'nvmet_cgroup: loaded' || fail "no load message in dmesg"
}

file_backing() {
	brd_create 512 &&
	mkfs.ext4 -q -F /dev/ram0 &&
	mkdir -p "$MNT" && mount -o noatime /dev/ram0 "$MNT" &&
	fallocate -l 256M "$MNT/ns.img"
}

target_up() {
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 &&
	ns_create "$NQN" 2 "$MNT/ns.img" &&
	port_create 1 tcp && port_add_subsys 1 "$NQN" &&
	port_create 2 loop && port_add_subsys 2 "$NQN"
}

# io_over TRANSPORT: connect, verify I/O on both namespaces, disconnect.
io_over() {
	local dev nsid rc=0
	host_connect "$1" "$NQN" || return
	for nsid in 1 2; do
		if ! dev=$(host_dev "$NQN" "$nsid"); then
			rc=1
			break
		fi
		if ! fio_verify "$dev"; then
			fail "fio verify on $dev (nsid $nsid, $1) failed"
			rc=1
			break
		fi
	done
	host_disconnect "$NQN" || rc=1
	return "$rc"
}

teardown() {
	port_destroy 1 && port_destroy 2 &&
	subsys_destroy "$NQN" &&
	umount "$MNT" && rmmod brd &&
	nullb_destroy nullb0 && rmmod null_blk &&
	rmmod nvme_tcp nvme_loop nvmet_tcp
}

module_unloads() {
	rmmod nvmet_cgroup || return
	! lsmod | grep -q '^nvmet_cgroup ' || fail "still loaded" || return
	dmesg | grep -q 'nvmet_cgroup: unloaded' || fail "no unload message in dmesg" || return
	rmmod nvmet
}

ktap_print_header
ktap_set_plan 8
run_case "module_loads_after_nvmet" module_loads
run_case "null_blk_memory_backed" nullb_create nullb0 512
run_case "ext4_file_on_brd" file_backing
run_case "target_bdev_and_file_ns_tcp_and_loop_ports" target_up
run_case "fio_verify_over_tcp" io_over tcp
run_case "fio_verify_over_loop" io_over loop
run_case "teardown" teardown
run_case "module_unloads" module_unloads
ktap_finished
