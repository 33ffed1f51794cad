/* SPDX-License-Identifier: Apache-2.0 */
/* The [security] keys: the syscall filter and its rules (syscall names
 * resolved with libseccomp, errno names), Landlock, and capabilities
 * (names resolved with libcap-ng). */
#include <string.h>
#include <strings.h>

#include <cap-ng.h>
#include <seccomp.h>

#include "parse.h"
#include "profile-keys.h"

/* The largest errno the kernel returns from a syscall (and so the largest
 * a SECCOMP_RET_ERRNO action can carry meaningfully). */
#define ERRNO_MAX 4095

int pkey_seccomp(struct inikey_ctx *c) {
        int r = pkey_want_words(c, 1, 1, "default, strict or none");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "default"))
                kp(c)->seccomp = SECCOMP_DEFAULT;
        else if (streq(c->w[0].s, "strict"))
                kp(c)->seccomp = SECCOMP_STRICT;
        else if (streq(c->w[0].s, "none"))
                kp(c)->seccomp = SECCOMP_NONE;
        else
                return inikey_fail(c, "expected default, strict or none");
        return 0;
}

int pkey_landlock(struct inikey_ctx *c) {
        int r = pkey_want_words(c, 1, 1, "off, best-effort or required");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "off"))
                kp(c)->landlock = LANDLOCK_OFF;
        else if (streq(c->w[0].s, "best-effort"))
                kp(c)->landlock = LANDLOCK_BEST_EFFORT;
        else if (streq(c->w[0].s, "required"))
                kp(c)->landlock = LANDLOCK_REQUIRED;
        else
                return inikey_fail(c, "expected off, best-effort or required");
        return 0;
}

static const struct {
        const char *name;
        int num;
} errno_names[] = {
        { "EPERM", EPERM }, { "ENOENT", ENOENT }, { "ESRCH", ESRCH }, { "EINTR", EINTR },
        { "EIO", EIO }, { "ENXIO", ENXIO }, { "E2BIG", E2BIG }, { "ENOEXEC", ENOEXEC },
        { "EBADF", EBADF }, { "ECHILD", ECHILD }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM },
        { "EACCES", EACCES }, { "EFAULT", EFAULT }, { "EBUSY", EBUSY }, { "EEXIST", EEXIST },
        { "EXDEV", EXDEV }, { "ENODEV", ENODEV }, { "ENOTDIR", ENOTDIR }, { "EISDIR", EISDIR },
        { "EINVAL", EINVAL }, { "ENFILE", ENFILE }, { "EMFILE", EMFILE }, { "ENOTTY", ENOTTY },
        { "ETXTBSY", ETXTBSY }, { "EFBIG", EFBIG }, { "ENOSPC", ENOSPC }, { "ESPIPE", ESPIPE },
        { "EROFS", EROFS }, { "EMLINK", EMLINK }, { "EPIPE", EPIPE }, { "EDOM", EDOM },
        { "ERANGE", ERANGE }, { "EDEADLK", EDEADLK }, { "ENAMETOOLONG", ENAMETOOLONG },
        { "ENOLCK", ENOLCK }, { "ENOSYS", ENOSYS }, { "ENOTEMPTY", ENOTEMPTY }, { "ELOOP", ELOOP },
        { "ENOMSG", ENOMSG }, { "ENODATA", ENODATA }, { "ETIME", ETIME }, { "EOVERFLOW", EOVERFLOW },
        { "EILSEQ", EILSEQ }, { "ENOTSOCK", ENOTSOCK }, { "EMSGSIZE", EMSGSIZE },
        { "EPROTOTYPE", EPROTOTYPE }, { "ENOPROTOOPT", ENOPROTOOPT },
        { "EPROTONOSUPPORT", EPROTONOSUPPORT }, { "EOPNOTSUPP", EOPNOTSUPP }, { "ENOTSUP", ENOTSUP },
        { "EAFNOSUPPORT", EAFNOSUPPORT }, { "EADDRINUSE", EADDRINUSE },
        { "EADDRNOTAVAIL", EADDRNOTAVAIL }, { "ENETDOWN", ENETDOWN }, { "ENETUNREACH", ENETUNREACH },
        { "ECONNABORTED", ECONNABORTED }, { "ECONNRESET", ECONNRESET }, { "ENOBUFS", ENOBUFS },
        { "EISCONN", EISCONN }, { "ENOTCONN", ENOTCONN }, { "ETIMEDOUT", ETIMEDOUT },
        { "ECONNREFUSED", ECONNREFUSED }, { "EHOSTUNREACH", EHOSTUNREACH }, { "EALREADY", EALREADY },
        { "EINPROGRESS", EINPROGRESS }, { "ECANCELED", ECANCELED }, { "EKEYREJECTED", EKEYREJECTED },
        { "EOWNERDEAD", EOWNERDEAD }, { "EDQUOT", EDQUOT },
};

