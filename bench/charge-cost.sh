#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the perf guest: what the block layer itself spends to charge a
# child cgroup, without nvmet or the module.  fio 4k randread and randwrite
# (iodepth 32, one job on CPU 0) on a null_blk bdev set up as in
# bench/guest.sh, once from the root cgroup and once from a child cgroup with
# the io controller, ROUNDS times, the order turned each round.  Under
# `scripts/vm --icount 1` (2 ns of guest time per instruction, idle skipped)
# one busy CPU executes 5e8 instructions a second, so 5e8 / IOPS is the
# instructions per I/O, and child minus root is the cost of charging.
#
#   scripts/vm --flavour perf --no-load --icount 1 -- bench/charge-cost.sh
set -uo pipefail
cd "$(dirname "$0")/../tools/testing/selftests/nvmet_cgroup" || exit 1
. ./nvmet_lib.sh
. ./cgroup_lib.sh

ROUNDS=${CHARGE_ROUNDS:-3}
RUNTIME=${CHARGE_RUNTIME:-8}
CHILD=bench-charge
OUT=$(mktemp -d)

die() { echo "charge-cost: $*" >&2; exit 1; }

nullb_create nullb0 1024 || die "null_blk"
dd if=/dev/zero of=/dev/nullb0 bs=1M count=1024 oflag=direct status=none || die "prefill"
cg_create "$CHILD" || die "cgroup $CHILD"

# iops WHERE RW: one fio job from the root or the child cgroup; prints IOPS
iops() {
	local out=$OUT/$1-$2.json
	(
		[ "$1" = child ] && { echo "$BASHPID" > "$CG/$CHILD/cgroup.procs" || exit 1; }
		exec fio --name=charge --filename=/dev/nullb0 --direct=1 --ioengine=libaio \
			--bs=4k --iodepth=32 --numjobs=1 --cpus_allowed=0 --rw="$2" \
			--time_based --runtime="$RUNTIME" --ramp_time=2 \
			--output-format=json --output="$out" >/dev/null 2>&1
	) || die "fio $1 $2 failed"
	# the job's read and write "iops": one of them is 0
	grep -o '"iops" : [0-9.]*' "$out" | head -2 |
		awk '{ s += $3 } END { printf "%.0f\n", s }'
}

echo "| workload | round | root IOPS | child IOPS | child / root | instructions per I/O, root | child | charging |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
deltas=()
for round in $(seq 1 "$ROUNDS"); do
	for rw in randread randwrite; do
		if [ $((round % 2)) = 1 ]; then
			root=$(iops root "$rw") && child=$(iops child "$rw") || exit 1
		else
			child=$(iops child "$rw") && root=$(iops root "$rw") || exit 1
		fi
		line=$(awk -v r="$root" -v c="$child" 'BEGIN {
			ir = 5e8 / r; ic = 5e8 / c
			printf "%.4f | %.0f | %.0f | %.0f", c / r, ir, ic, ic - ir }')
		echo "| $rw | $round | $root | $child | $line |"
		deltas+=("${line##*| }")
	done
done
printf '%s\n' "${deltas[@]}" | sort -n |
	awk '{ d[NR] = $1 } END {
		m = NR % 2 ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2
		printf "charging a child cgroup: %.0f instructions per I/O (median of %d; %d-%d)\n",
			m, NR, d[1], d[NR] }'
# The child's I/O must have been charged to it, or the comparison is void.
stat=$(grep "^$(devnum /dev/nullb0) " "$CG/$CHILD/io.stat")
echo "io.stat of $CHILD: $stat"
[[ "$stat" =~ rios=[1-9] && "$stat" =~ wios=[1-9] ]] || die "the child's I/O was not charged to it"
