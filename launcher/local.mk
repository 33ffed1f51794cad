# SPDX-License-Identifier: Apache-2.0
bin_PROGRAMS += launcher/sbx-launch
include launcher/harden.mk
launcher_sbx_launch_SOURCES = \
	launcher/launch.h \
	launcher/main.c \
	launcher/cli.c \
	launcher/ns.c \
	launcher/rootfs.c \
	launcher/net.c \
	launcher/limits.c \
	launcher/env.c \
	launcher/sandbox.c \
	launcher/init.c \
	launcher/pty.c \
	launcher/status.c \
	launcher/hostcheck.c \
	launcher/harden.h launcher/protections.h \
	$(HARDEN_SOURCES)
nodist_launcher_sbx_launch_SOURCES = launcher/default-profile.h
launcher_sbx_launch_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/launcher
launcher_sbx_launch_CFLAGS = $(AM_CFLAGS) $(SECCOMP_CFLAGS) $(CAPNG_CFLAGS)
launcher_sbx_launch_LDADD = $(LIBSBX) $(SECCOMP_LIBS) $(CAPNG_LIBS)
launcher_sbx_launch_LDFLAGS = $(LAUNCHER_LDFLAGS)

# The built-in default profile is profiles/default.ini, compiled in as a C
# string so that sbx-launch works without installed profiles.
launcher/default-profile.h: $(top_srcdir)/profiles/default.ini
	$(AM_V_GEN)$(MKDIR_P) launcher && \
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $(top_srcdir)/profiles/default.ini > $@.tmp && \
	mv $@.tmp $@
launcher/sbx_launch-cli.$(OBJEXT): launcher/default-profile.h
CLEANFILES += launcher/default-profile.h
