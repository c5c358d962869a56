#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The v5 cover letter's manual test, automated: a bdev namespace (a blk-mq
# null_blk) and an ext4-file namespace (on brd) over nvme-tcp to 127.0.0.1,
# io.max riops, rbps, wiops and wbps in turn, then the bdev namespace again
# over nvme-loop; then, over nvme-rdma and nvme-fc, riops on the bdev
# namespace and wbps on the file namespace.  io.max keeps a bdev namespace on a blk-mq device on the
# fast path (the default configuration of real users) and sends a file
# namespace to its execution context: a kprobe on the glue's
# nvmet_cgroup_req_run() counts where the limited run's commands ran, and
# each case checks it (bdev: all in the transport's thread; file: none).
# This guest runs under emulation, so each limit derives from the unlimited
# rate measured just before in the same boot; the limited rate must be
# within 10 % of the limit (5 IOPS where that is more) and the unlimited one
# at least 2x the limited one.  bps limits are a quarter of the unlimited
# rate.  IOPS limits are half of it, rounded down to a multiple of 10: the
# debug kernel does only 50-250 IOPS over tcp, depending on the host, and at
# such rates blk-throttle itself enforces only multiples of 10 IOPS and
# falls ~4 IOPS short (see limit_test), so a quarter (v12 used 20000 IOPS on
# KVM) would measure blk-throttle, not the module.
# bps cases move 256 KiB per I/O: at the 1 MB/s that a slow host leaves
# over tcp, 1 MiB I/Os are one per second and blk-throttle's granularity
# cost the file namespace ~20 % of its limit.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./fastpath_lib.sh

BDEV_NQN=nqn.2026-09.io.test01:bdev
FILE_NQN=nqn.2026-09.io.test01:file
MNT=/mnt/nvmet-file
RUNTIME=${IOMAX_RUNTIME:-8}
# The unlimited run only sets the limit and the 2x bound: half as long.
UNLIMITED_RUNTIME=${IOMAX_UNLIMITED_RUNTIME:-4}
# tcp carries every case and loop the bdev's; the other transports
# (NVMET_LONG_TRANSPORTS: rdma, fc) a bdev and a file case each
EXTRA=()
for tr in $NVMET_LONG_TRANSPORTS; do
	[ "$tr" = tcp ] || [ "$tr" = loop ] || EXTRA+=("$tr")
done

setup() {
	modprobe nvmet_cgroup && modprobe brd rd_nr=1 rd_size=1048576 &&
	wait_for 5 test -b /dev/ram0 && nullb_create nullb0 1024 &&
	cg_create nvmet-bdev && cg_create nvmet-file &&
	mkfs.ext4 -q -F /dev/ram0 && mkdir -p "$MNT" && mount -o noatime /dev/ram0 "$MNT" &&
	dd if=/dev/zero of="$MNT/ns.img" bs=1M count=128 oflag=direct status=none &&
	subsys_create "$BDEV_NQN" &&
	ns_create "$BDEV_NQN" 1 /dev/nullb0 cgroup_id="$(cg_id nvmet-bdev)" &&
	subsys_create "$FILE_NQN" &&
	ns_create "$FILE_NQN" 1 "$MNT/ns.img" cgroup_id="$(cg_id nvmet-file)" &&
	port_create 1 tcp && port_add_subsys 1 "$BDEV_NQN" && port_add_subsys 1 "$FILE_NQN" &&
	port_create 2 loop && port_add_subsys 2 "$BDEV_NQN" &&
	ports_create "${EXTRA[*]}" "$BDEV_NQN" "$FILE_NQN" &&
	host_connect tcp "$BDEV_NQN" && host_connect tcp "$FILE_NQN" &&
	fp_tracing_options || return
	echo "$FP_PROBE" >> "$TRACE/kprobe_events" || fail "cannot add the kprobe" || return
	echo 8192 > "$TRACE/buffer_size_kb"
}

