# SPDX-License-Identifier: Apache-2.0
# cmocka unit tests; they print TAP (CMOCKA_MESSAGE_OUTPUT=TAP from t/local.mk).
UNIT_TESTS = t/unit/parse-test t/unit/profile-test t/unit/inikeys-test t/unit/json-string-test t/unit/urlmatch-test t/unit/auditring-test \
	t/unit/initc-test t/unit/http-routes-test
if HAVE_CMOCKA
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
else
# Without cmocka (see configure) the unit tests, here and in t/sup-unit,
# are one failing test that says what to install.
TESTS += t/unit/cmocka-missing.sh
endif
EXTRA_DIST += t/unit/cmocka-missing.sh

UNIT_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(SECCOMP_CFLAGS) $(CAPNG_CFLAGS)
UNIT_LDADD = $(LIBSBX) $(CMOCKA_LIBS)

t_unit_parse_test_SOURCES = t/unit/parse-test.c
t_unit_parse_test_CFLAGS = $(UNIT_CFLAGS)
t_unit_parse_test_LDADD = $(UNIT_LDADD)

t_unit_profile_test_SOURCES = t/unit/profile-test.c
t_unit_profile_test_CFLAGS = $(UNIT_CFLAGS)
t_unit_profile_test_LDADD = $(UNIT_LDADD)

t_unit_inikeys_test_SOURCES = t/unit/inikeys-test.c
t_unit_inikeys_test_CFLAGS = $(UNIT_CFLAGS)
t_unit_inikeys_test_LDADD = $(UNIT_LDADD)

t_unit_json_string_test_SOURCES = t/unit/json-string-test.c
t_unit_json_string_test_CFLAGS = $(UNIT_CFLAGS)
t_unit_json_string_test_LDADD = $(UNIT_LDADD)

# supervisor/core/urlmatch.c, with the callback_allow key that uses it.
t_unit_urlmatch_test_SOURCES = t/unit/urlmatch-test.c
t_unit_urlmatch_test_CFLAGS = $(UNIT_CFLAGS) $(CURL_CFLAGS) $(SUP_IQUOTE)
t_unit_urlmatch_test_LDADD = $(LIBSUP) $(CMOCKA_LIBS)

# lib/initc.c against a fake, hostile sbx-init.
t_unit_initc_test_SOURCES = t/unit/initc-test.c
t_unit_initc_test_CFLAGS = $(UNIT_CFLAGS)
t_unit_initc_test_LDADD = $(UNIT_LDADD)

# supervisor/net/auditring.c: the front's reader of the audit's ring buffer.
t_unit_auditring_test_SOURCES = t/unit/auditring-test.c supervisor/net/auditring.h supervisor/net/auditring.c
t_unit_auditring_test_CFLAGS = $(UNIT_CFLAGS) -iquote $(top_srcdir)/supervisor/net
t_unit_auditring_test_LDADD = $(CMOCKA_LIBS)

# supervisor/front/http-routes.c, against the OpenAPI document that
# describes its routes (read from $SBX_SRCDIR when set, else OPENAPI_JSON).
t_unit_http_routes_test_SOURCES = t/unit/http-routes-test.c supervisor/front/http-routes.c supervisor/front/http-routes.h
t_unit_http_routes_test_CFLAGS = $(UNIT_CFLAGS) $(JANSSON_CFLAGS) $(SUP_IQUOTE) -iquote $(top_srcdir)/supervisor/front \
	-DOPENAPI_JSON='"$(abs_top_srcdir)/supervisor/front/openapi.json"'
t_unit_http_routes_test_LDADD = $(LIBSUP) $(CMOCKA_LIBS)
