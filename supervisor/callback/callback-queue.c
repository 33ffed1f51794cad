/* SPDX-License-Identifier: Apache-2.0 */
/* Callback deliveries beyond callback_memory_max. Each tenant has at most
 * that many pending deliveries in memory; the ones after them are in the
 * outbox only, named in order in the tenant's queue file
 * (STATE/callbacks/queue/TENANT, one JSON line each: job, delivery, url,
 * created_ms), and are read back from the outbox, oldest first, as the ones
 * in memory are delivered or given up; the callbacks' thread reads them
 * (callback-thread.c), not the event loop. A tenant whose receiver is down
 * fills only its own share. The queue files are an index and not synced:
 * the outbox is what is durable, and the queues are made again from it at
 * each start.
 *
 * Dead and dropped deliveries are held the same way: at most
 * callback_memory_max of a tenant in memory (without their bodies), the
 * older ones in the dead letters only, named in .kept.TENANT in the same
 * directory for callbacks.list; the file a job has in the dead letters
 * says which state it is in. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "callbacks-internal.h"
#include "conf.h"
#include "log.h"

/* A line: the URL, each byte escaped to two at worst, and the rest. */
#define LINE_MAX_LEN (2 * CONFIG_CALLBACK_MAX_URL + 512)
/* Deliveries one task of the thread reads back at most. */
#define LOAD_MAX 256

/* One line read back by the thread. */
struct qgot {
        char job[24];           /* empty: the line was not an entry */
        int err;                /* 0: e is its outbox entry; -ENOENT: there is none now; else unreadable */
        struct outbox_entry e;
};

struct cb_queue {
        struct list link;
        char tenant[72];
        int fd;
        uint64_t off, end;    /* the next line to read back; the bytes written */
        uint64_t n_disk;      /* deliveries named from off on, not promoted */
        uint64_t n_mem;       /* the tenant's pending deliveries in memory */
        uint64_t n_kept;      /* its dead and dropped ones in memory */
        int kept_fd;          /* the index of those kept on disk only (callback-dead.c) */
        uint64_t kept_end;
        char (*promoted)[24]; /* jobs named from off on that an operator had read in */
        size_t n_promoted;
        /* reading back (in the thread while loading) */
        struct cb_task load;
        bool loading;
        int outbox_fd;
        size_t want;                /* lines to read at most */
        uint64_t load_off, load_end; /* from; to (what was written then); then past what was read */
        struct qgot *got;
        size_t n_got;
        int load_err;               /* the queue file could not be read on */
};

/* Was the job promoted? Then it is forgotten (its line was reached). */
static bool take_promoted(struct cb_queue *q, const char *job) {
        for (size_t i = 0; i < q->n_promoted; i++)
                if (streq(q->promoted[i], job)) {
                        memmove(q->promoted[i], q->promoted[--q->n_promoted], sizeof(q->promoted[i]));
                        return true;
                }
        return false;
}

void cb_entry_name(const char *job, char name[static 40]) {
        snprintf(name, 40, "%s.json", job);
}

int cb_queue_init(struct callbacks *cb) {
        if (mkdirat(cb->dir_fd, "queue", 0700) < 0 && errno != EEXIST)
                return -errno;
        cb->queue_fd = openat(cb->dir_fd, "queue", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cb->queue_fd < 0)
                return -errno;
        /* The last run's queues: the outbox says it all again. */
        _cleanup_closedir_ DIR *dir = NULL;
        int r = opendir_dup(cb->queue_fd, &dir);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((de = readdir(dir)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && unlinkat(cb->queue_fd, de->d_name, 0) < 0)
                        return -errno;
        return 0;
}

void cb_queue_done(struct callbacks *cb) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->queues) {
                struct cb_queue *q = list_entry(pos, struct cb_queue, link);
                list_del(pos);
                close(q->fd);
                if (q->kept_fd >= 0)
                        close(q->kept_fd);
                free(q->promoted);
                for (size_t i = 0; i < q->n_got; i++)
                        outbox_entry_free(&q->got[i].e);
                free(q->got);
                free(q);
        }
        if (cb->queue_fd >= 0)
                close(cb->queue_fd);
        cb->queue_fd = -1;
}

