/* SPDX-License-Identifier: Apache-2.0 */
/* The per-job state machine (privd.h) and the uid pool: the only code that
 * changes a job's state. Each request is checked against what the helper
 * itself knows (its uid range, its table of jobs, their generations and
 * states), never against what the front says it holds. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobfs.h"
#include "launch-abi.h"
#include "launchopts.h"
#include "macro.h"
#include "privd.h"
#include "spawn.h"
#include "wstree.h"

/* The launcher's descriptors are the first SPAWN_FDS slots, in order. */
_Static_assert(PRIVD_FD_ARGV == SPAWN_FDS && PRIVD_FD_PASS == SBX_LAUNCH_FD_SESSION, "privd-abi.h and spawn.h disagree");

#define PJOB_EMPTY ((struct pjob){ .cgroup_fd = -1, .ws_fd = -1 })

static const char *const state_names[] = {
        [PJOB_FREE] = "free",
        [PJOB_OPEN] = "open",
        [PJOB_READY] = "handed over",
        [PJOB_SPAWNED] = "spawned",
        [PJOB_KILLED] = "killed",
        [PJOB_RECLAIMED] = "reclaimed",
};

/* The job a handle names, or NULL (refused and logged): a slot past the
 * table, a slot holding no job, or a generation that is not the one the
 * slot's job was given. */
struct pjob *privd_job_lookup(struct privd *p, const struct privd_hdr *h, struct privd_handle hd, int *ret_err) {
        if (hd.slot >= p->conf->max_jobs) {
                *ret_err = privd_refuse(h, -ENOENT, "no slot %u: made-up handle", hd.slot);
                return NULL;
        }
        struct pjob *j = &p->jobs[hd.slot];
        if (j->state == PJOB_FREE) {
                *ret_err = privd_refuse(h, -ENOENT, "slot %u holds no job", hd.slot);
                return NULL;
        }
        if (j->gen != hd.gen) {
                *ret_err = privd_refuse(h, -ESTALE, "generation %u is not that of slot %u's job", hd.gen, hd.slot);
                return NULL;
        }
        if (j->parked) {
                *ret_err = privd_refuse(h, -ENOENT, "job %s is parked: only JOB_ADOPT takes it", j->name);
                return NULL;
        }
        return j;
}

const char *privd_job_state_name(enum pjob_state s) {
        return s < ARRAY_SIZE(state_names) ? state_names[s] : "?";
}

static struct pjob *job_of_uid(struct privd *p, uid_t uid) {
        for (uint32_t i = 0; i < p->conf->max_jobs; i++)
                if (p->jobs[i].state != PJOB_FREE && p->jobs[i].uid == uid)
                        return &p->jobs[i];
        return NULL;
}

int privd_uid_take(struct privd *p, const struct privd_hdr *h, uint32_t *ret_uid) {
        uid_t uid;
        if (uidpool_take(&p->uids, &uid) < 0)
                return privd_refuse(h, -EAGAIN, "every uid of the range is taken");
        *ret_uid = uid;
        return 0;
}

/* A uid the front may name: in the range (so never 0) and taken by it. */
static int check_uid(struct privd *p, const struct privd_hdr *h, uint32_t uid) {
        if (uid == 0)
                return privd_refuse(h, -EPERM, "uid 0");
        if (!uidpool_contains(&p->uids, uid))
                return privd_refuse(h, -EPERM, "uid %u outside the range %u-%u", uid, p->conf->uid_first,
                                    p->conf->uid_first + p->conf->uid_count - 1);
        if (!uidpool_in_use(&p->uids, uid))
                return privd_refuse(h, -EPERM, "uid %u was not taken", uid);
        struct pjob *j = job_of_uid(p, uid);
        if (j)
                return privd_refuse(h, -EBUSY, "uid %u in use by the job in slot %u", uid, (unsigned) (j - p->jobs));
        return 0;
}

