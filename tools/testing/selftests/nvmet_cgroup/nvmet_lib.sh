# SPDX-License-Identifier: GPL-2.0
# Helpers that build and tear down nvmet targets, backing devices and host
# connections in the guest; sourced by the tests.  Every helper returns
# non-zero with a message on stderr when a step does not take effect.

NVMET_CFS=/sys/kernel/config/nvmet
NULLB_CFS=/sys/kernel/config/nullb
TCP_ADDR=127.0.0.1
TCP_PORT=4420
# nvme-rdma runs over siw (soft iWARP) bound to the guest's Ethernet device
# (scripts/vm gives it one virtio-net device on an isolated network), with
# RDMA_ADDR on it: not on lo, whose zero hardware address gives siw a zero
# GID, which the GID cache drops, so the RDMA CM finds no RDMA device for
# an address there (ENODEV), and takes any 127/8 destination for IB's
# loopback (cma_resolve_loopback(): ENOENT on iWARP).  192.0.2.1 is
# TEST-NET-1 (RFC 5737).  siw's connections are kernel TCP sockets, so
# nvmet-rdma listens on a port of its own, not nvmet-tcp's.
RDMA_ADDR=192.0.2.1
RDMA_PORT=4421
# nvme-fc runs over nvme-fcloop: one host (local) port, and per nvmet port
# a target port and the remote port that connects the host to it; the
# world wide names are blktests' (common/nvme), the target's plus the port ID
FC_HOST_WWNN=0x10001100aa000001
FC_HOST_WWPN=0x20001100aa000001
FC_TGT_WWNN=0x10001100ab000000
FC_TGT_WWPN=0x20001100ab000000
FCLOOP=/sys/class/fcloop/ctl
# The transports the parametrised cases run over (charge.sh, iomax.sh,
# iocost.sh, isolation.sh, abort.sh, faults.sh): all four on the
# project's kernels; scripts/check-debian gives "loop tcp" (Debian's
# kernel builds no nvme-fcloop).
NVMET_TRANSPORTS=${NVMET_TRANSPORTS:-loop tcp rdma fc}
# The transports of the long per-transport cases (iomax.sh, iocost.sh,
# isolation.sh, abort.sh): NVMET_TRANSPORTS, but `make check` gives
# "loop tcp" to stay within its time (and isolation.sh tcp alone, through
# ISOLATION_TRANSPORTS); their rdma and fc runs are in `make check-full`,
# like faults.sh.  charge.sh runs over all four in both.
NVMET_LONG_TRANSPORTS=${NVMET_LONG_TRANSPORTS:-$NVMET_TRANSPORTS}

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

# rdma_netdev: the guest's first Ethernet device (ARPHRD_ETHER)
rdma_netdev() {
	local d t
	for d in /sys/class/net/*; do
		read -r t < "$d/type" && [ "$t" = 1 ] && { echo "${d##*/}"; return 0; }
	done
	fail "no Ethernet device for siw (scripts/vm gives the guest one)"
}

# rdma_setup: nvmet-rdma and nvme-rdma, the Ethernet device up with
# RDMA_ADDR, and siw bound to it (once)
rdma_setup() {
	local nd
	modprobe siw && modprobe nvmet_rdma && modprobe nvme_rdma && nd=$(rdma_netdev) || return
	RDMA_LINK=siw_$nd
	ip link set "$nd" up || return
	ip -4 addr show dev "$nd" | grep -q " $RDMA_ADDR/" ||
		ip addr add "$RDMA_ADDR/24" dev "$nd" || fail "cannot add $RDMA_ADDR to $nd" || return
	rdma link show "$RDMA_LINK/1" > /dev/null 2>&1 && return
	rdma link add "$RDMA_LINK" type siw netdev "$nd" ||
		fail "cannot bind siw to $nd (rdma link add)" || return
	wait_for 10 rdma_link_active || fail "$RDMA_LINK did not become ACTIVE: $(rdma link show 2>&1)"
}

rdma_link_active() {
	rdma link show "$RDMA_LINK/1" 2>/dev/null | grep -q 'state ACTIVE'
}

# fc_setup: nvme-fcloop (which loads nvmet-fc and nvme-fc) and its host
# port (once: the port goes with the module, in transport_unload)
fc_setup() {
	[ -d /sys/module/nvme_fcloop ] && return
	modprobe nvme_fcloop && [ -d "$FCLOOP" ] || fail "no $FCLOOP" || return
	echo "wwnn=$FC_HOST_WWNN,wwpn=$FC_HOST_WWPN" > "$FCLOOP/add_local_port" ||
		fail "fcloop: cannot add the host port"
}

fc_tgt() {	# NN|PN PORT_ID: the target port's world wide name
	if [ "$1" = NN ]; then
		printf '0x%016x' $((FC_TGT_WWNN + $2))
	else
		printf '0x%016x' $((FC_TGT_WWPN + $2))
	fi
}

fc_traddr() {	# PORT_ID
	echo "nn-$(fc_tgt NN "$1"):pn-$(fc_tgt PN "$1")"
}

FC_HOST_TRADDR=nn-$FC_HOST_WWNN:pn-$FC_HOST_WWPN

