#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Many namespaces on a many-CPU target: scripts/check boots this test with
# 16 vCPUs.  NR_SUBSYS subsystems of NS_PER_SUBSYS namespaces (1024 in all),
# every one on the same null_blk, bound to NR_CG cgroups in turn, the module
# loaded with fast_path=0 so that every command takes a lane.
#
# - Memory: what the module costs per enabled namespace is printed: the
#   unreclaimable slab of 1024 namespaces enabled with a cgroup, minus the
#   same namespaces enabled without one, per namespace.  It must not grow
#   with the CPUs: a namespace that ran no command has no lane but its
#   fallback one (the status file says lanes=1), and costs at most
#   MAX_NS_BYTES.  Lanes made up front, one per CPU, cost 16 lanes here.
#   Nor does the number of kernel threads grow with the namespaces.
# - I/O on a sample (SAMPLE namespaces of the one subsystem a host
#   connects to, over nvme-tcp, a reader on each CPU): each has a lane for
#   the CPUs its commands ran on, at most one per CPU plus the fallback.
# - Enable and disable latency, with and without a cgroup, are printed.
# - While the 1024 namespaces are disabled, one after another, a connect
#   (to a subsystem of its own) and a discovery complete, each taking at
#   most 1 s longer than the same operation before the disables began.  Not
#   1 s in all: under emulation a discovery alone has taken 8 s (stall.sh),
#   and what this checks is what the disables add.  nvmet disables a
#   namespace holding nvmet_config_sem, which every connect and discovery
#   takes: a disable that waited for work of other namespaces, or for many
#   per-CPU work items, would hold them up.  The case fails if the disables
#   ended before the connect and the discovery did.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN_PREFIX=nqn.2026-12.io.nvmet-cgroup:scale
NQN_C=$NQN_PREFIX-connect
NR_SUBSYS=16
NS_PER_SUBSYS=64
NR_NS=$((NR_SUBSYS * NS_PER_SUBSYS))
NR_CG=64
SAMPLE=8
MAX_NS_BYTES=4096
STATUS=/sys/kernel/debug/nvmet_cgroup/namespaces

nqn() {	# nqn INDEX: the NQN of subsystem INDEX (0-based)
	printf '%s-%02d' "$NQN_PREFIX" "$1"
}

us_now() {
	local t=$EPOCHREALTIME
	echo $((${t/./}))
}

# slab_kb: unreclaimable slab now, in KiB
slab_kb() {
	local k v _
	while read -r k v _; do
		[ "$k" = "SUnreclaim:" ] && { echo "$v"; return; }
	done < /proc/meminfo
	fail "no SUnreclaim in /proc/meminfo"
}

setup() {
	local s subsys names ns
	echo "$(nproc) CPUs"
	[ "$(nproc)" -ge 8 ] || fail "needs a guest with 8 CPUs or more (scripts/check boots it with 16)" || return
	modprobe nvmet_cgroup fast_path=0 && nullb_create nullb0 64 &&
	cg_create scale || return
	names=()
	for ((i = 0; i < NR_CG; i++)); do
		names+=("$CG/scale/g$i")
	done
	mkdir "${names[@]}" || return
	CG_IDS=()
	for ((i = 0; i < NR_CG; i++)); do
		CG_IDS+=("$(cg_id "scale/g$i")") || return
	done
	for ((s = 0; s < NR_SUBSYS; s++)); do
		subsys_create "$(nqn "$s")" || return
		subsys=$NVMET_CFS/subsystems/$(nqn "$s")/namespaces
		names=()
		for ((ns = 1; ns <= NS_PER_SUBSYS; ns++)); do
			names+=("$subsys/$ns")
		done
		mkdir "${names[@]}" || return
		for ((ns = 1; ns <= NS_PER_SUBSYS; ns++)); do
			echo -n /dev/nullb0 > "$subsys/$ns/device_path" || return
		done
	done
	subsys_create "$NQN_C" && ns_create "$NQN_C" 1 /dev/nullb0 &&
	port_create 1 tcp && port_add_subsys 1 "$(nqn 0)" && port_add_subsys 1 "$NQN_C" &&
	declare -p CG_IDS > /tmp/scale-cg-ids
}

