# SPDX-License-Identifier: Apache-2.0
# `make fuzz`: libFuzzer targets for the parsers of untrusted text — the
# profile parser, the bundle manifest parser, and what a registry sends
# (index, signature, trusted comment) with the bundle references callers
# send — built with clang straight from the sources (not the gcc-built
# libraries, whose objects carry no coverage instrumentation), each run
# for FUZZ_SECONDS over its seed corpus. Exits non-zero on any crash, leak
# or sanitizer report.
FUZZ_SECONDS = 60
FUZZ_TARGET = t/fuzz/fuzz-profile
FUZZ_TARGETS = $(FUZZ_TARGET) t/fuzz/fuzz-manifest t/fuzz/fuzz-index t/fuzz/fuzz-net
# Kept in step with LIBSBX_SOURCES in lib/local.mk (plain make: no GNU functions).
FUZZ_LIB_SRC = $(srcdir)/lib/error.c $(srcdir)/lib/parse.c \
	$(srcdir)/lib/env-name.c $(srcdir)/lib/inifile.c $(srcdir)/lib/inikeys.c \
	$(srcdir)/lib/profile.c $(srcdir)/lib/profile-value.c $(srcdir)/lib/profile-keys.c \
	$(srcdir)/lib/profile-keys-fs.c $(srcdir)/lib/profile-keys-security.c $(srcdir)/lib/profile-load.c \
	$(srcdir)/lib/profile-write.c
FUZZ_SRC = $(srcdir)/t/fuzz/fuzz-profile.c $(FUZZ_LIB_SRC)
FUZZ_HDR = $(srcdir)/lib/profile.h $(srcdir)/lib/profile-internal.h $(srcdir)/lib/profile-keys.h \
	$(srcdir)/lib/error.h \
	$(srcdir)/lib/env-name.h $(srcdir)/lib/inifile.h $(srcdir)/lib/inikeys.h $(srcdir)/lib/launch-abi.h \
	$(srcdir)/lib/parse.h $(srcdir)/lib/macro.h
FUZZ_SUP_SRC = $(srcdir)/supervisor/model/manifest.c $(srcdir)/supervisor/core/semver.c $(srcdir)/supervisor/model/index.c \
	$(srcdir)/supervisor/model/minisign.c
FUZZ_SUP_HDR = $(srcdir)/supervisor/model/manifest.h $(srcdir)/supervisor/core/semver.h $(srcdir)/supervisor/model/index.h \
	$(srcdir)/supervisor/model/minisign.h
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_LIBS = $(INIH_LIBS) $(SECCOMP_LIBS) $(CAPNG_LIBS)
FUZZ_CFLAGS = $(AM_CPPFLAGS) $(INIH_CFLAGS) $(SECCOMP_CFLAGS) $(CAPNG_CFLAGS)

EXTRA_DIST += t/fuzz/fuzz-profile.c t/fuzz/profile.dict t/fuzz/corpus \
	t/fuzz/fuzz-manifest.c t/fuzz/manifest.dict t/fuzz/corpus-manifest \
	t/fuzz/fuzz-index.c t/fuzz/index.dict t/fuzz/corpus-index \
	t/fuzz/fuzz-net.c t/fuzz/net.dict t/fuzz/corpus-net
CLEANFILES += $(FUZZ_TARGETS) t/fuzz/crash-* t/fuzz/leak-* t/fuzz/timeout-* t/fuzz/oom-*

fuzz-need-clang:
	@if test -z "$(CLANG)"; then echo "make fuzz needs clang (apt-get install clang)" >&2; exit 1; fi

$(FUZZ_TARGET): $(FUZZ_SRC) $(FUZZ_HDR)
	@$(MAKE) fuzz-need-clang
	$(AM_V_CC)$(MKDIR_P) t/fuzz && $(CLANG) $(FUZZ_FLAGS) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRC) $(FUZZ_LIBS)

