#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The fault matrix: faults injected while fio writes and verifies
# (crc32c, verified as it goes) on a bdev and a file namespace with a cgroup
# over nvme-tcp (subsystem T) and the same over nvme-loop (subsystem L).
# nvme-rdma and nvme-fc (NVMET_TRANSPORTS) carry the disconnect rounds
# (subsystem D has a port of each transport) and the disable/enable under
# load, on a namespace 3 of subsystem R (bdev, rdma) and F (file, fc).
# That load must end with no I/O error and no verify error, and every fio
# must exit within a bound (a hung fio is a lost command).  Where a fault
# legitimately fails I/O (port unlink), the case names the errors it
# accepts, and checks that the namespace comes back with the data written
# before the fault intact.
#
# FAULT_ROUNDS=short (default, `make check`) or full (`make check-long`:
# the full round counts) scales every case; each case prints
# "fault: CASE rounds=N", from which scripts/check prints its table.
#
# The design's promises tested here (Documentation/design.rst): an enabled
# namespace with a cgroup holds a reference on the module (rmmod: EBUSY);
# a disable waits for that namespace's own commands only; a namespace's
# cgroup_id outlives the module; an enable that fails leaves nothing
# behind (no status line, no module reference, no cgroup reference).
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./memory_lib.sh

FAULT_ROUNDS=${FAULT_ROUNDS:-short}
NQN_T=nqn.2026-12.io.nvmet-cgroup:faults-tcp
NQN_L=nqn.2026-12.io.nvmet-cgroup:faults-loop
NQN_D=nqn.2026-12.io.nvmet-cgroup:faults-disconnect
NQN_M=nqn.2026-12.io.nvmet-cgroup:faults-many
NQN_X=nqn.2026-12.io.nvmet-cgroup:faults-memory
NQN_R=nqn.2026-12.io.nvmet-cgroup:faults-rdma
NQN_F=nqn.2026-12.io.nvmet-cgroup:faults-fc
# rdma and fc, when NVMET_TRANSPORTS has them: their subsystem letter and
# nvmet port (T's is 1, L's 2)
declare -A EXTRA_SUB=([rdma]=R [fc]=F) EXTRA_PORT=([rdma]=3 [fc]=4)
EXTRA=()
for tr in $NVMET_TRANSPORTS; do
	[ -z "${EXTRA_SUB[$tr]}" ] || EXTRA+=("$tr")
done
# the namespaces 3 disable_enable_under_load flaps
FLAP_SUBS="T L"
for tr in "${EXTRA[@]}"; do
	FLAP_SUBS="$FLAP_SUBS ${EXTRA_SUB[$tr]}"
done
MNT=/mnt/faults
HOG=/mnt/faults-hog
STATUS=/sys/kernel/debug/nvmet_cgroup/namespaces
OUT=/tmp/faults
# Over tcp, a host whose controller is lost gives up after 10 s rather than
# nvme-cli's 600 (see port_unlink_under_load)
TCP_LOSS="--ctrl-loss-tmo=10 --reconnect-delay=2"
# Namespaces with a cgroup that the host uses: subsystem letter and NSID.
# Namespace 3 of T (bdev) and L (file) is the one the cases disable.
HOST_NS="T 1 T 2 L 1 L 2 T 3 L 3 D 1 D 2"
for tr in "${EXTRA[@]}"; do
	HOST_NS="$HOST_NS ${EXTRA_SUB[$tr]} 3"
done

# rounds SHORT FULL: this run's round count
rounds() {
	if [ "$FAULT_ROUNDS" = full ]; then echo "$2"; else echo "$1"; fi
}

# the line scripts/check's table is made of
announce() {	# CASE ROUNDS
	echo "fault: $1 rounds=$2"
}

nqn() {
	case "$1" in
	T) echo "$NQN_T" ;; L) echo "$NQN_L" ;; D) echo "$NQN_D" ;;
	M) echo "$NQN_M" ;; X) echo "$NQN_X" ;;
	R) echo "$NQN_R" ;; F) echo "$NQN_F" ;;
	esac
}

ns_dir() {	# S NSID
	echo "$NVMET_CFS/subsystems/$(nqn "$1")/namespaces/$2"
}

# ns_set S NSID 0|1: disable or enable, a disable bounded (the hung-task
# detector fires at 60 s)
ns_set() {
	timeout 45 bash -c "echo $3 > $(ns_dir "$1" "$2")/enable" ||
		fail "namespace $2 of $1: enable=$3 failed or took over 45 s"
}

# Data written before a fault: the first 512 KiB of a namespace, sequential
# crc32c blocks that a verify_only run of the same job checks afterwards.
# The load writes elsewhere (LOAD_OFF), so the pattern must survive intact.
# One fio for all the devices: under emulation fio takes seconds to start.
# 64 KiB blocks: the load's io.max (LOAD_IOPS) also holds these reads, and
# 128 of 4 KiB took 26 s per check.
pattern() {	# write|check DEV...
	local mode jobs=() d
	if [ "$1" = write ]; then mode=--do_verify=1; else mode=--verify_only=1; fi
	shift
	for d in "$@"; do
		jobs+=(--name="pattern${d#/dev/}" --filename="$d")
	done
	timeout 180 fio --rw=write --bs=64k --size=512k --direct=1 --ioengine=libaio \
		--iodepth=8 --verify=crc32c --verify_fatal=1 --verify_state_save=0 "$mode" \
		--output-format=terse "${jobs[@]}" > /dev/null ||
		fail "pattern $mode on $* failed"
}

# The load: random 4k writes, each block read back and checked (crc32c)
# within 16 writes, until load_stop.  Its namespaces' cgroups hold it to
# LOAD_IOPS reads and writes a second (io.max, set in setup) while fio asks
# for twice that, so each namespace always has commands queued in the
# target when a fault strikes: the bdevs' in blk-throttle (the fast path),
# the files' in the lanes (io.max on their ext4's device moves them there).
# Few commands a second, because the debug kernel under emulation is slow:
# at 20 IOPS a namespace (160 with the verifies) the load took most of the
# guest's CPUs, and a `nvme disconnect` of another subsystem took 50-74 s
# instead of 7-10.  fio's own rate bounds the load where no io.max applies
# (cgroup_rmdir_under_load's new cgroups).  --thread: one process.
LOAD_IOPS=5
LOAD_OFF=4M
LOAD_SIZE=8M
declare -A LOAD_PID
# writes_done DISK: writes the host's DISK has completed
writes_done() {
	local w
	read -r _ _ _ _ w _ < "/sys/block/$1/stat" && echo "$w"
}

moved() {	# DISK WRITES: DISK completed more than WRITES
	[ "$(writes_done "$1")" -gt "$2" ]
}

