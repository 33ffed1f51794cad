/* SPDX-License-Identifier: Apache-2.0 */
/* Who may post a callback now: each tenant's share of the slots, and the
 * order of a tenant's deliveries to one URL (a lane).
 *
 * Shares: callback_concurrency result posts, and PROGRESS_MAX_INFLIGHT
 * progress posts, are divided among the tenants that want them
 * (outbox_fair_may_start()). A receiver that accepts and never answers
 * holds each post until callback_timeout; without shares one tenant's 30
 * such jobs kept every slot and another tenant's delivery waited 34 s.
 *
 * Lanes: a receiver that was down gets its backlog oldest first. The
 * backoff after a failed attempt is the lane's, not the delivery's: with
 * a backoff per delivery each one came back at its own time after an
 * outage (the oldest, which had failed most, last of all). While a lane
 * is failing it sends one delivery at a time, its oldest; once the
 * receiver answers, the rest follow in order. A delivery that fails while
 * the one after it is delivered is set aside (retried on its own
 * backoff), so that one the receiver always refuses does not hold up the
 * others for callback_max_age. */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "callbacks-internal.h"
#include "conf.h"

struct cb_tenant *cb_tenant_get(struct callbacks *cb, const char *name) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->tenants) {
                struct cb_tenant *t = list_entry(pos, struct cb_tenant, link);
                if (streq(t->name, name))
                        return t;
        }
        struct cb_tenant *t = calloc(1, sizeof(*t));
        if (!t || !(t->name = strdup(name))) {
                free(t);
                return NULL;
        }
        list_add_tail(&cb->tenants, &t->link);
        return t;
}

void cb_tenants_free(struct callbacks *cb) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->tenants) {
                struct cb_tenant *t = list_entry(pos, struct cb_tenant, link);
                list_del(pos);
                free(t->name);
                free(t);
        }
}

unsigned cb_tenants_wanting(struct callbacks *cb, uint64_t pass, bool progress) {
        struct list *pos, *tmp;
        unsigned n = 0;
        list_for_each_safe(pos, tmp, &cb->tenants) {
                const struct cb_tenant *t = list_entry(pos, struct cb_tenant, link);
                n += progress ? t->progs > 0 : t->posts > 0 || t->wants == pass;
        }
        return n;
}

struct cb_lane *cb_lane_get(struct callbacks *cb, const char *tenant, const char *url) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->lanes) {
                struct cb_lane *l = list_entry(pos, struct cb_lane, link);
                if (streq(l->url, url) && streq(l->t->name, tenant)) {
                        l->refs++;
                        return l;
                }
        }
        struct cb_tenant *t = cb_tenant_get(cb, tenant);
        struct cb_lane *l = t ? calloc(1, sizeof(*l)) : NULL;
        if (!l || !(l->url = strdup(url))) {
                free(l);
                return NULL;
        }
        l->t = t;
        l->refs = 1;
        list_add_tail(&cb->lanes, &l->link);
        return l;
}

void cb_lane_put(struct cb_lane *l) {
        if (!l || --l->refs > 0)
                return;
        list_del(&l->link);
        free(l->url);
        free(l);
}

void cb_lane_started(struct cb_lane *l) {
        l->inflight++;
        l->t->posts++;
}

/* The lane's oldest pending delivery that is not set aside, other than
 * not; NULL: none. */
static struct cb_item *oldest(struct callbacks *cb, struct cb_lane *l, const struct cb_item *not, uint64_t now) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->items) {
                struct cb_item *it = list_entry(pos, struct cb_item, link);
                if (it->lane == l && it != not && it->state == CB_PENDING && it->next_ms <= now)
                        return it;
        }
        return NULL;
}

void cb_lane_answered(struct callbacks *cb, struct cb_item *it) {
        struct cb_lane *l = it->lane;
        const struct config *cfg = cb->cfg;
        uint64_t now = now_mono_ms();
        l->inflight--;
        l->t->posts--;
        if (l->second) {
                /* the one after the oldest got through: the oldest is the
                 * receiver's problem, not the lane's */
                struct cb_item *head = oldest(cb, l, it, now);
                if (head)
                        head->next_ms = now + outbox_delay_ms(head->attempts, cfg->cb_backoff_ms, cfg->cb_backoff_max_ms, -1,
                                                              (double) randombytes_uniform(1000000) / 1e6);
        }
        l->fails = 0;
        l->second = false;
        l->next_ms = 0;
}

uint64_t cb_lane_failed(struct callbacks *cb, struct cb_item *it, long retry_after) {
        struct cb_lane *l = it->lane;
        const struct config *cfg = cb->cfg;
        uint64_t now = now_mono_ms();
        l->inflight--;
        l->t->posts--;
        if (l->fails && l->inflight)
                return l->next_ms > now ? l->next_ms - now : 0; /* failing already: counted once */
        l->fails++;
        if (!l->second && oldest(cb, l, it, now)) {
                /* the oldest failed: try the one after it at once, to
                 * tell a receiver that is down from one delivery it
                 * refuses */
                l->second = true;
                l->next_ms = now;
                return 0;
        }
        l->second = false;
        uint64_t delay = outbox_delay_ms(l->fails, cfg->cb_backoff_ms, cfg->cb_backoff_max_ms, retry_after,
                                         (double) randombytes_uniform(1000000) / 1e6);
        l->next_ms = now + delay;
        return delay;
}