int privd_uid_release(struct privd *p, const struct privd_uid *m) {
        if (m->reserved)
                return privd_refuse(&m->h, -EINVAL, "reserved field set");
        int r = check_uid(p, &m->h, m->uid);
        if (r < 0)
                return r;
        uidpool_release(&p->uids, m->uid);
        return 0;
}

static void reaped(struct pjob *j, int st) {
        j->pid = 0;
        j->wstatus = st;
        j->reaped = true;
}

/* Undo what job_open made, in reverse; the state is set by the caller.
 * release: give the uid back to the pool (JOB_CLOSE), or leave it taken
 * by the front (a JOB_OPEN that failed). */
static int job_teardown(struct privd *p, struct pjob *j, bool release) {
        int r = 0;
        if (j->cgroup_fd >= 0) {
                r = jobfs_cgroup_remove(p->cgroup_fd, j->cgroup_fd, j->name);
                if (r < 0)
                        return r;
        }
        /* The launcher is in the cgroup, so it is dead by now: reap it
         * before counting the uid's processes (a zombie still counts). */
        int st;
        if (j->pid > 0 && waitpid(j->pid, &st, 0) == j->pid)
                reaped(j, st);
        /* Anything of the uid that is not in the cgroup (there should be
         * nothing: the launcher was cloned into it). */
        r = spawn_kill_uid(j->uid, j->uid);
        if (r < 0)
                return r;
        if (j->cgroup_fd >= 0)
                close(j->cgroup_fd);
        j->cgroup_fd = -1;
        if (j->ws_fd >= 0)
                close(j->ws_fd);
        j->ws_fd = -1;
        r = jobfs_workspace_remove(p->conf->workspace, p->workspace_fd, j->name);
        if (r < 0)
                return r;
        if (release)
                uidpool_release(&p->uids, j->uid);
        return 0;
}

int privd_job_open(struct privd *p, const struct privd_job_open *m, struct privd_reply *rep, int ret_fds[2]) {
        const struct privd_hdr *h = &m->h;
        if (m->reserved)
                return privd_refuse(h, -EINVAL, "reserved field set");
        int r = check_uid(p, h, m->uid);
        if (r < 0)
                return r;
        if (m->workspace_bytes == 0 || m->workspace_bytes > p->conf->workspace_max)
                return privd_refuse(h, -EINVAL, "workspace of %llu bytes (1 to %llu)", (unsigned long long) m->workspace_bytes,
                                    (unsigned long long) p->conf->workspace_max);
        if (m->cpu_milli > 1024 * 1000 || m->pids_max > 4194304)
                return privd_refuse(h, -EINVAL, "cpu or pids limit out of range");
        struct pjob *j = NULL;
        for (uint32_t i = 0; i < p->conf->max_jobs && !j; i++)
                if (p->jobs[i].state == PJOB_FREE)
                        j = &p->jobs[i];
        if (!j)
                return privd_refuse(h, -EAGAIN, "every slot holds a job");
        uint32_t slot = (uint32_t) (j - p->jobs);
        /* Generations are never reused, so a handle outlives nothing. */
        uint32_t gen = ++p->next_gen;
        *j = PJOB_EMPTY;
        j->uid = m->uid;
        j->gen = gen;
        snprintf(j->name, sizeof(j->name), "job-p%u-%u", slot, gen);
        unsigned limits = 0;
        int ws = -1;
        r = jobfs_cgroup_make(p->cgroup_fd, j->name, p->cg_have, m, &j->cgroup_fd, &limits);
        if (r < 0) {
                privd_log("job %s: cgroup: %s", j->name, strerror(-r));
                goto fail;
        }
        /* The front's until WS_HANDOVER: it writes the uploads itself. */
        bool noswap = false;
        r = jobfs_workspace_make(p->workspace_fd, j->name, p->conf->front_uid, p->conf->front_gid, m->workspace_bytes, &noswap, &ws);
        if (r < 0) {
                privd_log("job %s: workspace: %s", j->name, strerror(-r));
                goto fail;
        }
        j->ws_fd = fcntl(ws, F_DUPFD_CLOEXEC, 3);
        if (j->ws_fd < 0) {
                r = -errno;
                close(ws);
                goto fail;
        }
        int cg = fcntl(j->cgroup_fd, F_DUPFD_CLOEXEC, 3);
        if (cg < 0) {
                r = -errno;
                close(ws);
                goto fail;
        }
        j->state = PJOB_OPEN;
        j->limits = limits | (noswap ? PRIVD_WS_NOSWAP : 0);
        rep->job = (struct privd_handle){ .slot = slot, .gen = gen };
        rep->limits = j->limits;
        ret_fds[0] = cg;
        ret_fds[1] = ws;
        return 0;
fail:
        (void) job_teardown(p, j, false);
        *j = PJOB_EMPTY;
        return r;
}

