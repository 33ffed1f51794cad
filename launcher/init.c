/* SPDX-License-Identifier: Apache-2.0 */
/* pid 1 of the sandbox once the command runs: reaps every orphan, forwards
 * the job-control and user signals to the command, and when the command
 * ends kills whatever is left and hands its wait status to the launcher.
 * pid 1 ignores any signal it has no handler for, so we never rely on
 * handlers: the signals stay blocked and are taken with sigwaitinfo. */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

/* The signals sbx-launch(1) forwards, as PROCESSES says: the launcher
 * passes them to pid 1, pid 1 to the command. */
void init_add_forwarded(sigset_t *set) {
        static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
        for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
                sigaddset(set, forwarded[i]);
}

void init_run(pid_t command, int exit_fd, bool own_pid_ns) {
        sigset_t set;
        int status = 0;
        bool done = false;

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
                int sig = sigwaitinfo(&set, &si);
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

        ssize_t n = write(exit_fd, &status, sizeof(status));
        (void) n;
        _exit(WIFSIGNALED(status) ? SBX_EXIT_FOR_SIGNAL(WTERMSIG(status)) : WEXITSTATUS(status));
}
