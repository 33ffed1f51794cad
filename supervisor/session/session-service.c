/* SPDX-License-Identifier: Apache-2.0 */
/* What the service proxy (front/service.c) asks of a session: which ports
 * it exposes, its token, and a connection to one of them made by its
 * agent inside the sandbox (sbx-init(8), CONNECT). */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "jobs.h"
#include "log.h"
#include "runner.h"
#include "session-internal.h"
#include "session.h"

/* What is exposed, into the box's start line (synced): a restarted daemon
 * exposes the same ports with the same token (session_restore_service). */
static int journal_service(struct session *s) {
        if (!s->box)
                return -ESHUTDOWN;
        json_t *ports = json_array();
        for (unsigned i = 0; ports && i < s->n_exposed; i++)
                json_array_append_new(ports, json_integer(s->exposed[i]));
        json_t *o = ports ? json_pack("{s:o, s:s}", "ports", ports, "token", s->token) : NULL;
        if (!o)
                return -ENOMEM;
        json_t *old = s->box->session_service;
        s->box->session_service = o;
        int r = runner_journal_start(s->box);
        if (r < 0) {
                s->box->session_service = old;
                json_decref(o);
                return r;
        }
        json_decref(old);
        return 0;
}

void session_restore_service(struct session *s) {
        json_t *svc = s->box ? s->box->session_service : NULL, *p;
        const char *token = json_string_value(json_object_get(svc, "token"));
        size_t i;
        if (!svc)
                return;
        if (!token || strlen(token) != SESSION_TOKEN_LEN) {
                log_warning("session %s: its journaled services are not usable: not exposed again", s->id);
                return;
        }
        json_array_foreach(json_object_get(svc, "ports"), i, p) {
                json_int_t port = json_integer_value(p);
                if (port > 0 && port <= 65535 && s->n_exposed < SESSION_PORTS_MAX && !session_exposes(s, (uint16_t) port))
                        s->exposed[s->n_exposed++] = (uint16_t) port;
        }
        memcpy(s->token, token, SESSION_TOKEN_LEN + 1);
}

bool session_exposes(const struct session *s, uint16_t port) {
        for (unsigned i = 0; i < s->n_exposed; i++)
                if (s->exposed[i] == port)
                        return true;
        return false;
}

int session_expose(struct session *s, uint16_t port, const char **ret_token) {
        bool added = false, new_token = false;
        if (!session_exposes(s, port)) {
                if (s->n_exposed >= SESSION_PORTS_MAX)
                        return -E2BIG;
                s->exposed[s->n_exposed++] = port;
                added = true;
        }
        if (!s->token[0]) {
                session_random_hex(s->token, SESSION_TOKEN_LEN / 2);
                new_token = true;
        }
        /* Durable before it is answered, or not done. */
        int r = added || new_token ? journal_service(s) : 0;
        if (r < 0) {
                if (added)
                        s->n_exposed--;
                if (new_token)
                        s->token[0] = '\0';
                return r;
        }
        *ret_token = s->token;
        return 0;
}

int session_unexpose(struct session *s, uint16_t port) {
        for (unsigned i = 0; i < s->n_exposed; i++)
                if (s->exposed[i] == port) {
                        s->exposed[i] = s->exposed[--s->n_exposed];
                        /* Withdrawn at once whatever the journal says. */
                        return journal_service(s);
                }
        return -ENOENT;
}

struct session *session_by_id(struct sessions *ss, const char *id) {
        for (struct list *p = ss->live.next; p != &ss->live; p = p->next) {
                struct session *s = list_entry(p, struct session, link);
                if (streq(s->id, id))
                        return s->state == S_READY && !s->warm ? s : NULL;
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
