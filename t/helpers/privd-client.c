/* SPDX-License-Identifier: Apache-2.0 */
/* A hostile front for t/privd-hostile.bats. Started as root, it starts
 * sbx-privd on one end of a socketpair, then drops to the front's
 * credentials (--as UID:GID: no capability left) and speaks to it:
 *
 *   privd-client --as U:G --profile FILE SCENARIO -- SBX-PRIVD ARGS...
 *
 * Every scenario first opens job A and spawns `sleep 600` in it (printed
 * as "A cgroup PATH", "A workspace PATH", "A pid N"), then runs its
 * attacks, printing "refused WHAT: ERRNO" or "ACCEPTED WHAT" for each,
 * then checks the helper still answers ("alive") and that A's process,
 * cgroup and workspace are there ("A untouched"), prints "attacks done"
 * and, with --hold, waits for SIGUSR1 before it hangs up (the helper must
 * then close A on its own). Exit status 1 if any attack was accepted.
 * Scenario "run": a real `true` through the helper, its exit read through
 * the pidfd and the status pipe, then JOB_CLOSE. Scenarios "artifacts",
 * "uploads", "states", "reclaim" and "bundle" (--bundle DIR: a directory
 * of the front's) are in privd-client-fs.c; "net", "net-attacks" and
 * "net-reuse" (--v6: with IPv6) in privd-client-net.c; "passfd" in
 * privd-client-passfd.c; "park" and "adopt" in privd-client-park.c.
 *
 * With --connect PATH, no helper is started: the client drops to --as
 * and connects to a helper listening there (sbx-privd --socket), and
 * prints "connected" once the HELLO is answered. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "privd-abi.h"
#include "privd-client.h"

int sock = -1;
uint32_t seq;
int accepted;
const char *profile_file;
uint32_t spawn_flags;

_Noreturn void fail(const char *what) {
        fprintf(stderr, "privd-client: %s: %s\n", what, strerror(errno));
        exit(2);
}

struct privd_hdr hdr(uint16_t type, uint32_t len) {
        return (struct privd_hdr){ .magic = PRIVD_MAGIC, .version = PRIVD_VERSION, .type = type, .seq = ++seq, .len = len };
}

void send_raw(const void *msg, size_t len, const int *fds, unsigned n_fds) {
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = len };
        char cbuf[CMSG_SPACE(32 * sizeof(int))];
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (n_fds) {
                memset(cbuf, 0, sizeof(cbuf));
                mh.msg_control = cbuf;
                mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
        }
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
                fail("sendmsg");
}

/* The reply (either shape), and up to two descriptors. */
int32_t recv_reply(struct privd_reply *rep, int *fds, unsigned max_fds) {
        union {
                struct privd_reply r;
                struct privd_hello_reply hr;
                char raw[PRIVD_MSG_MAX];
        } m;
        char cbuf[CMSG_SPACE(4 * sizeof(int))];
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        memset(&m, 0, sizeof(m));
        ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n <= 0) {
                fprintf(stderr, "privd-client: the helper hung up\n");
                exit(3);
        }
        unsigned k = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                for (size_t i = 0; c->cmsg_type == SCM_RIGHTS && i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (k < max_fds)
                                fds[k++] = fd;
                        else
                                close(fd);
                }
        if (rep)
                *rep = m.r;
        return (m.r.h.type & ~PRIVD_REPLY) == PRIVD_HELLO ? m.hr.err : m.r.err;
}

int32_t call(const void *msg, size_t len, const int *fds, unsigned n, struct privd_reply *rep, int *rfds, unsigned max) {
        send_raw(msg, len, fds, n);
        return recv_reply(rep, rfds, max);
}

/* An attack: it must come back refused. */
void expect_refused(const char *what, int32_t err) {
        if (err < 0)
                printf("refused %s: %s\n", what, strerror(-err));
        else {
                printf("ACCEPTED %s\n", what);
                accepted++;
        }
        fflush(stdout);
}

