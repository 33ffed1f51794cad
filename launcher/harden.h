/* SPDX-License-Identifier: Apache-2.0 */
/* The launcher's hardening steps (seccomp, capabilities, Landlock, /proc
 * masking, nested user namespaces) and the record of what was really
 * applied. The core launcher calls these at fixed points; each returns 0 or
 * a negative errno with err filled, and records in struct protections what
 * it did, so the status record never claims more than was enforced. */
#pragma once

#include "error.h"
#include "profile.h"

#include "protections.h"

/* Called by the root filesystem setup right after a procfs is mounted at
 * proc_dirfd (an O_PATH|O_DIRECTORY fd of the new mount), in pid 1, in the
 * sandbox's user namespace with its capabilities: opens that namespace's
 * max_user_namespaces for harden_sandbox (see harden.c), masks the
 * sensitive entries and makes the kernel-tunable trees read-only. */
int harden_proc(int proc_dirfd, struct protections *prot, struct sbx_error *err);

/* Called in pid 1 of the sandbox, after the root filesystem and network are
 * set up and before the command's process is forked: the last chance to act
 * with the user namespace's full capabilities. Locks out nested user
 * namespaces (max_user_namespaces = 0; when the profile keeps capabilities,
 * pid 1 instead moves into one more user namespace mapping its own uid/gid,
 * so that it holds no capability over the sandbox's mount/net/pid
 * namespaces afterwards; see harden.c) and makes pid 1 non-dumpable. */
int harden_sandbox(const struct profile *p, struct protections *prot, struct sbx_error *err);

/* Called in the command's process immediately before execve(), after
 * rlimits, environment and working directory are set: no_new_privs,
 * Landlock, capability drop, fd census (and cwd check) and seccomp, in that order.
 * keep_fds (n_keep_fds entries, may be 0) are fds beyond 0,1,2 that must
 * survive exec; every other fd >= 3 is marked close-on-exec (not closed:
 * the report socket must live until execve succeeds). After this
 * returns 0 only execve() may follow: the syscall filter is loaded. */
int harden_exec(const struct profile *p, const int *keep_fds, size_t n_keep_fds,
                struct protections *prot, struct sbx_error *err);
