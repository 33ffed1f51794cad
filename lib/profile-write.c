/* SPDX-License-Identifier: Apache-2.0 */
/* Writing a profile back as INI (sbx-launch --print-profile, and the
 * profiles the supervisor generates). The output must load back to an equal
 * profile through inih, which constrains how values are spelled:
 *  - inih cuts a value at ';' after whitespace (inline comment) and at the
 *    start of a line treats ';' and '#' as comments: both are escaped;
 *  - inih strips leading and trailing whitespace: words with spaces are
 *    quoted and never begin or end a physical line with a raw space;
 *  - lines are at most PROFILE_MAX_LINE bytes: long values are split with
 *    a trailing '\' onto indented continuation lines, only at points where
 *    neither side is whitespace and never inside an escape. */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include <cap-ng.h>

#include "macro.h"
#include "parse.h"
#include "profile-internal.h"

#define INDENT "    "

struct val {
        char *s;
        unsigned char *brk; /* brk[i]: a line may be broken before s[i] */
        size_t len, cap;
        bool oom;
};

static void val_atom(struct val *v, const char *a, size_t n, bool breakable) {
        if (v->oom)
                return;
        if (v->len + n + 1 > v->cap) {
                size_t cap = v->cap ? v->cap * 2 : 256;
                while (cap < v->len + n + 1)
                        cap *= 2;
                char *s = realloc(v->s, cap);
                if (s)
                        v->s = s;
                unsigned char *b = realloc(v->brk, cap);
                if (b)
                        v->brk = b;
                if (!s || !b) {
                        v->oom = true;
                        return;
                }
                v->cap = cap;
        }
        memcpy(v->s + v->len, a, n);
        memset(v->brk + v->len, 0, n);
        v->brk[v->len] = breakable && v->len > 0;
        v->len += n;
        v->s[v->len] = '\0';
}

/* One word, quoted and escaped so that pvalue_split() gives it back. */
static void val_word(struct val *v, const char *w, size_t n) {
        bool quote = n == 0 || memchr(w, ' ', n);
        bool prev_space = false;

        if (v->len > 0)
                val_atom(v, " ", 1, false);
        if (quote)
                val_atom(v, "\"", 1, true);
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) w[i];
                char esc[5];
                bool space = false;
                switch (c) {
                case '\\': val_atom(v, "\\\\", 2, true); break;
                case '"': val_atom(v, "\\\"", 2, true); break;
                case ';': val_atom(v, "\\;", 2, true); break;
                case '#': val_atom(v, "\\#", 2, true); break;
                case '$': val_atom(v, "$$", 2, true); break;
                case '\n': val_atom(v, "\\n", 2, true); break;
                case '\t': val_atom(v, "\\t", 2, true); break;
                case '\r': val_atom(v, "\\r", 2, true); break;
                case ' ':
                        /* At most one raw space in a row, so that a break
                         * point is never far away. */
                        if (prev_space)
                                val_atom(v, "\\ ", 2, true);
                        else
                                val_atom(v, " ", 1, false);
                        space = !prev_space;
                        break;
                default:
                        if (c < 0x20 || c == 0x7f) {
                                snprintf(esc, sizeof(esc), "\\x%02x", c);
                                val_atom(v, esc, 4, true);
                        } else {
                                val_atom(v, (const char *) &w[i], 1, true);
                        }
                }
                prev_space = space;
        }
        if (quote)
                val_atom(v, "\"", 1, true);
}

static void val_str(struct val *v, const char *s) {
        val_word(v, s, strlen(s));
}

static int emit(FILE *f, const char *key, struct val *v) {
        if (v->oom)
                return -ENOMEM;
        size_t klen = strlen(key) + 3, pos = 0;
        const char *s = v->s ? v->s : "";

        if (klen + v->len <= PROFILE_MAX_LINE) {
                fprintf(f, "%s = %.*s\n", key, (int) v->len, s);
                v->len = 0;
                return 0;
        }
        for (bool first = true;; first = false) {
                size_t prefix = first ? klen : strlen(INDENT);
                size_t rest = v->len - pos;
                if (!first && prefix + rest <= PROFILE_MAX_LINE) {
                        fprintf(f, INDENT "%.*s\n", (int) rest, s + pos);
                        break;
                }
                size_t end = pos + (PROFILE_MAX_LINE - prefix - 1);
                if (end >= v->len)
                        end = v->len - 1;
                /* Prefer to break after a space (word boundary), within the
                 * last half of the line; else at any allowed point. */
                size_t e = end, half = pos + (end - pos) / 2;
                while (e > half && !(v->brk[e] && s[e - 1] == ' '))
                        e--;
                if (e > half)
                        end = e;
                while (end > pos && !v->brk[end])
                        end--;
                if (end == pos)
                        return -E2BIG; /* cannot happen: breaks are at most 5 bytes apart */
                fprintf(f, "%s%s%.*s\\\n", first ? key : INDENT, first ? " = " : "", (int) (end - pos), s + pos);
                pos = end;
        }
        v->len = 0;
        return 0;
}

