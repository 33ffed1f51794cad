/* SPDX-License-Identifier: Apache-2.0 */
/* privd-client's scenarios for workspaces and bundle trees across the uid
 * line (t/privd-fs.bats). The front writes uploads through the workspace
 * descriptor JOB_OPEN gave it, WS_HANDOVER gives them to the job, a real
 * sbx-launch reads them and writes artifacts, WS_RECLAIM gives those back.
 * The attacks put in the workspace what a hostile front or job would; what
 * the front cannot make itself (a root-owned file, a device node, a
 * mount) a child that stayed root plants on request ("planter"). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "privd-client.h"

/* What the planter does to a path: make it root's; make a device node
 * there (/dev/null's numbers) owned by the front, so that only its kind is
 * wrong; mount a tmpfs on it. */
enum plant_op { PLANT_CHOWN_ROOT = 1, PLANT_MKNOD, PLANT_MOUNT };

struct plant_req {
        int op;
        uid_t uid;                /* PLANT_MKNOD: the node's owner */
        gid_t gid;
        char path[1024];
};

static int plant_wr = -1, plant_rd = -1;

static void planter(int rd, int wr) {
        struct plant_req q;
        while (read(rd, &q, sizeof(q)) == (ssize_t) sizeof(q)) {
                q.path[sizeof(q.path) - 1] = '\0';
                int r = 0;
                if (q.op == PLANT_CHOWN_ROOT)
                        r = lchown(q.path, 0, 0);
                else if (q.op == PLANT_MKNOD)
                        r = mknod(q.path, S_IFCHR | 0666, makedev(1, 3)) < 0 ? -1 : lchown(q.path, q.uid, q.gid);
                else if (q.op == PLANT_MOUNT)
                        r = mount("tmpfs", q.path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k");
                r = r < 0 ? -errno : 0;
                if (write(wr, &r, sizeof(r)) != (ssize_t) sizeof(r))
                        break;
        }
        _exit(0);
}

void fs_planter_start(void) {
        int req[2], rep[2];
        if (pipe2(req, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0)
                fail("pipe");
        pid_t pid = fork();
        if (pid < 0)
                fail("fork");
        if (pid == 0) {
                /* Not the helper's peer: the helper sees the front hang up
                 * when the client alone goes. */
                close(sock);
                close(req[1]);
                close(rep[0]);
                planter(req[0], rep[1]);
        }
        close(req[0]);
        close(rep[1]);
        plant_wr = req[1];
        plant_rd = rep[0];
}

static void fd_path(int fd, char *out, size_t len) {
        char p[64];
        snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(p, out, len - 1);
        if (n < 0)
                fail("readlink");
        out[n] = '\0';
}

/* The planter does op on ws/name, as root. */
static void plant(int op, int ws, const char *name) {
        struct plant_req q = { .op = op, .uid = getuid(), .gid = getgid() };
        char dir[900];
        fd_path(ws, dir, sizeof(dir));
        snprintf(q.path, sizeof(q.path), "%s/%s", dir, name);
        int r;
        if (write(plant_wr, &q, sizeof(q)) != (ssize_t) sizeof(q) || read(plant_rd, &r, sizeof(r)) != (ssize_t) sizeof(r))
                fail("planter");
        if (r < 0) {
                errno = -r;
                fail(q.path);
        }
}

static void write_file(int dir, const char *name, const char *text) {
        int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t) strlen(text))
                fail(name);
        close(fd);
}

/* A file of the workspace as the front reads it: its text, or the errno. */
static void show_file(const char *label, int dir, const char *name) {
        char buf[512];
        int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                printf("%s: %s\n", label, strerror(errno));
                return;
        }
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        for (char *c = buf; *c; c++)
                if (*c == '\n')
                        *c = n > 0 && c == buf + n - 1 ? '\0' : ' ';
        printf("%s: %s\n", label, buf);
}

static uid_t owner(int dir, const char *name) {
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH)) < 0)
                return (uid_t) -1;
        return st.st_uid;
}

/* A profile that binds the job's workspace at /workspace and, with
 * bundle, fd 7 at /bundle, and the host's /etc read-only (so that a job
 * can try to link its files). */
