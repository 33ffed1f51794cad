/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "conf.h"
#include "netremote.h"
#include "policy.h"
#include "log.h"
#include "macro.h"
#include "privsep.h"

#ifndef SBX_LIBEXECDIR
#define SBX_LIBEXECDIR "/usr/libexec"
#endif

/* Where the helper makes workspaces: root's, and reachable (not
 * readable) by the job uids, whose launcher binds its own by path. */
static int workspace_dir(const struct config *cfg, char *buf, size_t len) {
        if (cfg->work_dir)
                snprintf(buf, len, "%s", cfg->work_dir);
        else
                snprintf(buf, len, "%s/work", cfg->state_dir);
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (chown(buf, 0, 0) < 0 || chmod(buf, 0755) < 0)
                return -errno;
        return 0;
}

/* Where the helper records the forwarding it switches on: root's, so the
 * front cannot write what the helper puts back at its next start. */
static int net_state_dir(const struct config *cfg, char *buf, size_t len) {
        snprintf(buf, len, "%s/privd-net", cfg->state_dir);
        bool made = mkdir(buf, 0700) == 0;
        if (!made && errno != EEXIST)
                return -errno;
        struct stat st;
        if (lstat(buf, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        /* One the front could have made in the directory it owns is not
         * taken: its record would be put back by root. */
        if (!made && st.st_uid != 0)
                return -EPERM;
        if (made && (chown(buf, 0, 0) < 0 || chmod(buf, 0700) < 0))
                return -errno;
        return 0;
}

static int start_helper(const struct config *cfg, const char *cgroup_dir, const char *ws, const char *net_state, int *ret_fd,
                        pid_t *ret_pid) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return -errno;
        char uids[64], max_jobs[16], ws_max[24], front[32];
        snprintf(front, sizeof(front), "%u:%u", (unsigned) cfg->user_uid, (unsigned) cfg->user_gid);
        /* The largest workspace a tenant may ask for. */
        uint64_t most = POLICY_DISK_DEFAULT;
        for (size_t i = 0; i < cfg->n_tenants; i++)
                most = cfg->tenants[i].max_disk == CONFIG_UNSET ? UINT64_MAX / 2 : cfg->tenants[i].max_disk > most ? cfg->tenants[i].max_disk : most;
        snprintf(ws_max, sizeof(ws_max), "%llu", (unsigned long long) most);
        snprintf(uids, sizeof(uids), "%u-%u", (unsigned) cfg->job_uid_first,
                 (unsigned) (cfg->job_uid_first + cfg->job_uid_count - 1));
        /* A job's place in the scheduler is free when it ends; the
         * helper's removal of it (JOB_CLOSE) follows off the loop, while
         * the next job may open: room for as many again being removed
         * (a table of max_jobs refused that one under load). */
        uint64_t slots = cfg->max_jobs * 2;
        snprintf(max_jobs, sizeof(max_jobs), "%u", (unsigned) (slots < cfg->job_uid_count ? slots : cfg->job_uid_count));
        const char *helper = cfg->helper ? cfg->helper : SBX_LIBEXECDIR "/sbx-privd";
        const char *argv[32] = { helper, "--fd", "3", "--front", front, "--uids", uids, "--cgroup", cgroup_dir, "--workspace", ws,
                                 "--launcher", cfg->launcher, "--max-jobs", max_jobs, "--workspace-max", ws_max };
        size_t n = 17;
        /* Restricted jobs and the audit: the same pools and ring as a
         * daemon that runs as root would use itself. */
        char ring[24], pool[INET6_ADDRSTRLEN + 8], pool6[INET6_ADDRSTRLEN + 8], a[INET6_ADDRSTRLEN];
        snprintf(ring, sizeof(ring), "%llu", (unsigned long long) cfg->network_ring);
        argv[n++] = "--net-audit";
        argv[n++] = ring;
        if (cfg->net_pool) {
                inet_ntop(AF_INET, &cfg->net_pool, a, sizeof(a));
                snprintf(pool, sizeof(pool), "%s/%u", a, cfg->net_pool_prefix);
                argv[n++] = "--net-pool";
                argv[n++] = pool;
                argv[n++] = "--net-state";
                argv[n++] = net_state;
                if (cfg->net_pool6_prefix) {
                        inet_ntop(AF_INET6, cfg->net_pool6, a, sizeof(a));
                        snprintf(pool6, sizeof(pool6), "%s/%u", a, cfg->net_pool6_prefix);
                        argv[n++] = "--net-pool6";
                        argv[n++] = pool6;
                }
        }
        if (cfg->profile_path) {
                argv[n++] = "--profile-path";
                argv[n++] = cfg->profile_path;
        }
        /* The helper reads the tenants' network caps itself, from the
         * file the daemon read (root's, as the daemon is still root). */
        _cleanup_free_ char *conf_abs = cfg->path ? realpath(cfg->path, NULL) : NULL;
        if (conf_abs) {
                argv[n++] = "--config";
                argv[n++] = conf_abs;
        }
        argv[n] = NULL;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(sp[0]);
                close(sp[1]);
                return r;
        }
        if (pid == 0) {
                /* Its end as descriptor 3, open across exec; nothing else of ours. */
                if (dup2(sp[1], 3) < 0)
                        _exit(127);
                execv(helper, (char **) argv);
                fprintf(stderr, "sbx-supervisord: cannot run %s: %s\n", helper, strerror(errno));
                _exit(127);
        }
        close(sp[1]);
        *ret_fd = sp[0];
        *ret_pid = pid;
        return 0;
}

