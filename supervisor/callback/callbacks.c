/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "audit.h"
#include "callback-thread.h"
#include "callbacks-internal.h"
#include "fileio.h"
#include "log.h"
#include "metrics.h"
#include "tenant.h"

void cb_item_free(struct cb_item *it) {
        cb_lane_put(it->lane);
        outbox_entry_free(&it->e);
        free(it->task.text);
        free(it);
}

void cb_item_drop_body(struct outbox_entry *e) {
        free(e->body);
        e->body = NULL;
        e->body_len = 0;
}

struct cb_item *cb_item_new(struct callbacks *cb, struct outbox_entry *e, enum cb_state state) {
        struct cb_lane *lane = cb_lane_get(cb, e->tenant, e->url);
        struct cb_item *it = lane ? calloc(1, sizeof(*it)) : NULL;
        if (!it) {
                cb_lane_put(lane);
                return NULL;
        }
        it->lane = lane;
        it->e = *e;
        memset(e, 0, sizeof(*e));
        it->state = state;
        it->next_ms = now_mono_ms();
        it->task.owner = it;
        it->q = cb_queue_get(cb, it->e.tenant);
        snprintf(it->task.name, sizeof(it->task.name), "%s.json", it->e.job);
        snprintf(it->task.dropped, sizeof(it->task.dropped), "%s.dropped", it->e.job);
        list_add_tail(&cb->items, &it->link);
        if (state == CB_PENDING)
                cb->n_pending++;
        else if (state == CB_DEAD)
                cb->n_dead++;
        cb_queue_count(it->q, state == CB_PENDING, state == CB_DEAD || state == CB_DROPPED);
        return it;
}

void cb_set_state(struct callbacks *cb, struct cb_item *it, enum cb_state s) {
        bool was_pending = it->state == CB_PENDING || it->state == CB_INFLIGHT || it->state == CB_MOVING;
        bool pending = s == CB_PENDING || s == CB_INFLIGHT || s == CB_MOVING;
        bool was_kept = it->state == CB_DEAD || it->state == CB_DROPPED, kept = s == CB_DEAD || s == CB_DROPPED;
        cb->n_pending += (uint64_t) pending - (uint64_t) was_pending;
        cb_queue_count(it->q, (int) pending - (int) was_pending, (int) kept - (int) was_kept);
        cb->n_dead += (uint64_t) (s == CB_DEAD) - (uint64_t) (it->state == CB_DEAD);
        it->state = s;
}

struct cb_item *cb_find(struct callbacks *cb, const char *job) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->items) {
                struct cb_item *it = list_entry(pos, struct cb_item, link);
                if (streq(it->e.job, job))
                        return it;
        }
        return NULL;
}


/* The cluster's database hears how a delivery settled. */
static void settled(struct callbacks *cb, const struct cb_item *it, const char *state) {
        if (cb->settled)
                cb->settled(cb->settled_arg, it->e.job, state);
}

bool callbacks_forget(struct callbacks *cb, const char *job) {
        struct cb_item *it = cb_find(cb, job);
        char name[40];
        if (!it || it->state != CB_PENDING)
                return false;
        cb_entry_name(job, name);
        if (unlinkat(cb->outbox_fd, name, 0) < 0 && errno != ENOENT) {
                log_warning("callback of job %s: cannot remove its outbox entry: %s", job, strerror(errno));
                return false;
        }
        cb_set_state(cb, it, CB_GONE);
        list_del(&it->link);
        cb_item_free(it);
        return true;
}

int callbacks_adopt(struct callbacks *cb, struct outbox_entry *e, const char *text, size_t len) {
        char name[40];
        cb_entry_name(e->job, name);
        int r = write_file_durable(cb->outbox_fd, name, text, len, 0600, true);
        callbacks_add(cb, e);
        return r;
}

void cb_file_task(struct callbacks *cb, struct cb_item *it, enum cb_op op) {
        it->task.op = op;
        it->task.file_err = 0;
        cb_thread_submit(cb->th, &it->task);
}

/* Copies at most n-1 bytes of src: a message cut short is fine here. */
static void set_msg(char *dst, size_t n, const char *src) {
        size_t l = strnlen(src, n - 1);
        memcpy(dst, src, l);
        dst[l] = '\0';
}

