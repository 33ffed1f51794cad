/* SPDX-License-Identifier: Apache-2.0 */
/* JSON string literals from arbitrary bytes (see json-string.h). Invalid
 * UTF-8 becomes U+FFFD rather than "\u00XX": the latter would read back as
 * a different, valid character (0xff as U+00FF, "ÿ"), while U+FFFD says
 * plainly that a byte could not be represented. */
#include <stdbool.h>
#include <string.h>

#include "json-string.h"

static bool continuation(unsigned char c) {
        return (c & 0xc0) == 0x80;
}

size_t json_utf8_sequence(const unsigned char *s) {
        unsigned char c = s[0];
        /* Bounds of the second byte, which rule out overlong forms (E0, F0),
         * UTF-16 surrogates (ED) and code points above U+10FFFF (F4). */
        unsigned char lo = 0x80, hi = 0xbf;
        size_t n;

        if (c < 0x80)
                return c ? 1 : 0;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2;
        else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed)
                        hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else
                return 0;
        if (s[1] < lo || s[1] > hi)
                return 0;
        /* A NUL ends the string and is no continuation byte: the loop
         * never reads past it. */
        for (size_t i = 2; i < n; i++)
                if (!continuation(s[i]))
                        return 0;
        return n;
}

size_t json_string_escape(char *buf, size_t size, const char *s) {
        static const char hex[] = "0123456789abcdef";
        size_t n = 0;

        if (size < 3) {
                if (size)
                        buf[0] = '\0';
                return 0;
        }
        buf[n++] = '"';
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                char esc[8];
                const char *out = esc;
                size_t len, take;

                switch (*p) {
                case '"': memcpy(esc, "\\\"", len = 2); take = 1; break;
                case '\\': memcpy(esc, "\\\\", len = 2); take = 1; break;
                case '\n': memcpy(esc, "\\n", len = 2); take = 1; break;
                case '\t': memcpy(esc, "\\t", len = 2); take = 1; break;
                case '\r': memcpy(esc, "\\r", len = 2); take = 1; break;
                default:
                        if (*p < 0x20) {
                                memcpy(esc, "\\u00", 4);
                                esc[4] = hex[*p >> 4];
                                esc[5] = hex[*p & 0xf];
                                len = 6;
                                take = 1;
                        } else if ((take = json_utf8_sequence(p)) > 0) {
                                out = (const char *) p;
                                len = take;
                        } else {
                                memcpy(esc, "\\ufffd", len = 6);
                                take = 1;
                        }
                }
                /* Room for this character, the closing quote and the NUL. */
                if (n + len + 2 > size)
                        break;
                memcpy(buf + n, out, len);
                n += len;
                p += take;
        }
        buf[n++] = '"';
        buf[n] = '\0';
        return n;
}
