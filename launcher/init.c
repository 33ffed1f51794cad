/* SPDX-License-Identifier: Apache-2.0 */
/* pid 1 of the sandbox once the command runs: reaps every orphan, forwards
 * the job-control and user signals to the command, and when the command
 * ends kills whatever is left and hands its wait status to the launcher.
 * pid 1 ignores any signal it has no handler for, so we never rely on
 * handlers: the signals stay blocked and are taken with sigwaitinfo. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"

/* The signals sbx-launch(1) forwards, as PROCESSES says: the launcher
 * passes them to pid 1, pid 1 to the command. */
void init_add_forwarded(sigset_t *set) {
        static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
        for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
                sigaddset(set, forwarded[i]);
}

/* How often the command's address space is looked at while a memory
 * rlimit holds it, and every how many looks all its processes are. */
#define VM_SAMPLE_MS 10
#define VM_SCAN_EVERY 25

/* VmPeak of /proc/PID/status in kB, or 0 (gone, or no /proc here). */
static uint64_t vm_peak_kb(const char *pid) {
        char path[64], buf[2048];
        snprintf(path, sizeof(path), "/proc/%s/status", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        const char *v = strstr(buf, "\nVmPeak:");
        return v ? strtoull(v + 9, NULL, 10) : 0;
}

/* The largest of every process's VmPeak in this pid namespace. */
static uint64_t vm_scan_kb(void) {
        uint64_t max = 0;
        DIR *d = opendir("/proc");
        struct dirent *de;
        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (de->d_name[0] >= '1' && de->d_name[0] <= '9') {
                        uint64_t kb = vm_peak_kb(de->d_name);
                        if (kb > max)
                                max = kb;
                }
        closedir(d);
        return max;
}

void init_run(pid_t command, int exit_fd, bool own_pid_ns, bool watch_vm) {
        sigset_t set;
        int status = 0;
        bool done = false;
        /* The kernel keeps each process's peak address space (VmPeak) and
         * drops it when the process exits, before its parent hears of it:
         * what is seen is sampled while the processes live. The command's
         * every VM_SAMPLE_MS, all of them now and then (only with a pid
         * namespace of our own: /proc is then the job's alone). Evidence
         * for the status record, never a decision here. */
        uint64_t peak_kb = 0;
        unsigned looks = 0;
        char cmd[16];
        snprintf(cmd, sizeof(cmd), "%d", (int) command);
        const struct timespec tick = { 0, VM_SAMPLE_MS * 1000000L };

        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        init_add_forwarded(&set);
        sigprocmask(SIG_BLOCK, &set, NULL);
        /* Without a pid namespace of our own, orphans would go to the
         * host's init; keep them so they can be reaped and counted. */
        if (!own_pid_ns)
                prctl(PR_SET_CHILD_SUBREAPER, 1);

        while (!done) {
                siginfo_t si;
                if (watch_vm) {
                        uint64_t kb = own_pid_ns && ++looks % VM_SCAN_EVERY == 1 ? vm_scan_kb() : vm_peak_kb(cmd);
                        if (kb > peak_kb)
                                peak_kb = kb;
                }
                int sig = watch_vm ? sigtimedwait(&set, &si, &tick) : sigwaitinfo(&set, &si);
                if (sig < 0)
                        continue;
                if (sig != SIGCHLD) {
                        kill(command, sig);
                        continue;
                }
                for (;;) {
                        int st;
                        pid_t pid = waitpid(-1, &st, WNOHANG);
                        if (pid <= 0)
                                break;
                        if (pid == command) {
                                status = st;
                                done = true;
                        }
                }
        }

        if (own_pid_ns) {
                /* kill(-1) spares only ourselves; then wait for all of it. */
                kill(-1, SIGKILL);
                while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
                        ;
        } else {
                /* Best effort without a pid namespace: the command's
                 * session, whatever is already ours to reap. */
                kill(-command, SIGKILL);
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
        }

        struct init_exit ex = { .status = status, .peak_vm_kb = peak_kb };
        ssize_t n = write(exit_fd, &ex, sizeof(ex));
        (void) n;
        _exit(WIFSIGNALED(status) ? SBX_EXIT_FOR_SIGNAL(WTERMSIG(status)) : WEXITSTATUS(status));
}
