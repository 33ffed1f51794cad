# SPDX-License-Identifier: Apache-2.0
# `make fuzz`: the libFuzzer target for the profile parser, built with clang
# straight from the library sources (not the gcc-built lib/libsbx.a, whose
# objects carry no coverage instrumentation) and run for FUZZ_SECONDS over a
# seed corpus of the shipped profiles plus t/fuzz/corpus/. Exits non-zero on
# any crash, leak or sanitizer report.
FUZZ_SECONDS = 60
FUZZ_TARGET = t/fuzz/fuzz-profile
# Kept in step with LIBSBX_SOURCES in lib/local.mk (plain make: no GNU functions).
FUZZ_SRC = $(srcdir)/t/fuzz/fuzz-profile.c $(srcdir)/lib/error.c $(srcdir)/lib/parse.c \
	$(srcdir)/lib/env-name.c $(srcdir)/lib/inifile.c \
	$(srcdir)/lib/profile.c $(srcdir)/lib/profile-value.c $(srcdir)/lib/profile-keys.c \
	$(srcdir)/lib/profile-keys-fs.c $(srcdir)/lib/profile-keys-security.c $(srcdir)/lib/profile-load.c \
	$(srcdir)/lib/profile-write.c
FUZZ_HDR = $(srcdir)/lib/profile.h $(srcdir)/lib/profile-internal.h $(srcdir)/lib/profile-keys.h \
	$(srcdir)/lib/error.h \
	$(srcdir)/lib/env-name.h $(srcdir)/lib/inifile.h $(srcdir)/lib/launch-abi.h \
	$(srcdir)/lib/parse.h $(srcdir)/lib/macro.h
FUZZ_FLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

EXTRA_DIST += t/fuzz/fuzz-profile.c t/fuzz/profile.dict t/fuzz/corpus
CLEANFILES += $(FUZZ_TARGET) t/fuzz/crash-* t/fuzz/leak-* t/fuzz/timeout-* t/fuzz/oom-*

$(FUZZ_TARGET): $(FUZZ_SRC) $(FUZZ_HDR)
	@if test -z "$(CLANG)"; then echo "make fuzz needs clang (apt-get install clang)" >&2; exit 1; fi
	$(AM_V_CC)$(MKDIR_P) t/fuzz && $(CLANG) $(FUZZ_FLAGS) $(AM_CPPFLAGS) $(INIH_CFLAGS) $(SECCOMP_CFLAGS) \
		$(CAPNG_CFLAGS) -o $@ $(FUZZ_SRC) $(INIH_LIBS) $(SECCOMP_LIBS) $(CAPNG_LIBS)

.PHONY: fuzz
fuzz: $(FUZZ_TARGET)
	@corpus=$$(mktemp -d) || exit 1; \
	trap 'rm -rf "$$corpus"' EXIT; \
	cp $(srcdir)/t/fuzz/corpus/* "$$corpus"/; \
	for f in $(srcdir)/profiles/*.ini; do if test -f "$$f"; then cp "$$f" "$$corpus"/; fi; done; \
	echo "fuzzing the profile parser for $(FUZZ_SECONDS)s over $$(ls "$$corpus" | wc -l) seeds"; \
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	./$(FUZZ_TARGET) -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
		-dict=$(srcdir)/t/fuzz/profile.dict -artifact_prefix=t/fuzz/ -print_final_stats=1 "$$corpus"
