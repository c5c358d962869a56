# SPDX-License-Identifier: GPL-2.0
# BIND=1 of `make blktests`: give every nvmet namespace that blktests enables
# the cgroup NVMET_CGROUP_ID, written to its cgroup_id BEFORE the enable, so
# the suite's I/O runs through nvmet_cgroup.  Sourced by blktests' ./check as
# part of its configuration file (`./check -c FILE`; tools/blktests/guest.sh
# writes that file); nothing in the blktests tree is modified.
#
# How: blktests creates every namespace with _create_nvmet_ns (common/nvme),
# and it and _enable_nvmet_ns (tests/nvme/rc) enable one with
# `_set_attr 1 .../namespaces/NSID/enable` (_set_attr is common/rc's
# `echo -n VALUE > FILE`).  Each test file sources tests/nvme/rc, which
# sources common/rc and common/nvme again, so a _set_attr defined here would
# be replaced before the test runs.  ./check sources this file once, after
# defining its own functions and before running any test, so this file
# wraps ./check's _call_test (which runs the test function after the test
# file was sourced) to wrap the then-current _set_attr each time: a write of
# 1 to a namespace's `enable` first writes NVMET_CGROUP_ID to its cgroup_id.
# Only the names _call_test and _set_attr and the configfs layout are relied
# on; if an upstream change renames them, the run stops with a message
# instead of silently running unbound (a namespace that blktests enabled
# without _set_attr, e.g. nvme/051's `echo 1 > enable` after a disable, keeps
# the cgroup_id written at its creation: configfs keeps it while disabled).
# A background watcher writing cgroup_id after mkdir would race the enable.
#
# Each bound enable appends "TEST COND NQN/namespaces/NSID" to
# NVMET_CGROUP_BIND_LOG; each disable of a bound block-device namespace
# appends "charged TEST COND NQN/namespaces/NSID MAJ:MIN RBYTES WBYTES": what
# the cgroup's io.stat for the backing device grew by while it was enabled,
# which shows the I/O was charged.  A failed cgroup_id write is reported on
# the test's output, which fails the test (blktests compares the output).

if [[ -z ${NVMET_CGROUP_ID:-} || -z ${NVMET_CGROUP_BIND_LOG:-} ]]; then
	echo "nvmet-cgroup bind.sh: NVMET_CGROUP_ID and NVMET_CGROUP_BIND_LOG must be set" >&2
	exit 1
fi
if ! declare -F _call_test >/dev/null; then
	echo "nvmet-cgroup bind.sh: this blktests' ./check has no _call_test(); BIND=1 cannot hook it" >&2
	exit 1
fi
NVMET_CGROUP_CG_DIR=${NVMET_CGROUP_CG_DIR:-}
_nvmet_cgroup_state=${NVMET_CGROUP_BIND_LOG}.d
mkdir -p "$_nvmet_cgroup_state"

# "MAJ:MIN" of the block device at a namespace's device_path, or nothing.
_nvmet_cgroup_devnum() {
	local path d
	path=$(<"$1/device_path") || return
	[[ -b $path ]] || return
	d=$(stat -L -c '%t:%T' "$path") || return
	echo "$((16#${d%%:*})):$((16#${d##*:}))"
}

# "RBYTES WBYTES" of the bind cgroup on device MAJ:MIN (0 0 without a line).
_nvmet_cgroup_iostat() {
	local line r=0 w=0 kv
	[[ -n $NVMET_CGROUP_CG_DIR && -n $1 ]] || { echo "0 0"; return; }
	line=$(grep "^$1 " "$NVMET_CGROUP_CG_DIR/io.stat" 2>/dev/null)
	for kv in $line; do
		case $kv in
		rbytes=*) r=${kv#rbytes=} ;;
		wbytes=*) w=${kv#wbytes=} ;;
		esac
	done
	echo "$r $w"
}

# Called with _set_attr's arguments before the original _set_attr runs.
# Namespaces with cgroup_id 0 are bound; any other value is the test's.
_nvmet_cgroup_bind() {
	local value=$1 path=$2 ns key dev start cur
	[[ $path == */nvmet/subsystems/*/namespaces/*/enable ]] || return 0
	ns=${path%/enable}
	key=${ns#*/nvmet/subsystems/}
	case $value in
	1)
		if [[ ! -e $ns/cgroup_id ]]; then
			echo "nvmet-cgroup BIND: $ns has no cgroup_id (nvmet without patches/?)" >&2
			return 0
		fi
		[[ $(<"$ns/enable") == 1 ]] && return 0
		# A namespace that the test bound itself (the nvmet-cgroup
		# group's tests, with cgroups and IDs of their own, some of them
		# bad on purpose) keeps its cgroup_id.
		cur=$(<"$ns/cgroup_id")
		[[ $cur == 0 || $cur == "$NVMET_CGROUP_ID" ]] || return 0
		if [[ $cur != "$NVMET_CGROUP_ID" ]] &&
		   ! echo -n "$NVMET_CGROUP_ID" > "$ns/cgroup_id"; then
			echo "nvmet-cgroup BIND: cannot write $NVMET_CGROUP_ID to $ns/cgroup_id" >&2
			return 0
		fi
		echo "${TEST_NAME:-?} ${COND_DESC// /,} $key" >> "$NVMET_CGROUP_BIND_LOG"
		dev=$(_nvmet_cgroup_devnum "$ns")
		[[ -z $dev ]] ||
			echo "$dev $(_nvmet_cgroup_iostat "$dev")" > "$_nvmet_cgroup_state/${key//\//_}"
		;;
	0)
		[[ -f $_nvmet_cgroup_state/${key//\//_} ]] || return 0
		read -r dev start < "$_nvmet_cgroup_state/${key//\//_}"
		rm -f "$_nvmet_cgroup_state/${key//\//_}"
		[[ -n $dev ]] || return 0
		cur=$(_nvmet_cgroup_iostat "$dev")
		read -r -a start <<< "$start"
		read -r -a cur <<< "$cur"
		echo "charged ${TEST_NAME:-?} ${COND_DESC// /,} $key $dev" \
			"$((cur[0] - start[0])) $((cur[1] - start[1]))" >> "$NVMET_CGROUP_BIND_LOG"
		;;
	esac
	return 0
}

# Wrap the current _set_attr, once per definition (the test file's sourcing
# of common/rc replaces the wrapper with the original again).
_nvmet_cgroup_wrap_set_attr() {
	if ! declare -F _set_attr >/dev/null; then
		echo "nvmet-cgroup bind.sh: blktests has no _set_attr(); BIND=1 cannot bind namespaces" >&2
		exit 1
	fi
	[[ $(declare -f _set_attr) == *_nvmet_cgroup_bind* ]] && return
	eval "$(declare -f _set_attr | sed '1s/^_set_attr /_nvmet_cgroup_orig_set_attr /')"
	_set_attr() {
		_nvmet_cgroup_bind "$@"
		_nvmet_cgroup_orig_set_attr "$@"
	}
}

eval "$(declare -f _call_test | sed '1s/^_call_test /_nvmet_cgroup_orig_call_test /')"
_call_test() {
	_nvmet_cgroup_wrap_set_attr
	_nvmet_cgroup_orig_call_test "$@"
}
