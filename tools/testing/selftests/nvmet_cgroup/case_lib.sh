# SPDX-License-Identifier: GPL-2.0
# Test cases reported with the kernel's kselftest/ktap_helpers.sh; sourced.
#
#   run_case NAME CMD...   run CMD; its output becomes KTAP comments, and the
#                          case is "ok" or "not ok" by its exit status, or
#                          "ok ... # SKIP" when CMD returns $KSFT_SKIP (4):
#                          what the kernel under test lacks (a distribution's
#                          kernel has no KUnit), said in its last line
#
# ktap_helpers.sh is the file KTAP_HELPERS names when it is set (on the
# host, libtest.sh: scripts/check passes the kernel source's copy), or is
# found next to this directory in a kernel tree
# (tools/testing/selftests/kselftest/), or where the project's guest installs
# it (/usr/share/kselftest/, from the kernel that was built).

for ktap_helpers in ${KTAP_HELPERS:+"$KTAP_HELPERS"} \
		    "$(dirname "${BASH_SOURCE[0]}")/../kselftest/ktap_helpers.sh" \
		    /usr/share/kselftest/ktap_helpers.sh; do
	if [ -f "$ktap_helpers" ]; then
		. "$ktap_helpers"
		break
	fi
done
if ! declare -F ktap_test_pass >/dev/null; then
	echo "Bail out! kselftest/ktap_helpers.sh not found"
	exit 1
fi

run_case() {
	local name=$1 out rc start=$SECONDS
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# /'
	echo "# $name took $((SECONDS - start)) s"
	if [ "$rc" = 0 ]; then
		ktap_test_pass "$name"
	elif [ "$rc" = "$KSFT_SKIP" ]; then
		ktap_test_skip "$name: $(printf '%s\n' "$out" | tail -n 1)"
		rc=0
	else
		echo "# exit status $rc"
		ktap_test_fail "$name"
	fi
	return "$rc"
}