static int emit_str(FILE *f, struct val *v, const char *key, const char *value) {
        val_str(v, value);
        return emit(f, key, v);
}

static int write_fs(FILE *f, struct val *v, const struct fs_op *op) {
        char key[32], buf[64];
        snprintf(key, sizeof(key), "%s", fs_op_name(op));

        if (op->type == FS_SYMLINK || op->type == FS_BIND || op->type == FS_RO_BIND || op->type == FS_DEV_BIND)
                val_str(v, op->src);
        val_str(v, op->dest);
        if (op->size_bytes != PROFILE_UNSET) {
                char sz[32];
                snprintf(buf, sizeof(buf), "size=%s", format_size(op->size_bytes, sz, sizeof(sz)));
                val_str(v, buf);
        }
        if (op->nr_inodes != PROFILE_UNSET) {
                snprintf(buf, sizeof(buf), "nr_inodes=%" PRIu64, op->nr_inodes);
                val_str(v, buf);
        }
        if (op->type == FS_FILE && op->fd >= 0) {
                snprintf(buf, sizeof(buf), "fd=%d", op->fd);
                val_str(v, buf);
        }
        if (op->type == FS_FILE && op->data) {
                _cleanup_free_ char *w = malloc(op->data_len + 5);
                if (!w)
                        return -ENOMEM;
                memcpy(w, "data=", 5);
                memcpy(w + 5, op->data, op->data_len);
                val_word(v, w, op->data_len + 5);
        }
        if (op->mode_set) {
                snprintf(buf, sizeof(buf), "mode=%04o", (unsigned) op->mode);
                val_str(v, buf);
        }
        return emit(f, key, v);
}

static int write_limit(FILE *f, struct val *v, const char *key, uint64_t x, char kind) {
        char buf[40];

        if (x == PROFILE_UNSET)
                return 0;
        if (x == PROFILE_UNLIMITED)
                snprintf(buf, sizeof(buf), "unlimited");
        else if (kind == 't')
                format_duration_ms(x, buf, sizeof(buf));
        else if (kind == 's')
                snprintf(buf, sizeof(buf), "%" PRIu64 "s", x);
        else if (kind == 'b')
                format_size(x, buf, sizeof(buf));
        else
                snprintf(buf, sizeof(buf), "%" PRIu64, x);
        return emit_str(f, v, key, buf);
}

static int write_ports(FILE *f, struct val *v, const char *key, const uint16_t *ports, size_t n) {
        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                char buf[8];
                snprintf(buf, sizeof(buf), "%u", ports[i]);
                val_str(v, buf);
        }
        return emit(f, key, v);
}

static int write_sandbox(const struct profile *p, FILE *f, struct val *v) {
        char buf[64];
        int r;

        fprintf(f, "[sandbox]\n");
        for (unsigned i = 0; i < PROFILE_NS_COUNT; i++)
                if (p->namespaces & (1u << i))
                        val_str(v, profile_ns_name(1u << i));
        if ((r = emit(f, "namespaces", v)) < 0)
                return r;
        if (p->hostname && (r = emit_str(f, v, "hostname", p->hostname)) < 0)
                return r;
        if (p->uid != PROFILE_ID_SAME) {
                snprintf(buf, sizeof(buf), "%u", (unsigned) p->uid);
                if ((r = emit_str(f, v, "uid", buf)) < 0)
                        return r;
        }
        if (p->gid != (gid_t) PROFILE_ID_SAME) {
                snprintf(buf, sizeof(buf), "%u", (unsigned) p->gid);
                if ((r = emit_str(f, v, "gid", buf)) < 0)
                        return r;
        }
        if ((r = emit_str(f, v, "die-with-parent", p->die_with_parent ? "yes" : "no")) < 0 ||
            (r = emit_str(f, v, "new-session", p->new_session ? "yes" : "no")) < 0 ||
            (r = emit_str(f, v, "pty", pty_mode_name(p->pty))) < 0)
                return r;
        return 0;
}

