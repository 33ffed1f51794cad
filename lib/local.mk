# SPDX-License-Identifier: Apache-2.0
noinst_LIBRARIES += lib/libsbx.a
LIBSBX_SOURCES = \
	lib/macro.h \
	lib/error.h lib/error.c \
	lib/parse.h lib/parse.c \
	lib/profile.h lib/profile-internal.h \
	lib/profile.c lib/profile-keys.c lib/profile-load.c lib/profile-write.c \
	lib/profile-path.c lib/launch-abi.h
lib_libsbx_a_SOURCES = $(LIBSBX_SOURCES)
lib_libsbx_a_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS) $(SECCOMP_CFLAGS) $(CAPNG_CFLAGS)
# The profile parser resolves syscall names with libseccomp and capability
# names with libcap-ng, so every user of the library links both.
LIBSBX = lib/libsbx.a $(INIH_LIBS) $(SECCOMP_LIBS) $(CAPNG_LIBS)