int32_t uid_take(uint32_t *uid) {
        struct privd_hdr m = hdr(PRIVD_UID_TAKE, sizeof(m));
        struct privd_reply rep;
        int32_t r = call(&m, sizeof(m), NULL, 0, &rep, NULL, 0);
        *uid = rep.uid;
        return r;
}

int32_t uid_release(uint32_t uid) {
        struct privd_uid m = { .h = hdr(PRIVD_UID_RELEASE, sizeof(m)), .uid = uid };
        return call(&m, sizeof(m), NULL, 0, NULL, NULL, 0);
}

int32_t job_open(uint32_t uid, struct job *j) {
        return job_open_sized(uid, 1 << 20, j);
}

int32_t job_open_sized(uint32_t uid, uint64_t bytes, struct job *j) {
        struct privd_job_open m = { .h = hdr(PRIVD_JOB_OPEN, sizeof(m)), .uid = uid, .workspace_bytes = bytes, .pids_max = 64 };
        struct privd_reply rep;
        int fds[2] = { -1, -1 };
        int32_t r = call(&m, sizeof(m), NULL, 0, &rep, fds, 2);
        *j = (struct job){ .h = rep.job, .uid = uid, .cg = fds[0], .ws = fds[1], .pidfd = -1, .status_rd = -1 };
        return r;
}

int32_t job_op(uint16_t type, struct privd_handle h) {
        struct privd_job m = { .h = hdr(type, sizeof(m)), .job = h };
        return call(&m, sizeof(m), NULL, 0, NULL, NULL, 0);
}

int memfd_with(const char *name, const void *data, size_t len) {
        int fd = (int) syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || write(fd, data, len) != (ssize_t) len)
                fail("memfd");
        fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
        return fd;
}

int profile_fd(void) {
        char buf[16384];
        int in = open(profile_file, O_RDONLY | O_CLOEXEC);
        ssize_t n = in < 0 ? -1 : read(in, buf, sizeof(buf));
        if (n < 0)
                fail(profile_file);
        close(in);
        return memfd_with("profile", buf, (size_t) n);
}

/* SPAWN with the usual set; status is overridable (a wrong kind). */
int32_t spawn(struct job *j, const char *argv, size_t argv_len, int status_override) {
        return spawn_with(j, argv, argv_len, status_override, -1, -1);
}

/* ...and with a profile of the caller's (-1: --profile's) and a bundle
 * directory (-1: none); neither is closed here. */
int32_t spawn_with(struct job *j, const char *argv, size_t argv_len, int status_override, int profile, int bundle) {
        static const char opts[] = "--profile\0" "/dev/fd/4\0" "--";
        return spawn_opts(j, opts, sizeof(opts), argv, argv_len, status_override, profile, bundle, -1);
}

/* ...and with the launcher's options of the caller's (NUL-separated, the
 * last one "--" or not) and a descriptor for slot 8 (-1: none). */
int32_t spawn_opts(struct job *j, const char *opts, size_t opts_len, const char *argv, size_t argv_len, int status_override,
                   int profile, int bundle, int pass) {
        int st[2];
        if (pipe2(st, O_CLOEXEC) < 0)
                fail("pipe");
        int prof = profile >= 0 ? profile : profile_fd();
        /* The launcher's options first, as the front sends them. */
        char line[4096];
        if (argv_len + opts_len > sizeof(line))
                fail("argv");
        memcpy(line, opts, opts_len);
        memcpy(line + opts_len, argv, argv_len);
        /* In the order of the bits: BUNDLE and PASS come before ARGV. */
        int fds[5] = { status_override >= 0 ? status_override : st[1], prof };
        uint32_t bits = PRIVD_FD_BIT(PRIVD_FD_STATUS) | PRIVD_FD_BIT(PRIVD_FD_PROFILE) | PRIVD_FD_BIT(PRIVD_FD_ARGV);
        unsigned n = 2;
        if (bundle >= 0) {
                bits |= PRIVD_FD_BIT(PRIVD_FD_BUNDLE);
                fds[n++] = bundle;
        }
        if (pass >= 0) {
                bits |= PRIVD_FD_BIT(PRIVD_FD_PASS);
                fds[n++] = pass;
        }
        fds[n++] = memfd_with("argv", line, opts_len + argv_len);
        struct privd_spawn m = { .h = hdr(PRIVD_SPAWN, sizeof(m)), .job = j->h, .fds = bits, .flags = spawn_flags };
        struct privd_reply rep;
        int pidfd = -1;
        int32_t r = call(&m, sizeof(m), fds, n, &rep, &pidfd, 1);
        close(st[1]);
        if (profile < 0)
                close(prof);
        close(fds[n - 1]);
        if (r == 0) {
                j->pidfd = pidfd;
                j->pid = rep.pid;
                j->status_rd = st[0];
        } else
                close(st[0]);
        return r;
}

