#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the perf guest (see scripts/bench): fio against nvmet namespaces in
# the configurations of $BENCH_CONFIGS, interleaved round by round
# (A B C D R V0 V1 VD A B ...), and one fio JSON file per job in $BENCH_OUT.
#   A  stock nvmet: nvmet_cgroup not loaded
#   B  module loaded, cgroup_id unset
#   C  cgroup_id set, no io controller configured
#   D  cgroup_id set, io.cost enabled with a model that does not limit
#   L  as C, with fast_path=0: every command goes through the execution
#      context (the design before the fast path), for comparison
#   R  as C, with the root cgroup's ID: the same association work, but the
#      block layer charges the root (BENCH_CONFIGS="A C R" to separate the
#      cost of the execution path from that of charging a child cgroup)
#   V0 the upstream reference patch "nvmet: add cgroup_id" v12 (nvmet and
#      its transports built by bench/build-v12, in $BENCH_V12), cgroup_id
#      unset
#   V1 v12, cgroup_id set: every command goes through a work item on the
#      namespace's own workqueue
#   VD v12, cgroup_id set, io.cost enabled as in D
#   The V configurations run on another nvmet: the target is torn down, the
#   project's nvmet and transports are unloaded and v12's inserted (and back
#   again for the other letters), within the same boot, so that one round
#   interleaves stock, the project and v12.
#   BENCH_SCALE_CONFIGS (say "A C V1") times 128 namespaces in 32 cgroups
#   behind 4 controllers in those configurations; BENCH_ISOLATION=0 and
#   BENCH_SCALE=0 skip the isolation run and the kernel-task and slab count.
set -uo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$BENCH_DIR/lib.sh"
. ./fastpath_lib.sh

OUT=${BENCH_OUT:?}
ROUNDS=${BENCH_ROUNDS:-3}
RUNTIME=${BENCH_RUNTIME:-20}
RAMP=${BENCH_RAMP:-5}
CONFIGS=${BENCH_CONFIGS-A B C D R V0 V1 VD}
TRANSPORTS=${BENCH_TRANSPORTS:-loop tcp}
MNT=/mnt/bench
mkdir -p "$OUT"

die() { echo "bench: $*" >&2; exit 1; }
JOB_PRIO=

# Two subsystems, one per transport, each with a null_blk bdev namespace (1)
# and an ext4-file namespace (2) on the same backing devices.  ext4 sits on
# a second null_blk (blk-mq), so that io.cost (configuration D) applies to
# the file namespace too: brd is bio-based and refuses io.cost.
# With BENCH_CONFIGS or BENCH_TRANSPORTS empty (scripts/bench's isolation
# boot), there are no such subsystems and no rounds.
[ -n "$CONFIGS" ] || TRANSPORTS=
modprobe nvmet_cgroup || die "modprobe nvmet_cgroup"
nullb_create nullb0 1024 || die "null_blk"
if [ -n "$TRANSPORTS" ]; then
	nullb_create nullb1 1200 || die "null_blk for ext4"
	# memory_backed null_blk allocates a page on a sector's first write:
	# write the bdev namespace's device once, or the first rounds'
	# randwrite pay it.
	dd if=/dev/zero of=/dev/nullb0 bs=1M count=1024 oflag=direct status=none || die "null_blk prefill"
	mkfs.ext4 -q -F -b 4096 /dev/nullb1 && mkdir -p "$MNT" && mount -o noatime /dev/nullb1 "$MNT" &&
		fallocate -l 1G "$MNT/ns.img" || die "file backing"
	# Write every block once: random writes to unwritten extents convert
	# them (journal work), which made the first rounds of ext4 randwrite
	# far slower than the later ones.
	dd if=/dev/zero of="$MNT/ns.img" bs=1M count=1024 oflag=direct conv=notrunc status=none || die "file prefill"
fi
cg_create bench || die "cgroup"

