/* SPDX-License-Identifier: Apache-2.0 */
/* A job's packages without I/O: pip and npm pins read and normalised (and
 * what is refused), a request's fields, the tenant's pip_allow and
 * npm_allow with their globs, the layer's key (the pins' order does not
 * matter; the index, registry and Python only when they are used), the
 * install job's request, the lock read back from pip's report and npm's
 * package-lock.json that must say exactly what was asked, the lock
 * checked again per tenant (its lists, its deps_min_age), and release
 * times read from an index's or a registry's page. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "deps.h"

#define N(a) (sizeof(a) / sizeof(*(a)))

/* npm's integrity: "sha512-", 86 base64 characters of c, "==" */
static void integrity(char c, char out[DEPS_INTEGRITY_MAX + 1]) {
        memcpy(out, "sha512-", 7);
        memset(out + 7, c, 86);
        memcpy(out + 93, "==", 3);
}

static void free_list(char **list) {
        if (!list)
                return;
        for (char **p = list; *p; p++)
                free(*p);
        free(list);
}

/* the index of s in the array a of strings, or -1 */
static long index_of(json_t *a, const char *s) {
        for (size_t i = 0; i < json_array_size(a); i++) {
                const char *v = json_string_value(json_array_get(a, i));
                if (v && strcmp(v, s) == 0)
                        return (long) i;
        }
        return -1;
}

static bool has_file(json_t *req, const char *path) {
        json_t *f;
        size_t i;
        json_array_foreach(json_object_get(req, "files"), i, f) {
                const char *p = json_string_value(json_object_get(f, "path"));
                if (p && strcmp(p, path) == 0)
                        return true;
        }
        return false;
}

static json_t *allow_of(json_t *req) {
        return json_object_get(json_object_get(req, "network"), "allow");
}

static void test_pip_pins(void **state) {
        struct dep_pin p;
        struct sbx_error err;
        char s[256];
        assert_int_equal(deps_pin_parse(DEP_PIP, "Foo_Bar.baz==1.2.3", &p, &err), 0);
        assert_int_equal(p.eco, DEP_PIP);
        assert_string_equal(p.name, "foo-bar-baz");
        assert_string_equal(p.version, "1.2.3");
        assert_string_equal(p.hash, "");
        deps_pin_str(&p, s, sizeof(s));
        assert_string_equal(s, "foo-bar-baz==1.2.3");
        char h[128];
        snprintf(h, sizeof(h), "x==2.0rc1+local#sha256=%064x", 7);
        assert_int_equal(deps_pin_parse(DEP_PIP, h, &p, &err), 0);
        assert_string_equal(p.version, "2.0rc1+local");
        assert_int_equal(strlen(p.hash), 64);
        deps_pin_str(&p, s, sizeof(s));
        assert_string_equal(s, h);
        /* round trip: the canonical string parses to the same pin */
        struct dep_pin q;
        assert_int_equal(deps_pin_parse(DEP_PIP, s, &q, &err), 0);
        assert_memory_equal(&p, &q, sizeof(p));
        /* refused, each with a reason */
        const char *bad[] = { "x", "x>=1", "==1", "x==", "x==1.*", "-x==1", "x-==1", "x y==1", "x==1 ", "x==1#sha256=ABC",
                              "x==1#sha256=", "x==../1", "x@1" };
        for (size_t i = 0; i < N(bad); i++) {
                err.msg[0] = '\0';
                assert_int_equal(deps_pin_parse(DEP_PIP, bad[i], &p, &err), -EINVAL);
                assert_true(err.msg[0] != '\0');
        }
        /* several hashes, ',' between; at most DEPS_PIP_HASHES_MAX */
        char many[DEPS_PIP_HASHES_MAX * 65 + 128];
        size_t k = (size_t) snprintf(many, sizeof(many), "x==1#sha256=");
        for (int i = 0; i < DEPS_PIP_HASHES_MAX; i++)
                k += (size_t) snprintf(many + k, sizeof(many) - k, "%s%064x", i ? "," : "", i + 1);
        assert_int_equal(deps_pin_parse(DEP_PIP, many, &p, &err), 0);
        assert_int_equal(strlen(p.hash), DEPS_PIP_HASHES_MAX * 65 - 1);
        char back[sizeof(many)];
        deps_pin_str(&p, back, sizeof(back));
        assert_string_equal(back, many);
        snprintf(many + k, sizeof(many) - k, ",%064x", 99);
        assert_int_equal(deps_pin_parse(DEP_PIP, many, &p, &err), -EINVAL);
        char hex[65];
        snprintf(hex, sizeof(hex), "%064x", 5);
        const char *fmt_tail[] = { ",", ",,", ",abc", ",%s" };
        for (size_t i = 0; i < N(fmt_tail); i++) {
                /* HEX then a bad tail; and a list that starts with ',' */
                snprintf(many, sizeof(many), "x==1#sha256=%s%s", hex, i == 3 ? "" : fmt_tail[i]);
                if (i == 3)
                        snprintf(many, sizeof(many), "x==1#sha256=,%s", hex);
                if (deps_pin_parse(DEP_PIP, many, &p, &err) != -EINVAL)
                        fail_msg("'%s' was taken", many);
        }
        /* requirements with every hash; the report's must be one of them */
        snprintf(many, sizeof(many), "x==1#sha256=%064x,%064x", 1, 2);
        assert_int_equal(deps_pin_parse(DEP_PIP, many, &p, &err), 0);
        json_t *r = deps_install_request("http://i:8080/simple/", NULL, &p, 1, 1000, 1 << 20, &err);
        assert_non_null(r);
        const char *req = json_string_value(json_object_get(json_array_get(json_object_get(r, "files"), 1), "data"));
        assert_non_null(req);
        snprintf(many, sizeof(many), "x==1 --hash=sha256:%064x --hash=sha256:%064x\n", 1, 2);
        assert_string_equal(req, many);
        json_decref(r);
        (void) state;
}

static void test_npm_pins(void **state) {
        struct dep_pin p, q;
        struct sbx_error err;
        char s[512], in[512], sri[DEPS_INTEGRITY_MAX + 1];
        assert_int_equal(deps_pin_parse(DEP_NPM, "left-pad@1.3.0", &p, &err), 0);
        assert_int_equal(p.eco, DEP_NPM);
        assert_string_equal(p.name, "left-pad");
        assert_string_equal(p.version, "1.3.0");
        assert_string_equal(p.hash, "");
        deps_pin_str(&p, s, sizeof(s));
        assert_string_equal(s, "left-pad@1.3.0");
        assert_int_equal(deps_pin_parse(DEP_NPM, "@scope/name@1.0.0-beta.1", &p, &err), 0);
        assert_string_equal(p.name, "@scope/name");
        assert_string_equal(p.version, "1.0.0-beta.1");
        deps_pin_str(&p, s, sizeof(s));
        assert_string_equal(s, "@scope/name@1.0.0-beta.1");
        /* with an integrity; the name is not normalised as pip's is */
        integrity('A', sri);
        snprintf(in, sizeof(in), "@scope/Name_x@2.0.0#%s", sri);
        assert_int_equal(deps_pin_parse(DEP_NPM, in, &p, &err), 0);
        assert_string_equal(p.name, "@scope/Name_x");
        assert_string_equal(p.version, "2.0.0");
        assert_string_equal(p.hash, sri);
        deps_pin_str(&p, s, sizeof(s));
        assert_string_equal(s, in);
        assert_int_equal(deps_pin_parse(DEP_NPM, s, &q, &err), 0);
        assert_memory_equal(&p, &q, sizeof(p));
        /* refused, each with a reason */
        const char *bad[] = { "left-pad", "left-pad@", "@scope@1", ".x@1", "x@^1.0.0", "x@1 ", "x@1#sha1-abc", "@/x@1",
                              "@s/@1", "", "@", "_x@1", "x@latest ", "x@1.0.0#sha512-", "x==1", "x y@1", "x@1#" };
        for (size_t i = 0; i < N(bad); i++) {
                err.msg[0] = '\0';
                assert_int_equal(deps_pin_parse(DEP_NPM, bad[i], &p, &err), -EINVAL);
                assert_true(err.msg[0] != '\0');
        }
        /* an integrity one character short, one long, one not base64, one
         * without its padding */
        char shorter[DEPS_INTEGRITY_MAX + 1];
        integrity('A', shorter);
        memmove(shorter + 92, shorter + 93, 3);
        const char *broken[] = { shorter, NULL, NULL, NULL };
        char longer[DEPS_INTEGRITY_MAX + 8], notb64[DEPS_INTEGRITY_MAX + 1], nopad[DEPS_INTEGRITY_MAX + 1];
        snprintf(longer, sizeof(longer), "sha512-A%s", sri + 7);
        integrity('A', notb64);
        notb64[50] = '-';
        integrity('A', nopad);
        memcpy(nopad + 93, "AA", 2);
        broken[1] = longer;
        broken[2] = notb64;
        broken[3] = nopad;
        for (size_t i = 0; i < N(broken); i++) {
                snprintf(in, sizeof(in), "x@1#%s", broken[i]);
                assert_int_equal(deps_pin_parse(DEP_NPM, in, &p, &err), -EINVAL);
        }
        assert_string_equal(deps_eco_name(DEP_PIP), "pip");
        assert_string_equal(deps_eco_name(DEP_NPM), "npm");
        (void) state;
}

