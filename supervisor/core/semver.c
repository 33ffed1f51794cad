/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <string.h>

#include "semver.h"

/* A numeric identifier: digits, no leading zero unless it is "0". */
static bool numeric(const char *s, size_t n) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char) s[i]))
                        return false;
        return n == 1 || s[0] != '0';
}

static bool ident_char(char c) {
        return isalnum((unsigned char) c) || c == '-';
}

/* Dot-separated identifiers of [0-9A-Za-z-], none empty; numeric ones
 * without leading zeros when strict. */
static bool idents(const char *s, size_t n, bool strict) {
        size_t start = 0;
        for (size_t i = 0; i <= n; i++) {
                if (i < n && s[i] != '.') {
                        if (!ident_char(s[i]))
                                return false;
                        continue;
                }
                size_t len = i - start;
                if (len == 0)
                        return false;
                bool all_digits = true;
                for (size_t k = start; k < i; k++)
                        all_digits &= isdigit((unsigned char) s[k]) != 0;
                if (strict && all_digits && !numeric(s + start, len))
                        return false;
                start = i + 1;
        }
        return true;
}

bool semver_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > SEMVER_MAX)
                return false;
        const char *plus = strchr(s, '+');
        size_t core_end = plus ? (size_t) (plus - s) : n;
        if (plus && !idents(plus + 1, n - core_end - 1, false))
                return false;
        const char *dash = memchr(s, '-', core_end);
        size_t ver_end = dash ? (size_t) (dash - s) : core_end;
        if (dash && !idents(dash + 1, core_end - ver_end - 1, true))
                return false;
        /* MAJOR.MINOR.PATCH */
        size_t start = 0;
        int parts = 0;
        for (size_t i = 0; i <= ver_end; i++) {
                if (i < ver_end && s[i] != '.')
                        continue;
                if (!numeric(s + start, i - start) || i - start > 9)
                        return false;
                parts++;
                start = i + 1;
        }
        return parts == 3;
}

/* Compare two numeric strings without leading zeros. */
static int cmp_num(const char *a, size_t an, const char *b, size_t bn) {
        if (an != bn)
                return an < bn ? -1 : 1;
        int c = memcmp(a, b, an);
        return c < 0 ? -1 : c > 0;
}

static size_t span(const char *s, const char *stop) {
        return strcspn(s, stop);
}

int semver_cmp(const char *a, const char *b) {
        /* the three numbers */
        for (int i = 0; i < 3; i++) {
                size_t an = span(a, ".-+"), bn = span(b, ".-+");
                int c = cmp_num(a, an, b, bn);
                if (c)
                        return c;
                a += an;
                b += bn;
                if (i < 2) {
                        a++;
                        b++;
                }
        }
        bool apre = *a == '-', bpre = *b == '-';
        /* A pre-release precedes its release. */
        if (!apre || !bpre)
                return apre == bpre ? 0 : apre ? -1 : 1;
        a++;
        b++;
        for (;;) {
                size_t an = span(a, ".+"), bn = span(b, ".+");
                bool anum = an > 0 && strspn(a, "0123456789") >= an, bnum = bn > 0 && strspn(b, "0123456789") >= bn;
                int c;
                if (anum && bnum)
                        c = cmp_num(a, an, b, bn);
                else if (anum != bnum)
                        c = anum ? -1 : 1; /* numeric identifiers come first */
                else {
                        c = memcmp(a, b, an < bn ? an : bn);
                        c = c < 0 ? -1 : c > 0 ? 1 : an == bn ? 0 : an < bn ? -1 : 1;
                }
                if (c)
                        return c;
                a += an;
                b += bn;
                bool amore = *a == '.', bmore = *b == '.';
                if (!amore || !bmore)
                        return amore == bmore ? 0 : amore ? 1 : -1; /* more identifiers follow */
                a++;
                b++;
        }
}