# The bench's target: configfs, which lives and dies with nvmet.
target_up() {
	local t
	for t in $TRANSPORTS; do
		subsys_create "nqn.bench.$t" &&
		ns_create "nqn.bench.$t" 1 /dev/nullb0 && ns_create "nqn.bench.$t" 2 "$MNT/ns.img" ||
			die "subsystem $t"
	done
	port_create 1 loop && port_create 2 tcp || die "ports"
	for t in $TRANSPORTS; do
		[ "$t" = loop ] && port_add_subsys 1 "nqn.bench.$t"
		[ "$t" = tcp ] && port_add_subsys 2 "nqn.bench.$t"
	done
	return 0
}
target_down() {
	local t
	# The ports link the subsystems: unlink them first.
	port_destroy 1 && port_destroy 2 || die "port teardown"
	for t in $TRANSPORTS; do
		subsys_destroy "nqn.bench.$t" || die "subsystem $t teardown"
	done
}

# Which nvmet is loaded: "project" (the kernel's, carrying patches/) or
# "v12" (bench/build-v12's, MODULE_VERSION("v12") in each module).
V12=${BENCH_V12:-}
NVMET_MODULES="nvmet nvme_loop nvmet_tcp"
STACK=project
stack_of() {	# CONFIG
	case "$1" in
	V*) echo v12 ;;
	*) echo project ;;
	esac
}
# A wrong nvmet would time the wrong code without any other sign: check
# every module of the stack, after each swap.
stack_check() {	# STACK
	local m v
	for m in $NVMET_MODULES; do
		[ -d "/sys/module/$m" ] || die "swap to $1: $m is not loaded"
		v=$(cat "/sys/module/$m/version" 2>/dev/null)
		if [ "$1" = v12 ]; then
			[ "$v" = v12 ] || die "swap to v12: $m has version '$v', not v12"
		else
			[ -z "$v" ] || die "swap to the project's nvmet: $m has version '$v'"
		fi
	done
}
# Swap nvmet and its transports for STACK's, within the boot: no host is
# connected between configurations, so tearing the target down releases
# every module.  insmod does not resolve dependencies: modprobe loads what
# v12's modules depend on first (the kernel's nvme_auth, kpp, nvme_fabrics).
stack_swap() {	# STACK
	local m ko deps
	[ "$1" = "$STACK" ] && return 0
	echo "bench: swapping nvmet: $STACK -> $1"
	target_down
	for m in nvmet_cgroup nvmet_tcp nvme_loop nvmet; do
		if [ -d "/sys/module/$m" ]; then
			rmmod "$m" || die "swap to $1: rmmod $m"
		fi
	done
	if [ "$1" = v12 ]; then
		[ -n "$V12" ] && [ -f "$V12/nvmet.ko" ] || die "no v12 modules (BENCH_V12='$V12')"
		for m in nvmet nvme-loop nvmet-tcp; do
			ko=$V12/$m.ko
			deps=$(modinfo -F depends "$ko" | tr ',' '\n' | grep -vx nvmet | tr '\n-' ' _')
			# shellcheck disable=SC2086 # a list of module names
			[ -z "${deps// /}" ] || modprobe -a $deps || die "swap to v12: modprobe $deps"
			insmod "$ko" || die "swap to v12: insmod $ko"
		done
	else
		modprobe -a $NVMET_MODULES || die "swap to the project's nvmet: modprobe"
	fi
	stack_check "$1"
	STACK=$1
	target_up
}

# The kernel tasks every V configuration's namespaces add: v12 makes a
# WQ_MEM_RECLAIM workqueue per namespace, "nvmet-blkcg-NSID", whose rescuer
# is a kernel thread "kworker/R-nvmet-blkcg-NSID" (/proc/PID/comm gives the
# full name, past the 15 characters of the task's comm); the project has two
# rescuers ("kworker/R-nvmet_cgroup" and "kworker/R-nvmet_cgroup_throttled")
# for all namespaces.
rescuers() {
	cat /proc/[0-9]*/comm 2>/dev/null | grep -Ec '^kworker/R-(nvmet-blkcg-[0-9]+|nvmet_cgroup|nvmet_cgroup_throttled)$'
}

target_up