static void test_parse_field(void **state) {
        struct sbx_error err;
        char **list = NULL;
        size_t n = 0;
        json_t *a = json_pack("[s, s]", "Foo==1", "bar==2.0");
        assert_int_equal(deps_parse_field(a, DEP_PIP, 0, &list, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_string_equal(list[0], "Foo==1");     /* as given */
        assert_string_equal(list[1], "bar==2.0");
        assert_null(list[2]);
        free_list(list);
        json_decref(a);

        /* npm, scoped */
        char sri[DEPS_INTEGRITY_MAX + 1], p1[256], p2[256];
        integrity('B', sri);
        snprintf(p1, sizeof(p1), "left-pad@1.3.0#%s", sri);
        snprintf(p2, sizeof(p2), "@s/x@1.0.0#%s", sri);
        a = json_pack("[s, s]", p1, p2);
        list = NULL;
        n = 0;
        assert_int_equal(deps_parse_field(a, DEP_NPM, 3, &list, &n, &err), 0);
        assert_int_equal(n, 2);
        assert_string_equal(list[1], p2);
        assert_null(list[2]);
        free_list(list);
        json_decref(a);

        /* refused: each case leaves what it allocated for the caller */
        struct {
                json_t *a;
                enum dep_eco eco;
                size_t others;
                const char *says;
        } bad[] = {
                { json_pack("[s, s]", "Foo.Bar==1", "foo-bar==2"), DEP_PIP, 0, "named twice" },
                { json_pack("[s, s]", "left-pad@1.0.0", "left-pad@1.0.0"), DEP_NPM, 0, "named twice" },
                { json_pack("[s, s]", p1, "@s/x@1.0.0"), DEP_NPM, 0, "on every package or on none" },
                { json_pack("[s, s]", "@s/x@1.0.0", p1), DEP_NPM, 0, "on every package or on none" },
                { json_pack("[s, s]", "a==1", "b==1#sha256=" "0000000000000000000000000000000000000000000000000000000000000000"),
                  DEP_PIP, 0, "on every package or on none" },
                { json_pack("[s, i]", "a==1", 2), DEP_PIP, 0, "expected a string" },
                { json_pack("[s, s]", "a==1", "b>=1"), DEP_PIP, 0, "pip[1]" },
                { json_pack("[s]", "a@1"), DEP_NPM, DEPS_PINS_MAX, "1 to" },
                { json_pack("[s, s]", "a@1", "b@1"), DEP_NPM, DEPS_PINS_MAX - 1, "1 to" },
                { json_array(), DEP_PIP, 0, "1 to" },
                { json_string("a==1"), DEP_PIP, 0, "1 to" },
        };
        for (size_t i = 0; i < N(bad); i++) {
                list = NULL;
                n = 0;
                err.msg[0] = '\0';
                assert_non_null(bad[i].a);
                assert_int_equal(deps_parse_field(bad[i].a, bad[i].eco, bad[i].others, &list, &n, &err), -EINVAL);
                assert_non_null(strstr(err.msg, bad[i].says));
                free_list(list);
                json_decref(bad[i].a);
        }
        /* DEPS_PINS_MAX in all is the bound, not beyond */
        a = json_array();
        for (int i = 0; i < DEPS_PINS_MAX; i++) {
                char pin[32];
                snprintf(pin, sizeof(pin), "p%d==1", i);
                json_array_append_new(a, json_string(pin));
        }
        list = NULL;
        n = 0;
        assert_int_equal(deps_parse_field(a, DEP_PIP, 0, &list, &n, &err), 0);
        assert_int_equal(n, DEPS_PINS_MAX);
        free_list(list);
        list = NULL;
        n = 0;
        assert_int_equal(deps_parse_field(a, DEP_PIP, 1, &list, &n, &err), -EINVAL);
        free_list(list);
        json_decref(a);
        (void) state;
}

static void test_pins_of(void **state) {
        char *pip[] = { "B==1", "a==2" }, *npm[] = { "@s/x@1.0.0" }, *badnpm[] = { "x@^1" };
        struct dep_pin pins[DEPS_PINS_MAX];
        struct sbx_error err;
        size_t n = 99;
        assert_int_equal(deps_pins_of(pip, 2, npm, 1, pins, &n, &err), 0);
        assert_int_equal(n, 3);
        assert_int_equal(pins[0].eco, DEP_PIP);
        assert_string_equal(pins[0].name, "b");
        assert_int_equal(pins[2].eco, DEP_NPM);
        assert_string_equal(pins[2].name, "@s/x");
        assert_int_equal(deps_pins_of(pip, 2, badnpm, 1, pins, &n, &err), -EINVAL);
        assert_int_equal(deps_pins_of(NULL, 0, NULL, 0, pins, &n, &err), 0);
        assert_int_equal(n, 0);
        (void) state;
}

static void test_allowed_pip(void **state) {
        char *allow[] = { "requests==2.*", "myorg-*", "exact==1.0" };
        struct tenant t = { .pip_allow = allow, .n_pip_allow = 3 };
        struct dep_pin p;
        struct sbx_error err;
        char buf[160];
        const char *why = NULL;
        assert_int_equal(deps_pin_parse(DEP_PIP, "requests==2.31.0", &p, &err), 0);
        assert_true(deps_allowed(&t, DEP_PIP, p.name, p.version, buf, sizeof(buf), &why));
        assert_int_equal(deps_pin_parse(DEP_PIP, "requests==3.0", &p, &err), 0);
        assert_false(deps_allowed(&t, DEP_PIP, p.name, p.version, buf, sizeof(buf), &why));
        assert_string_equal(why, "version 3.0 is not one the tenant's pip_allow admits for requests");
        assert_int_equal(deps_pin_parse(DEP_PIP, "MyOrg_tools==9", &p, &err), 0);
        assert_true(deps_allowed(&t, DEP_PIP, p.name, p.version, buf, sizeof(buf), &why));
        assert_int_equal(deps_pin_parse(DEP_PIP, "exact==1.0.1", &p, &err), 0);
        assert_false(deps_allowed(&t, DEP_PIP, p.name, p.version, buf, sizeof(buf), &why));
        assert_int_equal(deps_pin_parse(DEP_PIP, "exact==1.0", &p, &err), 0);
        assert_true(deps_allowed(&t, DEP_PIP, p.name, p.version, buf, sizeof(buf), &why));
        assert_int_equal(deps_pin_parse(DEP_PIP, "reqeusts==2.31.0", &p, &err), 0);
        why = NULL;
        assert_false(deps_allowed(&t, DEP_PIP, p.name, p.version, buf, sizeof(buf), &why));
        assert_string_equal(why, "not in the tenant's pip_allow");
        /* pip's list says nothing of npm's packages */
        why = NULL;
        assert_false(deps_allowed(&t, DEP_NPM, "requests", "2.31.0", buf, sizeof(buf), &why));
        assert_non_null(strstr(why, "npm_allow"));
        (void) state;
}

static void test_allowed_npm(void **state) {
        char *allow[] = { "left-pad@1.*", "@myorg/*", "exact@1.0.0", "@bad@" };
        char *pip_allow[] = { "*" };
        struct tenant t = { .npm_allow = allow, .n_npm_allow = 4, .pip_allow = pip_allow, .n_pip_allow = 1 };
        char buf[200];
        const char *why = NULL;
        assert_true(deps_allowed(&t, DEP_NPM, "left-pad", "1.3.0", buf, sizeof(buf), &why));
        why = NULL;
        assert_false(deps_allowed(&t, DEP_NPM, "left-pad", "2.0.0", buf, sizeof(buf), &why));
        assert_non_null(why);
        assert_string_equal(why, "version 2.0.0 is not one the tenant's npm_allow admits for left-pad");
        assert_true(deps_allowed(&t, DEP_NPM, "@myorg/tools", "9.9.9", buf, sizeof(buf), &why));
        assert_true(deps_allowed(&t, DEP_NPM, "@myorg/a.b", "0.0.1-rc.1", buf, sizeof(buf), &why));
        why = NULL;
        assert_false(deps_allowed(&t, DEP_NPM, "@other/tools", "1.0.0", buf, sizeof(buf), &why));
        assert_string_equal(why, "not in the tenant's npm_allow");
        why = NULL;
        assert_false(deps_allowed(&t, DEP_NPM, "myorg", "1.0.0", buf, sizeof(buf), &why));
        assert_non_null(strstr(why, "npm_allow"));
        assert_true(deps_allowed(&t, DEP_NPM, "exact", "1.0.0", buf, sizeof(buf), &why));
        why = NULL;
        assert_false(deps_allowed(&t, DEP_NPM, "exact", "1.0.1", buf, sizeof(buf), &why));
        assert_non_null(strstr(why, "npm_allow"));
        assert_non_null(strstr(why, "1.0.1"));
        why = NULL;
        assert_false(deps_allowed(&t, DEP_NPM, "unlisted", "1.0.0", buf, sizeof(buf), &why));
        assert_string_equal(why, "not in the tenant's npm_allow");
        /* npm's list does not admit pip's packages, nor pip's npm's */
        struct tenant only_npm = { .npm_allow = allow, .n_npm_allow = 4 };
        why = NULL;
        assert_false(deps_allowed(&only_npm, DEP_PIP, "left-pad", "1.3.0", buf, sizeof(buf), &why));
        assert_string_equal(why, "not in the tenant's pip_allow");
        assert_true(deps_allowed(&t, DEP_PIP, "left-pad", "1.3.0", buf, sizeof(buf), &why));
        /* an empty list admits nothing */
        struct tenant none = { 0 };
        why = NULL;
        assert_false(deps_allowed(&none, DEP_NPM, "left-pad", "1.3.0", buf, sizeof(buf), &why));
        assert_string_equal(why, "not in the tenant's npm_allow");
        (void) state;
}

static void test_npm_allow_split(void **state) {
        char name[DEPS_NAME_MAX + 1];
        const char *v = "unset";
        assert_int_equal(deps_npm_allow_split("left-pad@1.*", name, sizeof(name), &v), 0);
        assert_string_equal(name, "left-pad");
        assert_string_equal(v, "1.*");
        v = "unset";
        assert_int_equal(deps_npm_allow_split("@myorg/*", name, sizeof(name), &v), 0);
        assert_string_equal(name, "@myorg/*");
        assert_null(v);
        assert_int_equal(deps_npm_allow_split("@myorg/x@2.0.0", name, sizeof(name), &v), 0);
        assert_string_equal(name, "@myorg/x");
        assert_string_equal(v, "2.0.0");
        v = "unset";
        assert_int_equal(deps_npm_allow_split("plain", name, sizeof(name), &v), 0);
        assert_string_equal(name, "plain");
        assert_null(v);
        assert_int_equal(deps_npm_allow_split("", name, sizeof(name), &v), -EINVAL);
        assert_int_equal(deps_npm_allow_split("x@", name, sizeof(name), &v), -EINVAL);
        assert_int_equal(deps_npm_allow_split("@s/x@", name, sizeof(name), &v), -EINVAL);
        /* a name that does not fit */
        char small[4];
        assert_int_equal(deps_npm_allow_split("long-name@1", small, sizeof(small), &v), -EINVAL);
        assert_int_equal(deps_npm_allow_split("abc@1", small, sizeof(small), &v), 0);
        assert_string_equal(small, "abc");
        (void) state;
}

static void test_key(void **state) {
        struct dep_pin a[3], b[3], c[3];
        struct sbx_error err;
        char k1[DEPS_KEY_HEX + 1], k2[DEPS_KEY_HEX + 1];
        const char *ix = "http://i/simple/", *rg = "http://r/";
        assert_int_equal(deps_pin_parse(DEP_PIP, "a==1", &a[0], &err), 0);
        assert_int_equal(deps_pin_parse(DEP_PIP, "b==2", &a[1], &err), 0);
        assert_int_equal(deps_pin_parse(DEP_NPM, "a@1.0.0", &a[2], &err), 0);
        /* order-independent, npm's "a" sorted apart from pip's */
        b[0] = a[2];
        b[1] = a[1];
        b[2] = a[0];
        deps_key(ix, rg, "python3.11", false, a, 3, k1);
        deps_key(ix, rg, "python3.11", false, b, 3, k2);
        assert_string_equal(k1, k2);
        assert_int_equal(strlen(k1), DEPS_KEY_HEX);
        assert_int_equal(strspn(k1, "0123456789abcdef"), DEPS_KEY_HEX);
        /* each input counts, when it is used */
        deps_key("http://j/simple/", rg, "python3.11", false, a, 3, k2);
        assert_string_not_equal(k1, k2);
        deps_key(ix, "http://s/", "python3.11", false, a, 3, k2);
        assert_string_not_equal(k1, k2);
        deps_key(ix, rg, "python3.12", false, a, 3, k2);
        assert_string_not_equal(k1, k2);
        deps_key(ix, rg, "python3.11", true, a, 3, k2);
        assert_string_not_equal(k1, k2);
        deps_key(ix, rg, "python3.11", false, a, 2, k2);
        assert_string_not_equal(k1, k2);
        c[0] = a[0];
        c[1] = a[1];
        assert_int_equal(deps_pin_parse(DEP_NPM, "a@1.0.1", &c[2], &err), 0);
        deps_key(ix, rg, "python3.11", false, c, 3, k2);
        assert_string_not_equal(k1, k2);
        /* the same name and version in the other ecosystem is another key */
        assert_int_equal(deps_pin_parse(DEP_PIP, "a==1", &c[0], &err), 0);
        assert_int_equal(deps_pin_parse(DEP_NPM, "a@1", &c[1], &err), 0);
        deps_key(ix, rg, "python3.11", false, c, 1, k1);
        deps_key(ix, rg, "python3.11", false, c + 1, 1, k2);
        assert_string_not_equal(k1, k2);
        /* a hash counts */
        char h[128];
        snprintf(h, sizeof(h), "a==1#sha256=%064d", 0);
        assert_int_equal(deps_pin_parse(DEP_PIP, h, &c[2], &err), 0);
        deps_key(ix, rg, "python3.11", false, c, 1, k1);
        deps_key(ix, rg, "python3.11", false, c + 2, 1, k2);
        assert_string_not_equal(k1, k2);

        /* pip only: the registry does not count (nor does its absence) */
        deps_key(ix, rg, "python3.11", false, a, 2, k1);
        deps_key(ix, "http://s/", "python3.11", false, a, 2, k2);
        assert_string_equal(k1, k2);
        deps_key(ix, NULL, "python3.11", false, a, 2, k2);
        assert_string_equal(k1, k2);
        deps_key("http://j/simple/", rg, "python3.11", false, a, 2, k2);
        assert_string_not_equal(k1, k2);
        deps_key(ix, rg, "python3.12", false, a, 2, k2);
        assert_string_not_equal(k1, k2);
        deps_key(ix, rg, "python3.11", true, a, 2, k2);
        assert_string_not_equal(k1, k2);
        /* npm only: neither the index nor the Python counts */
        deps_key(ix, rg, "python3.11", false, a + 2, 1, k1);
        deps_key("http://j/simple/", rg, "python3.12", false, a + 2, 1, k2);
        assert_string_equal(k1, k2);
        deps_key(NULL, rg, NULL, false, a + 2, 1, k2);
        assert_string_equal(k1, k2);
        deps_key(ix, "http://s/", "python3.11", false, a + 2, 1, k2);
        assert_string_not_equal(k1, k2);
        deps_key(ix, rg, "python3.11", true, a + 2, 1, k2);
        assert_string_not_equal(k1, k2);
        (void) state;
}

static void test_check_url(void **state) {
        struct sbx_error err;
        assert_int_equal(deps_check_url("http://10.0.0.1:8080/simple/", &err), 0);
        assert_int_equal(deps_check_url("https://registry.npmjs.org/", &err), 0);
        assert_int_equal(deps_check_url("https://[2001:db8::1]/simple/", &err), 0);
        const char *bad[] = { "ftp://x/simple/", "http://u:p@x/simple/", "http://x", "http://x:0/s/", "http:///s/",
                              "https://[::1/s/", "x", "" };
        for (size_t i = 0; i < N(bad); i++) {
                err.msg[0] = '\0';
                assert_int_equal(deps_check_url(bad[i], &err), -EINVAL);
                assert_true(err.msg[0] != '\0');
        }
        (void) state;
}

static void test_request_pip(void **state) {
        struct dep_pin p;
        struct sbx_error err;
        assert_int_equal(deps_pin_parse(DEP_PIP, "a==1", &p, &err), 0);
        /* npm's registry is not used (not even checked) without npm pins */
        json_t *r = deps_install_request("http://10.0.0.1:8080/simple/", "not a url", &p, 1, 5000, 1 << 20, &err);
        assert_non_null(r);
        json_t *cmd = json_object_get(r, "command"), *allow = allow_of(r);
        assert_string_equal(json_string_value(json_array_get(cmd, 0)), "python3");
        assert_string_equal(json_string_value(json_array_get(cmd, 1)), "-m");
        assert_string_equal(json_string_value(json_array_get(cmd, 2)), "pip");
        assert_string_equal(json_string_value(json_array_get(cmd, 3)), "install");
        long t = index_of(cmd, "--target");
        assert_true(t > 0);
        assert_string_equal(json_string_value(json_array_get(cmd, (size_t) t + 1)), "/workspace/layer/pip");
        assert_int_equal(json_array_size(allow), 1);
        assert_string_equal(json_string_value(json_array_get(allow, 0)), "10.0.0.1:8080");
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "network"), "mode")), "restricted");
        assert_int_equal(json_integer_value(json_object_get(r, "timeout_ms")), 5000);
        assert_true(index_of(json_object_get(r, "artifacts"), "report.json") >= 0);
        assert_true(index_of(json_object_get(r, "artifacts"), "layer/*") >= 0);
        assert_false(has_file(r, "tmp/npmrc"));
        assert_true(index_of(cmd, "npm") < 0);
        char *s = json_dumps(cmd, JSON_COMPACT);
        assert_non_null(strstr(s, "\"--only-binary\",\":all:\""));
        assert_non_null(strstr(s, "\"--no-deps\""));
        assert_non_null(strstr(s, "\"--index-url\",\"http://10.0.0.1:8080/simple/\""));
        assert_non_null(strstr(s, "\"--trusted-host\",\"10.0.0.1:8080\""));
        assert_non_null(strstr(s, "\"a==1\""));
        assert_null(strstr(s, "--require-hashes"));
        free(s);
        json_decref(r);
        /* https: the default port, no --trusted-host; IPv6 */
        r = deps_install_request("https://[2001:db8::1]/simple/", NULL, &p, 1, 5000, 1 << 20, &err);
        assert_non_null(r);
        allow = allow_of(r);
        assert_string_equal(json_string_value(json_array_get(allow, 0)), "[2001:db8::1]:443");
        s = json_dumps(json_object_get(r, "command"), JSON_COMPACT);
        assert_null(strstr(s, "trusted-host"));
        free(s);
        json_decref(r);
        /* with hashes: a requirements file, --require-hashes */
        char h[128];
        snprintf(h, sizeof(h), "a==1#sha256=%064d", 0);
        assert_int_equal(deps_pin_parse(DEP_PIP, h, &p, &err), 0);
        r = deps_install_request("https://i/simple/", NULL, &p, 1, 5000, 1 << 20, &err);
        assert_non_null(r);
        cmd = json_object_get(r, "command");
        assert_true(index_of(cmd, "--require-hashes") > 0);
        assert_true(index_of(cmd, "a==1") < 0);
        assert_true(has_file(r, "requirements.txt"));
        json_decref(r);
        /* bad indexes, and none */
        const char *bad[] = { "ftp://x/simple/", "http://u:p@x/simple/", "http://x", "http://x:0/s/", "http:///s/", "https://[::1/s/" };
        for (size_t i = 0; i < N(bad); i++) {
                err.msg[0] = '\0';
                assert_null(deps_install_request(bad[i], "https://r/", &p, 1, 5000, 1 << 20, &err));
                assert_true(err.msg[0] != '\0');
        }
        err.msg[0] = '\0';
        assert_null(deps_install_request(NULL, "https://r/", &p, 1, 5000, 1 << 20, &err));
        assert_non_null(strstr(err.msg, "pip_index"));
        (void) state;
}

