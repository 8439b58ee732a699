# SPDX-License-Identifier: GPL-2.0
# perf BPF-awareness series for Linux 6.12: the one entry point.
# 'make help' lists the targets; README.md explains them, selftests/README.md
# the test and benchmark targets in full, patches/README.md apply, refresh,
# series and series-check.

BUILD_DIR ?= $(HOME)/.cache/bpf-perf
KSRC ?=
BASE_PKG_VERSION ?= 6.12.117-1~deb12u1
JOBS ?= $(shell echo $$(($$(nproc) + 1)))
CLANG ?= clang-16
# The project's revision whose perf make bench-perf-bpf runs beside ours:
# its main before the work on perf bpf events' CPU per record (issue 35).
PERF_BEFORE_REV ?= e30515a
export BUILD_DIR KSRC BASE_PKG_VERSION JOBS CLANG PERF_BEFORE_REV
export TOP := $(CURDIR)

MK := $(CURDIR)/mk
VM := $(CURDIR)/selftests/vm/run-vm.sh

.DEFAULT_GOAL := help
.PHONY: help deps base apply kernel kernel-base kernel-debug kernel-kcsan kernel-bpf kernel-bpf-base \
	bpf-selftests perf perf-base perf-rev tools build run check check-debug check-kcsan check-bpf vm perf-test-compare bench-links bench-bperf bench-perf-bpf bench-bpf-top bench-perf-bpf-scale refresh series series-check overlay-check clean distclean

help:
	@echo 'make run        build everything and show it working in the VM'
	@echo 'make check      build everything and run the tests in the VM'
	@echo '                 (PART=core|bperf: one part of them, in a VM of its own)'
	@echo 'make check-debug  the same tests on a KASAN/lockdep/kmemleak kernel, stress 60 s'
	@echo '                 (PART too)'
	@echo 'make check-kcsan  the same on a KCSAN (data race) kernel'
	@echo 'make check-bpf  the BPF selftests (test_progs) on the base kernel and ours'
	@echo 'make vm CMD=..  run one command as root in the VM (no CMD: a shell)'
	@echo 'make perf-test-compare  upstream perf tests: perf-base vs our perf, no regression'
	@echo 'make build      deps, base, apply, kernel, perf, perf-base, tools'
	@echo 'make apply      refresh the applied tree from patches/ and the overlay'
	@echo 'make refresh    bring edits made in the applied tree back into the project'
	@echo 'make kernel-base  build the pristine base kernel too (VM_KERNEL=base boots it)'
	@echo 'make bench-links  cost of the link records: base vs patched kernel, as ratios'
	@echo 'make bench-bperf  context switch cost of N perf stat --bpf-counters sessions'
	@echo 'make bench-perf-bpf  records a second perf bpf events keeps up with, its CPU cost,'
	@echo '                 ours after/before the perf of PERF_BEFORE_REV=$(PERF_BEFORE_REV)'
	@echo 'make perf-rev REV=..  build the perf of project revision REV (default PERF_BEFORE_REV)'
	@echo 'make bench-bpf-top  perf bpf top per refresh against bpftool, the cost of BPF stats'
	@echo 'make bench-perf-bpf-scale  perf bpf list with N programs+links against bpftool'
	@echo 'make series     the series as mail in SERIES_DIR (SERIES_VERSION=N for vN)'
	@echo 'make series-check  checkpatch, git am, per-patch builds, uapi copy, man pages'
	@echo 'make overlay-check an edit to any line of an overlay file lands in its patch'
	@echo 'variables: BUILD_DIR=$(BUILD_DIR) KSRC=<6.12 tree> JOBS=$(JOBS)'
	@echo '           VM_ACCEL=auto|tcg|kvm VM_CPUS=2 VM_MEM=4G VM_KERNEL=applied|base|debug|bpf|bpf-base'

deps:
	@$(MK)/deps.sh
base: deps
	@$(MK)/base.sh
apply: base
	@$(MK)/apply.sh
kernel: apply
	@$(MK)/kernel.sh applied
kernel-base: base
	@$(MK)/kernel.sh base
kernel-debug: apply
	@$(MK)/kernel.sh debug
kernel-kcsan: apply
	@$(MK)/kernel.sh kcsan
kernel-bpf: apply
	@$(MK)/kernel.sh bpf
kernel-bpf-base: base
	@$(MK)/kernel.sh bpf-base
bpf-selftests: kernel-bpf kernel-bpf-base
	@$(MK)/bpf-selftests.sh
perf: apply
	@$(MK)/perf.sh applied
perf-base: base
	@$(MK)/perf.sh base
# The perf of project revision REV, from the applied tree's base (make
# build first): $(BUILD_DIR)/rev/<full commit id>/perf/perf.
perf-rev: base
	@$(MK)/perf-rev.sh $(or $(REV),$(PERF_BEFORE_REV))
tools: kernel
	@$(MK)/tools.sh

build: kernel perf perf-base tools

