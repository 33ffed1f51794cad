# SPDX-License-Identifier: Apache-2.0
# Man pages are written in scdoc and shipped pre-built in the tarball.
MAN_SCD = \
	man/sbx-launch.1.scd \
	man/sbx-supervisord.8.scd \
	man/sbx-supervisord.conf.5.scd \
	man/sbx-protocol.7.scd \
	man/sbxctl.1.scd \
	man/sbx-profile.5.scd \
	man/sbx-manifest.5.scd \
	man/sbx-bundle.1.scd
dist_man_MANS += $(MAN_SCD:.scd=)
EXTRA_DIST += $(MAN_SCD) man/tidy.awk
MAINTAINERCLEANFILES += $(MAN_SCD:.scd=)

SUFFIXES = .scd
.scd:
	$(AM_V_GEN)$(MKDIR_P) $(@D) && $(SCDOC) < $< | $(AWK) -f $(top_srcdir)/man/tidy.awk > $@.tmp && mv $@.tmp $@
