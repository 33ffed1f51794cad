/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "util.h"

uint64_t now_mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

uint64_t now_mono_ms(void) {
        return now_mono_us() / 1000;
}

uint64_t now_real_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

const char *format_rfc3339(uint64_t real_ms, char *buf, size_t len) {
        time_t t = (time_t) (real_ms / 1000);
        struct tm tm;
        char base[32];
        gmtime_r(&t, &tm);
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, len, "%s.%03uZ", base, (unsigned) (real_ms % 1000));
        return buf;
}

bool name_valid(const char *s) {
        if (!*s || *s == '.' || strlen(s) > 64)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '-' || *p == '_' || *p == '.'))
                        return false;
        return true;
}

int opendir_dup(int dirfd, DIR **ret) {
        int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        rewinddir(d); /* a dup shares the offset of a stream read before */
        *ret = d;
        return 0;
}

/* Deeper than this, a directory is not opened but moved up to the top of
 * the tree being removed and taken from there: a job may build a tree deeper
 * than the daemon has file descriptors, and it must still go. */
#define RM_DEPTH 32

struct rm_walk {
        int top;        /* the directory being emptied */
        unsigned moved; /* subtrees moved up to it */
        int err;
};

static void rm_note(struct rm_walk *w, int e) {
        if (w->err == 0)
                w->err = e;
}

static void rm_children(struct rm_walk *w, int fd, unsigned depth);

/* Remove the directory dirfd/name with everything in it, or move it under
 * the top when it is too deep to open. */
static void rm_subdir(struct rm_walk *w, int dirfd, const char *name, unsigned depth) {
        if (depth >= RM_DEPTH) {
                /* Never over a name the job left at the top. */
                for (;;) {
                        char to[32];
                        snprintf(to, sizeof(to), ".sbx-rm-%u", w->moved++);
                        if (renameat2(dirfd, name, w->top, to, RENAME_NOREPLACE) == 0)
                                return;
                        if (errno != EEXIST) {
                                rm_note(w, -errno);
                                return;
                        }
                }
        }
        int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
                rm_note(w, -errno);
                return;
        }
        rm_children(w, sub, depth + 1);
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                rm_note(w, -errno);
}

/* Empty the directory fd (consumed). */
static void rm_children(struct rm_walk *w, int fd, unsigned depth) {
        DIR *d = fdopendir(fd);
        if (!d) {
                rm_note(w, -errno);
                close(fd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (de->d_type == DT_DIR) {
                        rm_subdir(w, dirfd(d), de->d_name, depth);
                        continue;
                }
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        if (errno == EISDIR)
                                rm_subdir(w, dirfd(d), de->d_name, depth);
                        else if (errno != ENOENT)
                                rm_note(w, -errno);
                }
        }
        closedir(d);
}

int rm_rf_at(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ENOTDIR || errno == ELOOP)
                        return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
                return -errno;
        }
        struct rm_walk w = { .top = fd };
        /* Pass after pass: each removes up to RM_DEPTH levels and moves what
         * lies deeper up to the top; another pass is needed only when it
         * moved something. */
        for (;;) {
                unsigned moved = w.moved;
                int again = dup(fd);
                if (again < 0) {
                        rm_note(&w, -errno);
                        break;
                }
                lseek(again, 0, SEEK_SET);
                rm_children(&w, again, 1);
                if (w.moved == moved)
                        break;
        }
        close(fd);
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                rm_note(&w, -errno);
        return w.err;
}

void hex_encode(const unsigned char *in, size_t len, char *out) {
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < len; i++) {
                out[2 * i] = digits[in[i] >> 4];
                out[2 * i + 1] = digits[in[i] & 15];
        }
        out[2 * len] = '\0';
}

char *json_line(const json_t *j, size_t *ret_len) {
        char *s = json_dumps(j, JSON_COMPACT);
        if (!s)
                return NULL;
        size_t n = strlen(s);
        s[n] = '\n'; /* in the NUL's place */
        *ret_len = n + 1;
        return s;
}

int json_line_append(char **buf, size_t *len, json_t *msg) {
        size_t n;
        _cleanup_free_ char *s = msg ? json_line(msg, &n) : NULL;
        json_decref(msg);
        if (!s)
                return -ENOMEM;
        char *nb = realloc(*buf, *len + n);
        if (!nb)
                return -ENOMEM;
        *buf = nb;
        memcpy(nb + *len, s, n);
        *len += n;
        return 0;
}

bool words_contain(const char *list, const char *word) {
        size_t n = strlen(word);
        for (const char *p = list; *p;) {
                size_t k = strcspn(p, " ");
                if (k == n && strncmp(p, word, n) == 0)
                        return true;
                p += k + (p[k] == ' ');
        }
        return false;
}
