#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# io.weight fidelity on an idle and on a busy target (#33 item 1).
# Four namespaces on one blk-mq null_blk, each bound to a cgroup of its
# own with io.weight 100, 200, 300 and 400, exported over nvme-tcp (and two
# more for the mixed cases below).  io.cost
# runs a fixed linear model (vrate pinned at 100 %) of a third of the rate
# one namespace reaches unthrottled under the same load, so that the model,
# not the guest's CPU, is what the tenants share.  Two tenants (100/300)
# and then three (100/200/400) read at once, first through their
# namespaces, then with fio straight on the null_blk in the same cgroups
# (the reference), ROUNDS times; over the rounds' sums each tenant's IOPS
# over the 100-tenant's must be within TOLERANCE % of the reference's.
# Then the same with a busy loop on every CPU at the default nice level
# (the CPU hog: what a tenant's batch job does to a target), which must
# keep the CPUs busy (under 10 % idle) through every round.
#
# Each tenant's rate is its cgroup's io.stat reads on the device over one
# window common to all (rates_together), for the namespaces and fio alike.
# Measured with fio's own per-job figures instead, it failed (2026-12-05:
# busy 100/200/400 0.81/1.96 vs 2.07/4.00), most likely because of the
# measurement: under the busy loops the namespaces' fio processes start
# seconds apart (traced: one tenant activated in io.cost 1.6 s before the
# other), and the last one's window ended with the device to itself.  With the
# common window (same day, same module): idle 3.03 vs 3.01 and 2.02/4.07
# vs 2.07/4.21, busy 3.13 vs 3.17 and 2.21/4.38 vs 2.12/3.96.  The window
# opens once every tenant reads (a fixed 6 s after the start was not
# enough: rates_together).  It takes about 20 minutes with the mixed cases
# below, so `make check-full` runs it.  Run alone:
#   scripts/check weight.sh
# Then, on each load, the mixed cases (namespaces 5 and 6, #33 item 1's
# second sentence): the 100/300 tenants beside an io.max tenant (riops=10,
# under its io.cost share) and an io.latency one reading at queue depth 1
# and a 24th of the model, with a target of ten model I/Os; all four read
# at once through their namespaces and then with fio, ROUNDS times.  The
# split must stay within TOLERANCE % of fio's; blk-throttle must hold fio
# to the cap, and the io.max tenant's namespace read within TOLERANCE % of
# fio's; the io.latency tenant must keep its rate and its mean latency
# within the target, through its namespace and with fio.  Each limit is
# held to what the block layer gives fio, not to the figure written: under
# 10 IOPS blk-throttle does not hold a cap (2026-12-07, debug kernel: 4-6
# IOPS at riops=3, and 15 at riops=9, fio and namespace alike), and
# io.cost makes a queue-depth-1 reader wait about two model I/Os (100 ms
# at 44 IOPS), so a fixed target of 20 ms was out of reach for both.
# What io.latency does when its target is missed by far is not tested:
# its last resort delays a sibling at its return to user space, which a
# namespace's kernel thread never reaches (Documentation/design.rst, "The
# I/O path").  Their io.max and io.latency lines are written with io.cost
# on: 7.3 without patches/block/0002 has lockdep report that order
# (q_usage_counter(io) -> rq_qos_mutex -> fs_reclaim), which fails the
# boot.
# With WEIGHT_CSV=FILE it also appends each split to FILE ("load,weights,
# tenant,namespaces,fio"): `make bench` runs it in a boot of its own and
# puts the figures in its tables.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-12.io.nvmet-cgroup:weight
WEIGHTS=(100 200 300 400)	# namespace i + 1 is bound to weight/w${WEIGHTS[i]}
RUNTIME=${WEIGHT_RUNTIME:-8}
# The reference's jobs: the namespace's host keeps 32 reads in flight, which
# the target issues from several workers (up to LANE_WORKERS per CPU's
# lane), so each tenant's fio issues its 32 from 8 threads of 4.  io.cost's
# donation splits by how many of a tenant's threads wait: in the mixed case
# one thread of 32 split 3.26 where 8 of 4 split 2.68 in the same boot (the
# namespaces 2.83 and 2.78; 2026-12-07, debug kernel, idle), and one thread
# made the namespaces look 16-19 % off (2.68 against 3.31, 2.69 against
# 3.21).  Without a donor the shapes agree (100/300: 2.92 and 2.92).
FIO_SHAPE="--numjobs=8 --iodepth=4"
# seconds after every tenant has begun to read before the window opens,
# how long they may take to begin, and a bound on a job's run
SETTLE=3
START_TIMEOUT=60
MAX_RUNTIME=300
ROUNDS=3
TOLERANCE=15
MAX_IDLE_PCT=10
HOGS=()
# the mixed cases' tenants, namespaces 5 and 6
MAX_NSID=5
LAT_NSID=6