static void test_request_npm(void **state) {
        struct dep_pin p[2];
        struct sbx_error err;
        assert_int_equal(deps_pin_parse(DEP_NPM, "left-pad@1.3.0", &p[0], &err), 0);
        assert_int_equal(deps_pin_parse(DEP_NPM, "@s/x@1.0.0-beta.1", &p[1], &err), 0);
        /* pip's index is not used without pip pins */
        json_t *r = deps_install_request(NULL, "http://10.0.0.2:4873/", p, 2, 7000, 1 << 20, &err);
        assert_non_null(r);
        json_t *cmd = json_object_get(r, "command"), *allow = allow_of(r);
        assert_string_equal(json_string_value(json_array_get(cmd, 0)), "npm");
        assert_string_equal(json_string_value(json_array_get(cmd, 1)), "install");
        assert_true(index_of(cmd, "--ignore-scripts") > 1);
        assert_true(index_of(cmd, "left-pad@1.3.0") > 1);
        assert_true(index_of(cmd, "@s/x@1.0.0-beta.1") > 1);
        long i = index_of(cmd, "--registry");
        assert_true(i > 1);
        assert_string_equal(json_string_value(json_array_get(cmd, (size_t) i + 1)), "http://10.0.0.2:4873/");
        i = index_of(cmd, "--prefix");
        assert_true(i > 1);
        assert_string_equal(json_string_value(json_array_get(cmd, (size_t) i + 1)), "/workspace/layer/npm");
        assert_true(index_of(cmd, "python3") < 0);
        assert_true(has_file(r, "tmp/npmrc"));
        assert_int_equal(json_array_size(allow), 1);
        assert_string_equal(json_string_value(json_array_get(allow, 0)), "10.0.0.2:4873");
        assert_true(index_of(json_object_get(r, "artifacts"), "report.json") < 0);
        assert_true(index_of(json_object_get(r, "artifacts"), "layer/*") >= 0);
        json_decref(r);
        /* bad registries, and none */
        const char *bad[] = { "ftp://r/", "http://u@r/", "https://r", "http://r:99999/" };
        for (size_t k = 0; k < N(bad); k++) {
                err.msg[0] = '\0';
                assert_null(deps_install_request("https://i/simple/", bad[k], p, 2, 5000, 1 << 20, &err));
                assert_true(err.msg[0] != '\0');
        }
        err.msg[0] = '\0';
        assert_null(deps_install_request("https://i/simple/", NULL, p, 2, 5000, 1 << 20, &err));
        assert_non_null(strstr(err.msg, "npm_registry"));
        (void) state;
}