static int job_profile(const struct job *j, bool bundle) {
        char ws[900], base[16384], out[20000];
        fd_path(j->ws, ws, sizeof(ws));
        int in = open(profile_file, O_RDONLY | O_CLOEXEC);
        ssize_t n = in < 0 ? -1 : read(in, base, sizeof(base) - 1);
        if (n < 0)
                fail(profile_file);
        close(in);
        base[n] = '\0';
        char *fs = strstr(base, "[fs]\n");
        if (!fs)
                fail("no [fs] in the profile");
        fs += 5;
        int len = snprintf(out, sizeof(out), "%.*sbind = %s /workspace\nro-bind = /etc /etc\n%s%s", (int) (fs - base), base, ws,
                           bundle ? "ro-bind = fd:7 /bundle\n" : "", fs);
        return memfd_with("profile", out, (size_t) len);
}

/* The launcher's exit, through its pidfd; its status pipe's exit code. */
static int wait_exit(const char *name, struct job *j) {
        struct pollfd pf = { .fd = j->pidfd, .events = POLLIN };
        if (poll(&pf, 1, 60000) != 1) {
                printf("%s did not exit\n", name);
                return -1;
        }
        char buf[8192];
        ssize_t n, tot = 0;
        while (tot < (ssize_t) sizeof(buf) - 1 && (n = read(j->status_rd, buf + tot, sizeof(buf) - 1 - (size_t) tot)) > 0)
                tot += n;
        buf[tot] = '\0';
        char *e = strstr(buf, "\"exit-code\": ");
        int code = e ? atoi(e + 13) : -1;
        printf("%s exit-code %d\n", name, code);
        return code;
}

static void say(const char *what, int32_t r) {
        printf("%s: %s\n", what, r ? strerror(-r) : "ok");
}

/* ---- the positive path ---------------------------------------------------------- */

