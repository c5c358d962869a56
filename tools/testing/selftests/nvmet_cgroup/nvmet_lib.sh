# SPDX-License-Identifier: GPL-2.0
# Helpers that build and tear down nvmet targets, backing devices and host
# connections in the guest; sourced by the tests.  Every helper returns
# non-zero with a message on stderr when a step does not take effect.

NVMET_CFS=/sys/kernel/config/nvmet
NULLB_CFS=/sys/kernel/config/nullb
TCP_ADDR=127.0.0.1
TCP_PORT=4420

fail() {
	echo "$*" >&2
	return 1
}

# Wait up to $1 seconds for the test command "$2..." to succeed.
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# nullb_create NAME SIZE_MB [attr=value...]: a memory-backed blk-mq null_blk.
nullb_create() {
	local name=$1 size=$2 kv
	shift 2
	modprobe null_blk nr_devices=0 || return
	mkdir "$NULLB_CFS/$name" || return
	echo "$size" > "$NULLB_CFS/$name/size" &&
	echo 1 > "$NULLB_CFS/$name/memory_backed" &&
	echo 4096 > "$NULLB_CFS/$name/blocksize" || return
	for kv in "$@"; do
		echo "${kv#*=}" > "$NULLB_CFS/$name/${kv%%=*}" || return
	done
	echo 1 > "$NULLB_CFS/$name/power" || return
	wait_for 5 test -b "/dev/$name" || fail "/dev/$name did not appear"
}

nullb_destroy() {
	[ -d "$NULLB_CFS/$1" ] || return 0
	echo 0 > "$NULLB_CFS/$1/power"
	rmdir "$NULLB_CFS/$1"
}

# subsys_create NQN
subsys_create() {
	mkdir "$NVMET_CFS/subsystems/$1" &&
	echo 1 > "$NVMET_CFS/subsystems/$1/attr_allow_any_host"
}

# ns_create NQN NSID DEVICE_PATH [attr=value...]: configure, then enable.
ns_create() {
	local ns=$NVMET_CFS/subsystems/$1/namespaces/$2 path=$3 kv
	shift 3
	mkdir "$ns" &&
	echo -n "$path" > "$ns/device_path" || return
	for kv in "$@"; do
		echo "${kv#*=}" > "$ns/${kv%%=*}" || return
	done
	echo 1 > "$ns/enable" || return
	[ "$(cat "$ns/enable")" = 1 ] || fail "namespace $2 of $1 did not enable"
}

ns_destroy() {
	local ns=$NVMET_CFS/subsystems/$1/namespaces/$2
	[ -d "$ns" ] || return 0
	echo 0 > "$ns/enable" && rmdir "$ns"
}

