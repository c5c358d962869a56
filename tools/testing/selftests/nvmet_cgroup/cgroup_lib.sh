# SPDX-License-Identifier: GPL-2.0
# cgroup v2 and fio helpers for the guest tests; sourced.

CG=/sys/fs/cgroup

# cg_create PATH: a cgroup under the root with the io controller enabled on
# the way down.
cg_create() {
	local path=$1 dir=$CG part
	grep -qw io "$CG/cgroup.subtree_control" || echo +io > "$CG/cgroup.subtree_control" || return
	IFS=/ read -ra parts <<< "$path"
	for part in "${parts[@]}"; do
		dir=$dir/$part
		[ -d "$dir" ] || mkdir "$dir" || return
		if [ "$dir" != "$CG/$path" ]; then
			grep -qw io "$dir/cgroup.subtree_control" ||
				echo +io > "$dir/cgroup.subtree_control" || return
		fi
	done
}

# cg_id PATH: the cgroup ID (the directory's inode number).
cg_id() {
	stat -c %i "$CG/$1"
}

# cg_remove PATH: remove a cgroup and its children, deepest first.
cg_remove() {
	[ -d "$CG/$1" ] || return 0
	find "$CG/$1" -depth -type d -exec rmdir {} \;
}

# devnum DEV: "MAJ:MIN" of a block device.
devnum() {
	local d
	d=$(stat -L -c '%t:%T' "$1") || return
	echo "$((16#${d%%:*})):$((16#${d##*:}))"
}

# blkg_prime PATH DEV: unless the cgroup has a line for DEV in io.stat
# already (its blkg exists), a 4 KiB direct read of DEV from a process in
# it, so that its blkg on DEV (and its ancestors') exists before a per-device
# io.max, io.latency or io.weight line is first written there.  For a cgroup
# without one, 7.3's blkg_conf_prep() preloads radix tree nodes with
# GFP_KERNEL under q->blkcg_mutex, which blkcg_activate_policy() takes
# inside a queue freeze (the first io.max or io.latency line on a disk):
# lockdep reports that inversion whenever the per-CPU preload pool needs a
# page, at random (a make check's boot 1 in CI, 2026-12-06; systemd's own
# io.max write in systemd.sh before).  The block layer's locking, not the
# module's: priming keeps each console a check of the module (since
# patches/block/0002, NOIO under rq_qos_mutex, the project's kernels no
# longer report it; priming stays, for one read).  The read is
# charged to the cgroup, before anything a test measures.  io.stat has a
# line for every blkg of the cgroup, counters zero or not; the read's
# blkg_lookup_create() can fall back to an ancestor's blkg (GFP_NOWAIT), so
# the line is checked for after it.
blkg_prime() {
	local d
	d=$(devnum "$2") || return
	grep -q "^$d " "$CG/$1/io.stat" 2>/dev/null && return 0
	sh -c "echo \$\$ > '$CG/$1/cgroup.procs' &&
		exec dd if='$2' of=/dev/null bs=4k count=1 iflag=direct status=none" ||
		fail "cannot read $2 from cgroup $1" || return
	grep -q "^$d " "$CG/$1/io.stat" || fail "cgroup $1 has no blkg on $2 after reading it"
}

# io_set PATH FILE DEV SETTINGS: write "MAJ:MIN SETTINGS" for DEV to the
# cgroup's FILE (io.max, io.latency or io.weight), its blkg primed first.
io_set() {
	local d
	d=$(devnum "$3") || return
	blkg_prime "$1" "$3" || return
	echo "$d $4" > "$CG/$1/$2"
}

# cg_stat PATH DEV FIELD: one io.stat counter of a cgroup for a device (0 if
# the cgroup has no line for it, or no io.stat: no io css of its own).
cg_stat() {
	local line
	line=$(grep "^$(devnum "$2") " "$CG/$1/io.stat" 2>/dev/null)
	line=" ${line#* } "
	case "$line" in
	*" $3="*) line=${line#*" $3="}; echo "${line%% *}" ;;
	*) echo 0 ;;
	esac
}

