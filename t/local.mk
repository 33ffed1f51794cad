# SPDX-License-Identifier: Apache-2.0
# Every test speaks TAP: bats files through `bats --tap`, cmocka unit tests
# with CMOCKA_MESSAGE_OUTPUT=TAP, shell checks directly.
TEST_EXTENSIONS = .bats .test .sh
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
BATS_LOG_DRIVER = $(LOG_DRIVER)
# --timing: each result line ends "in N ms", so a log shows where the
# suite's time goes.
BATS_LOG_COMPILER = $(BATS) --tap --timing
TEST_LOG_DRIVER = $(LOG_DRIVER)
SH_LOG_DRIVER = $(LOG_DRIVER)
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	SBX_SRCDIR='$(abs_top_srcdir)'; export SBX_SRCDIR; \
	SBX_BUILDDIR='$(abs_top_builddir)'; export SBX_BUILDDIR; \
	CMOCKA_MESSAGE_OUTPUT=TAP; export CMOCKA_MESSAGE_OUTPUT; \
	MANDOC='$(MANDOC)'; export MANDOC;
# A build with the sanitizers: the heaviest stress tests run smaller
# (each says by how much); they look for memory errors there.
if SANITIZERS
AM_TESTS_ENVIRONMENT += SBX_SANITIZED=1; export SBX_SANITIZED;
endif
EXTRA_DIST += t/helpers/common.bash t/helpers/privd.bash t/helpers/cluster.bash

include t/unit/local.mk
include t/launch.mk
include t/security.mk
include t/supervisor.mk

TESTS += t/man-lint.sh
EXTRA_DIST += t/man-lint.sh

# The supervisor's folders include only downwards (HACKING.md).
TESTS += t/layout-check.sh
EXTRA_DIST += t/layout-check.sh

# No check in t/*.bats that passes whatever happens (t/bats-lint.sh).
TESTS += t/bats-lint.sh
EXTRA_DIST += t/bats-lint.sh t/bats-lint/and-list.sample t/bats-lint/clean.sample \
	t/bats-lint/negation.sample t/bats-lint/run-status.sample

# What the build makes besides the binaries: paths filled in, completions.
BUILD_TESTS = t/configured-paths.bats t/completion.bats
TESTS += $(BUILD_TESTS)
EXTRA_DIST += $(BUILD_TESTS)

# sbxctl(1)'s usage errors.
TESTS += t/sbxctl-usage.bats
EXTRA_DIST += t/sbxctl-usage.bats

include t/fuzz/local.mk
include t/system/local.mk

# The test list (.ci/extra runs the sanitizer pass on part of it).
print-tests:
	@echo $(TESTS)
.PHONY: print-tests
