#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rescuer.sh with A held by io.max instead of io.cost (#33 item 2: a tenant
# throttled hard by io.cost and by io.max).  A file of its own so that it
# runs in a boot without io.cost: lockdep reports 7.3's io.cost beside
# io.max in one boot (scripts/check).
RESCUER_POLICY=iomax exec "$(dirname "$0")/rescuer.sh"