iocost() {	# on|off: iocost on both backing devices, a model that never limits
	local d
	for d in /dev/nullb0 /dev/nullb1; do
		d=$(devnum "$d")
		if [ "$1" = on ]; then
			echo "$d enable=1 ctrl=user min=100.00 max=100.00" > "$CG/io.cost.qos" 2>/dev/null
			echo "$d ctrl=user model=linear rbps=1000000000000 rseqiops=100000000 rrandiops=100000000 wbps=1000000000000 wseqiops=100000000 wrandiops=100000000" > "$CG/io.cost.model" 2>/dev/null
		else
			echo "$d enable=0" > "$CG/io.cost.qos" 2>/dev/null
		fi
	done
	return 0
}

configure() {	# CONFIG
	local t ns id=0
	# A swap recreates the target with its namespaces enabled.
	stack_swap "$(stack_of "$1")"
	for t in $TRANSPORTS; do
		for ns in 1 2; do
			echo 0 > "$NVMET_CFS/subsystems/nqn.bench.$t/namespaces/$ns/enable"
		done
	done
	# Every namespace is disabled, so the module can go: load it afresh
	# with this configuration's parameters.
	if lsmod | grep -q '^nvmet_cgroup '; then
		rmmod nvmet_cgroup || die "rmmod"
	fi
	case "$1" in
	A|V*) ;;
	L) modprobe nvmet_cgroup fast_path=0 || die "modprobe" ;;
	*) modprobe nvmet_cgroup || die "modprobe" ;;
	esac
	case "$1" in
	C|D|L|V1|VD) id=$(cg_id bench) ;;
	R) id=$(stat -c %i "$CG") ;;
	esac
	iocost off
	case "$1" in
	D|VD) iocost on ;;
	esac
	for t in $TRANSPORTS; do
		for ns in 1 2; do
			# nvmet keeps cgroup_id across module reloads: A and B clear it
			echo "$id" > "$NVMET_CFS/subsystems/nqn.bench.$t/namespaces/$ns/cgroup_id" || die "cgroup_id"
			echo 1 > "$NVMET_CFS/subsystems/nqn.bench.$t/namespaces/$ns/enable" || die "enable"
		done
	done
	# "CONFIG NVMET NAMESPACES RESCUERS", once per configuration.
	grep -q "^$1 " "$OUT/threads.txt" 2>/dev/null ||
		echo "$1 $STACK $(($(echo $TRANSPORTS | wc -w) * 2)) $(rescuers)" >> "$OUT/threads.txt"
}

# Each fio job runs on its own CPU (numjobs=2: one per CPU; one job: CPU 0),
# so that the scheduler's placement does not change from job to job.
# Latency is fio's total latency, submission to completion (lat): nvme-tcp
# may send a command and even complete it inside io_submit, so completion
# latency (clat) alone can miss nearly all of it.
job() {	# NAME DEV fio-args...
	local name=$1 dev=$2
	shift 2
	# shellcheck disable=SC2086 # JOB_PRIO is a command prefix or empty
	$JOB_PRIO fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio --bs=4k \
		--cpus_allowed=0-1 --cpus_allowed_policy=split --lat_percentiles=1 \
		--time_based --runtime="$RUNTIME" --ramp_time="$RAMP" --group_reporting \
		--output-format=json --output="$OUT/$name.json" "$@" >/dev/null 2>&1 ||
		echo "bench: fio $name failed" >&2
}

# Where configuration $1's commands run, before its first timed jobs: 256
# randreads on each nvme-loop namespace, counted by the fast-path tests'
# kprobe on the glue (inline = the transport's thread, context = the lanes).
# A policy left enabled on a device, say, would silently turn C into L:
# a configuration whose commands did not take the path it names ends the
# run (paths_expected).  The probe exists only while counting (and the
# module is loaded); text is patched only between jobs (see fastpath_lib.sh).
fp_tracing_options || die "tracing options"

