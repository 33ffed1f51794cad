/* SPDX-License-Identifier: Apache-2.0 */
/* The contract between sbx-init(8), the agent that runs as a session's
 * command inside its sandbox, and the daemon's client of it (lib/initc.h).
 *
 * One SOCK_SEQPACKET socket, inherited by sbx-init; every message is one
 * datagram: a fixed header, then exactly hdr.len bytes of payload, at most
 * SBX_INIT_MSG_MAX in all. Integers are in the host's byte order (both
 * ends run on the same machine). Strings in payloads end with a NUL byte
 * and must use up the payload exactly. A reply has the request's type with
 * SBX_INIT_REPLY set and the request's id; a reply with error != 0 has no
 * payload and no descriptor. Events (SBX_INIT_EVENT set) have id 0.
 *
 * Each side treats what the other sends as hostile: the agent runs as the
 * sandbox's uid beside the processes it starts, which can stop, kill or
 * flood it. sbx-init(8) documents the same in prose. */
#pragma once

#include <stdint.h>

#define SBX_INIT_VERSION 1

/* The largest datagram either side sends or accepts. */
#define SBX_INIT_MSG_MAX 65536
/* Bounds on what one SPAWN carries and on the agent's state. */
#define SBX_INIT_ARGV_MAX 1024      /* argument strings */
#define SBX_INIT_ENV_MAX 256        /* environment additions */
#define SBX_INIT_PATH_MAX 4096      /* a path, its NUL included */
#define SBX_INIT_NAME_MAX 255       /* one path component */
#define SBX_INIT_PROCS_MAX 256      /* processes started and not yet ended */
#define SBX_INIT_FDS_MAX 3          /* descriptors in one reply */

struct sbx_init_hdr {
        uint32_t type;
        uint32_t id;     /* chosen by the requester, echoed in the reply */
        uint32_t len;    /* payload bytes after the header */
        int32_t error;   /* replies: 0 or a positive errno; requests: 0 */
};

#define SBX_INIT_REPLY 0x10000u
#define SBX_INIT_EVENT 0x20000u

enum sbx_init_type {
        SBX_INIT_SPAWN = 1,
        SBX_INIT_SIGNAL = 2,
        SBX_INIT_OPEN = 3,
        SBX_INIT_LIST = 4,
        SBX_INIT_STAT = 5,
        SBX_INIT_REMOVE = 6,
        SBX_INIT_MKDIR = 7,
        SBX_INIT_CONNECT = 8,
        /* A reply to a datagram whose header could not be read (shorter
         * than the header): id 0, error EBADMSG. */
        SBX_INIT_BAD = SBX_INIT_REPLY | 0xffffu,
        /* Sent once, first, when the agent is ready. */
        SBX_INIT_EV_READY = SBX_INIT_EVENT | 1,
        /* A process started by SPAWN ended (and was reaped). */
        SBX_INIT_EV_EXIT = SBX_INIT_EVENT | 2,
};

/* ---- SPAWN ------------------------------------------------------------------
 * Payload: struct sbx_init_spawn, then argc + envc + 1 strings: the working
 * directory (relative to the workspace, "." for itself), argv[0..argc-1],
 * then envc "NAME=VALUE" added to (or replacing in) the agent's own
 * environment. argv[0] is looked up in the agent's PATH.
 * Reply: struct sbx_init_spawned and SBX_INIT_FDS_MAX descriptors, in this
 * order: the command's stdin (a pipe's write end, or with
 * SBX_INIT_SPAWN_PTY the master of a pseudo-terminal that is its stdin and
 * controlling terminal), its stdout's read end, its stderr's read end.
 * SBX_INIT_SPAWN_TTY: stdin, stdout and stderr are all one pseudo-terminal
 * (its controlling terminal, 24 rows of 80 columns): the descriptors are
 * its master (to write the terminal's input), the master again (to read
 * everything the command writes, echo included; EIO once no process holds
 * the terminal) and the read end of a pipe that is at its end already.
 * SBX_INIT_SPAWN_WINSIZE (with SBX_INIT_SPAWN_TTY only): struct
 * sbx_init_winsize follows struct sbx_init_spawn, the terminal's size in
 * place of 24 rows of 80 columns. */
#define SBX_INIT_SPAWN_PTY 0x1u
#define SBX_INIT_SPAWN_TTY 0x2u
#define SBX_INIT_SPAWN_WINSIZE 0x4u
struct sbx_init_spawn {
        uint32_t flags;
        uint16_t argc;    /* 1 .. SBX_INIT_ARGV_MAX */
        uint16_t envc;    /* 0 .. SBX_INIT_ENV_MAX */
};

