#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the perf guest: what the block layer itself spends to charge a
# child cgroup, without nvmet or the module.  One fio job (bench/lib.sh's
# one_job_iops) on a null_blk bdev set up as in bench/guest.sh, randread and
# randwrite, from the root cgroup and from a child cgroup with the io
# controller, ROUNDS times, the order turned each round.  Under
# `scripts/vm --icount 1` (2 ns of guest time per instruction, idle skipped)
# 5e8 / IOPS is the instructions per I/O, and child minus root is the cost
# of charging.
#
#   scripts/vm --flavour perf --no-load --icount 1 -- bench/charge-cost.sh
set -uo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
. "$BENCH_DIR/lib.sh"

ROUNDS=${CHARGE_ROUNDS:-3}
RUNTIME=${CHARGE_RUNTIME:-8}
CHILD=bench-charge

die() { echo "charge-cost: $*" >&2; exit 1; }

nullb_create nullb0 1024 || die "null_blk"
dd if=/dev/zero of=/dev/nullb0 bs=1M count=1024 oflag=direct status=none || die "prefill"
cg_create "$CHILD" || die "cgroup $CHILD"

echo "| workload | round | root IOPS | child IOPS | child / root | instructions per I/O, root | child | charging |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
deltas=()
for ((round = 1; round <= ROUNDS; round++)); do
	for rw in randread randwrite; do
		declare -A n=()
		for where in $(rotate "$round" root child); do
			n[$where]=$(one_job_iops /dev/nullb0 "$rw" "$RUNTIME" \
				"$([ "$where" = child ] && echo "$CHILD")") || exit 1
		done
		root=$(insn_per_io "${n[root]}") child=$(insn_per_io "${n[child]}")
		ratio=$(awk -v r="${n[root]}" -v c="${n[child]}" 'BEGIN { printf "%.4f", c / r }')
		echo "| $rw | $round | ${n[root]} | ${n[child]} | $ratio | $root | $child | $((child - root)) |"
		deltas+=("$((child - root))")
	done
done
echo "charging a child cgroup: $(median <<< "${deltas[*]}") instructions per I/O" \
	"(median of ${#deltas[@]}; $(printf '%s\n' "${deltas[@]}" | sort -n | awk 'NR == 1 { lo = $1 } END { print lo "-" $1 }'))"
# The child's I/O must have been charged to it, or the comparison is void.
rios=$(cg_stat "$CHILD" /dev/nullb0 rios) wios=$(cg_stat "$CHILD" /dev/nullb0 wios)
echo "io.stat of $CHILD: rios=$rios wios=$wios"
[ "$rios" -gt 0 ] && [ "$wios" -gt 0 ] || die "the child's I/O was not charged to it"
