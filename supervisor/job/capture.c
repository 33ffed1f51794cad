/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "privjob.h"
#include "cgroup.h"
#include "daemon.h"
#include "jobevents.h"
#include "launch-abi.h"
#include "proto.h"
#include "runner.h"
#include "spawn.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define READ_CHUNK PROTO_EVENT_CHUNK
/* Bytes moved per splice: a pipe holds 64 KiB unless the job enlarged it. */
#define SPLICE_CHUNK (1u << 20)
/* Reads per stream and wake-up, for fairness between jobs. */
#define READS_PER_WAKEUP 16
/* The launcher writes two short lines; anything beyond is not read. */
#define STATUS_MAX (1u << 20)

void capture_init(struct capture *cap) {
        memset(cap, 0, sizeof(*cap));
        cap->out_fd[0] = cap->out_fd[1] = cap->file_fd[0] = cap->file_fd[1] = -1;
        cap->status_fd = cap->spawn_err_fd = cap->pidfd = cap->result_dir_fd = -1;
        cap->exit_status = -1;
}

static void close_src(struct source *s, int *fd) {
        if (*fd >= 0) {
                if (s->cb)
                        loop_del(s);
                close(*fd);
                *fd = -1;
        }
}

static size_t keep(struct rjob *rj, int i, const char *buf, size_t n);

/* Bytes of stream i to keep and to tell the followers: through the
 * redactor when the job has secrets (final: what it held back). */
static void pass(struct rjob *rj, int i, const char *buf, size_t n, bool final) {
        struct capture *cap = &rj->cap;
        if (cap->redacting && redact_stream_feed(&cap->rs[i], buf, n, final, &buf, &n) < 0) {
                /* nothing of it may go out unredacted */
                cap->write_err[i] = -ENOMEM;
                return;
        }
        size_t k = keep(rj, i, buf, n);
        for (size_t off = 0; off < k && !list_empty(&rj->watches);) {
                size_t m = k - off < PROTO_EVENT_CHUNK ? k - off : PROTO_EVENT_CHUNK;
                job_tell_event(rj, proto_ev_output(rj->j.id, i, buf + off, m), proto_stream_bit(i), m);
                off += m;
        }
}

static void redact_start(struct rjob *rj) {
        struct capture *cap = &rj->cap;
        if (!rj->redact)
                return;
        cap->redacting = true;
        for (int i = 0; i < 2; i++) {
                redact_stream_init(&cap->rs[i], rj->redact);
                cap->no_splice[i] = true;
        }
}

void capture_stop(struct capture *cap) {
        if (cap->redacting) {
                struct rjob *rj = container_of(cap, struct rjob, cap);
                for (int i = 0; i < 2; i++) {
                        pass(rj, i, NULL, 0, true);
                        redact_stream_release(&cap->rs[i]);
                }
                cap->redacting = false;
        }
        for (int i = 0; i < 2; i++)
                close_src(&cap->out_src[i], &cap->out_fd[i]);
        close_src(&cap->status_src, &cap->status_fd);
        close_src(&cap->pid_src, &cap->pidfd);
        if (cap->spawn_err_fd >= 0)
                close(cap->spawn_err_fd);
        cap->spawn_err_fd = -1;
}

void capture_release(struct capture *cap) {
        capture_stop(cap);
        for (int i = 0; i < 2; i++)
                if (cap->file_fd[i] >= 0)
                        close(cap->file_fd[i]);
        if (cap->result_dir_fd >= 0)
                close(cap->result_dir_fd);
        json_decref(cap->status_end);
        json_decref(cap->start_prot);
        free(cap->status_buf);
        free(cap->spawn_error);
        capture_init(cap);
}