# for_each_ns FUNCTION: FUNCTION NS_DIR INDEX for every namespace, in order
for_each_ns() {
	local s ns i=0 subsys
	for ((s = 0; s < NR_SUBSYS; s++)); do
		subsys=$NVMET_CFS/subsystems/$(nqn "$s")/namespaces
		for ((ns = 1; ns <= NS_PER_SUBSYS; ns++)); do
			"$1" "$subsys/$ns" "$i" || return
			i=$((i + 1))
		done
	done
}

# Latency of each enable or disable, summed (us) and the largest
LAT_SUM=0
LAT_MAX=0
timed_write() {	# timed_write VALUE FILE
	local t0 t
	t0=$(us_now)
	echo "$1" > "$2" || fail "writing $1 to $2 failed" || return
	t=$(($(us_now) - t0))
	LAT_SUM=$((LAT_SUM + t))
	[ "$t" -le "$LAT_MAX" ] || LAT_MAX=$t
}
lat_reset() { LAT_SUM=0; LAT_MAX=0; }
lat_report() {	# lat_report WHAT
	echo "$1: mean $((LAT_SUM / NR_NS)) us, max $LAT_MAX us"
}
ns_enable() { timed_write 1 "$1/enable"; }
ns_disable() { timed_write 0 "$1/enable"; }
ns_disable_quiet() { echo 0 > "$1/enable"; }
ns_bind() { echo "${CG_IDS[$(($2 % NR_CG))]}" > "$1/cgroup_id"; }
ns_unbind() { echo 0 > "$1/cgroup_id"; }

# tasks: how many tasks (kernel threads included) there are
tasks() {
	local d n=0
	for d in /proc/[0-9]*; do
		n=$((n + 1))
	done
	echo "$n"
}

# enable_all_measured: enable every namespace (with the cgroup_id each has),
# timing each enable; COST_KB is the slab that added, TASKS how many more
# tasks there are after
COST_KB=0
TASKS=0
enable_all_measured() {
	local before after t0
	sync; echo 2 > /proc/sys/vm/drop_caches
	before=$(slab_kb) && t0=$(tasks) || return
	lat_reset
	for_each_ns ns_enable || return
	sleep 1
	after=$(slab_kb) || return
	COST_KB=$((after - before))
	TASKS=$(($(tasks) - t0))
}

memory_per_namespace() {
	local stock ext per lines ones stock_tasks
	# shellcheck source=/dev/null # written by setup
	. /tmp/scale-cg-ids
	enable_all_measured || return
	stock=$COST_KB
	stock_tasks=$TASKS
	lat_report "enable without a cgroup"
	lat_reset
	for_each_ns ns_disable || return
	lat_report "disable without a cgroup"
	for_each_ns ns_bind || return
	enable_all_measured || return
	ext=$COST_KB
	lat_report "enable with a cgroup"
	echo "tasks after enabling $NR_NS namespaces: $stock_tasks more without a cgroup, $TASKS more with one"
	per=$(((ext - stock) * 1024 / NR_NS))
	echo "slab of $NR_NS enabled namespaces: $stock KiB without a cgroup, $ext KiB with one:" \
	     "the module's cost is $per bytes per namespace on $(nproc) CPUs"
	lines=$(grep -c "^$NQN_PREFIX-[0-9]* " "$STATUS")
	ones=$(grep -c "^$NQN_PREFIX-[0-9]* .* lanes=1 " "$STATUS")
	echo "status file: $lines namespaces, $ones with lanes=1"
	[ "$lines" = "$NR_NS" ] || fail "the status file shows $lines of $NR_NS namespaces" || return
	[ "$ones" = "$NR_NS" ] ||
		fail "$((NR_NS - ones)) namespaces that ran no command have more than their fallback lane" || return
	[ "$per" -le "$MAX_NS_BYTES" ] || fail "an idle namespace costs $per bytes, more than $MAX_NS_BYTES" || return
	# no thread per namespace: a few kworkers may come and go meanwhile
	[ "$TASKS" -le $((stock_tasks + 4)) ] ||
		fail "enabling $NR_NS namespaces with a cgroup made $TASKS tasks, $stock_tasks without"
}