static void test_request_both(void **state) {
        struct dep_pin p[2];
        struct sbx_error err;
        assert_int_equal(deps_pin_parse(DEP_PIP, "a==1", &p[0], &err), 0);
        assert_int_equal(deps_pin_parse(DEP_NPM, "left-pad@1.3.0", &p[1], &err), 0);
        json_t *r = deps_install_request("http://10.0.0.1:8080/simple/", "https://registry.example/", p, 2, 5000, 1 << 20, &err);
        assert_non_null(r);
        json_t *cmd = json_object_get(r, "command"), *allow = allow_of(r);
        assert_int_equal(json_array_size(cmd), 3);
        assert_string_equal(json_string_value(json_array_get(cmd, 0)), "/bin/sh");
        assert_string_equal(json_string_value(json_array_get(cmd, 1)), "-ec");
        const char *script = json_string_value(json_array_get(cmd, 2));
        assert_non_null(script);
        const char *pip = strstr(script, "'python3' '-m' 'pip' 'install'");
        const char *and = strstr(script, " && ");
        const char *npm = strstr(script, "'npm' 'install'");
        assert_non_null(pip);
        assert_non_null(and);
        assert_non_null(npm);
        assert_true(pip < and && and < npm);
        assert_non_null(strstr(script, "'a==1'"));
        assert_non_null(strstr(script, "'left-pad@1.3.0'"));
        assert_non_null(strstr(script, "'--ignore-scripts'"));
        assert_int_equal(json_array_size(allow), 2);
        assert_true(index_of(allow, "10.0.0.1:8080") >= 0);
        assert_true(index_of(allow, "registry.example:443") >= 0);
        assert_true(has_file(r, "tmp/npmrc"));
        assert_true(index_of(json_object_get(r, "artifacts"), "report.json") >= 0);
        json_decref(r);
        /* one host for both: allowed once */
        r = deps_install_request("https://h/pypi/simple/", "https://h/npm/", p, 2, 5000, 1 << 20, &err);
        assert_non_null(r);
        assert_int_equal(json_array_size(allow_of(r)), 1);
        assert_string_equal(json_string_value(json_array_get(allow_of(r), 0)), "h:443");
        json_decref(r);
        /* a word with a quote is quoted in the script */
        assert_non_null(r = deps_install_request("https://h/it's/", "https://h/npm/", p, 2, 5000, 1 << 20, &err));
        assert_non_null(strstr(json_string_value(json_array_get(json_object_get(r, "command"), 2)), "'https://h/it'\\''s/'"));
        json_decref(r);
        /* either URL bad */
        assert_null(deps_install_request("ftp://i/", "https://r/", p, 2, 5000, 1 << 20, &err));
        assert_null(deps_install_request("https://i/", "ftp://r/", p, 2, 5000, 1 << 20, &err));
        assert_null(deps_install_request("https://i/", NULL, p, 2, 5000, 1 << 20, &err));
        (void) state;
}

