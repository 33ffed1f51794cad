/* SPDX-License-Identifier: Apache-2.0 */
/* What the service proxy reads of a request's head (service.c): headers,
 * the target's query, the Host it routes by, and the head as it goes on
 * without the token. Pure functions of the bytes they are given. */
#include <string.h>
#include <strings.h>

#include "proto.h"
#include "service.h"

/* The value of header `name` (lowercase, with its colon) in the head, or
 * NULL; *ret_len its length without surrounding blanks. */
const char *http_header(const char *head, size_t len, const char *name, size_t *ret_len) {
        size_t nl = strlen(name);
        const char *p = memchr(head, '\n', len), *end = head + len;
        while (p && p + 1 < end) {
                p++;
                if ((size_t) (end - p) > nl && strncasecmp(p, name, nl) == 0) {
                        const char *v = p + nl, *e = memchr(v, '\n', (size_t) (end - v));
                        if (!e)
                                return NULL;
                        while (v < e && (*v == ' ' || *v == '\t'))
                                v++;
                        while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
                                e--;
                        *ret_len = (size_t) (e - v);
                        return v;
                }
                p = memchr(p, '\n', (size_t) (end - p));
        }
        return NULL;
}

/* The query parameter `name` (with its "=") of the request target. */
bool http_query_param(const char *target, size_t tlen, const char *name, char *out, size_t out_len) {
        const char *q = memchr(target, '?', tlen), *end = target + tlen;
        size_t nl = strlen(name);
        while (q && q < end) {
                q++;
                if ((size_t) (end - q) >= nl && memcmp(q, name, nl) == 0) {
                        const char *v = q + nl, *e = v;
                        while (e < end && *e != '&' && *e != '#')
                                e++;
                        if ((size_t) (e - v) >= out_len)
                                return false;
                        memcpy(out, v, (size_t) (e - v));
                        out[e - v] = '\0';
                        return true;
                }
                q = memchr(q, '&', (size_t) (end - q));
        }
        return false;
}

/* Host: PORT-SESSION.DOMAIN[:N] */
bool service_parse_host(const char *v, size_t len, const char *domain, uint16_t *ret_port, char *sid) {
        const char *colon = memchr(v, ':', len);
        if (colon)
                len = (size_t) (colon - v);
        size_t i = 0;
        unsigned long port = 0;
        while (i < len && i < 5 && v[i] >= '0' && v[i] <= '9')
                port = port * 10 + (unsigned long) (v[i++] - '0');
        if (i == 0 || port == 0 || port > 65535 || i >= len || v[i] != '-')
                return false;
        i++;
        if (len - i < PROTO_SESSION_ID_LEN + 2 || v[i + PROTO_SESSION_ID_LEN] != '.')
                return false;
        for (size_t k = 0; k < PROTO_SESSION_ID_LEN; k++) {
                char ch = v[i + k];
                if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
                        return false;
                sid[k] = ch;
        }
        sid[PROTO_SESSION_ID_LEN] = '\0';
        const char *dom = v + i + PROTO_SESSION_ID_LEN + 1;
        size_t dl = len - (i + PROTO_SESSION_ID_LEN + 1);
        if (dl != strlen(domain) || strncasecmp(dom, domain, dl) != 0)
                return false;
        *ret_port = (uint16_t) port;
        return true;
}

/* The head, less its X-Sbx-Token line (the service never sees the
 * token), then whatever came after it (head[head_end..len)), into out
 * (len bytes at least): its length. */
size_t service_strip_token(const char *head, size_t head_end, size_t len, char *out) {
        size_t tl;
        const char *tok = http_header(head, head_end, "x-sbx-token:", &tl);
        if (!tok) {
                memcpy(out, head, len);
                return len;
        }
        const char *line = tok;
        while (line > head && line[-1] != '\n')
                line--;
        const char *next = memchr(tok, '\n', (size_t) (head + head_end - tok));
        next = next ? next + 1 : head + head_end;
        size_t n = (size_t) (line - head);
        memcpy(out, head, n);
        memcpy(out + n, next, (size_t) (head + len - next));
        return n + (size_t) (head + len - next);
}