int privd_job_term(struct privd *p, const struct privd_job *m) {
        int r;
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        if (j->state != PJOB_SPAWNED)
                return privd_refuse(&m->h, -EPROTO, "job %s is %s: JOB_TERM needs a spawned job", j->name, state_names[j->state]);
        /* Reaped: the pid may be another process's by now. */
        if (j->pid <= 0)
                return privd_refuse(&m->h, -ESRCH, "job %s: its launcher has exited", j->name);
        if (kill(j->pid, SIGTERM) < 0)
                return privd_refuse(&m->h, -errno, "job %s: kill", j->name);
        return 0;
}

int privd_job_kill(struct privd *p, const struct privd_job *m) {
        int r;
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        if (j->state == PJOB_RECLAIMED)
                return privd_refuse(&m->h, -EPROTO, "job %s is reclaimed: only JOB_CLOSE is left", j->name);
        r = jobfs_cgroup_kill(j->cgroup_fd);
        if (r < 0)
                return privd_refuse(&m->h, r, "job %s: cgroup.kill", j->name);
        j->state = PJOB_KILLED;
        return 0;
}

int privd_job_close(struct privd *p, const struct privd_job *m) {
        int r;
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        /* The block's veth goes with the job's network namespace; until
         * the kernel has removed it, its name keeps the block taken. */
        privd_net_job_end(p, j);
        privd_audit_job_end(p, j);
        r = job_teardown(p, j, true);
        if (r < 0) {
                /* Something of it is left (a process that would not die):
                 * the uid stays out of the pool; the front may ask again. */
                j->state = PJOB_KILLED;
                return privd_refuse(&m->h, r, "job %s: not all gone", j->name);
        }
        *j = PJOB_EMPTY;
        return 0;
}

int privd_ws_handover(struct privd *p, const struct privd_job *m) {
        int r;
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        if (j->state != PJOB_OPEN)
                return privd_refuse(&m->h, -EPROTO, "job %s is %s: WS_HANDOVER needs an open job", j->name, state_names[j->state]);
        struct wstree_report rep;
        r = wstree_handover(j->ws_fd, p->conf->front_uid, j->uid, j->uid, &rep);
        if (r < 0 && rep.partial) {
                /* The tree changed between the check and the change: only
                 * a front racing its own request does that. The job never
                 * runs; RECLAIM gives back what changed hands. */
                j->state = PJOB_KILLED;
                return privd_refuse(&m->h, r, "job %s: workspace %s, after %lu entries changed hands; the job will not run",
                                    j->name, rep.why, rep.changed);
        }
        if (r < 0)
                return privd_refuse(&m->h, r, "job %s: workspace %s", j->name, rep.why);
        j->state = PJOB_READY;
        return 0;
}

/* Nothing of the job can run any more: it was killed, its cgroup is
 * empty (waited for briefly: cgroup.kill is not instant), its launcher
 * reaped, and no process of its uid is left outside the cgroup. */
static int job_quiet(struct pjob *j) {
        int r = jobfs_cgroup_wait_empty(j->cgroup_fd);
        if (r < 0)
                return r;
        if (j->pid > 0) {
                pid_t w = waitpid(j->pid, NULL, WNOHANG);
                if (w == 0)
                        return -EBUSY;
                j->pid = 0;
        }
        return spawn_kill_uid(j->uid, j->uid);
}

