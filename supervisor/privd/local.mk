# SPDX-License-Identifier: Apache-2.0
# sbx-privd(8): the privileged helper. It links the root-only primitives it
# reuses (spawn, the uid pool, veths, nft, forwarding, the BPF attach of
# netaudit-core.c with the deny set of model/netdeny.c) and lib's fd
# helpers, and on purpose none of jansson, libcurl, libarchive, ldns or
# libmicrohttpd: those parse what
# tenants, registries and jobs send, in the unprivileged front
# (t/privd-hostile.bats checks the link).
libexec_PROGRAMS += supervisor/privd/sbx-privd
supervisor_privd_sbx_privd_SOURCES = \
	lib/privd-abi.h \
	supervisor/privd/privd.h supervisor/privd/main.c supervisor/privd/serve.c supervisor/privd/listen.c supervisor/privd/hostaddr.c \
	supervisor/privd/jobs.c supervisor/privd/launchopts.h supervisor/privd/launchopts.c supervisor/privd/jobfs.h supervisor/privd/jobfs.c supervisor/privd/net.c \
	supervisor/privd/wstree.h supervisor/privd/wstree.c supervisor/privd/audit.c supervisor/privd/caps.c \
	supervisor/priv/netaudit-core.h supervisor/priv/netaudit-core.c \
	supervisor/model/netdeny.h supervisor/model/netdeny.c supervisor/model/netpolicy.h supervisor/model/netpolicy.c \
	supervisor/priv/veth.h supervisor/priv/veth.c supervisor/priv/nft.h supervisor/priv/nft.c supervisor/priv/nft-run.h supervisor/priv/nft-exec.c \
	supervisor/priv/netfwd.h supervisor/priv/netfwd.c supervisor/core/fileio.h supervisor/core/fileio.c \
	supervisor/priv/spawn.h supervisor/priv/spawn.c \
	supervisor/priv/uidpool.h supervisor/priv/uidpool.c \
	lib/fd-util.h lib/fd-util.c lib/parse.h lib/parse.c lib/error.h lib/error.c lib/inifile.h lib/inifile.c
# The folders below privd/ in the one-way rule that it uses (HACKING.md);
# -iquote, so that a header there (model/sched.h) never shadows a system one.
supervisor_privd_sbx_privd_CFLAGS = $(AM_CFLAGS) -iquote $(top_srcdir)/supervisor/core -iquote $(top_srcdir)/supervisor/priv \
	-iquote $(top_srcdir)/supervisor/privd -iquote $(top_srcdir)/supervisor/model \
	-I$(top_srcdir)/bpf -I$(top_builddir)/bpf -pthread $(LIBNL_CFLAGS) $(LIBBPF_CFLAGS)
# Not libnftables: it links libjansson. The helper runs the nft program
# in a child for its tables instead (priv/nft-exec.c).
supervisor_privd_sbx_privd_LDADD = $(LIBNL_LIBS) $(LIBBPF_LIBS) $(INIH_LIBS)
nodist_supervisor_privd_sbx_privd_SOURCES = bpf/netaudit.skel.h
