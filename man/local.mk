# SPDX-License-Identifier: Apache-2.0
# Man pages are written in scdoc. scdoc's output (man/*.in) keeps the
# @placeholders@ of the configured paths and is shipped in the tarball, so a
# build from the tarball needs no scdoc; the paths are filled in at make time
# like the units' (do_subst, see Makefile.am).
MAN_SCD = \
	man/sbx-launch.1.scd \
	man/sbx-supervisord.8.scd \
	man/sbx-privd.8.scd \
	man/sbx-init.8.scd \
	man/sbx-supervisord.conf.5.scd \
	man/sbx-protocol.7.scd \
	man/sbxctl.1.scd \
	man/sbx-mcp.1.scd \
	man/sbx-profile.5.scd \
	man/sbx-manifest.5.scd \
	man/sbx-bundle.1.scd
MAN_PAGES = $(MAN_SCD:.scd=)
man_MANS += $(MAN_PAGES)
EXTRA_DIST += $(MAN_SCD) $(MAN_SCD:.scd=.in) man/tidy.awk
CLEANFILES += $(MAN_PAGES)
MAINTAINERCLEANFILES += $(MAN_SCD:.scd=.in)

$(MAN_PAGES): Makefile
	$(AM_V_GEN)$(do_subst)
man/sbx-launch.1: man/sbx-launch.1.in
man/sbx-supervisord.8: man/sbx-supervisord.8.in
man/sbx-privd.8: man/sbx-privd.8.in
man/sbx-init.8: man/sbx-init.8.in
man/sbx-supervisord.conf.5: man/sbx-supervisord.conf.5.in
man/sbx-protocol.7: man/sbx-protocol.7.in
man/sbxctl.1: man/sbxctl.1.in
man/sbx-mcp.1: man/sbx-mcp.1.in
man/sbx-profile.5: man/sbx-profile.5.in
man/sbx-manifest.5: man/sbx-manifest.5.in
man/sbx-bundle.1: man/sbx-bundle.1.in

SUFFIXES = .scd .in
.scd.in:
	@if test -z "$(SCDOC)"; then \
		echo "making $@ needs scdoc: apt-get install scdoc, then run ./configure again" >&2; exit 1; \
	fi
	$(AM_V_GEN)$(MKDIR_P) $(@D) && $(SCDOC) < $< > $@.roff && \
	$(AWK) -f $(top_srcdir)/man/tidy.awk $@.roff > $@.tmp && rm -f $@.roff && mv $@.tmp $@
