/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "audit.h"
#include "callbacks.h"
#include "cluster-internal.h"
#include "cluster-ops.h"
#include "conn.h"
#include "daemon.h"
#include "db.h"
#include "dispatch.h"
#include "jobevents.h"
#include "log.h"
#include "metrics.h"
#include "recover.h"
#include "runner.h"
#include "subscribe.h"
#include "tenant.h"
#include "warm.h"

/* How often the node looks at the database without being woken: its
 * heartbeat and leases (a third of the lease), expired leases, and the
 * waits whose notification a reconnection may have lost. */
#define TICK_MAX_MS 1000
#define PRUNE_EVERY_MS 60000


bool cluster_on(const struct daemon *d) {
        return d->cluster != NULL;
}

static const char *role_name(const struct daemon *d) {
        return config_cluster_role_name(d->cfg->cluster_role);
}

/* The ids of the claimed jobs this node holds (running, or their results
 * on their way), in *n; NULL: out of memory. */
static const char **held_here(const struct daemon *d, size_t *n) {
        const char **ids = calloc(d->jobs.n + 1, sizeof(*ids));
        struct list *pos, *tmp;
        *n = 0;
        if (!ids)
                return NULL;
        list_for_each_safe(pos, tmp, &d->jobs.all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                if (rj->cluster)
                        ids[(*n)++] = rj->j.id;
        }
        return ids;
}

/* ---- claims, leases, notifications ---- */

/* A row this node took but cannot make a job of (its request does not
 * parse here): ended at once, rather than held under a lease it would
 * renew for ever. */
static void refuse_row(struct cluster *cl, const char *id, unsigned attempt, const char *why) {
        json_t *rec = json_pack("{s:i, s:s, s:s, s:{s:s, s:s}, s:i}", "v", 1, "job", id, "state", "rejected", "error", "code",
                                E_INTERNAL, "message", why, "attempt", (int) attempt);
        _cleanup_free_ char *text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
        json_decref(rec);
        log_error("cluster: job %s (attempt %u): %s; recorded rejected", id, attempt, why);
        if (text)
                cdb_finish(&cl->db, id, attempt, text, "rejected", -1, NULL, 0, NULL, 0, NULL, 0);
}

static void on_claimed(void *arg, const char *id, const char *accept_json, unsigned attempt) {
        struct cluster *cl = arg;
        json_error_t je;
        /* Claimed again while an earlier attempt still runs here (this
         * node was stopped past its lease, and the job queued again): that
         * run goes on, under the new attempt. */
        struct rjob *here = jobs_find(&cl->d->jobs, id);
        cl->claimed++;
        if (here && here->cluster) {
                log_notice("cluster: job %s: claimed again (attempt %u) while its attempt %u still runs here: it goes on as "
                           "attempt %u",
                           id, attempt, here->cl_attempt, attempt);
                here->cl_attempt = attempt;
                return;
        }
        json_t *acc = json_loads(accept_json, 0, &je);
        /* in a warm sandbox when it may run in one, as on a daemon alone */
        struct rjob *rj = acc ? recover_claim(cl->d, acc, attempt, NULL, warm_claimed) : NULL;
        json_decref(acc);
        if (!rj) {
                refuse_row(cl, id, attempt, "its row in the cluster's database cannot be made a job of on this node");
                return;
        }
        log_debug("cluster: claimed job %s (attempt %u%s)", id, attempt, rj->warm ? ", in a warm sandbox" : "");
        /* queued: the place a warm sandbox holds, when it waits for one */
        if (rj->j.state == JOB_QUEUED && !rj->warm)
                warm_queued(cl->d, rj->j.tenant);
        /* This node's clients that wait for it hear it from here. */
        if (rj->j.state != JOB_DONE)
                subscribe_adopt_remote(&cl->waits, id, rj);
}

