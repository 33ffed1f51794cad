# SPDX-License-Identifier: Apache-2.0
HARDEN_SOURCES = \
	launcher/harden.h launcher/harden.c \
	launcher/seccomp-policy.h launcher/seccomp.c \
	launcher/caps.h launcher/caps.c \
	launcher/landlock.h launcher/landlock.c \
	launcher/procmask.h launcher/procmask.c