/* Give up: to the dead letters (audited once it is there). */
static void dead_letter(struct callbacks *cb, struct cb_item *it, const char *why) {
        set_msg(it->last_error, sizeof(it->last_error), why);
        cb_set_state(cb, it, CB_MOVING);
        cb_file_task(cb, it, CB_OP_DEAD);
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg) {
        struct cb_task *k = arg;
        size_t len = size * n;
        if (len > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
                char v[64];
                size_t vl = len - 12 < sizeof(v) - 1 ? len - 12 : sizeof(v) - 1;
                memcpy(v, buf + 12, vl);
                v[vl] = '\0';
                v[strcspn(v, "\r\n")] = '\0';
                k->retry_after = outbox_parse_retry_after(v, now_real_ms() / 1000);
        }
        return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg) {
        (void) buf;
        (void) arg;
        return size * n; /* the receiver's answer body is not kept */
}

static int add_header(struct curl_slist **l, const char *name, const char *v) {
        char h[OUTBOX_SIG_MAX + 128];
        snprintf(h, sizeof(h), "%s: %s", name, v);
        struct curl_slist *n = curl_slist_append(*l, h);
        if (!n)
                return -ENOMEM;
        *l = n;
        return 0;
}

int cb_post_build(struct cb_task *k, const struct cb_post *p) {
        char sig[OUTBOX_SIG_MAX], attempt[16];
        outbox_sign(p->t->cb_secret, p->t->cb_secret_len, now_real_ms() / 1000, p->body, p->body_len, sig);
        snprintf(attempt, sizeof(attempt), "%u", p->attempt);
        k->h = curl_easy_init();
        if (!k->h)
                return -ENOMEM;
        int r = add_header(&k->hdrs, "Content-Type", "application/json");
        /* curl_slist "Expect:" (no value) drops the 100-continue wait */
        struct curl_slist *ex = r ? NULL : curl_slist_append(k->hdrs, "Expect:");
        r = r ?: (ex ? 0 : -ENOMEM);
        if (ex)
                k->hdrs = ex;
        r = r ?: add_header(&k->hdrs, OUTBOX_DELIVERY_HEADER, p->delivery);
        r = r ?: add_header(&k->hdrs, OUTBOX_EVENT_HEADER, p->event);
        r = r ?: add_header(&k->hdrs, "X-Sbx-Job", p->job);
        r = r ?: add_header(&k->hdrs, "X-Sbx-Attempt", attempt);
        r = r ?: add_header(&k->hdrs, OUTBOX_SIG_HEADER, sig);
        if (p->traceparent)
                r = r ?: add_header(&k->hdrs, "traceparent", p->traceparent);
        if (r < 0)
                return r;
        CURL *h = k->h;
        curl_easy_setopt(h, CURLOPT_URL, p->url);
        /* The URL was checked against callback_allow part by part
         * (urlmatch.h); a redirect would take the post past that check, to
         * wherever the receiver says. None is followed: a 3xx is a final
         * answer (post_done). */
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, 0L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, p->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) p->body_len);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, k->hdrs);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long) p->timeout_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long) p->timeout_ms);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "sbx-supervisord/" PACKAGE_VERSION);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, k);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, k->errbuf);
        curl_easy_setopt(h, CURLOPT_PRIVATE, (char *) k);
        return 0;
}

void cb_post_cleanup(struct cb_task *k) {
        if (k->h)
                curl_easy_cleanup(k->h);
        curl_slist_free_all(k->hdrs);
        k->h = NULL;
        k->hdrs = NULL;
}

