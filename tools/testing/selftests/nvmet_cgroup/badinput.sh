#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Bad input, table-driven, for everything the project adds: the cgroup_id
# store (nvmet's, v12's ABI: kstrtou64 base 0), the IDs that enable then
# resolves (in the enabling task's cgroup namespace), and the module's
# parameters.  Each row is a KTAP case: the documented errno, and the state
# unchanged (the stored value, the namespace disabled, the module absent).
# The same table is in Documentation/admin-guide.rst.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:badinput
NS=$NVMET_CFS/subsystems/$NQN/namespaces/1
CGP=nvmet-badin
V1=/mnt/cgroup-v1

# errno names as bash prints them
errtext() {
	case "$1" in
	EINVAL) echo "Invalid argument" ;;
	ERANGE) echo "Numerical result out of range" ;;
	ENOENT) echo "No such file or directory" ;;
	*) echo "$1" ;;
	esac
}

# The store table: label | input (printf %b; @N:C is N copies of C) |
# expected (=VALUE: accepted and shown as VALUE; an errno: rejected, the
# value stays 7).
#
# No row writes nothing: a write(2) of 0 bytes never reaches nvmet's store
# (configfs's fill_write_buffer() copies nothing and fails it with EFAULT
# before the store is called), and no tool in the guest issues one (dd,
# head -c 0, bash's and busybox's printf and echo -n, cp, tee: traced with
# strace, none calls write(2) for empty input).  The emptiest inputs the
# store can see are one byte: "\n" (newline_only, an empty line) and "\0"
# (nul_only, the empty C string that kstrtou64 parses).
STORE_ROWS=(
	"newline_only|\\n|EINVAL"
	"space_only| |EINVAL"
	"leading_space| 5|EINVAL"
	"trailing_space|5 |EINVAL"
	"leading_tab|\\t5|EINVAL"
	"two_newlines|5\\n\\n|EINVAL"
	"non_numeric|abc|EINVAL"
	"trailing_junk|12abc|EINVAL"
	"hex_prefix_only|0x|EINVAL"
	"bad_octal_digit|08|EINVAL"
	"negative|-1|EINVAL"
	"negative_zero|-0|EINVAL"
	"overflow_decimal|18446744073709551616|ERANGE"
	"overflow_hex|0x10000000000000000|ERANGE"
	"u64_max|18446744073709551615|=18446744073709551615"
	"leading_plus|+5|=5"
	"hex|0x1f|=31"
	"octal|017|=15"
	"trailing_newline|42\\n|=42"
	"nul_only|\\0|EINVAL"
	"embedded_nul|1\\0junk|=1"
	"over_page_size_digits|@5000:9|ERANGE"
	"over_page_size_spaces|1@5000: |EINVAL"
)

setup() {
	modprobe nvmet_cgroup && nullb_create nullb0 64 &&
	cg_create "$CGP/inside" && cg_create "$CGP/outside" &&
	subsys_create "$NQN" && mkdir "$NS" &&
	echo -n /dev/nullb0 > "$NS/device_path"
}

# expand INPUT: %b escapes, and @N:C as N copies of the character C
write_input() {
	local in=$1 n c
	if [[ $in =~ ^(.*)@([0-9]+):(.)$ ]]; then
		n=${BASH_REMATCH[2]} c=${BASH_REMATCH[3]}
		printf '%b' "${BASH_REMATCH[1]}"
		head -c "$n" /dev/zero | tr '\0' "$c"
	else
		printf '%b' "$in"
	fi
}

store_row() {	# INPUT EXPECTED
	local in=$1 want=$2 err st shown
	[ -n "$in" ] || fail "an empty input makes no write(2): the row tests nothing" || return
	echo 7 > "$NS/cgroup_id" || return
	# one write(2) of the whole input, as a configuring tool makes it
	err=$( { write_input "$in" | dd of="$NS/cgroup_id" bs=64k iflag=fullblock \
		status=none; } 2>&1)
	st=$?
	shown=$(cat "$NS/cgroup_id")
	echo "input '$in': $([ $st = 0 ] && echo accepted || echo "$err"); shows $shown"
	case "$want" in
	=*)	[ $st = 0 ] || fail "rejected, expected accepted" || return
		[ "$shown" = "${want#=}" ] || fail "shows $shown, expected ${want#=}" ;;
	*)	[ $st != 0 ] || fail "accepted, expected $want" || return
		case "$err" in *"$(errtext "$want")"*) ;; *) fail "expected $want" || return ;; esac
		[ "$shown" = 7 ] || fail "the value changed to $shown" ;;
	esac
}

