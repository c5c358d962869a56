# SPDX-License-Identifier: GPL-2.0
#
# Entry points.  `make` builds nvmet_cgroup.ko against the cached debug kernel
# (building that kernel first if it is stale); `make check` runs the tests
# CI runs, `make check-full` every case (the fault matrix, the long
# cases over rdma and fc, weight.sh, isolation.sh over loop, install.sh,
# rescuer_iomax.sh, and on the debug kernel what make check runs on Debian's only; `make
# check-long`: the fault matrix with its full rounds);
# `make demo` shows a throttled namespace in the VM; `make install` installs
# the module and the nvmet-cgroup CLI built before, with its files, and
# `make uninstall` removes them.  See README.md.

FLAVOUR ?= debug
CACHE ?= $(or $(NVMET_CGROUP_CACHE),$(HOME)/.cache/nvmet-cgroup)
KDIR ?= $(CACHE)/kernel/$(FLAVOUR)/obj
MO ?= $(CURDIR)/build/$(FLAVOUR)
# A clang-built tree needs its modules built with the same LLVM.
LLVM_FLAGS = $(if $(shell grep -s '^CONFIG_CC_IS_CLANG=y' $(KDIR)/.config),LLVM=-19)
# The module's sources are where the series puts them in the kernel
# (patches/0006): the out-of-tree build is a build of that directory, with
# its Kconfig option given on the command line and nvmet.h taken from the
# kernel tree, which carries the series.
MODSRC = $(CURDIR)/drivers/nvme/target/cgroup
KMAKE = $(MAKE) -C $(KDIR) M=$(MODSRC) MO=$(MO) $(LLVM_FLAGS) CONFIG_NVME_TARGET_CGROUP=m \
	KCFLAGS="$(KCFLAGS) -I$(KDIR)/source/drivers/nvme/target"
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: all module kernel deps check check-full check-debian check-long demo bench vm fmt fmt-check clippy rust-analyzer clean \
	cli install install-tools uninstall dkms blktests test-modules

all: module

deps:
	scripts/deps

# The cached kernel is only (re)built when KDIR is not given on the command line.
kernel:
ifeq ($(origin KDIR),file)
	scripts/build-kernel $(FLAVOUR) >/dev/null
endif

module: kernel
	@mkdir -p $(MO)
	$(KMAKE) modules

clippy: kernel
	@mkdir -p $(MO)
	$(KMAKE) CLIPPY=1 modules

# The selftests' helper modules (never installed): scripts/vm puts them in
# the guest beside nvmet_cgroup.ko.
TESTMODS := $(CURDIR)/tools/testing/selftests/nvmet_cgroup/test_modules
test-modules: kernel
	@mkdir -p $(MO)/test_modules
	$(MAKE) -C $(KDIR) M=$(TESTMODS) MO=$(MO)/test_modules $(LLVM_FLAGS) modules

