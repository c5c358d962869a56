#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run the guest tests (all, or those named) and write each one's KTAP output
# to RESULTS_DIR (default ./results); print every test's KTAP and a summary.
# Exits non-zero when a case failed or a test did not finish its plan.
cd "$(dirname "$0")" || exit 1
RESULTS_DIR=${RESULTS_DIR:-./results}
ALL_TESTS="smoke.sh attr.sh charge.sh resv.sh abort.sh iomax.sh iocost.sh fastpath.sh fastpath_policies.sh iolatency.sh"
tests=${*:-$ALL_TESTS}

mkdir -p "$RESULTS_DIR"
rc=0
for t in $tests; do
	out=$RESULTS_DIR/${t%.sh}.ktap
	echo "# running $t"
	timeout -k 10 "${TEST_TIMEOUT:-900}" bash "./$t" 2>&1 | tee "$out"
	st=${PIPESTATUS[0]}
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$out" | head -n 1)
	ran=$(grep -cE '^(not )?ok [0-9]+' "$out")
	if [ "$st" != 0 ] || [ "$ran" != "$plan" ]; then
		echo "# $t: exit status $st, $ran of ${plan:-?} cases reported"
		[ "$ran" = "$plan" ] || echo "not ok - $t did not finish its plan" >> "$out"
		rc=1
	fi
done
exit "$rc"
