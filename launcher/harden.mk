# SPDX-License-Identifier: Apache-2.0
HARDEN_SOURCES = \
	launcher/harden.h launcher/harden.c \
	launcher/seccomp-policy.h launcher/seccomp.c launcher/seccomp-guard.c \
	launcher/caps.h launcher/caps.c \
	launcher/landlock.h launcher/landlock.c \
	launcher/procmask.h launcher/procmask.c

# The default syscall filter is built once, at build time, by the same code
# that builds filters at run time (see launcher/seccomp-gen.c).
noinst_PROGRAMS += launcher/seccomp-gen
launcher_seccomp_gen_SOURCES = \
	launcher/seccomp-gen.c \
	launcher/seccomp-policy.h launcher/seccomp.c launcher/seccomp-guard.c launcher/harden.h
launcher_seccomp_gen_CPPFLAGS = $(AM_CPPFLAGS) -DSBX_SECCOMP_GENERATOR
launcher_seccomp_gen_CFLAGS = $(AM_CFLAGS) $(SECCOMP_CFLAGS)
launcher_seccomp_gen_LDADD = $(LIBSBX) $(SECCOMP_LIBS)
launcher/seccomp-default.h: launcher/seccomp-gen$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) launcher && launcher/seccomp-gen$(EXEEXT) > $@.tmp && mv $@.tmp $@
launcher/sbx_launch-seccomp.$(OBJEXT): launcher/seccomp-default.h
CLEANFILES += launcher/seccomp-default.h
