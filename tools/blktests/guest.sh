#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Guest side of `make blktests` (scripts/blktests, which stages everything
# under build/blktests/ and boots scripts/vm with nvmet_cgroup loaded): run
# blktests' ./check one test at a time, with one nvme transport, optionally
# with every namespace bound to a cgroup (bind.sh), and leave the results in
# OUT for the host to tabulate.
#
#   guest.sh --stage DIR --out DIR --trtype loop|tcp|rdma|fc [--bind] [--test-timeout SEC] TEST...
#
# DIR/guest.tar holds tree/ (the blktests copy, src/ built), bin/ and lib/.
# TEST is a blktests test (nvme/010) or group (nvme).  Passed through to
# blktests' configuration when set: TIMEOUT, NVME_IMG_SIZE, NVME_NUM_ITER,
# NVMET_BLKDEV_TYPES, KMEMLEAK.
#
# In OUT: check.log (./check's output, read by the host as it grows),
# tests.tsv (TEST, ./check's exit status, wall seconds; 124 = killed after
# --test-timeout), results/ (blktests' results directory), bind.log
# (bind.sh), cgroup_id.
set -u

stage= out= trtype=loop bind=0 test_timeout=900
while [ $# -gt 0 ]; do
	case "$1" in
	--stage) stage=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--trtype) trtype=$2; shift 2 ;;
	--bind) bind=1; shift ;;
	--test-timeout) test_timeout=$2; shift 2 ;;
	*) break ;;
	esac
done
[ -n "$stage" ] && [ -n "$out" ] && [ $# -gt 0 ] || {
	echo "usage: guest.sh --stage DIR --out DIR --trtype T [--bind] TEST..." >&2
	exit 2
}
here=$(cd "$(dirname "$0")" && pwd)

# Everything runs from the guest's tmpfs, unpacked from one tarball: the
# tree, the staged host programs and their libraries.  Read over 9p (no
# cache), the tree's files and each run of grep or awk would cost a round
# trip per file; cp -a of the tree alone took 5 minutes on a loaded host.
# blktests also creates its scratch directories (with the 1G namespace
# image files) under its results directory, which must not be on 9p.
work=/tmp/blktests
rm -rf "$work"
mkdir -p "$work"
tar -C "$work" -xf "$stage/guest.tar" || { echo "cannot unpack $stage/guest.tar" >&2; exit 1; }

# The staged host programs (GNU awk, grep, sed, findutils, util-linux's
# findmnt/column/wipefs/blkid, uuidgen, getconf, ...) and the udevadm stub
# come first, so blktests sees GNU tools rather than busybox.  Their shared
# libraries come from the staged lib/, except glibc's, which the initramfs
# has from the same host (scripts/blktests leaves them out).
export PATH=$work/bin:$PATH
export LD_LIBRARY_PATH=$work/lib
export LC_ALL=C

# ./check reads process substitutions (/dev/fd/N), and the guest's /dev is
# a bare devtmpfs (no udev to make these links).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
for i in 0:stdin 1:stdout 2:stderr; do
	[ -e "/dev/${i#*:}" ] || ln -s "/proc/self/fd/${i%%:*}" "/dev/${i#*:}"
done

mkdir -p "$out/results"
log=$out/check.log
: > "$log"
: > "$out/tests.tsv"

results=$work/results
mkdir -p "$results"

config=$work/config
{
	echo "NVMET_TRTYPES=$trtype"
	# blktests' logger(1) call would go to a syslog the guest does not run.
	echo "LOGGER_PROG=true"
	for v in TIMEOUT NVME_IMG_SIZE NVME_NUM_ITER NVMET_BLKDEV_TYPES KMEMLEAK; do
		[ -n "${!v:-}" ] && printf '%s=%q\n' "$v" "${!v}"
	done
} > "$config"

