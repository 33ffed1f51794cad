/* SPDX-License-Identifier: Apache-2.0 */
/* Warm pools: when to make a tenant's warm sandboxes, and which jobs may
 * take one. A job takes one when a cold start would give it exactly that
 * sandbox: its tenant's profile and limits as they stand (its timeout is
 * its own), no network of its own, nothing put into its workspace before
 * it starts or taken out after it, no secrets or packages; and when none
 * of its tenant's jobs wait in the queue (they keep their order). Every
 * other job starts cold, as it would without a pool. The sandboxes hold
 * places of their tenant's max_jobs and of the daemon's, so they are made
 * only where nothing waits for a place, and one ends when a job would
 * wait for the place it holds. In cluster mode the jobs a node claims
 * take them (warm_claimed), the claims count their places free, and only
 * a node that claims makes them, while nothing runnable waits in the
 * database. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "cluster-ops.h"
#include "daemon.h"
#include "dispatch.h"
#include "jobevents.h"
#include "log.h"
#include "session.h"
#include "tenant.h"
#include "warm.h"

/* The most stdin a job in a warm sandbox takes (the agent's limit for an
 * exec's, given all at once). */
#define WARM_STDIN_MAX (1u << 20)
/* A pool whose sandboxes end before they are ready (a profile that cannot
 * be set up, an agent that fails) is made again after 1 s, then 2, 4 ...
 * up to this, not at once: a broken pool must not spin. */
#define WARM_BACKOFF_MAX_MS 60000

/* What the pool keeps per tenant (by its slot, stable across reloads). */
struct warm_slot {
        uint64_t used_ms;   /* monotonic: its last run request; 0: none, no pool */
        struct stat prof;   /* the profile its sandboxes were made with */
        bool prof_known;
        unsigned failed;    /* sandboxes in a row that ended before they were ready */
        uint64_t retry_ms;  /* monotonic: none is made before */
};

struct warm {
        struct warm_slot *slot;
        size_t n;
        struct source timer; /* wakes the pools that back off */
        struct daemon *d;
};

static struct warm_slot *slot_of(struct daemon *d, const struct tenant *t) {
        struct warm *w = d->warm;
        if (!w)
                return NULL;
        if (t->slot >= w->n) {
                size_t n = t->slot + 8;
                struct warm_slot *s = realloc(w->slot, n * sizeof(*s));
                if (!s)
                        return NULL;
                memset(s + w->n, 0, (n - w->n) * sizeof(*s));
                w->slot = s;
                w->n = n;
        }
        return &w->slot[t->slot];
}