static json_t *report_of(const char *name, const char *version, const char *sha) {
        return json_pack("{s:[{s:{s:s, s:s}, s:{s:s, s:{s:{s:s}}}}]}", "install", "metadata", "name", name, "version", version,
                         "download_info", "url", "http://i/files/x.whl", "archive_info", "hashes", "sha256", sha);
}

static void test_lock_pip(void **state) {
        struct dep_pin p;
        struct sbx_error err;
        char sha[65];
        memset(sha, 'a', 64);
        sha[64] = '\0';
        assert_int_equal(deps_pin_parse(DEP_PIP, "Foo.Bar==1.0", &p, &err), 0);
        json_t *rep = report_of("foo_bar", "1.0", sha);
        json_t *lock = deps_lock_make(rep, NULL, &p, 1, &err);
        assert_non_null(lock);
        assert_int_equal(json_array_size(lock), 1);
        json_t *e = json_array_get(lock, 0);
        assert_string_equal(json_string_value(json_object_get(e, "ecosystem")), "pip");
        assert_string_equal(json_string_value(json_object_get(e, "name")), "foo-bar");
        assert_string_equal(json_string_value(json_object_get(e, "version")), "1.0");
        assert_string_equal(json_string_value(json_object_get(e, "url")), "http://i/files/x.whl");
        assert_string_equal(json_string_value(json_object_get(e, "sha256")), sha);
        assert_null(json_object_get(e, "integrity"));
        json_decref(lock);
        json_decref(rep);
        /* another version, another package, a bad hash, a pinned hash not met */
        rep = report_of("foo_bar", "1.1", sha);
        assert_null(deps_lock_make(rep, NULL, &p, 1, &err));
        json_decref(rep);
        rep = report_of("evil", "1.0", sha);
        err.msg[0] = '\0';
        assert_null(deps_lock_make(rep, NULL, &p, 1, &err));
        assert_non_null(strstr(err.msg, "not asked for"));
        json_decref(rep);
        rep = report_of("foo_bar", "1.0", "zz");
        assert_null(deps_lock_make(rep, NULL, &p, 1, &err));
        json_decref(rep);
        char pin[128];
        snprintf(pin, sizeof(pin), "foo-bar==1.0#sha256=%064d", 0);
        assert_int_equal(deps_pin_parse(DEP_PIP, pin, &p, &err), 0);
        rep = report_of("foo_bar", "1.0", sha);
        assert_null(deps_lock_make(rep, NULL, &p, 1, &err));
        assert_non_null(strstr(err.msg, "not a pinned one"));
        json_decref(rep);
        /* the pinned hash met */
        rep = report_of("foo_bar", "1.0", p.hash);
        assert_non_null(lock = deps_lock_make(rep, NULL, &p, 1, &err));
        json_decref(lock);
        /* the pin twice in the report */
        json_array_append(json_object_get(rep, "install"), json_array_get(json_object_get(rep, "install"), 0));
        assert_null(deps_lock_make(rep, NULL, &p, 1, &err));
        json_decref(rep);
        /* nothing installed, no report */
        rep = json_pack("{s:[]}", "install");
        assert_null(deps_lock_make(rep, NULL, &p, 1, &err));
        json_decref(rep);
        assert_null(deps_lock_make(NULL, NULL, &p, 1, &err));
        (void) state;
}

/* npm's package-lock.json: "packages" of path -> {version, resolved, integrity} */
static json_t *npm_lock_new(void) {
        return json_pack("{s:s, s:i, s:{s:{s:s}}}", "name", "layer", "lockfileVersion", 3, "packages", "", "name", "layer");
}

static void npm_lock_add(json_t *lock, const char *path, const char *version, const char *integrity) {
        char url[512];
        snprintf(url, sizeof(url), "https://r/%s/-/%s.tgz", path, version);
        json_t *v = json_pack("{s:s, s:s, s:s}", "version", version, "resolved", url, "integrity", integrity);
        assert_non_null(v);
        assert_int_equal(json_object_set_new(json_object_get(lock, "packages"), path, v), 0);
}

static const char *field(json_t *lock, size_t i, const char *key) {
        return json_string_value(json_object_get(json_array_get(lock, i), key));
}