const char *profile_errno_name(int errnum) {
        for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
                if (errno_names[i].num == errnum)
                        return errno_names[i].name;
        return NULL;
}

static int seccomp_push(struct inikey_ctx *c, bool allow, const char *name, size_t nlen, int errnum) {
        struct profile *p = kp(c);
        char sys[64];

        if (nlen == 0 || nlen >= sizeof(sys))
                return inikey_fail(c, "expected a syscall name");
        memcpy(sys, name, nlen);
        sys[nlen] = '\0';
        int nr = seccomp_syscall_resolve_name(sys);
        if (nr == __NR_SCMP_ERROR)
                return inikey_fail(c, "unknown syscall '%s'", sys);
        /* Negative numbers are libseccomp's pseudo-syscalls: names that exist
         * on some architecture but not on the one we filter. */
        if (nr < 0)
                return inikey_fail(c, "syscall '%s' does not exist on this architecture", sys);
        if (p->n_seccomp_rules >= PROFILE_MAX_SECCOMP_RULES)
                return inikey_fail(c, "too many seccomp rules (at most %d)", PROFILE_MAX_SECCOMP_RULES);
        struct seccomp_rule rule = { .allow = allow, .nr = nr, .errnum = errnum };
        rule.name = strdup(sys);
        rule.origin = strdup(c->origin);
        struct seccomp_rule *t = pkey_grow(p->seccomp_rules, p->n_seccomp_rules, sizeof(*t));
        if (t)
                p->seccomp_rules = t;
        if (!rule.name || !rule.origin || !t) {
                free(rule.name);
                free(rule.origin);
                return inikey_oom(c);
        }
        p->seccomp_rules[p->n_seccomp_rules++] = rule;
        return 0;
}

int pkey_seccomp_rule(struct inikey_ctx *c) {
        bool allow = c->def->arg;
        if (c->n == 0)
                return inikey_fail(c, allow ? "expected syscall names" : "expected syscall names, each with an optional :ERRNO");
        for (size_t i = 0; i < c->n; i++) {
                int r = pkey_word_cstr(c, i, "syscall");
                if (r < 0)
                        return r;
                const char *w = c->w[i].s, *colon = strchr(w, ':');
                int errnum = EPERM;
                if (colon && allow)
                        return inikey_fail(c, "allow takes syscall names without :ERRNO");
                if (colon) {
                        const char *e = colon + 1;
                        uint64_t v;
                        errnum = 0;
                        for (size_t k = 0; k < ARRAY_SIZE(errno_names); k++)
                                if (strcasecmp(e, errno_names[k].name) == 0)
                                        errnum = errno_names[k].num;
                        if (!errnum) {
                                if (parse_uint64(e, ERRNO_MAX, &v) < 0 || v == 0)
                                        return inikey_fail(c, "'%.32s' is not an errno name (like EPERM) or number "
                                                        "(1 to %d)", e, ERRNO_MAX);
                                errnum = (int) v;
                        }
                }
                r = seccomp_push(c, allow, w, colon ? (size_t) (colon - w) : strlen(w), errnum);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pkey_caps(struct inikey_ctx *c) {
        struct profile *p = kp(c);
        if (!c->continuation)
                p->n_caps = 0;
        if (c->n == 1 && streq(c->w[0].s, "none") && !c->continuation)
                return 0;
        if (c->n == 0 && !c->continuation)
                return inikey_fail(c, "expected none or capability names such as CAP_NET_BIND_SERVICE");
        for (size_t i = 0; i < c->n; i++) {
                int r = pkey_word_cstr(c, i, "capability");
                if (r < 0)
                        return r;
                const char *w = c->w[i].s, *name = w;
                if (strncasecmp(name, "cap_", 4) == 0)
                        name += 4;
                int cap = *name ? capng_name_to_capability(name) : -1;
                if (cap < 0)
                        return inikey_fail(c, "unknown capability '%.40s' (or none)", w);
                bool dup = false;
                for (size_t k = 0; k < p->n_caps; k++)
                        dup |= p->caps[k] == cap;
                if (dup)
                        continue;
                if (p->n_caps >= PROFILE_MAX_CAPS)
                        return inikey_fail(c, "too many capabilities (at most %d)", PROFILE_MAX_CAPS);
                int *t = pkey_grow(p->caps, p->n_caps, sizeof(*t));
                if (!t)
                        return inikey_oom(c);
                p->caps = t;
                p->caps[p->n_caps++] = cap;
        }
        return 0;
}