setup() {
	local i w
	# io.stat's cost.wait (and io.latency's figures) for the rounds' lines
	echo Y > /sys/module/blk_cgroup/parameters/blkcg_debug_stats &&
	modprobe nvmet_cgroup && nullb_create nullb0 256 && subsys_create "$NQN" || return
	for i in "${!WEIGHTS[@]}"; do
		w=${WEIGHTS[i]}
		cg_create "weight/w$w" && echo "default $w" > "$CG/weight/w$w/io.weight" &&
		ns_create "$NQN" $((i + 1)) /dev/nullb0 cgroup_id="$(cg_id "weight/w$w")" || return
	done
	cg_create weight/max && cg_create weight/lat &&
	ns_create "$NQN" "$MAX_NSID" /dev/nullb0 cgroup_id="$(cg_id weight/max)" &&
	ns_create "$NQN" "$LAT_NSID" /dev/nullb0 cgroup_id="$(cg_id weight/lat)" &&
	ports_create tcp "$NQN" && host_connect tcp "$NQN"
}

# ns_dev WEIGHT: the host block device of that tenant's namespace
ns_dev() {
	local i
	for i in "${!WEIGHTS[@]}"; do
		[ "${WEIGHTS[i]}" = "$1" ] && { host_dev "$NQN" $((i + 1)); return; }
	done
	fail "no tenant of weight $1"
}

# calibrate: io.cost off, one namespace's unthrottled rate (the best of
# three runs: the host's own work slows the guest's CPUs, and under the
# busy loops one build on the host took a run from 87 to 48 IOPS,
# 2026-12-07), then io.cost on with a model of a third of it
calibrate() {
	local iops=0 run i model
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" || return
	for i in 1 2 3; do
		run=$(fio_job "$(ns_dev 100)" randread 4k --time_based --runtime=5 --ramp_time=1 |
			cut -d' ' -f1) || return
		echo "one namespace unthrottled, run $i: $run IOPS"
		[ "$run" -gt "$iops" ] && iops=$run
	done
	model=$((iops / 3))
	echo "one namespace unthrottled: $iops IOPS; model: $model IOPS"
	[ "$model" -gt 0 ] || fail "no I/O" || return
	echo "$model" > /tmp/weight-model	# for the mixed cases (run_case's subshells)
	iocost_enable /dev/nullb0 "$model"
}

# cpu_ticks: "idle total" jiffies of every CPU so far (idle with iowait)
cpu_ticks() {
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t }' /proc/stat
}

# hog_start and hog_stop run in the test's own shell, not in run_case's
# command substitution: that would wait for the loops' output to end, and
# the loops must be this shell's children to be reaped.
hog_start() {
	local c
	for ((c = 0; c < $(nproc); c++)); do
		taskset -c "$c" bash -c 'while :; do :; done' > /dev/null 2>&1 &
		HOGS+=($!)
	done
}