static struct cb_queue *find(struct callbacks *cb, const char *tenant) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->queues) {
                struct cb_queue *q = list_entry(pos, struct cb_queue, link);
                if (streq(q->tenant, tenant))
                        return q;
        }
        return NULL;
}

struct cb_queue *cb_queue_get(struct callbacks *cb, const char *tenant) {
        struct cb_queue *q = find(cb, tenant);
        if (q)
                return q;
        if (!name_valid(tenant) || cb->queue_fd < 0)
                return NULL;
        q = calloc(1, sizeof(*q));
        if (!q)
                return NULL;
        snprintf(q->tenant, sizeof(q->tenant), "%s", tenant);
        q->outbox_fd = cb->outbox_fd;
        q->kept_fd = -1;
        q->load.op = CB_OP_LOAD;
        q->load.owner = q;
        q->fd = openat(cb->queue_fd, tenant, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (q->fd < 0) {
                log_error("callbacks: queue of tenant %s: %s; its deliveries are all held in memory", tenant, strerror(errno));
                free(q);
                return NULL;
        }
        list_add_tail(&cb->queues, &q->link);
        return q;
}

void cb_queue_count(struct cb_queue *q, int pending, int kept) {
        if (!q)
                return;
        q->n_mem += (uint64_t) (int64_t) pending;
        q->n_kept += (uint64_t) (int64_t) kept;
}

/* Append the entry's line (job, delivery, url, created_ms) to the file
 * fd, whose size is *end; what names the file in a log line. */
static int line_append(int fd, uint64_t *end, const struct outbox_entry *e, const char *what) {
        size_t len;
        json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "job", e->job, "delivery", e->delivery, "url", e->url, "created_ms",
                              (json_int_t) e->created_ms);
        _cleanup_free_ char *line = o ? json_line(o, &len) : NULL;
        json_decref(o);
        if (!line)
                return -ENOMEM;
        int r = write_all(fd, line, len);
        if (r < 0) {
                /* no half line stays behind */
                if (ftruncate(fd, (off_t) *end) < 0)
                        log_debug("callbacks: %s: %s", what, strerror(errno));
                return r;
        }
        *end += len;
        return 0;
}

/* Append the entry to the queue (not synced: see above). */
static int push(struct callbacks *cb, struct cb_queue *q, const struct outbox_entry *e) {
        int r = line_append(q->fd, &q->end, e, "queue");
        if (r < 0)
                return r;
        q->n_disk++;
        cb->n_disk++;
        return 0;
}

bool cb_queue_spill(struct callbacks *cb, struct cb_queue *q, const struct outbox_entry *e) {
        if (!q || (q->n_disk == 0 && q->n_mem < cb->cfg->cb_memory_max))
                return false;
        int r = push(cb, q, e);
        if (r < 0) {
                log_error("callback of job %s: cannot queue it (%s): held in memory", e->job, strerror(-r));
                return false;
        }
        return true;
}

bool cb_queue_force(struct callbacks *cb, const struct outbox_entry *e) {
        struct cb_queue *q = cb_queue_get(cb, e->tenant);
        return q && push(cb, q, e) == 0;
}

/* The line at *off (without its newline) into buf; *off moves past it.
 * -EBADMSG for a line too long or cut short. */
static int read_line(int fd, uint64_t *off, char *buf, size_t size, size_t *ret_len) {
        /* (the loop appends meanwhile: lines before what was written when
         * the task was made are whole) */
        ssize_t n = pread(fd, buf, size, (off_t) *off);
        if (n < 0)
                return -errno;
        char *nl = memchr(buf, '\n', (size_t) n);
        if (!nl)
                return -EBADMSG;
        *ret_len = (size_t) (nl - buf);
        *off += *ret_len + 1;
        return 0;
}

struct qline {
        const char *job, *delivery, *url;
        json_int_t created_ms;
};