#define SBX_INIT_WINSIZE_MAX 1000
struct sbx_init_winsize {
        uint16_t rows;    /* 1 .. SBX_INIT_WINSIZE_MAX */
        uint16_t cols;    /* 1 .. SBX_INIT_WINSIZE_MAX */
};

struct sbx_init_spawned {
        uint32_t handle;  /* never reused within one agent's life */
        int32_t pid;      /* in the sandbox's pid namespace */
};

/* ---- SIGNAL -----------------------------------------------------------------
 * Reply: no payload. ESRCH for a handle that is not running (ended, never
 * given). SBX_INIT_SIGNAL_GROUP signals the process group the command leads
 * (every command starts in a session of its own). */
#define SBX_INIT_SIGNAL_GROUP 0x1u
struct sbx_init_signal {
        uint32_t handle;
        int32_t signo;
        uint32_t flags;
};

/* ---- OPEN, LIST, STAT, REMOVE, MKDIR ----------------------------------------
 * Payload: struct sbx_init_path, then the path, relative to the workspace,
 * with NUL. Components are separated by one "/"; none may be empty, "." or
 * "..", and none is followed if it is a symbolic link. "." alone names the
 * workspace itself (LIST and STAT only).
 *
 * OPEN   arg: SBX_INIT_OPEN_READ (a regular file only),
 *        SBX_INIT_OPEN_WRITE (created with mode arg2 & 0777, or truncated;
 *        a regular file only) or SBX_INIT_OPEN_MORE (an existing regular
 *        file, for writing, neither created nor truncated: the next piece
 *        of an upload). Reply: struct sbx_init_stat, one descriptor.
 * LIST   arg: entries to skip. Reply: struct sbx_init_list, then count
 *        entries, each one byte of type (DT_*) and a name with NUL.
 * STAT   Reply: struct sbx_init_stat (the entry itself, not a link's target).
 * REMOVE a file, link or empty directory. Reply: no payload.
 * MKDIR  mode arg2 & 0777. Reply: no payload. */
#define SBX_INIT_OPEN_READ 1u
#define SBX_INIT_OPEN_WRITE 2u
#define SBX_INIT_OPEN_MORE 3u
struct sbx_init_path {
        uint32_t arg;
        uint32_t arg2;
};

struct sbx_init_stat {
        uint32_t mode;    /* st_mode: type and permission bits */
        uint32_t nlink;
        uint64_t size;
        int64_t mtime_sec;
        uint32_t mtime_nsec;
        uint32_t reserved;
};

#define SBX_INIT_LIST_MORE 0x1u  /* entries left: ask again, skipping more */
struct sbx_init_list {
        uint32_t count;
        uint32_t flags;
};

/* ---- CONNECT ----------------------------------------------------------------
 * A TCP connection to port on the sandbox's loopback (127.0.0.1 for family
 * 4, ::1 for 6), started and not waited for. Reply: no payload, the socket
 * (its connect may still be in progress: writable, then SO_ERROR, says how
 * it went). */
struct sbx_init_connect {
        uint16_t port;
        uint16_t family;   /* 4 or 6 */
        uint32_t reserved; /* 0 */
};

/* ---- events ----------------------------------------------------------------
 * With --listen-fd, the agent outlives a connection: when it ends, the
 * agent keeps its processes, holds their EXIT events (one per process, so
 * at most SBX_INIT_PROCS_MAX) and accepts the next connection on the
 * listening socket, to which it sends READY again, then the held events. */
struct sbx_init_ready {
        uint32_t version;  /* SBX_INIT_VERSION */
        int32_t pid;       /* the agent's, in the sandbox's pid namespace */
        uint32_t procs_max;
        uint32_t msg_max;
        uint32_t connection; /* 1 for the first; more after reconnections (--listen-fd) */
        uint32_t running;    /* processes started by SPAWN not yet ended */
        uint32_t ended;      /* EXIT events held while no one was connected, sent right after */
        uint32_t reserved;
};

struct sbx_init_exit {
        uint32_t handle;
        int32_t pid;
        int32_t status;    /* as wait(2) gives it */
        uint32_t reserved;
        uint64_t utime_us;
        uint64_t stime_us;
        uint64_t maxrss_kb;
        uint64_t minflt;
        uint64_t majflt;
        uint64_t nvcsw;
        uint64_t nivcsw;
};
