# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord and sbxctl: cmocka unit tests of the pure modules, and
# bats tests against a real daemon on a real socket running real jobs.
SUP_UNIT_TESTS = \
	t/sup-unit/proto-test \
	t/sup-unit/policy-test \
	t/sup-unit/job-test \
	t/sup-unit/sched-test \
	t/sup-unit/launchspec-test \
	t/sup-unit/record-test \
	t/sup-unit/netevents-test \
	t/sup-unit/netpolicy-test \
	t/sup-unit/dnsmsg-test \
	t/sup-unit/uidpool-test \
	t/sup-unit/journal-test \
	t/sup-unit/result-test \
	t/sup-unit/storage-fault-test \
	t/sup-unit/manifest-test \
	t/sup-unit/minisign-test \
	t/sup-unit/index-test \
	t/sup-unit/cache-test \
	t/sup-unit/grant-test \
	t/sup-unit/redact-test \
	t/sup-unit/deps-test \
	t/sup-unit/metrics-test \
	t/sup-unit/outbox-test \
	t/sup-unit/jsonpiece-test
check_PROGRAMS += t/sup-unit/sup-client
if HAVE_CMOCKA
check_PROGRAMS += $(SUP_UNIT_TESTS)
TESTS += $(SUP_UNIT_TESTS)
endif

SUP_UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(SUP_IQUOTE) -I$(top_srcdir)/bpf
SUP_UNIT_LDADD = $(LIBSUP) $(CMOCKA_LIBS)

t_sup_unit_jsonpiece_test_SOURCES = t/sup-unit/jsonpiece-test.c
t_sup_unit_jsonpiece_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_jsonpiece_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_proto_test_SOURCES = t/sup-unit/proto-test.c
t_sup_unit_proto_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_proto_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_policy_test_SOURCES = t/sup-unit/policy-test.c
t_sup_unit_policy_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_policy_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_job_test_SOURCES = t/sup-unit/job-test.c
t_sup_unit_job_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_job_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_sched_test_SOURCES = t/sup-unit/sched-test.c
t_sup_unit_sched_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_sched_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_launchspec_test_SOURCES = t/sup-unit/launchspec-test.c
t_sup_unit_launchspec_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_launchspec_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_netevents_test_SOURCES = t/sup-unit/netevents-test.c
t_sup_unit_netevents_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_netevents_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_netpolicy_test_SOURCES = t/sup-unit/netpolicy-test.c
t_sup_unit_netpolicy_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_netpolicy_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_dnsmsg_test_SOURCES = t/sup-unit/dnsmsg-test.c
# -iquote: supervisor/model/sched.h must not stand in for <sched.h> in ldns's headers
t_sup_unit_dnsmsg_test_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LDNS_CFLAGS) $(SUP_IQUOTE)
t_sup_unit_dnsmsg_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_record_test_SOURCES = t/sup-unit/record-test.c
t_sup_unit_record_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_record_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_uidpool_test_SOURCES = t/sup-unit/uidpool-test.c
t_sup_unit_uidpool_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_uidpool_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_journal_test_SOURCES = t/sup-unit/journal-test.c
t_sup_unit_journal_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_journal_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_manifest_test_SOURCES = t/sup-unit/manifest-test.c
t_sup_unit_manifest_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_manifest_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_minisign_test_SOURCES = t/sup-unit/minisign-test.c
t_sup_unit_minisign_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_minisign_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_index_test_SOURCES = t/sup-unit/index-test.c
t_sup_unit_index_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_index_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_cache_test_SOURCES = t/sup-unit/cache-test.c
t_sup_unit_cache_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_cache_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_outbox_test_SOURCES = t/sup-unit/outbox-test.c
t_sup_unit_outbox_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_outbox_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_metrics_test_SOURCES = t/sup-unit/metrics-test.c
t_sup_unit_metrics_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_metrics_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_grant_test_SOURCES = t/sup-unit/grant-test.c
t_sup_unit_grant_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_grant_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_deps_test_SOURCES = t/sup-unit/deps-test.c
t_sup_unit_deps_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_deps_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_redact_test_SOURCES = t/sup-unit/redact-test.c
t_sup_unit_redact_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_redact_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_result_test_SOURCES = t/sup-unit/result-test.c
t_sup_unit_result_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_result_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_storage_fault_test_SOURCES = t/sup-unit/storage-fault-test.c
t_sup_unit_storage_fault_test_CFLAGS = $(SUP_UNIT_CFLAGS)
t_sup_unit_storage_fault_test_LDADD = $(SUP_UNIT_LDADD)
t_sup_unit_sup_client_SOURCES = t/sup-unit/sup-client.c
t_sup_unit_sup_client_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
t_sup_unit_sup_client_LDADD = $(JANSSON_LIBS)