static uid_t chown_uid;
static gid_t chown_gid;
static const char *chown_skip;
static unsigned chown_n;

static int chown_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
        if (chown_skip && streq(path, chown_skip))
                return FTW_SKIP_SUBTREE;
        if (st->st_uid == chown_uid && st->st_gid == chown_gid)
                return FTW_CONTINUE;
        if (lchown(path, chown_uid, chown_gid) < 0)
                return FTW_STOP;
        chown_n++;
        return FTW_CONTINUE;
}

/* The state directory becomes the user's (once: a directory that was
 * root's from a daemon that ran as root), all but the helper's workspaces. */
static int give_state(const struct config *cfg, uid_t uid, gid_t gid, const char *ws, struct sbx_error *err) {
        if (mkdir(cfg->state_dir, 0750) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "state_dir %s", cfg->state_dir);
        chown_uid = uid;
        chown_gid = gid;
        chown_skip = ws;
        chown_n = 0;
        if (nftw(cfg->state_dir, chown_one, 32, FTW_PHYS | FTW_ACTIONRETVAL) != 0)
                return sbx_error_set(err, errno ? errno : EIO, "state_dir %s: cannot give it to user %s", cfg->state_dir, cfg->user);
        /* The job uids pass through it to their workspaces. */
        if (chmod(cfg->state_dir, 0751) < 0)
                return sbx_error_set(err, errno, "state_dir %s", cfg->state_dir);
        if (chown_n)
                log_notice("state_dir %s: %u files and directories given to user %s", cfg->state_dir, chown_n, cfg->user);
        return 0;
}

/* The socket is made by the user: its directory, when there is none yet,
 * is made for it (an existing one is left as it is, and must let the user
 * write: the listener says so otherwise). */
static int socket_dir(const struct config *cfg, struct sbx_error *err) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", cfg->socket_path);
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = '\0';
        if (mkdir(dir, 0755) < 0) {
                if (errno == EEXIST)
                        return 0;
                return sbx_error_set(err, errno, "socket directory %s", dir);
        }
        if (chown(dir, cfg->user_uid, cfg->user_gid) < 0)
                return sbx_error_set(err, errno, "socket directory %s", dir);
        return 0;
}

