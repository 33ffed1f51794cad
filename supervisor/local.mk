# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord and sbxctl. The modules without I/O on the event loop
# (config, proto, tenant, policy, job state machine, scheduler, launchspec,
# record, results, journal) form a small
# library the unit tests link against.
noinst_LIBRARIES += supervisor/libsup.a
supervisor_libsup_a_SOURCES = \
	supervisor/util.h supervisor/util.c \
	supervisor/jsonpiece.h supervisor/jsonpiece.c \
	supervisor/log.h supervisor/log.c \
	supervisor/conf.h supervisor/config.c supervisor/config-keys.h supervisor/config-kinds.c supervisor/config-net.c supervisor/config-bundle.c supervisor/config-callback.c \
	supervisor/proto.h supervisor/proto-internal.h supervisor/proto.c supervisor/proto-query.c supervisor/proto-msg.c \
	supervisor/trace.h supervisor/trace.c \
	supervisor/metrics.h supervisor/metrics.c \
	supervisor/outbox.h supervisor/outbox.c \
	supervisor/tenant.h supervisor/tenant.c \
	supervisor/policy.h supervisor/policy.c \
	supervisor/job.h supervisor/job.c \
	supervisor/uidpool.h supervisor/uidpool.c \
	supervisor/sched.h supervisor/sched.c \
	supervisor/launchspec.h supervisor/launchspec.c \
	supervisor/record.h supervisor/record.c \
	supervisor/netevents.h supervisor/netevents.c \
	supervisor/netpolicy.h supervisor/netpolicy.c \
	supervisor/netdeny.h supervisor/netdeny.c \
	supervisor/dnsmsg.h supervisor/dnsmsg.c \
	supervisor/result.h supervisor/result.c supervisor/result-index-internal.h supervisor/result-index.c supervisor/result-index-file.c \
	supervisor/journal.h supervisor/journal.c \
	supervisor/semver.h supervisor/semver.c \
	supervisor/manifest.h supervisor/manifest.c \
	supervisor/minisign.h supervisor/minisign.c \
	supervisor/index.h supervisor/index.c \
	supervisor/cache.h supervisor/cache.c \
	supervisor/grant.h supervisor/grant.c \
	supervisor/urlmatch.h supervisor/urlmatch.c
supervisor_libsup_a_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/bpf $(LDNS_CFLAGS) $(INIH_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(CURL_CFLAGS)
LIBSUP = supervisor/libsup.a $(LIBSBX) $(JANSSON_LIBS) $(SODIUM_LIBS) $(LDNS_LIBS) $(CURL_LIBS)

sbin_PROGRAMS += supervisor/sbx-supervisord
supervisor_sbx_supervisord_SOURCES = \
	supervisor/main.c \
	supervisor/daemon.h supervisor/daemon.c \
	supervisor/statedir.h supervisor/statedir.c \
	supervisor/listener.h supervisor/listener.c \
	supervisor/conn.h supervisor/conn.c \
	supervisor/dispatch.h supervisor/dispatch.c \
	supervisor/accept.c \
	supervisor/logs.c \
	supervisor/download.c \
	supervisor/paced.h supervisor/paced.c \
	supervisor/metrics-http.h supervisor/metrics-http.c \
	supervisor/callbacks.h supervisor/callbacks-internal.h supervisor/callbacks.c supervisor/callbacks-ops.c supervisor/callback-queue.c supervisor/callback-progress.c supervisor/callback-lane.c \
	supervisor/callback-thread.h supervisor/callback-thread.c \
	supervisor/jobs.h supervisor/jobs.c \
	supervisor/runner.h supervisor/runner.c \
	supervisor/prepare.h supervisor/prepare.c \
	supervisor/capture.h supervisor/capture.c \
	supervisor/subscribe.h supervisor/subscribe.c \
	supervisor/commit.h supervisor/commit.c \
	supervisor/recover.h supervisor/recover.c \
	supervisor/loop.h supervisor/loop.c \
	supervisor/pool.h supervisor/pool.c \
	supervisor/worker.h supervisor/worker.c \
	supervisor/results-rest.h supervisor/results-rest.c \
	supervisor/syncer.h supervisor/syncer.c \
	supervisor/spawn.h supervisor/spawn.c \
	supervisor/cgroup.h supervisor/cgroup.c \
	supervisor/workspace.h supervisor/workspace.c \
	supervisor/audit.h supervisor/audit.c \
	supervisor/extract.h supervisor/extract.c \
	supervisor/fetch.h supervisor/fetch.c \
	supervisor/cachefs.h supervisor/cachefs.c \
	supervisor/registry.h supervisor/registry.c \
	supervisor/bundle.h supervisor/bundle-internal.h supervisor/bundle.c \
	supervisor/bundle-job.c supervisor/bundle-ops.c \
	supervisor/netaudit-bpf.h supervisor/netaudit.c supervisor/netjob.h supervisor/netjob.c supervisor/netveth.h supervisor/netveth.c \
	supervisor/veth.h supervisor/veth.c supervisor/nft.h supervisor/nft.c supervisor/netfwd.h supervisor/netfwd.c \
	supervisor/dnsproxy.h supervisor/dnsproxy-internal.h supervisor/dnsproxy.c supervisor/dnstcp.c
nodist_supervisor_sbx_supervisord_SOURCES = bpf/netaudit.skel.h
supervisor_sbx_supervisord_CFLAGS = $(AM_CFLAGS) -pthread -I$(top_srcdir)/bpf -I$(top_builddir)/bpf $(LIBBPF_CFLAGS) $(LIBNL_CFLAGS) $(NFT_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(ARCHIVE_CFLAGS) $(CURL_CFLAGS) $(MHD_CFLAGS)
supervisor_sbx_supervisord_LDADD = $(LIBSUP) $(LIBBPF_LIBS) $(LIBNL_LIBS) $(NFT_LIBS) $(SYSTEMD_LIBS) $(ARCHIVE_LIBS) $(CURL_LIBS) $(MHD_LIBS)
supervisor_sbx_supervisord_LDFLAGS = $(AM_LDFLAGS) -pthread

bin_PROGRAMS += supervisor/sbxctl
supervisor_sbxctl_SOURCES = supervisor/sbxctl.c supervisor/sbxctl.h supervisor/sbxctl-run.c supervisor/sbxctl-print.c supervisor/sbxctl-bundle.c supervisor/sbxctl-download.c supervisor/sbxctl-callbacks.c
supervisor_sbxctl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS)
supervisor_sbxctl_LDADD = $(LIBSUP)

# sbx-bundle(1): the publisher's tool (pack, check, index).
bin_PROGRAMS += supervisor/sbx-bundle
supervisor_sbx_bundle_SOURCES = supervisor/sbx-bundle.c supervisor/bundle-tool.h supervisor/bundle-pack.c \
	supervisor/extract.h supervisor/extract.c
supervisor_sbx_bundle_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(ARCHIVE_CFLAGS)
supervisor_sbx_bundle_LDADD = $(LIBSUP) $(ARCHIVE_LIBS)