# load_start S [FIO_OPTION...]: one fio, a job per namespace 1 and 2 of
# subsystem S; returns once both namespaces complete writes (fio takes
# seconds to start here, and one interrupted before it starts prints no
# summary)
load_start() {
	local d1 d2 w1 w2
	d1=$(host_ns "$1" 1) && d2=$(host_ns "$1" 2) || return
	w1=$(writes_done "${d1#/dev/}") && w2=$(writes_done "${d2#/dev/}") || return
	rm -f "$OUT-load-$1"
	fio --rw=randwrite --bs=4k --offset=$LOAD_OFF --size=$LOAD_SIZE --direct=1 \
		--ioengine=libaio --iodepth=4 --rate_iops=$((2 * LOAD_IOPS)) --verify=crc32c \
		--verify_backlog=16 --verify_fatal=1 --verify_state_save=0 \
		--time_based --runtime=1800 --thread "${@:2}" \
		--name="${1}1" --filename="$d1" --name="${1}2" --filename="$d2" \
		--output="$OUT-load-$1" > /dev/null 2>&1 &
	LOAD_PID[$1]=$!
	wait_for 60 moved "${d1#/dev/}" "$w1" && wait_for 60 moved "${d2#/dev/}" "$w2" ||
		fail "load $1 did not start writing within 60 s"
}

# the steady load: both namespaces of T and of L
load_start_all() {
	relink_reconnect && load_start T && load_start L
}

# T or L unlinked from its port (port_unlink_under_load) or without its host
# controller (a case that failed): link and connect it again, so that each
# case tests what it names rather than failing on what an earlier one left.
relink_reconnect() {
	[ -L "$NVMET_CFS/ports/1/subsystems/$NQN_T" ] || port_add_subsys 1 "$NQN_T" || return
	[ -L "$NVMET_CFS/ports/2/subsystems/$NQN_L" ] || port_add_subsys 2 "$NQN_L" || return
	if host_lacks "$NQN_T"; then host_connect tcp "$NQN_T" $TCP_LOSS || return; fi
	if host_lacks "$NQN_L"; then host_connect loop "$NQN_L" || return; fi
}

# load_stop NAME...: each fio must still be running (an error stops it),
# stop within 60 s of SIGINT, report err=0, and have written and verified
# something
load_stop() {
	local name pid st=0 ios
	for name in "$@"; do
		pid=${LOAD_PID[$name]}
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "load $name stopped early"
			st=1
		fi
		kill -INT "$pid" 2>/dev/null
	done
	for name in "$@"; do
		pid=${LOAD_PID[$name]}
		if ! timeout 60 tail --pid="$pid" -f /dev/null; then
			echo "load $name did not exit within 60 s of SIGINT: a lost command"
			kill -KILL "$pid"
			st=1
		fi
		wait "$pid" 2>/dev/null
		# per job "err= N:" and "issued rwts: total=READS,WRITES,...": the
		# reads are the verifies
		ios=$(sed -n 's/.*issued rwts: total=\([0-9]*\),\([0-9]*\),.*/\2 writes, \1 verified/p' \
			"$OUT-load-$name" | tr '\n' ';' | sed -e 's/;$//' -e 's/;/; /g')
		echo "load $name: ${ios:-no summary}; $(grep -o 'err= *[0-9]*' "$OUT-load-$name" | xargs)"
		if [ "$(grep -c 'err= *0:' "$OUT-load-$name")" != 2 ] || [ -z "$ios" ] ||
		   [[ "$ios" == *" 0 verified"* ]] ||
		   grep -qiE 'verify|bad magic|mismatch|io_u error' "$OUT-load-$name"; then
			grep -iE 'err=|verify|magic|mismatch|error' "$OUT-load-$name" | head -n 5
			st=1
		fi
	done
	[ $st = 0 ] || fail "the load saw an error"
}

load_stop_all() {
	load_stop T L
}

load_limit() {	# CGROUP DEVICE: the load's io.max
	io_set "$1" io.max "/dev/$2" "riops=$LOAD_IOPS wiops=$LOAD_IOPS"
}

setup() {
	local s n
	mkdir -p "$MNT" &&
	modprobe nvmet_cgroup &&
	nullb_create nullb0 128 && nullb_create nullb1 1024 && nullb_create nullb2 128 &&
	nullb_create nullb3 32 && nullb_create nullb4 32 && nullb_create nullb5 32 &&
	mkfs.ext4 -q -F -b 4096 /dev/nullb1 && mount -o noatime /dev/nullb1 "$MNT" &&
	fallocate -l 64M "$MNT/t.img" && fallocate -l 64M "$MNT/l.img" &&
	fallocate -l 16M "$MNT/flap.img" && fallocate -l 16M "$MNT/d.img" &&
	fallocate -l 16M "$MNT/x.img" && fallocate -l 16M "$MNT/f.img" &&
	nullb_create nullb7 32 || return
	for s in t1 t2 l1 l2 flap thr; do
		cg_create "faults/$s" || return
	done
	subsys_create "$NQN_T" && subsys_create "$NQN_L" && subsys_create "$NQN_D" &&
	ns_create "$NQN_T" 1 /dev/nullb0 cgroup_id="$(cg_id faults/t1)" &&
	ns_create "$NQN_T" 2 "$MNT/t.img" cgroup_id="$(cg_id faults/t2)" &&
	ns_create "$NQN_T" 3 /dev/nullb3 cgroup_id="$(cg_id faults/flap)" &&
	ns_create "$NQN_L" 1 /dev/nullb2 cgroup_id="$(cg_id faults/l1)" &&
	ns_create "$NQN_L" 2 "$MNT/l.img" cgroup_id="$(cg_id faults/l2)" &&
	ns_create "$NQN_L" 3 "$MNT/flap.img" cgroup_id="$(cg_id faults/flap)" &&
	ns_create "$NQN_D" 1 /dev/nullb4 cgroup_id="$(cg_id faults/thr)" &&
	ns_create "$NQN_D" 2 "$MNT/d.img" cgroup_id="$(cg_id faults/thr)" &&
	port_create 1 tcp && port_create 2 loop &&
	port_add_subsys 1 "$NQN_T" && port_add_subsys 2 "$NQN_L" &&
	port_add_subsys 1 "$NQN_D" && port_add_subsys 2 "$NQN_D" &&
	host_connect tcp "$NQN_T" $TCP_LOSS && host_connect loop "$NQN_L" &&
	host_connect tcp "$NQN_D" || return
	# R 3 (bdev) and F 3 (file), each over its own transport
	for tr in "${EXTRA[@]}"; do
		s=${EXTRA_SUB[$tr]}
		if [ "$s" = R ]; then n=/dev/nullb7; else n=$MNT/f.img; fi
		subsys_create "$(nqn "$s")" &&
		ns_create "$(nqn "$s")" 3 "$n" cgroup_id="$(cg_id faults/flap)" &&
		port_create "${EXTRA_PORT[$tr]}" "$tr" && port_add_subsys "${EXTRA_PORT[$tr]}" "$(nqn "$s")" &&
		port_add_subsys "${EXTRA_PORT[$tr]}" "$NQN_D" && host_connect "$tr" "$(nqn "$s")" || return
		patterns write "$s" 3 || return
	done
	patterns write T 1 2 3 L 1 2 3 D 1 2 && host_disconnect "$NQN_D" &&
	load_limit faults/t1 nullb0 && load_limit faults/t2 nullb1 &&
	load_limit faults/l1 nullb2 && load_limit faults/l2 nullb1
}