# limit_test CGROUP BACKING HOSTDEV WHERE KEY RW BS: measure unlimited, set
# KEY to a fraction of it (see the top), measure again, compare; the limited
# run's commands must all have run WHERE (inline|context).
limit_test() {
	local cg=$1 backing=$2 dev=$3 where=$4 key=$5 rw=$6 bs=$7 field unl lim limit out tol
	local st inline ctx
	case "$key" in *iops) field=1 ;; *) field=2 ;; esac
	io_set "$cg" io.max "$backing" "riops=max wiops=max rbps=max wbps=max" || return
	out=$(fio_job "$dev" "$rw" "$bs" --time_based --runtime="$UNLIMITED_RUNTIME" --ramp_time=1) || return
	unl=$(echo "$out" | cut -d' ' -f$field)
	case "$key" in *iops) limit=$((unl / 2)) ;; *) limit=$((unl / 4)) ;; esac
	# blk-throttle grants whole IOs per 100 ms slice (calculate_io_allowed()
	# and throtl_trim_slice() truncate), so it can only enforce an IOPS
	# limit that is a multiple of 10 exactly; this guest's tcp path is slow
	# enough for that to matter.
	# On a loaded host tcp may do under 20 IOPS: 10 is the lowest such limit.
	case "$key" in *iops) limit=$((limit / 10 * 10)); [ "$limit" -ge 10 ] || limit=10 ;; esac
	[ "$limit" -gt 0 ] || fail "unlimited $key rate is $unl" || return
	echo "$(devnum "$backing") $key=$limit" > "$CG/$cg/io.max" || return
	# Depth 8 still saturates the limit, and keeps what waits in blk-throttle
	# short of the host's 30 s I/O timeout: at 32 x 1 MiB under 0.6 MB/s
	# the host aborted and reconnected, and nvmet_sq_destroy() then waited
	# for the throttled bios past the hung-task limit.
	echo > "$TRACE/trace" && echo 1 > "$FP_EVENT/enable" || return
	out=$(fio_job "$dev" "$rw" "$bs" --time_based --runtime="$RUNTIME" --ramp_time=1 --iodepth=8)
	st=$?
	echo 0 > "$FP_EVENT/enable"
	[ $st = 0 ] || return
	lim=$(echo "$out" | cut -d' ' -f$field)
	echo "$(devnum "$backing") riops=max wiops=max rbps=max wbps=max" > "$CG/$cg/io.max"
	# (a here-string: the guest has no /dev/fd for process substitution)
	out=$(awk '/ run: / { if (/own_ctx=0/) i++; else c++ } END { printf "%d %d\n", i, c }' "$TRACE/trace")
	read -r inline ctx <<< "$out"
	echo "$cg $key: unlimited $unl, limit $limit, measured $lim; commands in the transport's thread $inline, in the context $ctx"
	case "$where" in
	inline) [ "$inline" -gt 0 ] && [ "$ctx" = 0 ] ;;
	context) [ "$ctx" -gt 0 ] && [ "$inline" = 0 ] ;;
	esac || fail "$key: expected the limited commands to run $where" || return
	# blk-throttle's own shortfall of ~4 IOPS (see the top) is 20 % of a
	# 20 IOPS limit, which is what this guest's tcp path leaves on a slow
	# host: an IOPS limit may miss by 5 IOPS when that is more than 10 %.
	# Unthrottled I/O still fails: it runs at the unlimited rate, twice the
	# limit or more.  1.9x, not 2x: the limit is half the unlimited rate
	# rounded down to 10 IOPS, and a measurement at the limit can be a
	# few IOPS above it (Debian's kernel: unlimited 28447, limit 14220,
	# measured 14230).
	tol=10
	case "$key" in *iops) [ $((limit * tol)) -ge 500 ] || tol=$(((500 + limit - 1) / limit)) ;; esac
	within "$lim" "$limit" "$tol" || fail "$key: measured $lim is not within $tol % of $limit" || return
	[ $((10 * unl)) -ge $((19 * lim)) ] || fail "$key: unlimited $unl is not 1.9x the limited $lim"
}

bdev() {
	local dev
	dev=$(host_dev "$BDEV_NQN" 1) || return
	limit_test nvmet-bdev /dev/nullb0 "$dev" inline "$@"
}

file() {
	local dev
	dev=$(host_dev "$FILE_NQN" 1) || return
	limit_test nvmet-file /dev/ram0 "$dev" context "$@"
}

to_loop() {
	host_disconnect "$BDEV_NQN" && host_connect loop "$BDEV_NQN"
}

to() {	# TRANSPORT: both namespaces' host over it
	host_disconnect "$BDEV_NQN" && host_disconnect "$FILE_NQN" &&
	host_connect "$1" "$BDEV_NQN" && host_connect "$1" "$FILE_NQN"
}

teardown() {
	echo '-:nvmet_cgroup_test/run' >> "$TRACE/kprobe_events"
	host_disconnect "$BDEV_NQN" && host_disconnect "$FILE_NQN" &&
	port_destroy 1 && port_destroy 2 && ports_destroy "${EXTRA[*]}" &&
	subsys_destroy "$BDEV_NQN" && subsys_destroy "$FILE_NQN" &&
	umount "$MNT" && rmmod brd && nullb_destroy nullb0 && rmmod null_blk &&
	cg_remove nvmet-bdev && cg_remove nvmet-file &&
	rmmod nvmet_cgroup nvme_tcp nvmet_tcp nvme_loop
}

# IOMAX_CASES=short (make check's boot of the debug kernel): one limit
# of each kind of namespace over tcp (the bdev's riops, inline; the file's
# wbps, in the context) and the bdev's riops and wbps over loop.  The
# other eight run in `make check-full`, and make check runs all twelve on
# Debian's kernel (scripts/check-debian).
if [ "${IOMAX_CASES:-all}" = short ]; then
	TCP_KEYS=("bdev riops randread 4k" "file wbps write 256k")
	LOOP_KEYS=("riops randread 4k" "wbps write 256k")
else
	TCP_KEYS=("bdev riops randread 4k" "file riops randread 4k"
		  "bdev rbps read 256k" "file rbps read 256k"
		  "bdev wiops randwrite 4k" "file wiops randwrite 4k"
		  "bdev wbps write 256k" "file wbps write 256k")
	LOOP_KEYS=("riops randread 4k" "rbps read 256k" "wiops randwrite 4k" "wbps write 256k")
fi

ktap_print_header
ktap_set_plan $((3 + ${#TCP_KEYS[@]} + ${#LOOP_KEYS[@]} + 3 * ${#EXTRA[@]}))
run_case "setup" setup
for k in "${TCP_KEYS[@]}"; do
	read -ra a <<< "$k"
	run_case "tcp_${a[0]}_${a[1]}" "${a[@]}"
done
run_case "to_loop" to_loop
for k in "${LOOP_KEYS[@]}"; do
	read -ra a <<< "$k"
	run_case "loop_bdev_${a[0]}" bdev "${a[@]}"
done
for tr in "${EXTRA[@]}"; do
	run_case "setup_$tr" to "$tr"
	run_case "${tr}_bdev_riops" bdev riops randread 4k
	run_case "${tr}_file_wbps" file wbps write 256k
done
run_case "teardown" teardown
ktap_finished
