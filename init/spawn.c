/* SPDX-License-Identifier: Apache-2.0 */
/* SPAWN, SIGNAL and the end of what was started. A command gets fresh
 * pipes (or a pseudo-terminal for its stdin) whose other ends go to the
 * daemon by SCM_RIGHTS and are closed here at once: its output never
 * passes through the agent, and the agent holds no descriptor per command.
 * A process stays in the table, under its handle, until it is reaped, so a
 * signal never reaches a pid the kernel has given to someone else. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"
#include "env-name.h"
#include "macro.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

extern char **environ;

/* A SPAWN's payload, checked: pointers into the request. */
struct spawn_req {
        uint32_t flags;
        struct sbx_init_winsize ws;
        const char *cwd;
        const char *argv[SBX_INIT_ARGV_MAX + 1];
        const char *env[SBX_INIT_ENV_MAX];
        unsigned envc;
};

static int parse_spawn(const struct request *rq, struct spawn_req *s) {
        struct sbx_init_spawn h;
        if (rq->len < sizeof(h))
                return -EBADMSG;
        memcpy(&h, rq->payload, sizeof(h));
        if ((h.flags & ~(SBX_INIT_SPAWN_PTY | SBX_INIT_SPAWN_TTY | SBX_INIT_SPAWN_WINSIZE)) ||
            (h.flags & (SBX_INIT_SPAWN_PTY | SBX_INIT_SPAWN_TTY)) == (SBX_INIT_SPAWN_PTY | SBX_INIT_SPAWN_TTY) ||
            ((h.flags & SBX_INIT_SPAWN_WINSIZE) && !(h.flags & SBX_INIT_SPAWN_TTY)))
                return -EINVAL;
        if (h.argc < 1 || h.argc > SBX_INIT_ARGV_MAX || h.envc > SBX_INIT_ENV_MAX)
                return -E2BIG;
        const char *p = rq->payload + sizeof(h), *end = rq->payload + rq->len;
        s->ws = (struct sbx_init_winsize) { .rows = 24, .cols = 80 };
        if (h.flags & SBX_INIT_SPAWN_WINSIZE) {
                if (rq->len < sizeof(h) + sizeof(s->ws))
                        return -EBADMSG;
                memcpy(&s->ws, p, sizeof(s->ws));
                p += sizeof(s->ws);
                if (s->ws.rows < 1 || s->ws.rows > SBX_INIT_WINSIZE_MAX || s->ws.cols < 1 || s->ws.cols > SBX_INIT_WINSIZE_MAX)
                        return -EINVAL;
        }
        unsigned want = 1u + h.argc + h.envc, got = 0;
        while (p < end && got < want) {
                const char *nul = memchr(p, '\0', (size_t) (end - p));
                if (!nul)
                        return -EBADMSG;
                if (got == 0)
                        s->cwd = p;
                else if (got <= h.argc)
                        s->argv[got - 1] = p;
                else
                        s->env[got - 1 - h.argc] = p;
                got++;
                p = nul + 1;
        }
        if (got != want || p != end)
                return -EBADMSG;
        s->argv[h.argc] = NULL;
        if (s->argv[0][0] == '\0')
                return -ENOENT;
        for (unsigned i = 0; i < h.envc; i++) {
                const char *eq = strchr(s->env[i], '=');
                if (!eq || !env_name_valid(s->env[i], (size_t) (eq - s->env[i])))
                        return -EINVAL;
        }
        s->envc = h.envc;
        s->flags = h.flags;
        return files_check_path(s->cwd, strlen(s->cwd) + 1, true);
}

static size_t name_len(const char *kv) {
        const char *eq = strchr(kv, '=');
        return eq ? (size_t) (eq - kv) : strlen(kv);
}

/* Our environment with the additions; an addition replaces a variable of
 * the same name. */
static char **build_env(const struct spawn_req *s) {
        size_t n = 0;
        while (environ && environ[n])
                n++;
        char **e = calloc(n + s->envc + 1, sizeof(char *));
        if (!e)
                return NULL;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                bool replaced = false;
                for (unsigned j = 0; j < s->envc && !replaced; j++)
                        replaced = name_len(environ[i]) == name_len(s->env[j]) &&
                                   !strncmp(environ[i], s->env[j], name_len(s->env[j]));
                if (!replaced)
                        e[k++] = environ[i];
        }
        for (unsigned j = 0; j < s->envc; j++) {
                bool dup = false;
                for (unsigned l = j + 1; l < s->envc && !dup; l++)
                        dup = name_len(s->env[j]) == name_len(s->env[l]) &&
                              !strncmp(s->env[j], s->env[l], name_len(s->env[j]));
                if (!dup) /* the last one of a name wins */
                        e[k++] = (char *) s->env[j];
        }
        e[k] = NULL;
        return e;
}

