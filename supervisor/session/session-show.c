/* SPDX-License-Identifier: Apache-2.0 */
/* What is told of sessions: how many a tenant has and how much memory
 * their limits take (admission), and each one as session.show and
 * session.list describe it. */
#include <jansson.h>

#include "jobs.h"
#include "proto.h"
#include "session-internal.h"
#include "session.h"
#include "tenant.h"

unsigned sessions_count(const struct sessions *ss, const struct tenant *t) {
        unsigned n = 0;
        for (const struct list *p = ss->live.next; p != &ss->live; p = p->next)
                if (tenant_same(list_entry(p, struct session, link)->tenant, t) && !list_entry(p, struct session, link)->warm)
                        n++;
        return n;
}

uint64_t sessions_memory(const struct sessions *ss, const struct tenant *t) {
        uint64_t sum = 0;
        for (const struct list *p = ss->live.next; p != &ss->live; p = p->next) {
                const struct session *s = list_entry(p, struct session, link);
                if (!tenant_same(s->tenant, t) || !s->box || s->warm)
                        continue;
                uint64_t m = s->box->j.pol.memory;
                if (m == PROTO_UNSET || sum + m < sum)
                        return UINT64_MAX;
                sum += m;
        }
        return sum;
}

static uint64_t expires_ms(const struct session *s) {
        const struct job *b = &s->box->j;
        uint64_t from = b->started_ms ? b->started_ms : s->created_ms;
        return from + b->pol.timeout_ms;
}

json_t *session_describe(const struct session *s) {
        static const char *const states[] = { [S_STARTING] = "starting", [S_READY] = "ready", [S_ENDING] = "ending" };
        json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:I}", "session", s->id, "tenant", s->tenant_name, "state", states[s->state],
                              "created", proto_time(s->created_ms), "idle_s", (json_int_t) (s->idle_ms / 1000));
        if (!o || !s->box)
                return o;
        json_object_set_new(o, "job", json_string(s->box->j.id));
        json_object_set_new(o, "expires", proto_time(expires_ms(s)));
        json_t *execs = json_array();
        for (const struct list *p = s->execs.next; p != &s->execs; p = p->next) {
                const struct exec_ref *x = list_entry(p, struct exec_ref, link);
                if (!x->ended)
                        json_array_append_new(execs, json_string(x->rj->j.id));
        }
        json_object_set_new(o, "running", execs);
        return o;
}

json_t *sessions_list(struct sessions *ss, const struct tenant *t) {
        json_t *arr = json_array();
        for (struct list *p = ss->live.next; arr && p != &ss->live; p = p->next) {
                struct session *s = list_entry(p, struct session, link);
                if (tenant_same(s->tenant, t) && !s->warm)
                        json_array_append_new(arr, session_describe(s));
        }
        return arr;
}