# paths_expected CONFIG BDEV_INLINE BDEV_CONTEXT FILE_INLINE FILE_CONTEXT:
# whether the counts are the configuration's path (bench/summarize.py
# checks the same): B none through the module (cgroup_id unset); C and R
# every command in the transport's thread; D (io.cost on both devices) and
# L (fast_path=0) every command in the execution context.
paths_expected() {
	case "$1" in
	B) [ "$2$3$4$5" = 0000 ] ;;
	C|R) [ "$2" -gt 0 ] && [ "$3" = 0 ] && [ "$4" -gt 0 ] && [ "$5" = 0 ] ;;
	D|L) [ "$2" = 0 ] && [ "$3" -gt 0 ] && [ "$4" = 0 ] && [ "$5" -gt 0 ] ;;
	*) true ;;
	esac
}

paths() {	# CONFIG
	local ns dev runs line=$1
	lsmod | grep -q '^nvmet_cgroup ' || return 0
	echo "$FP_PROBE" >> "$TRACE/kprobe_events" || die "kprobe"
	for ns in 1 2; do
		dev=$(host_dev nqn.bench.loop $ns) || die "device loop $ns"
		runs=$(fp_runs fio --name=paths --filename="$dev" --direct=1 --ioengine=libaio \
			--bs=4k --rw=randread --iodepth=32 --size=1M --output-format=terse) ||
			die "path count $1"
		line="$line $runs"
	done
	echo '-:nvmet_cgroup_test/run' >> "$TRACE/kprobe_events"
	echo "$line" >> "$OUT/paths.txt"
	# shellcheck disable=SC2086 # the five fields
	paths_expected $line ||
		die "configuration $1 did not take its path: bdev inline/context, file inline/context:$(echo "$line" | cut -d' ' -f2-)"
}

for ((round = 1; round <= ROUNDS; round++)); do
	for c in $(rotate "$round" $CONFIGS); do
		configure "$c"
		for t in $TRANSPORTS; do
			host_connect "$t" "nqn.bench.$t" || die "connect $t"
			[ "$round" = 1 ] && [ "$t" = loop ] && paths "$c"
			for ns in 1 2; do
				backend=$([ $ns = 1 ] && echo bdev || echo file)
				dev=$(host_dev "nqn.bench.$t" $ns) || die "device $t $ns"
				echo "round $round config $c $t $backend"
				for rw in randread randwrite; do
					job "r${round}_${c}_${t}_${backend}_${rw}" "$dev" --rw=$rw --iodepth=32 --numjobs=2
				done
				job "r${round}_${c}_${t}_${backend}_qd1" "$dev" --rw=randread --iodepth=1 --rate_iops=200
			done
			host_disconnect "nqn.bench.$t"
		done
	done
done

# Isolation: namespaces N (noisy) and Q (quiet) of one subsystem behind one
# nvme-tcp controller, on one null_blk under io.cost with a fixed linear model
# of 1000 IOPS.  N (io.weight 25) runs randread qd32 x2, Q (io.weight 100) a
# 200 IOPS qd1 randread; Q alone, then with N.  Mode "module" is the
# execution context; mode "inline" (inline_assoc=1, diagnostic) associates
# the cgroup in the transport's thread.
isolation() {
	local mode=$1 q n pid
	echo 0 > "$NVMET_CFS/subsystems/nqn.bench.iso/namespaces/1/enable"
	echo 0 > "$NVMET_CFS/subsystems/nqn.bench.iso/namespaces/2/enable"
	# A namespace still enabled with a cgroup pins the module, and modprobe
	# of a loaded module ignores the new parameter.
	if lsmod | grep -q '^nvmet_cgroup '; then
		rmmod nvmet_cgroup || die "rmmod before isolation ($mode)"
	fi
	if [ "$mode" = inline ]; then
		modprobe nvmet_cgroup inline_assoc=1 || die "modprobe inline_assoc=1"
	else
		modprobe nvmet_cgroup || die "modprobe"
	fi
	cg_id iso/noisy > "$NVMET_CFS/subsystems/nqn.bench.iso/namespaces/1/cgroup_id" &&
	cg_id iso/quiet > "$NVMET_CFS/subsystems/nqn.bench.iso/namespaces/2/cgroup_id" &&
	echo 1 > "$NVMET_CFS/subsystems/nqn.bench.iso/namespaces/1/enable" &&
	echo 1 > "$NVMET_CFS/subsystems/nqn.bench.iso/namespaces/2/enable" || die "iso enable"
	host_connect tcp nqn.bench.iso || die "iso connect"
	n=$(host_dev nqn.bench.iso 1) && q=$(host_dev nqn.bench.iso 2) || die "iso devices"
	# The initiator shares the guest's two CPUs with the target: Q's fio
	# gets the highest nice priority (alone and with N, in both modes) so that
	# its latency is the target's doing, not the scheduler running N's two
	# fio threads first.
	echo "isolation $mode: quiet alone"
	JOB_PRIO="nice -n -20" job "iso_${mode}_alone_quiet" "$q" --rw=randread --iodepth=1 --rate_iops=200
	echo "isolation $mode: quiet with noisy"
	job "iso_${mode}_noisy" "$n" --rw=randread --iodepth=32 --numjobs=2 --runtime=$((RUNTIME + RAMP + 5)) &
	pid=$!
	sleep 3
	JOB_PRIO="nice -n -20" job "iso_${mode}_with_quiet" "$q" --rw=randread --iodepth=1 --rate_iops=200
	wait $pid
	host_disconnect nqn.bench.iso
}

