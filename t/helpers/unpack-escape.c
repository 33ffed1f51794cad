/* SPDX-License-Identifier: Apache-2.0 */
/* What a libarchive bug could do from inside the unpacking child, tried
 * for real (t/bundle-unpack.bats). One program in two roles:
 *
 *   unpack-escape STAGING ATTEMPT   the daemon's side: starts itself as
 *                                   the child with unpack_archive(), the
 *                                   daemon's own code, and prints
 *                                   "ATTEMPT: " and the outcome
 *   sbx-unpack ...                  (argv[0], as unpack_archive() starts
 *                                   it) the child: unpack_confine(), the
 *                                   code sbx-unpack runs, then ATTEMPT
 *                                   (read from descriptor 3, where the
 *                                   archive would be) instead of
 *                                   unpacking
 *
 * The child replies "blocked: ..." when the kernel refused the attempt
 * and "ESCAPED: ..." when it did not; a filter that kills it shows as
 * the daemon's message for a child killed by SIGSYS. "status" stops for
 * the parent to read /proc/PID/status and the namespaces of the child. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "fd-util.h"
#include "unpack.h"

static void reply(int rc, const char *msg) {
        struct unpack_reply rp;
        memset(&rp, 0, sizeof(rp));
        rp.rc = rc;
        snprintf(rp.msg, sizeof(rp.msg), "%s", msg);
        fd_write_all(UNPACK_FD_REPLY, &rp, sizeof(rp));
        _exit(0);
}

/* ok: the call did what it asked. */
static void outcome(const char *what, int ok, int e) {
        char msg[512];
        if (ok) {
                snprintf(msg, sizeof(msg), "ESCAPED: %s", what);
                reply(-EEXIST, msg);
        }
        snprintf(msg, sizeof(msg), "blocked: %s: %s", what, strerror(e));
        reply(-EACCES, msg);
}

