/* SPDX-License-Identifier: Apache-2.0 */
/* Internal interfaces of sbx-launch, one section per module. The launcher is
 * one short process tree:
 *
 *   launcher (outside) ──clone(new namespaces)──► pid 1 (sets up, then reaps)
 *                                                   └─fork──► the command
 *
 * The launcher waits on a pidfd of pid 1 with the timeout, forwards signals
 * and writes the status record. pid 1 builds the sandbox and reports setup
 * errors over a SOCK_SEQPACKET socket; the command's process sends its
 * applied protections over the same socket just before execve (the socket is
 * close-on-exec, so end-of-file there means exec succeeded). */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "harden.h"
#include "launch-abi.h"
#include "profile.h"

#define LAUNCH_MAX_PASS_FDS 64

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
};

/* cli.c: parse argv into l (profiles loaded, options applied through
 * profile_set, profile validated). Prints errors and exits 125 itself, or 0
 * for --help/--version. */
void cli_parse(struct launch *l, int argc, char **argv);

/* main.c: fatal error in the launcher itself; also written to the status
 * fd once it is known. */
extern int launch_status_fd;
extern struct launch *launch_current;
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

/* rootfs.c: build the new root from p->fs and pivot into it. Returns 0 or a
 * negative errno with step and err filled. */
int rootfs_setup(const struct profile *p, struct protections *prot,
                 const char **ret_step, struct sbx_error *err);
/* The working directory for the command (last chdir op, else "/"). */
const char *rootfs_chdir(const struct profile *p);

/* net.c: bring the loopback interface up in the current net namespace. */
int net_loopback_up(struct sbx_error *err);

/* limits.c: apply p->limits as rlimits to the calling process. */
int limits_apply(const struct profile *p, struct sbx_error *err);

/* env.c: build the command's environment from the caller's (envp) and the
 * profile. Returns a NULL-terminated malloc'd array or NULL with err set. */
char **env_build(const struct profile *p, char **caller_env, struct sbx_error *err);

/* sandbox.c: runs in the cloned child; never returns. */
_noreturn_ void sandbox_main(struct launch *l);

/* init.c: the signals the launcher passes to pid 1 and pid 1 to the
 * command, added to set. */
void init_add_forwarded(sigset_t *set);
/* pid 1's loop once the command runs; never returns. */
_noreturn_ void init_run(pid_t command, int exit_fd, bool own_pid_ns);

/* status.c: JSON lines on --json-status-fd. */
struct run_result {
        int exit_code;             /* what sbx-launch exits with */
        int signal;                /* signal that killed the command, 0 if none */
        bool timed_out;
        uint64_t wall_ms;
        uint64_t cpu_ms;
        uint64_t peak_rss_kb;
        bool have_prot;
        struct protections prot;
};
void status_start(int fd, pid_t command_pid);
void status_end(int fd, const struct profile *p, const struct run_result *r);
void status_error(int fd, const char *step, const char *message);
