#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Charging: a namespace's I/O shows in its cgroup's io.stat, exactly (and
# only with cgroup_id set); removing the cgroup falls back to the parent,
# not to the removed child or the root; the file backend's Flush, Write
# Zeroes and DSM run in the namespace's context and what ext4 issues for
# them there is charged to its cgroup.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./fastpath_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:charge
# loop carries every case; each other transport the exact charge and the
# unset namespace, with an eighth of loop's I/O (tcp and rdma do 50-250
# IOPS here)
TRANSPORTS=$(with_loop "$NVMET_TRANSPORTS")
OTHER_N=512
SUB=$NVMET_CFS/subsystems/$NQN
MNT=/mnt/charge
# Every association the module makes (kthread_associate_blkcg(css)): which
# css a command's bios are charged to (0: the association cleared)
ASSOC_PROBE='p:nvmet_cgroup_test/assoc kthread_associate_blkcg css=%di:x64'
ASSOC_EVENT=$TRACE/events/nvmet_cgroup_test/assoc
# Where a command runs (own_ctx=1: the namespace's execution context):
# fastpath_lib.sh's probe, FP_PROBE, counted by its fp_runs.

# nullb0: namespaces 1 and 2; nullb1: namespace 3 alone, so that its own
# read counter is namespace 3's reads; nullb2: ext4 for the file
# namespace 4, with a volatile write cache (cache_size), so that an fsync
# issues a flush (brd has none: its flushes end before they are counted)
setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 256 && nullb_create nullb1 64 &&
	nullb_create nullb2 256 cache_size=64 &&
	echo 2 > /sys/block/nullb1/queue/nomerges &&
	mkfs.ext4 -q -F -b 4096 /dev/nullb2 && mkdir -p "$MNT" && mount -o noatime /dev/nullb2 "$MNT" &&
	fallocate -l 128M "$MNT/ns.img" &&
	cg_create charge/a && cg_create charge/parent/child && cg_create charge/file &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id charge/a)" &&
	ns_create "$NQN" 2 /dev/nullb0 &&
	ns_create "$NQN" 3 /dev/nullb1 cgroup_id="$(cg_id charge/parent/child)" &&
	ns_create "$NQN" 4 "$MNT/ns.img" cgroup_id="$(cg_id charge/file)" &&
	ports_create "$TRANSPORTS" "$NQN" && host_connect loop "$NQN" || return
	# kprobes patched in only between jobs (see fastpath_lib.sh)
	# one clock for every CPU: the markers are ordered against the events
	fp_tracing_options && echo global > "$TRACE/trace_clock" &&
	echo "$ASSOC_PROBE" >> "$TRACE/kprobe_events" && echo "$FP_PROBE" >> "$TRACE/kprobe_events" ||
		fail "cannot add the kprobes" || return
	echo 8192 > "$TRACE/buffer_size_kb"
}

# 4. io.stat grows by exactly what fio did: 4096 reads and 4096 writes of
# 4 KiB, direct, on a host disk that merges nothing (nomerges=2), so each
# is one command, one bio on nullb0 and one io.stat I/O
io_stat_matches_fio() {	# [N]: N reads and N writes (4096)
	local dev r0 w0 ri0 wi0 r1 w1 ri1 wi1 n=${1:-4096} bytes
	bytes=$((n * 4096))
	dev=$(host_dev "$NQN" 1) || return
	echo 2 > "/sys/block/${dev#/dev/}/queue/nomerges" || return
	r0=$(cg_stat charge/a /dev/nullb0 rbytes); ri0=$(cg_stat charge/a /dev/nullb0 rios)
	w0=$(cg_stat charge/a /dev/nullb0 wbytes); wi0=$(cg_stat charge/a /dev/nullb0 wios)
	fio_job "$dev" randread 4k --size=$bytes >/dev/null &&
	fio_job "$dev" randwrite 4k --size=$bytes >/dev/null || return
	r1=$(cg_stat charge/a /dev/nullb0 rbytes); ri1=$(cg_stat charge/a /dev/nullb0 rios)
	w1=$(cg_stat charge/a /dev/nullb0 wbytes); wi1=$(cg_stat charge/a /dev/nullb0 wios)
	echo "io.stat delta: rbytes=$((r1 - r0)) rios=$((ri1 - ri0)) wbytes=$((w1 - w0)) wios=$((wi1 - wi0)); fio: $bytes bytes, $n ios each way"
	[ $((r1 - r0)) = $bytes ] && [ $((ri1 - ri0)) = $n ] &&
	[ $((w1 - w0)) = $bytes ] && [ $((wi1 - wi0)) = $n ] ||
		fail "io.stat does not match fio's totals exactly"
}