void print_job(const char *name, const struct job *j) {
        char p[64], t[4096];
        ssize_t n;
        snprintf(p, sizeof(p), "/proc/self/fd/%d", j->cg);
        n = readlink(p, t, sizeof(t) - 1);
        printf("%s cgroup %.*s\n", name, (int) (n > 0 ? n : 0), t);
        snprintf(p, sizeof(p), "/proc/self/fd/%d", j->ws);
        n = readlink(p, t, sizeof(t) - 1);
        printf("%s workspace %.*s\n", name, (int) (n > 0 ? n : 0), t);
        printf("%s uid %u\n", name, j->uid);
}

/* A job of a uid of its own, its workspace handed over, printed. */
void open_job(const char *name, struct job *j) {
        uint32_t uid;
        if (uid_take(&uid) < 0 || job_open(uid, j) < 0 || job_op(PRIVD_WS_HANDOVER, j->h) < 0) {
                fprintf(stderr, "privd-client: cannot open job %s\n", name);
                exit(2);
        }
        print_job(name, j);
}

bool alive(int pidfd) {
        struct pollfd pf = { .fd = pidfd, .events = POLLIN };
        return poll(&pf, 1, 0) == 0;
}

/* ---- the attacks ---------------------------------------------------------------- */

static void attack_uids(struct job *a, uint32_t first, uint32_t count) {
        struct job x;
        expect_refused("JOB_OPEN uid 0", job_open(0, &x));
        expect_refused("JOB_OPEN uid outside the range", job_open(first + count, &x));
        expect_refused("JOB_OPEN uid in use", job_open(a->uid, &x));
        expect_refused("UID_RELEASE uid in use", uid_release(a->uid));
        expect_refused("UID_RELEASE uid 0", uid_release(0));
}

static void attack_handles(struct job *a) {
        struct job b, c, d;
        open_job("B", &b);
        expect_refused("JOB_KILL made-up handle", job_op(PRIVD_JOB_KILL, (struct privd_handle){ .slot = 999999, .gen = 1 }));
        expect_refused("JOB_CLOSE slot of A, generation of B", job_op(PRIVD_JOB_CLOSE, (struct privd_handle){ .slot = a->h.slot, .gen = b.h.gen }));
        expect_refused("JOB_KILL slot of A, generation 0", job_op(PRIVD_JOB_KILL, (struct privd_handle){ .slot = a->h.slot, .gen = 0 }));
        /* C is closed; D takes its slot with a new generation: C's handle
         * must not reach D. */
        open_job("C", &c);
        if (job_op(PRIVD_JOB_CLOSE, c.h) < 0)
                fail("close C");
        open_job("D", &d);
        printf("C slot %u, D slot %u\n", c.h.slot, d.h.slot);
        expect_refused("JOB_KILL stale generation", job_op(PRIVD_JOB_KILL, c.h));
        expect_refused("SPAWN stale generation", spawn(&c, "true", 5, -1));
        expect_refused("JOB_TERM stale generation", job_op(PRIVD_JOB_TERM, c.h));
        /* B was never spawned: nothing to signal or wait for. */
        expect_refused("JOB_TERM of a job not spawned", job_op(PRIVD_JOB_TERM, b.h));
        expect_refused("JOB_WAIT of a job not spawned", job_op(PRIVD_JOB_WAIT, b.h));
}