static void on_expired(void *arg, const char *id, const char *accept_json, unsigned attempt, const char *was_node) {
        struct cluster *cl = arg;
        char why[160];
        json_error_t je;
        snprintf(why, sizeof(why), "node %s, which ran it, stopped renewing its lease (it died, stopped or lost the database)",
                 was_node);
        json_t *acc = json_loads(accept_json, 0, &je);
        struct rjob *rj = acc ? recover_claim(cl->d, acc, attempt, why, NULL) : NULL;
        json_decref(acc);
        cl->expired++;
        if (!rj) {
                refuse_row(cl, id, attempt, why);
                return;
        }
        log_warning("cluster: job %s (attempt %u): %s; no retries left: recorded interrupted (E_RESTARTED)", id, attempt, why);
}

static void claim(struct cluster *cl) {
        struct daemon *d = cl->d;
        const struct config *cfg = d->cfg;
        cl->claim_wanted = false;
        if (cfg->cluster_role == CLUSTER_API || cl->draining || d->stopping || !cdb_up(&cl->db))
                return;
        /* The places of warm sandboxes not taken count as free: a job
         * claimed for one takes the sandbox or makes it end (warm.c). */
        unsigned busy = d->sched.all.running + d->sched.all.queued, room = (unsigned) cfg->max_jobs + warm_places(d);
        /* no room: what may be queued is claimed when a job here ends */
        if (busy >= room) {
                cl->queue_left = true;
                return;
        }
        /* Not a job whose row this node is writing: its client, who may
         * follow it here, has not heard of it yet (its row's commit can
         * wake this claim before the writer says it is done). */
        _cleanup_free_ const char **skip = calloc(cl->n_inserting + 1, sizeof(*skip));
        size_t n_skip = 0;
        struct list *pos, *tmp;
        if (!skip) {
                cl->claim_wanted = true; /* the next turn */
                return;
        }
        list_for_each_safe(pos, tmp, &cl->inserting)
                skip[n_skip++] = cluster_inserting_id(pos);
        unsigned left = 0, runnable = 0;
        int n = cdb_claim(&cl->db, room - busy, cfg->cluster_lease_ms, skip, n_skip, &left, &runnable, on_claimed, cl);
        if (n >= 0) {
                cl->queue_left = left > 0;
                /* none left that this node could run: its warm pools may
                 * be made (warm_fill asks cluster_may_warm) */
                if (!runnable && (cl->runnable_left || !cl->queue_seen))
                        d->warm_wanted = true;
                cl->runnable_left = runnable;
                cl->queue_seen = true;
        }
        /* a full claim: there may be more */
        if (n > 0 && (unsigned) n == room - busy)
                cl->claim_wanted = true;
}

/* The end of a job some of this node's clients wait for. */
void cluster_deliver(struct cluster *cl, const char *id) {
        struct cdb_job j;
        if (cdb_get(&cl->db, id, &j) < 0)
                return;
        json_error_t je;
        json_t *rec = j.record ? json_loads(j.record, 0, &je) : NULL;
        if (rec)
                subscribe_remote_end(&cl->waits, id, rec, j.out, j.out_len, j.err, j.err_len);
        json_decref(rec);
        cdb_job_free(&j);
}

static bool waited_for(struct cluster *cl, const char *id) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cl->waits)
                if (streq(list_entry(pos, struct job_watch, job_link)->job, id))
                        return true;
        return false;
}

void cluster_set_draining(struct cluster *cl, bool draining) {
        if (draining == cl->draining)
                return;
        log_notice("cluster: node %s %s", cl->d->cfg->cluster_node,
                   draining ? "drains: it finishes its jobs and claims no more" : "claims jobs again");
        cl->draining = draining;
        cl->claim_wanted = !draining;
        /* no job comes for a draining node's warm sandboxes: they end (and
         * are made again once it claims again) */
        if (draining)
                warm_end_all(cl->d, "drained");
        else
                cl->d->warm_wanted = true;
}