hog_stop() {
	[ ${#HOGS[@]} = 0 ] && return 0
	kill "${HOGS[@]}" 2>/dev/null
	wait "${HOGS[@]}" 2>/dev/null
	HOGS=()
}

# busy_setup: the busy loops are running (one per CPU); calibrate under them
busy_setup() {
	local p
	for p in "${HOGS[@]}"; do
		kill -0 "$p" 2>/dev/null || fail "busy loop $p is gone" || return
	done
	echo "${#HOGS[@]} busy loops, one per CPU"
	calibrate
}

# cost_stats WEIGHT...: each tenant's io.cost usage and wait so far (us)
cost_stats() {
	local w
	for w in "$@"; do
		echo "$(cg_stat "weight/w$w" /dev/nullb0 cost.usage) $(cg_stat "weight/w$w" /dev/nullb0 cost.wait)"
	done
}

# cost_delta BEFORE AFTER: "usage/wait" in ms per tenant between two cost_stats
cost_delta() {
	awk -v a="$1" -v b="$2" 'BEGIN { n = split(a, x, "\n"); split(b, y, "\n")
		for (i = 1; i <= n; i++) { split(x[i], p, " "); split(y[i], q, " ")
			printf "%d/%d ", (q[1] - p[1]) / 1000, (q[2] - p[2]) / 1000 } }'
}

# reads_now STAT...: this guest's uptime and each io.stat file's reads on
# nullb0 (0 if it has no line for it), on one line, read by one process:
# under the busy loops each command the shell starts can take a second,
# which would skew a window that read the tenants one after another
reads_now() {
	awk -v d="$(devnum /dev/nullb0)" 'BEGIN {
		getline up < "/proc/uptime"; split(up, u, " "); printf "%s", u[1]
		for (i = 1; i < ARGC; i++) {
			v = 0
			while ((getline l < ARGV[i]) > 0) {
				n = split(l, f, " ")
				if (f[1] == d)
					for (j = 2; j <= n; j++)
						if (f[j] ~ /^rios=/) v = substr(f[j], 6)
			}
			close(ARGV[i]); printf " %s", v
		}
		print "" }' "$@"
}

