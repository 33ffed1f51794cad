/* SPDX-License-Identifier: Apache-2.0 */
/* Internal interfaces of sbx-launch, one section per module. The launcher is
 * one short process tree:
 *
 *   launcher (outside) ──clone(new namespaces)──► pid 1 (sets up, then reaps)
 *                                                   └─clone(CLONE_VM|CLONE_VFORK)──► the command
 *
 * The launcher waits on a pidfd of pid 1 with the timeout, forwards signals
 * and writes the status record. pid 1 builds the sandbox and reports setup
 * errors over a SOCK_SEQPACKET socket; the command's process sends its
 * applied protections over the same socket just before execve (the socket is
 * close-on-exec, so end-of-file there means exec succeeded). */
#pragma once

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <termios.h>

#include "error.h"
#include "harden.h"
#include "launch-abi.h"
#include "profile.h"

#define LAUNCH_MAX_PASS_FDS 64

/* limits.c: the [limits] keys that are rlimits. */
enum limit_id {
        LIMIT_CPU, LIMIT_MEMORY, LIMIT_DATA, LIMIT_PROCESSES, LIMIT_FILE_SIZE,
        LIMIT_OPEN_FILES, LIMIT_STACK, LIMIT_CORE, LIMIT_COUNT,
};
/* A limit read back as infinite (or unreadable): nothing enforced. */
#define LIMIT_NONE UINT64_MAX

/* pty.c: the job's terminal (sandbox.pty), relayed to the caller's. */
struct pty_buf {
        char data[4096];
        size_t len, off;
};

struct pty {
        int master;                /* -1: no pty */
        int slave;                 /* for the command; the launcher's copy closes at the start */
        char name[32];             /* the slave's path, /dev/pts/N, as the launcher saw it */
        int in_fd, out_fd;         /* the caller's: 0 and 1 */
        bool in_is_tty;
        bool stderr_too;           /* the command's stderr is the pty too */
        bool in_open, master_open;
        bool raw;                  /* the caller's modes, saved, are to be put back on in_fd */
        bool direct;               /* no pty: the command holds the caller's terminal itself */
        pid_t owner;               /* the launcher, which alone restores them */
        struct termios saved;
        struct pty_buf to_master, to_caller;
};

/* The relay's slots in the launcher's poll set. */
enum { PTY_POLL_IN, PTY_POLL_MASTER, PTY_POLL_OUT, PTY_POLL_COUNT };

void pty_init(struct pty *t);
/* Whether this run gets a pty: yes, no, or (auto) when stdin and stdout
 * are terminals and the launcher is in the foreground. */
bool pty_wanted(const struct profile *p);
/* Before clone: the pair, with the caller's modes and window size. */
int pty_open(struct pty *t, struct sbx_error *err);
/* In the command's process, in its new session: the controlling terminal
 * and the standard streams. */
int pty_attach(const struct pty *t, struct sbx_error *err);
/* In the launcher after clone: the caller's terminal goes raw. */
int pty_start(struct pty *t, struct sbx_error *err);
/* Fill the PTY_POLL_COUNT slots (0 returned without a pty), then act. */
size_t pty_poll_set(const struct pty *t, struct pollfd *pfd);
void pty_pump(struct pty *t, const struct pollfd *pfd);
/* SIGWINCH: the caller's window size to the job's terminal. */
void pty_resize(struct pty *t);
/* After the sandbox ended: the job's last output, then pty_restore(). */
void pty_finish(struct pty *t);
/* Put the caller's terminal modes back (any exit path of the launcher). */
void pty_restore(struct pty *t);
/* Without a pty: save the modes of the caller's terminal among 0, 1 and 2,
 * which the command can change (stty raw), for pty_restore. */
void pty_save_caller(struct pty *t);

struct launch {
        struct profile profile;
        char **argv;               /* the command and its arguments */

        int status_fd;             /* --json-status-fd, -1 if not given */
        int info_fd;               /* --info-fd */
        int block_fd;              /* --block-fd */
        int sync_fd;               /* --sync-fd */
        int pass_fds[LAUNCH_MAX_PASS_FDS];
        size_t n_pass_fds;

        bool print_profile;
        bool check;
        struct pty pty;

        /* Set up by main before clone. */
        uid_t outer_uid;
        gid_t outer_gid;
        int report_fd;             /* the sandbox's end of the report socket */
        int exit_fd;               /* pid 1 writes the command's wait status here */
};

/* Messages from inside the sandbox to the launcher (report socket). */
enum report_type {
        REPORT_ERROR = 1,          /* setup failed: step + message */
        REPORT_READY,              /* the command's process is about to execve */
        REPORT_EXEC_FAILED,        /* execve failed: step + message */
};