if [ "${BENCH_ISOLATION:-1}" = 1 ]; then
	# The isolation run is the project's: back to its nvmet if the last
	# configuration was v12's.
	stack_swap project
	for t in $TRANSPORTS; do
		for ns in 1 2; do
			echo 0 > "$NVMET_CFS/subsystems/nqn.bench.$t/namespaces/$ns/enable"
		done
	done
	nullb_create nullb2 1024 || die "null_blk 2"
	cg_create iso/noisy && cg_create iso/quiet || die "iso cgroups"
	echo "default 25" > "$CG/iso/noisy/io.weight"
	echo "default 100" > "$CG/iso/quiet/io.weight"
	d=$(devnum /dev/nullb2)
	echo "$d enable=1 ctrl=user min=100.00 max=100.00" > "$CG/io.cost.qos" &&
	echo "$d ctrl=user model=linear rbps=4294967296 rseqiops=1000 rrandiops=1000 wbps=4294967296 wseqiops=1000 wrandiops=1000" \
		> "$CG/io.cost.model" || die "iso io.cost"
	subsys_create nqn.bench.iso && ns_create nqn.bench.iso 1 /dev/nullb2 &&
		ns_create nqn.bench.iso 2 /dev/nullb2 && port_add_subsys 2 nqn.bench.iso || die "iso target"
	for mode in module inline; do
		isolation $mode
	done
	echo "$d enable=0" > "$CG/io.cost.qos"
	rm "$NVMET_CFS/ports/2/subsystems/nqn.bench.iso"	# the port's link first
	subsys_destroy nqn.bench.iso
fi

