/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "redact.h"

#define MARKER_PREFIX "[secret "
#define MARKER_MAX (sizeof(MARKER_PREFIX) - 1 + REDACT_NAME_MAX + 1)
#define MAX_PATTERNS (REDACT_MAX_SECRETS * REDACT_FORMS)
#define FD_CHUNK (64 * 1024)

struct pattern {
        unsigned char *bytes;
        size_t len;
        unsigned secret; /* index into secrets */
};

struct secret {
        char name[REDACT_NAME_MAX + 1];
        char marker[MARKER_MAX + 1]; /* "[secret NAME]" */
        size_t marker_len;
        uint64_t hits;
};

struct redactor {
        struct secret secrets[REDACT_MAX_SECRETS];
        size_t n_secrets;
        /* Sorted by first byte, then longest first: the patterns that can
         * start at a byte b are pat[start[b]..start[b+1]), and the first of
         * them that matches is the longest. */
        struct pattern pat[MAX_PATTERNS];
        size_t n_pat;
        uint16_t start[257];
        /* Bit b0 << 8 | b1: some pattern starts with the bytes b0 b1 (every
         * pattern has two). In text most bytes start some pattern of an
         * alphanumeric secret; few pairs do. */
        uint8_t pairs[65536 / 8];
        size_t max_len;
};

struct redactor *redactor_new(void) {
        return calloc(1, sizeof(struct redactor));
}

static void pattern_wipe(struct pattern *p) {
        /* the patterns are the secrets themselves: leave nothing for a core
         * dump or the next user of the heap */
        explicit_bzero(p->bytes, p->len);
        free(p->bytes);
        p->bytes = NULL;
}

void redactor_free(struct redactor *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_pat; i++)
                pattern_wipe(&r->pat[i]);
        free(r);
}

size_t redactor_count(const struct redactor *r) {
        return r->n_secrets;
}

const char *redactor_name(const struct redactor *r, size_t i) {
        return i < r->n_secrets ? r->secrets[i].name : NULL;
}

uint64_t redactor_hits(const struct redactor *r, size_t i) {
        return i < r->n_secrets ? r->secrets[i].hits : 0;
}

size_t redactor_max_pattern(const struct redactor *r) {
        return r->max_len;
}

size_t redactor_pattern_count(const struct redactor *r) {
        return r->n_pat;
}

static bool secret_name_valid(const char *name) {
        size_t n = 0;
        if (!name)
                return false;
        for (const char *c = name; *c; c++, n++)
                if (n >= REDACT_NAME_MAX ||
                    !((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
                        return false;
        return n > 0;
}

/* The encodings, each into a buffer the caller sized for the worst case. */

static size_t base64_nopad(const unsigned char *in, size_t n, const char *alphabet, unsigned char *out) {
        size_t o = 0, i = 0;
        for (; i + 3 <= n; i += 3) {
                uint32_t v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8 | in[i + 2];
                out[o++] = alphabet[v >> 18 & 63];
                out[o++] = alphabet[v >> 12 & 63];
                out[o++] = alphabet[v >> 6 & 63];
                out[o++] = alphabet[v & 63];
        }
        if (n - i == 1) {
                uint32_t v = (uint32_t) in[i] << 16;
                out[o++] = alphabet[v >> 18 & 63];
                out[o++] = alphabet[v >> 12 & 63];
        } else if (n - i == 2) {
                uint32_t v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8;
                out[o++] = alphabet[v >> 18 & 63];
                out[o++] = alphabet[v >> 12 & 63];
                out[o++] = alphabet[v >> 6 & 63];
        }
        return o;
}

static size_t hex(const unsigned char *in, size_t n, const char *digits, unsigned char *out) {
        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[in[i] >> 4];
                out[2 * i + 1] = digits[in[i] & 15];
        }
        return 2 * n;
}

/* RFC 3986 section 2.3: ALPHA / DIGIT / "-" / "." / "_" / "~" */
static bool unreserved(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
               c == '~';
}

static size_t percent(const unsigned char *in, size_t n, const char *digits, unsigned char *out) {
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                if (unreserved(in[i])) {
                        out[o++] = in[i];
                        continue;
                }
                out[o++] = '%';
                out[o++] = digits[in[i] >> 4];
                out[o++] = digits[in[i] & 15];
        }
        return o;
}

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char hex_lower[] = "0123456789abcdef";
static const char hex_upper[] = "0123456789ABCDEF";

static bool pattern_present(const struct pattern *pat, size_t n, const unsigned char *bytes, size_t len) {
        for (size_t i = 0; i < n; i++)
                if (pat[i].len == len && memcmp(pat[i].bytes, bytes, len) == 0)
                        return true;
        return false;
}

/* The form made in buf joins the patterns, unless one is equal to it. */
static int form_add(struct redactor *r, unsigned secret, const unsigned char *buf, size_t len) {
        if (pattern_present(r->pat, r->n_pat, buf, len))
                return 0;
        unsigned char *copy = malloc(len);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, buf, len);
        r->pat[r->n_pat++] = (struct pattern){ .bytes = copy, .len = len, .secret = secret };
        return 0;
}

