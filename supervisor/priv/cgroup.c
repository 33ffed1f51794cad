/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cgroup.h"
#include "fd-util.h"
#include "loop.h"
#include "util.h"

/* The first cgroup2 mount point in our mount namespace. */
static int find_cgroup2_mount(char *buf, size_t len) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[4096];
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char *sep = strstr(line, " - ");
                if (!sep || strncmp(sep, " - cgroup2 ", 11) != 0)
                        continue;
                /* field 5 is the mount point */
                char *p = line;
                for (int i = 0; i < 4 && p; i++) {
                        p = strchr(p, ' ');
                        if (p)
                                p++;
                }
                if (!p)
                        continue;
                char *e = strchr(p, ' ');
                if (!e)
                        continue;
                if ((size_t) (e - p) >= len)
                        return -ENAMETOOLONG;
                memcpy(buf, p, (size_t) (e - p));
                buf[e - p] = '\0';
                return 0;
        }
        return -ENOENT;
}

static int own_cgroup(char *buf, size_t len) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
        char line[4096];
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        size_t n = strlen(line + 3);
                        if (n >= len)
                                return -ENAMETOOLONG;
                        memcpy(buf, line + 3, n + 1);
                        return 0;
                }
        return -ENOENT;
}

static bool has_word(const char *list, const char *w) {
        size_t n = strlen(w);
        for (const char *p = list; (p = strstr(p, w)); p += n)
                if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

static int open_root(struct cgroup_ctx *c, const char *path, struct sbx_error *err) {
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "cgroup: mkdir %s", path);
        c->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c->root_fd < 0)
                return sbx_error_set(err, errno, "cgroup: open %s", path);
        if (faccessat(c->root_fd, "cgroup.procs", W_OK, 0) < 0)
                return sbx_error_set(err, errno, "cgroup: %s/cgroup.procs is not writable", path);
        c->root = strdup(path);
        c->kill = true; /* checked per job: cgroup.kill only exists below the root */

        /* Enable what the parent offers; a missing controller is not an
         * error, it only moves that limit to rlimits. */
        _cleanup_free_ char *ctrl = NULL;
        if (read_file_at(c->root_fd, "cgroup.controllers", 4096, &ctrl, NULL) == 0) {
                if (has_word(ctrl, "memory") && fd_write_at(c->root_fd, "cgroup.subtree_control", "+memory") == 0)
                        c->memory = true;
                if (has_word(ctrl, "pids") && fd_write_at(c->root_fd, "cgroup.subtree_control", "+pids") == 0)
                        c->pids = true;
                if (has_word(ctrl, "cpu") && fd_write_at(c->root_fd, "cgroup.subtree_control", "+cpu") == 0)
                        c->cpu = true;
        }
        c->enabled = true;
        return 0;
}

int cgroup_setup(const char *cfg, struct cgroup_ctx *c, struct sbx_error *err) {
        char mnt[1024], own[2048], path[4096];
        memset(c, 0, sizeof(*c));
        c->root_fd = -1;
        list_init(&c->releasing);

        if (streq(cfg, "none")) {
                c->how = "disabled by configuration";
                return 0;
        }
        if (!streq(cfg, "auto")) {
                c->how = "configured";
                return open_root(c, cfg, err);
        }
        if (find_cgroup2_mount(mnt, sizeof(mnt)) < 0) {
                c->how = "no cgroup2 mount";
                return 0;
        }
        if (own_cgroup(own, sizeof(own)) < 0) {
                c->how = "no cgroup2 membership in /proc/self/cgroup";
                return 0;
        }
        if (streq(own, "/")) {
                /* At the root of the hierarchy (hybrid hosts, containers
                 * without systemd): a subtree of our own is ours to manage. */
                snprintf(path, sizeof(path), "%s/sbx-supervisord", mnt);
                c->how = "created";
                struct sbx_error e;
                if (open_root(c, path, &e) < 0) {
                        cgroup_teardown(c);
                        c->how = "cgroup2 root not writable";
                }
                return 0;
        }
        /* Below the root: only a cgroup systemd delegated to us (Delegate=yes
         * marks it with the trusted.delegate xattr) is ours to split. */
        snprintf(path, sizeof(path), "%s%s", mnt, own);
        char val[8] = "";
        ssize_t n = getxattr(path, "trusted.delegate", val, sizeof(val) - 1);
        if (n <= 0 || val[0] != '1') {
                c->how = "own cgroup not delegated (set Delegate=yes or cgroup = DIR)";
                return 0;
        }
        /* No internal processes: the daemon moves into a leaf of its own so
         * its cgroup can hold the job cgroups as siblings. */
        char leaf[4200];
        snprintf(leaf, sizeof(leaf), "%s/supervisor", path);
        if (mkdir(leaf, 0755) < 0 && errno != EEXIST) {
                c->how = "cannot create supervisor leaf";
                return 0;
        }
        char pid[32];
        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        _cleanup_close_ int lfd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (lfd < 0 || fd_write_at(lfd, "cgroup.procs", pid) < 0) {
                c->how = "cannot move into supervisor leaf";
                return 0;
        }
        c->how = "delegated";
        struct sbx_error e;
        if (open_root(c, path, &e) < 0) {
                cgroup_teardown(c);
                c->how = "delegated cgroup not usable";
        }
        return 0;
}

