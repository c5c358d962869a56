#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The reboot story, with the nvmet-cgroup CLI (target/release/nvmet-cgroup,
# built by scripts/check): namespaces configured in nvmetcli's order (created
# and enabled unbound), then bound with `bind` (a cgroup path, and a systemd
# slice name) and limited with `limit`, and `save`d.  Then a simulated
# reboot: configfs, the cgroups, the null_blks and the module all go; the
# cgroups come back in another order (every ID changes) and the null_blks
# too (their device numbers swap); the target is recreated as `nvmetcli
# restore` does, namespaces enabled before any binding, and the commands of
# the shipped systemd unit (packaging/systemd/nvmet-cgroup.service) run.
# Every namespace must end up charged to the same cgroup by path, with its
# limits on its own device, and a second restore must change nothing.
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh
. ./cli_lib.sh

UNIT=$TOPDIR/packaging/systemd/nvmet-cgroup.service
NQN=nqn.2026-11.io.nvmet-cgroup:reboot
MNT=/mnt/reboot
SAVED=/tmp/reboot-cgroup.json
RIOPS=500
WBPS=10M
RBPS=20M

# the target as nvmetcli restore builds it: namespaces enabled, no cgroup_id
target_up() {
	subsys_create "$NQN" && ns_create "$NQN" 1 /dev/nullb0 &&
	ns_create "$NQN" 2 "$MNT/ns.img" && port_create 1 loop && port_add_subsys 1 "$NQN"
}

# devices_up FIRST SECOND: the two null_blks in that order (the first gets
# the lower minor), ext4 and the file namespace's file on nullb1
devices_up() {
	nullb_create "$1" 256 && nullb_create "$2" 256 &&
	mkfs.ext4 -q -F -b 4096 /dev/nullb1 && mkdir -p "$MNT" && mount /dev/nullb1 "$MNT" &&
	fallocate -l 64M "$MNT/ns.img"
}

# io_max_has CGROUP DEV EXPECTED: io.max's line for DEV holds EXPECTED
io_max_has() {
	local line
	line=$(grep "^$(devnum "$2") " "$CG/$1/io.max")
	echo "$1 io.max for $2 ($(devnum "$2")): ${line:-none}"
	case " $line " in *" $3 "*) ;; *) fail "expected $3" ;; esac
}

setup() {
	cli_built || return
	modprobe nvmet && devices_up nullb0 nullb1 && target_up && modprobe nvmet_cgroup
}

configure_and_save() {
	"$CLI" bind "$NQN" 1 --cgroup tenants/a --create --reenable &&
	"$CLI" bind "$NQN" 2 --slice tenants-b.slice --create --reenable &&
	blkg_prime tenants/a /dev/nullb0 && blkg_prime tenants.slice/tenants-b.slice /dev/nullb1 &&
	"$CLI" limit "$NQN" 1 --riops $RIOPS --wbps $WBPS &&
	"$CLI" limit "$NQN" 2 --rbps $RBPS &&
	"$CLI" save "$SAVED" || return
	cat "$SAVED"
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/1/cgroup_id")" = "$(cg_id tenants/a)" ] &&
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/2/cgroup_id")" = \
		"$(cg_id tenants.slice/tenants-b.slice)" ] || fail "cgroup_id not bound" || return
	io_max_has tenants/a /dev/nullb0 riops=$RIOPS && io_max_has tenants/a /dev/nullb0 wbps=10000000 &&
	io_max_has tenants.slice/tenants-b.slice /dev/nullb1 rbps=20000000 || return
	! grep -qE '[0-9]+:[0-9]+' "$SAVED" || fail "the saved file names a device by MAJ:MIN" || return
	cg_id tenants/a > /tmp/reboot-old-ids && cg_id tenants.slice/tenants-b.slice >> /tmp/reboot-old-ids &&
	devnum /dev/nullb0 > /tmp/reboot-old-devs || return
	! grep -qwf /tmp/reboot-old-ids "$SAVED" && ! grep -q cgroup_id "$SAVED" ||
		fail "the saved file carries a cgroup ID"
}