/* the entry of lock named name, or NULL */
static json_t *entry_named(json_t *lock, const char *name) {
        json_t *e;
        size_t i;
        json_array_foreach(lock, i, e) {
                const char *n = json_string_value(json_object_get(e, "name"));
                if (n && strcmp(n, name) == 0)
                        return e;
        }
        return NULL;
}

static void test_lock_npm(void **state) {
        struct dep_pin p[3];
        struct sbx_error err;
        char ia[DEPS_INTEGRITY_MAX + 1], ib[DEPS_INTEGRITY_MAX + 1], ic[DEPS_INTEGRITY_MAX + 1], pin[256];
        integrity('A', ia);
        integrity('B', ib);
        integrity('C', ic);
        /* pins without integrities: a dependency is accepted */
        assert_int_equal(deps_pin_parse(DEP_NPM, "left-pad@1.3.0", &p[0], &err), 0);
        json_t *nl = npm_lock_new(), *lock;
        npm_lock_add(nl, "node_modules/left-pad", "1.3.0", ia);
        npm_lock_add(nl, "node_modules/dep", "2.0.0", ib);
        assert_non_null(lock = deps_lock_make(NULL, nl, p, 1, &err));
        assert_int_equal(json_array_size(lock), 2);
        for (size_t i = 0; i < 2; i++)
                assert_string_equal(field(lock, i, "ecosystem"), "npm");
        json_t *e = entry_named(lock, "left-pad");
        assert_non_null(e);
        assert_string_equal(json_string_value(json_object_get(e, "version")), "1.3.0");
        assert_string_equal(json_string_value(json_object_get(e, "url")), "https://r/node_modules/left-pad/-/1.3.0.tgz");
        assert_string_equal(json_string_value(json_object_get(e, "integrity")), ia);
        assert_null(json_object_get(e, "sha256"));
        e = entry_named(lock, "dep");
        assert_non_null(e);
        assert_string_equal(json_string_value(json_object_get(e, "version")), "2.0.0");
        assert_string_equal(json_string_value(json_object_get(e, "integrity")), ib);
        json_decref(lock);

        /* with integrity pins, the unpinned dependency is refused */
        snprintf(pin, sizeof(pin), "left-pad@1.3.0#%s", ia);
        assert_int_equal(deps_pin_parse(DEP_NPM, pin, &p[0], &err), 0);
        err.msg[0] = '\0';
        assert_null(deps_lock_make(NULL, nl, p, 1, &err));
        assert_non_null(strstr(err.msg, "dep@2.0.0"));
        /* pinned too, it is accepted */
        snprintf(pin, sizeof(pin), "dep@2.0.0#%s", ib);
        assert_int_equal(deps_pin_parse(DEP_NPM, pin, &p[1], &err), 0);
        assert_non_null(lock = deps_lock_make(NULL, nl, p, 2, &err));
        assert_int_equal(json_array_size(lock), 2);
        json_decref(lock);
        /* a pin with another integrity */
        snprintf(pin, sizeof(pin), "dep@2.0.0#%s", ic);
        assert_int_equal(deps_pin_parse(DEP_NPM, pin, &p[1], &err), 0);
        err.msg[0] = '\0';
        assert_null(deps_lock_make(NULL, nl, p, 2, &err));
        assert_non_null(strstr(err.msg, "not the pinned one"));
        json_decref(nl);

        /* a pin missing from the lock, or there at another version */
        assert_int_equal(deps_pin_parse(DEP_NPM, "left-pad@1.3.0", &p[0], &err), 0);
        assert_int_equal(deps_pin_parse(DEP_NPM, "other@1.0.0", &p[1], &err), 0);
        nl = npm_lock_new();
        npm_lock_add(nl, "node_modules/left-pad", "1.3.0", ia);
        err.msg[0] = '\0';
        assert_null(deps_lock_make(NULL, nl, p, 2, &err));
        assert_non_null(strstr(err.msg, "other@1.0.0"));
        npm_lock_add(nl, "node_modules/other", "1.0.1", ib);
        assert_null(deps_lock_make(NULL, nl, p, 2, &err));
        json_decref(nl);

        /* a link, a path outside node_modules, an entry without a version,
         * URL or integrity, a name that is not one */
        struct {
                const char *path;
                const char *extra;      /* a key set to true, or NULL */
                const char *drop;       /* a key removed, or NULL */
        } bad[] = {
                { "node_modules/left-pad", "link", NULL },
                { "lib/left-pad", NULL, NULL },
                { "../node_modules/left-pad", NULL, NULL },
                { "node_modules/left-pad", NULL, "version" },
                { "node_modules/left-pad", NULL, "resolved" },
                { "node_modules/left-pad", NULL, "integrity" },
                { "node_modules/.bin", NULL, NULL },
                { "node_modules/", NULL, NULL },
        };
        for (size_t i = 0; i < N(bad); i++) {
                nl = npm_lock_new();
                npm_lock_add(nl, bad[i].path, "1.3.0", ia);
                if (strcmp(bad[i].path, "node_modules/left-pad") != 0)
                        npm_lock_add(nl, "node_modules/left-pad", "1.3.0", ia);
                json_t *v = json_object_get(json_object_get(nl, "packages"), bad[i].path);
                if (bad[i].extra)
                        json_object_set_new(v, bad[i].extra, json_true());
                if (bad[i].drop)
                        json_object_del(v, bad[i].drop);
                err.msg[0] = '\0';
                lock = deps_lock_make(NULL, nl, p, 1, &err);
                if (lock)
                        fail_msg("lock case %zu (%s) accepted", i, bad[i].path);
                assert_true(err.msg[0] != '\0');
                json_decref(nl);
        }
        /* an alias: under left-pad's name, another package */
        nl = npm_lock_new();
        npm_lock_add(nl, "node_modules/left-pad", "1.3.0", ia);
        json_object_set_new(json_object_get(json_object_get(nl, "packages"), "node_modules/left-pad"), "name", json_string("evil"));
        err.msg[0] = '\0';
        assert_null(deps_lock_make(NULL, nl, p, 1, &err));
        assert_non_null(strstr(err.msg, "alias of evil"));
        json_decref(nl);
        /* its own name is no alias */
        nl = npm_lock_new();
        npm_lock_add(nl, "node_modules/left-pad", "1.3.0", ia);
        json_object_set_new(json_object_get(json_object_get(nl, "packages"), "node_modules/left-pad"), "name", json_string("left-pad"));
        assert_non_null(lock = deps_lock_make(NULL, nl, p, 1, &err));
        json_decref(lock);
        json_decref(nl);
        /* a pin installed twice at its version (nested) */
        nl = npm_lock_new();
        npm_lock_add(nl, "node_modules/left-pad", "1.3.0", ia);
        npm_lock_add(nl, "node_modules/x/node_modules/left-pad", "1.3.0", ia);
        assert_non_null(lock = deps_lock_make(NULL, nl, p, 1, &err));
        assert_int_equal(json_array_size(lock), 2);
        json_decref(lock);
        json_decref(nl);
        /* "link": false is no link */
        nl = npm_lock_new();
        npm_lock_add(nl, "node_modules/left-pad", "1.3.0", ia);
        json_object_set_new(json_object_get(json_object_get(nl, "packages"), "node_modules/left-pad"), "link", json_false());
        assert_non_null(lock = deps_lock_make(NULL, nl, p, 1, &err));
        json_decref(lock);
        json_decref(nl);
        /* no packages at all */
        nl = json_pack("{s:i}", "lockfileVersion", 3);
        assert_null(deps_lock_make(NULL, nl, p, 1, &err));
        json_decref(nl);
        assert_null(deps_lock_make(NULL, NULL, p, 1, &err));

        /* nested and scoped paths: the name is what follows the last
         * node_modules/ */
        assert_int_equal(deps_pin_parse(DEP_NPM, "a@1.0.0", &p[0], &err), 0);
        assert_int_equal(deps_pin_parse(DEP_NPM, "@s/x@2.0.0", &p[1], &err), 0);
        nl = npm_lock_new();
        npm_lock_add(nl, "node_modules/a", "1.0.0", ia);
        npm_lock_add(nl, "node_modules/a/node_modules/b", "3.0.0", ib);
        npm_lock_add(nl, "node_modules/@s/x", "2.0.0", ic);
        npm_lock_add(nl, "node_modules/@s/x/node_modules/@t/y", "4.0.0", ic);
        assert_non_null(lock = deps_lock_make(NULL, nl, p, 2, &err));
        assert_int_equal(json_array_size(lock), 4);
        assert_non_null(e = entry_named(lock, "b"));
        assert_string_equal(json_string_value(json_object_get(e, "version")), "3.0.0");
        assert_non_null(e = entry_named(lock, "@s/x"));
        assert_string_equal(json_string_value(json_object_get(e, "version")), "2.0.0");
        assert_non_null(entry_named(lock, "@t/y"));
        assert_non_null(entry_named(lock, "a"));
        assert_null(entry_named(lock, "a/node_modules/b"));
        json_decref(lock);
        json_decref(nl);

        /* both: pip's report and npm's lock in one */
        char sha[65];
        memset(sha, 'f', 64);
        sha[64] = '\0';
        assert_int_equal(deps_pin_parse(DEP_PIP, "foo==1.0", &p[2], &err), 0);
        json_t *rep = report_of("foo", "1.0", sha);
        nl = npm_lock_new();
        npm_lock_add(nl, "node_modules/a", "1.0.0", ia);
        npm_lock_add(nl, "node_modules/@s/x", "2.0.0", ic);
        assert_non_null(lock = deps_lock_make(rep, nl, p, 3, &err));
        assert_int_equal(json_array_size(lock), 3);
        assert_string_equal(json_string_value(json_object_get(entry_named(lock, "foo"), "ecosystem")), "pip");
        assert_string_equal(json_string_value(json_object_get(entry_named(lock, "a"), "ecosystem")), "npm");
        json_decref(lock);
        /* either one missing */
        assert_null(deps_lock_make(NULL, nl, p, 3, &err));
        assert_null(deps_lock_make(rep, NULL, p, 3, &err));
        json_decref(rep);
        json_decref(nl);
        (void) state;
}