static void attack_frames(struct job *a) {
        char junk[256];
        memset(junk, 0, sizeof(junk));
        struct privd_hdr h = hdr(PRIVD_UID_TAKE, sizeof(h));
        seq--; /* refused messages do not spend a number */
        expect_refused("truncated (10 bytes)", call(&h, 10, NULL, 0, NULL, NULL, 0));
        struct privd_job k = { .h = hdr(PRIVD_JOB_KILL, sizeof(struct privd_hdr)), .job = a->h };
        seq--;
        expect_refused("truncated (header only, header says so)", call(&k, sizeof(struct privd_hdr), NULL, 0, NULL, NULL, 0));
        struct privd_hdr *o = (struct privd_hdr *) junk;
        *o = hdr(PRIVD_JOB_KILL, sizeof(junk));
        seq--;
        expect_refused("oversized (256 bytes)", call(junk, sizeof(junk), NULL, 0, NULL, NULL, 0));
        struct privd_hdr u = hdr(77, sizeof(u));
        seq--;
        expect_refused("unknown type", call(&u, sizeof(u), NULL, 0, NULL, NULL, 0));
        /* A good UID_TAKE, then the same message again: a replay. */
        uint32_t uid;
        if (uid_take(&uid) < 0)
                fail("take");
        struct privd_hdr dup = { .magic = PRIVD_MAGIC, .version = PRIVD_VERSION, .type = PRIVD_UID_TAKE, .seq = seq, .len = sizeof(dup) };
        expect_refused("duplicated message", call(&dup, sizeof(dup), NULL, 0, NULL, NULL, 0));
        struct privd_hdr skip = { .magic = PRIVD_MAGIC, .version = PRIVD_VERSION, .type = PRIVD_UID_TAKE, .seq = seq + 5, .len = sizeof(skip) };
        expect_refused("sequence number skipped ahead", call(&skip, sizeof(skip), NULL, 0, NULL, NULL, 0));
        struct privd_hello hello = { .h = hdr(PRIVD_HELLO, sizeof(hello)), .version = PRIVD_VERSION };
        seq--;
        expect_refused("second HELLO", call(&hello, sizeof(hello), NULL, 0, NULL, NULL, 0));
        expect_refused("SPAWN on a job already spawned", spawn(a, "true", 5, -1));
        expect_refused("JOB_OPEN with a reserved field set", ({
                               struct privd_job_open m = { .h = hdr(PRIVD_JOB_OPEN, sizeof(m)), .uid = uid, .reserved = 1, .workspace_bytes = 4096 };
                               call(&m, sizeof(m), NULL, 0, NULL, NULL, 0);
                       }));
}

static void attack_fds(void) {
        struct job b;
        open_job("B", &b);
        int dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        expect_refused("SPAWN with a directory as the status pipe", spawn(&b, "true", 5, dir));
        int many[12];
        for (int i = 0; i < 12; i++)
                many[i] = dir;
        struct privd_spawn m = { .h = hdr(PRIVD_SPAWN, sizeof(m)), .job = b.h, .fds = PRIVD_FD_BIT(PRIVD_FD_COUNT) - 1 };
        seq--;
        m.h.seq = seq + 1;
        expect_refused("SPAWN with 12 descriptors", call(&m, sizeof(m), many, 12, NULL, NULL, 0));
        /* 12 did not spend the number (refused before); 3 for a full set does. */
        m.h.seq = ++seq;
        expect_refused("SPAWN with fewer descriptors than announced", call(&m, sizeof(m), many, 3, NULL, NULL, 0));
        struct privd_job k = { .h = hdr(PRIVD_JOB_KILL, sizeof(k)), .job = b.h };
        seq--;
        expect_refused("JOB_KILL carrying a descriptor", call(&k, sizeof(k), &dir, 1, NULL, NULL, 0));
        close(dir);
}