# enable_row ID EXPECTED [cmd prefix...]: store ID, enable (through the
# prefix); "ok" must enable, an errno must fail with it, leave the
# namespace disabled and log why.
enable_row() {
	local id=$1 want=$2 err st lines log
	shift 2
	echo "$id" > "$NS/cgroup_id" || return
	lines=$(dmesg | wc -l)
	err=$("$@" bash -c "echo 1 > $NS/enable" 2>&1)
	st=$?
	log=$(dmesg | tail -n +$((lines + 1)) | grep nvmet_cgroup)
	echo "cgroup_id $id: $([ $st = 0 ] && echo enabled || echo "$err")${log:+; log: $log}"
	if [ "$want" = ok ]; then
		[ $st = 0 ] && [ "$(cat "$NS/enable")" = 1 ] || fail "did not enable" || return
		echo 0 > "$NS/enable"
		return
	fi
	[ $st != 0 ] || { echo 0 > "$NS/enable"; fail "enabled, expected $want"; return; }
	case "$err" in *"$(errtext "$want")"*) ;; *) fail "expected $want" || return ;; esac
	[ "$(cat "$NS/enable")" = 0 ] || fail "the namespace is enabled" || return
	echo "$log" | grep -q "failed to resolve cgroup id $id for nsid 1: $want" ||
		fail "no pr_err naming the id and $want"
}

enable_root() {
	enable_row "$(cg_id .)" ok
}

enable_removed_cgroup() {
	local id
	mkdir "$CG/$CGP/gone" && id=$(cg_id "$CGP/gone") && rmdir "$CG/$CGP/gone" &&
	enable_row "$id" ENOENT
}

# the inode number of a cgroup's file, not of a directory
enable_cgroup_file() {
	enable_row "$(stat -c %i "$CG/$CGP/inside/cgroup.procs")" ENOENT
}

# A cgroup v1 ID is looked up in the v2 hierarchy only: ENOENT, unless
# the same number happens to be a v2 directory (then that cgroup is used:
# IDs are not portable between hierarchies).
enable_cgroup_v1_id() {
	local id want=ENOENT st
	mkdir -p "$V1" && mount -t cgroup -o none,name=nvmettest cgroup "$V1" ||
		fail "cannot mount a named cgroup v1 hierarchy" || return
	mkdir "$V1/x" && id=$(stat -c %i "$V1/x") || return
	[ -z "$(find "$CG" -inum "$id" -type d 2>/dev/null)" ] || want=ok
	echo "v1 cgroup's ID $id is $([ $want = ok ] && echo "also a v2 cgroup's" || echo "no v2 cgroup's")"
	enable_row "$id" "$want"
	st=$?
	rmdir "$V1/x" && umount "$V1"
	return $st
}

# in_cgroupns CGROUP CMD...: run CMD in a new cgroup namespace rooted at
# CGROUP (the enabling task's view)
in_cgroupns() {
	local cg=$1
	shift
	bash -c 'echo $$ > "$0/cgroup.procs" && exec unshare -C "$@"' "$CG/$cg" "$@"
}

enable_outside_cgroupns() {
	enable_row "$(cg_id "$CGP/outside")" ENOENT in_cgroupns "$CGP/inside"
}

enable_inside_cgroupns() {
	enable_row "$(cg_id "$CGP/inside")" ok in_cgroupns "$CGP/inside"
}

# The module's parameters are read-only (not in sysfs) and set at load:
# a bad value fails the load with EINVAL and a message naming it.
PARAM_ROWS=(
	"fast_path_2|fast_path=2|EINVAL"
	"fast_path_word|fast_path=abc|EINVAL"
	"fast_path_empty|fast_path=|EINVAL"
	"fast_path_no_value|fast_path|EINVAL"
	"inline_assoc_2|inline_assoc=2|EINVAL"
	"fast_path_0|fast_path=0|ok"
	"fast_path_off|fast_path=off|ok"
	"inline_assoc_yes|inline_assoc=yes|ok"
)

param_row() {	# ARG EXPECTED
	local arg=$1 want=$2 err st
	echo 0 > "$NS/cgroup_id" && rmmod nvmet_cgroup || return
	err=$(modprobe nvmet_cgroup "$arg" 2>&1)
	st=$?
	echo "modprobe nvmet_cgroup $arg: $([ $st = 0 ] && echo loaded || echo "$err")"
	if [ "$want" = ok ]; then
		[ $st = 0 ] || fail "did not load"
		return
	fi
	[ $st != 0 ] || fail "loaded, expected $want" || return
	case "$err" in *"$(errtext "$want")"*) ;; *) fail "expected $want" || return ;; esac
	! lsmod | grep -q '^nvmet_cgroup ' || fail "the module is loaded" || return
	modprobe nvmet_cgroup
}

teardown() {
	subsys_destroy "$NQN" && rmmod nvmet_cgroup && cg_remove "$CGP" &&
	nullb_destroy nullb0 && rmmod null_blk
}

ktap_print_header
ktap_set_plan $((${#STORE_ROWS[@]} + ${#PARAM_ROWS[@]} + 8))
run_case "setup" setup
for row in "${STORE_ROWS[@]}"; do
	IFS='|' read -r label in want <<< "$row"
	run_case "store_$label" store_row "$in" "$want"
done
run_case "enable_root_cgroup" enable_root
run_case "enable_removed_cgroup" enable_removed_cgroup
run_case "enable_id_of_a_cgroup_file" enable_cgroup_file
run_case "enable_cgroup_v1_id" enable_cgroup_v1_id
run_case "enable_outside_cgroup_namespace" enable_outside_cgroupns
run_case "enable_inside_cgroup_namespace" enable_inside_cgroupns
for row in "${PARAM_ROWS[@]}"; do
	IFS='|' read -r label arg want <<< "$row"
	run_case "param_$label" param_row "$arg" "$want"
done
run_case "teardown" teardown
ktap_finished