/* Longest step name in a report, NUL included. */
#define STATUS_STEP_MAX 32

struct report {
        int type;
        char step[STATUS_STEP_MAX];
        char msg[SBX_ERROR_MAX];
        struct protections prot;
        uint64_t limits[LIMIT_COUNT];   /* REPORT_READY: limits_read_back() */
};

/* cli.c: parse argv into l (profiles loaded, options applied through
 * profile_set, profile validated). Prints errors and exits 125 itself, or 0
 * for --help/--version. */
void cli_parse(struct launch *l, int argc, char **argv);

/* main.c: fatal error in the launcher itself; also written to the status
 * fd once it is known. */
extern int launch_status_fd;
extern struct launch *launch_current;
/* --check-host (hostcheck.c): prints one line per requirement; answers the
 * number of required ones not met, or -errno if the report could not be
 * written. */
int hostcheck_run(FILE *out);

_noreturn_ void die(const char *step, const char *fmt, ...) _printf_(2, 3);
_noreturn_ void die_error(const char *step, const struct sbx_error *err);

/* ns.c */
unsigned long ns_clone_flags(const struct profile *p);
/* Write setgroups=deny, uid_map and gid_map of the calling process (which
 * must be in a fresh user namespace) after checking that /proc is procfs. */
int ns_write_maps(uid_t inner_uid, uid_t outer_uid, gid_t inner_gid, gid_t outer_gid,
                  struct sbx_error *err);
/* Write the --info-fd record: pid 1's pid and its namespace inode numbers. */
int ns_write_info(int fd, pid_t pid);

/* rootfs.c: build the new root from p->fs and pivot into it; the job's
 * terminal (console; NULL or no slave: none) is given a name in each
 * minimal /dev. Returns 0 or a negative errno with step and err filled. */
int rootfs_setup(const struct profile *p, const struct pty *console, struct protections *prot,
                 const char **ret_step, struct sbx_error *err);
/* The working directory for the command (last chdir op, else "/"). */
const char *rootfs_chdir(const struct profile *p);

/* net.c: bring the loopback interface up in the current net namespace. */
int net_loopback_up(struct sbx_error *err);

/* limits.c */
/* Apply p->limits as rlimits to the calling process. */
int limits_apply(const struct profile *p, struct sbx_error *err);
/* The soft limits the calling process now has, LIMIT_NONE for infinity. */
void limits_read_back(uint64_t ret_cur[LIMIT_COUNT]);
/* The profile key of a limit ("file-size"), and what it counts per:
 * "process", "sandbox" or "file" (sbx-launch(1), STATUS RECORD). */
const char *limits_key(enum limit_id id);
const char *limits_per(enum limit_id id);

/* env.c: build the command's environment from the caller's (envp) and the
 * profile. Returns a NULL-terminated malloc'd array or NULL with err set. */
char **env_build(const struct profile *p, char **caller_env, struct sbx_error *err);

/* sandbox.c: runs in the cloned child; never returns. */
_noreturn_ void sandbox_main(struct launch *l);

/* init.c: the signals the launcher passes to pid 1 and pid 1 to the
 * command, added to set. */
void init_add_forwarded(sigset_t *set);
/* pid 1's loop once the command runs; never returns. */
/* What pid 1 writes to exit_fd when the command has ended. */
struct init_exit {
        int status;                /* the command's wait status */
        uint64_t peak_vm_kb;       /* the largest VmPeak pid 1 saw among the command's processes, 0: none seen */
};
/* watch_vm: sample the processes' peak address space (a memory rlimit
 * holds them) for the status record. */
_noreturn_ void init_run(pid_t command, int exit_fd, bool own_pid_ns, bool watch_vm);

/* status.c: JSON lines on --json-status-fd. */
struct run_result {
        int exit_code;             /* what sbx-launch exits with */
        int signal;                /* signal that killed the command, 0 if none */
        bool timed_out;
        uint64_t wall_ms;
        uint64_t cpu_ms;
        uint64_t peak_rss_kb;
        uint64_t peak_vm_kb;       /* from pid 1; 0: not watched or not seen */
        bool have_prot;
        struct protections prot;
        uint64_t limits[LIMIT_COUNT];   /* what the command's process had */
        uid_t outer_uid;                /* whose rlimits: see status.c */
};
/* The start line: the command's pid and the protections the sandbox has. */
void status_start(int fd, pid_t command_pid, const struct profile *p, const struct protections *pr);
void status_end(int fd, const struct profile *p, const struct run_result *r);
void status_error(int fd, const char *step, const char *message);
