/* SPDX-License-Identifier: Apache-2.0 */
/* The contract between sbx-launch and the programs that run it (above all
 * sbx-supervisord): exit statuses, the keys of the status record, the file
 * descriptors a supervisor hands the launcher, and the environment names
 * of the task context. Both sides include this header, so a key or a
 * number is spelled once. sbx-launch(1) documents every item (EXIT STATUS,
 * STATUS RECORD, SUPERVISOR PROTOCOL); a change here is a change of that
 * page and of the status record's stable schema. */
#pragma once

/* ---- exit status (sbx-launch(1), EXIT STATUS) ---------------------------- */

#define SBX_EXIT_TIMEOUT 124      /* the timeout expired; the whole job was killed */
#define SBX_EXIT_SETUP 125        /* sbx-launch failed: usage, profile or a setup step */
#define SBX_EXIT_NOEXEC 126       /* the command was found but could not be executed */
#define SBX_EXIT_NOTFOUND 127     /* the command was not found */
#define SBX_EXIT_SIGNAL_BASE 128  /* 128 + N: the command was killed by signal N */

#define SBX_EXIT_FOR_SIGNAL(sig) (SBX_EXIT_SIGNAL_BASE + (sig))

/* ---- the status record (--json-status-fd; sbx-launch(1), STATUS RECORD) -- */

/* The start line: {"child-pid": N}, N as seen from the launcher's pid
 * namespace. The --info-fd line uses the same key for pid 1. */
#define SBX_STATUS_CHILD_PID "child-pid"

/* The end line. */
#define SBX_STATUS_EXIT_CODE "exit-code"       /* integer: the launcher's exit status */
#define SBX_STATUS_SIGNAL "signal"             /* integer or null */
#define SBX_STATUS_TIMED_OUT "timed-out"       /* boolean */
#define SBX_STATUS_WALL_MS "wall-ms"           /* integer */
#define SBX_STATUS_CPU_MS "cpu-ms"             /* integer */
#define SBX_STATUS_PEAK_RSS_KB "peak-rss-kb"   /* integer */
/* integer or null: with a memory rlimit, the largest peak address space
 * (VmPeak, kB) pid 1 saw among the command's processes while they lived;
 * sampled, so at most the true peak. null: not watched, or not seen. */
#define SBX_STATUS_PEAK_VM_KB "peak-vm-kb"
#define SBX_STATUS_LIMITS "limits"             /* object: [limits] key -> SBX_LIMIT_* object */
#define SBX_STATUS_PROTECTIONS "protections"   /* object of SBX_PROT_* keys */

/* Members of "limits": one object per [limits] key of sbx-profile(5)
 * ("timeout", "cpu", "memory", "data", "processes", "file-size",
 * "open-files", "stack", "core"), saying how it was enforced. A limit is
 * never reported enforced when it is not. */
#define SBX_LIMIT_VALUE "value"     /* integer in the key's unit (ms, s, bytes, count), or null */
#define SBX_LIMIT_BY "by"           /* one of SBX_LIMIT_BY_* */
#define SBX_LIMIT_PER "per"         /* with "rlimit": "process", "sandbox" or "file" */
#define SBX_LIMIT_COVERS "covers"   /* memory with "rlimit": array of SBX_COVERS_* */
#define SBX_LIMIT_BY_RLIMIT "rlimit"      /* setrlimit(2) in the command's process */
#define SBX_LIMIT_BY_LAUNCHER "launcher"  /* the timeout: sbx-launch's own clock */
#define SBX_LIMIT_BY_NONE "none"          /* nothing enforces it */
/* What a memory limit kept by rlimits bounds, besides nothing else. */
#define SBX_COVERS_ADDRESS_SPACE "address-space" /* each process's mappings (RLIMIT_AS) */
#define SBX_COVERS_MEMFD "memfd"                 /* memfd_create refused by the filter */
#define SBX_COVERS_SYSV_SHM "sysv-shm"           /* SysV shared memory capped at the limit */
#define SBX_COVERS_TMPFS "tmpfs"                 /* every tmpfs of the sandbox has a size */

