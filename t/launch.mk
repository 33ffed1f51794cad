# SPDX-License-Identifier: Apache-2.0
# sbx-launch integration tests: one bats file per feature, run as nobody.
LAUNCH_TESTS = \
	t/launch-namespaces.bats \
	t/launch-mounts.bats \
	t/launch-env.bats \
	t/launch-limits.bats \
	t/launch-timeout.bats \
	t/launch-exit.bats \
	t/launch-status.bats \
	t/launch-die-with-parent.bats \
	t/launch-signals.bats \
	t/launch-profile-errors.bats \
	t/launch-print-profile.bats \
	t/launch-check.bats \
	t/launch-check-host.bats \
	t/launch-profiles.bats \
	t/launch-fds.bats \
	t/launch-pty.bats \
	t/launch-docs.bats
TESTS += $(LAUNCH_TESTS)
EXTRA_DIST += $(LAUNCH_TESTS) t/helpers/tty-caller.py

# sbx-init(8) in a live sandbox, through the client library and a test
# client that plays the daemon's part.
check_PROGRAMS += t/helpers/init-client
t_helpers_init_client_SOURCES = t/helpers/init-client.c
t_helpers_init_client_LDADD = $(LIBSBX)
SESSION_TESTS = t/session-init.bats t/session-daemon.bats t/session-restart.bats t/session-service.bats t/session-many.bats t/session-user.bats t/warm-pool.bats
TESTS += $(SESSION_TESTS)
EXTRA_DIST += $(SESSION_TESTS)