# lanes_of NSID: the lanes of namespace NSID of the first subsystem
lanes_of() {
	sed -n "s/^$(nqn 0) $1 .* lanes=\([0-9]*\) .*/\1/p" "$STATUS"
}

sample_has_lanes_where_it_ran() {
	local jobs=() d ns n cpus
	cpus=$(nproc)
	host_connect tcp "$(nqn 0)" || return
	for ((ns = 1; ns <= SAMPLE; ns++)); do
		d=$(host_dev "$(nqn 0)" "$ns") || return
		jobs+=(--name="ns$ns" --filename="$d")
	done
	# one reader per CPU per namespace, so commands come in on every CPU
	fio --thread --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 \
		--numjobs="$cpus" --size=16M --number_ios=256 --output-format=terse \
		"${jobs[@]}" > /dev/null || fail "fio on the sample failed" || return
	for ((ns = 1; ns <= SAMPLE; ns++)); do
		n=$(lanes_of "$ns")
		echo "namespace $ns: lanes=$n"
		[ -n "$n" ] || fail "no status line for namespace $ns" || return
		[ "$n" -ge 2 ] || fail "namespace $ns ran commands in its lanes but made none for a CPU" || return
		[ "$n" -le $((cpus + 1)) ] || fail "namespace $ns has $n lanes on $cpus CPUs" || return
	done
	host_disconnect "$(nqn 0)"
}

# op_ms CMD...: how long CMD takes, in ms; fails with it
op_ms() {
	local t0 out
	t0=$(us_now)
	out=$("$@" 2>&1) || { fail "$* failed: $out"; return; }
	echo $((($(us_now) - t0) / 1000))
}

connect_and_disconnect() {
	host_connect tcp "$NQN_C" && host_dev "$NQN_C" 1 > /dev/null && host_disconnect "$NQN_C"
}
discover() {
	timeout 60 nvme discover -t tcp -a "$TCP_ADDR" -s "$TCP_PORT"
}

disable_all() {
	lat_reset
	for_each_ns ns_disable || exit 1
	lat_report "disable with a cgroup" > /tmp/scale-disable-latency
}

control_path_not_held_up_by_disables() {
	local c0 d0 c1 d1 pid running
	c0=$(op_ms connect_and_disconnect) && d0=$(op_ms discover) || return
	disable_all &
	pid=$!
	sleep 1
	if ! c1=$(op_ms connect_and_disconnect) || ! d1=$(op_ms discover); then
		wait $pid
		return 1
	fi
	kill -0 "$pid" 2>/dev/null && running=1 || running=0
	wait $pid || fail "disabling the namespaces failed" || return
	cat /tmp/scale-disable-latency
	echo "connect and disconnect: $c0 ms before the disables, $c1 ms during them;" \
	     "discovery: $d0 ms before, $d1 ms during"
	[ "$running" = 1 ] ||
		fail "the disables ended before the connect and the discovery did: the case did not reach its path" || return
	[ "$c1" -le $((c0 + 1000)) ] || fail "a connect took $((c1 - c0)) ms longer during the disables" || return
	[ "$d1" -le $((d0 + 1000)) ] || fail "a discovery took $((d1 - d0)) ms longer during the disables" || return
	[ "$(grep -c "^$NQN_PREFIX-[0-9]* " "$STATUS")" = 0 ] ||
		fail "the status file still shows namespaces after they were disabled"
}

teardown() {
	local s n
	port_destroy 1 && subsys_destroy "$NQN_C" || return
	# one rmdir per subsystem, not a fork per namespace
	for_each_ns ns_disable_quiet || return
	for ((s = 0; s < NR_SUBSYS; s++)); do
		n=$NVMET_CFS/subsystems/$(nqn "$s")
		rmdir "$n"/namespaces/* && rmdir "$n" || return
	done
	cg_remove scale &&
	rmmod nvmet_cgroup && rmmod nvme_tcp nvmet_tcp && nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 5
run_case "setup" setup
run_case "idle_namespace_memory_does_not_grow_with_cpus" memory_per_namespace
run_case "sample_has_a_lane_per_cpu_it_ran_on" sample_has_lanes_where_it_ran
run_case "connect_and_discovery_not_held_up_by_1024_disables" control_path_not_held_up_by_disables
run_case "teardown" teardown
ktap_finished