static void start_post(struct callbacks *cb, struct cb_item *it) {
        const struct tenant *t = tenant_find(cb->cfg, it->e.tenant);
        if (!t || !t->cb_secret) {
                dead_letter(cb, it, "its tenant has no callback_secret_file now: it cannot be signed");
                return;
        }
        /* Checked again at each attempt: an outbox entry may be older than
         * the configuration (a callback_allow narrowed since, or a URL a
         * string prefix let through before URLs were parsed). */
        if (!(t->cb_url && streq(t->cb_url, it->e.url))) {
                const char *why = "no callback_allow prefix has its scheme, host, port and path";
                int r = tenant_allows_callback(t, it->e.url, &why);
                if (r == -ENOMEM) {
                        it->next_ms = now_mono_ms() + 1000;
                        return;
                }
                if (r < 0) {
                        char msg[sizeof(it->last_error)];
                        snprintf(msg, sizeof(msg), "not posted: its tenant does not allow its URL now (%s)", why);
                        dead_letter(cb, it, msg);
                        return;
                }
        }
        struct cb_task *k = &it->task;
        k->op = CB_OP_POST;
        k->status = 0;
        k->retry_after = -1;
        k->errbuf[0] = '\0';
        k->file_err = 0;
        struct cb_post p = { .t = t, .url = it->e.url, .body = it->e.body, .body_len = it->e.body_len, .delivery = it->e.delivery,
                             .event = "result", .job = it->e.job, .traceparent = it->e.traceparent, .attempt = it->attempts + 1,
                             .timeout_ms = cb->cfg->cb_timeout_ms };
        if (cb_post_build(k, &p) < 0) {
                cb_post_cleanup(k);
                it->next_ms = now_mono_ms() + 1000; /* out of memory: later */
                return;
        }
        cb_set_state(cb, it, CB_INFLIGHT);
        cb->inflight++;
        cb_lane_started(it->lane);
        cb_thread_submit(cb->th, k);
}

static void arm(struct callbacks *cb, uint64_t at_ms) {
        struct itimerspec its = { 0 };
        if (at_ms) {
                uint64_t now = now_mono_ms(), in = at_ms > now ? at_ms - now : 1;
                its.it_value.tv_sec = (time_t) (in / 1000);
                its.it_value.tv_nsec = (long) (in % 1000) * 1000000;
        }
        timerfd_settime(cb->timer_fd, 0, &its, NULL);
}

/* May the lane try a delivery now (next: when it may, if sooner)? Each
 * delivery's own time (set aside, or out of memory) is looked at apart. */
static bool lane_open(const struct cb_lane *l, uint64_t now, uint64_t *next) {
        if (!l->fails)
                return true;
        if (l->inflight)
                return false; /* its end dispatches again */
        if (l->next_ms > now) {
                if (!*next || l->next_ms < *next)
                        *next = l->next_ms;
                return false;
        }
        return true;
}

/* Pending, in time, not set aside, its lane open? Past callback_max_age
 * it goes to the dead letters. */
static bool due(struct callbacks *cb, struct cb_item *it, uint64_t now, uint64_t real, uint64_t *next) {
        const struct config *cfg = cb->cfg;
        if (it->state != CB_PENDING)
                return false;
        uint64_t deadline = it->e.created_ms + cfg->cb_max_age_ms;
        if (real >= deadline) {
                char why[sizeof(it->last_error) + 96];
                snprintf(why, sizeof(why), "not delivered within callback_max_age (%u attempts; last: %s)", it->attempts,
                         it->last_error[0] ? it->last_error : "none");
                dead_letter(cb, it, why);
                return false;
        }
        /* woken up at its deadline whatever its lane waits for */
        if (!*next || now + (deadline - real) < *next)
                *next = now + (deadline - real);
        if (it->asked)
                return true;
        if (it->next_ms > now) {
                if (it->next_ms < *next)
                        *next = it->next_ms;
                return false;
        }
        return lane_open(it->lane, now, next);
}

/* Read back what is queued while there is room; give up on what is past
 * callback_max_age; start what is due, each lane in order, each tenant
 * within its share of callback_concurrency (callback-lane.c); wake up for
 * the next. */