/* The audit log is written by the user: made for it, or given to it. */
static int audit_file(const struct config *cfg, struct sbx_error *err) {
        if (!cfg->audit_log)
                return 0;
        _cleanup_close_ int fd = open(cfg->audit_log, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
        if (fd < 0)
                return sbx_error_set(err, errno, "audit_log %s", cfg->audit_log);
        if (fchown(fd, cfg->user_uid, cfg->user_gid) < 0)
                return sbx_error_set(err, errno, "audit_log %s: cannot give it to user %s", cfg->audit_log, cfg->user);
        return 0;
}

/* What an unprivileged front never needs; each refused with EPERM. Its
 * children inherit the filter: sbx-unpack's sandbox (unpack.c) makes its
 * own namespaces, mounts and root, so clone3, unshare, mount and
 * pivot_root stay (without a capability of the host they reach nothing
 * but namespaces of the front's own). */
static const int denied[] = {
        SCMP_SYS(reboot),          SCMP_SYS(kexec_load),       SCMP_SYS(kexec_file_load), SCMP_SYS(init_module),
        SCMP_SYS(finit_module),    SCMP_SYS(delete_module),    SCMP_SYS(swapon),          SCMP_SYS(swapoff),
        SCMP_SYS(acct),            SCMP_SYS(settimeofday),     SCMP_SYS(clock_settime),   SCMP_SYS(adjtimex),
        SCMP_SYS(clock_adjtime),   SCMP_SYS(iopl),             SCMP_SYS(ioperm),
#ifndef __SANITIZE_ADDRESS__
        /* (LeakSanitizer stops the process's threads with ptrace at exit:
         * a sanitizer build keeps it, and stays dumpable, below.) */
        SCMP_SYS(ptrace),
#endif
        SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(keyctl),        SCMP_SYS(add_key),
        SCMP_SYS(request_key),     SCMP_SYS(perf_event_open),  SCMP_SYS(bpf),             SCMP_SYS(userfaultfd),
        SCMP_SYS(open_by_handle_at), SCMP_SYS(quotactl),       SCMP_SYS(syslog),
        SCMP_SYS(lookup_dcookie),  SCMP_SYS(vhangup),          SCMP_SYS(sethostname),     SCMP_SYS(setdomainname),
};

static int filter(void) {
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        int r = 0;
        for (size_t i = 0; i < ARRAY_SIZE(denied) && r == 0; i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0);
        if (r == 0)
                r = seccomp_load(ctx);
        seccomp_release(ctx);
        return r;
}

static int lock_down(struct sbx_error *err);

static int become(const struct config *cfg, struct sbx_error *err) {
        gid_t groups[1];
        size_t n = 0;
        /* The socket's group, to give the socket to it. */
        if (cfg->socket_gid != (gid_t) -1)
                groups[n++] = cfg->socket_gid;
        if (setgroups(n, groups) < 0 || setresgid(cfg->user_gid, cfg->user_gid, cfg->user_gid) < 0)
                return sbx_error_set(err, errno, "user %s: cannot take its group", cfg->user);
        /* Nothing can ever be gained back: the bounding set goes first
         * (that needs CAP_SETPCAP, which setresuid takes away). */
        for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        return sbx_error_set(err, errno, "cannot drop capability %d from the bounding set", cap);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return sbx_error_set(err, errno, "cannot clear the ambient capabilities");
        if (setresuid(cfg->user_uid, cfg->user_uid, cfg->user_uid) < 0)
                return sbx_error_set(err, errno, "user %s: cannot become it", cfg->user);
        if (setuid(0) == 0)
                return sbx_error_set(err, EPERM, "user %s: root could be regained", cfg->user);
        return lock_down(err);
}

static int lock_down(struct sbx_error *err) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return sbx_error_set(err, errno, "no_new_privs");
        int r = filter();
        if (r < 0)
                return sbx_error_set(err, r, "the front's seccomp filter");
#ifndef __SANITIZE_ADDRESS__
        /* No core dumps, and no ptrace by other processes of the user. */
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
        return 0;
}

int privsep_start(const struct config *cfg, const char *cgroup_dir, struct privc *ret, struct sbx_error *err) {
        char ws[4096], net_state[4200];
        int fd = -1, r;
        pid_t pid = 0;
        if (cfg->job_uid_count == 0)
                return sbx_error_set(err, EINVAL, "user %s: needs job_uids (a range for sbx-privd to give jobs)", cfg->user);
        for (size_t i = 0; i < cfg->n_tenants; i++)
                if (cfg->tenants[i].job_user_set)
                        return sbx_error_set(err, EINVAL, "%s: [tenant.%s] job_user: with user = %s, every job gets a uid of job_uids",
                                             cfg->tenants[i].origin, cfg->tenants[i].name, cfg->user);
        if (!cgroup_dir)
                return sbx_error_set(err, EOPNOTSUPP, "user %s: sbx-privd needs a cgroup2 directory for job cgroups (cgroup)", cfg->user);
        snprintf(net_state, sizeof(net_state), "%s/privd-net", cfg->state_dir);
        r = give_state(cfg, cfg->user_uid, cfg->user_gid, net_state, err);
        if (r == 0)
                r = socket_dir(cfg, err);
        if (r == 0)
                r = audit_file(cfg, err);
        if (r < 0)
                return r;
        if ((r = workspace_dir(cfg, ws, sizeof(ws))) < 0)
                return sbx_error_set(err, r, "workspace directory %s", ws);
        if (cfg->net_pool && (r = net_state_dir(cfg, net_state, sizeof(net_state))) < 0)
                return sbx_error_set(err, r, "sbx-privd's network state directory %s%s", net_state,
                                     r == -EPERM ? " is not root's: remove it, root makes it again" : "");
        if ((r = start_helper(cfg, cgroup_dir, ws, net_state, &fd, &pid)) < 0)
                return sbx_error_set(err, r, "cannot start sbx-privd");
        if ((r = privc_open(ret, fd, pid, err)) < 0)
                return r;
        log_info("sbx-privd (pid %d) holds uids %u-%u and %u job slots; this process is now user %s", (int) pid,
                 ret->uid_first, ret->uid_first + ret->uid_count - 1, ret->max_jobs, cfg->user);
        return become(cfg, err);
}

