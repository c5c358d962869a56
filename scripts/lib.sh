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
