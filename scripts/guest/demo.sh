#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest (see scripts/demo): export a ramdisk namespace over
# nvme-loop, give it a cgroup, and show io.max throttling it, in three
# commands of the nvmet-cgroup CLI (bind, limit, status; built by
# scripts/demo).
set -euo pipefail
cd "$(dirname "$0")/../../tools/testing/selftests/nvmet_cgroup"
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:demo
NS=$NVMET_CFS/subsystems/$NQN/namespaces/1
CLI=$(cd ../../../.. && pwd)/target/release/nvmet-cgroup

echo "== nvmet_cgroup is loaded into the nvmet stack"
lsmod | grep -E '^(nvmet_cgroup|nvmet) '
dmesg | grep 'nvmet_cgroup:' | tail -n 3

brd_create 256
subsys_create "$NQN"
mkdir "$NS"
echo -n /dev/ram0 > "$NS/device_path"
echo "== nvmet-cgroup bind $NQN 1 --cgroup tenant-a --create"
"$CLI" bind "$NQN" 1 --cgroup tenant-a --create
echo "   (cgroup_id is now $(cat "$NS/cgroup_id"), the inode number of /sys/fs/cgroup/tenant-a)"
echo 1 > "$NS/enable"
port_create 1 loop
port_add_subsys 1 "$NQN"
host_connect loop "$NQN"
dev=$(host_dev "$NQN" 1)

run() {	# LABEL
	local out
	out=$(fio_job "$dev" randread 4k --time_based --runtime=5 --ramp_time=1)
	printf '%-34s %8s IOPS\n' "$1" "${out%% *}" >&2
	echo "${out%% *}"
}
echo "== fio 4k randread, iodepth 32, on $dev (namespace 1, /dev/ram0)"
unlimited=$(run "no limit")
limit=$((unlimited / 4))
echo "== nvmet-cgroup limit $NQN 1 --riops $limit"
"$CLI" limit "$NQN" 1 --riops "$limit"
limited=$(run "io.max riops=$limit on tenant-a")
echo "== throttled to $((100 * limited / unlimited)) % of the unlimited rate (limit: 25 %)"
echo "== nvmet-cgroup status $NQN"
"$CLI" status "$NQN"

host_disconnect "$NQN"
port_destroy 1
subsys_destroy "$NQN"
cg_remove tenant-a
