# SPDX-License-Identifier: Apache-2.0
EXTRA_DIST += bench/README.md bench/launch.sh

# Not part of make check: timings depend on the machine.
.PHONY: bench-launch
bench-launch: launcher/sbx-launch
	$(SHELL) $(srcdir)/bench/launch.sh

EXTRA_DIST += bench/supervisor.sh
.PHONY: bench-supervisor
bench-supervisor: launcher/sbx-launch supervisor/sbx-supervisord t/sup-unit/sup-client
	$(SHELL) $(srcdir)/bench/supervisor.sh

EXTRA_DIST += bench/fairness.sh
.PHONY: bench-fairness
bench-fairness: launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl t/sup-unit/sup-client
	$(SHELL) $(srcdir)/bench/fairness.sh