static json_t *parse_line(const char *buf, size_t len, struct qline *l) {
        json_t *o = json_loadb(buf, len, 0, NULL);
        if (o && (json_unpack(o, "{s:s, s:s, s:s, s:I}", "job", &l->job, "delivery", &l->delivery, "url", &l->url, "created_ms",
                              &l->created_ms) < 0 ||
                  !proto_valid_job_id(l->job))) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* The job's outbox entry (thread or loop): 0, -ENOENT, -ENOMEM, or
 * -EINVAL when it is not a whole entry. */
static int read_entry(int outbox_fd, const char *job, struct outbox_entry *ret) {
        char name[40];
        cb_entry_name(job, name);
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_file_at(outbox_fd, name, OUTBOX_MAX_ENTRY, &text, &len);
        if (r == -ENOENT || r == -ENOMEM)
                return r;
        if (r < 0 || (r = outbox_entry_parse(text, len, ret)) < 0)
                return r == -ENOMEM ? r : -EINVAL;
        return 0;
}

/* The job's outbox entry, as a pending item: 0, -ENOENT when there is
 * none (it was delivered or dropped meanwhile, or is another tenant's),
 * -ENOMEM, or -EINVAL when it cannot be read (logged: left in the
 * outbox). */
static int load(struct callbacks *cb, const char *job, const char *tenant, struct cb_item **ret) {
        struct outbox_entry e;
        int r = read_entry(cb->outbox_fd, job, &e);
        if (r == -EINVAL)
                log_warning("callbacks: %s.json: not a whole outbox entry; left as it is", job);
        if (r < 0)
                return r;
        if (tenant && !streq(e.tenant, tenant)) {
                outbox_entry_free(&e);
                return -ENOENT;
        }
        struct cb_item *it = cb_item_new(cb, &e, CB_PENDING);
        if (!it) {
                outbox_entry_free(&e);
                return -ENOMEM;
        }
        if (ret)
                *ret = it;
        return 0;
}

/* Give up on what the queue still names: those deliveries stay in the
 * outbox, and the next start reads them. */
static void abandon(struct callbacks *cb, struct cb_queue *q, int err) {
        log_error("callbacks: queue of tenant %s: %s; its %" PRIu64 " deliveries kept on disk only are delivered after the next "
                  "start",
                  q->tenant, strerror(-err), q->n_disk);
        cb->n_disk -= q->n_disk;
        q->n_disk = 0;
        q->n_promoted = 0;
        q->off = q->end;
}

/* In the thread: up to want lines from load_off, each with its entry. It
 * touches only the queue's reading-back members, which the loop leaves
 * alone while loading. */
static void load_work(struct cb_task *k) {
        struct cb_queue *q = k->owner;
        _cleanup_free_ char *buf = malloc(LINE_MAX_LEN);
        q->got = calloc(q->want, sizeof(*q->got));
        if (!buf || !q->got) {
                q->load_err = -ENOMEM;
                return;
        }
        uint64_t off = q->load_off;
        while (off < q->load_end && q->n_got < q->want) {
                size_t len;
                struct qline l;
                int r = read_line(q->fd, &off, buf, LINE_MAX_LEN, &len);
                if (r < 0) {
                        q->load_err = r;
                        break;
                }
                struct qgot *g = &q->got[q->n_got++];
                json_t *o = parse_line(buf, len, &l);
                if (!o)
                        continue;
                snprintf(g->job, sizeof(g->job), "%s", l.job);
                json_decref(o);
                g->err = read_entry(q->outbox_fd, g->job, &g->e);
        }
        q->load_off = off;
}

/* One line the thread read back, in the loop. */
static void take_got(struct callbacks *cb, struct cb_queue *q, struct qgot *g) {
        if (g->job[0] && take_promoted(q, g->job)) {
                outbox_entry_free(&g->e);
                return;
        }
        q->n_disk--;
        cb->n_disk--;
        if (!g->job[0]) {
                log_error("callbacks: queue of tenant %s: a line that is not an entry; skipped (its delivery, if any, is made "
                          "after the next start)",
                          q->tenant);
                return;
        }
        if (g->err == -ENOENT)
                return; /* dropped (or delivered) meanwhile */
        if (g->err < 0) {
                log_warning("callbacks: %s.json: %s; left in the outbox (delivered after the next start)", g->job,
                            g->err == -ENOMEM ? "out of memory" : "not a whole outbox entry");
                return;
        }
        if (cb_find(cb, g->job)) {
                outbox_entry_free(&g->e);
                return;
        }
        if (!cb_item_new(cb, &g->e, CB_PENDING)) {
                /* to the end of the queue: read back later */
                if (!cb_queue_force(cb, &g->e))
                        log_error("callback of job %s: out of memory: delivered after the next start", g->job);
                outbox_entry_free(&g->e);
        }
}

void cb_queue_loaded(struct callbacks *cb, struct cb_task *k) {
        struct cb_queue *q = k->owner;
        q->loading = false;
        q->off = q->load_off;
        for (size_t i = 0; i < q->n_got; i++)
                take_got(cb, q, &q->got[i]);
        free(q->got);
        q->got = NULL;
        q->n_got = 0;
        /* out of memory: tried again at the next dispatch */
        if (q->load_err < 0 && q->load_err != -ENOMEM)
                abandon(cb, q, q->load_err);
}

/* Have the thread read back while the tenant is below
 * callback_memory_max; an empty queue's file is emptied. */
static void refill_one(struct callbacks *cb, struct cb_queue *q) {
        uint64_t max = cb->cfg->cb_memory_max;
        if (q->loading)
                return;
        if (q->off == q->end) {
                if (q->end && ftruncate(q->fd, 0) < 0)
                        log_debug("callbacks: queue of tenant %s: %s", q->tenant, strerror(errno));
                q->off = q->end = 0;
                return;
        }
        if (q->n_mem >= max || !cb->th)
                return;
        q->want = max - q->n_mem < LOAD_MAX ? (size_t) (max - q->n_mem) : LOAD_MAX;
        q->load_off = q->off;
        q->load_end = q->end;
        q->n_got = 0;
        q->load_err = 0;
        q->load.work = load_work;
        q->loading = true;
        cb_thread_submit(cb->th, &q->load);
}

void cb_queue_refill(struct callbacks *cb) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cb->queues)
                refill_one(cb, list_entry(pos, struct cb_queue, link));
}

