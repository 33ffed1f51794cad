# SPDX-License-Identifier: Apache-2.0
# make check-system: sbx's Debian packages installed and exercised in a
# Debian 12 guest booted with qemu (t/system/run.sh says how; TAP on
# standard output). Not part of `make check`: it needs root the first time
# (the guest image is built into /var/cache/sbx-system), qemu and
# mmdebstrap, and takes minutes.
check-system:
	$(AM_V_at)SBX_SRCDIR='$(abs_top_srcdir)' $(SHELL) $(top_srcdir)/t/system/run.sh
.PHONY: check-system
EXTRA_DIST += t/system/run.sh t/system/guest.sh