int capture_result_dir(struct rjob *rj) {
        struct capture *cap = &rj->cap;
        if (cap->result_dir_fd >= 0)
                return cap->result_dir_fd;
        int results = rj->d->dirs.results_fd;
        if (mkdirat(results, rj->j.id, 0700) < 0 && errno != EEXIST)
                return -errno;
        cap->result_dir_fd = openat(results, rj->j.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return cap->result_dir_fd >= 0 ? cap->result_dir_fd : -errno;
}

/* Keep up to the output cap in the capture file, created on the first
 * byte: most short jobs write nothing to one stream or both, and every
 * inode created costs on the daemon's hot path. */
/* The capture file of stream i, created on the first byte kept: most
 * short jobs write nothing to one stream or both, and every inode created
 * costs on the daemon's hot path. -1 once it cannot be written. */
static int capture_file(struct rjob *rj, int i) {
        struct capture *cap = &rj->cap;
        if (cap->write_err[i])
                return -1;
        if (cap->file_fd[i] < 0) {
                int r = capture_result_dir(rj);
                if (r >= 0) {
                        cap->file_fd[i] = openat(r, proto_stream_name(i), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                                                 0600);
                        r = cap->file_fd[i] >= 0 ? 0 : -errno;
                }
                if (r < 0) {
                        cap->write_err[i] = r;
                        return -1;
                }
        }
        return cap->file_fd[i];
}

/* Bytes of n that fit under the output cap (the rest is dropped). */
static size_t room(struct rjob *rj, int i, size_t n) {
        struct capture *cap = &rj->cap;
        if (cap->kept[i] + n <= rj->j.pol.output)
                return n;
        cap->truncated[i] = true;
        return (size_t) (rj->j.pol.output - cap->kept[i]);
}

static size_t keep(struct rjob *rj, int i, const char *buf, size_t n) {
        struct capture *cap = &rj->cap;
        size_t k = room(rj, i, n);
        int fd = k ? capture_file(rj, i) : -1;
        if (fd < 0)
                return 0;
        int r = write_all(fd, buf, k);
        if (r < 0) {
                /* What part of the chunk landed is not known: the size the
                 * record gives is what was surely written. */
                cap->write_err[i] = r;
                return 0;
        }
        cap->kept[i] += k;
        return k;
}

/* Nobody follows the job: the kernel moves its output from the pipe to
 * the capture file (or, past the cap, to /dev/null) without a copy through
 * the daemon. -1 with errno EAGAIN when the pipe is empty, 0 at its end. */
static ssize_t splice_out(struct rjob *rj, int i) {
        struct capture *cap = &rj->cap;
        uint64_t left = rj->j.pol.output - cap->kept[i];
        int to = left ? capture_file(rj, i) : -1;
        size_t want = to >= 0 && left < SPLICE_CHUNK ? (size_t) left : SPLICE_CHUNK;
        if (to < 0)
                to = rj->d->null_fd;
        ssize_t n = splice(cap->out_fd[i], NULL, to, NULL, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n < 0 && to == cap->file_fd[i] && errno != EAGAIN && errno != EINTR) {
                /* The file refused it (a full disk): counted as lost, and
                 * the rest goes to /dev/null. */
                cap->write_err[i] = -errno;
                errno = EINTR;
                return -1;
        }
        if (n > 0) {
                cap->produced[i] += (uint64_t) n;
                if (to == cap->file_fd[i])
                        cap->kept[i] += (uint64_t) n;
                else if (!left)
                        cap->truncated[i] = true;
        }
        return n;
}

/* Read what a pipe has (bounded per call); returns true at end of file. */
static bool drain_output(struct rjob *rj, int i, unsigned max_reads) {
        struct capture *cap = &rj->cap;
        char buf[READ_CHUNK];
        while (max_reads-- > 0 && cap->out_fd[i] >= 0) {
                ssize_t n;
                if (list_empty(&rj->watches) && rj->d->null_fd >= 0 && !cap->no_splice[i]) {
                        n = splice_out(rj, i);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0)
                                return errno != EAGAIN;
                        if (n == 0)
                                return true;
                        continue;
                }
                n = read(cap->out_fd[i], buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno != EAGAIN;
                }
                if (n == 0)
                        return true;
                cap->produced[i] += (uint64_t) n;
                pass(rj, i, buf, (size_t) n, false);
        }
        return false;
}

static void on_stdout(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, cap.out_src[0]);
        if (drain_output(rj, 0, READS_PER_WAKEUP))
                close_src(s, &rj->cap.out_fd[0]);
}

