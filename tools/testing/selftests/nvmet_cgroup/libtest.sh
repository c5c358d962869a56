#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A host self-test of the tests' library: case_lib.sh's run_case and the
# assertion helpers of nvmet_lib.sh and cgroup_lib.sh that are pure logic
# (fail, wait_for, within, devnum, cg_stat on a fake io.stat, and
# host_disconnect and fio_job on stubs of nvme and fio).  Each check runs
# a case with run_case in a subshell and checks the KTAP line it ends with:
# a false condition must end the case "not ok", a true one "ok", a return
# of $KSFT_SKIP "ok ... # SKIP".  Not a guest test (not in TEST_PROGS):
# `make check` runs it on the host, with KTAP_HELPERS set to the kernel
# source's tools/testing/selftests/kselftest/ktap_helpers.sh.
# Prints KTAP, then "N passed, N failed"; exits non-zero when one failed.
#
#   KTAP_HELPERS=.../ktap_helpers.sh libtest.sh
cd "$(dirname "$0")" || exit 1
. ./case_lib.sh
. ./nvmet_lib.sh
. ./cgroup_lib.sh

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nvmet-cgroup-libtest.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# expect_case ok|not_ok|skip NAME CMD...: run_case NAME CMD... in a
# subshell; its last KTAP line must be WANT's, and its status 0 for ok and
# skip, non-zero for not ok.
expect_case() {
	local want=$1 name=$2 out rc last re status_ok=0
	shift 2
	out=$(run_case "$name" "$@")
	rc=$?
	last=$(printf '%s\n' "$out" | grep -E '^(not )?ok [0-9]+ ' | tail -n 1)
	case "$want" in
	ok) re="^ok [0-9]+ $name\$" ;;
	not_ok) re="^not ok [0-9]+ $name\$" ;;
	skip) re="^ok [0-9]+ $name: .*# SKIP\$" ;;
	esac
	if [ "$want" = not_ok ]; then
		[ "$rc" != 0 ] && status_ok=1
	else
		[ "$rc" = 0 ] && status_ok=1
	fi
	if [[ $last =~ $re ]] && [ "$status_ok" = 1 ]; then
		ktap_test_pass "$want: $name ($*)"
	else
		printf '%s\n' "$out" | sed 's/^/#   /'
		echo "# run_case returned $rc; its last KTAP line: '$last'"
		ktap_test_fail "$want: $name ($*)"
	fi
}

# expect_output WANT NAME CMD...: CMD prints exactly WANT and succeeds
expect_output() {
	local want=$1 name=$2 got
	shift 2
	if got=$("$@" 2>&1) && [ "$got" = "$want" ]; then
		ktap_test_pass "$name"
	else
		echo "# $*: got '$got', want '$want'"
		ktap_test_fail "$name"
	fi
}

returns() {	# returns N: a case's body that ends with status N
	echo "a case's last line${2:+: $2}"
	return "$1"
}
fails_midway() {	# an assertion failed with fail, then return: the case fails
	[ 1 = 2 ] || { fail "1 is not 2"; return; }
	true
}
later() {	# a file that appears after 0.3 s
	(sleep 0.3; touch "$tmp/later") &
	wait_for 3 test -e "$tmp/later"
}

ktap_print_header
ktap_set_plan 33

