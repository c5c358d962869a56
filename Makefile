# SPDX-License-Identifier: GPL-2.0
#
# Entry points.  `make` builds nvmet_cgroup.ko against the cached debug kernel
# (building that kernel first if it is stale); `make check` runs every test;
# `make demo` shows a throttled namespace in the VM.  See README.md.

FLAVOUR ?= debug
CACHE ?= $(or $(NVMET_CGROUP_CACHE),$(HOME)/.cache/nvmet-cgroup)
KDIR ?= $(CACHE)/kernel/$(FLAVOUR)/obj
MO ?= $(CURDIR)/build/$(FLAVOUR)
# A clang-built tree needs its modules built with the same LLVM.
LLVM_FLAGS = $(if $(shell grep -s '^CONFIG_CC_IS_CLANG=y' $(KDIR)/.config),LLVM=-19)
KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) MO=$(MO) $(LLVM_FLAGS)
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: all module kernel deps check demo bench vm fmt fmt-check clippy rust-analyzer clean

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

fmt:
	rustfmt --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 rust/*.rs

fmt-check:
	rustfmt --check --config-path $(KDIR)/source/.rustfmt.toml --edition 2021 rust/*.rs

rust-analyzer: kernel
	$(KMAKE) rust-analyzer

check:
	scripts/check

demo:
	scripts/demo

# Performance, side by side with stock nvmet, on the perf kernel (see README).
bench:
	scripts/bench

# Boot the VM with the module loaded and run ARGS in it, e.g.
#   make vm ARGS='-- cat /sys/kernel/config/nvmet/...'
vm:
	scripts/vm $(ARGS)

clean:
	rm -rf build
