#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Runs in the guest (see scripts/demo): show that nvmet_cgroup is loaded into
# the nvmet stack.
set -euo pipefail
echo "== kernel: $(uname -r)"
echo "== modules"
lsmod | grep -E '^(nvmet_cgroup|nvmet) '
echo "== kernel log"
dmesg | grep nvmet_cgroup