static void on_stderr(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, cap.out_src[1]);
        if (drain_output(rj, 1, READS_PER_WAKEUP))
                close_src(s, &rj->cap.out_fd[1]);
}

static void status_line(struct capture *cap, const char *line, size_t len) {
        json_t *m = json_loadb(line, len, 0, NULL);
        if (!m)
                return;
        if (json_object_get(m, SBX_STATUS_EXIT_CODE)) {
                json_decref(cap->status_end);
                cap->status_end = m;
                return;
        }
        /* the start line: the pid is known from the pidfd; what the
         * sandbox has is kept for the records of its session's execs */
        json_t *prot = json_object_get(m, SBX_STATUS_PROTECTIONS);
        if (json_is_object(prot)) {
                json_decref(cap->start_prot);
                cap->start_prot = json_incref(prot);
        }
        json_decref(m);
        /* set up, and the command's execve succeeded */
        struct rjob *rj = container_of(cap, struct rjob, cap);
        const struct run_request *run = &rj->j.req.run;
        struct cb_progress_job pj = { .job = rj->j.id, .tenant = rj->j.tenant->name, .url = run->callback,
                                      .traceparent = run->traceparent, .interval_s = run->progress_s,
                                      .started_ms = rj->j.started_ms, .produced = cap->produced, .exited = &cap->exited,
                                      .slot = &rj->cb_prog };
        callbacks_progress_start(&rj->d->cb, &pj);
}

static void drain_status(struct capture *cap) {
        char buf[8192];
        for (;;) {
                ssize_t n = read(cap->status_fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0 || errno != EAGAIN)
                                close_src(&cap->status_src, &cap->status_fd);
                        return;
                }
                if (cap->status_len + (size_t) n > STATUS_MAX)
                        continue;
                char *nb = realloc(cap->status_buf, cap->status_len + (size_t) n + 1);
                if (!nb)
                        return;
                cap->status_buf = nb;
                memcpy(nb + cap->status_len, buf, (size_t) n);
                cap->status_len += (size_t) n;
                char *nl;
                while ((nl = memchr(cap->status_buf, '\n', cap->status_len))) {
                        size_t l = (size_t) (nl - cap->status_buf);
                        status_line(cap, cap->status_buf, l);
                        memmove(cap->status_buf, nl + 1, cap->status_len - l - 1);
                        cap->status_len -= l + 1;
                }
        }
}

static void on_status(struct source *s, uint32_t events) {
        drain_status(&container_of(s, struct rjob, cap.status_src)->cap);
}

/* The daemon's child reports here if it never reached the launcher. */
static void read_spawn_error(struct capture *cap) {
        struct spawn_report rep;
        if (cap->spawn_err_fd < 0)
                return;
        ssize_t n = read(cap->spawn_err_fd, &rep, sizeof(rep));
        if (n == (ssize_t) sizeof(rep)) {
                char msg[512];
                spawn_report_format(&rep, msg, sizeof(msg));
                cap->spawn_error = strdup(msg);
        }
        close(cap->spawn_err_fd);
        cap->spawn_err_fd = -1;
}

