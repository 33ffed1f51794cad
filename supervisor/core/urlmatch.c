/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "urlmatch.h"

static void curl_urlp(CURLU **p) {
        if (*p)
                curl_url_cleanup(*p);
}

static void curl_freep(char **p) {
        curl_free(*p);
}

#define _cleanup_curlu_ _cleanup_(curl_urlp)
#define _cleanup_curl_free_ _cleanup_(curl_freep)

/* Is the part there at all? An empty user ("http://@host/") counts: curl
 * sends it. */
static bool has_part(CURLU *h, CURLUPart what) {
        _cleanup_curl_free_ char *s = NULL;
        return curl_url_get(h, what, &s, 0) == CURLUE_OK && s;
}

/* The host as compared: lower case, no final dot (the same name to DNS),
 * an IPv6 literal rewritten by inet_ntop so that "[0:0::1]" and "[::1]"
 * are one host. curl has already decoded %-escapes and turned IPv4 in
 * other bases ("0x7f.1", "2130706433") into dotted decimal. */
static int normalise_host(const char *in, char **ret, const char **ret_why) {
        size_t n = strlen(in);
        if (n == 0) {
                *ret_why = "no host";
                return -EINVAL;
        }
        for (const char *p = in; *p; p++)
                if ((unsigned char) *p >= 0x80) {
                        *ret_why = "a host that is not ASCII (write an international name in its xn-- form)";
                        return -EINVAL;
                }
        if (in[0] == '[') {
                char a[INET6_ADDRSTRLEN + 2], lit[64];
                struct in6_addr addr;
                if (n < 3 || n - 2 >= sizeof(lit) || in[n - 1] != ']') {
                        *ret_why = "a malformed IPv6 address";
                        return -EINVAL;
                }
                memcpy(lit, in + 1, n - 2);
                lit[n - 2] = '\0';
                if (inet_pton(AF_INET6, lit, &addr) != 1 || !inet_ntop(AF_INET6, &addr, a + 1, sizeof(a) - 2)) {
                        *ret_why = "a malformed IPv6 address";
                        return -EINVAL;
                }
                a[0] = '[';
                strcat(a, "]");
                return (*ret = strdup(a)) ? 0 : -ENOMEM;
        }
        if (n > 1 && in[n - 1] == '.')
                n--;
        char *h = strndup(in, n);
        if (!h)
                return -ENOMEM;
        for (char *p = h; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char) (*p - 'A' + 'a');
        *ret = h;
        return 0;
}

/* '\' and %-encoded '/', '\' or '.': "/a/..%2fadmin" is below "/a" to us
 * and may be "/admin" to a receiver that decodes before it resolves. */
static bool path_ambiguous(const char *p) {
        for (; *p; p++) {
                if (*p == '\\')
                        return true;
                if (p[0] == '%' && p[1] && p[2] &&
                    (strncasecmp(p + 1, "2f", 2) == 0 || strncasecmp(p + 1, "5c", 2) == 0 || strncasecmp(p + 1, "2e", 2) == 0))
                        return true;
        }
        return false;
}

int urlmatch_parse(const char *url, struct urlmatch *ret, const char **ret_why) {
        struct urlmatch u = { 0 };
        _cleanup_curlu_ CURLU *h = curl_url();
        _cleanup_curl_free_ char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
        const char *why = NULL;
        int r;
        if (!h)
                return -ENOMEM;
        /* No CURLU_GUESS_SCHEME and no CURLU_NON_SUPPORT_SCHEME: a URL
         * names its scheme, one this libcurl speaks. */
        CURLUcode c = curl_url_set(h, CURLUPART_URL, url, 0);
        if (c == CURLUE_OUT_OF_MEMORY)
                return -ENOMEM;
        if (c != CURLUE_OK)
                why = curl_url_strerror(c);
        else if (curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
                 (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
                why = "not an http:// or https:// URL";
        else if (has_part(h, CURLUPART_USER) || has_part(h, CURLUPART_PASSWORD) || has_part(h, CURLUPART_OPTIONS))
                why = "userinfo (user:password@ before the host) is not allowed";
        else if (has_part(h, CURLUPART_FRAGMENT))
                why = "a fragment ('#') is not allowed";
        else if (has_part(h, CURLUPART_ZONEID))
                why = "an IPv6 zone ('%' in the address) is not allowed";
        else if (curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK)
                why = "no host";
        else if (curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
                why = "no port";
        else if (curl_url_get(h, CURLUPART_PATH, &path, 0) != CURLUE_OK || path[0] != '/')
                why = "no path";
        else if (path_ambiguous(path))
                why = "a backslash, or '/', '\\' or '.' percent-encoded, in the path";
        if (why) {
                *ret_why = why;
                return -EINVAL;
        }
        char *end;
        unsigned long pn = strtoul(port, &end, 10);
        if (*end || pn > 65535) {
                *ret_why = "a port that is not a number from 0 to 65535";
                return -EINVAL;
        }
        r = normalise_host(host, &u.host, ret_why);
        if (r < 0)
                return r;
        u.path = strdup(path);
        if (!u.path) {
                free(u.host);
                return -ENOMEM;
        }
        strcpy(u.scheme, scheme); /* "http" or "https": fits */
        u.port = (unsigned) pn;
        u.query = has_part(h, CURLUPART_QUERY);
        *ret = u;
        return 0;
}

void urlmatch_done(struct urlmatch *u) {
        free(u->host);
        free(u->path);
        u->host = u->path = NULL;
}

bool urlmatch_same_origin(const struct urlmatch *a, const struct urlmatch *b) {
        return strcmp(a->scheme, b->scheme) == 0 && strcmp(a->host, b->host) == 0 && a->port == b->port;
}

bool urlmatch_allows(const struct urlmatch *rule, const struct urlmatch *u) {
        if (!urlmatch_same_origin(rule, u))
                return false;
        size_t n = strlen(rule->path);
        if (strncmp(u->path, rule->path, n) != 0)
                return false;
        /* on a segment boundary: the rule ends in '/', or u's path ends
         * where the rule's does or goes on with a '/' */
        return rule->path[n - 1] == '/' || u->path[n] == '\0' || u->path[n] == '/';
}

const char *urlmatch_rule_check(const struct urlmatch *rule) {
        return rule->query ? "a query ('?') cannot be part of an allowed prefix" : NULL;
}