/* Members of "protections": what was really applied. */
#define SBX_PROT_NO_NEW_PRIVS "no-new-privs"                     /* boolean */
#define SBX_PROT_SECCOMP "seccomp"                               /* "default", "strict", "none" or null */
#define SBX_PROT_LANDLOCK_ABI "landlock-abi"                     /* integer, 0: not applied */
#define SBX_PROT_LANDLOCK_FS "landlock-fs"                       /* boolean */
#define SBX_PROT_LANDLOCK_NET "landlock-net"                     /* boolean */
#define SBX_PROT_LANDLOCK_SCOPED "landlock-scoped"               /* boolean */
#define SBX_PROT_CAPS_DROPPED "caps-dropped"                     /* boolean */
#define SBX_PROT_NESTED_USERNS_BLOCKED "nested-userns-blocked"   /* boolean */
#define SBX_PROT_PROC_MASKED "proc-masked"                       /* boolean */
#define SBX_PROT_OPENAT2 "openat2"                               /* boolean */
#define SBX_PROT_SETID_REFUSED "setid-refused"                   /* boolean */
#define SBX_PROT_MEMFD_REFUSED "memfd-refused"                   /* boolean */

/* The line of a launcher that failed before the command started:
 * {"exit-code": 125, "error": {"step": S, "message": M}}. */
#define SBX_STATUS_ERROR "error"
#define SBX_STATUS_ERROR_STEP "step"
#define SBX_STATUS_ERROR_MESSAGE "message"

/* Every string in the record is valid UTF-8: bytes of the launcher's
 * input that are not (a path, a command, a message) are written as U+FFFD,
 * one per byte (lib/json-string.h), so that every line parses. */

/* The --info-fd record: {"child-pid": N, "namespaces": {"user": INODE, ...}}. */
#define SBX_INFO_NAMESPACES "namespaces"

/* ---- what a supervisor hands the launcher ---------------------------------- */

/* sbx-supervisord starts the launcher with the job's stdin, stdout and
 * stderr on 0, 1 and 2, the write end of the status pipe here... */
#define SBX_LAUNCH_FD_STATUS 3
#define SBX_LAUNCH_FD_STATUS_ARG "3"
/* ...and the generated profile (a sealed memfd) here, loaded last with
 * --profile SBX_LAUNCH_PROFILE_FD_PATH so that it overrides the named one. */
#define SBX_LAUNCH_FD_PROFILE 4
#define SBX_LAUNCH_PROFILE_FD_PATH "/dev/fd/4"
/* ...and for a job whose network namespace it sets up (restricted), the
 * --info-fd and --block-fd pipes here. */
#define SBX_LAUNCH_FD_INFO 5
#define SBX_LAUNCH_FD_INFO_ARG "5"
#define SBX_LAUNCH_FD_BLOCK 6
#define SBX_LAUNCH_FD_BLOCK_ARG "6"

/* ...and for a bundle job, its tree: a detached mount (open_tree(2) with
 * OPEN_TREE_CLONE, read-only) that the generated profile names as the
 * source of /bundle (fd:7, sbx-profile(5)), so that the job never needs
 * to reach the cache by its path on the host. */
#define SBX_LAUNCH_FD_BUNDLE 7
#define SBX_LAUNCH_BUNDLE_SOURCE "fd:7"

/* ...and for a session's sandbox, the listening socket of its agent,
 * passed on to sbx-init (--pass-fd 8, sbx-init --listen-fd 8). */
#define SBX_LAUNCH_FD_SESSION 8
#define SBX_LAUNCH_FD_SESSION_ARG "8"

/* ---- environment ----------------------------------------------------------- */

/* Read by sbx-launch: where profiles given by name are looked for. */
#define SBX_ENV_PROFILE_PATH "SBX_PROFILE_PATH"

/* The task context a supervisor sets in the job's environment. Requests
 * may not set names with the reserved prefix. */
#define SBX_ENV_JOB_ID "SBX_JOB_ID"
#define SBX_ENV_TENANT "SBX_TENANT"
#define SBX_ENV_WORKSPACE "SBX_WORKSPACE"
/* The file a job may write its structured result to (sbx-supervisord). */
#define SBX_ENV_RESULT "SBX_RESULT"
/* A bundle job's: its bundle's name and version, and where its tree is
 * (/bundle). */
#define SBX_ENV_BUNDLE "SBX_BUNDLE"
#define SBX_ENV_BUNDLE_VERSION "SBX_BUNDLE_VERSION"
#define SBX_ENV_BUNDLE_DIR "SBX_BUNDLE_DIR"
/* A job with header secrets: the CA of the daemon's proxy for their hosts
 * (PEM), which $SSL_CERT_DIR and $NODE_EXTRA_CA_CERTS name too. */
#define SBX_ENV_PROXY_CA "SBX_PROXY_CA"
#define SBX_ENV_RESERVED_PREFIX "SBX_"
/* W3C trace context: the job's own traceparent (its span in its trace). */
#define SBX_ENV_TRACEPARENT "TRACEPARENT"
