# SPDX-License-Identifier: Apache-2.0
# systemd units for sbx-supervisord: the .service is filled in at make time
# with the configured paths; units are installed when a unit directory is
# known (override with `make install systemdsystemunitdir=DIR`, or set it
# empty to skip them).
systemdsystemunitdir = $(prefix)/lib/systemd/system
sysusersdir = $(prefix)/lib/sysusers.d
tmpfilesdir = $(prefix)/lib/tmpfiles.d

contrib/systemd/sbx-supervisord.service: $(top_srcdir)/contrib/systemd/sbx-supervisord.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) $(@D) && sed \
		-e 's|@sbindir[@]|$(sbindir)|g' \
		-e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		< $(top_srcdir)/contrib/systemd/sbx-supervisord.service.in > $@.tmp && mv $@.tmp $@

all-local: contrib/systemd/sbx-supervisord.service
CLEANFILES += contrib/systemd/sbx-supervisord.service
EXTRA_DIST += contrib/sbx-supervisord.conf contrib/try-supervisor.sh contrib/try-bundle.sh \
	contrib/bundles/hello/manifest.ini contrib/bundles/hello/hello.sh contrib/systemd/sbx-supervisord.service.in contrib/systemd/sbx-supervisord.socket \
	contrib/systemd/sbx.sysusers contrib/systemd/sbx.tmpfiles

install-data-local: contrib/systemd/sbx-supervisord.service
	@$(MKDIR_P) $(DESTDIR)$(sysconfdir)/sbx
	@if test ! -e $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; then \
		$(INSTALL_DATA) $(top_srcdir)/contrib/sbx-supervisord.conf $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; \
	fi
	@if test -n "$(systemdsystemunitdir)"; then \
		$(MKDIR_P) $(DESTDIR)$(systemdsystemunitdir) && \
		$(INSTALL_DATA) contrib/systemd/sbx-supervisord.service $(DESTDIR)$(systemdsystemunitdir)/ && \
		$(INSTALL_DATA) $(top_srcdir)/contrib/systemd/sbx-supervisord.socket $(DESTDIR)$(systemdsystemunitdir)/ && \
		$(MKDIR_P) $(DESTDIR)$(sysusersdir) $(DESTDIR)$(tmpfilesdir) && \
		$(INSTALL_DATA) $(top_srcdir)/contrib/systemd/sbx.sysusers $(DESTDIR)$(sysusersdir)/sbx.conf && \
		$(INSTALL_DATA) $(top_srcdir)/contrib/systemd/sbx.tmpfiles $(DESTDIR)$(tmpfilesdir)/sbx.conf; \
	fi

uninstall-local:
	@# the configuration goes only if nobody changed it
	@if cmp -s $(top_srcdir)/contrib/sbx-supervisord.conf $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; then \
		rm -f $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; \
	fi
	@rmdir $(DESTDIR)$(sysconfdir)/sbx 2>/dev/null || true
	@if test -n "$(systemdsystemunitdir)"; then \
		rm -f $(DESTDIR)$(systemdsystemunitdir)/sbx-supervisord.service \
		      $(DESTDIR)$(systemdsystemunitdir)/sbx-supervisord.socket \
		      $(DESTDIR)$(sysusersdir)/sbx.conf $(DESTDIR)$(tmpfilesdir)/sbx.conf; \
	fi
