/* SPDX-License-Identifier: Apache-2.0 */
/* Callbacks: start-up (the directories and what they hold), stopping, and
 * what clients ask: a job's delivery state, callbacks.list, .retry and
 * .drop, and the metrics' gauges. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "callback-thread.h"
#include "callbacks-internal.h"
#include "log.h"
#include "metrics.h"

static int open_dir(int at, const char *name, int *ret) {
        if (mkdirat(at, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        *ret = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return *ret < 0 ? -errno : 0;
}

static int cmp_items(const void *a, const void *b) {
        const struct outbox_entry *x = a, *y = b;
        if (x->created_ms != y->created_ms)
                return x->created_ms < y->created_ms ? -1 : 1;
        return strcmp(x->job, y->job);
}

int cb_scan_dir(int dirfd, const char *suffix, struct outbox_entry **ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *dir = NULL;
        *ret = NULL;
        *ret_n = 0;
        int r = opendir_dup(dirfd, &dir);
        if (r < 0)
                return r;
        struct outbox_entry *v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        size_t sl = strlen(suffix);
        while ((de = readdir(dir))) {
                size_t l = strlen(de->d_name);
                if (l <= sl || de->d_name[0] == '.' || !streq(de->d_name + l - sl, suffix))
                        continue;
                _cleanup_free_ char *text = NULL;
                size_t len;
                struct outbox_entry e;
                if (read_file_at(dirfd, de->d_name, OUTBOX_MAX_ENTRY, &text, &len) < 0 ||
                    outbox_entry_parse(text, len, &e) < 0) {
                        log_warning("callbacks: %s is not a whole outbox entry; left as it is", de->d_name);
                        continue;
                }
                cb_item_drop_body(&e);
                if (n == cap) {
                        struct outbox_entry *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*nv));
                        if (!nv) {
                                outbox_entry_free(&e);
                                r = -ENOMEM;
                                break;
                        }
                        v = nv;
                }
                v[n++] = e;
        }
        if (n)
                qsort(v, n, sizeof(*v), cmp_items);
        *ret = v;
        *ret_n = n;
        return r;
}

/* Every entry of a directory ending in suffix, oldest first, as items in
 * state, without their bodies (read again if they are retried). */
static int load_dir(struct callbacks *cb, int dirfd, const char *suffix, int state) {
        struct outbox_entry *v;
        size_t n;
        int r = cb_scan_dir(dirfd, suffix, &v, &n);
        for (size_t i = 0; i < n; i++)
                if (r < 0 || !cb_item_new(cb, &v[i], state)) {
                        outbox_entry_free(&v[i]);
                        r = -ENOMEM;
                }
        free(v);
        return r;
}

static int start_sources(struct callbacks *cb) {
        int efd = cb_thread_start(cb->outbox_fd, cb->dead_fd, &cb->th);
        if (efd < 0)
                return efd;
        int r = loop_add(&cb->done_src, efd, EPOLLIN, cb_on_done);
        if (r < 0)
                return r;
        cb->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (cb->timer_fd < 0)
                return -errno;
        r = loop_add(&cb->timer_src, cb->timer_fd, EPOLLIN, cb_on_timer);
        return r < 0 ? r : cb_progress_init(cb);
}

int callbacks_init(struct callbacks *cb, const struct config *cfg, int state_fd, struct sbx_error *err) {
        cb->cfg = cfg;
        list_init(&cb->items);
        list_init(&cb->queues);
        list_init(&cb->progs);
        list_init(&cb->tenants);
        list_init(&cb->lanes);
        cb->dir_fd = cb->outbox_fd = cb->dead_fd = cb->timer_fd = cb->queue_fd = cb->prog_timer_fd = -1;
        /* Reference-counted by libcurl (bundles' fetches take one too);
         * before the thread starts, as libcurl asks. */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return sbx_error_msg(err, EIO, "callbacks: libcurl initialisation failed");
        cb->curl_inited = true;
        int r = open_dir(state_fd, "callbacks", &cb->dir_fd);
        if (r == 0)
                r = open_dir(cb->dir_fd, "outbox", &cb->outbox_fd);
        if (r == 0)
                r = open_dir(cb->dir_fd, "dead", &cb->dead_fd);
        if (r == 0)
                r = cb_queue_init(cb);
        if (r < 0)
                return sbx_error_set(err, r, "state_dir %s: callbacks", cfg->state_dir);
        if ((r = cb_queue_load(cb)) < 0 || (r = load_dir(cb, cb->dead_fd, ".json", CB_DEAD)) < 0 ||
            (r = load_dir(cb, cb->dead_fd, ".dropped", CB_DROPPED)) < 0)
                return sbx_error_set(err, r, "state_dir %s: callbacks", cfg->state_dir);
        if ((r = start_sources(cb)) < 0)
                return sbx_error_set(err, r, "callbacks");
        if (cb->n_pending)
                log_notice("callbacks: %" PRIu64 " deliveries pending from before (%" PRIu64 " of them queued on disk); delivering",
                           cb->n_pending + cb->n_disk, cb->n_disk);
        /* in cluster mode once the database said which of them another
         * node took over meanwhile (callbacks_start()) */
        if (!cfg->cluster_db)
                cb_dispatch(cb);
        return 0;
}

