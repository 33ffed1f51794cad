# SPDX-License-Identifier: Apache-2.0
noinst_LIBRARIES += lib/libsbx.a
LIBSBX_SOURCES = \
	lib/macro.h \
	lib/error.h lib/error.c \
	lib/parse.h lib/parse.c \
	lib/env-name.h lib/env-name.c \
	lib/fd-util.h lib/fd-util.c \
	lib/inifile.h lib/inifile.c \
	lib/inikeys.h lib/inikeys.c \
	lib/json-string.h lib/json-string.c \
	lib/launch-abi.h \
	lib/init-abi.h lib/initc.h lib/initc.c \
	lib/profile.h lib/profile-internal.h \
	lib/profile-keys.h \
	lib/profile.c lib/profile-value.c lib/profile-keys.c lib/profile-keys-fs.c \
	lib/profile-keys-security.c lib/profile-load.c lib/profile-write.c
lib_libsbx_a_SOURCES = $(LIBSBX_SOURCES)
lib_libsbx_a_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS) $(SECCOMP_CFLAGS) $(CAPNG_CFLAGS)
# The profile parser resolves syscall names with libseccomp and capability
# names with libcap-ng, so every user of the library links both.
LIBSBX = lib/libsbx.a $(INIH_LIBS) $(SECCOMP_LIBS) $(CAPNG_LIBS)