# Scale under I/O: 128 namespaces in 32 cgroups behind 4 controllers (one
# subsystem each, the transports of $BENCH_TRANSPORTS in turn), all on
# nullb0; one fio randread (iodepth 32 x 2) spreads over the 128 devices,
# and the aggregate IOPS is timed for each of $BENCH_SCALE_CONFIGS (A, C,
# V1: stock, the project, v12), interleaved round by round.  Namespace k
# goes to cgroup scale/g(k mod 32).
SCALE_SUBSYS=4
SCALE_NS=32
SCALE_CGROUPS=32
scale_up() {	# CONFIG
	local s ns id i=0 t transports
	read -ra transports <<< "$TRANSPORTS"
	for ((s = 0; s < SCALE_SUBSYS; s++)); do
		subsys_create "nqn.bench.scale$s" || die "scale subsystem $s"
		for ((ns = 1; ns <= SCALE_NS; ns++)); do
			id=0
			case "$1" in
			A|V0|B) ;;
			*) id=$(cg_id "scale/g$((i % SCALE_CGROUPS))") ;;
			esac
			i=$((i + 1))
			ns_create "nqn.bench.scale$s" "$ns" /dev/nullb0 cgroup_id="$id" ||
				die "scale namespace $s/$ns ($1)"
		done
		t=${transports[s % ${#transports[@]}]}
		port_add_subsys "$([ "$t" = loop ] && echo 1 || echo 2)" "nqn.bench.scale$s" &&
			host_connect "$t" "nqn.bench.scale$s" || die "scale connect $s ($1)"
	done
}
# The host's block devices of the scale subsystems, colon-separated for
# fio, once all of them are there.
scale_devs() {
	local b devs n i
	for ((i = 0; i < 300; i++)); do
		devs= n=0
		for b in /sys/block/nvme*n*; do
			case "$(cat "$b/device/subsysnqn" 2>/dev/null)" in
			nqn.bench.scale*) devs=$devs${devs:+:}/dev/${b##*/}; n=$((n + 1)) ;;
			esac
		done
		if [ "$n" = $((SCALE_SUBSYS * SCALE_NS)) ]; then
			echo "$devs"
			return 0
		fi
		sleep 0.1
	done
	die "scale: $n of $((SCALE_SUBSYS * SCALE_NS)) host devices"
}
scale_down() {
	local s
	for ((s = 0; s < SCALE_SUBSYS; s++)); do
		host_disconnect "nqn.bench.scale$s"
		rm -f "$NVMET_CFS"/ports/*/subsystems/"nqn.bench.scale$s"
		subsys_destroy "nqn.bench.scale$s" || die "scale teardown $s"
	done
}
if [ -n "${BENCH_SCALE_CONFIGS:-}" ] && [ -n "$TRANSPORTS" ]; then
	for ((i = 0; i < SCALE_CGROUPS; i++)); do
		cg_create "scale/g$i" || die "scale cgroup $i"
	done
	for ((round = 1; round <= ROUNDS; round++)); do
		for c in $(rotate "$round" $BENCH_SCALE_CONFIGS); do
			configure "$c"
			before=$(rescuers)
			scale_up "$c"
			# Those of the 128 namespaces only, not the bench's own.
			grep -q "^scale_$c " "$OUT/threads.txt" ||
				echo "scale_$c $STACK $((SCALE_SUBSYS * SCALE_NS)) $(($(rescuers) - before))" \
					>> "$OUT/threads.txt"
			echo "round $round scale $c"
			job "r${round}_${c}_scale_bdev_randread" "$(scale_devs)" --rw=randread --iodepth=32 --numjobs=2
			scale_down
		done
	done
fi

if [ "${BENCH_SCALE:-1}" = 1 ]; then
	# Kernel tasks and slab that 1, 16 and 128 namespaces with cgroup_id
	# set add, with the project's nvmet and module, then (with $BENCH_V12)
	# with v12's nvmet: v12 makes a workqueue with a rescuer per namespace.
	tasks() { ls /proc | grep -c '^[0-9]'; }
	slab() { awk '/^Slab:/ {print $2}' /proc/meminfo; }
	scale() {	# STACK
		local n=0 target base_tasks base_slab base_rescuers t s
		stack_swap "$1"
		[ "$1" = project ] && { modprobe nvmet_cgroup || die "modprobe"; }
		base_tasks=$(tasks)
		base_slab=$(slab)
		base_rescuers=$(rescuers)
		subsys_create nqn.bench.scale || die "scale subsystem"
		echo "$1,0,$base_tasks,0,0,$base_slab,0" >> "$OUT/scale.csv"
		for target in 1 16 128; do
			while [ $n -lt $target ]; do
				n=$((n + 1))
				ns_create nqn.bench.scale $n /dev/nullb0 cgroup_id="$(cg_id bench)" ||
					die "scale ns $n ($1)"
			done
			sleep 1
			t=$(tasks)
			s=$(slab)
			echo "$1,$n,$t,$((t - base_tasks)),$(($(rescuers) - base_rescuers)),$s,$((s - base_slab))" \
				>> "$OUT/scale.csv"
		done
		subsys_destroy nqn.bench.scale || die "scale teardown ($1)"
	}
	echo "stack,namespaces,tasks,task_delta,rescuer_delta,slab_kib,slab_delta_kib" > "$OUT/scale.csv"
	scale project
	[ -z "$V12" ] || scale v12
fi
target_down
[ -z "$TRANSPORTS" ] || umount "$MNT"
echo "bench: done"
