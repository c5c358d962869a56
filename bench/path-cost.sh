#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the perf guest: the instructions one nvme-loop command costs in
# configurations A (stock: module not loaded), R (cgroup_id set to the root
# cgroup: the module's whole path, nothing to charge) and C (a child cgroup
# with the io controller).  One fio job (bench/lib.sh's one_job_iops) on a
# null_blk bdev namespace, randread and randwrite, the configurations in
# turn, the order turned each round.  Under
# `scripts/vm --icount 1` guest time counts 2 ns per instruction executed on
# any CPU, idle skipped, so 5e8 / IOPS is what the whole guest executes per
# command; R - A is the module's path, C - R the charging (compare
# bench/charge-cost.sh) and the css references the root does not count.
#
#   scripts/vm --flavour perf --no-load --icount 1 -- bench/path-cost.sh
#
# PATH_ALT_KO=/host/DIR/nvmet_cgroup.ko adds configurations Rx and Cx: R and
# C with that build of the module instead (PATH_CONFIGS="A R Rx C Cx"), to
# compare two builds in one boot.
#
# PATH_PROFILE=/host/DIR (bench/profile/run, with its TCG plugin loaded):
# each job runs PATH_PROFILE_IOS commands (at most the device's 1 GiB)
# instead of a time, between two runs of DIR/marker, on which the plugin
# writes its instruction counts;
# DIR/windows gets a line per job ("FIRST LAST CONFIG RW ROUND COMMANDS",
# the snapshots' numbers) and DIR/kallsyms.LAST the kernel's symbols then.
set -uo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$BENCH_DIR/lib.sh"

ROUNDS=${PATH_ROUNDS:-3}
RUNTIME=${PATH_RUNTIME:-8}
CONFIGS=${PATH_CONFIGS:-A R C}
PROFILE=${PATH_PROFILE:-}
PROFILE_IOS=${PATH_PROFILE_IOS:-50000}
NQN=nqn.bench.path
NS=$NVMET_CFS/subsystems/$NQN/namespaces/1

die() { echo "path-cost: $*" >&2; exit 1; }

modprobe nvmet_cgroup || die "modprobe nvmet_cgroup"
nullb_create nullb0 1024 || die "null_blk"
dd if=/dev/zero of=/dev/nullb0 bs=1M count=1024 oflag=direct status=none || die "prefill"
cg_create bench-path || die "cgroup"
subsys_create "$NQN" && ns_create "$NQN" 1 /dev/nullb0 &&
	port_create 1 loop && port_add_subsys 1 "$NQN" || die "target"

configure() {	# CONFIG: the namespace disabled, the module as CONFIG needs
	local id=0
	echo 0 > "$NS/enable" || die "disable"
	if lsmod | grep -q '^nvmet_cgroup '; then
		rmmod nvmet_cgroup || die "rmmod"
	fi
	case "$1" in
	A) ;;
	R|Rx) id=$(stat -c %i "$CG") ;;
	C|Cx) id=$(cg_id bench-path) ;;
	*) die "unknown configuration $1" ;;
	esac
	case "$1" in
	A) ;;
	*x) insmod "${PATH_ALT_KO:?configurations Rx and Cx need PATH_ALT_KO}" || die "insmod" ;;
	*) modprobe nvmet_cgroup || die "modprobe" ;;
	esac
	echo "$id" > "$NS/cgroup_id" && echo 1 > "$NS/enable" || die "enable ($1)"
}

# profiled_job DEV RW CONFIG ROUND: PATH_PROFILE's job; prints its IOPS.
# The plugin numbers its snapshots from 1 since boot, two per job.
profiled_job() {
	local out ios last
	last=$((($(wc -l < "$PROFILE/windows") + 1) * 2)) || return 1
	"$PROFILE/marker" || die "marker"
	out=$(fio_job "$1" "$2" 4k --cpus_allowed=0 --io_size=$((PROFILE_IOS * 4096))) ||
		die "fio $2 ($3)"
	"$PROFILE/marker" || die "marker"
	cat /proc/kallsyms > "$PROFILE/kallsyms.$last" || die "kallsyms"
	ios=$((${out##* } / 4096))
	echo "$((last - 1)) $last $3 $2 $4 $ios" >> "$PROFILE/windows"
	echo "${out%% *}"
}
[ -z "$PROFILE" ] || : > "$PROFILE/windows" || die "$PROFILE/windows"

declare -A insn m
echo "| round | config | workload | IOPS | instructions per command |"
echo "| ---: | --- | --- | ---: | ---: |"
for ((round = 1; round <= ROUNDS; round++)); do
	for c in $(rotate "$round" $CONFIGS); do
		configure "$c"
		host_connect loop "$NQN" || die "connect"
		dev=$(host_dev "$NQN" 1) || die "host device"
		for rw in randread randwrite; do
			if [ -n "$PROFILE" ]; then
				n=$(profiled_job "$dev" "$rw" "$c" "$round") || exit 1
			else
				n=$(one_job_iops "$dev" "$rw" "$RUNTIME") || exit 1
			fi
			i=$(insn_per_io "$n")
			echo "| $round | $c | $rw | $n | $i |"
			insn[$c,$rw]+="$i "
		done
		host_disconnect "$NQN" || die "disconnect"
	done
done
# Medians over the rounds, and the differences between them.
for rw in randread randwrite; do
	line="$rw:"
	for c in $CONFIGS; do
		m[$c]=$(median <<< "${insn[$c,$rw]}")
		line+=" $c ${m[$c]}"
	done
	[[ " $CONFIGS " =~ " A " && " $CONFIGS " =~ " R " && " $CONFIGS " =~ " C " ]] &&
		line+=$(awk -v a="${m[A]}" -v r="${m[R]}" -v c="${m[C]}" \
			'BEGIN { printf " | R-A %.0f C-R %.0f C-A %.0f", r - a, c - r, c - a }')
	[[ " $CONFIGS " =~ " A " && " $CONFIGS " =~ " Rx " && " $CONFIGS " =~ " Cx " ]] &&
		line+=$(awk -v a="${m[A]}" -v r="${m[Rx]}" -v c="${m[Cx]}" \
			'BEGIN { printf " | Rx-A %.0f Cx-Rx %.0f Cx-A %.0f", r - a, c - r, c - a }')
	echo "median instructions per command, $line"
done
rios=$(cg_stat bench-path /dev/nullb0 rios)
echo "io.stat of bench-path: rios=$rios"
[[ " $CONFIGS " != *" C "* ]] || [ "$rios" -gt 0 ] || die "C's reads were not charged to its cgroup"
