# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord, sbxctl and sbx-bundle, from one folder per subsystem
# (HACKING.md: the folders, their rank, and the one-way rule that
# t/layout-check.sh enforces). Includes stay bare ("conf.h"): every folder
# is on the quote path. -iquote, not -I: sched.h and spawn.h of ours must
# not stand in for the system's <sched.h> and <spawn.h>.
SUP_IQUOTE = -iquote $(top_srcdir)/supervisor/core \
	-iquote $(top_srcdir)/supervisor/model \
	-iquote $(top_srcdir)/supervisor/priv \
	-iquote $(top_srcdir)/supervisor/store \
	-iquote $(top_srcdir)/supervisor/bundle \
	-iquote $(top_srcdir)/supervisor/net \
	-iquote $(top_srcdir)/supervisor/callback \
	-iquote $(top_srcdir)/supervisor/cluster \
	-iquote $(top_srcdir)/supervisor/mcp \
	-iquote $(top_srcdir)/supervisor/job \
	-iquote $(top_srcdir)/supervisor/session \
	-iquote $(top_srcdir)/supervisor/front \
	-iquote $(top_srcdir)/supervisor/ctl \
	-iquote $(top_srcdir)/supervisor/tool

# The modules without I/O on the event loop
# (config, proto, tenant, policy, job state machine, scheduler, launchspec,
# record, results, journal) form a small
# library the unit tests link against.
noinst_LIBRARIES += supervisor/libsup.a
supervisor_libsup_a_SOURCES = \
	supervisor/core/util.h supervisor/core/util.c supervisor/core/fileio.h supervisor/core/fileio.c \
	supervisor/core/jsonpiece.h supervisor/core/jsonpiece.c \
	supervisor/core/log.h supervisor/core/log.c \
	supervisor/model/conf.h supervisor/model/config.c supervisor/model/config-keys.h supervisor/model/config-kinds.c supervisor/model/config-net.c supervisor/model/config-bundle.c supervisor/model/config-callback.c supervisor/model/config-http.c supervisor/model/config-reload.c supervisor/model/config-secret.c supervisor/model/config-deps.c supervisor/model/config-cluster.c supervisor/model/deps.h supervisor/model/deps.c supervisor/model/deps-lock.c \
	supervisor/model/proto.h supervisor/model/proto-internal.h supervisor/model/proto.c supervisor/model/proto-query.c supervisor/model/proto-msg.c supervisor/model/proto-session.c supervisor/model/proto-admin.c \
	supervisor/core/trace.h supervisor/core/trace.c \
	supervisor/model/metrics.h supervisor/model/metrics.c \
	supervisor/store/outbox.h supervisor/store/outbox.c \
	supervisor/model/tenant.h supervisor/model/tenant.c \
	supervisor/model/policy.h supervisor/model/policy.c \
	supervisor/model/job.h supervisor/model/job.c \
	supervisor/model/jobevents.h supervisor/model/jobevents.c \
	supervisor/priv/uidpool.h supervisor/priv/uidpool.c \
	supervisor/model/sched.h supervisor/model/sched.c \
	supervisor/model/launchspec.h supervisor/model/launchspec.c \
	supervisor/model/record.h supervisor/model/record.c \
	supervisor/model/netevents.h supervisor/model/netevents.c \
	supervisor/model/netpolicy.h supervisor/model/netpolicy.c \
	supervisor/model/netdeny.h supervisor/model/netdeny.c \
	supervisor/net/dnsmsg.h supervisor/net/dnsmsg.c \
	supervisor/store/result.h supervisor/store/result.c supervisor/store/result-index-internal.h supervisor/store/result-index.c supervisor/store/result-index-file.c \
	supervisor/store/journal.h supervisor/store/journal.c \
	supervisor/core/semver.h supervisor/core/semver.c \
	supervisor/model/manifest.h supervisor/model/manifest.c \
	supervisor/model/minisign.h supervisor/model/minisign.c \
	supervisor/model/index.h supervisor/model/index.c \
	supervisor/bundle/cache.h supervisor/bundle/cache.c \
	supervisor/model/grant.h supervisor/model/grant.c \
	supervisor/model/redact.h supervisor/model/redact.c \
	supervisor/core/urlmatch.h supervisor/core/urlmatch.c