void callbacks_start(struct callbacks *cb) {
        cb_dispatch(cb);
}

static void drop_task(struct cb_task *k) {
        if (k->op == CB_OP_POST || k->op == CB_OP_PROGRESS) {
                if (k->h)
                        curl_easy_cleanup(k->h);
                curl_slist_free_all(k->hdrs);
                k->h = NULL;
                k->hdrs = NULL;
        }
}

void callbacks_done(struct callbacks *cb) {
        struct list *pos, *tmp;
        if (!cb->cfg)
                return;
        /* Posts in flight are abandoned: their entries stay in the outbox
         * and go out after the next start. */
        cb_thread_stop(cb->th, drop_task);
        cb->th = NULL;
        cb_progress_free_all(cb);
        if (cb->done_src.fd > 0)
                loop_del(&cb->done_src);
        if (cb->timer_fd >= 0) {
                if (cb->timer_src.fd > 0)
                        loop_del(&cb->timer_src);
                close(cb->timer_fd);
        }
        list_for_each_safe(pos, tmp, &cb->items) {
                struct cb_item *it = list_entry(pos, struct cb_item, link);
                list_del(pos);
                cb_item_free(it);
        }
        cb_queue_done(cb);
        cb_tenants_free(cb); /* after the items and progress posts that count in them */
        int *fds[] = { &cb->dir_fd, &cb->outbox_fd, &cb->dead_fd };
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
                if (*fds[i] >= 0)
                        close(*fds[i]);
        if (cb->curl_inited)
                curl_global_cleanup();
        cb->cfg = NULL;
}

static json_t *item_json(const struct cb_item *it) {
        return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o}", "job", it->e.job, "delivery", it->e.delivery, "url", it->e.url,
                         "state", cb_state_name(it->state), "attempts", (json_int_t) it->attempts, "created",
                         proto_time(it->e.created_ms), "last_error",
                         it->last_error[0] ? json_string(it->last_error) : json_null(), "last_status",
                         it->last_status ? json_integer(it->last_status) : json_null());
}

json_t *callbacks_state(struct callbacks *cb, const char *job, json_t *rec_cb) {
        const struct cb_item *it = cb->cfg ? cb_find(cb, job) : NULL;
        if (it)
                return item_json(it);
        /* queued in the outbox, in the dead letters only, or delivered */
        const char *state = !cb->cfg ? "delivered" : cb_queue_holds(cb, job) ? "pending" : cb_queue_kept_state(cb, job);
        return json_pack("{s:s, s:O, s:O, s:s}", "job", job, "delivery", json_object_get(rec_cb, "delivery") ?: json_null(), "url",
                         json_object_get(rec_cb, "url") ?: json_null(), "state", state ?: "delivered");
}

void callbacks_gauges(const struct callbacks *cb, struct metrics_gauges *g) {
        g->callbacks = true;
        g->cb_backlog = cb->n_pending + cb->n_disk;
        g->cb_in_memory = cb->n_pending;
        g->cb_dead = cb->n_dead + cb->n_dead_disk;
        g->cb_delivered = cb->delivered;
        g->cb_attempt_failures = cb->attempt_failures;
        g->cb_dead_lettered = cb->dead_lettered;
        g->cb_progress_delivered = cb->prog_delivered;
        g->cb_progress_failed = cb->prog_failed;
        g->cb_progress_behind = cb->prog_behind;
}

