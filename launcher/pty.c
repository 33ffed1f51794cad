/* SPDX-License-Identifier: Apache-2.0 */
/* A terminal for the job (sandbox.pty): the launcher opens a pseudo-
 * terminal on the host, the command gets its slave side as stdin, stdout
 * (and stderr when the caller's stderr is a terminal) and as its
 * controlling terminal, in a session of its own; the launcher relays
 * between the caller's terminal and the master side.
 *
 * The command never holds a descriptor of the caller's terminal, so
 * TIOCSTI and TIOCLINUX (CVE-2017-5226) can only push input into its own
 * pty, and a job that leaves its terminal in raw mode or with odd settings
 * changes nothing outside. The caller's terminal is in raw mode while the
 * relay runs (so that ^C, ^Z and the line editing act on the job's
 * terminal, as in ssh) and is restored at the end, whatever the end was.
 *
 * Without a pty none of this runs: the launcher's only cost is the
 * isatty() checks of the "auto" decision. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fd-util.h"
#include "launch.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

void pty_init(struct pty *t) {
        *t = (struct pty) { .master = -1, .slave = -1, .in_fd = STDIN_FILENO, .out_fd = STDOUT_FILENO };
}

bool pty_wanted(const struct profile *p) {
        if (p->pty != PTY_AUTO)
                return p->pty == PTY_YES;
        /* A terminal on both sides, and we are its foreground: a launcher
         * started in the background must not take the caller's input. */
        return p->new_session && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) &&
               tcgetpgrp(STDIN_FILENO) == getpgrp();
}

/* The slave side, without a path lookup where the kernel can (4.13). */
static int open_slave(int master, const char *name) {
        int fd = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0 || (errno != EINVAL && errno != ENOTTY))
                return fd;
        return open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
}

int pty_open(struct pty *t, struct sbx_error *err) {
        struct winsize ws;
        struct termios modes;

        t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (t->master < 0)
                return sbx_error_set(err, errno, "opening a pseudo-terminal");
        if (unlockpt(t->master) < 0)
                return sbx_error_set(err, errno, "unlocking the pseudo-terminal");
        if (ptsname_r(t->master, t->name, sizeof(t->name)) != 0)
                return sbx_error_set(err, errno, "naming the pseudo-terminal");
        _cleanup_close_ int slave = open_slave(t->master, t->name);
        if (slave < 0)
                return sbx_error_set(err, errno, "opening the pseudo-terminal's slave side");
        /* Above 0, 1 and 2, which the command's process replaces by it. */
        t->slave = fcntl(slave, F_DUPFD_CLOEXEC, 3);
        if (t->slave < 0)
                return sbx_error_set(err, errno, "pseudo-terminal");
        if (fcntl(t->master, F_SETFL, O_NONBLOCK) < 0)
                return sbx_error_set(err, errno, "pseudo-terminal");

        /* The job's terminal starts like the caller's: same modes (erase
         * and interrupt characters, UTF-8), same size. */
        t->in_is_tty = isatty(t->in_fd);
        if (t->in_is_tty && tcgetattr(t->in_fd, &modes) == 0)
                (void) tcsetattr(t->slave, TCSANOW, &modes);
        if (ioctl(t->in_fd, TIOCGWINSZ, &ws) == 0 || ioctl(t->out_fd, TIOCGWINSZ, &ws) == 0)
                (void) ioctl(t->master, TIOCSWINSZ, &ws);
        t->stderr_too = isatty(STDERR_FILENO);
        t->in_open = t->master_open = true;
        return 0;
}

int pty_attach(const struct pty *t, struct sbx_error *err) {
        if (ioctl(t->slave, TIOCSCTTY, 0) < 0)
                return sbx_error_set(err, errno, "making the pseudo-terminal the controlling terminal");
        if (dup2(t->slave, STDIN_FILENO) < 0 || dup2(t->slave, STDOUT_FILENO) < 0 ||
            (t->stderr_too && dup2(t->slave, STDERR_FILENO) < 0))
                return sbx_error_set(err, errno, "pseudo-terminal as standard streams");
        close(t->slave);
        return 0;
}

int pty_start(struct pty *t, struct sbx_error *err) {
        struct termios raw;

        closep(&t->slave);
        if (!t->in_is_tty)
                return 0;
        if (tcgetattr(t->in_fd, &t->saved) < 0)
                return sbx_error_set(err, errno, "reading the terminal's modes");
        raw = t->saved;
        cfmakeraw(&raw);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        t->owner = getpid();
        t->raw = true;
        /* TCSADRAIN, not TCSAFLUSH: keep what the user typed ahead. */
        if (tcsetattr(t->in_fd, TCSADRAIN, &raw) < 0) {
                t->raw = false;
                return sbx_error_set(err, errno, "putting the terminal in raw mode");
        }
        return 0;
}

/* Without a pty the command holds the caller's terminal on its standard
 * streams, and what it sets there (stty raw -echo) would outlive it: the
 * review of issue 9 was left at a raw terminal. The modes are saved
 * before the sandbox starts and put back when it ends, like a shell does
 * around a foreground job. One terminal is saved: the first of 0, 1, 2. */