int privd_ws_reclaim(struct privd *p, const struct privd_job *m) {
        int r;
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        if (j->state != PJOB_KILLED)
                return privd_refuse(&m->h, -EPROTO, "job %s is %s: WS_RECLAIM needs a killed job", j->name, state_names[j->state]);
        r = job_quiet(j);
        if (r < 0)
                return privd_refuse(&m->h, r, "job %s: a process of the job is still there", j->name);
        struct wstree_report rep;
        r = wstree_reclaim(j->ws_fd, j->uid, p->conf->front_uid, p->conf->front_gid, &rep);
        if (r < 0)
                return privd_refuse(&m->h, r, "job %s: workspace %s, after %lu entries changed hands", j->name, rep.why, rep.changed);
        j->state = PJOB_RECLAIMED;
        if (rep.skipped)
                privd_log("job %s: reclaimed %lu entries; left %lu of other owners, on other mounts or too deep", j->name,
                          rep.changed, rep.skipped);
        return 0;
}

static uint64_t mono_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

static void close_job(struct privd *p, struct pjob *j, const char *why) {
        privd_net_job_end(p, j);
        privd_audit_job_end(p, j);
        int r = job_teardown(p, j, true);
        if (r < 0)
                privd_log("job %s: not all gone: %s", j->name, strerror(-r));
        else
                privd_log("job %s: closed (%s)", j->name, why);
        *j = PJOB_EMPTY;
}

void privd_close_all(struct privd *p, bool park) {
        for (uint32_t i = 0; i < p->conf->max_jobs; i++) {
                struct pjob *j = &p->jobs[i];
                if (j->state == PJOB_FREE)
                        continue;
                /* Parked by an earlier front's going: its deadline holds. */
                if (park && j->parked)
                        continue;
                if (park && p->conf->park_ms && j->outlive && j->state == PJOB_SPAWNED && !j->reaped && j->pid > 0 &&
                    !j->net_slot1 && !j->audit) {
                        j->parked = true;
                        j->park_until_ms = mono_ms() + p->conf->park_ms;
                        privd_log("job %s: parked (the front went away): the next front may take it back within %u s", j->name,
                                  p->conf->park_ms / 1000);
                        continue;
                }
                close_job(p, j, park ? "the front went away" : "the front went away, or the helper stops");
        }
}

void privd_reap(struct privd *p) {
        pid_t pid;
        int st;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                for (uint32_t i = 0; i < p->conf->max_jobs; i++)
                        if (p->jobs[i].pid == pid) {
                                reaped(&p->jobs[i], st);
                                if (p->jobs[i].parked)
                                        close_job(p, &p->jobs[i], "parked, and its launcher exited");
                        }
}

int privd_park_timeout(const struct privd *p) {
        uint64_t now = mono_ms(), next = UINT64_MAX;
        for (uint32_t i = 0; i < p->conf->max_jobs; i++)
                if (p->jobs[i].parked && p->jobs[i].park_until_ms < next)
                        next = p->jobs[i].park_until_ms;
        if (next == UINT64_MAX)
                return -1;
        return next <= now ? 0 : (int) (next - now);
}

void privd_park_expire(struct privd *p) {
        uint64_t now = mono_ms();
        for (uint32_t i = 0; i < p->conf->max_jobs; i++)
                if (p->jobs[i].parked && p->jobs[i].park_until_ms <= now)
                        close_job(p, &p->jobs[i], "parked, and no front took it back in time");
}

