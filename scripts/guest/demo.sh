#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest (see scripts/demo): export a ramdisk namespace over
# nvme-loop, give it a cgroup, and show io.max throttling it.
set -euo pipefail
cd "$(dirname "$0")/../../tools/testing/selftests/nvmet_cgroup"
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:demo
NS=$NVMET_CFS/subsystems/$NQN/namespaces/1

echo "== nvmet_cgroup is loaded into the nvmet stack"
lsmod | grep -E '^(nvmet_cgroup|nvmet) '
dmesg | grep 'nvmet_cgroup:' | tail -n 3

brd_create 256
cg_create tenant-a
subsys_create "$NQN"
mkdir "$NS"
echo -n /dev/ram0 > "$NS/device_path"
echo "== cgroup tenant-a has id $(cg_id tenant-a); writing it to $NS/cgroup_id"
cg_id tenant-a > "$NS/cgroup_id"
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
echo "$(devnum /dev/ram0) riops=$limit" > "$CG/tenant-a/io.max"
limited=$(run "io.max riops=$limit on tenant-a")
echo "== throttled to $((100 * limited / unlimited)) % of the unlimited rate (limit: 25 %)"
echo "== tenant-a io.stat: $(grep "^$(devnum /dev/ram0) " "$CG/tenant-a/io.stat")"

host_disconnect "$NQN"
port_destroy 1
subsys_destroy "$NQN"
cg_remove tenant-a