# port_create ID loop|tcp|rdma|fc: a port; tcp listens on
# $TCP_ADDR:$TCP_PORT, rdma on $RDMA_ADDR:$RDMA_PORT (siw on lo), fc is an
# fcloop target port connected to the host port.
port_create() {
	local p=$NVMET_CFS/ports/$1
	case "$2" in
	tcp) modprobe nvmet_tcp && modprobe nvme_tcp ;;
	rdma) rdma_setup ;;
	fc) fc_setup ;;
	loop) modprobe nvme_loop ;;
	*) fail "port_create: unknown transport '$2'" ;;
	esac || return
	mkdir "$p" || return
	case "$2" in
	tcp)
		echo ipv4 > "$p/addr_adrfam" && echo "$TCP_ADDR" > "$p/addr_traddr" &&
		echo "$TCP_PORT" > "$p/addr_trsvcid" ;;
	rdma)
		echo ipv4 > "$p/addr_adrfam" && echo "$RDMA_ADDR" > "$p/addr_traddr" &&
		echo "$RDMA_PORT" > "$p/addr_trsvcid" ;;
	fc)
		echo "wwnn=$(fc_tgt NN "$1"),wwpn=$(fc_tgt PN "$1")" > "$FCLOOP/add_target_port" &&
		echo "wwnn=$(fc_tgt NN "$1"),wwpn=$(fc_tgt PN "$1"),lpwwnn=$FC_HOST_WWNN,lpwwpn=$FC_HOST_WWPN,roles=0x60" \
			> "$FCLOOP/add_remote_port" || fail "fcloop: cannot add the ports of nvmet port $1" || return
		echo fc > "$p/addr_adrfam" && echo "$(fc_traddr "$1")" > "$p/addr_traddr" ;;
	esac || return
	echo "$2" > "$p/addr_trtype"
}

port_add_subsys() {
	ln -s "$NVMET_CFS/subsystems/$2" "$NVMET_CFS/ports/$1/subsystems/$2"
}

port_destroy() {
	local p=$NVMET_CFS/ports/$1 l tr
	[ -d "$p" ] || return 0
	for l in "$p"/subsystems/*; do
		[ -L "$l" ] && rm "$l"
	done
	read -r tr < "$p/addr_trtype"
	rmdir "$p" || return
	if [ "$tr" = fc ]; then
		echo "wwnn=$(fc_tgt NN "$1"),wwpn=$(fc_tgt PN "$1")" > "$FCLOOP/del_target_port" &&
		echo "wwnn=$(fc_tgt NN "$1"),wwpn=$(fc_tgt PN "$1")" > "$FCLOOP/del_remote_port" ||
			fail "fcloop: cannot delete the ports of nvmet port $1"
	fi
}

# transport_unload TRANSPORT...: unload what port_create loaded for these
# transports (their ports destroyed and hosts disconnected first)
transport_unload() {
	local tr nd
	for tr in "$@"; do
		case "$tr" in
		loop) rmmod nvme_loop ;;
		tcp) rmmod nvme_tcp nvmet_tcp ;;
		rdma)
			nd=$(rdma_netdev) && rmmod nvme_rdma nvmet_rdma &&
			{ ! rdma link show "siw_$nd/1" > /dev/null 2>&1 || rdma link del "siw_$nd"; } &&
			rmmod siw && ip addr del "$RDMA_ADDR/24" dev "$nd" ;;
		fc)
			[ ! -d /sys/module/nvme_fcloop ] ||
			{ echo "wwnn=$FC_HOST_WWNN,wwpn=$FC_HOST_WWPN" > "$FCLOOP/del_local_port" &&
			  rmmod nvme_fcloop nvmet_fc nvme_fc; } ;;
		esac || fail "cannot unload transport $tr" || return
	done
}

# transport_port TRANSPORT: the port ID ports_create gives that transport
transport_port() {
	case "$1" in loop) echo 1 ;; tcp) echo 2 ;; rdma) echo 3 ;; fc) echo 4 ;; esac
}

# ports_create "TRANSPORT..." NQN...: a port per transport (transport_port),
# each exporting every NQN
ports_create() {
	local tr port nqn
	for tr in $1; do
		port=$(transport_port "$tr")
		port_create "$port" "$tr" || return
		for nqn in "${@:2}"; do
			port_add_subsys "$port" "$nqn" || return
		done
	done
}

# ports_destroy "TRANSPORT...": their ports (ports_create), then unload them
ports_destroy() {
	local tr
	for tr in $1; do
		port_destroy "$(transport_port "$tr")" || return
	done
	transport_unload $1
}

# with_loop "TRANSPORT...": the list with loop first (added if missing)
with_loop() {
	local tr out=loop
	for tr in $1; do
		[ "$tr" = loop ] || out="$out $tr"
	done
	echo "$out"
}

# port_of TRANSPORT NQN: the ID of a port of that transport that exports NQN
port_of() {
	local p tr
	for p in "$NVMET_CFS"/ports/*; do
		[ -L "$p/subsystems/$2" ] || continue
		read -r tr < "$p/addr_trtype"
		[ "$tr" = "$1" ] && { echo "${p##*/}"; return 0; }
	done
	fail "no $1 port exports $2"
}

# host_connect loop|tcp|rdma|fc NQN [nvme connect option...]: connect the
# host side over that transport (rdma and fc: to the port that exports NQN).
host_connect() {
	local tr=$1 nqn=$2 out port
	shift 2
	case "$tr" in
	tcp) out=$(nvme connect -t tcp -a "$TCP_ADDR" -s "$TCP_PORT" -n "$nqn" "$@" 2>&1) ;;
	rdma) out=$(nvme connect -t rdma -a "$RDMA_ADDR" -s "$RDMA_PORT" -n "$nqn" "$@" 2>&1) ;;
	fc)
		port=$(port_of fc "$nqn") || return
		out=$(nvme connect -t fc -a "$(fc_traddr "$port")" -w "$FC_HOST_TRADDR" \
			-n "$nqn" "$@" 2>&1) ;;
	*) out=$(nvme connect -t loop -n "$nqn" "$@" 2>&1) ;;
	esac || fail "nvme connect -t $tr -n $nqn $*: $out"
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
