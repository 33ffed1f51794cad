# SPDX-License-Identifier: Apache-2.0
# The eBPF programs: compiled for the BPF target (not with the C flags of
# the binaries: no sanitizers, no hardening flags there), then turned into
# a libbpf skeleton header that embeds the object in sbx-supervisord.
BPF_CFLAGS = -O2 -g -Wall -Werror -target bpf -I$(top_srcdir)/bpf $(BPF_CPPFLAGS)

bpf/netaudit.bpf.o: $(top_srcdir)/bpf/netaudit.bpf.c $(top_srcdir)/bpf/netaudit.h
	@$(MKDIR_P) bpf
	$(AM_V_CC)$(BPF_CLANG) $(BPF_CFLAGS) -c $(top_srcdir)/bpf/netaudit.bpf.c -o $@

bpf/netaudit.skel.h: bpf/netaudit.bpf.o
	$(AM_V_GEN)$(BPFTOOL) gen skeleton bpf/netaudit.bpf.o name netaudit_bpf > $@.tmp && mv $@.tmp $@

BUILT_SOURCES = bpf/netaudit.skel.h
CLEANFILES += bpf/netaudit.bpf.o bpf/netaudit.skel.h
EXTRA_DIST += bpf/netaudit.bpf.c bpf/netaudit.h
