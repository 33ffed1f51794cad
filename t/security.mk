# SPDX-License-Identifier: Apache-2.0
# The escape suite: attacks from inside the sandbox (SECURITY.md 1-21, 25).
check_PROGRAMS += t/helpers/try-syscall
t_helpers_try_syscall_SOURCES = t/helpers/try-syscall.c
# Never sanitized: it runs inside sandboxes where the sanitizer runtime
# would talk on stderr (the tests read its output) and its syscalls are
# the thing under test.
t_helpers_try_syscall_CFLAGS = -Wall -Wextra -O2 $(SECCOMP_CFLAGS)
t_helpers_try_syscall_LDFLAGS =
t_helpers_try_syscall_LDADD = $(SECCOMP_LIBS)

SECURITY_TESTS = \
	t/security-seccomp.bats \
	t/security-namespaces.bats \
	t/security-proc.bats \
	t/security-fs.bats \
	t/security-misc.bats \
	t/security-setid.bats \
	t/security-limits.bats
TESTS += $(SECURITY_TESTS)
EXTRA_DIST += $(SECURITY_TESTS)
