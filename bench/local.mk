# SPDX-License-Identifier: Apache-2.0
EXTRA_DIST += bench/README.md bench/launch.sh

# Not part of make check: timings depend on the machine.
.PHONY: bench-launch
bench-launch: launcher/sbx-launch
	$(SHELL) $(srcdir)/bench/launch.sh
