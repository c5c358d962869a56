# SPDX-License-Identifier: GPL-2.0
# Minimal KTAP v1 output for the guest tests; sourced.
#
#   ktap_begin PLAN        header and plan
#   ktap_step NAME CMD...  run CMD; "ok"/"not ok" by its status; its output as comments
#   ktap_result NAME RC    report a case decided by the caller
#   ktap_end               "# totals" line; returns non-zero if a case failed

KTAP_N=0 KTAP_PASS=0 KTAP_FAIL=0 KTAP_SKIP=0

ktap_begin() {
	echo "KTAP version 1"
	echo "1..$1"
}

ktap_diag() {
	sed 's/^/# /'
}

ktap_result() {
	local name=$1 rc=$2
	KTAP_N=$((KTAP_N + 1))
	if [ "$rc" = 0 ]; then
		KTAP_PASS=$((KTAP_PASS + 1))
		echo "ok $KTAP_N $name"
	elif [ "$rc" = skip ]; then
		KTAP_SKIP=$((KTAP_SKIP + 1))
		echo "ok $KTAP_N $name # SKIP"
	else
		KTAP_FAIL=$((KTAP_FAIL + 1))
		echo "not ok $KTAP_N $name"
	fi
}

ktap_step() {
	local name=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" != 0 ]; then
		printf '%s\nexit status %s\n' "$out" "$rc" | ktap_diag
	elif [ -n "$out" ]; then
		printf '%s\n' "$out" | ktap_diag
	fi
	ktap_result "$name" "$rc"
	return "$rc"
}

ktap_end() {
	echo "# totals: pass:$KTAP_PASS fail:$KTAP_FAIL skip:$KTAP_SKIP"
	[ "$KTAP_FAIL" = 0 ]
}