static int write_env(const struct profile *p, FILE *f, struct val *v) {
        int r;

        fprintf(f, "\n[env]\n");
        if ((r = emit_str(f, v, "clear", p->env_clear ? "yes" : "no")) < 0)
                return r;
        for (size_t i = 0; i < p->n_env; i++) {
                const struct env_op *e = &p->env[i];
                if (e->type == ENV_SET) {
                        _cleanup_free_ char *w = NULL;
                        if (asprintf(&w, "%s=%s", e->name, e->value) < 0)
                                return -ENOMEM;
                        r = emit_str(f, v, "set", w);
                } else {
                        r = emit_str(f, v, e->type == ENV_KEEP ? "keep" : "unset", e->name);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int write_net_limits(const struct profile *p, FILE *f, struct val *v) {
        const struct profile_limits *l = &p->limits;
        int r;

        fprintf(f, "\n[net]\n");
        if ((r = emit_str(f, v, "mode", net_mode_name(p->net))) < 0 ||
            (r = write_ports(f, v, "tcp-bind", p->bind_ports, p->n_bind_ports)) < 0 ||
            (r = write_ports(f, v, "tcp-connect", p->connect_ports, p->n_connect_ports)) < 0)
                return r;
        if (p->ports_set && !p->n_bind_ports && !p->n_connect_ports && (r = emit_str(f, v, "tcp-bind", "none")) < 0)
                return r;
        if (p->net_audit && (r = emit_str(f, v, "audit", "yes")) < 0)
                return r;

        fprintf(f, "\n[limits]\n");
        if ((r = write_limit(f, v, "timeout", l->timeout_ms, 't')) < 0 ||
            (r = write_limit(f, v, "cpu", l->cpu_s, 's')) < 0 ||
            (r = write_limit(f, v, "memory", l->memory_bytes, 'b')) < 0 ||
            (r = write_limit(f, v, "data", l->data_bytes, 'b')) < 0 ||
            (r = write_limit(f, v, "file-size", l->file_size_bytes, 'b')) < 0 ||
            (r = write_limit(f, v, "stack", l->stack_bytes, 'b')) < 0 ||
            (r = write_limit(f, v, "core", l->core_bytes, 'b')) < 0 ||
            (r = write_limit(f, v, "processes", l->processes, 'n')) < 0 ||
            (r = write_limit(f, v, "open-files", l->open_files, 'n')) < 0)
                return r;
        return 0;
}

static int write_security(const struct profile *p, FILE *f, struct val *v) {
        char buf[64];
        int r;

        fprintf(f, "\n[security]\n");
        if ((r = emit_str(f, v, "seccomp", seccomp_mode_name(p->seccomp))) < 0)
                return r;
        for (size_t i = 0; i < p->n_seccomp_rules; i++) {
                const struct seccomp_rule *s = &p->seccomp_rules[i];
                if (s->allow) {
                        r = emit_str(f, v, "allow", s->name);
                } else {
                        const char *en = profile_errno_name(s->errnum);
                        if (en)
                                snprintf(buf, sizeof(buf), "%s:%s", s->name, en);
                        else
                                snprintf(buf, sizeof(buf), "%s:%d", s->name, s->errnum);
                        r = emit_str(f, v, "deny", buf);
                }
                if (r < 0)
                        return r;
        }
        if ((r = emit_str(f, v, "landlock", landlock_mode_name(p->landlock))) < 0)
                return r;
        if (p->n_caps == 0)
                val_str(v, "none");
        for (size_t i = 0; i < p->n_caps; i++) {
                const char *name = capng_capability_to_name((unsigned) p->caps[i]);
                if (!name)
                        return -EINVAL;
                size_t j = (size_t) snprintf(buf, sizeof(buf), "CAP_");
                for (; *name && j + 1 < sizeof(buf); name++)
                        buf[j++] = (char) toupper((unsigned char) *name);
                buf[j] = '\0';
                val_str(v, buf);
        }
        if ((r = emit(f, "capabilities", v)) < 0)
                return r;
        return emit_str(f, v, "sys", p->sys ? "yes" : "no");
}

static int write_all(const struct profile *p, FILE *f, struct val *v) {
        int r;

        if ((r = write_sandbox(p, f, v)) < 0)
                return r;
        fprintf(f, "\n[fs]\n");
        for (size_t i = 0; i < p->n_fs; i++)
                if ((r = write_fs(f, v, &p->fs[i])) < 0)
                        return r;
        if ((r = write_env(p, f, v)) < 0 || (r = write_net_limits(p, f, v)) < 0)
                return r;
        return write_security(p, f, v);
}

int profile_write_key(FILE *f, const char *key, const char *const *words, size_t n_words) {
        struct val v = { 0 };
        for (size_t i = 0; i < n_words; i++)
                val_str(&v, words[i]);
        int r = emit(f, key, &v);
        free(v.s);
        free(v.brk);
        return r;
}

int profile_write(const struct profile *p, FILE *f) {
        struct val v = { 0 };
        int r = write_all(p, f, &v);
        free(v.s);
        free(v.brk);
        if (r < 0)
                return r;
        if (fflush(f) != 0)
                return errno > 0 ? -errno : -EIO;
        return ferror(f) ? -EIO : 0;
}