static int pattern_cmp(const void *a, const void *b) {
        const struct pattern *x = a, *y = b;
        if (x->bytes[0] != y->bytes[0])
                return x->bytes[0] < y->bytes[0] ? -1 : 1;
        if (x->len != y->len)
                return x->len > y->len ? -1 : 1;
        /* equal patterns are never both present: this only makes the order
         * independent of qsort's */
        return memcmp(x->bytes, y->bytes, x->len);
}

static void index_rebuild(struct redactor *r) {
        qsort(r->pat, r->n_pat, sizeof(r->pat[0]), pattern_cmp);
        size_t k = 0;
        r->max_len = 0;
        for (unsigned b = 0; b < 256; b++) {
                r->start[b] = (uint16_t) k;
                while (k < r->n_pat && r->pat[k].bytes[0] == b) {
                        if (r->pat[k].len > r->max_len)
                                r->max_len = r->pat[k].len;
                        k++;
                }
        }
        r->start[256] = (uint16_t) k;
        memset(r->pairs, 0, sizeof(r->pairs));
        for (size_t i = 0; i < r->n_pat; i++) {
                unsigned pair = (unsigned) r->pat[i].bytes[0] << 8 | r->pat[i].bytes[1];
                r->pairs[pair >> 3] |= (uint8_t) (1u << (pair & 7));
        }
}

int redactor_add(struct redactor *r, const char *name, const void *value, size_t len) {
        if (!secret_name_valid(name) || !value || len < REDACT_MIN_LEN || len > REDACT_MAX_LEN)
                return -EINVAL;
        for (size_t i = 0; i < r->n_secrets; i++)
                if (streq(r->secrets[i].name, name))
                        return -EINVAL;
        if (r->n_secrets >= REDACT_MAX_SECRETS)
                return -E2BIG;

        /* the longest form: every byte as %XX */
        _cleanup_free_ unsigned char *buf = malloc(3 * len);
        if (!buf)
                return -ENOMEM;
        const unsigned char *v = value;
        unsigned secret = (unsigned) r->n_secrets;
        size_t n_before = r->n_pat;
        int ret = form_add(r, secret, v, len);
        if (ret >= 0)
                ret = form_add(r, secret, buf, base64_nopad(v, len, b64_std, buf));
        if (ret >= 0)
                ret = form_add(r, secret, buf, base64_nopad(v, len, b64_url, buf));
        /* The base64 of the value followed by more bytes (echo $S | base64
         * encodes the newline too) differs in the last character when the
         * length is not a multiple of 3: the characters the value alone
         * decides are a form of their own. The whole form, longer, still
         * wins where it is there. */
        if (ret >= 0 && len % 3)
                ret = form_add(r, secret, buf, base64_nopad(v, len, b64_std, buf) - 1);
        if (ret >= 0 && len % 3)
                ret = form_add(r, secret, buf, base64_nopad(v, len, b64_url, buf) - 1);
        if (ret >= 0)
                ret = form_add(r, secret, buf, hex(v, len, hex_lower, buf));
        if (ret >= 0)
                ret = form_add(r, secret, buf, hex(v, len, hex_upper, buf));
        if (ret >= 0)
                ret = form_add(r, secret, buf, percent(v, len, hex_upper, buf));
        if (ret >= 0)
                ret = form_add(r, secret, buf, percent(v, len, hex_lower, buf));
        explicit_bzero(buf, 3 * len);
        if (ret < 0) {
                /* the new forms were appended and the index not rebuilt yet:
                 * dropping the tail leaves r as it was */
                while (r->n_pat > n_before)
                        pattern_wipe(&r->pat[--r->n_pat]);
                return ret;
        }

        struct secret *s = &r->secrets[r->n_secrets++];
        memset(s, 0, sizeof(*s));
        strcpy(s->name, name);
        s->marker_len = (size_t) snprintf(s->marker, sizeof(s->marker), MARKER_PREFIX "%s]", name);
        index_rebuild(r);
        return 0;
}