int privd_job_adopt(struct privd *p, const struct privd_job_adopt *m, struct privd_reply *rep, int ret_fds[3]) {
        const struct privd_hdr *h = &m->h;
        struct pjob *j = NULL;
        if (m->uid == 0 || m->pid <= 0)
                return privd_refuse(h, -EINVAL, "uid %u, pid %d", m->uid, (int) m->pid);
        for (uint32_t i = 0; i < p->conf->max_jobs && !j; i++)
                if (p->jobs[i].parked && p->jobs[i].uid == m->uid && p->jobs[i].pid == m->pid)
                        j = &p->jobs[i];
        if (!j)
                return privd_refuse(h, -ENOENT, "no parked job of uid %u with launcher %d", m->uid, (int) m->pid);
        /* Not reaped (it would have been closed): the pid is still its. */
        int fds[3] = { (int) syscall(SYS_pidfd_open, j->pid, 0), fcntl(j->cgroup_fd, F_DUPFD_CLOEXEC, 3),
                       fcntl(j->ws_fd, F_DUPFD_CLOEXEC, 3) };
        for (int i = 0; i < 3; i++)
                if (fds[i] < 0) {
                        int e = -errno;
                        for (int k = 0; k < 3; k++)
                                if (fds[k] >= 0)
                                        close(fds[k]);
                        return privd_refuse(h, e, "job %s: its descriptors", j->name);
                }
        j->parked = false;
        rep->job = (struct privd_handle){ .slot = (uint32_t) (j - p->jobs), .gen = j->gen };
        rep->pid = j->pid;
        rep->limits = j->limits;
        memcpy(ret_fds, fds, sizeof(fds));
        privd_log("job %s: taken back by the front", j->name);
        return 0;
}

int privd_job_wait(struct privd *p, const struct privd_job *m, struct privd_reply *rep) {
        int r, st;
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        if (j->state != PJOB_SPAWNED && j->state != PJOB_KILLED)
                return privd_refuse(&m->h, -EPROTO, "job %s is %s: JOB_WAIT needs a spawned job", j->name, state_names[j->state]);
        if (j->waited)
                return privd_refuse(&m->h, -ECHILD, "job %s: its end was told already", j->name);
        /* SIGCHLD may not have been read yet. */
        if (!j->reaped && j->pid > 0 && waitpid(j->pid, &st, WNOHANG) == j->pid)
                reaped(j, st);
        if (!j->reaped)
                return -EAGAIN; /* not a refusal: it runs */
        j->waited = true;
        rep->status = j->wstatus;
        return 0;
}

/* What kind of file each launcher descriptor may be (privd-abi.h). */
static bool fd_kind_ok(enum privd_fd slot, int fd, const char **ret_why) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
                *ret_why = "cannot fstat";
                return false;
        }
        bool devnull = S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
        bool stream = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
        int fl = fcntl(fd, F_GETFL);
        switch (slot) {
        case PRIVD_FD_STDIN:
                *ret_why = "expected a pipe, socket, regular file or /dev/null";
                return stream || devnull || S_ISREG(st.st_mode);
        case PRIVD_FD_STDOUT:
        case PRIVD_FD_STDERR:
                *ret_why = "expected a pipe, socket or /dev/null";
                return stream || devnull;
        case PRIVD_FD_STATUS:
                *ret_why = "expected a pipe open for writing";
                return S_ISFIFO(st.st_mode) && fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
        case PRIVD_FD_INFO:
        case PRIVD_FD_BLOCK:
                *ret_why = "expected a pipe";
                return S_ISFIFO(st.st_mode);
        case PRIVD_FD_PROFILE:
                *ret_why = "expected a regular file";
                return S_ISREG(st.st_mode);
        case PRIVD_FD_ARGV:
                *ret_why = "expected a regular file of at most PRIVD_ARGV_MAX bytes";
                return S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t) st.st_size <= PRIVD_ARGV_MAX;
        case PRIVD_FD_BUNDLE:
                *ret_why = "expected a directory";
                return S_ISDIR(st.st_mode);
        case PRIVD_FD_PASS: {
                /* sbx-init speaks over it in messages: nothing else is
                 * handed on into the job. */
                int dom = 0, type = 0;
                socklen_t len = sizeof(int);
                *ret_why = "expected an AF_UNIX SOCK_SEQPACKET socket";
                if (!S_ISSOCK(st.st_mode) || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) < 0)
                        return false;
                len = sizeof(int);
                return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && dom == AF_UNIX && type == SOCK_SEQPACKET;
        }
        default:
                *ret_why = "unknown";
                return false;
        }
}