supervisor_libsup_a_CFLAGS = $(AM_CFLAGS) $(SUP_IQUOTE) -I$(top_srcdir)/bpf $(LDNS_CFLAGS) $(INIH_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(CURL_CFLAGS)
LIBSUP = supervisor/libsup.a $(LIBSBX) $(JANSSON_LIBS) $(SODIUM_LIBS) $(LDNS_LIBS) $(CURL_LIBS)

sbin_PROGRAMS += supervisor/sbx-supervisord
supervisor_sbx_supervisord_SOURCES = \
	supervisor/front/main.c \
	supervisor/front/daemon.h supervisor/front/daemon.c supervisor/front/reload.h supervisor/front/reload.c supervisor/front/policy-ops.h supervisor/front/policy-ops.c supervisor/front/secret-ops.c \
	supervisor/store/secret-store.h supervisor/store/secret-store.c \
	supervisor/front/privsep.h supervisor/front/privsep.c \
	supervisor/store/statedir.h supervisor/store/statedir.c \
	supervisor/front/listener.h supervisor/front/listener.c \
	supervisor/front/conn.h supervisor/front/conn.c \
	supervisor/front/dispatch.h supervisor/front/dispatch.c \
	supervisor/front/accept.c supervisor/front/deps-ops.h supervisor/front/deps-ops.c supervisor/front/deps-cache.h supervisor/front/deps-cache.c supervisor/front/deps-internal.h supervisor/front/deps-place.c \
	supervisor/front/logs.c \
	supervisor/front/download.c \
	supervisor/front/paced.h supervisor/front/paced.c \
	supervisor/front/metrics-http.h supervisor/front/metrics-http.c \
	supervisor/front/http-api.h supervisor/front/http-api.c supervisor/front/http-internal.h supervisor/front/http-serve.c supervisor/front/http-gate.h supervisor/front/http-gate.c \
	supervisor/front/http-routes.h supervisor/front/http-routes.c supervisor/front/http-mcp.c \
	supervisor/mcp/mcp.h supervisor/mcp/mcp-rpc.c supervisor/mcp/mcp-tools.c supervisor/mcp/mcp-daemon.c \
	supervisor/callback/callbacks.h supervisor/callback/callbacks-internal.h supervisor/callback/callbacks.c supervisor/callback/callbacks-ops.c supervisor/callback/callback-queue.c supervisor/callback/callback-progress.c supervisor/callback/callback-lane.c \
	supervisor/callback/callback-thread.h supervisor/callback/callback-thread.c \
	supervisor/job/jobs.h supervisor/job/jobs.c \
	supervisor/job/runner.h supervisor/job/runner.c supervisor/job/job-secrets.h supervisor/job/job-secrets.c \
	supervisor/job/prepare.h supervisor/job/prepare.c \
	supervisor/job/privc.h supervisor/job/privc.c \
	supervisor/job/privjob.h supervisor/job/privjob.c \
	supervisor/job/capture.h supervisor/job/capture.c \
	supervisor/front/subscribe.h supervisor/front/subscribe.c \
	supervisor/job/commit.h supervisor/job/commit.c \
	supervisor/job/recover.h supervisor/job/recover.c \
	supervisor/session/session.h supervisor/session/session-internal.h supervisor/session/session.c \
	supervisor/session/session-files.c supervisor/session/session-adopt.c supervisor/session/session-show.c supervisor/session/session-policy.c supervisor/session/session-service.c supervisor/session/session-control.c supervisor/session/session-warm.c \
	supervisor/cluster/db.h supervisor/cluster/db-internal.h supervisor/cluster/db.c supervisor/cluster/db-jobs.c supervisor/cluster/db-callbacks.c supervisor/cluster/db-writer.h supervisor/cluster/db-writer.c supervisor/cluster/db-sessions.c supervisor/front/cluster-ops.h supervisor/front/cluster-internal.h supervisor/front/cluster-ops.c supervisor/front/cluster-query.c supervisor/front/cluster-callbacks.c supervisor/front/cluster-sessions.c \
	supervisor/front/session-ops.c supervisor/front/warm.h supervisor/front/warm.c supervisor/front/service.h supervisor/front/service.c supervisor/front/service-pump.c supervisor/front/service-conn.h supervisor/front/service-http.c \
	supervisor/core/loop.h supervisor/core/loop.c \
	supervisor/core/pool.h supervisor/core/pool.c \
	supervisor/core/worker.h supervisor/core/worker.c \
	supervisor/front/results-rest.h supervisor/front/results-rest.c \
	supervisor/store/syncer.h supervisor/store/syncer.c \
	supervisor/priv/spawn.h supervisor/priv/spawn.c \
	supervisor/priv/cgroup.h supervisor/priv/cgroup.c \
	supervisor/priv/workspace.h supervisor/priv/workspace.c \
	supervisor/priv/wscrypt.h supervisor/priv/wscrypt.c \
	supervisor/store/audit.h supervisor/store/audit.c supervisor/store/policy-store.h supervisor/store/policy-store.c \
	supervisor/bundle/extract.h supervisor/bundle/unpack.h supervisor/bundle/unpack.c supervisor/bundle/tree-check.h supervisor/bundle/tree-check.c \
	supervisor/bundle/fetch.h supervisor/bundle/fetch.c \
	supervisor/bundle/cachefs.h supervisor/bundle/cachefs.c \
	supervisor/bundle/registry.h supervisor/bundle/registry.c \
	supervisor/bundle/bundle.h supervisor/bundle/bundle-internal.h supervisor/bundle/bundle.c \
	supervisor/job/bundle-job.c supervisor/front/bundle-ops.c \
	supervisor/priv/netaudit-bpf.h supervisor/priv/netaudit.c supervisor/priv/netaudit-core.h supervisor/priv/netaudit-core.c supervisor/net/netjob.h supervisor/net/netjob.c supervisor/net/netveth.h supervisor/net/netveth.c \
	supervisor/priv/veth.h supervisor/priv/veth.c supervisor/priv/nft.h supervisor/priv/nft.c supervisor/priv/nft-run.h supervisor/priv/nft-lib.c supervisor/priv/netfwd.h supervisor/priv/netfwd.c \
	supervisor/net/dnsproxy.h supervisor/net/dnsproxy-internal.h supervisor/net/dnsproxy.c supervisor/net/dnstcp.c supervisor/net/secretproxy.h supervisor/net/secretproxy.c \
	supervisor/net/auditring.h supervisor/net/auditring.c supervisor/net/netremote.h supervisor/net/netremote.c
nodist_supervisor_sbx_supervisord_SOURCES = bpf/netaudit.skel.h supervisor/front/openapi.c
supervisor_sbx_supervisord_CFLAGS = $(AM_CFLAGS) $(SUP_IQUOTE) -pthread $(SECCOMP_CFLAGS) -DSBX_LIBEXECDIR='"$(libexecdir)"' -I$(top_srcdir)/bpf -I$(top_builddir)/bpf $(LIBBPF_CFLAGS) $(LIBNL_CFLAGS) $(NFT_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(CURL_CFLAGS) $(MHD_CFLAGS) $(GNUTLS_CFLAGS) $(LIBPQ_CFLAGS) -fvisibility=hidden
supervisor_sbx_supervisord_LDADD = $(LIBSUP) $(SECCOMP_LIBS) $(LIBBPF_LIBS) $(LIBNL_LIBS) $(NFT_LIBS) $(SYSTEMD_LIBS) $(CURL_LIBS) $(MHD_LIBS) $(GNUTLS_LIBS) $(LIBPQ_LIBS)
# None of the daemon's functions are the libraries' to call: libkrb5 (under
# libpq's GSSAPI) has a profile_init of its own, which an exported one of
# ours would take the place of.
supervisor_sbx_supervisord_LDFLAGS = $(AM_LDFLAGS) -pthread -Wl,--exclude-libs,ALL

# sbx-unpack: the daemon's sandboxed child that unpacks one bundle
# (unpack.h). Installed beside sbx-supervisord, where the daemon looks for
# it. The daemon itself does not link libarchive.
sbin_PROGRAMS += supervisor/sbx-unpack
supervisor_sbx_unpack_SOURCES = supervisor/bundle/unpack-main.c supervisor/bundle/unpack-confine.c supervisor/bundle/unpack.h \
	supervisor/bundle/extract.h supervisor/bundle/extract.c supervisor/bundle/tree-check.h supervisor/bundle/tree-check.c
supervisor_sbx_unpack_CFLAGS = $(AM_CFLAGS) $(SUP_IQUOTE) $(SECCOMP_CFLAGS) $(ARCHIVE_CFLAGS)
supervisor_sbx_unpack_LDADD = $(LIBSBX) $(SECCOMP_LIBS) $(ARCHIVE_LIBS)

bin_PROGRAMS += supervisor/sbxctl
supervisor_sbxctl_SOURCES = supervisor/ctl/sbxctl.c supervisor/ctl/sbxctl.h supervisor/ctl/client.c supervisor/ctl/sbxctl-run.c supervisor/ctl/sbxctl-lock.c supervisor/ctl/sbxctl-print.c supervisor/ctl/sbxctl-bundle.c supervisor/ctl/sbxctl-download.c supervisor/ctl/sbxctl-callbacks.c supervisor/ctl/sbxctl-session.c supervisor/ctl/sbxctl-forward.c supervisor/ctl/sbxctl-policy.c supervisor/ctl/sbxctl-secret.c supervisor/ctl/sbxctl-nodes.c
supervisor_sbxctl_CFLAGS = $(AM_CFLAGS) $(SUP_IQUOTE) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS)
supervisor_sbxctl_LDADD = $(LIBSUP)

# sbx-mcp(1): the Model Context Protocol server on stdio (a client of the
# daemon's socket, like sbxctl).
bin_PROGRAMS += supervisor/sbx-mcp
supervisor_sbx_mcp_SOURCES = supervisor/mcp/mcp.h supervisor/mcp/mcp-main.c supervisor/mcp/mcp-rpc.c supervisor/mcp/mcp-tools.c supervisor/mcp/mcp-daemon.c
supervisor_sbx_mcp_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS)
supervisor_sbx_mcp_LDADD = $(LIBSBX) $(JANSSON_LIBS) $(SODIUM_LIBS)