subsys_destroy() {
	local s=$NVMET_CFS/subsystems/$1 ns
	[ -d "$s" ] || return 0
	for ns in "$s"/namespaces/*; do
		[ -d "$ns" ] && ns_destroy "$1" "$(basename "$ns")"
	done
	rmdir "$s"
}

# port_create ID tcp|loop: a port; tcp listens on $TCP_ADDR:$TCP_PORT.
port_create() {
	local p=$NVMET_CFS/ports/$1
	mkdir "$p" || return
	if [ "$2" = tcp ]; then
		modprobe nvmet_tcp && modprobe nvme_tcp || return
		echo ipv4 > "$p/addr_adrfam" &&
		echo "$TCP_ADDR" > "$p/addr_traddr" &&
		echo "$TCP_PORT" > "$p/addr_trsvcid" || return
	else
		modprobe nvme_loop || return
	fi
	echo "$2" > "$p/addr_trtype"
}

port_add_subsys() {
	ln -s "$NVMET_CFS/subsystems/$2" "$NVMET_CFS/ports/$1/subsystems/$2"
}

port_destroy() {
	local p=$NVMET_CFS/ports/$1 l
	[ -d "$p" ] || return 0
	for l in "$p"/subsystems/*; do
		[ -L "$l" ] && rm "$l"
	done
	rmdir "$p"
}

# host_connect tcp|loop NQN [nvme connect option...]: connect the host side
# over that transport.
host_connect() {
	local tr=$1 nqn=$2 out
	shift 2
	if [ "$tr" = tcp ]; then
		out=$(nvme connect -t tcp -a "$TCP_ADDR" -s "$TCP_PORT" -n "$nqn" "$@" 2>&1)
	else
		out=$(nvme connect -t loop -n "$nqn" "$@" 2>&1)
	fi || fail "nvme connect -t $tr -n $nqn $*: $out"
}

# disconnect_with_fio NQN PID: disconnect the host (at most 30 s) while fio
# PID has I/O queued on it, then kill fio, which may spin on the vanished
# devices: it must exit at once, i.e. none of its I/O is stuck in the
# kernel.  Prints how long the disconnect took; the caller reaps PID.
disconnect_with_fio() {
	local start=$SECONDS took
	timeout 30 nvme disconnect -n "$1" > /dev/null ||
		{ kill -KILL "$2"; fail "disconnect of $1 failed or took over 30 s"; return; }
	took=$((SECONDS - start))
	kill -KILL "$2" 2>/dev/null
	timeout 10 tail --pid="$2" -f /dev/null ||
		fail "fio is stuck in the kernel after the disconnect of $1" || return
	echo "disconnect of $1 took ${took} s; fio exited"
}

host_disconnect() {
	local out
	out=$(nvme disconnect -n "$1" 2>&1) || { fail "nvme disconnect -n $1: $out"; return; }
	case "$out" in
	*"disconnected 0 "*) fail "nvme disconnect -n $1: $out" ;;
	esac
}

# host_dev NQN NSID: print the host block device of that namespace (waits).
# The attributes are read with bash's read, not cat: under emulation a
# fork costs about 0.1 s, and with ten host disks a lookup forked twenty
# times (a traced faults.sh spent about 100 s in here).
host_dev() {
	local nqn=$1 nsid=$2 b i n q
	for ((i = 0; i < 100; i++)); do
		for b in /sys/block/nvme*n*; do
			n= q=
			read -r n 2>/dev/null < "$b/nsid"
			[ "$n" = "$nsid" ] || continue
			read -r q 2>/dev/null < "$b/device/subsysnqn"
			[ "$q" = "$nqn" ] || continue
			[ -b "/dev/${b##*/}" ] || continue
			echo "/dev/${b##*/}"
			return 0
		done
		sleep 0.1
	done
	fail "no host block device for $nqn namespace $nsid"
}

# fio_verify DEV: write a pattern with checksums and read it back: 1024
# writes and reads of 4 KiB (nvme-tcp under emulation can run as slowly as
# 25 IOPS, so a larger size makes a boot outlast scripts/vm's limit).
fio_verify() {
	fio --name=verify --filename="$1" --rw=randwrite --bs=4k --size=4M \
		--direct=1 --ioengine=libaio --iodepth=16 --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--output-format=terse >/dev/null
}

# brd_create SIZE_MB: one ramdisk at /dev/ram0.
brd_create() {
	modprobe brd rd_nr=1 rd_size=$(($1 * 1024)) &&
	wait_for 5 test -b /dev/ram0
}

# pci_nvme_ctrl: load the NVMe PCI driver and print the character device of
# the emulated controller scripts/vm attaches (/dev/nvmeN, transport pcie),
# once its first namespace's disk exists.
pci_nvme_ctrl() {
	local c t i
	modprobe nvme || return
	for ((i = 0; i < 100; i++)); do
		for c in /sys/class/nvme/nvme*; do
			t=
			read -r t 2>/dev/null < "$c/transport"
			[ "$t" = pcie ] || continue
			[ -b "/dev/${c##*/}n1" ] || continue
			echo "/dev/${c##*/}"
			return 0
		done
		sleep 0.1
	done
	fail "no NVMe PCI controller with a namespace (scripts/vm attaches one)"
}

# passthru_create NQN CTRL [cgroup_id=ID]: a passthru subsystem of the
# controller CTRL (/dev/nvmeN), enabled.
passthru_create() {
	local p=$NVMET_CFS/subsystems/$1/passthru
	subsys_create "$1" &&
	echo -n "$2" > "$p/device_path" || return
	[ -z "${3:-}" ] || echo "${3#cgroup_id=}" > "$p/cgroup_id" || return
	echo 1 > "$p/enable"
}

# passthru_disk NQN: the disk of the passthru controller's namespace 1
passthru_disk() {
	local d
	d=$(cat "$NVMET_CFS/subsystems/$1/passthru/device_path")n1
	[ -b "$d" ] || fail "no disk $d" || return
	echo "$d"
}

# passthru_destroy NQN: disable passthru and remove the subsystem.
passthru_destroy() {
	local s=$NVMET_CFS/subsystems/$1
	[ -d "$s" ] || return 0
	echo 0 > "$s/passthru/enable" && rmdir "$s"
}