# rdma: blktests' start_soft_rdma binds siw to every Ethernet device with a
# carrier and takes the target's address from its IPv4 address: the
# guest's one virtio-net device (scripts/vm), up, with 192.0.2.1
# (TEST-NET-1) on it.  (lo will not do: siw's GID would be lo's zero
# hardware address, which the RDMA CM cannot find a device by.)
if [ "$trtype" = rdma ]; then
	for n in /sys/class/net/*; do
		[ "$(cat "$n/type")" = 1 ] || continue
		ip link set "${n##*/}" up && ip addr add 192.0.2.1/24 dev "${n##*/}" &&
			echo "# rdma: ${n##*/} up with 192.0.2.1/24" >> "$log"
		break
	done
fi

if [ "$bind" = 1 ]; then
	cg=/sys/fs/cgroup/nvmet-blktests
	grep -qw io /sys/fs/cgroup/cgroup.subtree_control ||
		echo +io > /sys/fs/cgroup/cgroup.subtree_control || exit 1
	mkdir -p "$cg" || exit 1
	cgid=$(stat -c %i "$cg")
	echo "$cgid" > "$out/cgroup_id"
	: > "$out/bind.log"
	{
		echo "NVMET_CGROUP_ID=$cgid"
		echo "NVMET_CGROUP_CG_DIR=$cg"
		echo "NVMET_CGROUP_BIND_LOG=$out/bind.log"
		echo ". $here/bind.sh"
	} >> "$config"
fi
echo "# blktests config:" >> "$log"
sed 's/^/#   /' "$config" >> "$log"

# Expand groups into their tests, so that each test gets its own ./check
# and its own time limit.
tests=()
for t in "$@"; do
	t=${t%/}
	if [ -d "$work/tree/tests/$t" ]; then
		for f in "$work/tree/tests/$t"/[0-9][0-9][0-9]; do
			[ -f "$f" ] && tests+=("$t/${f##*/}")
		done
	elif [ -f "$work/tree/tests/$t" ]; then
		tests+=("$t")
	else
		echo "# no blktests test or group named $t" >> "$log"
		printf '%s\t%s\t%s\n' "$t" missing 0 >> "$out/tests.tsv"
	fi
done

# Best effort after a test was killed: what blktests' cleanup would have
# removed, so that the next test starts from an empty target.
cleanup_after_kill() {
	local cfs=/sys/kernel/config/nvmet p s n h
	nvme disconnect-all >/dev/null 2>&1
	for p in "$cfs"/ports/*; do
		[ -d "$p" ] || continue
		rm -f "$p"/subsystems/* 2>/dev/null
		rmdir "$p" 2>/dev/null
	done
	for s in "$cfs"/subsystems/*; do
		[ -d "$s" ] || continue
		for n in "$s"/namespaces/*; do
			[ -d "$n" ] || continue
			echo 0 > "$n/enable"
			rmdir "$n"
		done
		rm -f "$s"/allowed_hosts/* 2>/dev/null
		rmdir "$s" 2>/dev/null
	done
	for h in "$cfs"/hosts/*; do
		[ -d "$h" ] && rmdir "$h" 2>/dev/null
	done
	losetup -D 2>/dev/null
	rm -rf "$results"/tmpdir.*
}

# Copy what blktests wrote so far to the share: a boot killed by its time
# limit keeps the tests that finished.
save_results() {
	local d
	for d in "$results"/*; do
		[ -e "$d" ] || continue
		case ${d##*/} in tmpdir.*) continue ;; esac
		cp -a "$d" "$out/results/"
	done
}

cd "$work/tree" || exit 1
for t in "${tests[@]}"; do
	echo "blktests: $t (tr=$trtype, bind=$bind)"
	echo "### $t" >> "$log"	# the test that the lines below belong to (report)
	start=$SECONDS
	# A console (tty) on stdout would make ./check move the cursor with
	# tput; a file keeps its plain output.
	timeout -k 10 "$test_timeout" ./check -c "$config" -o "$results" "$t" >> "$log" 2>&1 </dev/null
	st=$?
	printf '%s\t%s\t%s\n' "$t" "$st" "$((SECONDS - start))" >> "$out/tests.tsv"
	if [ "$st" = 124 ] || [ "$st" = 137 ]; then
		echo "$t: killed after ${test_timeout}s (guest.sh --test-timeout)" >> "$log"
		cleanup_after_kill
	fi
	save_results
done
if [ "$bind" = 1 ]; then
	cp "/sys/fs/cgroup/nvmet-blktests/io.stat" "$out/io.stat" 2>/dev/null
fi
echo "blktests: done"
exit 0
