/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "jsonpiece.h"

void jsonpiece_check_init(struct utf8_state *u) {
        memset(u, 0, sizeof(*u));
}

/* What jansson accepts (utf8_check_first/utf8_check_full): no overlong
 * forms, no surrogates, nothing past U+10FFFF; NUL is a character. */
void jsonpiece_check(struct utf8_state *u, const unsigned char *s, size_t n) {
        for (size_t i = 0; i < n && !u->bad; i++) {
                unsigned char b = s[i];
                if (u->need == 0) {
                        if (b < 0x80)
                                continue;
                        if (b >= 0xC2 && b <= 0xDF) {
                                u->need = 1;
                                u->cp = b & 0x1F;
                                u->min = 0x80;
                        } else if (b >= 0xE0 && b <= 0xEF) {
                                u->need = 2;
                                u->cp = b & 0x0F;
                                u->min = 0x800;
                        } else if (b >= 0xF0 && b <= 0xF4) {
                                u->need = 3;
                                u->cp = b & 0x07;
                                u->min = 0x10000;
                        } else
                                u->bad = true;
                        continue;
                }
                if ((b & 0xC0) != 0x80) {
                        u->bad = true;
                        break;
                }
                u->cp = (u->cp << 6) | (b & 0x3F);
                if (--u->need == 0 && (u->cp < u->min || u->cp > 0x10FFFF || (u->cp >= 0xD800 && u->cp <= 0xDFFF)))
                        u->bad = true;
        }
}

bool jsonpiece_check_end(const struct utf8_state *u) {
        return !u->bad && u->need == 0;
}

static int reserve(char **buf, size_t *len, size_t more, char **ret_at) {
        char *nb = realloc(*buf, *len + more + 1);
        if (!nb)
                return -ENOMEM;
        *buf = nb;
        *ret_at = nb + *len;
        return 0;
}

int jsonpiece_append(char **buf, size_t *len, const char *s, size_t n) {
        char *at;
        if (reserve(buf, len, n, &at) < 0)
                return -ENOMEM;
        memcpy(at, s, n);
        *len += n;
        return 0;
}

/* Byte by byte is the same as jansson's code point by code point: only
 * ASCII is escaped, and the bytes of longer characters are >= 0x80. */
static size_t escape(char *out, const unsigned char *s, size_t n) {
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned char b = s[i];
                const char *e = NULL;
                switch (b) {
                case '\\': e = "\\\\"; break;
                case '"': e = "\\\""; break;
                case '\b': e = "\\b"; break;
                case '\f': e = "\\f"; break;
                case '\n': e = "\\n"; break;
                case '\r': e = "\\r"; break;
                case '\t': e = "\\t"; break;
                default: break;
                }
                if (e) {
                        out[o++] = e[0];
                        out[o++] = e[1];
                } else if (b < 0x20) {
                        memcpy(out + o, "\\u00", 4);
                        out[o + 4] = hex[b >> 4];
                        out[o + 5] = hex[b & 15];
                        o += 6;
                } else
                        out[o++] = (char) b;
        }
        return o;
}

int jsonpiece_encode(char **buf, size_t *len, const unsigned char *s, size_t n, bool utf8) {
        char *at;
        if (utf8) {
                /* At most six bytes each (\u00XX). */
                if (reserve(buf, len, n * 6, &at) < 0)
                        return -ENOMEM;
                *len += escape(at, s, n);
                return 0;
        }
        size_t blen = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
        if (reserve(buf, len, blen, &at) < 0)
                return -ENOMEM;
        sodium_bin2base64(at, blen, s, n, sodium_base64_VARIANT_ORIGINAL);
        *len += strlen(at);
        return 0;
}