# fio_job DEV RW BS [fio options...]: run one job; prints "iops bw_bytes_per_s
# total_bytes" of its reads (rw=read/randread) or writes (%.0f, not %d: a
# rate over 2 GiB/s, seen over nvme-loop on Debian's kernel, overflows awk's
# %d).
fio_job() {
	local dev=$1 rw=$2 bs=$3 out
	shift 3
	out=$(fio --name=job --filename="$dev" --rw="$rw" --bs="$bs" --direct=1 \
		--ioengine=libaio --iodepth=32 --numjobs=1 --group_reporting \
		--minimal "$@") || { echo "fio failed: $out" >&2; return 1; }
	case "$rw" in
	*read) echo "$out" | awk -F';' '{printf "%.0f %.0f %.0f\n", $8, $7 * 1024, $6 * 1024}' ;;
	*) echo "$out" | awk -F';' '{printf "%.0f %.0f %.0f\n", $49, $48 * 1024, $47 * 1024}' ;;
	esac
}

# randread_together SPEC...: one fio job of 4 KiB random reads per SPEC, all
# at once, each for $RUNTIME s after 3 s of ramp; prints each job's IOPS, one
# line per SPEC in order.  SPEC is "DEV CGROUP [FIO_OPTION...]": the job
# reads DEV from CGROUP ("-": this shell's), with the options added.
randread_together() {
	local tmp spec dev cg opts i=0 j st=0
	local -a pids=()
	tmp=$(mktemp -d) || return
	for spec in "$@"; do
		read -r dev cg opts <<< "$spec"
		# shellcheck disable=SC2086 # opts: fio options, one word each
		( [ "$cg" = - ] || echo "$BASHPID" > "$CG/$cg/cgroup.procs" &&
		  fio_job "$dev" randread 4k --time_based --runtime="$RUNTIME" --ramp_time=3 $opts \
			> "$tmp/$i" ) &
		pids+=($!)
		i=$((i + 1))
	done
	for j in "${pids[@]}"; do
		wait "$j" || st=1
	done
	if [ $st = 0 ]; then
		for ((j = 0; j < i; j++)); do
			cut -d' ' -f1 "$tmp/$j"
		done
	fi
	rm -rf "$tmp"
	return $st
}

# weight_split LIGHT_SPEC HEAVY_SPEC: randread_together of the two; prints
# the heavy job's IOPS over the light one's (both rates on stderr)
weight_split() {
	local iops light heavy
	iops=$(randread_together "$1" "$2") || { echo "fio failed" >&2; return 1; }
	light=$(sed -n 1p <<< "$iops")
	heavy=$(sed -n 2p <<< "$iops")
	echo "light: $light IOPS, heavy: $heavy IOPS" >&2
	[ "$light" -gt 0 ] || { echo "no I/O in the light job" >&2; return 1; }
	awk -v l="$light" -v h="$heavy" 'BEGIN { printf "%.2f\n", h / l }'
}

# within MEASURED EXPECTED PERCENT: |measured - expected| <= percent of expected
within() {
	awk -v m="$1" -v e="$2" -v p="$3" 'BEGIN { d = m - e; if (d < 0) d = -d; exit !(d <= e * p / 100) }'
}

# iocost_enable DEV IOPS: io.cost on DEV with a linear model of IOPS (random
# and sequential) and unlimited bandwidth, its vrate pinned at 100 %.
# qos first: it creates iocost with the queue frozen.  Creating it from an
# io.cost.model write allocates under rq_qos_mutex, which lockdep reports
# against ioc_qos_write() (a 7.3 blk-iocost issue, not ours; gone with
# patches/block/0002, the order kept all the same).  Only vrate is
# pinned: the device's default latency targets keep iocost's period long
# enough to steer under emulation (rlat=0 would make it 1 ms).
iocost_enable() {
	local d
	d=$(devnum "$1") || return
	echo "$d enable=1 ctrl=user min=100.00 max=100.00" > "$CG/io.cost.qos" &&
	echo "$d ctrl=user model=linear rbps=4294967296 rseqiops=$2 rrandiops=$2 wbps=4294967296 wseqiops=$2 wrandiops=$2" \
		> "$CG/io.cost.model"
}
