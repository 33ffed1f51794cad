/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netfwd.h"
#include "util.h"

#define CONF4 "/proc/sys/net/ipv4/conf/"
#define CONF6 "/proc/sys/net/ipv6/conf/"
#define MAX_UPLINKS 64
#define RECORD_MAX 65536

/* A name we write into /proc paths and nft rules: the kernel allows
 * quotes and more in interface names; such an interface is left alone. */
static bool ifname_plain(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n >= IFNAMSIZ || streq(s, ".") || streq(s, ".."))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
                      *s == '_' || *s == '.' || *s == '@'))
                        return false;
        return true;
}

/* The first byte of a sysctl file: '0' or '1' (-errno; -ENOENT where the
 * kernel has no such setting). */
static int sysctl_get(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        char c;
        if (fd < 0)
                return -errno;
        ssize_t k = read(fd, &c, 1);
        if (k < 0)
                return -errno;
        return k == 1 && (c == '0' || c == '1') ? c : -EINVAL;
}

static int sysctl_set(const char *path, char value) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        return write(fd, &value, 1) == 1 ? 0 : -errno;
}

/* Only what netfwd_plan() records is ever written back: a forwarding
 * switch under /proc/sys/net, "0" or "1". The record is root's, in the
 * state directory, but is read like any input. */
static bool record_line_valid(const char *path, const char *value) {
        const char *rest;
        if (!streq(value, "0") && !streq(value, "1"))
                return false;
        if (strncmp(path, CONF4, strlen(CONF4)) == 0)
                rest = path + strlen(CONF4);
        else if (strncmp(path, CONF6, strlen(CONF6)) == 0)
                rest = path + strlen(CONF6);
        else
                return false;
        const char *slash = strchr(rest, '/');
        char name[IFNAMSIZ];
        if (!slash || (size_t) (slash - rest) >= sizeof(name))
                return false;
        memcpy(name, rest, (size_t) (slash - rest));
        name[slash - rest] = '\0';
        return ifname_plain(name) && (streq(slash, "/forwarding") || streq(slash, "/force_forwarding"));
}

/* Write back each line of text, in order (a host-wide switch first: it
 * resets the interfaces' own, which follow it). */
static int restore_text(char *text, unsigned *ret_n, struct sbx_error *err) {
        unsigned n = 0;
        int r = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char path[256], value[8];
                if (line[0] == '#')
                        continue;
                if (sscanf(line, "%255s %7s", path, value) != 2 || !record_line_valid(path, value)) {
                        if (r == 0)
                                r = sbx_error_msg(err, EINVAL, "%s: not a forwarding setting: '%.80s'", NETFWD_RECORD, line);
                        continue;
                }
                int k = sysctl_set(path, value[0]);
                if (k == -ENOENT)
                        continue; /* the interface is gone, and its setting with it */
                if (k < 0) {
                        if (r == 0)
                                r = sbx_error_set(err, k, "%s: putting back %s = %s", NETFWD_RECORD, path, value);
                        continue;
                }
                n++;
        }
        *ret_n = n;
        return r;
}

int netfwd_restore(int dirfd, unsigned *ret_n, struct sbx_error *err) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        *ret_n = 0;
        int r = read_file_at(dirfd, NETFWD_RECORD, RECORD_MAX, &text, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return sbx_error_set(err, r, "%s", NETFWD_RECORD);
        if ((r = restore_text(text, ret_n, err)) < 0)
                return r; /* the record stays for the next start */
        if (unlinkat(dirfd, NETFWD_RECORD, 0) < 0 && errno != ENOENT)
                return sbx_error_set(err, errno, "%s: removing it", NETFWD_RECORD);
        fsync(dirfd);
        return 0;
}

struct uplinks {
        char name[MAX_UPLINKS][IFNAMSIZ];
        unsigned n;
};

static void uplink_add(struct uplinks *u, const char *name, const char *ifprefix) {
        if (streq(name, "lo") || strncmp(name, ifprefix, strlen(ifprefix)) == 0 || !ifname_plain(name))
                return;
        for (unsigned i = 0; i < u->n; i++)
                if (streq(u->name[i], name))
                        return;
        if (u->n < MAX_UPLINKS)
                snprintf(u->name[u->n++], IFNAMSIZ, "%s", name);
}