static int child(int argc, char **argv) {
        struct unpack_args a;
        struct sbx_error err;
        char attempt[64] = "";
        memset(&a, 0, sizeof(a));
        if (argc != UNPACK_ARGC)
                return 2;
        a.lim.x.max_bytes = strtoull(argv[1], NULL, 10);
        a.lim.x.max_entries = strtoull(argv[2], NULL, 10);
        a.lim.x.max_path = strtoull(argv[3], NULL, 10);
        a.cpu_seconds = strtoull(argv[4], NULL, 10);
        ssize_t n = read(UNPACK_FD_ARCHIVE, attempt, sizeof(attempt) - 1);
        if (n > 0 && attempt[n - 1] == '\n')
                attempt[n - 1] = '\0';
        if (unpack_confine(&a, &err) < 0) {
                struct unpack_reply rp = { .rc = -err.code, .sandbox = 1 };
                snprintf(rp.msg, sizeof(rp.msg), "%s", err.msg);
                fd_write_all(UNPACK_FD_REPLY, &rp, sizeof(rp));
                _exit(0);
        }
        int fd, r = 0;
        if (!strcmp(attempt, "status")) {
                /* The parent closes its end once it has looked. */
                char c;
                while (read(UNPACK_FD_ARCHIVE, &c, 1) > 0)
                        ;
                reply(-EACCES, "blocked: status");
        } else if (!strcmp(attempt, "read-host")) {
                fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
                outcome("open /etc/passwd", fd >= 0, errno);
        } else if (!strcmp(attempt, "write-host")) {
                fd = open("/tmp/sbx-unpack-escaped", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                outcome("create /tmp/sbx-unpack-escaped", fd >= 0, errno);
        } else if (!strcmp(attempt, "dotdot")) {
                /* From the tree's own descriptor, as extract.c writes. */
                fd = openat(UNPACK_FD_TREE, "../../../../../../tmp/sbx-unpack-escaped", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                outcome("create ../../../../../../tmp/sbx-unpack-escaped beneath the tree", fd >= 0, errno);
        } else if (!strcmp(attempt, "proc")) {
                fd = open("/proc/1/root/etc/passwd", O_RDONLY | O_CLOEXEC);
                outcome("open /proc/1/root/etc/passwd", fd >= 0, errno);
        } else if (!strcmp(attempt, "archive-dir")) {
                /* The archive's descriptor is the only one of the host's. */
                fd = openat(UNPACK_FD_ARCHIVE, "..", O_RDONLY | O_CLOEXEC);
                outcome("open .. of the archive's descriptor", fd >= 0, errno);
        } else if (!strcmp(attempt, "setuid")) {
                fd = openat(UNPACK_FD_TREE, "suid", O_WRONLY | O_CREAT | O_CLOEXEC, 04755);
                outcome("create a setuid file", fd >= 0, errno);
        } else if (!strcmp(attempt, "chmod")) {
                r = fchmodat(UNPACK_FD_TREE, ".", 0777, 0);
                outcome("chmod the tree 0777", r == 0, errno);
        } else if (!strcmp(attempt, "socket")) {
                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                outcome("socket(AF_INET)", fd >= 0, errno);
        } else if (!strcmp(attempt, "mount")) {
                r = mount("none", "/", "tmpfs", 0, NULL);
                outcome("mount a tmpfs", r == 0, errno);
        } else if (!strcmp(attempt, "kill")) {
                r = kill(-1, SIGKILL);
                outcome("kill(-1, SIGKILL)", r == 0, errno);
        } else if (!strcmp(attempt, "exec")) {
                char *args[] = { (char *) "/bin/sh", NULL };
                execve(args[0], args, args + 1);
                outcome("execve /bin/sh", 0, errno);
        } else if (!strcmp(attempt, "plant-link") || !strcmp(attempt, "plant-bytes")) {
                /* What extract.c would refuse, made anyway, with a reply
                 * that says all is well: the daemon's walk must see it. */
                static char zeros[600 * 1024];
                if (attempt[6] == 'l')
                        r = symlinkat("/etc/shadow", UNPACK_FD_TREE, "evil");
                else
                        for (int i = 0, f; i < 2 && r == 0; i++) {
                                char name[8] = { 'z', (char) ('0' + i), 0 };
                                f = openat(UNPACK_FD_TREE, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
                                r = f < 0 || write(f, zeros, sizeof(zeros)) != (ssize_t) sizeof(zeros) ? -1 : 0;
                        }
                if (r < 0)
                        outcome("planting", 0, errno);
                struct unpack_reply rp = { .rc = 0 };
                fd_write_all(UNPACK_FD_REPLY, &rp, sizeof(rp));
                _exit(0);
        } else if (!strcmp(attempt, "fork")) {
                pid_t p = fork();
                if (p == 0)
                        _exit(0);
                outcome("fork", p > 0, errno);
        }
        reply(-EINVAL, "unknown attempt");
        return 2;
}

/* The child of this process (the one unpack_archive started). */
static pid_t find_child(void) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        pid_t found = 0, me = getpid();
        while (d && (e = readdir(d)) && !found) {
                char path[300], line[256];
                snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
                FILE *f = fopen(path, "re");
                while (f && fgets(line, sizeof(line), f))
                        if (!strncmp(line, "PPid:", 5) && atoi(line + 5) == me)
                                found = atoi(e->d_name);
                if (f)
                        fclose(f);
        }
        if (d)
                closedir(d);
        return found;
}

static bool seccomp_on(const char *path) {
        char line[256];
        bool on = false;
        FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                on |= !strncmp(line, "Seccomp:\t2", 10);
        if (f)
                fclose(f);
        return on;
}

/* For "status": print the child's status lines and whether each of its
 * namespaces differs from ours, then let it go on. */
static void *look(void *arg) {
        int wfd = *(int *) arg;
        pid_t pid = 0;
        for (int i = 0; i < 2000 && !(pid = find_child()); i++)
                usleep(5000);
        if (pid) {
                char path[64], line[256], mine[128], its[128];
                snprintf(path, sizeof(path), "/proc/%d/status", pid);
                /* The child is looked at once it confined itself: the
                 * filter is its last step. */
                for (int i = 0; i < 2000 && !seccomp_on(path); i++)
                        usleep(5000);
                FILE *f = fopen(path, "re");
                while (f && fgets(line, sizeof(line), f))
                        if (!strncmp(line, "NoNewPrivs:", 11) || !strncmp(line, "Seccomp:", 8) || !strncmp(line, "Cap", 3))
                                printf("%s", line);
                if (f)
                        fclose(f);
                for (const char *const *ns = (const char *const[]) { "user", "mnt", "pid", "net", "ipc", "uts", NULL }; *ns; ns++) {
                        ssize_t a, b;
                        snprintf(path, sizeof(path), "/proc/self/ns/%s", *ns);
                        a = readlink(path, mine, sizeof(mine) - 1);
                        snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, *ns);
                        b = readlink(path, its, sizeof(its) - 1);
                        printf("ns %s: %s\n", *ns, a > 0 && b > 0 && (a != b || memcmp(mine, its, (size_t) a)) ? "own" : "shared");
                }
                fflush(stdout);
        }
        close(wfd);
        return NULL;
}

#include <pthread.h>

int main(int argc, char **argv) {
        if (!strcmp(argv[0], UNPACK_PROGRAM))
                return child(argc, argv);
        if (argc != 3) {
                fprintf(stderr, "usage: unpack-escape STAGING ATTEMPT\n");
                return 2;
        }
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n < 0)
                return 2;
        self[n] = '\0';
        int tree = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int p[2];
        if (tree < 0 || pipe2(p, O_CLOEXEC) < 0)
                return 2;
        dprintf(p[1], "%s\n", argv[2]);
        pthread_t t;
        bool status = !strcmp(argv[2], "status");
        if (status)
                pthread_create(&t, NULL, look, &p[1]);
        else
                close(p[1]);
        struct unpack_limits lim = { .x = { .max_bytes = 1 << 20, .max_entries = 100, .max_path = EXTRACT_MAX_PATH }, .timeout_ms = 10000 };
        struct extract_stats st;
        struct sbx_error err;
        atomic_bool stop = false;
        int r = unpack_archive(self, p[0], tree, &lim, &stop, &st, &err);
        if (status)
                pthread_join(t, NULL);
        printf("%s: %s\n", argv[2], r == 0 ? "accepted" : err.msg);
        return 0;
}