/* Streams */

enum match { MATCH_NONE, MATCH_FOUND, MATCH_WAIT };

/* What starts at p, of which avail bytes are known (eof: no more will
 * come): the longest pattern found there, or WAIT when a pattern longer
 * than avail could still match with the bytes to come; it would win over
 * any shorter one found now. */
static enum match match_at(const struct redactor *r, const unsigned char *p, size_t avail, bool eof, const struct pattern **ret) {
        for (size_t k = r->start[p[0]]; k < r->start[p[0] + 1]; k++) {
                const struct pattern *pt = &r->pat[k];
                if (pt->len > avail) {
                        if (!eof && memcmp(pt->bytes, p, avail) == 0)
                                return MATCH_WAIT;
                        continue;
                }
                /* the last byte first: a cheap reject of the near misses
                 * that share a long head with the pattern */
                if (pt->bytes[pt->len - 1] == p[pt->len - 1] && memcmp(pt->bytes, p, pt->len) == 0) {
                        *ret = pt;
                        return MATCH_FOUND;
                }
        }
        return MATCH_NONE;
}

static int reserve(char **buf, size_t *cap, size_t need) {
        if (need <= *cap)
                return 0;
        size_t c = *cap ? *cap : 256;
        while (c < need)
                c = c > SIZE_MAX / 2 ? need : 2 * c;
        char *p = realloc(*buf, c);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *cap = c;
        return 0;
}

static int emit(struct redact_stream *s, const void *data, size_t len) {
        if (len == 0)
                return 0;
        if (len > s->out_cap - s->out_len && reserve(&s->out, &s->out_cap, s->out_len + len) < 0)
                return -ENOMEM;
        memcpy(s->out + s->out_len, data, len);
        s->out_len += len;
        return 0;
}

/* Scans the starting positions [*pos, limit) of buf's len bytes (a match
 * found there may end past limit, never past len), emitting the bytes
 * with their patterns replaced. Stops early at a position that must wait
 * for more bytes (never when eof). *pos: where it stopped, >= limit when
 * it did not stop early. */
static int scan(struct redact_stream *s, const unsigned char *buf, size_t len, size_t *pos, size_t limit, bool eof) {
        struct redactor *r = s->r;
        size_t i = *pos, run = i; /* run: the start of the bytes to copy as they are */
        while (i < limit) {
                /* most positions start no pattern: one table look-up each */
                if (i + 1 < len) {
                        unsigned pair = (unsigned) buf[i] << 8 | buf[i + 1];
                        if (!(r->pairs[pair >> 3] & (1u << (pair & 7)))) {
                                i++;
                                continue;
                        }
                } else if (r->start[buf[i]] == r->start[buf[i] + 1]) {
                        i++;
                        continue;
                }
                const struct pattern *pt = NULL;
                enum match m = match_at(r, buf + i, len - i, eof, &pt);
                if (m == MATCH_WAIT)
                        break;
                if (m == MATCH_NONE) {
                        i++;
                        continue;
                }
                struct secret *sec = &r->secrets[pt->secret];
                if (emit(s, buf + run, i - run) < 0 || emit(s, sec->marker, sec->marker_len) < 0)
                        return -ENOMEM;
                sec->hits++;
                i += pt->len;
                run = i;
        }
        if (emit(s, buf + run, i - run) < 0)
                return -ENOMEM;
        *pos = i;
        return 0;
}

void redact_stream_init(struct redact_stream *s, struct redactor *r) {
        *s = (struct redact_stream){ .r = r };
}

void redact_stream_release(struct redact_stream *s) {
        if (s->held)
                explicit_bzero(s->held, s->held_cap);
        free(s->held);
        free(s->out);
        *s = (struct redact_stream){ .r = s->r };
}