# sbx-bundle(1): the publisher's tool (pack, check, index).
bin_PROGRAMS += supervisor/sbx-bundle
supervisor_sbx_bundle_SOURCES = supervisor/tool/sbx-bundle.c supervisor/tool/bundle-tool.h supervisor/tool/bundle-pack.c supervisor/tool/tool-util.c \
	supervisor/bundle/extract.h supervisor/bundle/extract.c supervisor/bundle/tree-check.h supervisor/bundle/tree-check.c
supervisor_sbx_bundle_CFLAGS = $(AM_CFLAGS) $(SUP_IQUOTE) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) $(ARCHIVE_CFLAGS)
supervisor_sbx_bundle_LDADD = $(LIBSUP) $(ARCHIVE_LIBS)

# The HTTP API's OpenAPI document, built into the daemon as a C string
# (served at /v1/openapi.json; t/unit/http-routes-test.c checks it against
# the routes).
EXTRA_DIST += supervisor/front/openapi.json supervisor/front/embed.awk
CLEANFILES += supervisor/front/openapi.c
supervisor/front/openapi.c: $(srcdir)/supervisor/front/openapi.json $(srcdir)/supervisor/front/embed.awk
	$(AM_V_GEN)$(MKDIR_P) supervisor/front && $(AWK) -v name=http_openapi -f $(srcdir)/supervisor/front/embed.awk \
		$(srcdir)/supervisor/front/openapi.json > $@.tmp && mv $@.tmp $@