# 4. with cgroup_id 0, the cgroup's line does not grow
unset_ns_not_charged() {	# [SIZE]: read that much (8M)
	local dev before after
	dev=$(host_dev "$NQN" 2) || return
	before=$(cg_stat charge/a /dev/nullb0 rios)
	fio_job "$dev" randread 4k --size="${1:-8M}" >/dev/null || return
	after=$(cg_stat charge/a /dev/nullb0 rios)
	[ "$before" = "$after" ] || fail "cgroup charged for a namespace without cgroup_id: $before -> $after"
}

reads_done() {	# DISK: reads the disk completed
	awk '{ print $1 }' "/sys/block/$1/stat"
}

reads_over() {	# DISK N: the disk completed more than N reads
	[ "$(reads_done "$1")" -gt "$2" ]
}

# 8. the cgroup is removed under I/O: I/O goes on, charged to the parent; a
# cgroup re-created at the same path has a new ID and is not picked up.
# The parent's io.stat counts its children's I/O too (a live child's, and
# a removed one's once the kernel folds it in), so it alone cannot tell the
# parent from the removed child.  Two things do: every read nullb1 (only
# namespace 3's device, merging nothing) completed is in the parent's
# io.stat, none went to the root; and the module's associations (a kprobe
# on kthread_associate_blkcg, markers around the rmdir, one trace clock
# for all CPUs) name the child's css before the rmdir and never after it
# returned: each command looks the css up again and gets the parent's
# (while the rmdir runs, either).  The rmdir waits for the child's first
# charged reads: fio takes seconds to start here, and a rmdir before any
# read tests no fallback.
cgroup_removed_under_io() {
	local dev old_id new_id p0 p1 d0 d1 c1 pid assoc child n_child n_after other
	dev=$(host_dev "$NQN" 3) || return
	old_id=$(cg_id charge/parent/child)
	p0=$(cg_stat charge/parent /dev/nullb1 rios); d0=$(reads_done nullb1)
	echo > "$TRACE/trace" && echo 1 > "$ASSOC_EVENT/enable" || return
	# at most 1000 IOPS: two trace events per command must fit the 8 MB
	# buffer with the markers (Debian's kernel reads 36000/s here unpaced,
	# and the ring overwrote the markers; the debug kernel does 300/s)
	fio_job "$dev" randread 4k --time_based --runtime=8 --rate_iops=1000 > /tmp/fio8.out &
	pid=$!
	# the child charged before it goes (fio takes seconds to start here)
	wait_for 30 reads_over nullb1 $((d0 + 200)) ||
		{ wait $pid; echo 0 > "$ASSOC_EVENT/enable"; fail "fio's reads did not start"; return; }
	echo "charge: rmdir start" > "$TRACE/trace_marker"
	rmdir "$CG/charge/parent/child" || { wait $pid; echo 0 > "$ASSOC_EVENT/enable"; return 1; }
	echo "charge: rmdir done" > "$TRACE/trace_marker"
	sleep 2
	mkdir "$CG/charge/parent/child" || { wait $pid; echo 0 > "$ASSOC_EVENT/enable"; return 1; }
	new_id=$(cg_id charge/parent/child)
	wait $pid || { echo 0 > "$ASSOC_EVENT/enable"; fail "fio failed after the cgroup was removed"; return; }
	echo 0 > "$ASSOC_EVENT/enable"
	p1=$(cg_stat charge/parent /dev/nullb1 rios); d1=$(reads_done nullb1)
	c1=$(cg_stat charge/parent/child /dev/nullb1 rios)
	# "CSS COUNT CHILD_AFTER OTHER_AFTER": the css of the associations
	# before the rmdir began (one: the child's) and how many, and of those
	# after it returned, how many name that css and how many another
	assoc=$(awk '/charge: rmdir start/ { phase = 1; next } /charge: rmdir done/ { phase = 2; next }
		/ assoc: / { css = $NF; sub(/css=/, "", css); if (css == "0x0") next
			if (phase == 0) seen[css]++; else if (phase == 2) { if (css in seen) ca++; else oa++ } }
		END { for (c in seen) { n++; k = c } printf "%s %d %d %d\n", (n == 1 ? k : "several"), seen[k], ca, oa }' \
		"$TRACE/trace")
	read -r child n_child n_after other <<< "$assoc"
	echo "nullb1 completed $((d1 - d0)) reads; the parent's io.stat rios +$((p1 - p0))"
	echo "associations: $n_child with the child's css ($child) before the rmdir;" \
		"after it, $n_after with the child's, $other with another (the parent's)"
	echo "new child ($new_id, was $old_id): rios $c1"
	[ "$new_id" != "$old_id" ] || fail "re-created cgroup has the same id" || return
	[ "$child" != several ] && [ "$n_child" -gt 0 ] ||
		fail "before the rmdir the associations did not name one css" || return
	[ "$((p1 - p0))" = "$((d1 - d0))" ] ||
		fail "$((d1 - d0 - (p1 - p0))) reads were not charged to the parent (the root got them)" || return
	[ "$n_after" = 0 ] || fail "$n_after commands were charged to the removed child" || return
	[ "$other" -gt 100 ] || fail "too few commands after the rmdir ($other) to tell" || return
	[ "$c1" = 0 ] || fail "re-created cgroup was charged without re-setting cgroup_id"
}

# file_stat FIELD: the file namespace's cgroup's io.stat on ext4's device
file_stat() {
	cg_stat charge/file /dev/nullb2 "$1"
}

# 11. file backend Flush, Write Zeroes and DSM run in the namespace's
# execution context (one command each, own_ctx=1: associated with its
# cgroup), and what the filesystem issues for them there is charged to
# that cgroup.  For a Flush ext4's fsync issues a cache flush on nullb2
# (a write of 0 bytes in io.stat) when the journal has nothing to commit
# (hence the sync before), so its cgroup's wios grows by exactly 1 and
# its wbytes by 0.  Write Zeroes (FALLOC_FL_ZERO_RANGE: written extents
# made unwritten) and DSM (a punched hole) change only metadata, which
# jbd2 writes later from its own thread, charged to jbd2's cgroup as all
# journal writes are: ext4 issues no I/O of theirs that could be charged
# to the namespace.  For them the check is that each ran once in the
# execution context (where the Flush's cache flush was charged), and the
# cgroup's io.stat line is printed before and after.
file_flush_wz_dsm() {
	local dev runs wi0 wb0 wi1 wb1 s0 s1 cmd
	dev=$(host_dev "$NQN" 4) || return
	fio_job "$dev" write 4k --size=1M >/dev/null || return
	# 4 KiB LBAs (ext4 -b 4096): 256 blocks are the 1 MiB fio wrote
	[ "$(cat "/sys/block/${dev#/dev/}/queue/logical_block_size")" = 4096 ] ||
		fail "unexpected LBA size" || return
	sync
	wi0=$(file_stat wios) wb0=$(file_stat wbytes)
	runs=$(fp_runs nvme flush "$dev" -n 4) || fail "flush failed" || return
	wi1=$(file_stat wios) wb1=$(file_stat wbytes)
	echo "flush: ran inline/context $runs; charge/file on nullb2: wios +$((wi1 - wi0)), wbytes +$((wb1 - wb0))"
	[ "$runs" = "0 1" ] || fail "the flush did not run once in the execution context" || return
	[ $((wi1 - wi0)) = 1 ] && [ $((wb1 - wb0)) = 0 ] ||
		fail "the flush's cache flush was not charged to the namespace's cgroup" || return
	for cmd in "write-zeroes $dev -n 4 -s 0 -c 255" "dsm $dev -n 4 -d -s 0 -b 256"; do
		sync
		s0=$(grep "^$(devnum /dev/nullb2) " "$CG/charge/file/io.stat")
		# shellcheck disable=SC2086 # the command's words
		runs=$(fp_runs nvme $cmd) || fail "nvme ${cmd%% *} failed" || return
		s1=$(grep "^$(devnum /dev/nullb2) " "$CG/charge/file/io.stat")
		echo "${cmd%% *}: ran inline/context $runs; charge/file on nullb2 before: ${s0#* }; after: ${s1#* }"
		[ "$runs" = "0 1" ] || fail "${cmd%% *} did not run once in the execution context" || return
		if [ "${cmd%% *}" = write-zeroes ]; then
			[ "$(dd if="$dev" bs=4k count=256 iflag=direct 2>/dev/null | tr -d '\0' | wc -c)" = 0 ] ||
				fail "write zeroes did not zero the range" || return
		fi
	done
	fio_verify "$dev"
}

# over TRANSPORT: the host connected over it instead
over() {	# TRANSPORT
	host_disconnect "$NQN" && host_connect "$1" "$NQN"
}

teardown() {
	echo '-:nvmet_cgroup_test/assoc' >> "$TRACE/kprobe_events"
	echo '-:nvmet_cgroup_test/run' >> "$TRACE/kprobe_events"
	echo local > "$TRACE/trace_clock"
	host_disconnect "$NQN" && ports_destroy "$TRANSPORTS" && subsys_destroy "$NQN" &&
	umount "$MNT" && cg_remove charge && rmmod nvmet_cgroup &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && nullb_destroy nullb2 && rmmod null_blk
}

ktap_print_header
read -ra others <<< "${TRANSPORTS#loop}"
ktap_set_plan $((6 + 3 * ${#others[@]}))
run_case "setup" setup
run_case "io_stat_matches_fio_totals" io_stat_matches_fio
run_case "cgroup_id_0_not_charged" unset_ns_not_charged
run_case "cgroup_removed_under_io_falls_back_to_parent" cgroup_removed_under_io
run_case "file_flush_write_zeroes_dsm" file_flush_wz_dsm
for tr in "${others[@]}"; do
	run_case "setup_$tr" over "$tr"
	run_case "${tr}_io_stat_matches_fio_totals" io_stat_matches_fio $OTHER_N
	run_case "${tr}_cgroup_id_0_not_charged" unset_ns_not_charged 1M
done
run_case "teardown" teardown
ktap_finished
