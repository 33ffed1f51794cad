/* SPDX-License-Identifier: Apache-2.0 */
/* Progress callbacks. A job that asks for them (request field "progress",
 * or its tenant's callback_progress) gets a "started" delivery once its
 * command has started (the launcher's start line: the sandbox is set up
 * and execve succeeded), then a "heartbeat" every N seconds while it runs,
 * posted to its callback URL and signed like its result.
 *
 * They are best effort, unlike the result: held in memory only (one body
 * per running job, never in the outbox), tried once with a short timeout
 * and not retried; a heartbeat due while the job's last progress post is
 * still in flight, or while PROGRESS_MAX_INFLIGHT of all jobs are, is
 * skipped. Both losses are counted. They never come
 * after the result: heartbeats stop when the job ends, and its result is
 * not posted while a progress post of the same job is in flight (which
 * delays it by at most PROGRESS_TIMEOUT_MS, and only then). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "callbacks-internal.h"
#include "log.h"
#include "tenant.h"

#define PROGRESS_TIMEOUT_MS 2000
/* Progress posts in flight at once, all jobs together: half of the
 * connections the thread opens to one receiver (callback-thread.c), so
 * that results always have the other half. They are shared between the
 * tenants as result posts are (callback-lane.c): one tenant below its
 * share posts while others hold all 16, up to 32 in all. */
#define PROGRESS_MAX_INFLIGHT 16

struct cb_prog {
        struct list link;        /* cb->progs */
        struct cb_task task;
        struct cb_prog **slot;   /* the job's handle of it; NULL once the job ended */
        const uint64_t *produced; /* the job's stdout and stderr bytes so far (while slot) */
        const bool *exited;      /* its command has exited (while slot) */
        struct cb_tenant *share; /* its tenant's progress posts in flight */
        char job[24];
        char *tenant, *url, *traceparent;
        uint64_t interval_ms;
        uint64_t next_ms;        /* CLOCK_MONOTONIC: the next heartbeat */
        uint64_t started_ms;     /* CLOCK_REALTIME: the job's start */
        unsigned beats;
        bool inflight;
        char *body;
};

static void prog_free(struct cb_prog *p) {
        list_del(&p->link);
        cb_post_cleanup(&p->task);
        if (p->slot)
                *p->slot = NULL;
        free(p->tenant);
        free(p->url);
        free(p->traceparent);
        free(p->body);
        free(p);
}

static void arm(struct callbacks *cb) {
        struct itimerspec its = { 0 };
        uint64_t next = 0, now = now_mono_ms();
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->progs) {
                struct cb_prog *p = list_entry(pos, struct cb_prog, link);
                if (p->slot && (!next || p->next_ms < next))
                        next = p->next_ms;
        }
        if (next) {
                uint64_t in = next > now ? next - now : 1;
                its.it_value.tv_sec = (time_t) (in / 1000);
                its.it_value.tv_nsec = (long) (in % 1000) * 1000000;
        }
        timerfd_settime(cb->prog_timer_fd, 0, &its, NULL);
}

/* The body: which event, the job, its trace, when it started and how long
 * ago; a heartbeat adds its number and the output bytes so far. */
static char *body_of(const struct cb_prog *p, bool heartbeat, const char *delivery, size_t *ret_len) {
        uint64_t now = now_real_ms();
        json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:o, s:I}", "v", PROTO_VERSION, "event",
                              heartbeat ? "job.heartbeat" : "job.started", "delivery", delivery, "job", p->job, "tenant", p->tenant,
                              "trace_id", p->traceparent ? json_stringn(p->traceparent + 3, 32) : json_null(), "started",
                              proto_time(p->started_ms), "elapsed_ms",
                              (json_int_t) (now > p->started_ms ? now - p->started_ms : 0));
        if (o && heartbeat) {
                json_object_set_new(o, "heartbeat", json_integer(p->beats));
                json_object_set_new(o, "stdout_bytes", json_integer((json_int_t) p->produced[0]));
                json_object_set_new(o, "stderr_bytes", json_integer((json_int_t) p->produced[1]));
        }
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (s)
                *ret_len = strlen(s);
        return s;
}

static void post(struct callbacks *cb, struct cb_prog *p, bool heartbeat) {
        unsigned active = cb_tenants_wanting(cb, 0, true) + (p->share->progs == 0);
        if (!outbox_fair_may_start(cb->prog_inflight, PROGRESS_MAX_INFLIGHT, p->share->progs, active)) {
                cb->prog_behind++;
                return;
        }
        const struct tenant *t = tenant_find(cb->cfg, p->tenant);
        char delivery[OUTBOX_DELIVERY_LEN + 1];
        size_t len = 0;
        outbox_delivery_id(delivery);
        free(p->body);
        p->body = t && t->cb_secret ? body_of(p, heartbeat, delivery, &len) : NULL;
        struct cb_task *k = &p->task;
        k->op = CB_OP_PROGRESS;
        k->status = 0;
        k->retry_after = -1;
        k->errbuf[0] = '\0';
        k->file_err = 0;
        uint64_t timeout = cb->cfg->cb_timeout_ms < PROGRESS_TIMEOUT_MS ? cb->cfg->cb_timeout_ms : PROGRESS_TIMEOUT_MS;
        struct cb_post cp = { .t = t, .url = p->url, .body = p->body, .body_len = len, .delivery = delivery,
                              .event = heartbeat ? "heartbeat" : "started", .job = p->job, .traceparent = p->traceparent,
                              .attempt = 1, .timeout_ms = timeout };
        if (!p->body || cb_post_build(k, &cp) < 0) {
                cb_post_cleanup(k);
                cb->prog_failed++;
                return;
        }
        p->inflight = true;
        cb->prog_inflight++;
        p->share->progs++;
        cb_thread_submit(cb->th, k);
}

