#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rescuer.sh's case under real memory pressure (#33 item 2: a memory hog
# filling the guest) in place of a kthreadd that cannot allocate: a tmpfs
# file fills what is available but HOG_LEFT_MB and a buffered reader keeps
# the rest cycling through reclaim, with B's baseline under the same
# pressure.  A is held by io.cost, so it runs in io.cost's boot (make
# check-full: about 5 minutes, most of them filling the guest).
RESCUER_PRESSURE=memhog exec "$(dirname "$0")/rescuer.sh"