/* The interfaces the main table routes by (/proc/net/route: IPv4, the
 * main table; /proc/net/ipv6_route without link-local, multicast and
 * local routes): where a job's packets leave and its answers come in. */
static int uplinks_read(struct uplinks *u, bool v6, const char *ifprefix) {
        _cleanup_fclose_ FILE *f = fopen(v6 ? "/proc/net/ipv6_route" : "/proc/net/route", "re");
        char line[512];
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char dev[64], dst[40];
                unsigned long flags;
                if (!v6) {
                        if (sscanf(line, "%63s", dev) == 1 && !streq(dev, "Iface"))
                                uplink_add(u, dev, ifprefix);
                        continue;
                }
                /* dst plen src plen nexthop metric refcnt use flags dev */
                if (sscanf(line, "%39s %*s %*s %*s %*s %*s %*s %*s %lx %63s", dst, &flags, dev) != 3)
                        continue;
                bool link_local = strncmp(dst, "fe8", 3) == 0 || strncmp(dst, "fe9", 3) == 0 || strncmp(dst, "fea", 3) == 0 ||
                                  strncmp(dst, "feb", 3) == 0;
                if (link_local || strncmp(dst, "ff", 2) == 0 || (flags & 0x80000000ul) /* RTF_LOCAL */)
                        continue;
                uplink_add(u, dev, ifprefix);
        }
        return 0;
}

/* Append "PATH 0\n" to the record and the interface to the guard. */
static int plan(char *rec, size_t rec_len, char *guard, const char *path, const char *ifname, char found) {
        size_t n = strlen(rec), g = strlen(guard);
        int k = snprintf(rec + n, rec_len - n, "%s %c\n", path, found);
        if (k < 0 || (size_t) k >= rec_len - n)
                return -E2BIG;
        if (!ifname)
                return 0;
        k = snprintf(guard + g, NETFWD_GUARD_MAX - g, "%s\"%s\"", g ? ", " : "", ifname);
        return k < 0 || (size_t) k >= NETFWD_GUARD_MAX - g ? -E2BIG : 0;
}

/* What is off and must be on: the record's lines, in the order they are
 * switched (and put back). */
static int plan_all(struct netfwd *f, bool v6, const char *ifprefix, char *rec, size_t rec_len, struct sbx_error *err) {
        struct uplinks u4 = { .n = 0 }, u6 = { .n = 0 };
        char path[320];
        int r, v;
        if ((r = uplinks_read(&u4, false, ifprefix)) < 0)
                return sbx_error_set(err, r, "/proc/net/route");
        for (unsigned i = 0; i < u4.n; i++) {
                snprintf(path, sizeof(path), CONF4 "%s/forwarding", u4.name[i]);
                if ((v = sysctl_get(path)) < 0)
                        return sbx_error_set(err, v, "%s", path);
                if (v == '0' && (r = plan(rec, rec_len, f->guard4, path, u4.name[i], '0')) < 0)
                        return sbx_error_set(err, r, "too many interfaces to forward by");
        }
        if (!v6)
                return 0;
        if ((v = sysctl_get(CONF6 "all/forwarding")) < 0)
                return sbx_error_set(err, v, "net.ipv6.conf.all.forwarding");
        if (v == '1')
                return 0; /* forwarding everywhere already, as found */
        f->force6 = sysctl_get(CONF6 "all/force_forwarding") >= 0;
        if ((r = uplinks_read(&u6, true, ifprefix)) < 0)
                return sbx_error_set(err, r, "/proc/net/ipv6_route");
        if (!f->force6) {
                /* Before Linux 6.17: the host-wide switch, which also sets
                 * every interface's own (host or router role): those that
                 * were on go back on after it. */
                f->global6 = true;
                if ((r = plan(rec, rec_len, f->guard6, CONF6 "all/forwarding", NULL, '0')) < 0)
                        return sbx_error_set(err, r, "too many interfaces to forward by");
                _cleanup_closedir_ DIR *dir = opendir(CONF6);
                struct dirent *de;
                if (!dir)
                        return sbx_error_set(err, errno, "%s", CONF6);
                while ((de = readdir(dir))) {
                        if (de->d_name[0] == '.' || streq(de->d_name, "all") || !ifname_plain(de->d_name))
                                continue;
                        snprintf(path, sizeof(path), CONF6 "%s/forwarding", de->d_name);
                        if (sysctl_get(path) == '1' && (r = plan(rec, rec_len, f->guard6, path, NULL, '1')) < 0)
                                return sbx_error_set(err, r, "too many interfaces to put back");
                }
                return 0;
        }
        for (unsigned i = 0; i < u6.n; i++) {
                snprintf(path, sizeof(path), CONF6 "%s/force_forwarding", u6.name[i]);
                if ((v = sysctl_get(path)) < 0)
                        return sbx_error_set(err, v, "%s", path);
                if (v == '0' && (r = plan(rec, rec_len, f->guard6, path, u6.name[i], '0')) < 0)
                        return sbx_error_set(err, r, "too many interfaces to forward by");
        }
        return 0;
}

