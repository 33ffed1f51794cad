/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-privd(8): started as root, by the process that will drop to the
 * front's user (one end of a socketpair, --fd) or as a service of its own
 * that fronts connect to (--socket, --listen), with everything it needs to
 * know on its command line; it reads no file of the front's choosing. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "jobfs.h"
#include "macro.h"
#include "parse.h"
#include "privd.h"

#define DEFAULT_WORKSPACE_MAX (1ull << 30)
#define MAX_JOBS_LIMIT 65536u

static _noreturn_ void usage(int code) {
        fputs("Usage: sbx-privd {--fd N | --socket PATH | --listen N} --front {UID:GID | USER} --uids FIRST-LAST --cgroup DIR --workspace DIR\n"
              "                 --launcher PATH [--profile-path DIRS] [--workspace-max SIZE] [--max-jobs N]\n"
              "                 [--net-pool A.B.C.D/N --net-state DIR [--net-pool6 X:Y::/N]] [--net-audit RING_BYTES]\n"
              "                 [--bundle-cache DIR] [--park-timeout SECONDS] [--config FILE]\n",
              code ? stderr : stdout);
        exit(code);
}

static _noreturn_ _printf_(1, 2) void die(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("sbx-privd: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        exit(2);
}

static uint64_t number(const char *opt, const char *s, uint64_t max) {
        uint64_t v;
        if (parse_uint64(s, max, &v) < 0)
                die("%s: expected a number up to %llu, got '%s'", opt, (unsigned long long) max, s);
        return v;
}

static const char *abs_path(const char *opt, const char *s) {
        if (s[0] != '/' || strstr(s, "/../") || strlen(s) > 1024)
                die("%s: expected an absolute path without '..', got '%s'", opt, s);
        return s;
}

/* A directory only root may change: otherwise whoever can write it could
 * swap in a symlink or a mount under the names the helper makes. */
static int open_root_dir(const char *opt, const char *path, bool cgroup2) {
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                die("%s %s: %s", opt, path, strerror(errno));
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        struct statfs sf;
        if (fd < 0 || fstat(fd, &st) < 0 || fstatfs(fd, &sf) < 0)
                die("%s %s: %s", opt, path, strerror(errno));
        if (st.st_uid != 0 || (st.st_mode & 022))
                die("%s %s: must be owned by root and writable by no one else", opt, path);
        if (cgroup2 && sf.f_type != CGROUP2_SUPER_MAGIC)
                die("%s %s: not on a cgroup2 file system", opt, path);
        return fd;
}

static void parse_uids(const char *s, struct privd_conf *c) {
        char *dash = strchr(s, '-');
        if (!dash)
                die("--uids: expected FIRST-LAST, got '%s'", s);
        *dash = '\0';
        uint64_t a = number("--uids", s, UINT32_MAX - 1), b = number("--uids", dash + 1, UINT32_MAX - 1);
        *dash = '-';
        if (b < a || b - a + 1 > UIDPOOL_MAX_SIZE || a == 0 || (a <= 65534 && b >= 65534))
                die("--uids %s: at most %u uids, without 0 and 65534", s, UIDPOOL_MAX_SIZE);
        c->uid_first = (uid_t) a;
        c->uid_count = (uint32_t) (b - a + 1);
}

/* ADDRESS/PREFIX of family af, prefix min to max, no bit set past the
 * prefix (a network's address has none). */
static unsigned parse_net(const char *opt, const char *s, int af, unsigned min, unsigned max, uint8_t *ret_addr) {
        char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
        unsigned bytes = af == AF_INET ? 4 : 16;
        uint8_t a[16];
        if (strlen(s) >= sizeof(buf))
                goto bad;
        snprintf(buf, sizeof(buf), "%s", s);
        if (!(slash = strchr(buf, '/')))
                goto bad;
        *slash = '\0';
        errno = 0;
        unsigned long prefix = strtoul(slash + 1, &end, 10);
        if (inet_pton(af, buf, a) != 1 || errno || end == slash + 1 || *end || prefix < min || prefix > max)
                goto bad;
        for (unsigned bit = (unsigned) prefix; bit < bytes * 8; bit++)
                if (a[bit / 8] & (0x80u >> (bit % 8)))
                        die("%s %s: bits set past the /%lu (a network's address has none)", opt, s, prefix);
        memcpy(ret_addr, a, bytes);
        return (unsigned) prefix;
bad:
        die("%s: expected an %s network from /%u to /%u, got '%s'", opt, af == AF_INET ? "IPv4" : "IPv6", min, max, s);
}

/* The front's uid and gid, numbers from whoever starts the helper as root
 * (SO_PEERCRED would name that starter: a socketpair's credentials are
 * its maker's, taken before the front drops to its user). Never root's,
 * and never a job uid: the workspace walks and the bundle check trust
 * exactly this owner. */
static void parse_front(const char *s, struct privd_conf *c) {
        char buf[64];
        /* A user's name: its uid and its primary group, as the front's
         * unit (User=) gets them. */
        if (!strchr(s, ':')) {
                struct passwd *pw = getpwnam(s);
                if (!pw)
                        die("--front %s: no such user", s);
                if (pw->pw_uid == 0 || pw->pw_gid == 0)
                        die("--front %s: the front does not run as root (uid or gid 0)", s);
                c->front_uid = pw->pw_uid;
                c->front_gid = pw->pw_gid;
                return;
        }
        snprintf(buf, sizeof(buf), "%s", s);
        char *colon = strchr(buf, ':');
        if (!colon)
                die("--front: expected UID:GID, got '%s'", s);
        *colon = '\0';
        uint64_t u = number("--front", buf, UINT32_MAX - 1), g = number("--front", colon + 1, UINT32_MAX - 1);
        if (u == 0 || g == 0)
                die("--front %s: the front does not run as root (uid or gid 0)", s);
        c->front_uid = (uid_t) u;
        c->front_gid = (gid_t) g;
}

static void parse_args(int argc, char **argv, struct privd_conf *c) {
        static const struct option opts[] = {
                { "fd", required_argument, NULL, 'f' },        { "uids", required_argument, NULL, 'u' },
                { "cgroup", required_argument, NULL, 'c' },    { "workspace", required_argument, NULL, 'w' },
                { "launcher", required_argument, NULL, 'l' },  { "profile-path", required_argument, NULL, 'p' },
                { "workspace-max", required_argument, NULL, 'W' }, { "max-jobs", required_argument, NULL, 'j' },
                { "net-pool", required_argument, NULL, 'n' },  { "net-pool6", required_argument, NULL, '6' },
                { "net-state", required_argument, NULL, 's' }, { "front", required_argument, NULL, 'F' },
                { "socket", required_argument, NULL, 'S' },    { "listen", required_argument, NULL, 'L' },
                { "bundle-cache", required_argument, NULL, 'B' }, { "net-audit", required_argument, NULL, 'a' },
                { "park-timeout", required_argument, NULL, 'P' }, { "config", required_argument, NULL, 'C' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int o;
        c->fd = c->listen_fd = -1;
        c->workspace_max = DEFAULT_WORKSPACE_MAX;
        c->park_ms = PRIVD_PARK_MS;
        while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (o) {
                case 'f': c->fd = (int) number("--fd", optarg, 1 << 20); break;
                case 'u': parse_uids(optarg, c); break;
                case 'F': parse_front(optarg, c); break;
                case 'c': c->cgroup = streq(optarg, "self") ? optarg : abs_path("--cgroup", optarg); break;
                case 'w': c->workspace = abs_path("--workspace", optarg); break;
                case 'l': c->launcher = abs_path("--launcher", optarg); break;
                case 'p': c->profile_path = optarg; break;
                case 'W':
                        if (parse_size(optarg, &c->workspace_max) < 0 || c->workspace_max == 0)
                                die("--workspace-max: expected a size such as 512M, got '%s'", optarg);
                        break;
                case 'j': c->max_jobs = (uint32_t) number("--max-jobs", optarg, MAX_JOBS_LIMIT); break;
                /* /8 to /30 (a /30 is one block) and /48 to /110: at
                 * most 65536 blocks are used, and a block's /126 lies
                 * within the last 32 bits of the IPv6 prefix. */
                case 'n': c->net_pool_prefix = parse_net("--net-pool", optarg, AF_INET, 8, 30, (uint8_t *) &c->net_pool); break;
                case '6': c->net_pool6_prefix = parse_net("--net-pool6", optarg, AF_INET6, 48, 110, c->net_pool6); break;
                case 's': c->net_state = abs_path("--net-state", optarg); break;
                case 'S': c->socket_path = abs_path("--socket", optarg); break;
                case 'L': c->listen_fd = (int) number("--listen", optarg, 1 << 20); break;
                case 'B': c->bundle_cache = abs_path("--bundle-cache", optarg); break;
                case 'C': c->config = abs_path("--config", optarg); break;
                case 'P': c->park_ms = (uint32_t) number("--park-timeout", optarg, 86400) * 1000u; break;
                case 'a':
                        /* The ring buffer map's size: a power of two, a
                         * page at least; its reply field is 32 bits. */
                        if (parse_size(optarg, &c->audit_ring) < 0 || c->audit_ring < (uint64_t) sysconf(_SC_PAGESIZE) ||
                            c->audit_ring > (1ull << 30) || (c->audit_ring & (c->audit_ring - 1)))
                                die("--net-audit: expected a power of two from a page to 1G, such as 256K, got '%s'", optarg);
                        break;
                case 'h': usage(0);
                default: usage(1);
                }
        }
        if ((c->fd >= 0) + (c->listen_fd >= 0) + !!c->socket_path != 1)
                die("one of --fd, --socket and --listen");
        if (optind != argc || !c->uid_count || !c->cgroup || !c->workspace || !c->launcher || !c->front_uid)
                usage(1);
        if (c->front_uid >= c->uid_first && c->front_uid - c->uid_first < c->uid_count)
                die("--front %u: a uid of the job range", (unsigned) c->front_uid);
        if (!c->net_pool_prefix && (c->net_pool6_prefix || c->net_state))
                die("--net-pool6 and --net-state go with --net-pool");
        if (c->net_pool_prefix && !c->net_state)
                die("--net-pool needs --net-state: the directory where the helper records the forwarding it switches on");
        if (!c->max_jobs)
                c->max_jobs = c->uid_count < MAX_JOBS_LIMIT ? c->uid_count : MAX_JOBS_LIMIT;
        if (c->park_ms && c->fd >= 0)
                c->park_ms = 0; /* with --fd the helper ends with its one front */
        if (access(c->launcher, X_OK) < 0)
                die("--launcher %s: %s", c->launcher, strerror(errno));
}

int main(int argc, char **argv) {
        struct privd_conf conf = {};
        struct privd p = {};
        parse_args(argc, argv, &conf);
        if (geteuid() != 0)
                die("must run as root (it makes cgroups, mounts and switches uids)");
        char why[512] = "";
        /* The caps first: a configuration that does not parse stops it
         * before it serves anyone. */
        if (conf.config && privd_caps_load(&p, conf.config, why, sizeof(why)) < 0)
                die("--config %s: %s", conf.config, why);
        int type;
        socklen_t tl = sizeof(type);
        if (conf.fd >= 0 && (getsockopt(conf.fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET))
                die("--fd %d: not a SOCK_SEQPACKET socket", conf.fd);
        /* The front's descriptors stay the front's: keep only stdio and
         * the socket, close-on-exec so no launcher inherits it. */
        for (int fd = 3; fd < 1024; fd++)
                if (fd != conf.fd && fd != conf.listen_fd)
                        close(fd);
        if (conf.fd >= 0 && fcntl(conf.fd, F_SETFD, FD_CLOEXEC) < 0)
                die("--fd: %s", strerror(errno));
        int lr = conf.fd < 0 ? privd_listen_open(&conf, why, sizeof(why)) : 0;
        if (lr < 0)
                die("%s %s: %s: %s", conf.socket_path ? "--socket" : "--listen", conf.socket_path ? conf.socket_path : "", why,
                    strerror(-lr));
        signal(SIGPIPE, SIG_IGN);
        p.conf = &conf;
        if (uidpool_init(&p.uids, conf.uid_first, conf.uid_count) < 0)
                die("--uids: cannot make the pool");
        p.jobs = calloc(conf.max_jobs, sizeof(*p.jobs));
        if (!p.jobs)
                die("out of memory");
        for (uint32_t i = 0; i < conf.max_jobs; i++)
                p.jobs[i].cgroup_fd = p.jobs[i].ws_fd = -1;
        static char self_cg[4096];
        if (streq(conf.cgroup, "self")) {
                int sr = privd_cgroup_self(self_cg, sizeof(self_cg));
                if (sr < 0)
                        die("--cgroup self: cannot tell this process's cgroup2 directory: %s", strerror(-sr));
                conf.cgroup = self_cg;
        }
        p.cgroup_fd = open_root_dir("--cgroup", conf.cgroup, true);
        int leaf = privd_cgroup_leaf(p.cgroup_fd);
        if (leaf < 0)
                die("--cgroup %s: the helper is in it and cannot move to its leaf sbx-privd: %s", conf.cgroup, strerror(-leaf));
        if (leaf > 0)
                privd_log("moved into %s/sbx-privd: the jobs' cgroups are its siblings", conf.cgroup);
        p.workspace_fd = open_root_dir("--workspace", conf.workspace, false);
        p.cg_have = jobfs_cgroup_controllers(p.cgroup_fd);
        int swept = jobfs_sweep(p.cgroup_fd, conf.workspace, p.workspace_fd);
        if (swept < 0)
                die("cannot list --cgroup or --workspace: %s", strerror(-swept));
        if (swept > 0)
                privd_log("removed %d cgroups and workspaces an earlier helper left", swept);
        if (conf.net_pool_prefix) {
                /* Root's alone, like the other two: its record is written
                 * back to /proc/sys at the next start. */
                close(open_root_dir("--net-state", conf.net_state, false));
                int nr = privd_net_setup(&p, why, sizeof(why));
                if (nr < 0)
                        privd_log("network: set-up failed, NET_OPEN will be refused: %s", why);
        }
        if (conf.config)
                privd_log("network caps: %zu network_allow entries of the tenants in %s", p.n_caps, conf.config);
        else if (conf.audit_ring)
                privd_log("network caps: no --config, so NET_ALLOW is not checked against the tenants' network_allow");
        if (conf.audit_ring) {
                if (privd_audit_setup(&p, why, sizeof(why)) < 0)
                        privd_log("network audit: cannot load it, NET_RING and the rest will be refused: %s", why);
        }
        if (conf.profile_path && asprintf(&p.profile_env, "SBX_PROFILE_PATH=%s", conf.profile_path) < 0)
                die("out of memory");
        if (privd_signals(&p) < 0)
                die("signalfd: %s", strerror(errno));
        privd_log("%s %d: front %u:%u, uids %u-%u, %u slots, cgroup %s, workspace %s", conf.fd >= 0 ? "serving fd" : "listening on fd",
                  conf.fd >= 0 ? conf.fd : conf.listen_fd, (unsigned) conf.front_uid, (unsigned) conf.front_gid, conf.uid_first,
                  conf.uid_first + conf.uid_count - 1, conf.max_jobs, conf.cgroup, conf.workspace);
        int r;
        for (;;) {
                p.fd = conf.fd >= 0 ? conf.fd : privd_accept(&p);
                if (p.fd < 0) {
                        r = p.fd;
                        break;
                }
                r = privd_serve(&p);
                if (r < 0 && r != -ECANCELED)
                        privd_log("socket: %s", strerror(-r));
                /* The front is gone (or the socket failed): no job outlives it. */
                privd_log_flush();
                /* A listening helper keeps what may outlive its front
                 * (sessions' sandboxes) for the next one. */
                privd_close_all(&p, conf.fd < 0 && r != -ECANCELED);
                privd_audit_front_gone(&p);
                close(p.fd);
                if (conf.fd >= 0 || r == -ECANCELED)
                        break;
                privd_log("front gone, its jobs closed but those parked; waiting for the next front");
        }
        privd_close_all(&p, false);
        privd_net_teardown(&p);
        privd_audit_teardown(&p);
        privd_log(r == -ECANCELED ? "stopped, every job closed" : "front gone, every job closed");
        if (conf.socket_path)
                (void) unlink(conf.socket_path);
        free(p.jobs);
        free(p.caps);
        uidpool_done(&p.uids);
        free(p.profile_env);
        return r < 0 && r != -ECANCELED ? 1 : 0;
}