# host_ns S NSID: the host's block device of a namespace.  Without one,
# the host is asked to rescan once, and the case says so: nvmet announces
# an enabled namespace (nvmet_ns_changed(), the changed-namespace AEN)
# before it sets NVMET_NS_IO_LIVE, so a host scan that comes in between
# gets Internal Path Error for it ("Identify Descriptors failed ...
# status=0x2300" on the console) and never looks again.  Seen once
# (2026-12-02), with the guest starved of CPU by a second one; nvmet's
# code, not the module's.
host_ns() {	# S NSID
	local nq c
	nq=$(nqn "$1")
	host_dev "$nq" "$2" 2>/dev/null && return
	for c in $(host_ctrls "$nq"); do
		echo "the host has no device for $1 namespace $2: rescanning /dev/$c" >&2
		nvme ns-rescan "/dev/$c" >&2
	done
	host_dev "$nq" "$2"
}

# host_ctrls NQN: the host's controllers of that subsystem (nvme0 ...)
host_ctrls() {
	local c q
	for c in /sys/class/nvme/nvme*; do
		q=
		read -r q 2>/dev/null < "$c/subsysnqn"
		[ "$q" != "$1" ] || echo "${c##*/}"
	done
	return 0
}

host_lacks() {	# NQN: the host has no controller of that subsystem
	[ -z "$(host_ctrls "$1")" ]
}

# patterns write|check [S NSID...]...: the pattern on these namespaces,
# e.g. "patterns check T 1 2 L 3"
patterns() {
	local mode=$1 s= devs=() d a
	shift
	for a in "$@"; do
		case "$a" in
		[TLDMXRF]) s=$a ;;
		*) d=$(host_ns "$s" "$a") || return; devs+=("$d") ;;
		esac
	done
	pattern "$mode" "${devs[@]}"
}

# patterns_intact [S NSID...]...: the data written at setup reads back
patterns_intact() {
	patterns check "$@" && echo "$*: the data written at setup is intact"
}

# rmmod under load is refused (each enabled namespace with a cgroup holds a
# reference on the module), and changes nothing for the load
rmmod_refused_under_load() {
	local r i err st=0
	r=$(rounds 2 10)
	announce rmmod_refused_under_load "$r"
	load_start_all || return
	sleep 2
	for ((i = 0; i < r; i++)); do
		if err=$(rmmod nvmet_cgroup 2>&1); then
			echo "round $i: rmmod succeeded with namespaces enabled"
			st=1
			break
		fi
		case "$err" in *"in use"*) ;; *) echo "round $i: $err"; st=1 ;; esac
		[ -d /sys/module/nvmet_cgroup ] || { echo "the module is gone"; st=1; break; }
		sleep 1
	done
	echo "$r rmmod attempts refused: ${err:-none}"
	load_stop_all || st=1
	[ $st = 0 ] || fail "rmmod under load"
}

# Errors a fio may end with when its namespace goes away under it (see
# port_unlink_under_load): EIO, ENXIO, ENODEV, ENOSPC, ENOLINK, and
# EOPNOTSUPP (95): a disabled namespace answers Invalid Namespace, which the
# host fails with BLK_STS_NOTSUPP.
GONE_ERRNOS="5 6 19 28 67 95"