static void attack_flood(void) {
        struct timespec t0, t1;
        unsigned refused = 0, ok = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 10000; i++) {
                if (i % 2) {
                        struct privd_hdr u = hdr(99, sizeof(u));
                        seq--;
                        refused += call(&u, sizeof(u), NULL, 0, NULL, NULL, 0) < 0;
                } else {
                        struct privd_uid m = { .h = hdr(PRIVD_UID_RELEASE, sizeof(m)), .uid = 0 };
                        refused += call(&m, sizeof(m), NULL, 0, NULL, NULL, 0) < 0;
                }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9;
        ok = 10000 - refused;
        printf("flood: 10000 requests in %.3f s, %u refused\n", s, refused);
        if (ok) {
                printf("ACCEPTED %u flood requests\n", ok);
                accepted++;
        } else
                printf("refused flood\n");
}

/* ---- the positive path ---------------------------------------------------------- */

static int run_true(void) {
        struct job j;
        open_job("R", &j);
        static const char cmd[] = "sh\0-c\0echo hi > /dev/null; exit 0";
        int32_t r = spawn(&j, cmd, sizeof(cmd), -1);
        if (r < 0) {
                printf("SPAWN failed: %s\n", strerror(-r));
                return 1;
        }
        printf("R pid %d\n", (int) j.pid);
        struct pollfd pf = { .fd = j.pidfd, .events = POLLIN };
        if (poll(&pf, 1, 60000) != 1) {
                printf("R did not exit\n");
                return 1;
        }
        printf("R exited (pidfd)\n");
        char buf[8192];
        ssize_t n, tot = 0;
        while (tot < (ssize_t) sizeof(buf) - 1 && (n = read(j.status_rd, buf + tot, sizeof(buf) - 1 - (size_t) tot)) > 0)
                tot += n;
        buf[tot] = '\0';
        char *e = strstr(buf, "\"exit-code\": ");
        printf("R exit-code %d\n", e ? atoi(e + 13) : -1);
        r = job_op(PRIVD_JOB_CLOSE, j.h);
        printf("R close: %s\n", r ? strerror(-r) : "ok");
        return r ? 1 : 0;
}