# run_case: its status decides
expect_case ok returns_0 returns 0
expect_case not_ok returns_1 returns 1
expect_case not_ok returns_2 returns 2
expect_case skip returns_ksft_skip returns "$KSFT_SKIP" "no KUnit in this kernel"
expect_case not_ok false false
expect_case ok true true
# fail
expect_case not_ok fail fail "a message"
expect_case not_ok fails_midway fails_midway
expect_case ok true_or_fail bash -c 'true || exit 1'
# wait_for: a false condition times out, a true one (now or later) does not
expect_case not_ok wait_for_false wait_for 1 false
expect_case ok wait_for_true wait_for 1 true
expect_case ok wait_for_later later
expect_case not_ok wait_for_missing_file wait_for 1 test -e "$tmp/never"
# within MEASURED EXPECTED PERCENT
expect_case ok within_105_100_10 within 105 100 10
expect_case ok within_90_100_10 within 90 100 10
expect_case not_ok within_120_100_10 within 120 100 10
expect_case not_ok within_85_100_10 within 85 100 10
expect_case not_ok within_1_0_10 within 1 0 10
# devnum: MAJ:MIN in decimal (a character device will do on the host)
expect_output "1:3" "devnum /dev/null" devnum /dev/null
expect_case not_ok devnum_missing devnum "$tmp/no-such-device"
# cg_stat on a fake cgroup tree: CG points at a temporary directory
CG=$tmp/cgroup
mkdir -p "$CG/g"
printf '%s\n' "1:30 rbytes=9 wbytes=9 rios=9 wios=9 dbytes=0 dios=0" \
	"1:3 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0" > "$CG/g/io.stat"
expect_output 4096 "cg_stat rbytes" cg_stat g /dev/null rbytes
expect_output 8192 "cg_stat wbytes" cg_stat g /dev/null wbytes
expect_output 2 "cg_stat wios" cg_stat g /dev/null wios
expect_output 0 "cg_stat of a field io.stat lacks (ios is no rios)" cg_stat g /dev/null ios
expect_output 0 "cg_stat of a device without a line" cg_stat g /dev/zero rbytes
expect_case not_ok cg_stat_compared bash -c '. ./cgroup_lib.sh; CG=$1; [ "$(cg_stat g /dev/null wbytes)" -gt 8192 ]' _ "$CG"
# host_disconnect on a stub of nvme-cli: "disconnected 0" is a failure
nvme() { echo "NQN:$3 disconnected ${NVME_STUB_COUNT:-1} controller(s)"; return "${NVME_STUB_RC:-0}"; }
export -f nvme
expect_case ok host_disconnect_1 host_disconnect testnqn
NVME_STUB_COUNT=0 expect_case not_ok host_disconnect_0 host_disconnect testnqn
NVME_STUB_RC=1 expect_case not_ok host_disconnect_error host_disconnect testnqn
NVME_STUB_RC=1 expect_case not_ok host_connect_error host_connect loop testnqn
# fio_job on a stub of fio: its terse fields 6-8 (reads) and 47-49 (writes)
fio() {
	[ "${FIO_STUB_RC:-0}" = 0 ] || { echo "fio: error"; return 1; }
	awk 'BEGIN { for (i = 1; i <= 60; i++) f[i] = 0
		f[6] = 4096; f[7] = 2048; f[8] = 512; f[47] = 8; f[48] = 4; f[49] = 1
		for (i = 1; i < 60; i++) printf "%s;", f[i]; print f[60] }'
}
expect_output "512 2097152 4194304" "fio_job randread: iops, bytes/s, bytes" fio_job /dev/null randread 4k
expect_output "1 4096 8192" "fio_job randwrite: iops, bytes/s, bytes" fio_job /dev/null randwrite 4k
FIO_STUB_RC=1 expect_case not_ok fio_job_error fio_job /dev/null randread 4k

echo "# Totals: pass:$KTAP_CNT_PASS fail:$KTAP_CNT_FAIL"
[ $((KTAP_CNT_PASS + KTAP_CNT_FAIL)) = "$KSFT_NUM_TESTS" ] ||
	{ echo "# $((KTAP_CNT_PASS + KTAP_CNT_FAIL)) checks ran, the plan is $KSFT_NUM_TESTS"; KTAP_CNT_FAIL=$((KTAP_CNT_FAIL + 1)); }
echo "$KTAP_CNT_PASS passed, $KTAP_CNT_FAIL failed"
[ "$KTAP_CNT_FAIL" = 0 ]
