#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Commands that are not plain reads and writes are charged too: on a zoned
# null_blk exported as a ZNS namespace, Zone Append and the Zone Management
# Send actions (reset, finish, open, close: nvmet runs them from a work
# item, which patch 0004 moves into the namespace's context); and on a
# conventional null_blk, Dataset Management deallocate shows as discard
# bytes.  Each count must equal what the host sent, exactly: nothing else
# is charged to these cgroups, and the root's io.stat cannot be a control
# (it reports the whole device).
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

NQN=nqn.2026-11.io.nvmet-cgroup:zoned
ZONE_MB=16
ZONE_LBAS=$((ZONE_MB * 1024 * 1024 / 4096))
APPENDS=8

setup() {
	modprobe nvmet_cgroup &&
	nullb_create nullb0 256 zoned=1 zone_size=$ZONE_MB zone_nr_conv=0 &&
	nullb_create nullb1 64 discard=1 &&
	[ "$(cat /sys/block/nullb0/queue/zoned)" = host-managed ] ||
		fail "nullb0 is not zoned" || return
	cg_create zoned/zns && cg_create zoned/dsm &&
	subsys_create "$NQN" &&
	ns_create "$NQN" 1 /dev/nullb0 cgroup_id="$(cg_id zoned/zns)" &&
	ns_create "$NQN" 2 /dev/nullb1 cgroup_id="$(cg_id zoned/dsm)" &&
	port_create 1 loop && port_add_subsys 1 "$NQN" && host_connect loop "$NQN" || return
	ZNS_DEV=$(host_dev "$NQN" 1) || return
	[ "$(cat "/sys/block/${ZNS_DEV#/dev/}/queue/zoned")" = host-managed ] ||
		fail "the host does not see namespace 1 as zoned"
}

# ios CGROUP DEV: reads + writes + discards charged to CGROUP on DEV
ios() {
	echo $(($(cg_stat "$1" "$2" rios) + $(cg_stat "$1" "$2" wios) + $(cg_stat "$1" "$2" dios)))
}

zone_append_charged() {
	local b0 i0 b1 i1 n ZNS_DEV
	ZNS_DEV=$(host_dev "$NQN" 1) || return
	head -c 4096 /dev/urandom > /tmp/zone-append.dat || return
	nvme zns reset-zone "$ZNS_DEV" -s 0 >/dev/null || fail "reset-zone failed" || return
	b0=$(cg_stat zoned/zns /dev/nullb0 wbytes) && i0=$(cg_stat zoned/zns /dev/nullb0 wios)
	for ((n = 0; n < APPENDS; n++)); do
		nvme zns zone-append "$ZNS_DEV" -s 0 -z 4096 -d /tmp/zone-append.dat >/dev/null ||
			fail "zone-append $n failed" || return
	done
	b1=$(cg_stat zoned/zns /dev/nullb0 wbytes) && i1=$(cg_stat zoned/zns /dev/nullb0 wios)
	echo "$APPENDS appends of 4 KiB: io.stat wbytes +$((b1 - b0)), wios +$((i1 - i0))"
	[ $((b1 - b0)) = $((APPENDS * 4096)) ] && [ $((i1 - i0)) = "$APPENDS" ] ||
		fail "Zone Append not charged as $APPENDS writes of 4 KiB" || return
	# the data went where the zone's write pointer was
	[ "$(dd if="$ZNS_DEV" bs=4k skip=$((APPENDS - 1)) count=1 iflag=direct 2>/dev/null |
		cmp - /tmp/zone-append.dat && echo same)" = same ] ||
		fail "the last appended block does not read back"
}

# One bio per action on one zone: reset, finish, explicit open, close.
zone_mgmt_charged() {
	local z1=$ZONE_LBAS z2=$((2 * ZONE_LBAS)) before after ZNS_DEV
	ZNS_DEV=$(host_dev "$NQN" 1) || return
	before=$(ios zoned/zns /dev/nullb0)
	nvme zns reset-zone "$ZNS_DEV" -s 0 >/dev/null &&
	nvme zns finish-zone "$ZNS_DEV" -s "$z1" >/dev/null &&
	nvme zns open-zone "$ZNS_DEV" -s "$z2" >/dev/null &&
	nvme zns close-zone "$ZNS_DEV" -s "$z2" >/dev/null || fail "a zone action failed" || return
	after=$(ios zoned/zns /dev/nullb0)
	echo "reset, finish, open, close: io.stat ios +$((after - before))"
	[ $((after - before)) = 4 ] || fail "expected the 4 zone actions charged, got $((after - before))"
}

dsm_discard_charged() {
	local b0 b1 lbas=256 DSM_DEV
	DSM_DEV=$(host_dev "$NQN" 2) || return
	b0=$(cg_stat zoned/dsm /dev/nullb1 dbytes)
	nvme dsm "$DSM_DEV" -n 2 -d -s 0 -b "$lbas" >/dev/null || fail "dsm failed" || return
	b1=$(cg_stat zoned/dsm /dev/nullb1 dbytes)
	echo "DSM deallocate of $lbas LBAs: io.stat dbytes +$((b1 - b0)), dios $(cg_stat zoned/dsm /dev/nullb1 dios)"
	[ $((b1 - b0)) = $((lbas * 4096)) ] || fail "discard not charged as $((lbas * 4096)) dbytes"
}

teardown() {
	host_disconnect "$NQN" && port_destroy 1 && subsys_destroy "$NQN" &&
	cg_remove zoned && rmmod nvmet_cgroup nvme_loop &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 5
run_case "setup" setup
run_case "zone_append_charged" zone_append_charged
run_case "zone_management_send_charged" zone_mgmt_charged
run_case "dsm_deallocate_charged_as_discard" dsm_discard_charged
run_case "teardown" teardown
ktap_finished