void cb_dispatch(struct callbacks *cb) {
        const struct config *cfg = cb->cfg;
        uint64_t now = now_mono_ms(), real = now_real_ms(), next = 0, pass = ++cb->pass;
        struct list *pos, *tmp;
        cb_queue_refill(cb);
        cb_queue_evict(cb);
        /* who wants a slot */
        list_for_each_safe(pos, tmp, &cb->items) {
                struct cb_item *it = list_entry(pos, struct cb_item, link);
                if (due(cb, it, now, real, &next))
                        it->lane->t->wants = pass;
        }
        unsigned active = cb_tenants_wanting(cb, pass, false);
        list_for_each_safe(pos, tmp, &cb->items) {
                struct cb_item *it = list_entry(pos, struct cb_item, link);
                struct cb_lane *l = it->lane;
                uint64_t ignored = 0;
                if ((l->held == pass && !it->asked) || !due(cb, it, now, real, &ignored))
                        continue;
                if (l->fails && l->second && l->skipped != pass && !it->asked) {
                        l->skipped = pass; /* the oldest, which failed: the next one instead */
                        continue;
                }
                if (!outbox_fair_may_start(cb->inflight, (unsigned) cfg->cb_concurrency, l->t->posts, active) ||
                    cb_progress_busy(cb, it->e.job)) {
                        /* (a progress post's end, or any post's, dispatches again) */
                        l->held = pass; /* the later ones of its lane after it */
                        continue;
                }
                it->asked = false;
                start_post(cb, it);
                if (it->state != CB_INFLIGHT)
                        l->held = pass;
        }
        /* a lane whose oldest was passed over with nothing after it: the
         * oldest again, at once */
        list_for_each_safe(pos, tmp, &cb->lanes) {
                struct cb_lane *l = list_entry(pos, struct cb_lane, link);
                if (l->skipped == pass && l->second && !l->inflight) {
                        l->second = false;
                        next = now;
                }
        }
        arm(cb, next);
}

static void note_failure(struct callbacks *cb, struct cb_item *it, const struct cb_task *k) {
        if (k->curl_rc != CURLE_OK)
                set_msg(it->last_error, sizeof(it->last_error), k->errbuf[0] ? k->errbuf : curl_easy_strerror(k->curl_rc));
        else
                snprintf(it->last_error, sizeof(it->last_error), "HTTP %ld", k->status);
        it->last_status = k->status;
        cb->attempt_failures++;
}

static void post_done(struct callbacks *cb, struct cb_item *it) {
        struct cb_task *k = &it->task;
        cb_post_cleanup(k);
        cb->inflight--;
        it->attempts++;
        enum outbox_verdict v = k->curl_rc != CURLE_OK ? OUTBOX_RETRY : outbox_verdict(k->status);
        if (v != OUTBOX_RETRY)
                cb_lane_answered(cb, it);
        if (v == OUTBOX_DELIVERED) {
                if (k->file_err < 0)
                        log_warning("callback of job %s: delivered, but its outbox entry stays (%s): it is delivered again at "
                                    "the next start",
                                    it->e.job, strerror(-k->file_err));
                log_info("callback of job %s (trace %.32s): delivered (%s, attempt %u, HTTP %ld)", it->e.job,
                         it->e.traceparent ? it->e.traceparent + 3 : "-", it->e.delivery, it->attempts, k->status);
                cb->delivered++;
                settled(cb, it, "delivered");
                cb_set_state(cb, it, CB_GONE);
                list_del(&it->link);
                cb_item_free(it);
                return;
        }
        note_failure(cb, it, k);
        if (v == OUTBOX_FINAL) {
                char why[sizeof(it->last_error)];
                if (k->status >= 300 && k->status <= 399)
                        snprintf(why, sizeof(why), "answered HTTP %ld, a redirect: callbacks follow no redirects (final)",
                                 k->status);
                else
                        snprintf(why, sizeof(why), "refused with HTTP %ld (final: only 408, 429 and 5xx are retried)", k->status);
                cb_set_state(cb, it, CB_PENDING);
                dead_letter(cb, it, why);
                return;
        }
        /* The lane waits, not the delivery: the lane's next attempt is
         * its oldest, whichever failed (callback-lane.c). */
        uint64_t delay = cb_lane_failed(cb, it, k->retry_after);
        cb_set_state(cb, it, CB_PENDING);
        log_info("callback of job %s (trace %.32s): attempt %u failed (%s); next in %" PRIu64 " ms", it->e.job,
                 it->e.traceparent ? it->e.traceparent + 3 : "-", it->attempts, it->last_error, delay);
}

