# SPDX-License-Identifier: GPL-2.0
# The nvmet-cgroup CLI for the tests that drive it: the release build that
# scripts/check makes (make cli), found from this directory; sourced.

TOPDIR=$(cd ../../../.. && pwd)
CLI=$TOPDIR/target/release/nvmet-cgroup

# cli_built: fail unless the CLI has been built
cli_built() {
	[ -x "$CLI" ] || fail "$CLI is missing: build it with make cli"
}