int fs_artifacts(const char *bundle_dir) {
        struct job j;
        uint32_t uid;
        if (!bundle_dir || uid_take(&uid) < 0 || job_open(uid, &j) < 0)
                fail("open J");
        print_job("J", &j);
        printf("J workspace owner before handover: %s\n", owner(j.ws, "") == getuid() ? "front" : "other");
        write_file(j.ws, "in.txt", "upload-one\n");
        /* Modes a careless (or hostile) front might leave: every one may
         * write. */
        if (mkdirat(j.ws, "sub", 0777) < 0 || fchmodat(j.ws, "sub", 0777, 0) < 0 || fchmod(j.ws, 0777) < 0)
                fail("mkdir sub");
        int sub = openat(j.ws, "sub", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sub < 0)
                fail("sub");
        write_file(sub, "data", "upload-two\n");
        say("J WS_HANDOVER", job_op(PRIVD_WS_HANDOVER, j.h));
        printf("J workspace owner after handover: %s\n", owner(j.ws, "") == j.uid ? "job" : "other");
        printf("J upload owner after handover: %s\n", owner(sub, "data") == j.uid ? "job" : "other");
        struct stat st;
        if (fstat(j.ws, &st) < 0)
                fail("fstat");
        printf("J workspace mode after handover: %o\n", (unsigned) (st.st_mode & 07777));
        /* The kept descriptor of sub no longer lets the front add to it. */
        int fd = openat(sub, "late", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        printf("J front adds to a handed-over directory: %s\n", fd < 0 ? strerror(errno) : "ok");
        if (fd >= 0)
                close(fd);
        close(sub);
        int bundle = open(bundle_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (bundle < 0)
                fail(bundle_dir);
        int prof = job_profile(&j, true);
        static const char cmd[] = "sh\0-c\0"
                                  "cat /workspace/in.txt /workspace/sub/data > /workspace/out.txt && "
                                  "ls /bundle > /workspace/bundle-ls.txt && "
                                  "{ if touch /bundle/new 2>/dev/null; then echo writable; else echo read-only; fi > /workspace/ro.txt; } && "
                                  "mkdir /workspace/outdir && echo deep > /workspace/outdir/f";
        int32_t r = spawn_with(&j, cmd, sizeof(cmd), -1, prof, bundle);
        close(prof);
        close(bundle);
        say("J SPAWN", r);
        if (r < 0)
                return 1;
        printf("J pid %d\n", (int) j.pid);
        if (wait_exit("J", &j) < 0)
                return 1;
        say("J WS_RECLAIM before JOB_KILL", job_op(PRIVD_WS_RECLAIM, j.h));
        say("J JOB_KILL", job_op(PRIVD_JOB_KILL, j.h));
        say("J WS_RECLAIM", job_op(PRIVD_WS_RECLAIM, j.h));
        show_file("J artifact", j.ws, "out.txt");
        show_file("J bundle listing", j.ws, "bundle-ls.txt");
        show_file("J bundle mount", j.ws, "ro.txt");
        show_file("J deep artifact", j.ws, "outdir/f");
        printf("J artifact owner: %s\n", owner(j.ws, "out.txt") == getuid() ? "front" : "other");
        say("J WS_RECLAIM again", job_op(PRIVD_WS_RECLAIM, j.h));
        say("J JOB_CLOSE", job_op(PRIVD_JOB_CLOSE, j.h));
        fflush(stdout);
        return accepted ? 1 : 0;
}

/* ---- a large tree ------------------------------------------------------------------ */

#define MANY_DIRS 100
#define MANY_FILES 200

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* How many of the tree's files uid owns. */
static unsigned owned_by(int ws, uid_t uid) {
        unsigned n = 0;
        char name[64];
        for (int d = 0; d < MANY_DIRS; d++)
                for (int f = 0; f < MANY_FILES; f++) {
                        snprintf(name, sizeof(name), "d%d/f%d", d, f);
                        n += owner(ws, name) == uid;
                }
        return n;
}

/* 20,000 uploads handed over and reclaimed: every one changes hands, and
 * how long each walk takes (the helper answers nothing else meanwhile). */
int fs_many(void) {
        struct job j;
        uint32_t uid;
        if (uid_take(&uid) < 0 || job_open_sized(uid, 256 << 20, &j) < 0)
                fail("open M");
        char name[64];
        for (int d = 0; d < MANY_DIRS; d++) {
                snprintf(name, sizeof(name), "d%d", d);
                if (mkdirat(j.ws, name, 0755) < 0)
                        fail("mkdir");
                int dfd = openat(j.ws, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                for (int f = 0; f < MANY_FILES; f++) {
                        snprintf(name, sizeof(name), "f%d", f);
                        write_file(dfd, name, "x");
                }
                close(dfd);
        }
        double t0 = now_s();
        int32_t r = job_op(PRIVD_WS_HANDOVER, j.h);
        double t1 = now_s();
        say("M WS_HANDOVER", r);
        printf("M entries: %d\n", MANY_DIRS * (MANY_FILES + 1));
        printf("M handover: %.3f s\n", t1 - t0);
        say("M JOB_KILL", job_op(PRIVD_JOB_KILL, j.h));
        t0 = now_s();
        r = job_op(PRIVD_WS_RECLAIM, j.h);
        t1 = now_s();
        say("M WS_RECLAIM", r);
        printf("M reclaim: %.3f s\n", t1 - t0);
        printf("M files of the front after reclaim: %u\n", owned_by(j.ws, getuid()));
        say("M JOB_CLOSE", job_op(PRIVD_JOB_CLOSE, j.h));
        fflush(stdout);
        return 0;
}

/* ---- a front racing its own handover ---------------------------------------------- */

struct racer {
        int dfd;                  /* a directory of the uploads, kept open */
        atomic_bool stop;
        unsigned made, left;      /* fifos made; made but could not be removed */
};

/* Fifos in and out of a directory the walk is about to reach or has just
 * changed: whatever the interleaving, none may end up in a workspace
 * handed over. */
static void *race(void *arg) {
        struct racer *rc = arg;
        char name[32];
        for (unsigned n = 0; !atomic_load(&rc->stop); n++) {
                snprintf(name, sizeof(name), "fifo%u", n);
                if (mkfifoat(rc->dfd, name, 0600) < 0)
                        continue;
                rc->made++;
                if (unlinkat(rc->dfd, name, 0) < 0)
                        rc->left++;
        }
        return NULL;
}

void attack_race(void) {
        unsigned ok = 0, unchanged = 0, partial = 0;
        for (int round = 0; round < 30; round++) {
                struct job j;
                uint32_t uid;
                if (uid_take(&uid) < 0 || job_open_sized(uid, 16 << 20, &j) < 0)
                        fail("open R");
                char name[32];
                for (int d = 0; d < 4; d++) {
                        snprintf(name, sizeof(name), "d%d", d);
                        if (mkdirat(j.ws, name, 0777) < 0 || fchmodat(j.ws, name, 0777, 0) < 0)
                                fail("mkdir");
                        int dfd = openat(j.ws, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        for (int f = 0; f < 100; f++) {
                                snprintf(name, sizeof(name), "f%d", f);
                                write_file(dfd, name, "x");
                        }
                        close(dfd);
                }
                struct racer rc = { .dfd = openat(j.ws, round % 2 ? "d3" : "d0", O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
                pthread_t t;
                if (rc.dfd < 0 || pthread_create(&t, NULL, race, &rc) != 0)
                        fail("racer");
                int32_t r = job_op(PRIVD_WS_HANDOVER, j.h);
                atomic_store(&rc.stop, true);
                pthread_join(t, NULL);
                close(rc.dfd);
                if (r == 0) {
                        ok++;
                        if (rc.left) {
                                printf("ACCEPTED a handover with %u fifos left in it\n", rc.left);
                                accepted++;
                        }
                } else if (job_op(PRIVD_WS_RECLAIM, j.h) == 0) {
                        /* Refused after changing owners: the job is killed
                         * and never runs, the front got its files back. */
                        partial++;
                        if (owner(j.ws, "") != getuid()) {
                                printf("CHANGED: a partial handover not given back\n");
                                accepted++;
                        }
                } else {
                        unchanged++;
                        if (owner(j.ws, "") != getuid()) {
                                printf("CHANGED: a refused handover changed the root\n");
                                accepted++;
                        }
                }
                if (spawn(&j, "true", 5, -1) == 0 && r < 0) {
                        printf("ACCEPTED SPAWN after a refused handover\n");
                        accepted++;
                }
                if (j.pidfd >= 0) {
                        struct pollfd pf = { .fd = j.pidfd, .events = POLLIN };
                        poll(&pf, 1, 30000);
                }
                if (job_op(PRIVD_JOB_CLOSE, j.h) < 0)
                        fail("close R");
        }
        printf("race: 30 handovers, %u done, %u refused unchanged, %u refused after changes\n", ok, unchanged, partial);
        fflush(stdout);
}

/* ---- uploads a hostile front leaves ----------------------------------------------- */

/* A job whose workspace holds a regular upload and what make() adds;
 * WS_HANDOVER must be refused and change nothing. */
static void refused_upload(const char *what, void (*make)(int ws)) {
        struct job j;
        uint32_t uid;
        if (uid_take(&uid) < 0 || job_open(uid, &j) < 0)
                fail("open U");
        write_file(j.ws, "upload", "data\n");
        make(j.ws);
        expect_refused(what, job_op(PRIVD_WS_HANDOVER, j.h));
        if (owner(j.ws, "") == getuid() && owner(j.ws, "upload") == getuid())
                printf("unchanged %s\n", what);
        else {
                printf("CHANGED %s\n", what);
                accepted++;
        }
        /* Refused before any change: the job still cannot run. */
        expect_refused("SPAWN after a refused WS_HANDOVER", spawn(&j, "true", 5, -1));
        if (job_op(PRIVD_JOB_CLOSE, j.h) < 0)
                fail("close U");
        fflush(stdout);
}

static void make_fifo(int ws) {
        if (mkfifoat(ws, "fifo", 0600) < 0)
                fail("mkfifo");
}

static void make_socket(int ws) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char dir[900];
        fd_path(ws, dir, sizeof(dir));
        if (strlen(dir) + sizeof("/sock") > sizeof(sa.sun_path))
                fail("socket path too long");
        memcpy(sa.sun_path, dir, strlen(dir));
        memcpy(sa.sun_path + strlen(dir), "/sock", sizeof("/sock"));
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0 || bind(s, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                fail("bind");
        close(s);
}

static void make_two_links(int ws) {
        write_file(ws, "one", "x\n");
        if (linkat(ws, "one", ws, "two", 0) < 0)
                fail("link");
}

static void make_root_file(int ws) {
        if (mkdirat(ws, "d", 0755) < 0)
                fail("mkdir");
        int d = openat(ws, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        write_file(d, "rootfile", "x\n");
        plant(PLANT_CHOWN_ROOT, d, "rootfile");
        close(d);
}

static void make_device(int ws) {
        plant(PLANT_MKNOD, ws, "null");
}

static void make_mount(int ws) {
        if (mkdirat(ws, "mnt", 0755) < 0)
                fail("mkdir");
        plant(PLANT_MOUNT, ws, "mnt");
}

static void make_deep(int ws) {
        int d = fcntl(ws, F_DUPFD_CLOEXEC, 3);
        for (int i = 0; i < 70; i++) {
                if (mkdirat(d, "d", 0755) < 0)
                        fail("mkdir");
                int n = openat(d, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                close(d);
                d = n;
        }
        close(d);
}

void attack_uploads(void) {
        refused_upload("WS_HANDOVER with a fifo", make_fifo);
        refused_upload("WS_HANDOVER with a socket", make_socket);
        refused_upload("WS_HANDOVER with a file of two links", make_two_links);
        refused_upload("WS_HANDOVER with a root-owned file", make_root_file);
        refused_upload("WS_HANDOVER with a device node", make_device);
        refused_upload("WS_HANDOVER with another mount", make_mount);
        refused_upload("WS_HANDOVER with 70 nested directories", make_deep);
        /* A symlink to a root file is handed over as a link: its target is
         * never looked up. Hard links to root's files: the kernel refuses
         * them (another file system; protected_hardlinks), tried anyway. */
        struct job s;
        uint32_t uid;
        if (uid_take(&uid) < 0 || job_open(uid, &s) < 0)
                fail("open S");
        print_job("S", &s);
        if (symlinkat("/etc/shadow", s.ws, "shadow") < 0)
                fail("symlink");
        printf("link /etc/shadow: %s\n", linkat(AT_FDCWD, "/etc/shadow", s.ws, "hl-shadow", 0) < 0 ? strerror(errno) : "made");
        printf("link /etc/passwd: %s\n", linkat(AT_FDCWD, "/etc/passwd", s.ws, "hl-passwd", 0) < 0 ? strerror(errno) : "made");
        say("S WS_HANDOVER with a symlink to /etc/shadow", job_op(PRIVD_WS_HANDOVER, s.h));
        fflush(stdout);
}

/* ---- requests out of their state ---------------------------------------------- */

void attack_states(struct job *a) {
        struct job b, c, d;
        uint32_t uid;
        open_job("B", &b);
        expect_refused("WS_HANDOVER twice", job_op(PRIVD_WS_HANDOVER, b.h));
        expect_refused("WS_HANDOVER after SPAWN", job_op(PRIVD_WS_HANDOVER, a->h));
        expect_refused("WS_HANDOVER slot of A, generation of B",
                       job_op(PRIVD_WS_HANDOVER, (struct privd_handle){ .slot = a->h.slot, .gen = b.h.gen }));
        expect_refused("WS_HANDOVER made-up handle", job_op(PRIVD_WS_HANDOVER, (struct privd_handle){ .slot = 999999, .gen = 1 }));
        if (uid_take(&uid) < 0 || job_open(uid, &c) < 0 || job_op(PRIVD_JOB_CLOSE, c.h) < 0)
                fail("C");
        expect_refused("WS_HANDOVER stale handle", job_op(PRIVD_WS_HANDOVER, c.h));
        expect_refused("WS_RECLAIM stale handle", job_op(PRIVD_WS_RECLAIM, c.h));
        if (uid_take(&uid) < 0 || job_open(uid, &d) < 0)
                fail("D");
        print_job("D", &d);
        expect_refused("SPAWN before WS_HANDOVER", spawn(&d, "true", 5, -1));
        expect_refused("WS_RECLAIM of an open job", job_op(PRIVD_WS_RECLAIM, d.h));
        expect_refused("WS_RECLAIM while the job runs", job_op(PRIVD_WS_RECLAIM, a->h));
        expect_refused("WS_RECLAIM of a job handed over, not run", job_op(PRIVD_WS_RECLAIM, b.h));
        printf("D workspace owner: %s\n", owner(d.ws, "") == getuid() ? "front" : "other");
        fflush(stdout);
}

/* ---- what a job leaves for the reclaim --------------------------------------------- */

void attack_reclaim(void) {
        struct job k;
        open_job("K", &k);
        int prof = job_profile(&k, false);
        static const char cmd[] = "sh\0-c\0"
                                  "ln -s /etc/shadow /workspace/shadow; "
                                  "ln /etc/passwd /workspace/hl 2> /workspace/hl.err; "
                                  "echo a > /workspace/a; ln /workspace/a /workspace/b; mkfifo /workspace/fifo; "
                                  "mkdir -p /workspace/d/e; echo f > /workspace/d/e/f; chmod 0777 /workspace/d; "
                                  "ln -s / /workspace/d/root; exit 0";
        int32_t r = spawn_with(&k, cmd, sizeof(cmd), -1, prof, -1);
        close(prof);
        if (r < 0 || wait_exit("K", &k) != 0)
                fail("K did not run");
        /* A root-owned file in the job's tree: left alone, counted. */
        plant(PLANT_CHOWN_ROOT, k.ws, "a");
        expect_refused("WS_RECLAIM before JOB_KILL", job_op(PRIVD_WS_RECLAIM, k.h));
        say("K JOB_KILL", job_op(PRIVD_JOB_KILL, k.h));
        say("K WS_RECLAIM", job_op(PRIVD_WS_RECLAIM, k.h));
        expect_refused("JOB_KILL after WS_RECLAIM", job_op(PRIVD_JOB_KILL, k.h));
        show_file("K hard link to /etc/passwd", k.ws, "hl.err");
        show_file("K deep file", k.ws, "d/e/f");
        printf("K symlink owner: %s\n", owner(k.ws, "shadow") == getuid() ? "front" : "other");
        printf("K root-owned file owner: %u\n", (unsigned) owner(k.ws, "a"));
        fflush(stdout);
}

/* ---- bundle descriptors -------------------------------------------------------- */

static void bundle_refused(struct job *b, const char *what, const char *path, int flags) {
        int fd = open(path, flags | O_CLOEXEC);
        if (fd < 0)
                fail(path);
        expect_refused(what, spawn_with(b, "true", 5, -1, -1, fd));
        close(fd);
}

void attack_bundle(struct job *a, const char *good) {
        struct job b;
        open_job("B", &b);
        bundle_refused(&b, "SPAWN with / as the bundle", "/", O_PATH | O_DIRECTORY);
        bundle_refused(&b, "SPAWN with /etc as the bundle", "/etc", O_RDONLY | O_DIRECTORY);
        bundle_refused(&b, "SPAWN with a root-owned directory as the bundle", "/usr/share", O_PATH | O_DIRECTORY);
        bundle_refused(&b, "SPAWN with a regular file as the bundle", "/etc/passwd", O_RDONLY);
        /* /proc/self is the front's once it is dumpable again. */
        prctl(PR_SET_DUMPABLE, 1);
        bundle_refused(&b, "SPAWN with the front's /proc/self as the bundle", "/proc/self", O_PATH | O_DIRECTORY);
        expect_refused("SPAWN with job A's workspace as the bundle", spawn_with(&b, "true", 5, -1, -1, a->ws));
        /* B did not run; the front's own directory is taken. */
        int fd = open(good, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                fail(good);
        say("B SPAWN with the front's directory as the bundle", spawn_with(&b, "true", 5, -1, -1, fd));
        close(fd);
        fflush(stdout);
}
