# SPDX-License-Identifier: GPL-2.0
# Helpers for the fast-path tests: a bdev namespace (1, on nullb0) and an
# ext4-file namespace (2, on nullb1) over nvme-loop, each with a cgroup, and
# a count of where their commands run, read from a kprobe on the glue's
# nvmet_cgroup_req_run(req, own_ctx): own_ctx=0 in the transport's thread
# (the fast path), 1 in the namespace's execution context.

FP_MNT=/mnt/fastpath
TRACE=/sys/kernel/debug/tracing
FP_EVENT=$TRACE/events/nvmet_cgroup_test/run
FP_N=1024
# own_ctx=0: the transport's thread (the fast path); 1: the execution context
FP_PROBE='p:nvmet_cgroup_test/run nvmet_cgroup:nvmet_cgroup_req_run own_ctx=$arg2:u8'

# Patch as little kernel text as possible, and never while commands run:
# under multi-threaded TCG, code patched while another vCPU runs it can hit
# the int3 of text_poke_bp (seen as "Oops: int3" in __schedule when event
# tracing registered its sched_switch probe to record command names).  So no
# command-name recording, no kprobe optimization (a jump patched in later,
# under I/O), and the probe is armed and disarmed only between jobs
# (fp_runs).
fp_tracing_options() {
	echo 0 > "$TRACE/options/record-cmd" &&
	echo 0 > /proc/sys/debug/kprobes-optimization
}

fp_setup() {	# NQN
	modprobe nvmet_cgroup && nullb_create nullb0 256 && nullb_create nullb1 256 &&
	mkfs.ext4 -q -F -b 4096 /dev/nullb1 && mkdir -p "$FP_MNT" &&
	mount -o noatime /dev/nullb1 "$FP_MNT" && fallocate -l 64M "$FP_MNT/ns.img" &&
	cg_create fastpath/bdev && cg_create fastpath/file &&
	subsys_create "$1" &&
	ns_create "$1" 1 /dev/nullb0 cgroup_id="$(cg_id fastpath/bdev)" &&
	ns_create "$1" 2 "$FP_MNT/ns.img" cgroup_id="$(cg_id fastpath/file)" &&
	port_create 1 loop && port_add_subsys 1 "$1" && host_connect loop "$1" &&
	fp_tracing_options || return
	echo "$FP_PROBE" >> "$TRACE/kprobe_events" || fail "cannot add the kprobe" || return
	echo 8192 > "$TRACE/buffer_size_kb"
}

fp_teardown() {	# NQN
	echo '-:nvmet_cgroup_test/run' >> "$TRACE/kprobe_events"
	host_disconnect "$1" && port_destroy 1 && subsys_destroy "$1" &&
	umount "$FP_MNT" && cg_remove fastpath && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && rmmod null_blk
}

# Runs "$@"; prints "INLINE CONTEXT": how many commands ran in the transport's
# thread and how many in the execution context meanwhile.
fp_runs() {
	local st
	echo > "$TRACE/trace" && echo 1 > "$FP_EVENT/enable" || return
	"$@" >/dev/null
	st=$?
	echo 0 > "$FP_EVENT/enable"
	[ $st = 0 ] || { echo "command failed: $*" >&2; return 1; }
	awk '/ run: / { if (/own_ctx=0/) i++; else c++ } END { printf "%d %d\n", i, c }' "$TRACE/trace"
}

# $FP_N random 4k writes then reads of the same blocks at queue depth 32
# (ext4 reads an unwritten extent without I/O)
fp_rw_job() {
	fio_job "$1" randwrite 4k --size=$((FP_N * 4096)) && fio_job "$1" randread 4k --size=$((FP_N * 4096))
}

# Checks where namespace NS's reads and writes run: WHERE is inline|context.
fp_expect() {	# NQN NS WHERE WHY
	local runs inline ctx
	runs=$(fp_runs fp_rw_job "$(host_dev "$1" "$2")") || return
	read -r inline ctx <<< "$runs"
	echo "namespace $2 ($4): $inline commands in the transport's thread, $ctx in the context, for $((2 * FP_N))"
	case "$3" in
	inline) [ "$inline" -ge $((2 * FP_N)) ] && [ "$ctx" = 0 ] ;;
	context) [ "$ctx" -ge $((2 * FP_N)) ] && [ "$inline" = 0 ] ;;
	esac || fail "namespace $2 ($4): expected every command to run $3"
}