# NOBUILD=1 boots what was built last, without looking for changes.
VM_DEPS := $(if $(NOBUILD),,build)
VM_KERNEL ?= applied

run: $(VM_DEPS)
	@$(VM) --kernel $(VM_KERNEL) --timeout 900 -- '$(TOP)/selftests/runners/demo.sh'

# SERIES_CHECK=0 leaves out series-check (about a minute when warm).  The
# time of each part (build, VM and its parts, series-check) is printed at
# the end, whether the tests pass or fail, unless the run ended before the
# VM (CHECK_T0 is when this make began: older times are another run's).
check: export CHECK_T0 := $(shell date +%s)
# The project's commit as make starts ("changed" with changes not
# committed): check.sh counts a part's verdict only for what was built.
check check-debug check-kcsan: export CHECK_REV0 := $(shell cd '$(TOP)' && r=$$(git rev-parse HEAD 2>/dev/null) && \
	[ -z "$$(git status --porcelain 2>/dev/null)" ] && echo $$r || echo changed)
check: $(VM_DEPS)
	@rc=0; CHECK_PART='$(PART)' $(TOP)/selftests/runners/check.sh || rc=$$?; \
	res=$$(readlink -f "$(BUILD_DIR)/results/latest"); \
	if [ $$rc != 0 ]; then :; \
	elif [ "$(SERIES_CHECK)" = 0 ]; then echo 'series-check skipped (SERIES_CHECK=0)'; \
	elif [ -n '$(filter-out all,$(PART))' ]; then \
		echo 'series-check skipped (PART: one part of the VM tests)'; \
	else t=$$(date +%s); $(MK)/series-check.sh || rc=$$?; \
		printf 'series-check\t%s\n' $$(($$(date +%s) - t)) >>"$$res/times"; fi; \
	if [ "$$(stat -c %Y "$$res/times" 2>/dev/null || echo 0)" -ge "$$CHECK_T0" ]; then \
		$(TOP)/selftests/runners/check-times.sh "$$res"; fi; exit $$rc

# The check suite on the debug kernel (selftests/vm/configs/debug.config), the stress
# tests run for STRESS_SECS (60) seconds, kmemleak scanned at the end.
# PART=core|bperf: one part of it, as for check (see selftests/README.md).
check-debug: $(VM_DEPS) $(if $(NOBUILD),,kernel-debug)
	@CHECK_KERNEL=debug CHECK_PART='$(PART)' $(TOP)/selftests/runners/check.sh

# The same on the data-race kernel (selftests/vm/configs/kcsan.config):
# fails on any KCSAN report.
check-kcsan: $(VM_DEPS) $(if $(NOBUILD),,kernel-kcsan)
	@CHECK_KERNEL=kcsan CHECK_PART='$(PART)' $(TOP)/selftests/runners/check.sh

# The BPF selftests' test_progs, link and attach tests, on the base kernel
# and on ours (one configuration for both): no regression.
check-bpf: $(VM_DEPS) $(if $(NOBUILD),,bpf-selftests)
	@$(TOP)/selftests/runners/check-bpf.sh

vm: $(VM_DEPS)
	@$(VM) --kernel $(VM_KERNEL) $(if $(CMD),-- '$(subst ','\'',$(value CMD))')

# Upstream's perf test suite with perf-base and with ours: no regression.
perf-test-compare: $(VM_DEPS)
	@$(TOP)/selftests/runners/perf-test-compare.sh

# Benchmarks: numbers, printed as ratios against upstream 6.12; not tests.
bench-links: $(VM_DEPS) kernel-base
	@$(TOP)/selftests/bench/links.sh
bench-bperf: $(VM_DEPS)
	@$(TOP)/selftests/bench/bperf.sh
# Ours and the perf of PERF_BEFORE_REV (none if empty), in one VM run.
bench-perf-bpf: $(VM_DEPS) $(if $(NOBUILD),,$(if $(PERF_BEFORE_REV),perf-rev))
	@$(TOP)/selftests/bench/perf-bpf.sh
bench-bpf-top: $(VM_DEPS)
	@$(TOP)/selftests/bench/bpf-top.sh
bench-perf-bpf-scale: $(VM_DEPS)
	@$(TOP)/selftests/bench/perf-bpf-scale.sh

refresh:
	@$(MK)/refresh.sh

series: apply
	@$(MK)/series.sh
series-check: kernel
	@$(MK)/series-check.sh

overlay-check: apply
	@$(MK)/overlay-check.sh

clean:
	rm -rf $(BUILD_DIR)/kernel $(BUILD_DIR)/debug $(BUILD_DIR)/perf $(BUILD_DIR)/tools \
		$(BUILD_DIR)/kselftest $(BUILD_DIR)/vm $(BUILD_DIR)/results \
		$(BUILD_DIR)/bpf-kernel $(BUILD_DIR)/pristine/bpf-kernel $(BUILD_DIR)/bpf-selftests \
		$(BUILD_DIR)/bpf-src $(BUILD_DIR)/rev

distclean:
	rm -rf $(BUILD_DIR)