int netfwd_plan(struct netfwd *f, int dirfd, bool v6, const char *ifprefix, struct sbx_error *err) {
        static const char head[] = "# sbx-supervisord: forwarding switches it turned on, with the values it found\n";
        _cleanup_free_ char *rec = calloc(1, RECORD_MAX);
        int r;
        memset(f, 0, sizeof(*f));
        if (!rec)
                return sbx_error_set(err, ENOMEM, "forwarding");
        if (faccessat(dirfd, NETFWD_RECORD, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return sbx_error_msg(err, EEXIST, "%s: what an earlier run switched could not be put back (see the log)",
                                     NETFWD_RECORD);
        memcpy(rec, head, sizeof(head));
        if ((r = plan_all(f, v6, ifprefix, rec, RECORD_MAX, err)) < 0)
                return r;
        if (streq(rec, head))
                return 0; /* nothing to switch */
        if ((r = write_file_durable(dirfd, NETFWD_RECORD, rec, strlen(rec), 0600, true)) < 0)
                return sbx_error_set(err, r, "%s", NETFWD_RECORD);
        f->record = TAKE_PTR(rec);
        return 0;
}

int netfwd_switch(struct netfwd *f, int dirfd, struct sbx_error *err) {
        int r = 0;
        if (!f->record)
                return 0;
        /* Each line's switch on ('1' whatever it was: the host-wide IPv6
         * one first, then the interfaces it would have turned off). */
        _cleanup_free_ char *copy = strdup(f->record);
        char *save = NULL;
        if (!copy)
                return sbx_error_set(err, ENOMEM, "forwarding");
        for (char *line = strtok_r(copy, "\n", &save); line && r == 0; line = strtok_r(NULL, "\n", &save)) {
                char path[256];
                if (line[0] == '#' || sscanf(line, "%255s", path) != 1)
                        continue;
                if ((r = sysctl_set(path, '1')) < 0)
                        sbx_error_set(err, r, "%s", path);
        }
        if (r < 0) {
                struct sbx_error ignored;
                netfwd_teardown(f, dirfd, &ignored);
        }
        return r;
}

int netfwd_teardown(struct netfwd *f, int dirfd, struct sbx_error *err) {
        unsigned n;
        int r = 0;
        if (f->record) {
                r = restore_text(f->record, &n, err);
                free(f->record);
                f->record = NULL;
                if (r == 0 && unlinkat(dirfd, NETFWD_RECORD, 0) < 0 && errno != ENOENT)
                        r = sbx_error_set(err, errno, "%s: removing it", NETFWD_RECORD);
                if (r == 0)
                        fsync(dirfd);
        }
        f->guard4[0] = f->guard6[0] = '\0';
        return r;
}

int netfwd_veth(const char *ifname, bool v6, bool force6, struct sbx_error *err) {
        char path[256];
        int r;
        snprintf(path, sizeof(path), CONF4 "%s/forwarding", ifname);
        if ((r = sysctl_set(path, '1')) < 0)
                return sbx_error_set(err, r, "%s", path);
        if (!v6)
                return 0;
        snprintf(path, sizeof(path), CONF6 "%s/forwarding", ifname);
        if ((r = sysctl_set(path, '1')) < 0)
                return sbx_error_set(err, r, "%s", path);
        snprintf(path, sizeof(path), CONF6 "%s/force_forwarding", ifname);
        if (force6 && (r = sysctl_set(path, '1')) < 0)
                return sbx_error_set(err, r, "%s", path);
        return 0;
}