static void drop_to(const char *as) {
        unsigned uid, gid;
        if (sscanf(as, "%u:%u", &uid, &gid) != 2)
                fail("--as");
        gid_t g = gid;
        if (setgroups(1, &g) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                fail("drop");
        if (getuid() == 0 || geteuid() == 0)
                fail("still root");
}

int main(int argc, char **argv) {
        const char *as = NULL, *scenario = NULL, *bundle = NULL, *connect_to = NULL;
        bool hold = false;
        uint32_t net_flags = 0;
        int i = 1;
        for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
                if (!strcmp(argv[i], "--as") && i + 1 < argc)
                        as = argv[++i];
                else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
                        profile_file = argv[++i];
                else if (!strcmp(argv[i], "--bundle") && i + 1 < argc)
                        bundle = argv[++i];
                else if (!strcmp(argv[i], "--connect") && i + 1 < argc)
                        connect_to = argv[++i];
                else if (!strcmp(argv[i], "--hold"))
                        hold = true;
                else if (!strcmp(argv[i], "--v6"))
                        net_flags |= PRIVD_NET_V6;
                else
                        scenario = argv[i];
        }
        if (!as || !scenario || !profile_file || (!connect_to && i + 1 >= argc)) {
                fputs("usage: privd-client --as UID:GID --profile FILE [--bundle DIR] [--hold] [--v6] SCENARIO -- SBX-PRIVD ARGS...\n"
                      "       privd-client --as UID:GID --profile FILE --connect PATH [--bundle DIR] [--hold] SCENARIO\n",
                      stderr);
                return 2;
        }
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_BLOCK, &usr1, NULL);
        if (connect_to) {
                drop_to(as);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", connect_to);
                sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (sock < 0 || connect(sock, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                        fail("connect");
                fs_planter_start();
                goto hello;
        }
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                fail("socketpair");
        pid_t helper = fork();
        if (helper < 0)
                fail("fork");
        if (helper == 0) {
                sigprocmask(SIG_UNBLOCK, &usr1, NULL);
                if (dup2(sv[1], 3) < 0)
                        _exit(2);
                execv(argv[i + 1], argv + i + 1);
                _exit(127);
        }
        close(sv[1]);
        sock = sv[0];
        fs_planter_start();
        drop_to(as);
        printf("helper %d\n", (int) helper);

hello:;
        struct privd_hello hello = { .h = hdr(PRIVD_HELLO, sizeof(hello)), .version = PRIVD_VERSION };
        send_raw(&hello, sizeof(hello), NULL, 0);
        struct privd_hello_reply hr;
        if (recv(sock, &hr, sizeof(hr), 0) != (ssize_t) sizeof(hr) || hr.err)
                fail("hello");
        printf("hello: uids %u+%u, %u slots\n", hr.uid_first, hr.uid_count, hr.max_jobs);
        if (connect_to)
                printf("connected\n");
        fflush(stdout);
        if (!strcmp(scenario, "run"))
                return run_true();
        if (!strcmp(scenario, "artifacts"))
                return fs_artifacts(bundle);
        if (!strcmp(scenario, "many"))
                return fs_many();
        if (!strncmp(scenario, "audit", 5))
                return audit_main(scenario);
        if (!strncmp(scenario, "net", 3))
                return net_main(scenario, net_flags, hold, &usr1);
        if (!strcmp(scenario, "park"))
                return park_main();
        if (!strcmp(scenario, "adopt"))
                return adopt_main();

        struct job a;
        open_job("A", &a);
        static const char sleeper[] = "sleep\0" "600";
        int32_t r = spawn(&a, sleeper, sizeof(sleeper), -1);
        if (r < 0) {
                printf("cannot spawn A: %s\n", strerror(-r));
                return 2;
        }
        printf("A pid %d\n", (int) a.pid);
        fflush(stdout);

        if (!strcmp(scenario, "uids"))
                attack_uids(&a, hr.uid_first, hr.uid_count);
        else if (!strcmp(scenario, "handles"))
                attack_handles(&a);
        else if (!strcmp(scenario, "frames"))
                attack_frames(&a);
        else if (!strcmp(scenario, "fds"))
                attack_fds();
        else if (!strcmp(scenario, "flood"))
                attack_flood();
        else if (!strcmp(scenario, "uploads"))
                attack_uploads();
        else if (!strcmp(scenario, "states"))
                attack_states(&a);
        else if (!strcmp(scenario, "reclaim"))
                attack_reclaim();
        else if (!strcmp(scenario, "race"))
                attack_race();
        else if (!strcmp(scenario, "passfd"))
                attack_passfd();
        else if (!strcmp(scenario, "bundle") && bundle)
                attack_bundle(&a, bundle);
        else if (strcmp(scenario, "none") != 0) {
                fprintf(stderr, "privd-client: unknown scenario %s\n", scenario);
                return 2;
        }

        uint32_t uid;
        if (uid_take(&uid) == 0 && uid_release(uid) == 0)
                printf("alive\n");
        struct stat st;
        if (alive(a.pidfd) && fstat(a.cg, &st) == 0 && fstat(a.ws, &st) == 0 && st.st_uid == a.uid)
                printf("A untouched\n");
        printf("attacks done\n");
        fflush(stdout);
        if (hold) {
                int sig;
                sigwait(&usr1, &sig);
        }
        return accepted ? 1 : 0;
}