fmt:
	rustfmt --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 $(MODSRC)/*.rs

fmt-check:
	rustfmt --check --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 $(MODSRC)/*.rs

rust-analyzer: kernel
	$(KMAKE) rust-analyzer

check:
	scripts/check

# Every case: make check's, plus the fault matrix (short rounds), the long
# per-transport cases over rdma and fc, weight.sh, isolation.sh over loop,
# install.sh, rescuer_iomax.sh, and iocost.sh, reboot.sh and all of iomax.sh on the debug
# kernel (scripts/check says why).
check-full:
	CHECK_FULL=1 scripts/check

# The DKMS package under the real dkms in a Debian trixie chroot, on
# Debian's own kernel, then Debian's vmlinuz in the VM (make check runs it).
check-debian:
	scripts/check-debian

# faults.sh's fault matrix with its full round counts (x50, x30,
# x10, 128 namespaces), in one boot after the host checks; `make check` runs
# it with short rounds.
check-long:
	FAULT_ROUNDS=full TEST_TIMEOUT=5400 BOOT_TIMEOUT=6000 scripts/check faults.sh

demo:
	scripts/demo

# Performance, side by side with stock nvmet, on the perf kernel (see bench/README.md).
bench:
	scripts/bench

# An upstream blktests tree's nvme tests in the VM with the module loaded:
#   make blktests BLKTESTS=DIR [TESTS="nvme/010 ..."] [BIND=0|1|"0 1"] [TRANSPORTS="loop tcp rdma fc"]
# (scripts/blktests lists the other knobs; command-line variables reach it
# through the environment).
blktests:
	scripts/blktests

# Boot the VM with the module loaded and run ARGS in it, e.g.
#   make vm ARGS='-- cat /sys/kernel/config/nvmet/...'
vm:
	scripts/vm $(ARGS)

# The userspace CLI (tools/nvmet-cgroup, a Cargo workspace member).
CARGO ?= cargo
cli:
	$(CARGO) build --release --locked -p nvmet-cgroup

# make install [DESTDIR=DIR] [KVER=RELEASE] [PREFIX=DIR]: installs, as
# root, what `make module` and `make cli` built before as a normal user, and
# builds nothing (never the cached debug kernel):
#   make module KDIR=/lib/modules/$(uname -r)/build && make cli
#   sudo make install
# MODULE_DIR/nvmet_cgroup.ko (MODULE_DIR: MO, build/$(FLAVOUR)), which must
# be built for KVER (default: the running kernel, uname -r), into
# lib/modules/KVER/updates, then depmod (on the live system, or in a DESTDIR
# that has KVER's module index); the softdep that loads it with nvmet, the
# CLI, its systemd unit (ExecStart in SBINDIR) and its man page.  It checks
# first and writes nothing when something is missing, or when DKMS installed
# nvmet_cgroup for KVER (updates/dkms): one copy of each module.  The module
# needs an nvmet with patches/ applied (README.md).
PREFIX ?= /usr
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= /lib/systemd/system
MODPROBEDIR ?= /etc/modprobe.d
KVER ?= $(shell uname -r)
MODULE_DIR ?= $(MO)
CLI_BIN ?= target/release/nvmet-cgroup
MODINFO ?= $(firstword $(wildcard /usr/sbin/modinfo /sbin/modinfo) modinfo)
DEPMOD ?= $(firstword $(wildcard /usr/sbin/depmod /sbin/depmod) depmod)
MODULE_FILE = /lib/modules/$(KVER)/updates/nvmet_cgroup.ko
TOOLS_FILES = $(MODPROBEDIR)/nvmet-cgroup.conf $(SBINDIR)/nvmet-cgroup \
	$(UNITDIR)/nvmet-cgroup.service $(MANDIR)/man8/nvmet-cgroup.8

define check-module
	@test -f "$(MODULE_DIR)/nvmet_cgroup.ko" || { echo "make install: no $(MODULE_DIR)/nvmet_cgroup.ko;" \
		"make install builds nothing: build it first, as a normal user, with" \
		"make module KDIR=/lib/modules/$(KVER)/build" >&2; exit 1; }
	@vm=$$($(MODINFO) -F vermagic "$(MODULE_DIR)/nvmet_cgroup.ko" 2>/dev/null); \
	case "$$vm" in "$(KVER) "*) ;; *) echo "make install: $(MODULE_DIR)/nvmet_cgroup.ko is built for" \
		"'$${vm%% *}', not KVER=$(KVER): build it with make module KDIR=/lib/modules/$(KVER)/build," \
		"or give the KVER it was built for" >&2; exit 1;; esac
	@set -- "$(DESTDIR)/lib/modules/$(KVER)/updates/dkms/nvmet_cgroup.ko"*; \
	if [ -e "$$1" ] || { [ -z "$(DESTDIR)" ] && command -v dkms >/dev/null && \
		dkms status -m nvmet-cgroup -k "$(KVER)" 2>/dev/null | grep -q ': installed'; }; then \
		echo "make install: DKMS installed nvmet_cgroup for $(KVER)" \
			"($(DESTDIR)/lib/modules/$(KVER)/updates/dkms): one copy of each module, so remove" \
			"it first with dkms remove nvmet-cgroup/VERSION -k $(KVER) (dkms status nvmet-cgroup" \
			"names VERSION), or install only the rest with make install-tools" >&2; exit 1; fi
endef

define check-cli
	@test -x "$(CLI_BIN)" || { echo "make install: no $(CLI_BIN); make install builds nothing:" \
		"build it first, as a normal user, with make cli" >&2; exit 1; }
endef

# depmod for KVER: on the live system, or in a DESTDIR with KVER's index.
define depmod
	@if [ -z "$(DESTDIR)" ]; then echo "$(DEPMOD) -a $(KVER)"; $(DEPMOD) -a "$(KVER)"; \
	elif [ -f "$(DESTDIR)/lib/modules/$(KVER)/modules.dep" ]; then \
		echo "$(DEPMOD) -b $(abspath $(DESTDIR)) $(KVER)"; $(DEPMOD) -b "$(abspath $(DESTDIR))" "$(KVER)"; fi
endef

# The unit's ExecStart names the CLI where it is installed (SBINDIR).
define install-tools-files
	install -D -m 0644 packaging/modprobe.d/nvmet-cgroup.conf "$(DESTDIR)$(MODPROBEDIR)/nvmet-cgroup.conf"
	install -D -m 0755 "$(CLI_BIN)" "$(DESTDIR)$(SBINDIR)/nvmet-cgroup"
	install -d "$(DESTDIR)$(UNITDIR)"
	sed 's|^\(ExecStart[A-Za-z]*=[-@:+!]*\)/usr/sbin/nvmet-cgroup |\1$(SBINDIR)/nvmet-cgroup |' \
		packaging/systemd/nvmet-cgroup.service > "$(DESTDIR)$(UNITDIR)/nvmet-cgroup.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/nvmet-cgroup.service"
	install -d "$(DESTDIR)$(MANDIR)/man8"
	"$(CLI_BIN)" man > "$(DESTDIR)$(MANDIR)/man8/nvmet-cgroup.8"
endef

install:
	$(check-module)
	$(check-cli)
	install -D -m 0644 "$(MODULE_DIR)/nvmet_cgroup.ko" "$(DESTDIR)$(MODULE_FILE)"
	$(install-tools-files)
	$(depmod)

# Everything of make install but the module: what a host that gets its
# modules from the DKMS package (make dkms) installs besides.
install-tools:
	$(check-cli)
	$(install-tools-files)

# make uninstall, with make install's variables: removes what it installed
# (never DKMS's updates/dkms), then depmod; under a DESTDIR, the directories
# left empty as well, so that a staging tree ends empty.
uninstall:
	rm -f "$(DESTDIR)$(MODULE_FILE)" $(foreach f,$(TOOLS_FILES),"$(DESTDIR)$(f)")
	@if [ -n "$(DESTDIR)" ] && [ -d "$(DESTDIR)" ]; then cd "$(DESTDIR)" && \
		for f in $(MODULE_FILE) $(TOOLS_FILES); do d=$${f%/*}; d=$${d#/}; \
			[ ! -d "$$d" ] || rmdir -p --ignore-fail-on-non-empty "$$d"; done; fi
	$(depmod)

# make dkms: the DKMS source tree as it goes to /usr/src/nvmet-cgroup-VERSION
# (packaging/dkms/dkms.conf, Documentation/admin-guide.rst), in build/dkms/:
# its build scripts and patches/, whose last patch carries the module.
# VERSION is the project's, the CLI's crate version.
PKG_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' tools/nvmet-cgroup/Cargo.toml | head -n 1)
DKMS_TREE = build/dkms/nvmet-cgroup-$(PKG_VERSION)
dkms:
	rm -rf $(DKMS_TREE)
	mkdir -p $(DKMS_TREE)/patches
	sed 's/@VERSION@/$(PKG_VERSION)/' packaging/dkms/dkms.conf > $(DKMS_TREE)/dkms.conf
	install -m 0755 packaging/dkms/build.sh $(DKMS_TREE)/build.sh
	install -m 0644 packaging/dkms/kbuild-lib.sh $(DKMS_TREE)/kbuild-lib.sh
	install -m 0644 packaging/dkms/prepare-kernel.sh $(DKMS_TREE)/prepare-kernel.sh
	install -m 0644 patches/series patches/*.patch $(DKMS_TREE)/patches/
	@echo $(DKMS_TREE)

clean:
	rm -rf build