/* The command: NUL-terminated strings, read once into our own memory (the
 * front cannot change them after the check). No other meaning is read
 * into them; they go after "--", where the launcher takes no option. */
static int read_argv(const struct privd_hdr *h, int fd, char *buf, char **args, unsigned *ret_n) {
        ssize_t n = pread(fd, buf, PRIVD_ARGV_MAX, 0);
        if (n <= 0)
                return privd_refuse(h, n < 0 ? -errno : -EINVAL, "cannot read the command");
        if (buf[n - 1] != '\0' || buf[0] == '\0')
                return privd_refuse(h, -EINVAL, "command not NUL-terminated, or empty");
        unsigned k = 0;
        for (ssize_t i = 0; i < n; i += (ssize_t) strlen(buf + i) + 1) {
                if (k == PRIVD_ARGC_MAX)
                        return privd_refuse(h, -E2BIG, "more than %u command strings", PRIVD_ARGC_MAX);
                args[k++] = buf + i;
        }
        *ret_n = k;
        return 0;
}

static int launch(struct privd *p, struct pjob *j, const struct privd_hdr *h, const int slots[PRIVD_FD_COUNT], int *ret_pidfd) {
        _cleanup_free_ char *buf = malloc(PRIVD_ARGV_MAX);
        _cleanup_free_ char **argv = calloc(PRIVD_ARGC_MAX + 12, sizeof(char *));
        if (!buf || !argv)
                return -ENOMEM;
        unsigned k = 0, n_args = 0;
        argv[k++] = (char *) p->conf->launcher;
        if (slots[PRIVD_FD_INFO] >= 0) {
                static const char *const hs[] = { "--info-fd", SBX_LAUNCH_FD_INFO_ARG, "--block-fd", SBX_LAUNCH_FD_BLOCK_ARG };
                for (size_t i = 0; i < ARRAY_SIZE(hs); i++)
                        argv[k++] = (char *) hs[i];
        }
        static const char *const head[] = { "--json-status-fd", SBX_LAUNCH_FD_STATUS_ARG };
        for (size_t i = 0; i < ARRAY_SIZE(head); i++)
                argv[k++] = (char *) head[i];
        int r = read_argv(h, slots[PRIVD_FD_ARGV], buf, argv + k, &n_args);
        if (r < 0)
                return r;
        const char *why = NULL, *at = NULL;
        r = launchopts_check(argv + k, n_args, slots[PRIVD_FD_PASS] >= 0, &why, &at);
        if (r < 0)
                return privd_refuse(h, r, "job %s: launcher option '%.64s': %s", j->name, at, why);
        argv[k + n_args] = NULL;
        char *envp[] = { (char *) "PATH=/usr/local/bin:/usr/bin:/bin", (char *) p->profile_env, (char *) "LC_ALL=C.UTF-8", NULL };
        int rep[2];
        if (pipe2(rep, O_CLOEXEC) < 0)
                return -errno;
        struct spawn_params sp = {
                .path = p->conf->launcher,
                .argv = argv,
                .envp = envp,
                .uid = j->uid,
                .gid = j->uid,
                .cgroup_fd = j->cgroup_fd,
                .err_fd = rep[1],
        };
        for (int i = 0; i < SPAWN_FDS; i++)
                sp.fds[i] = slots[i];
        pid_t pid;
        int pidfd;
        r = spawn_launcher(&sp, &pid, &pidfd);
        close(rep[1]);
        if (r < 0) {
                close(rep[0]);
                return privd_refuse(h, r, "job %s: clone", j->name);
        }
        /* End of file: the launcher was executed (exec closed the pipe). */
        struct spawn_report sr;
        ssize_t n;
        while ((n = read(rep[0], &sr, sizeof(sr))) < 0 && errno == EINTR)
                ;
        close(rep[0]);
        j->pid = pid;
        if (n == (ssize_t) sizeof(sr)) {
                char msg[256];
                spawn_report_format(&sr, msg, sizeof(msg));
                close(pidfd);
                return privd_refuse(h, sr.err ? -sr.err : -EIO, "job %s: %s", j->name, msg);
        }
        *ret_pidfd = pidfd;
        return 0;
}