static json_t *entry(const char *eco, const char *name, const char *version) {
        return json_pack("{s:s, s:s, s:s, s:s}", "ecosystem", eco, "name", name, "version", version, "url", "https://x/");
}

static void test_lock_admit(void **state) {
        char *pip_allow[] = { "requests==2.*" }, *npm_allow[] = { "left-pad@1.*", "@myorg/*" };
        struct tenant t = { .name = "acme", .pip_allow = pip_allow, .n_pip_allow = 1, .npm_allow = npm_allow, .n_npm_allow = 2 };
        char msg[SBX_ERROR_MAX];
        int64_t now = 1700000000;
        json_t *lock = json_pack("[o, o, o]", entry("pip", "requests", "2.31.0"), entry("npm", "left-pad", "1.3.0"),
                                 entry("npm", "@myorg/tools", "0.1.0"));
        assert_non_null(lock);
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), 0);
        /* an empty lock is admitted */
        json_t *empty = json_array();
        assert_int_equal(deps_lock_admit(&t, empty, now, msg, sizeof(msg)), 0);
        json_decref(empty);

        /* one package off the list */
        json_array_append_new(lock, entry("npm", "evil", "6.6.6"));
        msg[0] = '\0';
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), -EPERM);
        assert_non_null(strstr(msg, "acme"));
        assert_non_null(strstr(msg, "npm evil@6.6.6"));
        assert_non_null(strstr(msg, "npm_allow"));
        assert_null(strstr(msg, "left-pad"));
        /* another tenant's lists: pip's version outside too */
        char *pip_allow3[] = { "requests==3.*" };
        struct tenant u = { .name = "other", .pip_allow = pip_allow3, .n_pip_allow = 1, .npm_allow = npm_allow, .n_npm_allow = 2 };
        msg[0] = '\0';
        assert_int_equal(deps_lock_admit(&u, lock, now, msg, sizeof(msg)), -EPERM);
        assert_non_null(strstr(msg, "pip requests==2.31.0"));
        assert_non_null(strstr(msg, "pip_allow"));
        assert_non_null(strstr(msg, "npm evil@6.6.6"));
        /* a small buffer still ends in a string */
        char small[24];
        assert_int_equal(deps_lock_admit(&u, lock, now, small, sizeof(small)), -EPERM);
        assert_true(strlen(small) < sizeof(small));
        json_decref(lock);

        /* an entry that does not say what it is */
        lock = json_pack("[{s:s, s:s}]", "ecosystem", "npm", "name", "left-pad");
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), -EPERM);
        json_decref(lock);

        /* deps_min_age: a day */
        t.deps_min_age_ms = 86400 * 1000ull;
        lock = json_pack("[o]", entry("npm", "left-pad", "1.3.0"));
        msg[0] = '\0';
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), -EPERM);
        assert_non_null(strstr(msg, "left-pad@1.3.0"));
        assert_non_null(strstr(msg, "deps_min_age"));
        json_object_set_new(json_array_get(lock, 0), "published", json_integer(now - 3600));
        msg[0] = '\0';
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), -EPERM);
        assert_non_null(strstr(msg, "left-pad@1.3.0"));
        assert_non_null(strstr(msg, "deps_min_age"));
        assert_non_null(strstr(msg, "published 2023-11-14T"));
        json_object_set_new(json_array_get(lock, 0), "published", json_integer(now - 86400 - 1));
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), 0);
        json_object_set_new(json_array_get(lock, 0), "published", json_integer(now - 86400));
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), 0);
        /* a time that is not a number is not known */
        json_object_set_new(json_array_get(lock, 0), "published", json_string("2020-01-01T00:00:00Z"));
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), -EPERM);
        /* without deps_min_age, the time does not matter */
        t.deps_min_age_ms = 0;
        json_object_set_new(json_array_get(lock, 0), "published", json_integer(now));
        assert_int_equal(deps_lock_admit(&t, lock, now, msg, sizeof(msg)), 0);
        json_decref(lock);
        (void) state;
}

