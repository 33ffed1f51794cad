# SPDX-License-Identifier: Apache-2.0
bin_PROGRAMS += launcher/sbx-launch
include launcher/harden.mk
launcher_sbx_launch_SOURCES = \
	launcher/main.c \
	launcher/harden.h \
	$(HARDEN_SOURCES)
launcher_sbx_launch_CFLAGS = $(AM_CFLAGS) $(SECCOMP_CFLAGS) $(CAPNG_CFLAGS) $(NL3_CFLAGS)
launcher_sbx_launch_LDADD = $(LIBSBX) $(SECCOMP_LIBS) $(CAPNG_LIBS) $(NL3_LIBS)