# flap_start: one fio (fio takes seconds to start here), a job on
# namespace 3 of each of FLAP_SUBS (T, L, R, F), sequential 4k writes with
# crc32c headers from LOAD_OFF on, verified once written (--do_verify):
# the disable lands in the write phase, so the jobs fail before they read
# (a read of a namespace the host is removing reads nothing, which fio
# would report as corrupt: see port_unlink_under_load); what they wrote is
# checked after the enable (flap_check)
FLAP_N=2048
flap_start() {
	local s d jobs=() devs=() w=()
	for s in $FLAP_SUBS; do
		d=$(host_ns "$s" 3) || return
		devs+=("${d#/dev/}") && w+=("$(writes_done "${d#/dev/}")") || return
		jobs+=(--name="flap$s" --filename="$d")
	done
	rm -f "$OUT-flap"
	fio --rw=write --bs=4k --offset=$LOAD_OFF --size=$((FLAP_N * 4096)) --direct=1 \
		--ioengine=libaio --iodepth=4 --rate_iops=$((4 * LOAD_IOPS)) --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --verify_state_save=0 --thread \
		"${jobs[@]}" --output="$OUT-flap" > /dev/null 2>&1 &
	LOAD_PID[flap]=$!
	for d in "${!devs[@]}"; do
		wait_for 60 moved "${devs[d]}" "${w[d]}" ||
			fail "fio on namespaces 3 of $FLAP_SUBS: /dev/${devs[d]} did not start writing" || return
	done
}

# flap_end: the fio on the two namespaces disabled under it must exit
# within 60 s, with no verify error, and each job with err=0 or one of
# GONE_ERRNOS; FLAP_KIB[S] is what job S wrote, FLAP_ERR[S] its error
declare -A FLAP_KIB FLAP_ERR
flap_end() {
	local pid=${LOAD_PID[flap]} s err kib
	timeout 60 tail --pid="$pid" -f /dev/null ||
		{ kill -KILL "$pid"; fail "fio on namespaces 3 of $FLAP_SUBS still runs 60 s after the disable: a lost command"; return; }
	wait "$pid"
	! grep -qiE 'verify|bad magic|mismatch' "$OUT-flap" ||
		fail "fio on namespaces 3 of $FLAP_SUBS: a verify error: $(grep -m 1 -iE 'verify|magic|mismatch' "$OUT-flap")" || return
	for s in $FLAP_SUBS; do
		# job S's section: "flapS: (groupid=...): err= N..." up to the next job's
		err=$(sed -n "s/^flap$s: (groupid.*): err= *\([0-9]*\)[: ].*/\1/p" "$OUT-flap")
		[ -n "$err" ] || fail "fio on $s 3: no summary" || return
		[ "$err" = 0 ] || [[ " $GONE_ERRNOS " == *" $err "* ]] ||
			fail "fio on $s 3: err=$err, expected 0 or one of $GONE_ERRNOS" || return
		# "write: IOPS=..., BW=... (...)(NKiB/...)": what completed
		kib=$(awk -v job="flap$s:" '$1 == job { on = 1; next } /^flap[TLRF]: / { on = 0 }
			on && / write: IOPS=/ { print; exit }' "$OUT-flap" |
			sed -n 's/.*(\([0-9.]*\)\([KMG]i\)B\/[0-9]*msec).*/\1 \2/p' |
			awk '{ m = $2 == "Mi" ? 1024 : $2 == "Gi" ? 1048576 : 1; print int($1 * m) }')
		FLAP_KIB[$s]=${kib:-0} FLAP_ERR[$s]=$err
	done
}

# flap_check: after the enable, what each job wrote before the disable
# reads back verified (one fio), less the last iodepth's blocks (writes
# that were in flight may have been failed)
flap_check() {
	local s d blocks jobs=()
	for s in $FLAP_SUBS; do
		blocks=$((FLAP_KIB[$s] / 4 - 4))
		[ "$blocks" -gt 0 ] || continue
		d=$(host_ns "$s" 3) || return
		jobs+=(--name="flap$s" --filename="$d" --size=$((blocks * 4096)))
	done
	[ ${#jobs[@]} -gt 0 ] || return 0
	timeout 120 fio --rw=write --bs=4k --offset=$LOAD_OFF --direct=1 --ioengine=libaio \
		--iodepth=4 --verify=crc32c --verify_only=1 --verify_fatal=1 --verify_state_save=0 \
		--output-format=terse "${jobs[@]}" > /dev/null ||
		fail "what fio wrote to namespaces 3 of $FLAP_SUBS before the disable does not verify"
}

# disable/enable namespace 3 of T (bdev, tcp), L (file, loop), R (bdev,
# rdma) and F (file, fc) while
# fio writes (crc32c) to each of them and the load runs on namespaces 1
# and 2 of both: each disable returns in bounded time, the fio on the
# disabled namespace ends (done, or one of GONE_ERRNOS), never hangs, and
# what it wrote reads back after the enable; the load sees nothing, and
# namespace 3's data from setup is intact
disable_enable_under_load() {
	local r i s start st wrote intact=()
	r=$(rounds 2 50)
	announce disable_enable_under_load "$r"
	load_start_all || return
	start=$SECONDS
	for ((i = 0; i < r; i++)); do
		flap_start || { load_stop_all; return 1; }
		sleep 2
		st=0
		for s in $FLAP_SUBS; do
			ns_set "$s" 3 0 || st=1
		done
		[ $st = 0 ] || { load_stop_all; return 1; }
		flap_end || { load_stop_all; return 1; }
		wrote=
		for s in $FLAP_SUBS; do
			wrote="$wrote, $s 3 ${FLAP_KIB[$s]} KiB (err=${FLAP_ERR[$s]})"
		done
		echo "round $i: before the disable ${wrote#, }"
		for s in $FLAP_SUBS; do
			ns_set "$s" 3 1 || st=1
		done
		[ $st = 0 ] && flap_check || { load_stop_all; return 1; }
	done
	echo "$r rounds of disable and enable of the namespaces 3 of $FLAP_SUBS under fio in $((SECONDS - start)) s"
	for s in $FLAP_SUBS; do
		intact+=("$s" 3)
	done
	load_stop_all && patterns_intact "${intact[@]}"
}

# inflight DISK: the host has 8 or more commands outstanding on DISK
inflight() {
	local r w
	read -r r w < "/sys/block/$1/inflight" && [ "$((r + w))" -ge 8 ]
}

# one disconnect of D with commands held by io.max riops=50: namespace 1
# (bdev) in blk-throttle on the fast path, namespace 2 (file) in its lanes
disconnect_round() {	# TRANSPORT
	local d1 d2 pid
	host_connect "$1" "$NQN_D" && d1=$(host_dev "$NQN_D" 1) && d2=$(host_dev "$NQN_D" 2) || return
	fio --rw=randread --bs=4k --size=512k --direct=1 --ioengine=libaio --iodepth=32 \
		--time_based --runtime=120 --thread \
		--name=q1 --filename="$d1" --name=q2 --filename="$d2" > /dev/null 2>&1 &
	pid=$!
	wait_for 30 inflight "${d1#/dev/}" ||
		fail "$1: fio's reads never queued behind the throttle" || { kill -KILL $pid; return 1; }
	echo "$1, throttled reads queued:"
	disconnect_with_fio "$NQN_D" $pid || return
	# reap it: killed, its status is 137
	wait $pid || true
}

# the rounds go through tcp, loop and the EXTRA transports in turn, at
# least one round each
disconnect_reconnect_throttled() {
	local r i tr trs=(tcp loop "${EXTRA[@]}")
	r=$(rounds 2 30)
	[ "$r" -ge ${#trs[@]} ] || r=${#trs[@]}
	announce disconnect_reconnect_throttled "$r"
	io_set faults/thr io.max /dev/nullb4 riops=50 &&
	io_set faults/thr io.max /dev/nullb1 riops=50 || return
	load_start_all || return
	for ((i = 0; i < r; i++)); do
		tr=${trs[i % ${#trs[@]}]}
		disconnect_round "$tr" || { load_stop_all; return 1; }
	done
	load_stop_all || return
	io_set faults/thr io.max /dev/nullb4 riops=max &&
	io_set faults/thr io.max /dev/nullb1 riops=max &&
	host_connect tcp "$NQN_D" && patterns_intact D 1 2 && host_disconnect "$NQN_D"
}

# Unlinking a subsystem from its port deletes the host's controller on it:
# nvmet drops its controllers on that port; nvme-loop's host controller is
# deleted with them, nvme-tcp's reconnects are refused until it gives up
# (TCP_LOSS).  So fio on those namespaces ends with an error, and only one
# of these: EIO (5), ENXIO (6) or ENODEV (19), the host failing the I/O of
# a deleted controller; ENOSPC (28), a write past the end of a namespace
# that the host is removing (nvme_ns_remove() sets its capacity to 0
# first, and blkdev_write_iter() refuses writes at or past it); or ENOLINK
# (67): BLK_STS_TRANSPORT, the status the host gives I/O that its lost
# path fails (nvme_host_path_error).  That load runs without verify: a read
# at or past the capacity of 0 reads nothing, and fio verifies the buffer
# all the same ("bad magic header", seen over nvme-loop).  What proves that
# no data was damaged is the pattern written at setup, intact after
# relinking and reconnecting; and the other subsystem's load, verified,
# must see nothing.
expect_io_error() {	# S
	local pid=${LOAD_PID[$1]} err e
	timeout 60 tail --pid="$pid" -f /dev/null ||
		fail "load $1 still runs 60 s after its port went: a lost command" || return
	wait "$pid"
	# a job's summary says "err= 0:" or, once failed, "err=67 (file:...)"
	err=$(sed -n 's/.*): err= *\([0-9]*\)[: ].*/\1/p' "$OUT-load-$1" | xargs)
	echo "load $1: err=$err per job ($(grep -m 1 'io_u error' "$OUT-load-$1"))"
	! grep -qiE 'verify|bad magic|mismatch' "$OUT-load-$1" ||
		fail "load $1: a verify error" || return
	[ "$(echo $err | wc -w)" = 2 ] || fail "load $1: not a summary of each of its 2 jobs" || return
	for e in $err; do
		case "$e" in
		5|6|19|28|67) ;;
		*) fail "load $1: err=$e, expected EIO, ENXIO, ENODEV, ENOSPC or ENOLINK" || return ;;
		esac
	done
}

unlink_round() {	# S PORT OTHER
	local s=$1 port=$2 o=$3 nq
	nq=$(nqn "$s")
	load_start "$s" --verify=0 && load_start "$o" || return
	sleep 3
	rm "$NVMET_CFS/ports/$port/subsystems/$nq" || return
	expect_io_error "$s" || { load_stop "$o"; return 1; }
	load_stop "$o" || return
	wait_for 30 host_lacks "$nq" || fail "$s: the host's controller is still there" || return
	relink_reconnect && patterns_intact "$s" 1 2 3
}

port_unlink_under_load() {
	local r i
	r=$(rounds 1 3)
	announce port_unlink_under_load "$r"
	for ((i = 0; i < r; i++)); do
		unlink_round T 1 L && unlink_round L 2 T || return
	done
}

# A namespace's cgroup removed under its I/O, then that cgroup's parent:
# the I/O goes to the nearest remaining ancestor, the load sees nothing;
# disabling the namespaces then drops the last references on both
# (nr_dying_descendants back to where it was).
nr_dying() {
	sed -n 's/^nr_dying_descendants //p' "$CG/cgroup.stat"
}

rebind() {	# S NSID CGROUP
	ns_set "$1" "$2" 0 && echo "$(cg_id "$3")" > "$(ns_dir "$1" "$2")/cgroup_id" &&
	ns_set "$1" "$2" 1
}

cgroup_rmdir_under_load() {
	local r i base st=0
	r=$(rounds 1 3)
	announce cgroup_rmdir_under_load "$r"
	for ((i = 0; i < r; i++)); do
		base=$(nr_dying)
		cg_create "faults/rm/a/t1" && cg_create "faults/rm/b/l2" &&
		rebind T 1 faults/rm/a/t1 && rebind L 2 faults/rm/b/l2 || return
		load_start_all || return
		sleep 3
		rmdir "$CG/faults/rm/a/t1" "$CG/faults/rm/b/l2" || st=1
		sleep 3
		rmdir "$CG/faults/rm/a" "$CG/faults/rm/b" || st=1
		sleep 3
		load_stop_all || st=1
		echo "round $i: cgroups dying while their namespaces are enabled: $(($(nr_dying) - base))"
		rebind T 1 faults/t1 && rebind L 2 faults/l2 || return
		wait_for 30 test "$(nr_dying)" -le "$base" ||
			fail "nr_dying_descendants $(nr_dying), was $base before: a cgroup reference leaked" || return
		rmdir "$CG/faults/rm" || return
	done
	[ $st = 0 ] || fail "rmdir under load failed"
}

# all_bound 0|1: disable or enable every namespace of HOST_NS
all_bound() {
	set -- $HOST_NS "$1"
	while [ $# -gt 1 ]; do
		ns_set "$1" "$2" "${!#}" || return
		shift 2
	done
}

# reload_module [PARAM...]: disable every namespace with a cgroup that is
# enabled, unload, load with PARAM, enable them again
reload_module() {
	local enabled=() s n
	set -- $HOST_NS "$@"
	while [ $# -gt 1 ] && [[ $1 == [TLDMXRF] ]]; do
		if [ "$(cat "$(ns_dir "$1" "$2")/enable")" = 1 ]; then
			ns_set "$1" "$2" 0 || return
			enabled+=("$1 $2")
		fi
		shift 2
	done
	rmmod nvmet_cgroup || fail "rmmod with every namespace with a cgroup disabled" || return
	modprobe nvmet_cgroup "$@" || return
	for s in "${enabled[@]}"; do
		# shellcheck disable=SC2086 # "S NSID"
		ns_set $s 1 || return
	done
}

# then unload and load again with the namespaces present (disabled, their
# cgroup_id kept); unloaded, an enable with a cgroup is refused
unload_reload_with_namespaces() {
	local r i id err
	r=$(rounds 1 10)
	announce unload_reload_with_namespaces "$r"
	id=$(cat "$(ns_dir T 1)/cgroup_id")
	for ((i = 0; i < r; i++)); do
		all_bound 0 && rmmod nvmet_cgroup || return
		[ "$(cat "$(ns_dir T 1)/cgroup_id")" = "$id" ] ||
			fail "cgroup_id changed across rmmod" || return
		if err=$( { echo 1 > "$(ns_dir T 1)/enable"; } 2>&1); then
			fail "unloaded, a namespace with a cgroup enabled"
			return
		fi
		case "$err" in *"not supported"*) ;; *) fail "unloaded, enable: $err" || return ;; esac
		modprobe nvmet_cgroup && all_bound 1 || return
	done
	echo "$r unload/load rounds with $(($(echo $HOST_NS | wc -w) / 2)) namespaces with a cgroup present"
	load_start_all && sleep 3 && load_stop_all && patterns_intact T 1 2 3 L 1 2 3
}

# CPU 1 taken offline and back while the lanes (fast_path=0) carry the
# load; while it is offline, a namespace with a cgroup is disabled and
# enabled: its commands queued on CPU 1's lane must still all complete.
# So that lanes hold commands when the CPU goes, namespace 4 of T sits on a
# one-tag null_blk completing each read after 50 ms, under a fio of 16
# reads at a time on CPU 1: its lane worker waits for the tag while the
# transport queues the rest behind it.  Over nvme-tcp the target's io_work
# runs on the CPU the host's data arrived on, so CPU 1's lane is the one
# filled.  Two kprobes on the glue record each command queued in a lane
# (nvmet_cgroup_req_push, on the CPU that queued it) and each command run
# (nvmet_cgroup_req_run); a command queued on CPU 1 and not yet run when
# the offline of CPU 1 began was on its lane as it went down.  At least one
# such command, and every command queued is run (none queued twice without
# a run in between, none left at the end).
TRACE=/sys/kernel/debug/tracing
PUSH_PROBE='p:nvmet_cgroup_test/push nvmet_cgroup:nvmet_cgroup_req_push req=$arg2:x64'
RUN_PROBE='p:nvmet_cgroup_test/run nvmet_cgroup:nvmet_cgroup_req_run req=$arg1:x64 own_ctx=$arg2:u8'

# lanes_trace on|stop|off: the two events, recorded on a clock common to
# the CPUs; stop ends the recording, off removes the probes (which clears
# the trace: count first)
lanes_trace() {
	if [ "$1" = on ]; then
		echo 0 > "$TRACE/options/record-cmd" && echo 0 > /proc/sys/debug/kprobes-optimization &&
		echo global > "$TRACE/trace_clock" && echo 8192 > "$TRACE/buffer_size_kb" &&
		echo "$PUSH_PROBE" >> "$TRACE/kprobe_events" && echo "$RUN_PROBE" >> "$TRACE/kprobe_events" &&
		echo > "$TRACE/trace" && echo 1 > "$TRACE/events/nvmet_cgroup_test/enable"
	elif [ "$1" = stop ]; then
		echo 0 > "$TRACE/events/nvmet_cgroup_test/enable"
	else
		echo 0 > "$TRACE/events/nvmet_cgroup_test/enable"
		echo '-:nvmet_cgroup_test/push' >> "$TRACE/kprobe_events"
		echo '-:nvmet_cgroup_test/run' >> "$TRACE/kprobe_events"
		echo local > "$TRACE/trace_clock"
	fi
}

# "QUEUED_AT_OFFLINE PUSHED RUN LOST ON_CPU1" from the trace: commands
# queued on CPU 1 and not run when a "cpu1 going down" marker came;
# commands queued and run; commands queued and never run (or queued again
# before their run); commands queued on CPU 1
lanes_count() {
	awk '/cpu1 going down/ { for (r in cpu) if (cpu[r] == 1) down[r] = 1; next }
		/ push: / { match($0, /\[[0-9]+\]/); c = substr($0, RSTART + 1, RLENGTH - 2) + 0
			r = $0; sub(/.*req=/, "", r); sub(/ .*/, "", r)
			if (r in cpu) lost++
			cpu[r] = c; pushed++; on1 += (c == 1); next }
		/ run: / { r = $0; sub(/.*req=/, "", r); sub(/ .*/, "", r)
			if (!(r in cpu)) next
			if (r in down) at_down++
			delete cpu[r]; delete down[r]; run++ }
		END { for (r in cpu) lost++; printf "%d %d %d %d %d\n", at_down, pushed, run, lost, on1 }' "$TRACE/trace"
}

cpu_hotplug_lanes() {
	local r i st=0 cpu=/sys/devices/system/cpu/cpu1/online d4 pid at_down pushed run lost on1
	r=$(rounds 1 20)
	announce cpu_hotplug_lanes "$r"
	[ -w $cpu ] || fail "no CPU hotplug for cpu1" || return
	reload_module fast_path=0 || return
	nullb_create nullb6 16 irqmode=2 completion_nsec=50000000 hw_queue_depth=1 &&
	ns_create "$NQN_T" 4 /dev/nullb6 cgroup_id="$(cg_id faults/flap)" || return
	! grep -v -e ' mode=lanes ' -e '^$' "$STATUS" || fail "a namespace is not in mode lanes" || return
	d4=$(host_ns T 4) || return
	# armed before any I/O (the host's scan of namespace 4 done): kernel
	# text is not patched under commands (fastpath_lib.sh)
	sleep 2
	lanes_trace on || fail "cannot add the kprobes" || return
	load_start_all || { lanes_trace off; return 1; }
	fio --name=slow --filename="$d4" --rw=randread --bs=4k --direct=1 --ioengine=libaio --cpus_allowed=1 \
		--iodepth=16 --time_based --runtime=1800 --thread --output="$OUT-slow" > /dev/null 2>&1 &
	pid=$!
	wait_for 30 inflight "${d4#/dev/}" || st=1
	for ((i = 0; i < r && st == 0; i++)); do
		sleep 2
		echo "cpu1 going down" > "$TRACE/trace_marker"
		echo 0 > $cpu || { echo "round $i: cpu1 offline failed"; st=1; break; }
		sleep 1
		ns_set T 3 0 && ns_set L 3 0 && ns_set T 3 1 && ns_set L 3 1 || st=1
		echo 1 > $cpu || { echo "round $i: cpu1 online failed"; st=1; break; }
	done
	[ "$(cat $cpu)" = 1 ] || echo 1 > $cpu
	echo "$r rounds of cpu1 offline (a disable and an enable meanwhile) and online"
	kill -INT $pid
	timeout 60 tail --pid=$pid -f /dev/null || { echo "the slow fio did not exit: a lost command"; kill -KILL $pid; st=1; }
	wait $pid
	echo "slow reads: $(grep -o 'err= *[0-9]*' "$OUT-slow" | xargs); $(sed -n 's/.*issued rwts: total=\([0-9]*\),.*/\1 issued/p' "$OUT-slow")"
	grep -q 'err= *0:' "$OUT-slow" || st=1
	load_stop_all || st=1
	# every namespace's commands done: a disable waits for its own
	ns_set T 4 0 || st=1
	lanes_trace stop
	read -r at_down pushed run lost on1 <<< "$(lanes_count)"
	lanes_trace off
	echo "lanes: $pushed commands queued ($on1 on CPU 1), $run run, $lost lost; $at_down were on CPU 1's lanes as it went down"
	[ "$lost" = 0 ] && [ "$pushed" = "$run" ] || { echo "a queued command never ran"; st=1; }
	[ "${at_down:-0}" -gt 0 ] || { echo "no command was on CPU 1's lanes when it went down"; st=1; }
	ns_destroy "$NQN_T" 4 && nullb_destroy nullb6 || st=1
	reload_module || st=1
	[ $st = 0 ] || fail "CPU hotplug under the lanes"
}

# many_io NNS NCG: a host connected to M (nvme-loop) writes and verifies
# 64 KiB on every namespace, one fio job each, and every namespace's
# cgroup is charged for it on nullb1 (the files' ext4)
many_io() {
	local nns=$1 ncg=$2 i d jobs=() w0=() w1 short=0
	for ((i = 0; i < ncg; i++)); do
		w0[i]=$(cg_stat "faults/many/$i" /dev/nullb1 wios)
	done
	for ((i = 1; i <= nns; i++)); do
		d=$(host_ns M "$i") || return
		jobs+=(--name="m$i" --filename="$d")
	done
	timeout 300 fio --rw=write --bs=4k --size=64k --direct=1 --ioengine=libaio --iodepth=4 \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --verify_state_save=0 \
		--output-format=terse "${jobs[@]}" > "$OUT-many-io" ||
		fail "fio on the $nns namespaces failed: $(grep -m 1 -iE 'error|verify' "$OUT-many-io")" || return
	for ((i = 0; i < ncg; i++)); do
		w1=$(cg_stat "faults/many/$i" /dev/nullb1 wios)
		# each cgroup holds nns / ncg namespaces of 16 writes each
		[ $((w1 - w0[i])) -ge $((nns / ncg * 16)) ] || short=$((short + 1))
	done
	echo "$nns namespaces written and verified, one fio job each; $((ncg - short)) of $ncg cgroups charged at least $((nns / ncg * 16)) writes"
	[ $short = 0 ] || fail "$short cgroups were not charged for their namespaces' writes"
}

# Many namespaces in many cgroups, behind a connected host (nvme-loop),
# enabled and disabled by parallel loops (four, each with a quarter of the
# cgroups) while the load runs: every enable and disable succeeds, the
# status file ends with exactly the enabled ones, and then the host writes
# and verifies every namespace, each charged to its cgroup.
many_namespaces() {
	local nns ncg r i p pids=() st=0 lines
	nns=$(rounds 16 128) ncg=$(rounds 4 32) r=$(rounds 1 5)
	announce many_namespaces "$r"
	echo "$nns namespaces in $ncg cgroups, 4 parallel loops of $r rounds"
	subsys_create "$NQN_M" || return
	for ((i = 0; i < ncg; i++)); do
		cg_create "faults/many/$i" || return
	done
	for ((i = 1; i <= nns; i++)); do
		truncate -s 1M "$MNT/m$i.img" &&
		ns_create "$NQN_M" "$i" "$MNT/m$i.img" cgroup_id="$(cg_id "faults/many/$((i % ncg))")" ||
			return
	done
	port_add_subsys 2 "$NQN_M" && host_connect loop "$NQN_M" || return
	load_start_all || return
	for ((p = 0; p < 4; p++)); do
		(
			for ((round = 0; round < r; round++)); do
				for ((i = 1; i <= nns; i++)); do
					[ $((i % ncg % 4)) = "$p" ] || continue
					ns_set M "$i" 0 && ns_set M "$i" 1 || exit 1
				done
			done
		) > "$OUT-many-$p" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || st=1
	done
	cat "$OUT"-many-[0-3] 2>/dev/null
	load_stop_all || st=1
	lines=$(grep -c "^$NQN_M " "$STATUS")
	echo "status file: $lines namespaces of $NQN_M"
	[ "$lines" = "$nns" ] || st=1
	[ $st = 0 ] && many_io "$nns" "$ncg" || st=1
	host_disconnect "$NQN_M" && rm "$NVMET_CFS/ports/2/subsystems/$NQN_M" || st=1
	subsys_destroy "$NQN_M" && cg_remove faults/many || st=1
	grep -q "^$NQN_M " "$STATUS" && { echo "status file still lists $NQN_M"; st=1; }
	[ $st = 0 ] || fail "many namespaces"
}

# Memory pressure.  Allocations fail only where the module is on the stack
# (failslab and fail_page_alloc with the stack filter set to the module's
# text) and only for the writing task, while a hog fills memory.
FI=/sys/kernel/debug

# The module's text, from kallsyms (addresses as 16 hex digits sort as
# numbers): from its first function to the next module's first symbol
# after its last one (or 64 KiB past it).
module_text() {
	local lo hi next
	lo=$(grep ' [tT] .*\[nvmet_cgroup\]$' /proc/kallsyms | sort | head -n 1 | cut -d' ' -f1)
	hi=$(grep ' [tT] .*\[nvmet_cgroup\]$' /proc/kallsyms | sort | tail -n 1 | cut -d' ' -f1)
	[ -n "$lo" ] || return
	next=$(grep -E ' [tT] .*\[[a-z0-9_]+\]$' /proc/kallsyms | cut -d' ' -f1 | sort |
		awk -v hi="$hi" '$1 > hi { print $1; exit }')
	[ -n "$next" ] || next=$(printf '%016x' $((0x$hi + 65536)))
	echo "0x$lo 0x$next"
}

fi_setup() {
	local lo hi a
	read -r lo hi <<< "$(module_text)"
	[ -n "$hi" ] || fail "the module's text is not in kallsyms" || return
	echo "failures only with the module's text ($lo-$hi) on the stack"
	for a in failslab fail_page_alloc; do
		echo "$lo" > $FI/$a/require-start && echo "$hi" > $FI/$a/require-end &&
		echo 32 > $FI/$a/stacktrace-depth && echo N > $FI/$a/ignore-gfp-wait &&
		echo Y > $FI/$a/task-filter && echo 1 > $FI/$a/verbose &&
		echo -1 > $FI/$a/times && echo 1 > $FI/$a/interval &&
		echo 0 > $FI/$a/probability || return
	done
	echo 0 > $FI/fail_page_alloc/min-order
}

fi_probability() {	# PERCENT
	echo "$1" > $FI/failslab/probability && echo "$1" > $FI/fail_page_alloc/probability
}

# the hog: a tmpfs file as large as what is available less 384 MiB
hog_start() {
	tmpfs_hog_start $HOG 384
}

hog_stop() {
	tmpfs_hog_stop $HOG
}

# state NSID: what an enable that failed must leave as it was
x_state() {
	echo "$(cat "$(ns_dir X "$1")/enable") $(cat "$(ns_dir X "$1")/cgroup_id")" \
		"$(cat /sys/module/nvmet_cgroup/refcnt) $(grep -c . "$STATUS")"
}

# Every allocation of the module's enable made to fail in turn
# (/proc/thread-self/fail-nth counts only the calls the stack filter
# admits): each failure is a clean ENOMEM with nothing changed, or is
# absorbed by a fallback (a slab that cannot get a high-order page takes
# a minimum-order one), and then the namespace is enabled and its disable
# restores everything; the first N that fails nothing enables.
enable_each_failure() {	# NSID
	local n=$1 before after nth err st left points=0 absorbed=0
	before=$(x_state "$n")
	for nth in $(seq 1 64); do
		err=$(bash -c 'echo $1 > /proc/thread-self/fail-nth; echo 1 2>&1 > "$2/enable"; st=$?;
			read -r left < /proc/thread-self/fail-nth; echo 0 > /proc/thread-self/fail-nth;
			echo "$st $left"' - "$nth" "$(ns_dir X "$n")")
		read -r st left <<< "${err##*$'\n'}"
		if [ "$left" != 0 ]; then
			[ "$st" = 0 ] || fail "namespace $n: enable failed with nothing injected: $err" || return
			break
		fi
		points=$nth
		if [ "$st" = 0 ]; then
			absorbed=$((absorbed + 1))
			[ "$(cat "$(ns_dir X "$n")/enable")" = 1 ] &&
			grep -q "^$NQN_X $n " "$STATUS" ||
				fail "namespace $n: allocation $nth failed and was absorbed, yet the namespace is not enabled with a status line" || return
			ns_set X "$n" 0 || return
		else
			case "$err" in *"Cannot allocate memory"*) ;;
			*) fail "namespace $n: allocation $nth failed: '$err', expected ENOMEM" || return ;; esac
		fi
		after=$(x_state "$n")
		[ "$after" = "$before" ] ||
			fail "namespace $n: allocation $nth failed: enable/cgroup_id/refcnt/status '$after', was '$before'" || return
	done
	[ "$((points - absorbed))" -gt 0 ] || fail "namespace $n: no allocation of the module failed the enable" || return
	[ "$(cat "$(ns_dir X "$n")/enable")" = 1 ] || fail "namespace $n did not enable in the end" || return
	echo "namespace $n: each of the module's $points fault points in enable failed in turn: $((points - absorbed)) ENOMEM with nothing changed, $absorbed absorbed by a fallback; then enabled"
	ns_set X "$n" 0
}

# With every allocation failing for the writing task (make-it-fail),
# enable fails with ENOMEM and changes nothing, and a cgroup_id store
# (nvmet's own code, no allocation of the module) goes through.
enable_and_store_failing() {	# NSID
	local n=$1 before out
	before=$(x_state "$n")
	fi_probability 100 || return
	out=$(bash -c 'echo 1 > /proc/self/make-it-fail; echo 1 2>&1 > "$1/enable"; echo "enable $?";
		echo "$2" 2>&1 > "$1/cgroup_id"; echo "store $?"' - "$(ns_dir X "$n")" "$(cg_id faults/mem/x)")
	fi_probability 0
	echo "namespace $n with every allocation of the module failing: $(echo "$out" | xargs)"
	case "$out" in *"Cannot allocate memory"*"enable 1"*"store 0"*) ;;
	*) fail "namespace $n: expected enable ENOMEM and the store to succeed" || return ;; esac
	[ "$(x_state "$n")" = "$before" ] || fail "namespace $n: state '$(x_state "$n")', was '$before'" || return
	ns_set X "$n" 1 || fail "namespace $n: the retry did not enable" || return
	ns_set X "$n" 0
}

memory_pressure() {
	local r i base injected lines st=0
	r=$(rounds 1 3)
	announce memory_pressure "$r"
	base=$(nr_dying)
	lines=$(dmesg | wc -l)
	cg_create faults/mem/x && subsys_create "$NQN_X" &&
	mkdir "$(ns_dir X 1)" "$(ns_dir X 2)" &&
	echo -n /dev/nullb5 > "$(ns_dir X 1)/device_path" &&
	echo -n "$MNT/x.img" > "$(ns_dir X 2)/device_path" &&
	echo "$(cg_id faults/mem/x)" > "$(ns_dir X 1)/cgroup_id" &&
	echo "$(cg_id faults/mem/x)" > "$(ns_dir X 2)/cgroup_id" &&
	fi_setup && hog_start || return
	load_start_all || { hog_stop; return 1; }
	# Each fault point costs an enable under the hog (about 7 s here):
	# short rounds go through namespace 1's (the bdev's) only, the full
	# rounds through both namespaces'.
	for ((i = 0; i < r; i++)); do
		enable_each_failure 1 &&
		{ [ "$FAULT_ROUNDS" != full ] || enable_each_failure 2; } &&
		enable_and_store_failing 1 && enable_and_store_failing 2 || { st=1; break; }
	done
	fi_probability 0
	load_stop_all || st=1
	hog_stop || st=1
	injected=$(dmesg | tail -n +$((lines + 1)) | grep -c 'FAULT_INJECTION: forcing a failure')
	echo "failures injected: $injected"
	[ $st = 0 ] || return 1
	subsys_destroy "$NQN_X" && cg_remove faults/mem || return
	wait_for 30 test "$(nr_dying)" -le "$base" ||
		fail "nr_dying_descendants $(nr_dying), was $base: a cgroup reference leaked"
}

teardown() {
	[ ! -d "$TRACE/events/nvmet_cgroup_test" ] || lanes_trace off
	nvme disconnect -n "$NQN_T" > /dev/null 2>&1
	nvme disconnect -n "$NQN_L" > /dev/null 2>&1
	nvme disconnect -n "$NQN_D" > /dev/null 2>&1
	nvme disconnect -n "$NQN_M" > /dev/null 2>&1
	nvme disconnect -n "$NQN_R" > /dev/null 2>&1
	nvme disconnect -n "$NQN_F" > /dev/null 2>&1
	port_destroy 1 && port_destroy 2 && port_destroy 3 && port_destroy 4 &&
	subsys_destroy "$NQN_T" && subsys_destroy "$NQN_L" && subsys_destroy "$NQN_D" &&
	subsys_destroy "$NQN_M" && subsys_destroy "$NQN_X" &&
	subsys_destroy "$NQN_R" && subsys_destroy "$NQN_F" &&
	umount "$MNT" && cg_remove faults &&
	rmmod nvmet_cgroup nvme_loop nvme_tcp nvmet_tcp && transport_unload "${EXTRA[@]}" || return
	for d in 0 1 2 3 4 5 7; do
		nullb_destroy nullb$d || return
	done
	rmmod null_blk
}

ktap_print_header
ktap_set_plan 11
run_case "setup" setup
run_case "rmmod_refused_under_load" rmmod_refused_under_load
run_case "disable_enable_under_load" disable_enable_under_load
run_case "disconnect_reconnect_throttled" disconnect_reconnect_throttled
run_case "port_unlink_under_load" port_unlink_under_load
run_case "cgroup_rmdir_under_load" cgroup_rmdir_under_load
run_case "unload_reload_with_namespaces" unload_reload_with_namespaces
run_case "cpu_hotplug_lanes" cpu_hotplug_lanes
run_case "many_namespaces" many_namespaces
run_case "memory_pressure" memory_pressure
run_case "teardown" teardown
ktap_finished