bool cluster_may_warm(const struct daemon *d) {
        const struct cluster *cl = d->cluster;
        return cl && d->cfg->cluster_role != CLUSTER_API && !cl->draining && cdb_up(&cl->db) && cl->queue_seen &&
               !cl->runnable_left;
}

/* Notifications read now: those of the jobs this node's writer queued are
 * not (their claims follow the writer's answer: cluster-query.c). The
 * writer's server process changes when it connects again (another node's
 * may then take its number: the tick still claims every second). */
static void on_notify(void *arg, const char *channel, const char *payload);

static int notifies(struct cluster *cl, bool read) {
        cl->db.quiet_pid = __atomic_load_n(&cl->writer.db.backend_pid, __ATOMIC_RELAXED);
        return cdb_notifies(&cl->db, read, on_notify, cl);
}

static void on_notify(void *arg, const char *channel, const char *payload) {
        struct cluster *cl = arg;
        const char *me = cl->d->cfg->cluster_node;
        size_t n = strlen(me);
        if (streq(channel, "queue"))
                cl->claim_wanted = true;
        else if (streq(channel, "drain") && !strncmp(payload, me, n) && payload[n] == ':')
                cluster_set_draining(cl, payload[n + 1] == '1');
        else if (streq(channel, "done") && waited_for(cl, payload))
                cluster_deliver(cl, payload);
        else if (streq(channel, "cancel")) {
                struct rjob *rj = jobs_find(&cl->d->jobs, payload);
                if (rj && rj->cluster && rj->j.state != JOB_DONE) {
                        log_info("cluster: job %s: cancelled through another node", payload);
                        runner_stop(rj, JEV_CANCEL);
                }
        }
}

static void on_db(struct source *s, uint32_t events);

/* The event loop watches the socket of the connection there is now (a
 * closed one's number may be another's since). */
static void watch_db(struct cluster *cl) {
        int fd = cdb_fd(&cl->db);
        if (cl->db_src_on && (fd < 0 || cl->db_src_gen != cl->db.gen)) {
                loop_del(&cl->db_src);
                cl->db_src_on = false;
        }
        if (fd >= 0 && !cl->db_src_on) {
                cl->db_src_gen = cl->db.gen;
                cl->db_src_on = loop_add(&cl->db_src, fd, EPOLLIN, on_db) == 0;
        }
}

static void on_db(struct source *s, uint32_t events) {
        struct cluster *cl = container_of(s, struct cluster, db_src);
        (void) events;
        notifies(cl, true);
        watch_db(cl);
}

static void give_tenants(struct cluster *cl) {
        const struct config *cfg = cl->d->cfg;
        const char **names = calloc(cfg->n_tenants + 1, sizeof(*names));
        unsigned *max = calloc(cfg->n_tenants + 1, sizeof(*max));
        size_t n = 0;
        if (names && max) {
                for (size_t i = 0; i < cfg->n_tenants; i++, n++) {
                        names[n] = cfg->tenants[i].name;
                        max[n] = (unsigned) cfg->tenants[i].max_jobs;
                }
                if (cfg->anonymous) {
                        names[n] = cfg->anonymous->name;
                        max[n++] = (unsigned) cfg->anonymous->max_jobs;
                }
                cdb_set_tenants(&cl->db, names, max, n);
        }
        free(names);
        free(max);
}

/* The heartbeat: this node's row, its leases renewed, and whether it is
 * to drain. */
static void beat(struct cluster *cl, uint64_t now) {
        struct daemon *d = cl->d;
        const struct config *cfg = d->cfg;
        bool draining = cl->draining;
        size_t n;
        _cleanup_free_ const char **held = held_here(d, &n);
        if (!held)
                return; /* (the next tick) */
        cl->next_beat_ms = now + cfg->cluster_lease_ms / 3;
        if (cdb_heartbeat(&cl->db, role_name(d), (unsigned) cfg->max_jobs, held, n, cfg->cluster_lease_ms, cfg->cluster_advertise,
                          &draining) == 0)
                cluster_set_draining(cl, draining);
}

