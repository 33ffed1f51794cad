/* SPDX-License-Identifier: Apache-2.0 */
/* Requests to a running command of a session (sbx-protocol(7):
 * session.stdin, session.resize, session.signal): its stdin kept open, its
 * terminal's size, a signal to its process group through the agent. */
#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "initc.h"
#include "jobs.h"
#include "session-internal.h"
#include "session.h"
#include "util.h"

/* The session's command that is job, or NULL. */
static struct exec_ref *exec_by_job(struct session *s, const char *job) {
        for (struct list *p = s->execs.next; p != &s->execs; p = p->next)
                if (streq(list_entry(p, struct exec_ref, link)->rj->j.id, job))
                        return list_entry(p, struct exec_ref, link);
        return NULL;
}

int session_stdin(struct session *s, const char *job, const void *data, size_t len, bool eof, size_t *ret_written) {
        struct exec_ref *x = exec_by_job(s, job);
        if (!x)
                return -ENOENT;
        if (x->ended)
                return -ESRCH;
        if (x->stdin_fd < 0)
                return -EBADF;
        ssize_t n = len ? write(x->stdin_fd, data, len) : 0;
        if (n < 0 && errno != EAGAIN)
                return errno == EPIPE ? -EPIPE : -errno;
        *ret_written = n < 0 ? 0 : (size_t) n;
        if (eof && *ret_written == len)
                exec_stdin_close(x);
        return 0;
}

int session_resize(struct session *s, const char *job, uint16_t rows, uint16_t cols) {
        struct exec_ref *x = exec_by_job(s, job);
        if (!x)
                return -ENOENT;
        if (x->ended || !x->handle)
                return -ESRCH;
        if (x->tty_fd < 0)
                return -ENOTTY;
        /* The kernel sends SIGWINCH to the terminal's foreground process
         * group. */
        struct winsize ws = { .ws_row = rows, .ws_col = cols };
        return ioctl(x->tty_fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}

int session_signal(struct session *s, const char *job, int signo) {
        struct exec_ref *x = exec_by_job(s, job);
        if (!x)
                return -ENOENT;
        if (x->ended || !x->handle)
                return -ESRCH;
        struct sbx_init_signal m = { .handle = x->handle, .signo = signo, .flags = SBX_INIT_SIGNAL_GROUP };
        int r = agent_call(s, SBX_INIT_SIGNAL, &m, sizeof(m));
        if (r < 0)
                return r;
        return -(int) msg_call.hdr.error;
}