int privd_spawn(struct privd *p, const struct privd_spawn *m, int *fds, unsigned n_fds, struct privd_reply *rep, int *ret_pidfd) {
        const struct privd_hdr *h = &m->h;
        int slots[PRIVD_FD_COUNT];
        int r;
        for (unsigned i = 0; i < PRIVD_FD_COUNT; i++)
                slots[i] = -1;
        struct pjob *j = privd_job_lookup(p, h, m->job, &r);
        if (!j)
                goto out;
        if (j->state != PJOB_READY) {
                r = privd_refuse(h, -EPROTO, "job %s is %s: SPAWN needs a job handed over", j->name, state_names[j->state]);
                goto out;
        }
        const uint32_t need = PRIVD_FD_BIT(PRIVD_FD_STATUS) | PRIVD_FD_BIT(PRIVD_FD_PROFILE) | PRIVD_FD_BIT(PRIVD_FD_ARGV);
        const uint32_t hs = PRIVD_FD_BIT(PRIVD_FD_INFO) | PRIVD_FD_BIT(PRIVD_FD_BLOCK);
        if ((m->fds & ~(PRIVD_FD_BIT(PRIVD_FD_COUNT) - 1)) || (m->fds & need) != need ||
            ((m->fds & hs) != 0 && (m->fds & hs) != hs)) {
                r = privd_refuse(h, -EINVAL, "descriptor set 0x%x lacks one required or names an unknown one", m->fds);
                goto out;
        }
        if ((m->flags & ~PRIVD_SPAWN_OUTLIVE) ||
            ((m->flags & PRIVD_SPAWN_OUTLIVE) && !(m->fds & PRIVD_FD_BIT(PRIVD_FD_PASS)))) {
                r = privd_refuse(h, -EINVAL, "flags 0x%x: unknown, or OUTLIVE without a session's descriptor", m->flags);
                goto out;
        }
        if ((unsigned) __builtin_popcount(m->fds) != n_fds) {
                r = privd_refuse(h, -EBADF, "%u descriptors sent, %d announced", n_fds, __builtin_popcount(m->fds));
                goto out;
        }
        unsigned k = 0;
        for (unsigned i = 0; i < PRIVD_FD_COUNT; i++)
                if (m->fds & PRIVD_FD_BIT(i)) {
                        slots[i] = fds[k];
                        fds[k++] = -1;
                }
        for (unsigned i = 0; i < PRIVD_FD_COUNT; i++) {
                const char *why;
                if (slots[i] >= 0 && !fd_kind_ok((enum privd_fd) i, slots[i], &why)) {
                        r = privd_refuse(h, -EBADF, "descriptor %u: %s", i, why);
                        goto out;
                }
        }
        if (slots[PRIVD_FD_BUNDLE] >= 0) {
                /* The front cannot make a mount: the helper makes it of
                 * the front's own directory, and the launcher gets that. */
                char why[128] = "";
                int mnt = jobfs_bundle_mount(slots[PRIVD_FD_BUNDLE], p->conf->front_uid, p->conf->bundle_cache, why, sizeof(why));
                if (mnt < 0) {
                        r = privd_refuse(h, mnt, "job %s: bundle descriptor: %s", j->name, why);
                        goto out;
                }
                close(slots[PRIVD_FD_BUNDLE]);
                slots[PRIVD_FD_BUNDLE] = mnt;
        }
        r = launch(p, j, h, slots, ret_pidfd);
        if (r == 0) {
                j->state = PJOB_SPAWNED;
                j->outlive = (m->flags & PRIVD_SPAWN_OUTLIVE) != 0;
                rep->pid = j->pid;
        }
out:
        for (unsigned i = 0; i < n_fds; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        for (unsigned i = 0; i < PRIVD_FD_COUNT; i++)
                if (slots[i] >= 0)
                        close(slots[i]);
        return r;
}
