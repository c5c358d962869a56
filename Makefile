# SPDX-License-Identifier: GPL-2.0
#
# Entry points.  `make` builds nvmet_cgroup.ko against the cached debug kernel
# (building that kernel first if it is stale); `make check` runs every test
# (`make check-long`: the fault matrix with its full rounds);
# `make demo` shows a throttled namespace in the VM; `make install` installs
# the module, the nvmet-cgroup CLI and its files.  See README.md.

FLAVOUR ?= debug
CACHE ?= $(or $(NVMET_CGROUP_CACHE),$(HOME)/.cache/nvmet-cgroup)
KDIR ?= $(CACHE)/kernel/$(FLAVOUR)/obj
MO ?= $(CURDIR)/build/$(FLAVOUR)
# A clang-built tree needs its modules built with the same LLVM.
LLVM_FLAGS = $(if $(shell grep -s '^CONFIG_CC_IS_CLANG=y' $(KDIR)/.config),LLVM=-19)
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) MO=$(MO) $(LLVM_FLAGS)
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: all module kernel deps check check-long demo bench vm fmt fmt-check clippy rust-analyzer clean \
	cli install install-tools dkms blktests test-modules

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
	rustfmt --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 rust/*.rs

fmt-check:
	rustfmt --check --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 rust/*.rs

rust-analyzer: kernel
	$(KMAKE) rust-analyzer

check:
	scripts/check

# faults.sh's fault matrix with issue #11's full round counts (x50, x30,
# x10, 128 namespaces), in one boot after the host checks; `make check` runs
# it with short rounds.
check-long:
	FAULT_ROUNDS=full TEST_TIMEOUT=5400 BOOT_TIMEOUT=6000 scripts/check faults.sh

demo:
	scripts/demo

# Performance, side by side with stock nvmet, on the perf kernel (see README).
bench:
	scripts/bench

# An upstream blktests tree's nvme tests in the VM with the module loaded:
#   make blktests BLKTESTS=DIR [TESTS="nvme/010 ..."] [BIND=0|1|"0 1"] [TRANSPORTS="loop tcp"]
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

# make install [DESTDIR=DIR] [KDIR=/lib/modules/$(uname -r)/build]: the
# module into lib/modules/VERSION/updates (modules_install runs depmod), the
# softdep that loads it with nvmet, the CLI, its systemd unit and its man
# page.  The module needs an nvmet with patches/ applied (README.md).
PREFIX ?= /usr
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= /lib/systemd/system
MODPROBEDIR ?= /etc/modprobe.d
install: module install-tools
	$(KMAKE) INSTALL_MOD_PATH=$(abspath $(DESTDIR)/) INSTALL_MOD_DIR=updates modules_install

# Everything of make install but the module: what a host that gets its
# modules from the DKMS package (make dkms) installs besides.
install-tools: cli
	install -D -m 0644 packaging/modprobe.d/nvmet-cgroup.conf $(DESTDIR)$(MODPROBEDIR)/nvmet-cgroup.conf
	install -D -m 0755 target/release/nvmet-cgroup $(DESTDIR)$(SBINDIR)/nvmet-cgroup
	install -D -m 0644 packaging/systemd/nvmet-cgroup.service $(DESTDIR)$(UNITDIR)/nvmet-cgroup.service
	install -d $(DESTDIR)$(MANDIR)/man8
	target/release/nvmet-cgroup man > $(DESTDIR)$(MANDIR)/man8/nvmet-cgroup.8

# make dkms: the DKMS source tree as it goes to /usr/src/nvmet-cgroup-VERSION
# (packaging/dkms/dkms.conf, Documentation/admin-guide.rst), in build/dkms/.
# VERSION is the project's, the CLI's crate version.
PKG_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' tools/nvmet-cgroup/Cargo.toml | head -n 1)
DKMS_TREE = build/dkms/nvmet-cgroup-$(PKG_VERSION)
dkms:
	rm -rf $(DKMS_TREE)
	mkdir -p $(DKMS_TREE)/rust $(DKMS_TREE)/glue $(DKMS_TREE)/patches
	sed 's/@VERSION@/$(PKG_VERSION)/' packaging/dkms/dkms.conf > $(DKMS_TREE)/dkms.conf
	install -m 0755 packaging/dkms/build.sh $(DKMS_TREE)/build.sh
	install -m 0644 packaging/dkms/kbuild-lib.sh $(DKMS_TREE)/kbuild-lib.sh
	install -m 0644 Kbuild $(DKMS_TREE)/Kbuild
	install -m 0644 rust/*.rs $(DKMS_TREE)/rust/
	install -m 0644 glue/*.c glue/*.h $(DKMS_TREE)/glue/
	install -m 0644 patches/series patches/*.patch $(DKMS_TREE)/patches/
	@echo $(DKMS_TREE)

clean:
	rm -rf build