/* Just connected: the leases of what this node ran before its start end
 * (but for outcomes being written), and the tenants' limits are given. */
static void connected(struct cluster *cl) {
        struct daemon *d = cl->d;
        log_notice("cluster: node %s (role %s) connected to the database", d->cfg->cluster_node, role_name(d));
        cl->queue_seen = false; /* (no warm sandbox is made before a claim has seen the queue) */
        if (!cl->released) {
                size_t n;
                _cleanup_free_ const char **keep = held_here(d, &n);
                if (keep && cdb_release_node(&cl->db, keep, n) == 0)
                        cl->released = true;
        }
        cluster_cb_taken(cl);
        give_tenants(cl);
        beat(cl, now_mono_ms());
        cl->claim_wanted = true;
}

void cluster_ensure(struct cluster *cl) {
        if (cdb_ensure(&cl->db, now_mono_ms()) == 1)
                connected(cl);
}

struct ids {
        char (*id)[24];
        size_t n, cap;
};

static void ids_add(void *arg, const char *id) {
        struct ids *a = arg;
        if (a->n == a->cap) {
                size_t cap = a->cap ? a->cap * 2 : 16;
                char(*m)[24] = realloc(a->id, cap * sizeof(*m));
                if (!m)
                        return;
                a->id = m;
                a->cap = cap;
        }
        snprintf(a->id[a->n++], 24, "%s", id);
}

static void recheck_waits(struct cluster *cl) {
        struct ids waited = { 0 }, done = { 0 };
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cl->waits)
                ids_add(&waited, list_entry(pos, struct job_watch, job_link)->job);
        const char **v = calloc(waited.n + 1, sizeof(*v));
        for (size_t i = 0; v && i < waited.n; i++)
                v[i] = waited.id[i];
        if (v && cdb_done_among(&cl->db, v, waited.n, ids_add, &done) == 0)
                for (size_t i = 0; i < done.n; i++)
                        if (waited_for(cl, done.id[i]))
                                cluster_deliver(cl, done.id[i]);
        free(v);
        free(waited.id);
        free(done.id);
}

static void tick(struct cluster *cl) {
        struct daemon *d = cl->d;
        const struct config *cfg = d->cfg;
        uint64_t now = now_mono_ms();
        int r = cdb_ensure(&cl->db, now);
        if (r == -EPROTO && !cl->refused_schema) {
                log_error("cluster: %s", cl->db.err);
                cl->refused_schema = true;
        }
        if (r == 1)
                connected(cl);
        watch_db(cl);
        if (!cdb_up(&cl->db))
                return;
        if (now >= cl->next_beat_ms)
                beat(cl, now);
        /* Others' leases are taken only once this node has been connected
         * for a whole lease: after the database's outage every live node
         * has reconnected and renewed its own by then (leases are not
         * renewed while it is down). Looked at every tick, so that a dead
         * node's jobs run again at most a tick after its leases end. */
        unsigned requeued = 0;
        if (now >= cl->db.up_since_ms + cfg->cluster_lease_ms) {
                if (cdb_expire(&cl->db, cfg->cluster_lease_ms, &requeued, on_expired, cl) == 0 && requeued) {
                        cl->requeued += requeued;
                        log_notice("cluster: %u jobs whose nodes stopped renewing their leases are queued again", requeued);
                }
                cluster_cb_adopt(cl);
        }
        cluster_cb_flush(cl);
        if (now >= cl->next_prune_ms) {
                cl->next_prune_ms = now + PRUNE_EVERY_MS;
                long n = cfg->retention_ms ? cdb_prune(&cl->db, cfg->retention_ms) : 0;
                if (n > 0)
                        log_info("cluster: %ld ended jobs past their retention deleted from the database", n);
        }
        /* Waits whose "done" may have been missed (a reconnection). */
        if (!list_empty(&cl->waits))
                recheck_waits(cl);
        claim(cl);
}

