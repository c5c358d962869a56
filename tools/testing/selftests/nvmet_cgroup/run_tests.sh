#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run the guest tests (TEST_PROGS of the Makefile, or those named) and write
# each one's KTAP output to RESULTS_DIR (default ./results); print every
# test's KTAP.  Exits non-zero when a case failed or a test did not finish
# its plan.
#
#   run_tests.sh [TEST...]   run these (default: every test of TEST_PROGS)
#   run_tests.sh --list      print TEST_PROGS
cd "$(dirname "$0")" || exit 1

# TEST_PROGS of the Makefile: one list for this script, scripts/check and
# Documentation/testing.md.
test_progs() {
	sed -n '/^TEST_PROGS :=/,/^$/p' Makefile | sed -e 's/^TEST_PROGS :=//' -e 's/\\//g' | xargs
}

if [ "${1:-}" = --list ]; then
	test_progs
	exit
fi

RESULTS_DIR=${RESULTS_DIR:-./results}
tests=${*:-$(test_progs)}

mkdir -p "$RESULTS_DIR"
rc=0
for t in $tests; do
	out=$RESULTS_DIR/${t%.sh}.ktap
	echo "# running $t"
	# 20 minutes: iomax.sh's 20 fio runs over nvme-tcp have taken 15 on a
	# loaded host; a boot has 30 (scripts/vm).
	start=$SECONDS
	timeout -k 10 "${TEST_TIMEOUT:-1200}" bash "./$t" 2>&1 | tee "$out"
	st=${PIPESTATUS[0]}
	echo "# $t took $((SECONDS - start)) s"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$out" | head -n 1)
	ran=$(grep -cE '^(not )?ok [0-9]+' "$out")
	if [ "$st" != 0 ] || [ "$ran" != "$plan" ]; then
		echo "# $t: exit status $st, $ran of ${plan:-?} cases reported"
		[ "$ran" = "$plan" ] || echo "not ok - $t did not finish its plan" >> "$out"
		rc=1
	fi
done
exit "$rc"
