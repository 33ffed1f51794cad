# SPDX-License-Identifier: Apache-2.0
noinst_LIBRARIES += lib/libsbx.a
lib_libsbx_a_SOURCES = \
	lib/macro.h \
	lib/error.h lib/error.c \
	lib/parse.h lib/parse.c \
	lib/profile.h lib/profile.c
lib_libsbx_a_CFLAGS = $(AM_CFLAGS) $(INIH_CFLAGS)
LIBSBX = lib/libsbx.a $(INIH_LIBS)