void callbacks_progress_start(struct callbacks *cb, const struct cb_progress_job *pj) {
        if (!cb->cfg || *pj->slot || !pj->url || pj->interval_s == PROTO_UNSET || pj->interval_s == 0)
                return;
        struct cb_prog *p = calloc(1, sizeof(*p));
        if (!p || !(p->share = cb_tenant_get(cb, pj->tenant)) || !(p->tenant = strdup(pj->tenant)) || !(p->url = strdup(pj->url)) ||
            (pj->traceparent && !(p->traceparent = strdup(pj->traceparent)))) {
                if (p) {
                        free(p->tenant);
                        free(p->url);
                }
                free(p);
                cb->prog_failed++;
                log_warning("job %s (tenant %s): out of memory: no progress callbacks", pj->job, pj->tenant);
                return;
        }
        snprintf(p->job, sizeof(p->job), "%s", pj->job);
        p->task.owner = p;
        p->slot = pj->slot;
        p->produced = pj->produced;
        p->exited = pj->exited;
        p->interval_ms = pj->interval_s * 1000;
        p->started_ms = pj->started_ms ? pj->started_ms : now_real_ms();
        p->next_ms = now_mono_ms() + p->interval_ms;
        *pj->slot = p;
        list_add_tail(&cb->progs, &p->link);
        post(cb, p, false);
        arm(cb);
}

void callbacks_progress_end(struct callbacks *cb, struct cb_prog **slot) {
        struct cb_prog *p = *slot;
        if (!p)
                return;
        *slot = NULL;
        p->slot = NULL;
        p->produced = NULL;
        p->exited = NULL;
        /* one in flight stays until it is answered (the result waits) */
        if (!p->inflight)
                prog_free(p);
        arm(cb);
}

void cb_progress_done(struct callbacks *cb, struct cb_task *k) {
        struct cb_prog *p = k->owner;
        cb_post_cleanup(k);
        p->inflight = false;
        cb->prog_inflight--;
        p->share->progs--;
        if (k->curl_rc == CURLE_OK && outbox_verdict(k->status) == OUTBOX_DELIVERED) {
                cb->prog_delivered++;
        } else {
                cb->prog_failed++;
                log_debug("progress callback of job %s: not delivered (%s); not retried", p->job,
                          k->curl_rc != CURLE_OK ? (k->errbuf[0] ? k->errbuf : curl_easy_strerror(k->curl_rc)) : "an answer other than 2xx");
        }
        if (!p->slot)
                prog_free(p);
}

bool cb_progress_busy(struct callbacks *cb, const char *job) {
        struct list *pos, *tmp;
        if (!cb->prog_inflight)
                return false;
        list_for_each_safe(pos, tmp, &cb->progs) {
                struct cb_prog *p = list_entry(pos, struct cb_prog, link);
                if (p->inflight && streq(p->job, job))
                        return true;
        }
        return false;
}

static void on_timer(struct source *s, uint32_t events) {
        struct callbacks *cb = container_of(s, struct callbacks, prog_timer_src);
        uint64_t n, now = now_mono_ms();
        struct list *pos, *tmp;
        (void) events;
        if (read(s->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                return;
        list_for_each_safe(pos, tmp, &cb->progs) {
                struct cb_prog *p = list_entry(pos, struct cb_prog, link);
                if (!p->slot || p->next_ms > now)
                        continue;
                /* the next one on the interval's grid, never a burst */
                p->next_ms += p->interval_ms * ((now - p->next_ms) / p->interval_ms + 1);
                if (*p->exited)
                        continue; /* ended: its end is on the way */
                p->beats++;
                if (p->inflight)
                        cb->prog_behind++; /* the receiver is behind: skipped */
                else
                        post(cb, p, true);
        }
        arm(cb);
}

int cb_progress_init(struct callbacks *cb) {
        cb->prog_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (cb->prog_timer_fd < 0)
                return -errno;
        return loop_add(&cb->prog_timer_src, cb->prog_timer_fd, EPOLLIN, on_timer);
}

void cb_progress_free_all(struct callbacks *cb) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->progs)
                prog_free(list_entry(pos, struct cb_prog, link));
        if (cb->prog_timer_fd >= 0) {
                if (cb->prog_timer_src.fd > 0)
                        loop_del(&cb->prog_timer_src);
                close(cb->prog_timer_fd);
                cb->prog_timer_fd = -1;
        }
}