static void test_meta_url(void **state) {
        char buf[256];
        json_t *e = entry("pip", "Foo_Bar.baz", "1.0");
        assert_int_equal(deps_meta_url("https://i/simple/", NULL, e, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "https://i/simple/foo-bar-baz/");
        assert_int_equal(deps_meta_url("https://i/simple", NULL, e, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "https://i/simple/foo-bar-baz/");
        assert_int_equal(deps_meta_url(NULL, "https://r/", e, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(deps_meta_url("ftp://i/simple/", NULL, e, buf, sizeof(buf)), -EINVAL);
        char tiny[8];
        assert_int_equal(deps_meta_url("https://i/simple/", NULL, e, tiny, sizeof(tiny)), -EINVAL);
        json_decref(e);

        e = entry("npm", "@s/x", "1.0.0");
        assert_int_equal(deps_meta_url("https://i/simple/", "https://r/", e, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "https://r/@s%2fx");
        assert_int_equal(deps_meta_url(NULL, "http://10.0.0.2:4873", e, buf, sizeof(buf)), -EINVAL);   /* no path */
        assert_int_equal(deps_meta_url(NULL, "http://10.0.0.2:4873/npm", e, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "http://10.0.0.2:4873/npm/@s%2fx");
        assert_int_equal(deps_meta_url("https://i/simple/", NULL, e, buf, sizeof(buf)), -EINVAL);
        json_decref(e);
        e = entry("npm", "left-pad", "1.3.0");
        assert_int_equal(deps_meta_url(NULL, "https://r/", e, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "https://r/left-pad");
        json_decref(e);
        /* an entry without its name */
        e = json_pack("{s:s}", "ecosystem", "npm");
        assert_int_equal(deps_meta_url(NULL, "https://r/", e, buf, sizeof(buf)), -EINVAL);
        json_decref(e);
        (void) state;
}

static void test_release_time(void **state) {
        struct sbx_error err;
        int64_t t = 0;
        char sha[65], other[65];
        memset(sha, 'a', 64);
        sha[64] = '\0';
        memset(other, 'b', 64);
        other[64] = '\0';
        json_t *e = entry("pip", "foo", "1.0");
        json_object_set_new(e, "sha256", json_string(sha));
        json_t *page = json_pack("{s:[{s:{s:s}, s:s}, {s:{s:s}, s:s}]}", "files", "hashes", "sha256", other, "upload-time",
                                 "2001-01-01T00:00:00Z", "hashes", "sha256", sha, "upload-time", "2024-01-02T03:04:05.123456Z");
        assert_non_null(page);
        assert_int_equal(deps_release_time(page, e, &t, &err), 0);
        assert_int_equal(t, 1704164645);
        json_decref(page);
        /* no file with the entry's hash, or no upload-time, or a bad one */
        page = json_pack("{s:[{s:{s:s}, s:s}]}", "files", "hashes", "sha256", other, "upload-time", "2024-01-02T03:04:05Z");
        err.msg[0] = '\0';
        assert_int_equal(deps_release_time(page, e, &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "foo"));
        json_decref(page);
        page = json_pack("{s:[{s:{s:s}}]}", "files", "hashes", "sha256", sha);
        assert_int_equal(deps_release_time(page, e, &t, &err), -EINVAL);
        json_decref(page);
        page = json_pack("{s:[{s:{s:s}, s:s}]}", "files", "hashes", "sha256", sha, "upload-time", "yesterday");
        assert_int_equal(deps_release_time(page, e, &t, &err), -EINVAL);
        json_decref(page);
        page = json_object();
        assert_int_equal(deps_release_time(page, e, &t, &err), -EINVAL);
        json_decref(page);
        json_decref(e);

        e = entry("npm", "@s/x", "1.0.0");
        page = json_pack("{s:{s:s, s:s}}", "time", "0.9.0", "2019-01-01T00:00:00.000Z", "1.0.0", "2020-01-01T00:00:00.000Z");
        t = 0;
        assert_int_equal(deps_release_time(page, e, &t, &err), 0);
        assert_int_equal(t, 1577836800);
        json_decref(page);
        page = json_pack("{s:{s:s}}", "time", "0.9.0", "2019-01-01T00:00:00.000Z");
        err.msg[0] = '\0';
        assert_int_equal(deps_release_time(page, e, &t, &err), -EINVAL);
        assert_non_null(strstr(err.msg, "@s/x"));
        json_decref(page);
        json_decref(e);
        /* an entry without its name or version */
        e = json_pack("{s:s}", "ecosystem", "npm");
        page = json_pack("{s:{s:s}}", "time", "1.0.0", "2020-01-01T00:00:00.000Z");
        assert_int_equal(deps_release_time(page, e, &t, &err), -EINVAL);
        json_decref(page);
        json_decref(e);
        (void) state;
}

/* The layer's key is the lock's, whatever order npm's document gave. */
static void test_lock_key(void **state) {
        (void) state;
        struct dep_pin p[2];
        struct sbx_error err;
        char k1[DEPS_KEY_HEX + 1], k2[DEPS_KEY_HEX + 1];
        assert_int_equal(deps_pin_parse(DEP_NPM, "a@1.0.0", &p[0], &err), 0);
        json_t *one = json_pack("{s:{s:{}, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}}}", "packages", "",
                                "node_modules/a", "version", "1.0.0", "resolved", "http://r/a.tgz", "integrity", "sha512-A",
                                "node_modules/b", "version", "2.0.0", "resolved", "http://r/b.tgz", "integrity", "sha512-B");
        json_t *two = json_pack("{s:{s:{s:s, s:s, s:s}, s:{}, s:{s:s, s:s, s:s}}}", "packages",
                                "node_modules/b", "version", "2.0.0", "resolved", "http://r/b.tgz", "integrity", "sha512-B", "",
                                "node_modules/a", "version", "1.0.0", "resolved", "http://r/a.tgz", "integrity", "sha512-A");
        json_t *l1 = deps_lock_make(NULL, one, p, 1, &err), *l2 = deps_lock_make(NULL, two, p, 1, &err);
        assert_non_null(l1);
        assert_non_null(l2);
        /* sorted by name: a, then b */
        assert_string_equal(json_string_value(json_object_get(json_array_get(l2, 0), "name")), "a");
        deps_lock_key(l1, k1);
        deps_lock_key(l2, k2);
        assert_string_equal(k1, k2);
        assert_int_equal(strlen(k1), DEPS_KEY_HEX);
        /* another integrity, another layer */
        json_object_set_new(json_array_get(l2, 1), "integrity", json_string("sha512-C"));
        deps_lock_key(l2, k2);
        assert_string_not_equal(k1, k2);
        json_decref(l1);
        json_decref(l2);
        json_decref(one);
        json_decref(two);
}

static void test_parse_time(void **state) {
        int64_t t = 0;
        assert_int_equal(deps_parse_time("2024-01-02T03:04:05Z", &t), 0);
        assert_int_equal(t, 1704164645);
        t = 0;
        assert_int_equal(deps_parse_time("2024-01-02T03:04:05.123456Z", &t), 0);
        assert_int_equal(t, 1704164645);
        t = 0;
        assert_int_equal(deps_parse_time("2024-01-02T03:04:05+00:00", &t), 0);
        assert_int_equal(t, 1704164645);
        t = 0;
        assert_int_equal(deps_parse_time("2024-01-02T03:04:05.9+00:00", &t), 0);
        assert_int_equal(t, 1704164645);
        assert_int_equal(deps_parse_time("1970-01-01T00:00:00Z", &t), 0);
        assert_int_equal(t, 0);
        assert_int_equal(deps_parse_time("2020-01-01T00:00:00.000Z", &t), 0);
        assert_int_equal(t, 1577836800);
        const char *bad[] = { "",
                              "2024-01-02",
                              "2024-01-02T03:04:05",
                              "2024-01-02T03:04:05+01:00",
                              "2024-01-02T03:04:05.Z",
                              "2024-01-02T03:04:05ZZ",
                              "2024-01-02T03:04:05Z ",
                              "2024-13-02T03:04:05Z",
                              "2024-00-02T03:04:05Z",
                              "2024-01-00T03:04:05Z",
                              "2024-01-32T03:04:05Z",
                              "2024-01-02T24:04:05Z",
                              "2024-01-02T03:60:05Z",
                              "2024-01-02T03:04:61Z",
                              "1969-12-31T23:59:59Z",
                              "2024-01-02 03:04:05Z",
                              " 2024-01-02T03:04:05Z",
                              "2024-1-02T03:04:05Z",
                              "2024-01-02T3:04:05Z",
                              "2024-02-31T00:00:00Z",
                              "2023-02-29T00:00:00Z",
                              "yesterday" };
        for (size_t i = 0; i < N(bad); i++)
                if (deps_parse_time(bad[i], &t) != -EINVAL)
                        fail_msg("'%s' was read as a time", bad[i]);
        assert_int_equal(deps_parse_time(NULL, &t), -EINVAL);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pip_pins),       cmocka_unit_test(test_npm_pins),     cmocka_unit_test(test_parse_field),
                cmocka_unit_test(test_pins_of),        cmocka_unit_test(test_allowed_pip),  cmocka_unit_test(test_allowed_npm),
                cmocka_unit_test(test_npm_allow_split), cmocka_unit_test(test_key),         cmocka_unit_test(test_check_url),
                cmocka_unit_test(test_request_pip),    cmocka_unit_test(test_request_npm),  cmocka_unit_test(test_request_both),
                cmocka_unit_test(test_lock_pip),       cmocka_unit_test(test_lock_npm),     cmocka_unit_test(test_lock_admit),
                cmocka_unit_test(test_meta_url),       cmocka_unit_test(test_release_time), cmocka_unit_test(test_parse_time), cmocka_unit_test(test_lock_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