struct cb_item *cb_queue_promote(struct callbacks *cb, const char *job, const char *tenant) {
        struct cb_queue *q = find(cb, tenant);
        if (!q || !q->n_disk)
                return NULL;
        char (*np)[24] = realloc(q->promoted, (q->n_promoted + 1) * sizeof(*np));
        if (!np)
                return NULL;
        q->promoted = np;
        struct cb_item *it = NULL;
        if (load(cb, job, tenant, &it) < 0)
                return NULL;
        snprintf(q->promoted[q->n_promoted++], sizeof(q->promoted[0]), "%s", job);
        q->n_disk--;
        cb->n_disk--;
        return it;
}

bool cb_queue_holds(struct callbacks *cb, const char *job) {
        char name[40];
        cb_entry_name(job, name);
        return cb->outbox_fd >= 0 && faccessat(cb->outbox_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

void cb_queue_list(struct callbacks *cb, const char *tenant, json_t *arr, uint64_t *n, uint64_t limit) {
        struct cb_queue *q = find(cb, tenant);
        if (!q || !q->n_disk)
                return;
        char buf[LINE_MAX_LEN];
        uint64_t off = q->off;
        while (off < q->end && *n < limit) {
                size_t len;
                struct qline l;
                if (read_line(q->fd, &off, buf, sizeof(buf), &len) < 0)
                        break;
                json_t *o = parse_line(buf, len, &l);
                if (o && !cb_find(cb, l.job) && cb_queue_holds(cb, l.job)) {
                        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:n, s:n}", "job", l.job, "delivery",
                                                             l.delivery, "url", l.url, "state", "pending", "attempts", 0,
                                                             "created", proto_time((uint64_t) l.created_ms), "last_error",
                                                             "last_status"));
                        (*n)++;
                }
                json_decref(o);
        }
}

int cb_queue_load(struct callbacks *cb) {
        struct outbox_entry *v;
        size_t n;
        int r = cb_scan_dir(cb->outbox_fd, ".json", &v, &n);
        for (size_t i = 0; i < n; i++) {
                struct cb_queue *q = r < 0 ? NULL : cb_queue_get(cb, v[i].tenant);
                if (r == 0 && !cb_queue_spill(cb, q, &v[i]) && load(cb, v[i].job, NULL, NULL) == -ENOMEM)
                        r = -ENOMEM;
                outbox_entry_free(&v[i]);
        }
        free(v);
        return r;
}

/* ---- dead and dropped deliveries beyond callback_memory_max ---- */


/* A dead or dropped delivery leaves memory (its file stays in the dead
 * letters), named in its tenant's index. */
