# SPDX-License-Identifier: GPL-2.0
# Shared settings for the project's scripts; sourced, never run.

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything slow to make (kernel source, kernel builds, initramfs) lives
# outside the repository so a clean clone reuses it.
CACHE=${NVMET_CGROUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nvmet-cgroup}
KERNEL_SERIES=7.3
BINDGEN_VERSION=0.73.2
# clang for the debug flavour (Rust + KASAN needs a clang-built kernel).
LLVM_SUFFIX=-19
JOBS=$(nproc)

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Kernel flavours: debug (tests) and perf (benchmarks).
check_flavour() {
	case "$1" in
	debug|perf) ;;
	*) die "unknown flavour '$1' (debug or perf)" ;;
	esac
}

# fault_table RESULTS_DIR: faults.sh's fault matrix, from its KTAP (a line
# "# fault: CASE rounds=N" in each case's output, then the case's result),
# as a table: case, rounds, result.
fault_table() {
	[ -f "$1/faults.ktap" ] || return 0
	awk -v mode="${FAULT_ROUNDS:-short}" '
	/^# fault: / { split($4, kv, "="); rounds[$3] = kv[2]; order[++n] = $3 }
	/^(not )?ok [0-9]+ / { res[$NF] = ($1 == "ok") ? "ok" : "FAILED" }
	END {
		if (!n) exit
		printf "\nFault matrix (faults.sh, FAULT_ROUNDS=%s):\n", mode
		printf "  %-32s %6s  %s\n", "case", "rounds", "result"
		for (i = 1; i <= n; i++)
			printf "  %-32s %6s  %s\n", order[i], rounds[order[i]],
				(order[i] in res) ? res[order[i]] : "unfinished"
	}' "$1/faults.ktap"
}

# vm_booting_again LOG PROGRESS VM_ARG...: scripts/vm VM_ARG... (which must
# log to LOG), booted again, three boots at most, when the guest kernel
# stopped on an "Oops: int3" before doing anything: under multi-threaded
# TCG a vCPU can run text another one is patching (Documentation/
# harness.rst), about one boot in four for the perf kernel and seen for the
# debug kernel too.  PROGRESS is a command whose output changes once the
# guest has done something (a result written); a boot that did something
# is not repeated.  Returns scripts/vm's status.
vm_booting_again() {
	local log=$1 progress=$2 attempt before st
	shift 2
	for attempt in 1 2 3; do
		before=$($progress)
		st=0
		"$TOP/scripts/vm" "$@" || st=$?
		if [ "$st" != 0 ] && [ "$attempt" -lt 3 ] && grep -q 'Oops: int3' "$log" &&
		   [ "$($progress)" = "$before" ]; then
			log "the guest kernel oopsed on code patching before doing anything; booting again"
			continue
		fi
		return "$st"
	done
}