struct releasing {
        struct source src;
        struct cgroup_ctx *c;
        struct list link;
        char name[64];
        void (*gone)(void *arg);
        void *arg;
};

static void release_free(struct releasing *rl) {
        loop_del(&rl->src);
        close(rl->src.fd);
        list_del(&rl->link);
        rl->c->n_releasing--;
        loop_defer_free(free, rl);
}

static bool populated(int events_fd) {
        char buf[256];
        ssize_t n = pread(events_fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        return !strstr(buf, "populated 0");
}

static void on_events(struct source *s, uint32_t events) {
        struct releasing *rl = container_of(s, struct releasing, src);
        if (populated(rl->src.fd))
                return;
        unlinkat(rl->c->root_fd, rl->name, AT_REMOVEDIR);
        if (rl->gone)
                rl->gone(rl->arg);
        release_free(rl);
}

void cgroup_job_release(struct cgroup_ctx *c, const char *id, void (*gone)(void *arg), void *arg) {
        char name[64];
        snprintf(name, sizeof(name), "job-%s", id);
        if (unlinkat(c->root_fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
                if (gone)
                        gone(arg);
                return;
        }
        if (errno != EBUSY)
                return;
        struct releasing *rl = calloc(1, sizeof(*rl));
        if (!rl)
                return; /* reaped at the next start */
        int dfd = openat(c->root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = dfd >= 0 ? openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC) : -1;
        if (dfd >= 0)
                close(dfd);
        /* cgroup.events signals a change as an exceptional condition. */
        if (fd < 0 || loop_add(&rl->src, fd, EPOLLPRI, on_events) < 0) {
                if (fd >= 0)
                        close(fd);
                free(rl);
                return;
        }
        rl->c = c;
        rl->gone = gone;
        rl->arg = arg;
        snprintf(rl->name, sizeof(rl->name), "%s", name);
        list_add_tail(&c->releasing, &rl->link);
        c->n_releasing++;
        /* It may have emptied before the watch began. */
        on_events(&rl->src, EPOLLPRI);
}

void cgroup_teardown(struct cgroup_ctx *c) {
        struct list *pos, *tmp;
        if (c->releasing.next)
                list_for_each_safe(pos, tmp, &c->releasing) {
                        struct releasing *rl = list_entry(pos, struct releasing, link);
                        unlinkat(c->root_fd, rl->name, AT_REMOVEDIR);
                        /* The loop is gone by now: nothing to defer to. A
                         * cgroup still populated keeps its uid from the
                         * pool (the pool goes with the daemon). */
                        if (rl->gone && !populated(rl->src.fd))
                                rl->gone(rl->arg);
                        else
                                free(rl->arg);
                        close(rl->src.fd);
                        list_del(&rl->link);
                        free(rl);
                }
        if (c->root_fd >= 0)
                close(c->root_fd);
        c->root_fd = -1;
        free(c->root);
        c->root = NULL;
        c->enabled = false;
}

int cgroup_job_create(struct cgroup_ctx *c, const char *id, const struct policy_decision *d, int *ret_fd, unsigned *ret_limits) {
        char name[64], v[64];
        unsigned limits = 0;
        snprintf(name, sizeof(name), "job-%s", id);
        if (mkdirat(c->root_fd, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(c->root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (c->memory && d->memory != PROTO_UNSET) {
                snprintf(v, sizeof(v), "%" PRIu64, d->memory);
                if (fd_write_at(fd, "memory.max", v) == 0) {
                        fd_write_at(fd, "memory.swap.max", "0");
                        limits |= CG_LIMIT_MEMORY;
                }
        }
        if (c->pids && d->processes != PROTO_UNSET) {
                snprintf(v, sizeof(v), "%" PRIu64, d->processes);
                if (fd_write_at(fd, "pids.max", v) == 0)
                        limits |= CG_LIMIT_PIDS;
        }
        /* Bandwidth: QUOTA microseconds of CPU time in every 100 ms. */
        if (c->cpu && d->cpu_milli != PROTO_UNSET) {
                snprintf(v, sizeof(v), "%" PRIu64 " 100000", d->cpu_milli * 100);
                if (fd_write_at(fd, "cpu.max", v) == 0)
                        limits |= CG_LIMIT_CPU;
        }
        *ret_fd = fd;
        *ret_limits = limits;
        return 0;
}

int cgroup_job_kill(struct cgroup_ctx *c, int fd) {
        int r = fd_write_at(fd, "cgroup.kill", "1");
        if (r == -ENOENT)
                c->kill = false;
        return r;
}

int cgroup_job_cpu_usec(int fd, uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        int r = read_file_at(fd, "cpu.stat", 4096, &s, NULL);
        if (r < 0)
                return r;
        char *p = strstr(s, "usage_usec ");
        if (!p)
                return -ENOENT;
        *ret = strtoull(p + 11, NULL, 10);
        return 0;
}

uint64_t cgroup_job_oom_kills(int fd) {
        _cleanup_free_ char *s = NULL;
        if (read_file_at(fd, "memory.events", 4096, &s, NULL) < 0)
                return 0;
        char *p = strstr(s, "oom_kill ");
        return p ? strtoull(p + 9, NULL, 10) : 0;
}

json_t *cgroup_job_memory_events(int fd) {
        _cleanup_free_ char *s = NULL;
        if (read_file_at(fd, "memory.events", 4096, &s, NULL) < 0)
                return NULL;
        json_t *o = json_object();
        char *save = NULL;
        for (char *line = strtok_r(s, "\n", &save); o && line; line = strtok_r(NULL, "\n", &save)) {
                char *sp = strchr(line, ' ');
                if (!sp)
                        continue;
                *sp = '\0';
                json_object_set_new(o, line, json_integer((json_int_t) strtoull(sp + 1, NULL, 10)));
        }
        return o;
}

int cgroup_job_remove(struct cgroup_ctx *c, const char *id) {
        char name[64];
        snprintf(name, sizeof(name), "job-%s", id);
        if (unlinkat(c->root_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* Wait (briefly, bounded) until the cgroup is empty after a kill. */
static void wait_unpopulated(int fd) {
        for (int i = 0; i < 200; i++) {
                _cleanup_free_ char *ev = NULL;
                if (read_file_at(fd, "cgroup.events", 4096, &ev, NULL) < 0)
                        return;
                if (strstr(ev, "populated 0"))
                        return;
                poll(NULL, 0, 10);
        }
}

int cgroup_job_open(struct cgroup_ctx *c, const char *id, int *ret_fd) {
        char name[64];
        snprintf(name, sizeof(name), "job-%s", id);
        int fd = openat(c->root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

int cgroup_reap_orphans(struct cgroup_ctx *c, bool (*keep)(const char *id, void *arg), void *arg) {
        int n = 0;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_dup(c->root_fd, &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strncmp(de->d_name, "job-", 4) != 0 || (keep && keep(de->d_name + 4, arg)))
                        continue;
                _cleanup_close_ int fd = openat(c->root_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                n++;
                if (fd_write_at(fd, "cgroup.kill", "1") < 0) {
                        /* Without cgroup.kill, signal each pid listed. */
                        _cleanup_free_ char *procs = NULL;
                        if (read_file_at(fd, "cgroup.procs", 1 << 20, &procs, NULL) == 0)
                                for (char *p = procs; *p;) {
                                        pid_t pid = (pid_t) strtol(p, &p, 10);
                                        if (pid > 0)
                                                kill(pid, SIGKILL);
                                        while (*p == '\n')
                                                p++;
                                        if (pid <= 0)
                                                break;
                                }
                }
                wait_unpopulated(fd);
                unlinkat(c->root_fd, de->d_name, AT_REMOVEDIR);
        }
        return n;
}