# Everything goes, and comes back in another order.  A real reboot starts
# cgroup IDs (kernfs inode numbers) again from the same place, so an old
# ID names some other cgroup or none; within one boot the kernel never
# hands a freed ID out again.  So the stale record is simulated: spare,
# created after the teardown, stands for the cgroup that tenants/a's old ID
# names after the reboot, and /tmp/reboot-stale-id holds that ID: what a
# tool that restored cgroup_id by number would write into namespace 1.
simulated_reboot() {
	port_destroy 1 && subsys_destroy "$NQN" && rmmod nvmet_cgroup && umount "$MNT" &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && rmmod null_blk &&
	cg_remove tenants && cg_remove tenants.slice || return
	cg_create tenants.slice/tenants-b.slice && cg_create spare && cg_create tenants/a &&
	devices_up nullb1 nullb0 && target_up || return
	echo "cgroup IDs before: $(xargs < /tmp/reboot-old-ids); now: $(cg_id tenants/a) $(cg_id tenants.slice/tenants-b.slice)"
	echo "nullb0 was $(cat /tmp/reboot-old-devs), now $(devnum /dev/nullb0); nullb1 now $(devnum /dev/nullb1)"
	! grep -qx "$(cg_id tenants/a)" /tmp/reboot-old-ids &&
	! grep -qx "$(cg_id tenants.slice/tenants-b.slice)" /tmp/reboot-old-ids ||
		fail "a cgroup kept its ID" || return
	[ "$(devnum /dev/nullb0)" != "$(cat /tmp/reboot-old-devs)" ] || fail "nullb0 kept its number" || return
	cg_id spare > /tmp/reboot-stale-id || return
	echo "the old ID of tenants/a now names spare: $(cat /tmp/reboot-stale-id) (simulated)"
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/1/enable")" = 1 ] &&
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/1/cgroup_id")" = 0 ] ||
		fail "the namespace is not enabled unbound, as after nvmetcli restore"
}

# no_cgroup_charged DEV...: no cgroup of the test has an io.stat line for
# the devices (a line appears with the first I/O charged there)
no_cgroup_charged() {
	local c d
	for c in tenants/a tenants.slice/tenants-b.slice spare; do
		for d in "$@"; do
			! grep -q "^$(devnum "$d") " "$CG/$c/io.stat" ||
				fail "$c was charged on $d: $(grep "^$(devnum "$d") " "$CG/$c/io.stat")" || return
		done
	done
}

# Between the target's restore and the bindings', the namespaces serve I/O
# unbound: it goes to the root, never to the cgroup that tenants/a's old ID
# now names (spare: see simulated_reboot).  Nothing restores an ID by
# number: nvmetcli's config carries no cgroup_id and the CLI's save file
# none either (bind_limit_save_with_the_cli).
io_before_the_unit_runs_uncharged() {
	local d1 d2 stale
	stale=$(cat /tmp/reboot-stale-id) || return
	[ "$(find "$CG" -maxdepth 1 -inum "$stale" -type d)" = "$CG/spare" ] &&
	[ "$stale" != "$(cg_id tenants/a)" ] ||
		fail "the stale ID $stale does not name spare, a cgroup other than tenants/a" || return
	echo "namespace 1's cgroup_id: $(cat "$NVMET_CFS/subsystems/$NQN/namespaces/1/cgroup_id")," \
		"namespace 2's: $(cat "$NVMET_CFS/subsystems/$NQN/namespaces/2/cgroup_id"); the stale ID $stale names spare"
	host_connect loop "$NQN" && d1=$(host_dev "$NQN" 1) && d2=$(host_dev "$NQN" 2) || return
	fio_job "$d1" randread 4k --size=1M >/dev/null && fio_job "$d2" randwrite 4k --size=1M >/dev/null &&
	host_disconnect "$NQN" || return
	echo "root io.stat: $(grep -E "^($(devnum /dev/nullb0)|$(devnum /dev/nullb1)) " "$CG/io.stat" | xargs)"
	no_cgroup_charged /dev/nullb0 /dev/nullb1
}

# The unit's ExecStartPre and ExecStart lines, as systemd would run them.
unit_restores() {
	local line cmd
	# the restore's io.max lines go to cgroups made after the reboot
	# (blkg_prime in cgroup_lib.sh says why they are primed)
	blkg_prime tenants/a /dev/nullb0 && blkg_prime tenants.slice/tenants-b.slice /dev/nullb1 ||
		return
	grep -q '^After=.*nvmet.service' "$UNIT" || fail "the unit is not ordered after nvmet.service" || return
	grep -E '^ExecStart(Pre)?=' "$UNIT" > /tmp/reboot-unit-cmds || fail "no ExecStart in $UNIT" || return
	while IFS= read -r line; do
		cmd=${line#*=}
		cmd=${cmd//\/usr\/sbin\/nvmet-cgroup/$CLI}
		cmd=${cmd//\/etc\/nvmet\/cgroup.json/$SAVED}
		[ -x /sbin/modprobe ] || cmd=${cmd//\/sbin\/modprobe/modprobe}
		echo "unit: $cmd"
		$cmd || fail "'$cmd' failed" || return
	done < /tmp/reboot-unit-cmds
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/1/cgroup_id")" = "$(cg_id tenants/a)" ] &&
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/2/cgroup_id")" = \
		"$(cg_id tenants.slice/tenants-b.slice)" ] || fail "not bound to the same paths" || return
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/1/enable")" = 1 ] &&
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/2/enable")" = 1 ] || fail "not enabled again" || return
	io_max_has tenants/a /dev/nullb0 riops=$RIOPS && io_max_has tenants/a /dev/nullb0 wbps=10000000 &&
	io_max_has tenants.slice/tenants-b.slice /dev/nullb1 rbps=20000000 || return
	! grep -q "^$(devnum /dev/nullb1) " "$CG/tenants/a/io.max" ||
		fail "tenants/a has a limit on nullb1: a device number was restored, not a path"
}

