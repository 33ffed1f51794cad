/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's side of sbx-init(8)'s socket (lib/init-abi.h). The agent
 * runs inside a sandbox, beside processes that can stop, kill or replace
 * what it says, so every datagram is read as hostile input: its size,
 * type, id, fields and descriptors are checked before a caller sees it,
 * and every wait has a deadline. A negative return from these functions
 * means the connection can no longer be trusted: the caller ends the
 * session. Each returns 0 or a negative errno and never prints. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "init-abi.h"

struct initc {
        int fd;            /* O_NONBLOCK from initc_init on */
        uint32_t next_id;
};

/* One message as received and checked. Reply descriptors are O_CLOEXEC
 * and O_NONBLOCK; the owner closes them (initc_msg_clear) or takes them. */
struct initc_msg {
        struct sbx_init_hdr hdr;
        size_t len;
        int fds[SBX_INIT_FDS_MAX];
        unsigned n_fds;
        char payload[SBX_INIT_MSG_MAX];
};

int initc_init(struct initc *c, int fd);
void initc_msg_clear(struct initc_msg *m);

/* Payloads. ret_len: the payload's size. -E2BIG when it does not fit in
 * size or breaks a bound of init-abi.h. */
/* ws: the terminal's size (SBX_INIT_SPAWN_WINSIZE), or NULL. */
int initc_encode_spawn(void *buf, size_t size, uint32_t flags, const struct sbx_init_winsize *ws, const char *cwd,
                       const char *const *argv, const char *const *env, size_t *ret_len);
int initc_encode_path(void *buf, size_t size, uint32_t arg, uint32_t arg2, const char *path, size_t *ret_len);

/* Send one request within timeout_ms; its id in ret_id. */
int initc_send(struct initc *c, uint32_t type, const void *payload, size_t len, int timeout_ms, uint32_t *ret_id);
/* Receive and check one message within timeout_ms: -ETIMEDOUT, -EPIPE when
 * the agent's end is closed, -EPROTO for anything malformed. */
int initc_recv(struct initc *c, struct initc_msg *m, int timeout_ms);

/* Send a request and wait for its reply (m). Events that arrive meanwhile
 * go to on_event, which owns their descriptors (none today); without one
 * they are dropped. The reply's hdr.error is the agent's answer. */
typedef void (*initc_event_fn)(const struct initc_msg *ev, void *userdata);
int initc_call(struct initc *c, uint32_t type, const void *payload, size_t len, int timeout_ms,
               struct initc_msg *m, initc_event_fn on_event, void *userdata);

/* A checked LIST reply's entries, one at a time: *pos starts at 0; false
 * after the last. */
bool initc_list_next(const struct initc_msg *m, size_t *pos, uint8_t *ret_type, const char **ret_name);
