# SPDX-License-Identifier: Apache-2.0
HARDEN_SOURCES = launcher/harden.c
