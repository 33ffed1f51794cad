/* SPDX-License-Identifier: Apache-2.0 */
/* Sessions and a reload of the configuration: a session lives across
 * calls, so it follows its tenant's policy as it is now; one that the
 * policy no longer allows is ended and says so, and one whose services
 * were withdrawn loses its exposed ports but lives on. */
#include <jansson.h>
#include <stdio.h>

#include "jobs.h"
#include "log.h"
#include "session-internal.h"
#include "tenant.h"

/* Why t (as the configuration has it now) no longer allows s, or NULL. */
static const char *withdrawn(const struct session *s, const struct tenant *t, char *buf, size_t len) {
        if (!t)
                return "its tenant is no longer in the configuration";
        int net = s->box ? s->box->j.pol.net : NET_NONE;
        if (!(t->net_modes & NET_MODE_BIT(net))) {
                snprintf(buf, len, "its tenant no longer allows network mode '%s'", net_mode_name(net));
                return buf;
        }
        return NULL;
}

/* Its services withdrawn: every exposed port off the proxy. */
static void unexpose_all(struct session *s, json_t *services) {
        json_t *ports = json_array();
        while (s->n_exposed) {
                uint16_t port = s->exposed[0];
                json_array_append_new(ports, json_integer(port));
                if (session_unexpose(s, port) < 0)
                        log_error("session %s: port %u withdrawn, but the journal did not take it: a restart would expose it "
                                  "again", s->id, (unsigned) port);
        }
        log_notice("session %s (tenant %s): its tenant no longer allows services (session_services): %zu ports withdrawn",
                   s->id, s->tenant_name, json_array_size(ports));
        json_array_append_new(services, json_pack("{s:s, s:s, s:o}", "session", s->id, "tenant", s->tenant_name, "ports", ports));
}

unsigned sessions_reloaded(struct sessions *ss, const struct config *cfg, json_t *ended, json_t *services) {
        unsigned n = 0;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &ss->live) {
                struct session *s = list_entry(pos, struct session, link);
                if (s->state == S_ENDING)
                        continue;
                const struct tenant *t = tenant_find(cfg, s->tenant_name);
                /* A policy change flushes the warm pools: what is made
                 * ahead is made again under the new one. */
                if (s->warm && !s->taken) {
                        s->taken = true;
                        session_end(s, "flushed");
                        continue;
                }
                char buf[160];
                const char *why = withdrawn(s, t, buf, sizeof(buf));
                if (!why) {
                        s->tenant = t;
                        if (s->n_exposed && !t->session_services)
                                unexpose_all(s, services);
                        continue;
                }
                log_notice("session %s (tenant %s): ended by a reload of the configuration: %s", s->id, s->tenant_name, why);
                json_array_append_new(ended, json_pack("{s:s, s:s, s:s}", "session", s->id, "tenant", s->tenant_name, "why", why));
                n++;
                session_end(s, "policy");
        }
        return n;
}

bool sessions_hold(const struct sessions *ss, const struct config *old) {
        for (const struct list *p = ss->live.next; p != &ss->live; p = p->next)
                if (config_has_tenant(old, list_entry(p, struct session, link)->tenant))
                        return true;
        return false;
}
