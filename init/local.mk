# SPDX-License-Identifier: Apache-2.0
# sbx-init(8): the agent a session's sandbox runs as its command. It links
# the C library only (statically where the toolchain can: it starts inside
# a sandbox that need not hold the host's shared libraries), and takes from
# lib/ only the files it needs, never libsbx.a's dependencies.
libexec_PROGRAMS += init/sbx-init
init_sbx_init_SOURCES = \
	init/agent.h \
	init/main.c \
	init/wire.c \
	init/spawn.c \
	init/files.c \
	init/connect.c \
	lib/init-abi.h \
	lib/fd-util.h lib/fd-util.c \
	lib/env-name.h lib/env-name.c \
	lib/macro.h
init_sbx_init_LDFLAGS = $(INIT_LDFLAGS)