static void audit_dead(const struct cb_item *it) {
        audit_write_deferred(json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:o}", "event", "callback_dead_letter", "job", it->e.job,
                                       "tenant", it->e.tenant, "delivery", it->e.delivery, "url", it->e.url, "attempts",
                                       (json_int_t) it->attempts, "reason", it->last_error, "trace_id",
                                       it->e.traceparent ? json_stringn(it->e.traceparent + 3, 32) : json_null()));
}

static void file_done(struct callbacks *cb, struct cb_item *it) {
        struct cb_task *k = &it->task;
        if (k->file_err < 0)
                log_error("callback of job %s: %s: %s", it->e.job,
                          k->op == CB_OP_DEAD ? "cannot move it to the dead letters" :
                          k->op == CB_OP_DROP ? "cannot drop it" : "cannot put it back in the outbox",
                          strerror(-k->file_err));
        switch (k->op) {
        case CB_OP_DEAD:
                if (k->file_err < 0) {
                        /* still in the outbox: tried again after the backoff's longest */
                        it->next_ms = now_mono_ms() + cb->cfg->cb_backoff_max_ms;
                        cb_set_state(cb, it, CB_PENDING);
                        break;
                }
                cb_set_state(cb, it, CB_DEAD);
                settled(cb, it, "dead");
                cb_item_drop_body(&it->e);
                cb->dead_lettered++;
                log_warning("callback of job %s (trace %.32s): dead-lettered after %u attempts: %s", it->e.job,
                            it->e.traceparent ? it->e.traceparent + 3 : "-", it->attempts, it->last_error);
                audit_dead(it);
                break;
        case CB_OP_DROP:
                cb_set_state(cb, it, k->file_err < 0 ? (k->from_dead ? CB_DEAD : CB_PENDING) : CB_DROPPED);
                if (it->state == CB_DROPPED) {
                        settled(cb, it, "dropped");
                        cb_item_drop_body(&it->e);
                }
                break;
        case CB_OP_RESTORE:
                free(k->text);
                k->text = NULL;
                if (k->file_err < 0) {
                        cb_set_state(cb, it, k->from_dead ? CB_DEAD : CB_DROPPED);
                        cb_item_drop_body(&it->e);
                        break;
                }
                it->attempts = 0;
                it->last_error[0] = '\0';
                it->next_ms = now_mono_ms();
                it->asked = true;
                cb_set_state(cb, it, CB_PENDING);
                settled(cb, it, "pending");
                break;
        case CB_OP_POST:
        case CB_OP_PROGRESS:
        case CB_OP_LOAD:
                break;
        }
}

void cb_on_done(struct source *s, uint32_t events) {
        struct callbacks *cb = container_of(s, struct callbacks, done_src);
        (void) events;
        struct cb_task *k = cb_thread_take_done(cb->th);
        while (k) {
                struct cb_task *n = k->next;
                struct cb_item *it = k->owner;
                if (k->op == CB_OP_LOAD)
                        cb_queue_loaded(cb, k);
                else if (k->op == CB_OP_PROGRESS)
                        cb_progress_done(cb, k);
                else if (k->op == CB_OP_POST)
                        post_done(cb, it);
                else
                        file_done(cb, it);
                k = n;
        }
        cb_dispatch(cb);
}

void cb_on_timer(struct source *s, uint32_t events) {
        struct callbacks *cb = container_of(s, struct callbacks, timer_src);
        uint64_t n;
        (void) events;
        if (read(s->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                return;
        cb_dispatch(cb);
}

void callbacks_add(struct callbacks *cb, struct outbox_entry *e) {
        /* Queued when its tenant has callback_memory_max in memory (an
         * operator cannot have read it in before: cb_queue_promote()). */
        if (cb_queue_spill(cb, cb_queue_get(cb, e->tenant), e)) {
                outbox_entry_free(e);
                return;
        }
        if (!cb_item_new(cb, e, CB_PENDING)) {
                /* Its entry is on disk: read back later, or after the next
                 * start. */
                log_error("callback of job %s: out of memory: %s", e->job,
                          cb_queue_force(cb, e) ? "queued on disk" : "delivered after the next start");
                outbox_entry_free(e);
                return;
        }
        cb_dispatch(cb);
}