static int evict(struct callbacks *cb, struct cb_queue *q, struct cb_item *it) {
        if (q->kept_fd < 0) {
                char name[80];
                snprintf(name, sizeof(name), ".kept.%s", q->tenant);
                q->kept_fd = openat(cb->queue_fd, name, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (q->kept_fd < 0)
                        return -errno;
        }
        int r = line_append(q->kept_fd, &q->kept_end, &it->e, "index of dead letters");
        if (r < 0)
                return r;
        if (it->state == CB_DEAD)
                cb->n_dead_disk++;
        cb_set_state(cb, it, CB_GONE);
        list_del(&it->link);
        cb_item_free(it);
        return 0;
}

/* One pass, oldest first, while a tenant holds more than the bound. */
void cb_queue_evict(struct callbacks *cb) {
        struct list *pos, *tmp;
        bool over = false;
        list_for_each_safe(pos, tmp, &cb->queues)
                over |= list_entry(pos, struct cb_queue, link)->n_kept > cb->cfg->cb_memory_max;
        if (!over)
                return;
        list_for_each_safe(pos, tmp, &cb->items) {
                struct cb_item *it = list_entry(pos, struct cb_item, link);
                struct cb_queue *q = it->q;
                if (!q || (it->state != CB_DEAD && it->state != CB_DROPPED) || q->n_kept <= cb->cfg->cb_memory_max)
                        continue;
                int r = evict(cb, q, it);
                if (r < 0) {
                        log_warning("callbacks: tenant %s: dead letters stay in memory (%s)", q->tenant, strerror(-r));
                        return;
                }
        }
}

const char *cb_queue_kept_state(struct callbacks *cb, const char *job) {
        char name[40];
        if (cb->dead_fd < 0)
                return NULL;
        cb_entry_name(job, name);
        if (faccessat(cb->dead_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return "dead";
        snprintf(name, sizeof(name), "%s.dropped", job);
        if (faccessat(cb->dead_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return "dropped";
        return NULL;
}

struct cb_item *cb_queue_revive(struct callbacks *cb, const char *job, const char *tenant) {
        const char *state = cb_queue_kept_state(cb, job);
        if (!state)
                return NULL;
        char name[40];
        snprintf(name, sizeof(name), "%s.%s", job, streq(state, "dead") ? "json" : "dropped");
        _cleanup_free_ char *text = NULL;
        size_t len;
        struct outbox_entry e;
        if (read_file_at(cb->dead_fd, name, OUTBOX_MAX_ENTRY, &text, &len) < 0 || outbox_entry_parse(text, len, &e) < 0)
                return NULL;
        if (!streq(e.tenant, tenant) || !streq(e.job, job)) {
                outbox_entry_free(&e);
                return NULL;
        }
        cb_item_drop_body(&e);
        struct cb_item *it = cb_item_new(cb, &e, streq(state, "dead") ? CB_DEAD : CB_DROPPED);
        if (!it) {
                outbox_entry_free(&e);
                return NULL;
        }
        if (it->state == CB_DEAD && cb->n_dead_disk)
                cb->n_dead_disk--;
        return it;
}

void cb_queue_list_kept(struct callbacks *cb, const char *tenant, const char *state, json_t *arr, uint64_t *n, uint64_t limit) {
        struct cb_queue *q = find(cb, tenant);
        if (!q || q->kept_fd < 0)
                return;
        _cleanup_free_ char *buf = malloc(LINE_MAX_LEN);
        json_t *seen = json_object();
        uint64_t off = 0;
        while (buf && seen && off < q->kept_end && *n < limit) {
                size_t len;
                struct qline l;
                if (read_line(q->kept_fd, &off, buf, LINE_MAX_LEN, &len) < 0)
                        break;
                json_t *o = parse_line(buf, len, &l);
                const char *st = o && !cb_find(cb, l.job) && !json_object_get(seen, l.job) ? cb_queue_kept_state(cb, l.job) : NULL;
                if (st && (!state || streq(state, st))) {
                        json_object_set_new(seen, l.job, json_true());
                        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:n, s:n}", "job", l.job, "delivery",
                                                             l.delivery, "url", l.url, "state", st, "attempts", 0, "created",
                                                             proto_time((uint64_t) l.created_ms), "last_error", "last_status"));
                        (*n)++;
                }
                json_decref(o);
        }
        json_decref(seen);
}