/* Keeps the bytes [from, to) of the held buffer as the held ones, then
 * tail's n bytes after them. tail never points into the held buffer. */
static int hold(struct redact_stream *s, size_t from, size_t to, const unsigned char *tail, size_t n) {
        if (to > from)
                memmove(s->held, s->held + from, to - from);
        s->held_len = to - from;
        if (n == 0)
                return 0;
        if (reserve(&s->held, &s->held_cap, s->held_len + n) < 0)
                return -ENOMEM;
        memcpy(s->held + s->held_len, tail, n);
        s->held_len += n;
        return 0;
}

static int feed(struct redact_stream *s, const unsigned char *in, size_t n, bool final) {
        size_t max = s->r->max_len;
        if (n > SIZE_MAX - s->held_len - 1)
                return -ENOMEM;
        /* without matches the output is the input: one allocation, if any */
        if (reserve(&s->out, &s->out_cap, s->held_len + n + 1) < 0)
                return -ENOMEM;

        size_t j = 0; /* where the scan of in starts */
        if (s->held_len > 0) {
                /* A pattern starting in the held bytes ends at most max - 1
                 * bytes into in: join that much of in to them, so that every
                 * position of the held bytes is decided in one scan, and scan
                 * the rest of in where it lies (no copy of the whole). */
                size_t t = max > 0 && n > max - 1 ? max - 1 : n;
                size_t held = s->held_len, pos = 0;
                if (reserve(&s->held, &s->held_cap, held + t) < 0)
                        return -ENOMEM;
                memcpy(s->held + held, in, t);
                if (scan(s, (const unsigned char *) s->held, held + t, &pos, t == n ? held + t : held, t == n && final) < 0)
                        return -ENOMEM;
                if (pos < held || t == n)
                        return hold(s, pos, held + t, in + t, n - t);
                j = pos - held;
                s->held_len = 0;
        }
        if (scan(s, in, n, &j, n, final) < 0)
                return -ENOMEM;
        return hold(s, 0, 0, in + j, n - j);
}

int redact_stream_feed(struct redact_stream *s, const void *in, size_t n, bool final, const char **out, size_t *out_len) {
        s->out_len = 0;
        *out = "";
        *out_len = 0;
        if (!in)
                in = ""; /* n is 0: no arithmetic on NULL below */
        int ret = feed(s, in, n, final);
        /* fail closed: what was emitted before the error may lack a
         * replacement that was due */
        if (ret < 0) {
                s->out_len = 0;
                return ret;
        }
        *out = s->out ? s->out : "";
        *out_len = s->out_len;
        return 0;
}

int redact_buffer(struct redactor *r, const void *in, size_t n, char **out, size_t *out_len) {
        struct redact_stream s;
        const char *o;
        size_t len;
        redact_stream_init(&s, r);
        int ret = redact_stream_feed(&s, in, n, true, &o, &len);
        /* room for the NUL: feed reserved it unless replacements made
         * the output longer than the input */
        if (ret >= 0)
                ret = reserve(&s.out, &s.out_cap, len + 1);
        if (ret < 0) {
                redact_stream_release(&s);
                return ret;
        }
        s.out[len] = '\0';
        *out = TAKE_PTR(s.out);
        *out_len = len;
        redact_stream_release(&s);
        return 0;
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t) w;
        }
        return 0;
}

int64_t redact_fd(struct redactor *r, int in_fd, int out_fd) {
        _cleanup_free_ unsigned char *buf = malloc(FD_CHUNK);
        struct redact_stream s;
        int64_t written = 0;
        int ret = 0;
        if (!buf)
                return -ENOMEM;
        redact_stream_init(&s, r);
        for (;;) {
                ssize_t n = read(in_fd, buf, FD_CHUNK);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        ret = -errno;
                        break;
                }
                const char *o;
                size_t len;
                ret = redact_stream_feed(&s, buf, (size_t) n, n == 0, &o, &len);
                if (ret >= 0)
                        ret = write_all(out_fd, o, len);
                if (ret < 0)
                        break;
                written += (int64_t) len;
                if (n == 0)
                        break;
        }
        redact_stream_release(&s);
        return ret < 0 ? ret : written;
}