int privsep_connect(const struct config *cfg, struct privc *ret, struct sbx_error *err) {
        if (geteuid() == 0 || getuid() == 0)
                return sbx_error_set(err, EPERM, "helper_socket %s: the front connects as user %s (its unit's User=); started "
                                     "as root, leave helper_socket out and it starts sbx-privd itself", cfg->helper_socket, cfg->user);
        if (getuid() != cfg->user_uid)
                return sbx_error_set(err, EPERM, "helper_socket %s: running as uid %u, not user %s (uid %u), whom sbx-privd serves",
                                     cfg->helper_socket, (unsigned) getuid(), cfg->user, (unsigned) cfg->user_uid);
        /* Whatever the service manager left in any set goes: the front
         * holds no capability (capset may always lower them). */
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct none[2] = {};
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return sbx_error_set(err, errno, "cannot clear the ambient capabilities");
        if (syscall(SYS_capset, &h, none) < 0)
                return sbx_error_set(err, errno, "cannot drop every capability");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(cfg->helper_socket) >= sizeof(sa.sun_path))
                return sbx_error_set(err, ENAMETOOLONG, "helper_socket %s", cfg->helper_socket);
        memcpy(sa.sun_path, cfg->helper_socket, strlen(cfg->helper_socket));
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return sbx_error_set(err, errno, "helper_socket %s", cfg->helper_socket);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int e = errno;
                close(fd);
                return sbx_error_set(err, e, "helper_socket %s: cannot reach sbx-privd", cfg->helper_socket);
        }
        /* The helper hangs up on a uid it does not serve, or while it
         * serves another front: the HELLO then fails. */
        int r = privc_open(ret, fd, 0, err);
        if (r < 0) {
                sbx_error_set(err, -r, "helper_socket %s: sbx-privd did not take this front (see its log: another front "
                              "connected, or it serves another user than %s)", cfg->helper_socket, cfg->user);
                privc_close(ret);
                return r;
        }
        log_info("sbx-privd at %s holds uids %u-%u and %u job slots; this front is user %s", cfg->helper_socket, ret->uid_first,
                 ret->uid_first + ret->uid_count - 1, ret->max_jobs, cfg->user);
        return lock_down(err);
}

/* The network's privileged steps, asked of the helper (net/netremote.h). */
static int op_net_open(void *arg, struct privd_handle job, pid_t pid, uint64_t netns_ino, bool v6, struct privd_net_reply *ret,
                       int *ret_dns_fd, int *ret_dns_tcp_fd, int *ret_proxy_fd) {
        return privc_net_open(arg, job, pid, netns_ino, v6, ret, ret_dns_fd, ret_dns_tcp_fd, ret_proxy_fd);
}

static int op_ring(void *arg, int *ret_fd, uint32_t *ret_bytes) {
        return privc_net_ring(arg, ret_fd, ret_bytes);
}

static int op_audit(void *arg, struct privd_net_audit *m) {
        return privc_net_audit(arg, m);
}

static int op_allow(void *arg, struct privd_net_allow *m) {
        return privc_net_allow(arg, m);
}

static int op_deny(void *arg, struct privd_net_deny *m) {
        return privc_net_deny(arg, m);
}

static int op_unaudit(void *arg, struct privd_handle job, uint64_t *ret_lost, uint64_t *ret_dropped) {
        return privc_net_unaudit(arg, job, ret_lost, ret_dropped);
}

static int op_host_addr(void *arg, uint32_t index, uint8_t ret_addr[16], uint32_t *ret_count) {
        return privc_host_addr(arg, index, ret_addr, ret_count);
}

void privsep_netpriv(struct privc *c, struct netpriv *ret) {
        *ret = (struct netpriv){ .arg = c, .net_open = op_net_open, .ring = op_ring, .audit = op_audit, .allow = op_allow,
                                 .deny = op_deny, .unaudit = op_unaudit, .host_addr = op_host_addr, .net_slots = c->net_slots };
}