# rates_together SPEC...: one fio job of 4 KiB random reads per SPEC ("DEV
# CGROUP OUT [FIO OPTION...]": CGROUP "-" for this shell's, OUT a file for
# fio's terse output or "-"; the options after the defaults, iodepth 32),
# all at once; prints each tenant's IOPS on nullb0 from its cgroup's
# io.stat over one window of RUNTIME s common to all, which opens SETTLE s
# after every tenant has begun to read; then stops the jobs (SIGINT: fio
# ends them and prints its figures).  SPEC i is the tenant whose cgroup is
# tenants[i] (the caller's).  Not fio's own figures, nor a window at a
# fixed time: under the busy loops the tenants' fio processes start
# seconds apart, so each job's window would cover a different stretch,
# partly alone on the device.  A window 6 s after the start was not
# enough: on 2026-12-07 (debug kernel) one namespace's tenant activated in
# io.cost 9.1 s after the other's, and the first read 16 IOPS against fio's
# 8 in that round, its usual 7-8 in the others (and w400 of 100/200/400
# read 2-8 IOPS against fio's 15-18 in a whole case, the last of three
# jobs started).
rates_together() {
	local spec dev cg out opts i st=0 started t
	local -a pids=() stats=() start=() now=() before=() after=()
	for i in "${!tenants[@]}"; do
		stats+=("$CG/${tenants[i]}/io.stat")
	done
	read -ra start <<< "$(reads_now "${stats[@]}")"
	for spec in "$@"; do
		read -r dev cg out opts <<< "$spec"
		[ "$out" = - ] && out=/dev/null
		# shellcheck disable=SC2086 # opts: words of fio options
		( [ "$cg" = - ] || echo "$BASHPID" > "$CG/$cg/cgroup.procs" &&
		  exec fio --name=job --filename="$dev" --rw=randread --bs=4k --direct=1 \
			--ioengine=libaio --iodepth=32 --time_based --runtime="$MAX_RUNTIME" \
			--minimal $opts > "$out" ) &
		pids+=($!)
	done
	while :; do
		sleep 0.5
		read -ra now <<< "$(reads_now "${stats[@]}")"
		started=0
		for i in "${!tenants[@]}"; do
			[ "${now[i + 1]}" -gt "${start[i + 1]}" ] && started=$((started + 1))
		done
		[ "$started" = ${#tenants[@]} ] && break
		t=$(awk -v a="${start[0]}" -v b="${now[0]}" 'BEGIN { printf "%d", b - a }')
		if [ "$t" -ge "$START_TIMEOUT" ]; then
			echo "only $started of ${#tenants[@]} tenants read within $START_TIMEOUT s" >&2
			st=1
			break
		fi
	done
	[ $st = 0 ] && sleep "$SETTLE" && read -ra before <<< "$(reads_now "${stats[@]}")" &&
		sleep "$RUNTIME" && read -ra after <<< "$(reads_now "${stats[@]}")"
	for i in "${!pids[@]}"; do
		kill -0 "${pids[i]}" 2>/dev/null ||
			{ echo "tenant ${tenants[i]}'s fio ended before the window did" >&2; st=1; }
	done
	# Its status after SIGINT is not fio's verdict (the guest's fio exits
	# nonzero there): that every job ran through the window is checked above.
	kill -INT "${pids[@]}" 2>/dev/null
	for i in "${pids[@]}"; do
		wait "$i"
	done
	[ $st = 0 ] || return 1
	for i in "${!tenants[@]}"; do
		awk -v r0="${before[i + 1]}" -v r1="${after[i + 1]}" -v t0="${before[0]}" -v t1="${after[0]}" \
			'BEGIN { printf "%.2f\n", (r1 - r0) / (t1 - t0) }'
	done
}

# split_like_fio WEIGHT...: the tenants read ROUNDS times through their
# namespaces, then with fio in their cgroups; each tenant's IOPS over the
# first's must be within TOLERANCE % of fio's (sums over the rounds)
split_like_fio() {
	local -a ws=("$@") tenants=() ns_specs=() fio_specs=() ns_sum=() fio_sum=() ns fio
	local w r i t0 t1 c0 c1 c2 idle_pct st=0 dev out
	for w in "${ws[@]}"; do
		dev=$(ns_dev "$w") || return
		tenants+=("weight/w$w")
		ns_specs+=("$dev - -")
		fio_specs+=("/dev/nullb0 weight/w$w - $FIO_SHAPE")
	done
	mixed_specs || return
	for i in "${!tenants[@]}"; do
		ns_sum+=(0) fio_sum+=(0)
	done
	for ((r = 1; r <= ROUNDS; r++)); do
		t0=$(cpu_ticks)
		c0=$(cost_stats "${ws[@]}")
		# (no process substitution: the guest has no /dev/fd)
		out=$(rates_together "${ns_specs[@]}") || fail "round $r: the namespaces' fio failed" || return
		mapfile -t ns <<< "$out"
		mixed_latency ns || st=1
		c1=$(cost_stats "${ws[@]}")
		out=$(rates_together "${fio_specs[@]}") || fail "round $r: the reference fio failed" || return
		mapfile -t fio <<< "$out"
		mixed_latency fio || st=1
		c2=$(cost_stats "${ws[@]}")
		[ ${#ns[@]} = ${#tenants[@]} ] && [ ${#fio[@]} = ${#tenants[@]} ] ||
			fail "round $r: not one rate per tenant" || return
		t1=$(cpu_ticks)
		idle_pct=$(awk -v a="$t0" -v b="$t1" 'BEGIN { split(a, x); split(b, y)
			printf "%d\n", 100 * (y[1] - x[1]) / (y[2] - x[2]) }')
		echo "round $r: namespaces ${ns[*]} IOPS, fio in the cgroups ${fio[*]} IOPS; CPUs ${idle_pct} % idle"
		echo "round $r: io.cost usage/wait ms: namespaces $(cost_delta "$c0" "$c1"); fio $(cost_delta "$c1" "$c2")"
		if [ ${#HOGS[@]} -gt 0 ] && [ "$idle_pct" -ge "$MAX_IDLE_PCT" ]; then
			echo "round $r: the busy loops left the CPUs ${idle_pct} % idle (at most $MAX_IDLE_PCT)"
			st=1
		fi
		for i in "${!tenants[@]}"; do
			# to the hundredth: a tenant at 4 IOPS under the busy
			# loops would be 12 % off by rounding alone
			ns_sum[i]=$(awk -v a="${ns_sum[i]}" -v b="${ns[i]}" 'BEGIN { printf "%.2f", a + b }')
			fio_sum[i]=$(awk -v a="${fio_sum[i]}" -v b="${fio[i]}" 'BEGIN { printf "%.2f", a + b }')
		done
	done
	awk -v a="${ns_sum[0]}" -v b="${fio_sum[0]}" 'BEGIN { exit !(a > 0 && b > 0) }' ||
		fail "no I/O in the ${ws[0]} tenant" || return
	mixed_limits || st=1
	for ((i = 1; i < ${#ws[@]}; i++)); do
		local rn rf
		rn=$(awk -v a="${ns_sum[i]}" -v b="${ns_sum[0]}" 'BEGIN { printf "%.2f", a / b }')
		rf=$(awk -v a="${fio_sum[i]}" -v b="${fio_sum[0]}" 'BEGIN { printf "%.2f", a / b }')
		# io.cost must be splitting at all (fio at least 3/5 of the weights'
		# ratio): a model left off would split both about 1 and pass.  Not
		# 3/4: beside a donor (the mixed cases) io.cost gives the lighter
		# tenant more than its weight's part of the donation (2026-12-07:
		# fio 2.23 for 100/300 at a model of 63 IOPS, the namespaces 2.38)
		awk -v r="$rf" -v w=$((ws[i] * 100 / ws[0])) 'BEGIN { exit !(r * 100 >= 0.6 * w) }' ||
			fail "fio in the cgroups split w${ws[i]}/w${ws[0]} $rf: io.cost is not splitting" ||
			return
		[ -z "${WEIGHT_CSV:-}" ] ||
			echo "$([ ${#HOGS[@]} -gt 0 ] && echo busy || echo idle),$(IFS=/; echo "${ws[*]}")${MIXED:+ +max+lat},w${ws[i]}/w${ws[0]},$rn,$rf" \
				>> "$WEIGHT_CSV"
		if within "$rn" "$rf" "$TOLERANCE"; then
			echo "w${ws[i]}/w${ws[0]}: namespaces $rn, fio $rf: within $TOLERANCE %"
		else
			echo "w${ws[i]}/w${ws[0]}: namespaces $rn, fio $rf: NOT within $TOLERANCE %"
			st=1
		fi
	done
	return $st
}

# mixed_on WEIGHT...: the mixed cases' limits beside the tenants of those
# weights, written with io.cost on (its model from calibrate).  io.max's
# cap is 10 IOPS, the lowest blk-throttle enforces (it grants whole I/Os
# per 100 ms slice: iomax.sh).  The io.latency tenant reads at queue depth
# 1 and a 24th of the model (1 IOPS at least), with a target of ten model
# I/Os (each costs 1/model s in io.cost).  Their io.weights give the
# io.max tenant a share of 5/4 of its cap and the io.latency tenant four
# times its rate, and a fifth of the model at least, the weighted tenants
# the rest: each limit, not io.cost, is then what holds its tenant, and
# io.cost lends the others little, since it lends a tenant's unused share
# (donation) only beyond about 5/4 of its usage (blk-iocost.c,
# SURPLUS_SCALE_PCT).  How it parts a donation depends on how many of each
# tenant's I/Os wait, which fio's threads and the target's workers do not
# match: with the io.max tenant at weight 1000 (19 IOPS of a busy model of
# 29, 9 lent) the busy case's split wandered from round to round, fio's
# too (2026-12-07, debug kernel: the 100-tenant 4.3-6.3 IOPS, fio's sums
# 2.12-2.74 in 5 runs, the namespaces outside 15 % of them in 2 of 7),
# where the busy 100/300 case without a donor agreed within 1 % (3.03 and
# 3.00).  A queue-depth-1 reader waits in io.cost about one I/O's cost at
# its share: at 8 IOPS of a model of 67 the io.latency tenant's namespace
# read in 142 ms against a target of 149, and at 6 of 77 fio's and the
# namespace's reads took 131-140 ms against 130 (2026-12-07).  The
# weighted tenants keep 8 IOPS of the model (2 for a 100-tenant beside a
# 300 one): under the busy loops the model has been 13 to 29 IOPS, and
# below about 26 the io.max tenant's share is what is left, under its cap,
# so that io.cost holds it there and the cap is not reached (mixed_limits
# says so; the idle case reaches it).
mixed_on() {
	local model share lat_share rest=8 sum=0 w max_weight lat_weight
	model=$(cat /tmp/weight-model) || return
	MAX_RIOPS=10
	LAT_IOPS=$((model / 24 > 1 ? model / 24 : 1))
	LAT_TARGET_US=$((10000000 / model))
	lat_share=$((4 * LAT_IOPS > (model + 4) / 5 ? 4 * LAT_IOPS : (model + 4) / 5))
	share=$((MAX_RIOPS * 5 / 4))
	if [ $((model - share - lat_share)) -ge "$rest" ]; then
		rest=$((model - share - lat_share))
	else
		share=$((model - lat_share - rest))
		[ "$share" -ge 2 ] ||
			fail "io.cost's model ($model IOPS) is too small for these tenants ($lat_share + $rest + 2)" ||
			return
		echo "a model of $model IOPS leaves the io.max tenant $share, under its cap: io.cost holds it"
	fi
	for w in "$@"; do
		sum=$((sum + w))
	done
	# the weighted tenants' weights are worth rest IOPS: rounded up
	max_weight=$(((sum * share + rest - 1) / rest)) lat_weight=$(((sum * lat_share + rest - 1) / rest))
	echo "default $max_weight" > "$CG/weight/max/io.weight" &&
	echo "default $lat_weight" > "$CG/weight/lat/io.weight" &&
	io_set weight/max io.max /dev/nullb0 "riops=$MAX_RIOPS" &&
	io_set weight/lat io.latency /dev/nullb0 "target=$LAT_TARGET_US" || return
	MIXED=1
	echo "io.max riops=$MAX_RIOPS on weight/max (io.weight $max_weight: $share of $model model IOPS);" \
		"io.latency target=$LAT_TARGET_US us on weight/lat (io.weight $lat_weight: $lat_share IOPS)," \
		"which reads at queue depth 1 and $LAT_IOPS IOPS"
}

# mixed_off: whichever of the mixed limits is set, removed
mixed_off() {
	local d
	MIXED=
	d=$(devnum /dev/nullb0) || return
	if grep -q "^$d " "$CG/weight/max/io.max"; then
		echo "$d riops=max" > "$CG/weight/max/io.max" || return
	fi
	if grep -q "^$d " "$CG/weight/lat/io.latency"; then
		echo "$d target=max" > "$CG/weight/lat/io.latency" || return
	fi
}

# mixed_specs: with the mixed limits on, the io.max and io.latency tenants
# join the caller's tenants, ns_specs and fio_specs
mixed_specs() {
	local dmax dlat
	[ -n "${MIXED:-}" ] || return 0
	dmax=$(host_dev "$NQN" "$MAX_NSID") && dlat=$(host_dev "$NQN" "$LAT_NSID") || return
	tenants+=(weight/max weight/lat)
	ns_specs+=("$dmax - -" "$dlat - /tmp/weight-lat-ns --iodepth=1 --rate_iops=$LAT_IOPS")
	fio_specs+=("/dev/nullb0 weight/max - $FIO_SHAPE"
		    "/dev/nullb0 weight/lat /tmp/weight-lat-fio --iodepth=1 --rate_iops=$LAT_IOPS")
}

# mixed_latency ns|fio: the io.latency tenant's mean latency in its last run
# (fio's terse field 40, us; through a namespace it includes nvme-tcp's),
# which must be within its target: fio's too, or the case proves nothing
mixed_latency() {
	local lat
	[ -n "${MIXED:-}" ] || return 0
	# its terse line (version 3); fio also says it was interrupted
	lat=$(awk -F';' '$1 == 3 && NF > 40 { printf "%.0f\n", $40 }' "/tmp/weight-lat-$1") || return
	echo "io.latency tenant ($1): mean latency $lat us, target $LAT_TARGET_US us"
	[ "${lat:-0}" -gt 0 ] && [ "$lat" -le "$LAT_TARGET_US" ] ||
		fail "the io.latency tenant ($1) missed its target: ${lat:-no} us"
}

# mixed_limits: with the mixed limits on, over the rounds' sums (the
# caller's ns_sum and fio_sum, the io.max and io.latency tenants after the
# weighted ones), with one IOPS of slack a round (whole IOPS per window):
# blk-throttle must hold fio to the io.max cap (or the case proves
# nothing), and that tenant's namespace must read within TOLERANCE % of
# what fio reads: no more (its cap kept) and no less (not starved beside
# the others); the io.latency tenant must keep its rate both ways.
mixed_limits() {
	local m=${#ws[@]} st=0 nmax fmax nlat flat cap
	[ -n "${MIXED:-}" ] || return 0
	# whole IOPS here: the slack below is one a round
	nmax=$(printf "%.0f" "${ns_sum[m]}") fmax=$(printf "%.0f" "${fio_sum[m]}")
	nlat=$(printf "%.0f" "${ns_sum[m + 1]}") flat=$(printf "%.0f" "${fio_sum[m + 1]}")
	cap=$((MAX_RIOPS * ROUNDS))
	echo "io.max tenant: namespace $nmax, fio $fmax, cap $cap (IOPS summed over $ROUNDS rounds)"
	echo "io.latency tenant: namespace $nlat, fio $flat, its rate $((LAT_IOPS * ROUNDS))"
	if [ $((fmax * 100)) -gt $((cap * 115 + ROUNDS * 100)) ]; then
		echo "io.max does not hold fio to its cap: $fmax against $cap"
		st=1
	elif [ $((fmax * 4)) -lt $((cap * 3)) ]; then
		echo "(fio read under 3/4 of the cap: io.cost held that tenant below it)"
	fi
	if ! awk -v n="$nmax" -v f="$fmax" -v p="$TOLERANCE" -v s="$ROUNDS" \
		'BEGIN { d = n - f; if (d < 0) d = -d; exit !(d <= f * p / 100 + s) }'; then
		echo "the io.max tenant's namespace read $nmax, not within $TOLERANCE % of fio's $fmax"
		st=1
	fi
	if [ $((nlat * 10 + ROUNDS * 10)) -lt $((LAT_IOPS * ROUNDS * 9)) ] ||
	   [ $((flat * 10 + ROUNDS * 10)) -lt $((LAT_IOPS * ROUNDS * 9)) ]; then
		echo "the io.latency tenant fell short of its rate: namespace $nlat, fio $flat"
		st=1
	fi
	return $st
}

teardown() {
	host_disconnect "$NQN" && ports_destroy tcp && subsys_destroy "$NQN" &&
	echo "$(devnum /dev/nullb0) enable=0" > "$CG/io.cost.qos" &&
	echo N > /sys/module/blk_cgroup/parameters/blkcg_debug_stats &&
	rm -f /tmp/weight-model /tmp/weight-lat-ns /tmp/weight-lat-fio &&
	cg_remove weight && rmmod nvmet_cgroup &&
	nullb_destroy nullb0 && rmmod null_blk
}

# mixed: the mixed limits on, the 100/300 split beside them, the limits off
mixed() {
	local st=0
	mixed_on 100 300 && split_like_fio 100 300 || st=1
	mixed_off || st=1
	return $st
}

ktap_print_header
ktap_set_plan 10
run_case "setup" setup
run_case "setup_idle" calibrate
run_case "idle_io_weight_100_300_split_within_15pct_of_fio" split_like_fio 100 300
run_case "idle_io_weight_100_200_400_split_within_15pct_of_fio" split_like_fio 100 200 400
run_case "idle_io_weight_with_io_max_and_io_latency_tenants_keeps_every_limit" mixed
trap hog_stop EXIT
trap 'exit 1' TERM INT
hog_start
run_case "setup_busy" busy_setup
run_case "busy_io_weight_100_300_split_within_15pct_of_fio" split_like_fio 100 300
run_case "busy_io_weight_100_200_400_split_within_15pct_of_fio" split_like_fio 100 200 400
run_case "busy_io_weight_with_io_max_and_io_latency_tenants_keeps_every_limit" mixed
hog_stop
run_case "teardown" teardown
ktap_finished