static json_t *op_list(struct callbacks *cb, const char *tenant, const struct request *req) {
        json_t *arr = json_array();
        struct list *pos, *tmp;
        uint64_t n = 0;
        list_for_each_safe(pos, tmp, &cb->items) {
                const struct cb_item *it = list_entry(pos, struct cb_item, link);
                if (!streq(it->e.tenant, tenant) || (req->state && !streq(req->state, cb_state_name(it->state))))
                        continue;
                if (n >= req->limit)
                        break;
                json_array_append_new(arr, item_json(it));
                n++;
        }
        /* then the ones queued in the outbox only, after every one held */
        if (!req->state || streq(req->state, "pending"))
                cb_queue_list(cb, tenant, arr, &n, req->limit);
        /* and those in the dead letters only */
        if (!req->state || !streq(req->state, "pending"))
                cb_queue_list_kept(cb, tenant, req->state, arr, &n, req->limit);
        return proto_ok(req->tag, json_pack("{s:o}", "callbacks", arr));
}

/* A dead or dropped delivery's body, from its file in the dead letters. */
static int read_body(struct callbacks *cb, struct cb_item *it) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        struct outbox_entry e;
        if (it->e.body)
                return 0;
        int r = read_file_at(cb->dead_fd, it->state == CB_DEAD ? it->task.name : it->task.dropped, OUTBOX_MAX_ENTRY, &text, &len);
        if (r < 0)
                return r;
        if ((r = outbox_entry_parse(text, len, &e)) < 0)
                return r;
        if (!streq(e.job, it->e.job) || !streq(e.delivery, it->e.delivery)) {
                outbox_entry_free(&e);
                return -EBADMSG;
        }
        it->e.body = TAKE_PTR(e.body);
        it->e.body_len = e.body_len;
        outbox_entry_free(&e);
        return 0;
}

/* A dead or dropped delivery goes back to the outbox with a new window of
 * callback_max_age; a pending one is tried now. */
static json_t *op_retry(struct callbacks *cb, const struct request *req, struct cb_item *it, bool *acted) {
        int r;
        if (it->state == CB_PENDING) {
                it->next_ms = now_mono_ms();
                it->asked = true;
                cb_dispatch(cb);
        } else if ((r = read_body(cb, it)) < 0) {
                return proto_error(req->tag, E_INTERNAL, "the callback of job %s: cannot read it back from the dead letters: %s",
                                   it->e.job, strerror(-r));
        } else {
                struct outbox_entry copy = it->e;
                copy.created_ms = now_real_ms();
                free(it->task.text);
                it->task.text = outbox_entry_text(&copy, &it->task.text_len);
                if (!it->task.text)
                        return proto_error(req->tag, E_INTERNAL, "out of memory");
                it->task.from_dead = it->state == CB_DEAD;
                it->e.created_ms = copy.created_ms;
                cb_set_state(cb, it, CB_MOVING);
                cb_file_task(cb, it, CB_OP_RESTORE);
        }
        *acted = true;
        return proto_ok(req->tag, json_pack("{s:s, s:s, s:s}", "job", it->e.job, "delivery", it->e.delivery, "state", "pending"));
}

static json_t *op_drop(struct callbacks *cb, const struct request *req, struct cb_item *it, bool *acted) {
        if (it->state == CB_DROPPED)
                return proto_ok(req->tag, json_pack("{s:s, s:s}", "job", it->e.job, "state", "dropped"));
        it->task.from_dead = it->state == CB_DEAD;
        cb_set_state(cb, it, CB_MOVING);
        cb_file_task(cb, it, CB_OP_DROP);
        *acted = true;
        return proto_ok(req->tag, json_pack("{s:s, s:s, s:s}", "job", it->e.job, "delivery", it->e.delivery, "state", "dropped"));
}

json_t *callbacks_op(struct callbacks *cb, const char *tenant, const struct request *req, bool live, bool *acted) {
        *acted = false;
        if (req->op == REQ_CB_LIST)
                return op_list(cb, tenant, req);
        struct cb_item *it = cb_find(cb, req->job);
        /* a queued one is read into memory to be acted on (a job still
         * running has none: every entry of a job whose end was told is
         * held or queued, see callbacks_add) */
        if (!it && !live)
                it = cb_queue_promote(cb, req->job, tenant);
        if (!it)
                it = cb_queue_revive(cb, req->job, tenant);
        if (!it || !streq(it->e.tenant, tenant))
                return proto_error(req->tag, E_NOT_FOUND, "job %s has no callback delivery in the outbox or the dead letters",
                                   req->job);
        if (it->state == CB_INFLIGHT || it->state == CB_MOVING)
                return proto_error(req->tag, E_CONFLICT, "the callback of job %s is being %s now; ask again", req->job,
                                   it->state == CB_INFLIGHT ? "delivered" : "moved");
        return req->op == REQ_CB_RETRY ? op_retry(cb, req, it, acted) : op_drop(cb, req, it, acted);
}
