# SPDX-License-Identifier: Apache-2.0
EXTRA_DIST += bench/README.md bench/launch.sh

# Not part of make check: timings depend on the machine.
.PHONY: bench-launch
bench-launch: launcher/sbx-launch
	$(SHELL) $(srcdir)/bench/launch.sh

EXTRA_DIST += bench/supervisor.sh bench/cluster.sh bench/cluster.py
.PHONY: bench-supervisor
bench-supervisor: launcher/sbx-launch supervisor/sbx-supervisord t/sup-unit/sup-client
	$(SHELL) $(srcdir)/bench/supervisor.sh

EXTRA_DIST += bench/bundle.sh
.PHONY: bench-bundle
bench-bundle: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl supervisor/sbx-bundle
	bash $(srcdir)/bench/bundle.sh

# Built with the tests (so that it keeps compiling), run only on demand.
check_PROGRAMS += bench/results-startup
bench_results_startup_SOURCES = bench/results-startup.c
bench_results_startup_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SUP_IQUOTE)
bench_results_startup_LDADD = $(LIBSUP)
EXTRA_DIST += bench/results-startup.sh
.PHONY: bench-results
bench-results: bench/results-startup
	$(SHELL) $(srcdir)/bench/results-startup.sh

EXTRA_DIST += bench/fairness.sh
.PHONY: bench-fairness
bench-fairness: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl t/sup-unit/sup-client
	$(SHELL) $(srcdir)/bench/fairness.sh

EXTRA_DIST += bench/network.sh
.PHONY: bench-network
bench-network: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl
	bash $(srcdir)/bench/network.sh

EXTRA_DIST += bench/callbacks.sh
.PHONY: bench-callbacks
bench-callbacks: launcher/sbx-launch supervisor/sbx-supervisord t/sup-unit/sup-client
	$(SHELL) $(srcdir)/bench/callbacks.sh

EXTRA_DIST += bench/callback-backlog.sh
.PHONY: bench-callback-backlog
bench-callback-backlog: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl t/sup-unit/sup-client
	$(SHELL) $(srcdir)/bench/callback-backlog.sh

EXTRA_DIST += bench/dns.sh bench/testhost.sh
.PHONY: bench-dns
bench-dns: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl
	bash $(srcdir)/bench/dns.sh

EXTRA_DIST += bench/init.sh
.PHONY: bench-init
bench-init: launcher/sbx-launch init/sbx-init t/helpers/init-client
	$(SHELL) $(srcdir)/bench/init.sh

EXTRA_DIST += bench/stage.sh bench/session.sh bench/session.py bench/sbxbench.py bench/service-client.py bench/service-server.py
# Linked as sbx-init is (static where the toolchain can).
check_PROGRAMS += bench/clock-first
bench_clock_first_SOURCES = bench/clock-first.c
bench_clock_first_LDFLAGS = $(INIT_LDFLAGS)
.PHONY: bench-session
bench-session: launcher/sbx-launch supervisor/sbx-supervisord init/sbx-init bench/clock-first
	$(SHELL) $(srcdir)/bench/session.sh

EXTRA_DIST += bench/warm.sh bench/warm.py
.PHONY: bench-warm
bench-warm: launcher/sbx-launch supervisor/sbx-supervisord init/sbx-init bench/clock-first
	$(SHELL) $(srcdir)/bench/warm.sh

EXTRA_DIST += bench/http.sh bench/http-client.py
.PHONY: bench-http
bench-http: launcher/sbx-launch supervisor/sbx-supervisord
	$(SHELL) $(srcdir)/bench/http.sh

EXTRA_DIST += bench/mcp.sh bench/mcp-client.mjs
.PHONY: bench-mcp
bench-mcp: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbx-mcp supervisor/sbxctl
	$(SHELL) $(srcdir)/bench/mcp.sh

# A restricted job's veth pair alone (as root).
check_PROGRAMS += bench/veth
bench_veth_SOURCES = bench/veth.c supervisor/priv/veth.c supervisor/priv/netfwd.c
bench_veth_CFLAGS = $(AM_CFLAGS) $(SUP_IQUOTE) $(LIBNL_CFLAGS)
bench_veth_LDADD = $(LIBSUP) $(LIBNL_LIBS)
.PHONY: bench-veth
bench-veth: bench/veth
	./bench/veth

EXTRA_DIST += bench/secret-proxy.sh
.PHONY: bench-secret-proxy
bench-secret-proxy: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl
	bash $(srcdir)/bench/secret-proxy.sh

EXTRA_DIST += bench/deps.sh
.PHONY: bench-deps
bench-deps: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl
	bash $(srcdir)/bench/deps.sh
