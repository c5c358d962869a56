# SPDX-License-Identifier: GPL-2.0
# Helpers of the guest's benchmark scripts (guest.sh, charge-cost.sh,
# path-cost.sh), which set BENCH_DIR to bench/ and source this first: it
# moves to the guest tests' directory and sources their nvmet and cgroup
# helpers, which the scripts use too.
cd "$BENCH_DIR/../tools/testing/selftests/nvmet_cgroup" || exit 1
. ./nvmet_lib.sh
. ./cgroup_lib.sh

# The configurations in the order of round ROUND: turned by one place each
# round, so that none is always timed first or last.  On the host's clock a
# fixed order biased every ratio to A: C timed after A ran at 0.895 x A over
# nvme-loop, C timed before A at 0.944 x (2026-12-03, 3 rounds each).
rotate() {	# ROUND CONFIG...
	[ $# -gt 1 ] || return 0
	local k=$((($1 - 1) % ($# - 1)))
	shift
	echo "${@:k+1}" "${@:1:k}"
}

# one_job_iops DEV RW RUNTIME [CGROUP]: cgroup_lib.sh's fio_job (4k,
# iodepth 32, one job) on CPU 0 for RUNTIME seconds after 2 s of ramp, from
# the cgroup CGROUP (a path under $CG) if given; prints its IOPS.  Under
# `scripts/vm --icount 1` 5e8 / IOPS is the instructions the guest executes
# per I/O (insn_per_io).
one_job_iops() {
	local out
	out=$(
		[ -z "${4:-}" ] || echo "$BASHPID" > "$CG/$4/cgroup.procs" || exit 1
		fio_job "$1" "$2" 4k --cpus_allowed=0 --time_based --runtime="$3" --ramp_time=2
	) || { fail "fio $2 on $1${4:+ in $4} failed"; return 1; }
	echo "${out%% *}"
}

insn_per_io() {	# IOPS
	awk -v n="$1" 'BEGIN { printf "%.0f\n", 5e8 / n }'
}

# median: the median of the numbers on standard input, one per line or
# separated by spaces
median() {
	awk '{ for (i = 1; i <= NF; i++) print $i }' | sort -n | awk '{ v[NR] = $1 } END {
		print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
