/* SPDX-License-Identifier: Apache-2.0 */
/* What the service proxy (front/service.c) asks of a session: which ports
 * it exposes, its token, and a connection to one of them made by its
 * agent inside the sandbox (sbx-init(8), CONNECT). */
#include <errno.h>
#include <string.h>

#include "session-internal.h"
#include "session.h"

bool session_exposes(const struct session *s, uint16_t port) {
        for (unsigned i = 0; i < s->n_exposed; i++)
                if (s->exposed[i] == port)
                        return true;
        return false;
}

int session_expose(struct session *s, uint16_t port, const char **ret_token) {
        if (!session_exposes(s, port)) {
                if (s->n_exposed >= SESSION_PORTS_MAX)
                        return -E2BIG;
                s->exposed[s->n_exposed++] = port;
        }
        if (!s->token[0])
                session_random_hex(s->token, SESSION_TOKEN_LEN / 2);
        *ret_token = s->token;
        return 0;
}

int session_unexpose(struct session *s, uint16_t port) {
        for (unsigned i = 0; i < s->n_exposed; i++)
                if (s->exposed[i] == port) {
                        s->exposed[i] = s->exposed[--s->n_exposed];
                        return 0;
                }
        return -ENOENT;
}

struct session *session_by_id(struct sessions *ss, const char *id) {
        for (struct list *p = ss->live.next; p != &ss->live; p = p->next) {
                struct session *s = list_entry(p, struct session, link);
                if (streq(s->id, id))
                        return s->state == S_READY ? s : NULL;
        }
        return NULL;
}

const char *session_token(const struct session *s) {
        return s->token;
}

const char *session_id(const struct session *s) {
        return s->id;
}

const struct tenant *session_tenant(const struct session *s) {
        return s->tenant;
}

int session_connect_port(struct session *s, uint16_t port, int *ret_fd) {
        struct sbx_init_connect m = { .port = port, .family = 4 };
        int r = agent_call(s, SBX_INIT_CONNECT, &m, sizeof(m));
        if (r < 0)
                return r;
        if (msg_call.hdr.error)
                return -(int) msg_call.hdr.error;
        *ret_fd = msg_call.fds[0];
        msg_call.fds[0] = -1;
        msg_call.n_fds = 0;
        return 0;
}
