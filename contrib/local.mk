# SPDX-License-Identifier: Apache-2.0
# The default configuration and the systemd files for sbx-supervisord, made
# from their .in files with the configured paths. Units are installed when a
# unit directory is known (override with `make install
# systemdsystemunitdir=DIR`, or set it empty to skip them).
systemdsystemunitdir = $(prefix)/lib/systemd/system
sysusersdir = $(prefix)/lib/sysusers.d
tmpfilesdir = $(prefix)/lib/tmpfiles.d

CONTRIB_GEN = \
	contrib/sbx-supervisord.conf \
	contrib/systemd/sbx-supervisord.service \
	contrib/systemd/sbx-supervisord.socket \
	contrib/systemd/sbx-privd.service \
	contrib/systemd/sbx-privd.socket \
	contrib/systemd/sbx.tmpfiles
$(CONTRIB_GEN): Makefile
	$(AM_V_GEN)$(do_subst)
contrib/sbx-supervisord.conf: contrib/sbx-supervisord.conf.in
contrib/systemd/sbx-supervisord.service: contrib/systemd/sbx-supervisord.service.in
contrib/systemd/sbx-supervisord.socket: contrib/systemd/sbx-supervisord.socket.in
contrib/systemd/sbx-privd.service: contrib/systemd/sbx-privd.service.in
contrib/systemd/sbx-privd.socket: contrib/systemd/sbx-privd.socket.in
contrib/systemd/sbx.tmpfiles: contrib/systemd/sbx.tmpfiles.in

all-local: $(CONTRIB_GEN)
CLEANFILES += $(CONTRIB_GEN)
EXTRA_DIST += $(CONTRIB_GEN:=.in) contrib/try-supervisor.sh contrib/try-bundle.sh \
	contrib/bundles/hello/manifest.ini contrib/bundles/hello/hello.sh contrib/systemd/sbx.sysusers

# The node image (contrib/container/build.sh DEB_DIR builds it from the
# Debian packages) and the Kubernetes manifests that run it: read by
# t/container.bats, run by t/container-image.sh.
EXTRA_DIST += contrib/container/Containerfile contrib/container/build.sh contrib/container/entrypoint.sh \
	contrib/container/sbx-supervisord.conf contrib/container/README.md \
	contrib/kubernetes/README.md contrib/kubernetes/kustomization.yaml contrib/kubernetes/namespace.yaml \
	contrib/kubernetes/secret.yaml contrib/kubernetes/configmap.yaml contrib/kubernetes/worker.yaml \
	contrib/kubernetes/api.yaml contrib/kubernetes/service.yaml

# bash completion (bashcompletiondir: see configure), knowing the shipped
# profile directory.
BASH_COMPLETIONS = contrib/bash-completion/sbx-launch contrib/bash-completion/sbxctl
nodist_bashcompletion_DATA = $(BASH_COMPLETIONS)
$(BASH_COMPLETIONS): Makefile
	$(AM_V_GEN)$(do_subst)
contrib/bash-completion/sbx-launch: contrib/bash-completion/sbx-launch.in
contrib/bash-completion/sbxctl: contrib/bash-completion/sbxctl.in
CLEANFILES += $(BASH_COMPLETIONS)
EXTRA_DIST += $(BASH_COMPLETIONS:=.in)

install-data-local: $(CONTRIB_GEN)
	@$(MKDIR_P) $(DESTDIR)$(sysconfdir)/sbx
	@if test ! -e $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; then \
		$(INSTALL_DATA) contrib/sbx-supervisord.conf $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; \
	fi
	@if test -n "$(systemdsystemunitdir)"; then \
		$(MKDIR_P) $(DESTDIR)$(systemdsystemunitdir) && \
		$(INSTALL_DATA) contrib/systemd/sbx-supervisord.service $(DESTDIR)$(systemdsystemunitdir)/ && \
		$(INSTALL_DATA) contrib/systemd/sbx-supervisord.socket $(DESTDIR)$(systemdsystemunitdir)/ && \
		$(INSTALL_DATA) contrib/systemd/sbx-privd.service $(DESTDIR)$(systemdsystemunitdir)/ && \
		$(INSTALL_DATA) contrib/systemd/sbx-privd.socket $(DESTDIR)$(systemdsystemunitdir)/ && \
		$(MKDIR_P) $(DESTDIR)$(sysusersdir) $(DESTDIR)$(tmpfilesdir) && \
		$(INSTALL_DATA) $(top_srcdir)/contrib/systemd/sbx.sysusers $(DESTDIR)$(sysusersdir)/sbx.conf && \
		$(INSTALL_DATA) contrib/systemd/sbx.tmpfiles $(DESTDIR)$(tmpfilesdir)/sbx.conf; \
	fi

uninstall-local:
	@# the configuration goes only if nobody changed it
	@if cmp -s contrib/sbx-supervisord.conf $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; then \
		rm -f $(DESTDIR)$(sysconfdir)/sbx/sbx-supervisord.conf; \
	fi
	@rmdir $(DESTDIR)$(sysconfdir)/sbx 2>/dev/null || true
	@if test -n "$(systemdsystemunitdir)"; then \
		rm -f $(DESTDIR)$(systemdsystemunitdir)/sbx-supervisord.service \
		      $(DESTDIR)$(systemdsystemunitdir)/sbx-supervisord.socket \
		      $(DESTDIR)$(systemdsystemunitdir)/sbx-privd.service \
		      $(DESTDIR)$(systemdsystemunitdir)/sbx-privd.socket \
		      $(DESTDIR)$(sysusersdir)/sbx.conf $(DESTDIR)$(tmpfilesdir)/sbx.conf; \
	fi