# ns 1 reads (nullb0 is memory-backed: real reads); ns 2 writes (its file
# is fallocated: reads of its unwritten extents would not reach nullb1)
restored_io_charged_by_path() {
	local d1 d2 a0 b0 a1 b1 a2 b2 B=tenants.slice/tenants-b.slice
	host_connect loop "$NQN" && d1=$(host_dev "$NQN" 1) && d2=$(host_dev "$NQN" 2) || return
	a0=$(cg_stat tenants/a /dev/nullb0 rios); b0=$(cg_stat $B /dev/nullb1 wios)
	fio_job "$d1" randread 4k --size=2M >/dev/null || return
	a1=$(cg_stat tenants/a /dev/nullb0 rios); b1=$(cg_stat $B /dev/nullb1 wios)
	fio_job "$d2" randwrite 4k --size=2M >/dev/null || return
	a2=$(cg_stat tenants/a /dev/nullb0 rios); b2=$(cg_stat $B /dev/nullb1 wios)
	echo "ns 1 read 512: tenants/a rios +$((a1 - a0)), tenants-b wios +$((b1 - b0));" \
		"ns 2 wrote 512: tenants/a rios +$((a2 - a1)), tenants-b wios +$((b2 - b1))"
	host_disconnect "$NQN" || return
	[ $((a1 - a0)) -ge 512 ] && [ $((b1 - b0)) = 0 ] && [ $((a2 - a1)) = 0 ] && [ $((b2 - b1)) -ge 512 ] ||
		fail "the I/O is not charged to the restored cgroups" || return
	"$CLI" status --json "$NQN" | grep -q '"cgroup_path": *"tenants/a"' ||
		fail "status --json does not show tenants/a" || return
	! grep -qE "^($(devnum /dev/nullb0)|$(devnum /dev/nullb1)) " "$CG/spare/io.stat" ||
		fail "spare was charged"
}

restore_is_idempotent() {
	local before after
	before=$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/"*/cgroup_id; cat "$CG/tenants/a/io.max")
	"$CLI" restore "$SAVED" || return
	after=$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/"*/cgroup_id; cat "$CG/tenants/a/io.max")
	[ "$before" = "$after" ] || fail "a second restore changed something"
}

# `systemctl restart nvmet.service`: nvmetcli's unit clears the whole
# target (ExecStop: nvmetcli clear) and restores it (ExecStart: nvmetcli
# restore), every namespace enabled unbound again.  PartOf=nvmet.service
# makes systemd stop and start nvmet-cgroup.service with it, and After=
# runs it once the target is back: its commands bind and limit again.
# (No systemd in this guest: the restart is done as those units do it.)
nvmet_restart_brings_bindings_back() {
	grep -qx 'PartOf=nvmet.service' "$UNIT" ||
		fail "the unit is not PartOf=nvmet.service: restarting nvmet would leave the namespaces unbound" ||
		return
	port_destroy 1 && subsys_destroy "$NQN" && target_up || return
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/1/cgroup_id")" = 0 ] &&
	[ "$(cat "$NVMET_CFS/subsystems/$NQN/namespaces/2/cgroup_id")" = 0 ] ||
		fail "the restored target is not unbound" || return
	echo "after nvmet's restart: namespaces 1 and 2 enabled, unbound"
	unit_restores
}

teardown() {
	port_destroy 1 && subsys_destroy "$NQN" && rmmod nvmet_cgroup nvme_loop && umount "$MNT" &&
	cg_remove tenants && cg_remove tenants.slice && cg_remove spare &&
	nullb_destroy nullb0 && nullb_destroy nullb1 && rmmod null_blk
}

ktap_print_header
ktap_set_plan 9
run_case "setup" setup
run_case "bind_limit_save_with_the_cli" configure_and_save
run_case "simulated_reboot_changes_ids_and_device_numbers" simulated_reboot
run_case "io_before_the_unit_runs_is_charged_to_no_cgroup" io_before_the_unit_runs_uncharged
run_case "systemd_unit_commands_restore_by_path" unit_restores
run_case "restored_namespaces_charged_to_the_same_paths" restored_io_charged_by_path
run_case "second_restore_changes_nothing" restore_is_idempotent
run_case "nvmet_service_restart_brings_the_bindings_back" nvmet_restart_brings_bindings_back
run_case "teardown" teardown
ktap_finished