void pty_save_caller(struct pty *t) {
        for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
                if (tcgetattr(fd, &t->saved) == 0) {
                        t->in_fd = fd;
                        t->owner = getpid();
                        t->direct = t->raw = true;
                        return;
                }
}

void pty_restore(struct pty *t) {
        /* pid 1 is a copy of the launcher: only the launcher restores. */
        if (!t->raw || getpid() != t->owner)
                return;
        t->raw = false;
        /* A launcher in the background leaves the terminal to the shell
         * that holds the foreground (and a write would stop us with
         * SIGTTOU); a terminal that is not ours to control is restored. */
        int when = TCSADRAIN;
        if (t->direct) {
                pid_t fg = tcgetpgrp(t->in_fd);
                if (fg >= 0 && fg != getpgrp())
                        return;
                /* The job may have suspended output (tcflow TCOOFF): a
                 * drain would then wait for ever. */
                (void) tcflow(t->in_fd, TCOON);
                when = TCSANOW;
        }
        while (tcsetattr(t->in_fd, when, &t->saved) < 0 && errno == EINTR)
                ;
}

void pty_resize(struct pty *t) {
        struct winsize ws;
        if (t->master >= 0 && (ioctl(t->in_fd, TIOCGWINSZ, &ws) == 0 || ioctl(t->out_fd, TIOCGWINSZ, &ws) == 0))
                (void) ioctl(t->master, TIOCSWINSZ, &ws);
}

size_t pty_poll_set(const struct pty *t, struct pollfd *pfd) {
        if (t->master < 0)
                return 0;
        pfd[PTY_POLL_IN] = (struct pollfd) {
                .fd = t->in_open && t->to_master.len == 0 ? t->in_fd : -1, .events = POLLIN,
        };
        pfd[PTY_POLL_MASTER] = (struct pollfd) {
                .fd = t->master_open ? t->master : -1,
                .events = (short) ((t->to_caller.len == 0 ? POLLIN : 0) | (t->to_master.len ? POLLOUT : 0)),
        };
        pfd[PTY_POLL_OUT] = (struct pollfd) { .fd = t->to_caller.len ? t->out_fd : -1, .events = POLLOUT };
        return PTY_POLL_COUNT;
}

/* Input ended: a job reading its terminal in canonical mode is told so
 * with the EOF character, as a user would with ^D. */
static void input_ended(struct pty *t) {
        struct termios m;
        t->in_open = false;
        if (tcgetattr(t->master, &m) == 0 && (m.c_lflag & ICANON) && t->to_master.len == 0) {
                t->to_master.data[0] = (char) m.c_cc[VEOF];
                t->to_master.len = 1;
                t->to_master.off = 0;
        }
}

static void read_into(int fd, struct pty_buf *b, bool *open) {
        ssize_t n = read(fd, b->data, sizeof(b->data));
        if (n > 0) {
                b->len = (size_t) n;
                b->off = 0;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                /* EIO on the master: every copy of the slave is closed. */
                *open = false;
        }
}

/* Returns false when the other side can take no more (then the rest of
 * the buffer is dropped: a caller that closed its output loses it). */
static bool write_from(int fd, struct pty_buf *b) {
        ssize_t n = write(fd, b->data + b->off, b->len - b->off);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return true;
        if (n <= 0) {
                b->len = b->off = 0;
                return false;
        }
        b->off += (size_t) n;
        if (b->off == b->len)
                b->len = b->off = 0;
        return true;
}

void pty_pump(struct pty *t, const struct pollfd *pfd) {
        if (t->master < 0)
                return;
        if (pfd[PTY_POLL_IN].revents) {
                bool was_open = t->in_open;
                read_into(t->in_fd, &t->to_master, &t->in_open);
                if (was_open && !t->in_open)
                        input_ended(t);
        }
        if (pfd[PTY_POLL_MASTER].revents & POLLOUT)
                write_from(t->master, &t->to_master);
        if ((pfd[PTY_POLL_MASTER].revents & (POLLIN | POLLHUP | POLLERR)) && t->to_caller.len == 0)
                read_into(t->master, &t->to_caller, &t->master_open);
        if (pfd[PTY_POLL_OUT].revents)
                write_from(t->out_fd, &t->to_caller);
}

void pty_finish(struct pty *t) {
        if (t->master < 0) {
                pty_restore(t);
                return;
        }
        /* The sandbox is gone: what the job wrote last is still in the
         * master's queue. The master is non-blocking; the caller's output
         * is written as it is (blocking). */
        while (t->to_caller.len && write_from(t->out_fd, &t->to_caller))
                ;
        while (t->master_open) {
                read_into(t->master, &t->to_caller, &t->master_open);
                if (!t->to_caller.len)
                        break;
                (void) fd_write_all(t->out_fd, t->to_caller.data + t->to_caller.off, t->to_caller.len - t->to_caller.off);
                t->to_caller.len = t->to_caller.off = 0;
        }
        pty_restore(t);
        closep(&t->master);
}