static bool same_file(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Every tenant with a pool has it made now (start, reload). */
static void configured(struct daemon *d) {
        uint64_t now = now_mono_ms();
        for (size_t i = 0; i < d->cfg->n_tenants; i++) {
                const struct tenant *t = &d->cfg->tenants[i];
                struct warm_slot *s = t->warm ? slot_of(d, t) : NULL;
                if (!s)
                        continue;
                s->used_ms = now;
                s->prof_known = false;
                d->warm_wanted = true;
        }
}

static void arm_retry(struct daemon *d, uint64_t at_ms) {
        uint64_t now = now_mono_ms(), in = at_ms > now ? at_ms - now : 1;
        struct itimerspec its = { .it_value = { .tv_sec = (time_t) (in / 1000), .tv_nsec = (long) (in % 1000) * 1000000 } };
        (void) timerfd_settime(d->warm->timer.fd, 0, &its, NULL);
}

/* A box of the pool that never became ready: the next is made later. */
static void failed(struct daemon *d, const struct tenant *t) {
        struct warm_slot *s = slot_of(d, t);
        if (!s)
                return;
        unsigned shift = s->failed < 16 ? s->failed : 16;
        uint64_t wait = 1000ull << shift;
        if (wait > WARM_BACKOFF_MAX_MS)
                wait = WARM_BACKOFF_MAX_MS;
        s->failed++;
        s->retry_ms = now_mono_ms() + wait;
        log_warning("tenant %s: a warm sandbox ended before it was ready (%u in a row): the pool is made again in %" PRIu64
                    " ms",
                    t->name, s->failed, wait);
        arm_retry(d, s->retry_ms);
}

/* A job of a tenant with a pool ended: a box of the pool (used, idle,
 * flushed, or failed) or a job that held a place the pool gave up. */
static void on_end(struct rjob *rj, json_t *rec) {
        struct daemon *d = rj->d;
        if (rj->warm && rj->session_box && rj->j.tenant) {
                struct warm_slot *s = slot_of(d, rj->j.tenant);
                if (rj->warm_failed)
                        failed(d, rj->j.tenant);
                else if (s && rj->j.started_ms)
                        s->failed = 0;
        }
        if (rj->warm || (rj->j.tenant && rj->j.tenant->warm))
                d->warm_wanted = true;
}

static void on_fail(struct rjob *rj, const char *code, const char *msg) {
        on_end(rj, NULL);
}

static const struct job_listener warm_listener = { .end = on_end, .fail = on_fail };

static void on_timer(struct source *src, uint32_t events) {
        struct warm *w = container_of(src, struct warm, timer);
        uint64_t n;
        if (read(src->fd, &n, sizeof(n)) < 0)
                return;
        w->d->warm_wanted = true;
}

int warm_init(struct daemon *d) {
        if (!(d->warm = calloc(1, sizeof(*d->warm))))
                return -ENOMEM;
        d->warm->timer.fd = -1;
        d->warm->d = d;
        if (job_listen(&warm_listener) < 0)
                return -ENOMEM;
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (fd < 0 || loop_add(&d->warm->timer, fd, EPOLLIN, on_timer) < 0) {
                if (fd >= 0)
                        close(fd);
                d->warm->timer.fd = -1;
                return -ENOMEM;
        }
        configured(d);
        return 0;
}

void warm_done(struct daemon *d) {
        if (!d->warm)
                return;
        if (d->warm->timer.fd >= 0) {
                loop_del(&d->warm->timer);
                close(d->warm->timer.fd);
        }
        free(d->warm->slot);
        free(d->warm);
        d->warm = NULL;
}

void warm_reloaded(struct daemon *d) {
        configured(d);
}

void warm_fill(struct daemon *d) {
        d->warm_wanted = false;
        if (d->stopping || !d->warm)
                return;
        uint64_t now = now_mono_ms();
        /* jobs wait for places: they have them first (the sandboxes
         * queued below count from here on); in cluster mode also those
         * this node could claim, and a node that claims none has none */
        if (d->sched.all.queued || (cluster_on(d) && !cluster_may_warm(d)))
                return;
        for (size_t i = 0; i < d->cfg->n_tenants; i++) {
                const struct tenant *t = &d->cfg->tenants[i];
                struct warm_slot *s = t->warm ? slot_of(d, t) : NULL;
                /* not asked for within warm_idle: what ends idle is not
                 * made again until its tenant runs something */
                if (!s || !s->used_ms || now - s->used_ms >= t->warm_idle_ms || now < s->retry_ms)
                        continue;
                const struct sched_count *c = sched_tenant(&d->sched, t);
                unsigned n = sessions_warm(&d->sessions, t, NULL);
                while (n < t->warm && c->running + c->queued < t->max_jobs &&
                       d->sched.all.running + d->sched.all.queued < d->sched.max_running) {
                        struct sbx_error err;
                        sbx_error_clear(&err);
                        struct rjob *rj = accept_warm(d, t, &err);
                        if (!rj) {
                                log_warning("tenant %s: cannot make a warm sandbox: %s", t->name, err.msg);
                                break;
                        }
                        if (!s->prof_known && rj->profile_path && stat(rj->profile_path, &s->prof) == 0)
                                s->prof_known = true;
                        n++;
                }
        }
}

/* Would a cold start give this job exactly a warm sandbox of t's? (No
 * progress callbacks: 0, or, rebuilt from its accept line, unset.) */
static bool fits(const struct request *req, const struct policy_decision *pol) {
        const struct run_request *run = &req->run;
        return req->op == REQ_RUN && !run->bundle && !run->n_files && !run->n_artifacts && !run->n_secrets && !run_has_deps(run) &&
               !run->retries && (!run->progress_s || run->progress_s == PROTO_UNSET) && !run->netpol &&
               pol->net != NET_RESTRICTED && run->stdin_len <= WARM_STDIN_MAX;
}

struct session *warm_take(struct daemon *d, const struct tenant *t, const struct request *req, const struct policy_decision *pol,
                          const char *profile_path) {
        if (!t->warm || d->stopping)
                return NULL;
        struct warm_slot *s = slot_of(d, t);
        if (!s)
                return NULL;
        s->used_ms = now_mono_ms();
        if (sessions_warm(&d->sessions, t, NULL) < t->warm)
                d->warm_wanted = true;
        if (!fits(req, pol) || sched_tenant(&d->sched, t)->queued)
                return NULL;
        /* The profile changed on disk since the pool was made: what was
         * made with the old one goes, and is made again with the new. */
        struct stat st;
        if (profile_path && s->prof_known && (stat(profile_path, &st) < 0 || !same_file(&st, &s->prof))) {
                unsigned n = 0;
                while (sessions_warm_end_one(&d->sessions, t, "flushed"))
                        n++;
                log_info("tenant %s: profile %s changed: %u warm sandboxes made with the old one end", t->name, profile_path, n);
                s->prof_known = false;
                d->warm_wanted = true;
                return NULL;
        }
        struct session *w = session_warm_take(&d->sessions, t, pol);
        if (w)
                d->warm_wanted = true;
        return w;
}

void warm_queued(struct daemon *d, const struct tenant *t) {
        const struct sched_count *c = sched_tenant(&d->sched, t);
        if (!c->queued)
                return;
        /* It waits for a place that a warm sandbox holds: the sandbox
         * gives it up. One of its tenant's, for a place of its tenant's;
         * for one of the daemon's, one of its tenant's pool first, else
         * one of another tenant's. */
        if (c->running >= t->max_jobs) {
                if (t->warm)
                        sessions_warm_end_one(&d->sessions, t, "yielded");
                return;
        }
        if (d->sched.all.running >= d->sched.max_running && !(t->warm && sessions_warm_end_one(&d->sessions, t, "yielded")))
                sessions_warm_end_one(&d->sessions, NULL, "yielded");
}

bool warm_claimed(struct rjob *rj) {
        struct session *s = warm_take(rj->d, rj->j.tenant, &rj->j.req, &rj->j.pol, rj->profile_path);
        if (!s || session_warm_attach(s, rj) < 0)
                return false;
        session_warm_start(rj);
        return true;
}

unsigned warm_places(const struct daemon *d) {
        return d->warm ? sessions_warm(&d->sessions, NULL, NULL) : 0;
}

void warm_end_all(struct daemon *d, const char *reason) {
        unsigned n = 0;
        while (sessions_warm_end_one(&d->sessions, NULL, reason))
                n++;
        if (n)
                log_info("%u warm sandboxes end (%s)", n, reason);
}