SUP_BATS = \
	t/supervisor-run.bats \
	t/cluster.bats \
	t/cluster-callbacks.bats \
	t/cluster-http.bats \
	t/cluster-claim.bats \
	t/supervisor-timeouts.bats \
	t/supervisor-timer-faults.bats \
	t/supervisor-docs.bats \
	t/supervisor-memory.bats \
	t/supervisor-protocol.bats \
	t/supervisor-tenants.bats \
	t/supervisor-crash.bats \
	t/supervisor-load.bats \
	t/supervisor-config.bats \
	t/supervisor-systemd.bats \
	t/supervisor-retention.bats \
	t/supervisor-faults.bats \
	t/supervisor-logs.bats \
	t/supervisor-logs-flood.bats \
	t/supervisor-isolation.bats \
	t/supervisor-nonroot.bats \
	t/supervisor-uids.bats \
	t/supervisor-privsep.bats \
	t/supervisor-fairness.bats \
	t/supervisor-results.bats \
	t/supervisor-netaudit.bats \
	t/supervisor-restricted.bats \
	t/supervisor-forwarding.bats \
	t/supervisor-dnstcp.bats \
	t/supervisor-rebind.bats \
	t/supervisor-netuser.bats \
	t/supervisor-dnslimits.bats \
	t/supervisor-download.bats \
	t/supervisor-trace.bats \
	t/supervisor-metrics.bats \
	t/http-api.bats \
	t/supervisor-value.bats \
	t/supervisor-reload.bats \
	t/secrets.bats t/secrets-header.bats t/deps-pip.bats t/deps-npm.bats \
	t/mcp.bats \
	t/supervisor-callbacks.bats \
	t/supervisor-callback-backlog.bats \
	t/supervisor-callback-outbox-fault.bats \
	t/supervisor-callback-fairness.bats \
	t/supervisor-callback-order.bats \
	t/supervisor-progress.bats \
	t/bundle-run.bats \
	t/bundle-verify.bats \
	t/bundle-archive.bats \
	t/bundle-unpack.bats \
	t/bundle-policy.bats \
	t/bundle-crash.bats \
	t/bundle-registry.bats \
	t/bundle-tenants.bats \
	t/bundle-cache-full.bats \
	t/supervisor-results-rest.bats \
	t/container.bats
TESTS += $(SUP_BATS)
EXTRA_DIST += $(SUP_BATS) t/sup-unit/daemon.bash t/sup-unit/receiver.bash t/sup-unit/bundle.bash t/sup-unit/vectors t/helpers/registry-server.py t/helpers/hostile-archive.py \
	t/helpers/net-servers.py t/helpers/https-echo.py t/helpers/pip-index.py t/helpers/npm-registry.py t/helpers/net-probe.py t/helpers/dns-server.py t/helpers/dns-tcp-probe.py t/helpers/net-metrics-check.py \
	t/helpers/callback-receiver.py t/helpers/testhost.bash
# The node image and the Kubernetes manifests: t/container.bats reads them
# with t/helpers/k8s-manifests.py; t/container-image.sh DEB_DIR (not part
# of make check: root, podman, a minute) builds the image and runs jobs in it.
EXTRA_DIST += t/helpers/k8s-manifests.py t/container-image.sh

# Preloaded into the daemon by t/supervisor-timer-faults.bats: timers that
# fail on demand (see the file).
check_PROGRAMS += t/helpers/fail-timerfd.so
t_helpers_fail_timerfd_so_SOURCES = t/helpers/fail-timerfd.c
t_helpers_fail_timerfd_so_CFLAGS = $(AM_CFLAGS) -fPIC
t_helpers_fail_timerfd_so_LDFLAGS = -shared

# Preloaded into the daemon by t/supervisor-results-rest.bats: record reads
# off the event loop held back on demand (see the file).
check_PROGRAMS += t/helpers/gate-records.so
t_helpers_gate_records_so_SOURCES = t/helpers/gate-records.c
t_helpers_gate_records_so_CFLAGS = $(AM_CFLAGS) -fPIC
t_helpers_gate_records_so_LDFLAGS = -shared

# sbx-privd(8) under a hostile front: t/helpers/privd-client.c speaks to it
# with the front's credentials.
check_PROGRAMS += t/helpers/privd-client
t_helpers_privd_client_SOURCES = t/helpers/privd-client.c t/helpers/privd-client.h t/helpers/privd-client-fs.c \
	t/helpers/privd-client-net.c t/helpers/privd-client-audit.c t/helpers/privd-client-passfd.c t/helpers/privd-client-park.c lib/privd-abi.h \
	supervisor/net/auditring.h supervisor/net/auditring.c
t_helpers_privd_client_CFLAGS = $(AM_CFLAGS) -iquote $(top_srcdir)/supervisor/net -I$(top_srcdir)/bpf
TESTS += t/privd-hostile.bats t/privd-fs.bats t/privd-net.bats t/privd-audit.bats t/privd-listen.bats t/supervisor-helper-socket.bats
EXTRA_DIST += t/privd-hostile.bats t/privd-fs.bats t/privd-net.bats t/privd-audit.bats t/privd-listen.bats t/supervisor-helper-socket.bats

# What a compromised unpacking child could try, run under the daemon's own
# confinement code (t/bundle-unpack.bats).
check_PROGRAMS += t/helpers/unpack-escape
t_helpers_unpack_escape_SOURCES = t/helpers/unpack-escape.c supervisor/bundle/unpack.c supervisor/bundle/unpack-confine.c \
	supervisor/bundle/tree-check.c
t_helpers_unpack_escape_CFLAGS = $(AM_CFLAGS) $(SUP_IQUOTE) -pthread $(SECCOMP_CFLAGS)
t_helpers_unpack_escape_LDADD = $(LIBSUP) $(SECCOMP_LIBS)
t_helpers_unpack_escape_LDFLAGS = $(AM_LDFLAGS) -pthread