t/fuzz/fuzz-manifest: $(srcdir)/t/fuzz/fuzz-manifest.c $(FUZZ_LIB_SRC) $(FUZZ_SUP_SRC) $(FUZZ_HDR) $(FUZZ_SUP_HDR)
	@$(MAKE) fuzz-need-clang
	$(AM_V_CC)$(MKDIR_P) t/fuzz && $(CLANG) $(FUZZ_FLAGS) $(FUZZ_CFLAGS) $(SUP_IQUOTE) $(JANSSON_CFLAGS) \
		$(SODIUM_CFLAGS) -o $@ $(srcdir)/t/fuzz/fuzz-manifest.c $(FUZZ_LIB_SRC) $(FUZZ_SUP_SRC) $(FUZZ_LIBS) \
		$(JANSSON_LIBS) $(SODIUM_LIBS)

t/fuzz/fuzz-index: $(srcdir)/t/fuzz/fuzz-index.c $(FUZZ_LIB_SRC) $(FUZZ_SUP_SRC) $(FUZZ_HDR) $(FUZZ_SUP_HDR)
	@$(MAKE) fuzz-need-clang
	$(AM_V_CC)$(MKDIR_P) t/fuzz && $(CLANG) $(FUZZ_FLAGS) $(FUZZ_CFLAGS) $(SUP_IQUOTE) $(JANSSON_CFLAGS) \
		$(SODIUM_CFLAGS) -o $@ $(srcdir)/t/fuzz/fuzz-index.c $(FUZZ_LIB_SRC) $(FUZZ_SUP_SRC) $(FUZZ_LIBS) \
		$(JANSSON_LIBS) $(SODIUM_LIBS)

# Restricted jobs' allow entries and deny-ports, and the DNS proxy's messages.
FUZZ_NET_SRC = $(srcdir)/supervisor/model/netpolicy.c $(srcdir)/supervisor/net/dnsmsg.c $(srcdir)/lib/error.c
t/fuzz/fuzz-net: $(srcdir)/t/fuzz/fuzz-net.c $(FUZZ_NET_SRC) $(srcdir)/supervisor/model/netpolicy.h $(srcdir)/supervisor/net/dnsmsg.h
	@$(MAKE) fuzz-need-clang
	$(AM_V_CC)$(MKDIR_P) t/fuzz && $(CLANG) $(FUZZ_FLAGS) $(AM_CPPFLAGS) $(SUP_IQUOTE) $(LDNS_CFLAGS) \
		-o $@ $(srcdir)/t/fuzz/fuzz-net.c $(FUZZ_NET_SRC) $(LDNS_LIBS)

# fuzz_one TARGET DICT SEEDS...: run TARGET over a copy of the seeds. The
# fuzzers run two at a time (each takes one CPU); a failure of either fails
# the target.
FUZZ_RUN = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
.PHONY: fuzz fuzz-need-clang
fuzz: $(FUZZ_TARGETS)
	@set -e; \
	run() { target=$$1; dict=$$2; shift 2; \
		corpus=$$(mktemp -d) || exit 1; \
		for f in "$$@"; do if test -f "$$f"; then cp "$$f" "$$corpus"/; fi; done; \
		echo "fuzzing $$target for $(FUZZ_SECONDS)s over $$(ls "$$corpus" | wc -l) seeds"; \
		$(FUZZ_RUN) ./$$target -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
			-dict=$$dict -artifact_prefix=t/fuzz/ -print_final_stats=1 "$$corpus" || { rm -rf "$$corpus"; exit 1; }; \
		rm -rf "$$corpus"; }; \
	run $(FUZZ_TARGET) $(srcdir)/t/fuzz/profile.dict $(srcdir)/t/fuzz/corpus/* $(srcdir)/profiles/*.ini & a=$$!; \
	run t/fuzz/fuzz-manifest $(srcdir)/t/fuzz/manifest.dict $(srcdir)/t/fuzz/corpus-manifest/* $(srcdir)/contrib/bundles/*/manifest.ini & b=$$!; \
	wait $$a; wait $$b; \
	run t/fuzz/fuzz-index $(srcdir)/t/fuzz/index.dict $(srcdir)/t/fuzz/corpus-index/* & a=$$!; \
	run t/fuzz/fuzz-net $(srcdir)/t/fuzz/net.dict $(srcdir)/t/fuzz/corpus-net/* & b=$$!; \
	wait $$a; wait $$b