static void close_all(int *fds, size_t n) {
        for (size_t i = 0; i < n; i++)
                closep(&fds[i]);
}

/* ours[0..2]: what the daemon gets; theirs[0..2]: the command's 0, 1, 2. */
static int make_stdio(const struct spawn_req *s, int ours[3], int theirs[3]) {
        uint32_t flags = s->flags;
        int p[2];
        if (flags & (SBX_INIT_SPAWN_PTY | SBX_INIT_SPAWN_TTY)) {
                ours[0] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (ours[0] < 0 || unlockpt(ours[0]) < 0)
                        return -errno;
                theirs[0] = ioctl(ours[0], TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (theirs[0] < 0)
                        return -errno;
        } else {
                if (pipe2(p, O_CLOEXEC) < 0)
                        return -errno;
                theirs[0] = p[0];
                ours[0] = p[1];
        }
        if (flags & SBX_INIT_SPAWN_TTY) {
                struct winsize ws = { .ws_row = s->ws.rows, .ws_col = s->ws.cols };
                if (ioctl(ours[0], TIOCSWINSZ, &ws) < 0 || (ours[1] = fcntl(ours[0], F_DUPFD_CLOEXEC, 3)) < 0 ||
                    (theirs[1] = fcntl(theirs[0], F_DUPFD_CLOEXEC, 3)) < 0 || (theirs[2] = fcntl(theirs[0], F_DUPFD_CLOEXEC, 3)) < 0 ||
                    pipe2(p, O_CLOEXEC) < 0)
                        return -errno;
                /* stderr is the terminal: its stream has nothing, ever. */
                ours[2] = p[0];
                close(p[1]);
                return 0;
        }
        for (int i = 1; i < 3; i++) {
                if (pipe2(p, O_CLOEXEC) < 0)
                        return -errno;
                ours[i] = p[0];
                theirs[i] = p[1];
        }
        return 0;
}

/* What the child needs, and where it leaves why its exec failed: it runs
 * in our memory (CLONE_VM) while we wait (CLONE_VFORK), as posix_spawn's
 * children do, so that no page table is copied for a process that is about
 * to exec. It must not allocate or write our memory but its own stack,
 * err and environ (which we put back). */
struct child_args {
        const struct spawn_req *s;
        int *theirs;
        int cwd;
        char **envp;
        int err;
};

static int child(void *p) {
        struct child_args *c = p;
        const struct spawn_req *s = c->s;
        int theirs[3];
        memcpy(theirs, c->theirs, sizeof(theirs));
        sigset_t none;
        sigemptyset(&none);
        /* Our handlers are all default but SIGPIPE's, which is ignored. */
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int e = 0;
        if (setsid() < 0)
                e = errno;
        if (!e && (s->flags & (SBX_INIT_SPAWN_PTY | SBX_INIT_SPAWN_TTY)) && ioctl(theirs[0], TIOCSCTTY, 0) < 0)
                e = errno;
        if (!e && fchdir(c->cwd) < 0)
                e = errno;
        if (!e) {
                /* Above 2 first, so that moving one does not overwrite
                 * another. */
                for (int i = 0; i < 3 && !e; i++)
                        if (theirs[i] < 3) {
                                int d = fcntl(theirs[i], F_DUPFD_CLOEXEC, 3);
                                if (d < 0)
                                        e = errno;
                                theirs[i] = d;
                        }
                for (int i = 0; i < 3 && !e; i++)
                        if (theirs[i] == i ? fcntl(i, F_SETFD, 0) < 0 : dup2(theirs[i], i) < 0)
                                e = errno;
                if (!e) {
                        /* execvp searches the command's PATH, not ours. */
                        environ = c->envp;
                        execvp(s->argv[0], (char *const *) s->argv);
                        e = errno;
                }
        }
        c->err = e ? e : EIO;
        _exit(127);
}

static struct proc *proc_by_handle(struct agent *a, uint32_t handle) {
        for (unsigned i = 0; i < SBX_INIT_PROCS_MAX; i++)
                if (a->procs[i].pid && a->procs[i].handle == handle)
                        return &a->procs[i];
        return NULL;
}

static struct proc *proc_by_pid(struct agent *a, pid_t pid) {
        for (unsigned i = 0; i < SBX_INIT_PROCS_MAX; i++)
                if (a->procs[i].pid == pid)
                        return &a->procs[i];
        return NULL;
}

static int do_spawn(struct agent *a, const struct spawn_req *s, int ours[3], struct sbx_init_spawned *ret) {
        int theirs[3] = { -1, -1, -1 };
        _cleanup_close_ int cwd = -1;
        _cleanup_free_ char **envp = NULL;
        int r;

        if (a->n_procs >= SBX_INIT_PROCS_MAX)
                return -EAGAIN;
        struct proc *slot = proc_by_pid(a, 0);
        cwd = streq(s->cwd, ".") ? fcntl(a->workspace, F_DUPFD_CLOEXEC, 3)
                                 : files_open_beneath(a, s->cwd, O_PATH | O_DIRECTORY, 0);
        if (cwd < 0)
                return cwd == -1 ? -errno : cwd;
        envp = build_env(s);
        if (!envp)
                return -ENOMEM;
        r = make_stdio(s, ours, theirs);
        if (r < 0) {
                close_all(theirs, 3);
                return r;
        }
        /* One child at a time runs on it, and we wait while it does. */
        static _Alignas(16) char stack[64 * 1024];
        struct child_args c = { .s = s, .theirs = theirs, .cwd = cwd, .envp = envp };
        char **our_env = environ;
        pid_t pid = clone(child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
        r = pid < 0 ? -errno : 0;
        environ = our_env;
        close_all(theirs, 3);
        if (r < 0)
                return r;
        /* Back here when it exec'd or exited: until its exec succeeded the
         * command is not started and its failure is this request's. */
        if (c.err) {
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                return -c.err;
        }
        slot->pid = pid;
        slot->handle = a->next_handle++;
        a->n_procs++;
        ret->handle = slot->handle;
        ret->pid = pid;
        return 0;
}

void spawn_request(struct agent *a, const struct request *rq) {
        static struct spawn_req s;
        int ours[3] = { -1, -1, -1 };
        struct sbx_init_spawned sp = { 0 };

        memset(&s, 0, sizeof(s));
        int r = parse_spawn(rq, &s);
        if (r >= 0)
                r = do_spawn(a, &s, ours, &sp);
        if (r < 0)
                agent_reply_error(a, rq, -r);
        else
                agent_reply(a, rq, &sp, sizeof(sp), ours, 3);
        close_all(ours, 3);
}

void signal_request(struct agent *a, const struct request *rq) {
        struct sbx_init_signal s;
        if (rq->len != sizeof(s)) {
                agent_reply_error(a, rq, EBADMSG);
                return;
        }
        memcpy(&s, rq->payload, sizeof(s));
        if (s.signo < 0 || s.signo >= NSIG || (s.flags & ~SBX_INIT_SIGNAL_GROUP)) {
                agent_reply_error(a, rq, EINVAL);
                return;
        }
        struct proc *p = proc_by_handle(a, s.handle);
        if (!p) {
                agent_reply_error(a, rq, ESRCH);
                return;
        }
        if (kill((s.flags & SBX_INIT_SIGNAL_GROUP) ? -p->pid : p->pid, s.signo) < 0) {
                agent_reply_error(a, rq, errno);
                return;
        }
        agent_reply(a, rq, NULL, 0, NULL, 0);
}

static uint64_t tv_us(struct timeval tv) {
        return (uint64_t) tv.tv_sec * 1000000u + (uint64_t) tv.tv_usec;
}

void spawn_reap(struct agent *a) {
        for (;;) {
                int st;
                struct rusage ru;
                pid_t pid = wait4(-1, &st, WNOHANG, &ru);
                if (pid <= 0)
                        return;
                /* Orphans adopted as subreaper have no handle: reaped only. */
                struct proc *p = proc_by_pid(a, pid);
                if (!p)
                        continue;
                struct sbx_init_exit ex = {
                        .handle = p->handle,
                        .pid = pid,
                        .status = st,
                        .utime_us = tv_us(ru.ru_utime),
                        .stime_us = tv_us(ru.ru_stime),
                        .maxrss_kb = (uint64_t) ru.ru_maxrss,
                        .minflt = (uint64_t) ru.ru_minflt,
                        .majflt = (uint64_t) ru.ru_majflt,
                        .nvcsw = (uint64_t) ru.ru_nvcsw,
                        .nivcsw = (uint64_t) ru.ru_nivcsw,
                };
                p->pid = 0;
                a->n_procs--;
                if (a->sock < 0) {
                        /* One per process that was running: never more than the table. */
                        if (a->n_held < SBX_INIT_PROCS_MAX)
                                a->held[a->n_held++] = ex;
                        continue;
                }
                agent_send(a, SBX_INIT_EV_EXIT, 0, 0, &ex, sizeof(ex), NULL, 0);
                /* The send found the connection gone: the next one gets it. */
                if (a->sock < 0 && a->n_held < SBX_INIT_PROCS_MAX)
                        a->held[a->n_held++] = ex;
        }
}
