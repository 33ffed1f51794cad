/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "macro.h"
#include "parse.h"

int parse_uint64(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!s || !isdigit((unsigned char) *s))
                return -EINVAL;
        for (; *s; s++) {
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                unsigned d = (unsigned) (*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

/* Split "123abc" into the number and its suffix; the number must be present. */
static int split_number(const char *s, uint64_t *ret_num, const char **ret_suffix) {
        size_t n = 0;
        char buf[32];

        while (isdigit((unsigned char) s[n]))
                n++;
        if (n == 0 || n >= sizeof(buf))
                return n == 0 ? -EINVAL : -ERANGE;
        memcpy(buf, s, n);
        buf[n] = '\0';
        int r = parse_uint64(buf, UINT64_MAX, ret_num);
        if (r < 0)
                return r;
        *ret_suffix = s + n;
        return 0;
}

static int mul_check(uint64_t a, uint64_t b, uint64_t *ret) {
        if (b && a > UINT64_MAX / b)
                return -ERANGE;
        *ret = a * b;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } units[] = {
                { "", 1 },  { "B", 1 },
                { "K", 1ULL << 10 }, { "k", 1ULL << 10 }, { "KiB", 1ULL << 10 }, { "KB", 1ULL << 10 },
                { "M", 1ULL << 20 }, { "m", 1ULL << 20 }, { "MiB", 1ULL << 20 }, { "MB", 1ULL << 20 },
                { "G", 1ULL << 30 }, { "g", 1ULL << 30 }, { "GiB", 1ULL << 30 }, { "GB", 1ULL << 30 },
                { "T", 1ULL << 40 }, { "t", 1ULL << 40 }, { "TiB", 1ULL << 40 }, { "TB", 1ULL << 40 },
        };
        uint64_t n;
        const char *suffix;

        if (!s)
                return -EINVAL;
        if (streq(s, "unlimited")) {
                *ret = UINT64_MAX;
                return 0;
        }
        int r = split_number(s, &n, &suffix);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ARRAY_SIZE(units); i++)
                if (streq(suffix, units[i].suffix))
                        return mul_check(n, units[i].factor, ret);
        return -EINVAL;
}

int parse_duration_ms(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } units[] = {
                { "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 },
                { "min", 60 * 1000 }, { "h", 3600 * 1000 }, { "d", 86400 * 1000 },
        };
        uint64_t n;
        const char *suffix;

        if (!s)
                return -EINVAL;
        int r = split_number(s, &n, &suffix);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ARRAY_SIZE(units); i++)
                if (streq(suffix, units[i].suffix))
                        return mul_check(n, units[i].factor, ret);
        return -EINVAL;
}

int parse_cpus_milli(const char *s, uint64_t *ret) {
        uint64_t whole = 0, frac = 0;
        const char *p = s;
        if (!s || !(*p >= '0' && *p <= '9'))
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                whole = whole * 10 + (uint64_t) (*p - '0');
                if (whole > UINT32_MAX)
                        return -ERANGE;
        }
        if (*p == '.') {
                int digits = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 3)
                                frac = frac * 10 + (uint64_t) (*p - '0');
                        else
                                return -EINVAL; /* finer than a thousandth */
                if (digits == 0)
                        return -EINVAL;
                for (; digits < 3; digits++)
                        frac *= 10;
        }
        if (*p)
                return -EINVAL;
        *ret = whole * 1000 + frac;
        return *ret == 0 ? -ERANGE : 0;
}

int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
                if (streq(s, yes[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(s, no[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

int parse_mode(const char *s, mode_t *ret) {
        mode_t m = 0;

        if (!s || !*s || strlen(s) > 5)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '7')
                        return -EINVAL;
                m = (mode_t) (m * 8 + (mode_t) (*s - '0'));
        }
        if (m > 07777)
                return -ERANGE;
        *ret = m;
        return 0;
}

const char *format_size(uint64_t bytes, char *buf, size_t len) {
        static const char units[] = "KMGT";
        int u = -1;

        if (bytes == UINT64_MAX) {
                snprintf(buf, len, "unlimited");
                return buf;
        }
        while (u < 3 && bytes && bytes % 1024 == 0) {
                bytes /= 1024;
                u++;
        }
        if (u < 0)
                snprintf(buf, len, "%" PRIu64, bytes);
        else
                snprintf(buf, len, "%" PRIu64 "%c", bytes, units[u]);
        return buf;
}

const char *format_duration_ms(uint64_t ms, char *buf, size_t len) {
        if (ms && ms % (3600 * 1000) == 0)
                snprintf(buf, len, "%" PRIu64 "h", ms / (3600 * 1000));
        else if (ms && ms % (60 * 1000) == 0)
                snprintf(buf, len, "%" PRIu64 "m", ms / (60 * 1000));
        else if (ms % 1000 == 0)
                snprintf(buf, len, "%" PRIu64 "s", ms / 1000);
        else
                snprintf(buf, len, "%" PRIu64 "ms", ms);
        return buf;
}