static void on_tick(struct source *s, uint32_t events) {
        struct cluster *cl = container_of(s, struct cluster, tick_src);
        uint64_t n;
        (void) events;
        if (read(cl->tick_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                log_debug("cluster: timer: %s", strerror(errno));
        tick(cl);
}

void cluster_idle(struct daemon *d) {
        struct cluster *cl = d->cluster;
        if (!cl)
                return;
        /* Notifications that came in with this turn's answers (our own
         * "queue" and "done" among them) are already read: the socket
         * will not say so. */
        for (int i = 0; i < 16; i++) {
                int n = notifies(cl, false);
                bool claimed = cl->claim_wanted && cdb_up(&cl->db);
                if (claimed)
                        claim(cl);
                /* what the claim's or a delivery's answers brought */
                if (!n && !claimed)
                        break;
        }
}

/* ---- the results of claimed jobs ---- */

/* A synced batch's claimed jobs on their way to the database (the
 * writer's thread): what each statement needs, copied, and each one's
 * verdict. */
struct end_one {
        struct rjob *rj;
        char id[24];
        char state[24];
        unsigned attempt;
        int exit_code;
        char *text;                /* the record */
        char *out, *err;           /* the start of its output */
        size_t ol, el;
        const char *cb;            /* its callback's entry (the job's, which waits for this) */
        size_t cb_len;
        int r;
};

struct ends {
        struct cdb_write w;
        struct cluster *cl;
        struct commit_holder **held; /* replies the batch held: held until this is written */
        size_t n, n_held;
        bool local_ok;
        struct end_one one[];
};

static int ends_run(struct cdb *db, struct cdb_write *w) {
        struct ends *e = container_of(w, struct ends, w);
        int worst = 0;
        for (size_t i = 0; i < e->n; i++) {
                struct end_one *o = &e->one[i];
                if (!o->text) {
                        o->r = -EAGAIN; /* out of memory: written again */
                        continue;
                }
                o->r = cdb_finish(db, o->id, o->attempt, o->text, o->state, o->exit_code, o->out, o->ol, o->err, o->el, o->cb,
                                  o->cb_len);
                if (o->r == -EAGAIN || o->r == -EIO)
                        worst = worst ?: o->r;
                if (o->r == -EAGAIN && !cdb_up(db))
                        break;
        }
        return worst;
}

/* A result the cluster refused: another node holds the job now. */
static void fenced(struct cluster *cl, struct rjob *rj) {
        const struct job *j = &rj->j;
        cl->fenced++;
        /* nor its callback: the result that stands has its own */
        rj->cb_fenced = true;
        log_warning(JOB_LOG ": its result (attempt %u) is refused by the cluster: its lease had passed to another node, "
                    "whose result stands",
                    JOB_LOG_ARGS(j), rj->cl_attempt);
        /* its clients here hear the result that stands */
        subscribe_release_remote(rj, &cl->waits);
        cluster_deliver(cl, j->id);
}

static void ends_free(struct ends *e) {
        for (size_t i = 0; i < e->n; i++) {
                free(e->one[i].text);
                free(e->one[i].out);
                free(e->one[i].err);
        }
        free(e->held);
        free(e);
}

static void ends_done(struct cdb_write *w, int r) {
        struct ends *e = container_of(w, struct ends, w);
        struct cluster *cl = e->cl;
        struct daemon *d = cl->d;
        bool ok = e->local_ok;
        for (size_t i = 0; r != -ECANCELED && i < e->n; i++) {
                struct end_one *o = &e->one[i];
                int v = r < 0 ? r : o->r;
                if (v == -ESTALE) {
                        fenced(cl, o->rj);
                        v = 0;
                }
                if (v < 0)
                        ok = false;
                commit_cluster_ended(d, o->rj, v < 0 ? -EAGAIN : 0);
        }
        for (size_t i = 0; i < e->n_held; i++)
                e->held[i]->release(e->held[i]);
        /* their places are free: claimed at once only when the last claim
         * left jobs queued (else a queue notification, or the tick, wakes
         * it) */
        if (r != -ECANCELED) {
                cl->claim_wanted = cl->queue_left;
                commit_cluster_settled(d, ok);
        }
        ends_free(e);
}

static void end_prepare(struct daemon *d, struct end_one *o, struct rjob *rj) {
        const struct job *j = &rj->j;
        json_t *st = json_object_get(rj->rec, "state");
        uint64_t size;
        o->rj = rj;
        snprintf(o->id, sizeof(o->id), "%s", j->id);
        snprintf(o->state, sizeof(o->state), "%s", json_string_value(st) ?: job_outcome_name(j->outcome));
        o->attempt = rj->cl_attempt;
        o->exit_code = j->exit_code;
        o->text = rj->rec ? json_dumps(rj->rec, JSON_COMPACT) : NULL;
        o->cb = rj->cb_text;
        o->cb_len = rj->cb_len;
        /* the start of its output, as the database keeps it (none when
         * it cannot be read: the record says what there was) */
        if (logs_read_stream(d->dirs.results_fd, j->id, 0, 0, d->cfg->cluster_output_max, &o->out, &o->ol, &size) < 0)
                o->ol = 0;
        if (logs_read_stream(d->dirs.results_fd, j->id, 1, 0, d->cfg->cluster_output_max, &o->err, &o->el, &size) < 0)
                o->el = 0;
}

static void jobs_end(struct daemon *d, struct rjob **rjs, size_t n, struct commit_holder **held, size_t n_held,
                     bool local_ok) {
        struct cluster *cl = d->cluster;
        struct ends *e = calloc(1, sizeof(*e) + n * sizeof(e->one[0]));
        struct commit_holder **h = n_held ? calloc(n_held, sizeof(*h)) : NULL;
        if (!e || (n_held && !h)) {
                free(e);
                free(h);
                for (size_t i = 0; i < n; i++)
                        commit_cluster_ended(d, rjs[i], -EAGAIN);
                commit_cluster_settled(d, false);
                return;
        }
        e->cl = cl;
        e->n = n;
        e->local_ok = local_ok;
        e->held = h;
        e->n_held = n_held;
        for (size_t i = 0; i < n_held; i++) {
                h[i] = held[i];
                h[i]->hold(h[i]);
        }
        for (size_t i = 0; i < n; i++)
                end_prepare(d, &e->one[i], rjs[i]);
        e->w.items = (unsigned) n;
        e->w.run = ends_run;
        e->w.done = ends_done;
        cdb_writer_submit(&cl->writer, &e->w);
}

void cluster_gauges(const struct daemon *d, struct metrics_gauges *g) {
        const struct cluster *cl = d->cluster;
        if (!cl)
                return;
        g->cluster = true;
        g->cl_up = cdb_up(&cl->db);
        g->cl_claimed = cl->claimed;
        g->cl_fenced = cl->fenced;
        g->cl_unavailable = cl->unavailable;
        g->cl_requeued = cl->requeued;
        g->cl_expired = cl->expired;
        g->cl_cb_adopted = cl->cb_adopted;
        g->cl_writes = cl->writer.writes;
        g->cl_write_batches = cl->writer.batches;
}

/* ---- start and end ---- */

static void on_writer(struct source *s, uint32_t events) {
        struct cluster *cl = container_of(s, struct cluster, writer_src);
        (void) events;
        cdb_writer_complete(&cl->writer);
}

int cluster_init(struct daemon *d, struct sbx_error *err) {
        const struct config *cfg = d->cfg;
        if (!cfg->cluster_db)
                return 0;
        struct cluster *cl = calloc(1, sizeof(*cl));
        if (!cl)
                return sbx_error_set(err, ENOMEM, "cluster");
        cl->d = d;
        list_init(&cl->waits);
        list_init(&cl->inserting);
        cl->tick_fd = -1;
        /* Down, a node tries again at least every third of a lease, so
         * that after an outage every live node is back to renew its
         * leases before any node may take them (tick()). */
        cdb_init(&cl->db, cfg->cluster_db, cfg->cluster_node, (unsigned) cfg->cluster_timeout_ms,
                 (unsigned) (cfg->cluster_lease_ms / 3));
        int r = cdb_ensure(&cl->db, now_mono_ms());
        if (r == -EPROTO) {
                sbx_error_msg(err, EPROTO, "[cluster] database: %s", cl->db.err);
                free(cl);
                return -EPROTO;
        }
        if (r < 0)
                log_warning("cluster: the database does not answer (%s): new jobs are refused (E_UNAVAILABLE) until it does",
                            cl->db.err);
        uint64_t tick_ms = cfg->cluster_lease_ms / 3 < TICK_MAX_MS ? cfg->cluster_lease_ms / 3 : TICK_MAX_MS;
        cl->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct itimerspec its = { .it_interval = { (time_t) (tick_ms / 1000), (long) (tick_ms % 1000) * 1000000 } };
        its.it_value = its.it_interval;
        if (cl->tick_fd < 0 || timerfd_settime(cl->tick_fd, 0, &its, NULL) < 0 ||
            loop_add(&cl->tick_src, cl->tick_fd, EPOLLIN, on_tick) < 0) {
                r = -errno;
                if (cl->tick_fd >= 0)
                        close(cl->tick_fd);
                cdb_close(&cl->db);
                free(cl);
                return sbx_error_set(err, -r, "cluster: timer");
        }
        int wfd = cdb_writer_start(&cl->writer, cfg->cluster_db, cfg->cluster_node, (unsigned) cfg->cluster_timeout_ms,
                                   (unsigned) (cfg->cluster_lease_ms / 3));
        if (wfd < 0 || loop_add(&cl->writer_src, wfd, EPOLLIN, on_writer) < 0) {
                r = wfd < 0 ? wfd : -errno;
                if (wfd >= 0)
                        cdb_writer_stop(&cl->writer);
                loop_del(&cl->tick_src);
                close(cl->tick_fd);
                cdb_close(&cl->db);
                free(cl);
                return sbx_error_set(err, -r, "cluster: the database's writer");
        }
        cl->writer_on = true;
        /* sessions' ends, for their rows (cluster-sessions.c) */
        if (job_listen(&cluster_session_listener) < 0)
                log_warning("cluster: no room to hear sessions' ends: other nodes will not learn that they ended");
        d->cluster = cl;
        d->cluster_end = jobs_end;
        cluster_cb_start(cl);
        if (r == 1)
                connected(cl);
        /* the deliveries from before, less those taken over (when the
         * database answered: if not, some may go out twice) */
        callbacks_start(&d->cb);
        watch_db(cl);
        log_notice("cluster: node %s, role %s, lease %" PRIu64 " ms", cfg->cluster_node, role_name(d), cfg->cluster_lease_ms);
        return 0;
}

void cluster_done(struct daemon *d) {
        struct cluster *cl = d->cluster;
        if (!cl)
                return;
        if (cl->db_src_on)
                loop_del(&cl->db_src);
        loop_del(&cl->tick_src);
        close(cl->tick_fd);
        if (cl->writer_on) {
                loop_del(&cl->writer_src);
                cdb_writer_stop(&cl->writer);
        }
        cluster_cb_flush(cl);
        cluster_cb_stop(cl);
        cdb_close(&cl->db);
        d->cluster = NULL;
        d->cluster_end = NULL;
        free(cl);
}
