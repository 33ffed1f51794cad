/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "nft-run.h"

/* Where distributions put it; the first that is there. No PATH lookup:
 * the caller is root and its environment is not a choice of anyone's. */
static const char *const nft_paths[] = { "/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft" };

int nft_run(const char *cmds, struct sbx_error *err) {
        const char *prog = NULL;
        for (size_t i = 0; i < sizeof(nft_paths) / sizeof(nft_paths[0]) && !prog; i++)
                if (access(nft_paths[i], X_OK) == 0)
                        prog = nft_paths[i];
        if (!prog)
                return err ? sbx_error_msg(err, ENOENT, "nftables: no nft program in /usr/sbin, /sbin or /usr/bin") : -ENOENT;
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) < 0)
                return err ? sbx_error_set(err, errno, "nftables: pipe") : -errno;
        if (pipe2(out, O_CLOEXEC) < 0) {
                int r = -errno;
                close(in[0]);
                close(in[1]);
                return err ? sbx_error_set(err, -r, "nftables: pipe") : r;
        }
        pid_t pid = fork();
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (dup2(in[0], 0) < 0 || dup2(null, 1) < 0 || dup2(out[1], 2) < 0)
                        _exit(127);
                char *const argv[] = { (char *) "nft", (char *) "-f", (char *) "-", NULL };
                char *const envp[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *) "LC_ALL=C", NULL };
                execve(prog, argv, envp);
                _exit(127);
        }
        int r = pid < 0 ? -errno : 0;
        close(in[0]);
        close(out[1]);
        /* The script is a few kilobytes at most and nft reads all of it
         * before it writes a word: this write does not wait on the read
         * below. EPIPE (nft gone early) is seen in its exit status. */
        sighandler_t old = signal(SIGPIPE, SIG_IGN);
        if (r == 0)
                (void) fd_write_all(in[1], cmds, strlen(cmds));
        close(in[1]);
        char msg[256] = "";
        size_t got = 0;
        ssize_t n;
        while ((n = read(out[0], msg + got, sizeof(msg) - 1 - got)) > 0 || (n < 0 && errno == EINTR))
                if (n > 0 && (got += (size_t) n) == sizeof(msg) - 1)
                        break;
        msg[got] = '\0';
        close(out[0]);
        signal(SIGPIPE, old);
        if (r < 0)
                return err ? sbx_error_set(err, -r, "nftables: fork") : r;
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return err ? sbx_error_set(err, errno, "nftables: %s", prog) : -errno;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
                return 0;
        if (err) {
                msg[strcspn(msg, "\n")] = '\0';
                sbx_error_msg(err, EIO, "nftables: %s", msg[0] ? msg : "nft failed");
        }
        return -EIO;
}