static void on_pidfd(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, cap.pid_src);
        struct capture *cap = &rj->cap;
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        if (privc_on(&rj->d->privc)) {
                /* The helper is the launcher's parent. */
                int st;
                if (privjob_wait(&rj->d->privc, rj, &st) < 0)
                        return;
                si.si_pid = rj->pid;
                si.si_code = WIFEXITED(st) ? CLD_EXITED : CLD_KILLED;
                si.si_status = WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st);
        } else if (cap->adopted) {
                /* Its parent is someone else, who reaps it: its status is
                 * not known here. Said as what ended it: the SIGTERM of a
                 * stop, or else something the daemon did not do. */
                si.si_pid = rj->pid;
                si.si_code = CLD_KILLED;
                si.si_status = rj->j.state == JOB_STOPPING ? SIGTERM : SIGKILL;
        } else if (waitid((idtype_t) P_PIDFD, (id_t) cap->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return;
        cap->exited = true;
        rj->t_us[T_EXITED] = now_mono_us();
        if (si.si_code == CLD_EXITED) {
                cap->exit_status = si.si_status;
                cap->exit_signal = 0;
        } else {
                cap->exit_status = -1;
                cap->exit_signal = si.si_status;
        }
        close_src(&cap->pid_src, &cap->pidfd);
        /* Stragglers outside the launcher's control (none should exist)
         * must not keep the pipes open or outlive the job. */
        if (privc_on(&rj->d->privc))
                (void) privjob_kill(&rj->d->privc, rj);
        else if (rj->cgroup_fd >= 0)
                cgroup_job_kill(&rj->d->cg, rj->cgroup_fd);
        for (int i = 0; i < 2; i++) {
                /* EAGAIN with the writer gone means empty. */
                drain_output(rj, i, 64);
                close_src(&cap->out_src[i], &cap->out_fd[i]);
        }
        if (cap->status_fd >= 0)
                drain_status(cap);
        close_src(&cap->status_src, &cap->status_fd);
        read_spawn_error(cap);
        runner_exited(rj);
}

int capture_adopt(struct rjob *rj, int pidfd) {
        struct capture *cap = &rj->cap;
        cap->pidfd = pidfd;
        cap->adopted = true;
        return loop_add(&cap->pid_src, pidfd, EPOLLIN, on_pidfd);
}

int capture_start_exec(struct rjob *rj, int out_fd, int err_fd) {
        struct capture *cap = &rj->cap;
        cap->out_fd[0] = out_fd;
        cap->out_fd[1] = err_fd;
        if (fcntl(out_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(err_fd, F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        /* splice(2) needs a pipe at one end: a terminal's master is read. */
        for (int i = 0; i < 2; i++) {
                struct stat st;
                cap->no_splice[i] = fstat(cap->out_fd[i], &st) < 0 || !S_ISFIFO(st.st_mode);
        }
        redact_start(rj);
        int r = loop_add(&cap->out_src[0], out_fd, EPOLLIN, on_stdout);
        return r == 0 ? loop_add(&cap->out_src[1], err_fd, EPOLLIN, on_stderr) : r;
}

void capture_exec_exited(struct rjob *rj, int wait_status) {
        struct capture *cap = &rj->cap;
        if (cap->exited)
                return;
        cap->exited = true;
        rj->t_us[T_EXITED] = now_mono_us();
        if (WIFEXITED(wait_status)) {
                cap->exit_status = WEXITSTATUS(wait_status);
                cap->exit_signal = 0;
        } else {
                cap->exit_status = -1;
                cap->exit_signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : SIGKILL;
        }
        /* What the command wrote before it ended is in the pipes; a
         * process it left behind may hold them open: read what is there,
         * no more. */
        for (int i = 0; i < 2; i++) {
                drain_output(rj, i, 64);
                close_src(&cap->out_src[i], &cap->out_fd[i]);
        }
        runner_exited(rj);
}

int capture_start(struct rjob *rj, int out_fd, int err_fd, int status_fd, int spawn_err_fd, int pidfd) {
        struct capture *cap = &rj->cap;
        cap->out_fd[0] = out_fd;
        cap->out_fd[1] = err_fd;
        cap->status_fd = status_fd;
        cap->spawn_err_fd = spawn_err_fd;
        cap->pidfd = pidfd;
        int fds[] = { out_fd, err_fd, status_fd, spawn_err_fd };
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
                if (fcntl(fds[i], F_SETFL, O_NONBLOCK) < 0)
                        return -errno;
        redact_start(rj);
        int r = loop_add(&cap->out_src[0], out_fd, EPOLLIN, on_stdout);
        if (r == 0)
                r = loop_add(&cap->out_src[1], err_fd, EPOLLIN, on_stderr);
        if (r == 0)
                r = loop_add(&cap->status_src, status_fd, EPOLLIN, on_status);
        if (r == 0)
                r = loop_add(&cap->pid_src, pidfd, EPOLLIN, on_pidfd);
        return r;
}
