/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sodium.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "audit.h"
#include "callbacks.h"
#include "commit.h"
#include "daemon.h"
#include "job-secrets.h"
#include "jobevents.h"
#include "log.h"
#include "record.h"

/* Files a job hands a batch: stdout, stderr, its result directory, its
 * record, its workspace (deleted). */
#define FILES_PER_JOB 6
#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 30000


static void on_synced(struct source *s, uint32_t events);

int commit_init(struct daemon *d, struct sbx_error *err) {
        struct commit *cm = &d->commit;
        memset(cm, 0, sizeof(*cm));
        list_init(&cm->next.jobs);
        list_init(&cm->inflight.jobs);
        list_init(&cm->retry);
        cm->gen = 1;
        int fd = syncer_start();
        if (fd < 0)
                return sbx_error_set(err, fd, "syncer thread");
        int r = loop_add(&cm->src, fd, EPOLLIN, on_synced);
        return r < 0 ? sbx_error_set(err, r, "syncer thread") : 0;
}

void commit_done(struct daemon *d) {
        struct commit *cm = &d->commit;
        syncer_stop();
        free(cm->next.held);
        free(cm->inflight.held);
        free(cm->sreq.files);
        cm->next.held = cm->inflight.held = NULL;
        cm->sreq.files = NULL;
}

void commit_journal(struct daemon *d) {
        d->commit.next.journal = true;
}

void commit_hold(struct daemon *d, struct commit_holder *h) {
        struct commit *cm = &d->commit;
        struct batch *b = &cm->next;
        b->journal = true;
        if (h->gen == cm->gen)
                return;
        if (b->n_held == b->cap_held) {
                size_t nc = b->cap_held ? b->cap_held * 2 : 64;
                struct commit_holder **n = realloc(b->held, nc * sizeof(*n));
                if (!n) {
                        /* Without room to hold the reply, sync right now. */
                        fdatasync(d->journal.fd);
                        return;
                }
                b->held = n;
                b->cap_held = nc;
        }
        h->gen = cm->gen;
        h->hold(h);
        b->held[b->n_held++] = h;
}

bool commit_storage_failing(const struct daemon *d, const char **what, int *err) {
        if (!d->commit.storage_err)
                return false;
        *what = d->commit.storage_what;
        *err = d->commit.storage_err;
        return true;
}

void commit_storage_failed(struct daemon *d, const char *what, int err) {
        struct commit *cm = &d->commit;
        if (!cm->storage_err)
                log_error("storage is failing (%s: %s): no new jobs are accepted until results can be written again", what,
                          strerror(-err));
        cm->storage_err = err;
        snprintf(cm->storage_what, sizeof(cm->storage_what), "%s", what);
        if (!cm->retry_at_ms)
                cm->retry_at_ms = now_mono_ms() + RETRY_MIN_MS;
}

static void storage_works(struct daemon *d) {
        struct commit *cm = &d->commit;
        /* Working storage includes the journal's reserve for outcomes: new
         * jobs wait until it is whole again (probe() makes it). */
        if (!cm->storage_err || cm->n_retry || !d->journal.reserved)
                return;
        log_notice("storage works again (%s): accepting new jobs", cm->storage_what);
        cm->storage_err = 0;
        cm->retry_at_ms = 0;
}

/* What the audit log's job_end line says of the job's outputs and use,
 * so that the log alone answers what it made and what it took: each
 * stream's size, what it wrote and whether it was cut, its artifacts with
 * their digests, the SHA-256 of its value, its peak memory, and its
 * network attempts by verdict. */
static void audit_end_outputs(json_t *line, json_t *rec) {
        if (!line || !rec)
                return;
        for (int i = 0; i < 2; i++) {
                json_t *st = json_object_get(rec, proto_stream_name(i));
                json_object_set_new(line, proto_stream_name(i),
                                    json_pack("{s:O, s:O, s:O}", "size", json_object_get(st, "size") ?: json_null(), "produced",
                                              json_object_get(st, "produced") ?: json_null(), "truncated",
                                              json_object_get(st, "truncated") ?: json_false()));
        }
        json_t *arts = json_array(), *a;
        size_t i;
        json_array_foreach(json_object_get(rec, "artifacts"), i, a)
                json_array_append_new(arts, json_pack("{s:O, s:O, s:O}", "path", json_object_get(a, "path"), "size",
                                                      json_object_get(a, "size"), "sha256", json_object_get(a, "sha256")));
        json_object_set_new(line, "artifacts", arts);
        json_t *v = json_object_get(rec, "value");
        char *vs = v && !json_is_null(v) ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
        if (vs) {
                unsigned char h[crypto_hash_sha256_BYTES];
                char hex[2 * sizeof(h) + 1];
                crypto_hash_sha256(h, (const unsigned char *) vs, strlen(vs));
                sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
                json_object_set_new(line, "value_sha256", json_string(hex));
                free(vs);
        } else
                json_object_set_new(line, "value_sha256", json_null());
        json_object_set(line, "peak_rss_kb", json_object_get(rec, "peak_rss_kb") ?: json_null());
        json_t *net = json_object_get(rec, "network"), *ev;
        json_int_t allow = 0, deny = 0;
        json_array_foreach(json_object_get(rec, "network_events"), i, ev) {
                const char *verdict = json_string_value(json_object_get(ev, "verdict"));
                if (verdict && !strcmp(verdict, "allow"))
                        allow++;
                else if (verdict)
                        deny++;
        }
        json_object_set_new(line, "network_events",
                            json_pack("{s:I, s:I, s:O, s:O}", "allow", allow, "deny", deny, "dropped",
                                      json_object_get(net, "events_dropped") ?: json_null(), "lost",
                                      json_object_get(net, "events_lost") ?: json_null()));
}

static void audit_end(const struct rjob *rj, json_t *rec) {
        const struct job *j = &rj->j;
        char digest[65];
        proto_inputs_digest(&j->req.run, digest);
        json_t *line = json_pack("{s:s, s:s, s:s, s:I, s:o, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "event", "job_end", "job",
                                       j->id, "tenant", j->tenant->name, "uid", (json_int_t) j->caller_uid, "command",
                                       record_command(j), "inputs_sha256", digest, "state", job_outcome_name(j->outcome),
                                       "exit_code", j->exit_code >= 0 ? json_integer(j->exit_code) : json_null(), "signal",
                                       j->term_signal > 0 ? json_integer(j->term_signal) : json_null(), "wall_ms",
                                       rec ? json_incref(json_object_get(rec, "wall_ms")) : json_null(), "cpu_ms",
                                       rec ? json_incref(json_object_get(rec, "cpu_ms")) : json_null(), "trace_id",
                                       j->req.run.traceparent ? json_stringn(j->req.run.traceparent + 3, 32) : json_null());
        audit_end_outputs(line, rec);
        audit_write_deferred(line);
        /* An audited job's attempts go to the audit log too, in a line of
         * their own (bounded like the record's). */
        if (j->pol.net_audit && rec)
                audit_write_deferred(json_pack("{s:s, s:s, s:s, s:O, s:O}", "event", "network", "job", j->id, "tenant",
                                               j->tenant->name, "network", json_object_get(rec, "network"), "network_events",
                                               json_object_get(rec, "network_events")));
}

/* The callback's outbox entry: the record as posted, in the same group
 * commit, its name made durable before the record's (syncer.c). */
static int outbox_entry_make(struct rjob *rj) {
        const struct job *j = &rj->j;
        free(rj->cb_text);
        rj->cb_text = NULL;
        outbox_entry_free(&rj->cb_entry);
        int r = outbox_entry_new(j->id, j->tenant->name, j->req.run.callback, j->req.run.traceparent, rj->cb_delivery, rj->rec,
                                 now_real_ms(), &rj->cb_entry);
        if (r < 0)
                return r;
        rj->cb_text = outbox_entry_text(&rj->cb_entry, &rj->cb_len);
        if (!rj->cb_text)
                return -ENOMEM;
        snprintf(rj->cb_name, sizeof(rj->cb_name), "%s.json", j->id);
        snprintf(rj->cb_tmp, sizeof(rj->cb_tmp), ".%s.json.tmp", j->id); /* as write_file_tmp() names it */
        return 0;
}

void commit_job(struct daemon *d, struct rjob *rj) {
        const struct capture *cap = &rj->cap;
        json_decref(TAKE_PTR(rj->rec));
        struct record_input in = {
                .j = &rj->j,
                .tenant = rj->j.tenant->name,
                .job_uid = rj->j.job_uid,
                .job_gid = rj->j.job_gid,
                .results_path = NULL,
                .artifacts = rj->artifacts,
                .limit_hit = rj->limit_hit,
                .artifacts_truncated = rj->artifacts_truncated,
                .artifacts_error = rj->artifacts_error,
                .value = rj->value,
                .value_error = rj->value_error,
                .launcher_end = cap->status_end,
                .start_prot = cap->start_prot,
                .cgroup_cpu_us = rj->cgroup_cpu_us,
                .cgroup = rj->session_exec ? rj->box.cgroup : rj->had_cgroup,
                .cg_limits = rj->session_exec ? rj->box.cg_limits : rj->cg_limits,
                .disk_quota = rj->session_exec ? rj->box.disk_quota : rj->ws_mounted,
                .ws_noswap = rj->session_exec ? rj->box.noswap : rj->ws_noswap,
                .ws_encrypted = rj->session_exec ? rj->box.encrypted : rj->ws_encrypted,
                /* a warm job's box is the daemon's own, not a session
                 * of its caller's */
                .session = rj->session_id[0] && !(rj->warm && rj->session_exec) ? rj->session_id : NULL,
                .warm = rj->warm,
                .session_role = rj->session_box ? "sandbox" : "exec",
                .session_end = rj->session_box ? rjob_session_end(rj) : NULL,
                .req_digest = rj->req_digest,
                .net = &rj->net,
        };
        json_t *secrets = job_secrets_record(rj);
        in.secrets = secrets;
        in.deps = rj->deps_info;
        /* One delivery id for the job, whatever the retries of its write. */
        if (rj->j.req.run.callback && !rj->cb_delivery[0])
                outbox_delivery_id(rj->cb_delivery);
        in.cb_delivery = rj->cb_delivery[0] ? rj->cb_delivery : NULL;
        char results[4200];
        snprintf(results, sizeof(results), "%s/results", d->cfg->state_dir);
        in.results_path = results;
        for (int i = 0; i < 2; i++)
                in.out[i] = (struct record_stream) { .kept = cap->kept[i], .produced = cap->produced[i],
                                                     .truncated = cap->truncated[i], .write_err = cap->write_err[i] };
        /* After a restart the journal's copy is the record: built from what
         * the job really did, before the restart lost that. */
        rj->rec = rj->rec_kept ? json_incref(rj->rec_kept) : record_build(&in);
        json_decref(secrets);
        rj->rec_text = rj->rec ? result_text(rj->rec, &rj->rec_len) : NULL;
        if (rj->rec_text && in.cb_delivery && outbox_entry_make(rj) < 0) {
                free(rj->rec_text);
                rj->rec_text = NULL;
        }
        result_names(rj->j.id, rj->rec_name, rj->rec_tmp);
        if (rj->rec_attempts == 0 && !rj->rec_kept)
                audit_end(rj, rj->rec);
        if (!rj->rec_text) {
                /* Out of memory now: the retry builds it again. */
                rj->rec_err = -ENOMEM;
                rj->rec_attempts++;
                list_add_tail(&d->commit.retry, &rj->commit_link);
                d->commit.n_retry++;
                commit_storage_failed(d, "result record", -ENOMEM);
                return;
        }
        list_add_tail(&d->commit.next.jobs, &rj->commit_link);
}

static void take_batch(struct commit *cm) {
        struct batch *n = &cm->next, *f = &cm->inflight;
        struct commit_holder **h = f->held;
        size_t hc = f->cap_held;
        f->held = n->held;
        f->cap_held = n->cap_held;
        f->n_held = n->n_held;
        n->held = h;
        n->cap_held = hc;
        n->n_held = 0;
        f->journal = n->journal;
        n->journal = false;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &n->jobs) {
                list_del(pos);
                list_add_tail(&f->jobs, pos);
        }
        cm->gen++;
}

/* After every loop turn: if the previous group commit is done, hand this
 * turn's syncs to the syncer thread — one journal sync for every job
 * accepted, one results-directory sync for every job ended — and go on
 * serving. Replies and ends are released when the syncs complete
 * (on_synced). Group commit keeps the durability promises at a fraction of
 * the syncs, and off the event loop. */
void commit_submit(struct daemon *d) {
        struct commit *cm = &d->commit;
        struct list *pos, *tmp;
        if (cm->syncing || (!cm->next.journal && list_empty(&cm->next.jobs)))
                return;
        size_t nf = 0;
        list_for_each_safe(pos, tmp, &cm->next.jobs)
                nf += FILES_PER_JOB;
        if (nf > cm->cap_files) {
                struct sync_file *a = realloc(cm->sreq.files, nf * sizeof(*a));
                if (!a) {
                        /* Left for the next turn, when memory may be back. */
                        log_error("group commit: out of memory");
                        return;
                }
                cm->sreq.files = a;
                cm->cap_files = nf;
        }
        cm->inflight_gen = cm->gen;
        take_batch(cm);
        nf = 0;
        bool early = false;
        uint64_t now = now_mono_us();
        list_for_each_safe(pos, tmp, &cm->inflight.jobs) {
                struct rjob *rj = container_of(pos, struct rjob, commit_link);
                rj->t_us[T_COMMIT] = now;
                for (int i = 0; i < 2; i++)
                        if (rj->cap.file_fd[i] >= 0)
                                cm->sreq.files[nf++] = (struct sync_file) { .fd = rj->cap.file_fd[i], .dirfd = -1 };
                if (rj->cap.result_dir_fd >= 0)
                        cm->sreq.files[nf++] = (struct sync_file) { .fd = rj->cap.result_dir_fd, .dirfd = -1 };
                const struct sync_file *entry = NULL;
                if (rj->cb_text) {
                        entry = &cm->sreq.files[nf];
                        cm->sreq.files[nf++] = (struct sync_file) { .fd = -1, .dirfd = d->cb.outbox_fd, .tmp = rj->cb_tmp,
                                                                    .name = rj->cb_name, .data = rj->cb_text, .len = rj->cb_len,
                                                                    .early = true };
                        early = true;
                }
                cm->sreq.files[nf++] = (struct sync_file) { .fd = -1, .dirfd = d->dirs.results_fd, .tmp = rj->rec_tmp,
                                                            .name = rj->rec_name, .data = rj->rec_text, .len = rj->rec_len,
                                                            .after = entry };
                if (d->dirs.work_fd >= 0 && !rj->session_exec)
                        cm->sreq.files[nf++] = (struct sync_file) { .fd = -1, .dirfd = d->dirs.work_fd, .name = rj->j.id, .remove = true,
                                                                    .path = d->dirs.work_path };
        }
        cm->sreq.n_files = nf;
        cm->sreq.journal_fd = cm->inflight.journal ? d->journal.fd : -1;
        cm->sreq.audit_fd = audit_take_pending();
        cm->sreq.dir_fd = list_empty(&cm->inflight.jobs) ? -1 : d->dirs.results_fd;
        cm->sreq.early_dir_fd = early ? d->cb.outbox_fd : -1;
        cm->syncing = true;
        syncer_submit(&cm->sreq);
}

static void debug_steps(const struct rjob *rj) {
        const uint64_t *t = rj->t_us;
#define STEP_MS(a, b) (t[a] && t[b] ? (double) (t[b] - t[a]) / 1000.0 : -1)
        log_debug(JOB_LOG ": accepted to started %.2f ms, ran %.2f ms, exit to commit %.2f ms, commit %.2f ms", JOB_LOG_ARGS(&rj->j),
                  STEP_MS(T_ACCEPTED, T_STARTED), STEP_MS(T_STARTED, T_EXITED), STEP_MS(T_EXITED, T_COMMIT),
                  STEP_MS(T_COMMIT, T_TOLD));
#undef STEP_MS
}

/* The record is durable: index, journal, clients, and goodbye. */
static void tell(struct daemon *d, struct rjob *rj) {
        struct job *j = &rj->j;
        rj->t_us[T_TOLD] = now_mono_us();
        debug_steps(rj);
        json_t *rec = TAKE_PTR(rj->rec);
        int r = result_index_add(&d->done, rec);
        if (r < 0)
                log_warning(JOB_LOG ": not in the index of results (%s); it is read from disk at the next start", JOB_LOG_ARGS(j),
                            strerror(-r));
        json_t *jr = json_pack("{s:s, s:s}", "ev", "done", "job", j->id);
        /* Not synced: a crash before it leaves an accept whose record
         * exists, which recovery skips. */
        if (jr && journal_append(&d->journal, jr, false) < 0)
                log_debug(JOB_LOG ": journal: done line not written", JOB_LOG_ARGS(j));
        json_decref(jr);
        log_info(JOB_LOG " (tenant %s): %s, exit %d%s", JOB_LOG_ARGS(j), j->tenant->name, job_outcome_name(j->outcome), j->exit_code,
                 rj->cap.truncated[0] || rj->cap.truncated[1] ? ", output truncated at its cap" : "");
        if (rj->cb_fenced && unlinkat(d->cb.outbox_fd, rj->cb_name, 0) < 0 && errno != ENOENT)
                log_warning(JOB_LOG ": callbacks/outbox/%s: %s (its result was refused by the cluster; the entry is "
                            "delivered at the next start)",
                            JOB_LOG_ARGS(j), rj->cb_name, strerror(errno));
        else if (rj->cb_text && !rj->cb_fenced)
                callbacks_add(&d->cb, &rj->cb_entry);
        job_tell_end(rj, rec);
        json_decref(rec);
        jobs_remove(&d->jobs, rj);
        loop_defer_free(rjob_free, rj);
        daemon_job_gone(d);
}

json_t *commit_end_line(const struct rjob *rj) {
        json_t *rec = rj->rec_kept ?: rj->rec;
        return rec ? json_pack("{s:s, s:s, s:O}", "ev", "end", "job", rj->j.id, "record", rec) : NULL;
}

/* The record cannot be written: the record itself goes to the journal (an
 * "end" line, synced by the next batch), so that a restart — a crash, or a
 * stop while it is pending — writes it instead of E_RESTARTED. A full file
 * system gives up the journal's reserve for it. When even that fails the
 * outcome is only in memory: tried again at each retry, and the daemon
 * does not stop while it lasts. */
static void journal_end(struct daemon *d, struct rjob *rj) {
        struct commit *cm = &d->commit;
        if (rj->end_gen)
                return;
        json_t *jr = commit_end_line(rj);
        int r = jr ? journal_append_outcome(&d->journal, jr) : -ENOMEM;
        json_decref(jr);
        if (r < 0) {
                if (!rj->end_failed)
                        log_error(JOB_LOG ": its outcome cannot be kept in the journal either (%s): it is held in memory "
                                  "until storage works, and lost if the daemon is killed meanwhile",
                                  JOB_LOG_ARGS(&rj->j), strerror(-r));
                rj->end_failed = true;
                return;
        }
        if (!d->journal.reserved && !cm->reserve_used) {
                log_warning("the state file system is full: the journal's reserve is given up to keep the outcomes of "
                            "jobs whose records cannot be written");
                cm->reserve_used = true;
        }
        rj->end_gen = cm->gen;
        commit_journal(d);
}

/* The batch synced the journal (or failed to): "end" lines appended before
 * it are durable (or must be appended again). */
static void ends_synced(struct daemon *d, bool ok) {
        struct commit *cm = &d->commit;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &d->jobs.all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                if (!rj->end_gen || rj->end_durable || rj->end_gen > cm->inflight_gen)
                        continue;
                if (ok)
                        rj->end_durable = true;
                else
                        rj->end_gen = 0;
        }
}

bool commit_may_stop(struct daemon *d) {
        struct commit *cm = &d->commit;
        struct list *pos, *tmp;
        unsigned kept = 0, syncing = 0, held = 0;
        list_for_each_safe(pos, tmp, &cm->retry) {
                struct rjob *rj = container_of(pos, struct rjob, commit_link);
                if (rj->end_durable)
                        kept++;
                else if (rj->end_gen)
                        syncing++;
                else
                        held++;
        }
        if (d->jobs.n > kept + syncing + held)
                return false; /* jobs still ending, or records being written */
        if (syncing)
                return false; /* their "end" lines are being synced */
        if (held == 0)
                return true;
        if (!cm->stop_held_said)
                log_error("stopping: %u jobs ended but their outcomes are held only in memory (their records and the journal "
                          "cannot be written): the daemon stays until storage works; killing it loses them",
                          held);
        cm->stop_held_said = true;
        return false;
}

static uint64_t backoff_ms(unsigned attempts) {
        uint64_t ms = RETRY_MIN_MS;
        while (--attempts > 0 && ms < RETRY_MAX_MS)
                ms *= 2;
        return ms < RETRY_MAX_MS ? ms : RETRY_MAX_MS;
}

/* The record could not be written, or the callback's outbox entry it
 * waits for (what): the job stays (in memory and in the journal), its
 * clients hear the truth, and the write is tried again. */
static void failed(struct daemon *d, struct rjob *rj, int err, const char *what) {
        struct commit *cm = &d->commit;
        char msg[SBX_ERROR_MAX];
        rj->rec_err = err;
        rj->rec_attempts++;
        commit_storage_failed(d, what, err);
        if (rj->rec_attempts == 1) {
                log_error(JOB_LOG ": cannot write its %s: %s; kept in the journal, retrying", JOB_LOG_ARGS(&rj->j), what, strerror(-err));
                snprintf(msg, sizeof(msg),
                         "job %s ended (%s) but its %s cannot be written (%s); the daemon keeps the job and "
                         "retries: ask for its result later",
                         rj->j.id, job_outcome_name(rj->j.outcome), what, strerror(-err));
                job_tell_fail(rj, E_STORAGE, msg);
        }
        journal_end(d, rj);
        list_add_tail(&cm->retry, &rj->commit_link);
        cm->n_retry++;
        uint64_t at = now_mono_ms() + backoff_ms(rj->rec_attempts);
        if (!cm->retry_at_ms || at < cm->retry_at_ms)
                cm->retry_at_ms = at;
}

static int record_verdict(const struct commit *cm, const struct rjob *rj) {
        for (size_t k = 0; k < cm->sreq.n_files; k++)
                if (cm->sreq.files[k].data && cm->sreq.files[k].data == rj->rec_text)
                        return cm->sreq.files[k].err;
        return -EIO;
}

/* The callback's outbox entry of the job, written and made durable
 * (its directory synced) before the record: 0, or why it is not. */
static int entry_verdict(const struct commit *cm, const struct rjob *rj) {
        if (!rj->cb_text)
                return 0;
        for (size_t k = 0; k < cm->sreq.n_files; k++)
                if (cm->sreq.files[k].data == rj->cb_text)
                        return cm->sreq.files[k].err ?: cm->sreq.early_dir_err;
        return 0;
}

static void on_synced(struct source *s, uint32_t events) {
        struct daemon *d = container_of(s, struct daemon, commit.src);
        struct commit *cm = &d->commit;
        struct list *pos, *tmp;
        int r = syncer_complete();
        cm->syncing = false;
        if (cm->sreq.journal_err < 0)
                commit_storage_failed(d, "journal", cm->sreq.journal_err);
        if (cm->sreq.audit_err < 0)
                log_error("audit log: sync failed: %s", strerror(-cm->sreq.audit_err));
        /* The directory's sync makes the renames durable: without it no
         * record of the batch is. */
        int dir_err = cm->sreq.dir_err;
        (void) r; /* each part's error is looked at on its own */
        if (cm->inflight.journal)
                ends_synced(d, cm->sreq.journal_err == 0);
        cm->inflight.journal = false;
        bool all_ok = cm->sreq.journal_err == 0;
        /* The claimed jobs of the batch, for the cluster's database. */
        size_t n_cl = 0, n_all = 0;
        list_for_each_safe(pos, tmp, &cm->inflight.jobs)
                n_all++;
        struct rjob **cl = d->cluster_end && n_all ? calloc(n_all, sizeof(*cl)) : NULL;
        list_for_each_safe(pos, tmp, &cm->inflight.jobs) {
                struct rjob *rj = container_of(pos, struct rjob, commit_link);
                list_del(pos);
                int e = entry_verdict(cm, rj), v = e ?: record_verdict(cm, rj) ?: dir_err;
                if (v < 0) {
                        /* A record waits for its outbox entry: name the
                         * entry when that is what failed. */
                        char what[96];
                        if (e < 0)
                                snprintf(what, sizeof(what), "callback outbox entry callbacks/outbox/%s", rj->cb_name);
                        else
                                snprintf(what, sizeof(what), "result record");
                        all_ok = false;
                        failed(d, rj, v, what);
                } else if (rj->cluster && d->cluster_end) {
                        /* Durable here; told once the cluster's database
                         * has it too (commit_cluster_ended). */
                        if (cl)
                                cl[n_cl++] = rj;
                        else
                                commit_cluster_ended(d, rj, -EAGAIN);
                } else
                        tell(d, rj);
        }
        /* After the records: a reply that says a job ended (a cancel of a
         * queued one) goes out once its record is durable everywhere it
         * is kept, the cluster's database too (held there again). */
        if (n_cl)
                d->cluster_end(d, cl, n_cl, cm->inflight.held, cm->inflight.n_held, all_ok);
        free(cl);
        for (size_t i = 0; i < cm->inflight.n_held; i++)
                cm->inflight.held[i]->release(cm->inflight.held[i]);
        cm->inflight.n_held = 0;
        if (n_cl)
                return; /* commit_cluster_settled() says the rest */
        if (all_ok)
                storage_works(d);
        if (d->stopping)
                daemon_job_gone(d);
}

void commit_cluster_ended(struct daemon *d, struct rjob *rj, int r) {
        if (r == -EAGAIN)
                /* Durable here, not yet in the cluster's database: kept
                 * (journal "end" line) and written again. */
                failed(d, rj, -EAGAIN, "result in the cluster's database");
        else
                tell(d, rj);
}

void commit_cluster_settled(struct daemon *d, bool ok) {
        if (ok)
                storage_works(d);
        if (d->stopping)
                daemon_job_gone(d);
}

/* Can the disk take a small file and the journal a line again, and the
 * journal's reserve be whole? */
static bool probe(struct daemon *d) {
        int r = journal_reserve(&d->journal);
        if (r == 0 && d->commit.reserve_used) {
                log_notice("the journal's reserve for job outcomes is whole again");
                d->commit.reserve_used = false;
        }
        if (r == 0)
                r = write_file_durable(d->dirs.results_fd, ".probe", "ok\n", 3, 0600, true);
        if (r == 0)
                unlinkat(d->dirs.results_fd, ".probe", 0);
        json_t *jr = r == 0 ? json_pack("{s:s}", "ev", "probe") : NULL;
        if (jr) {
                r = journal_append(&d->journal, jr, true);
                json_decref(jr);
        }
        return r == 0;
}

void commit_retry(struct daemon *d, uint64_t now_ms) {
        struct commit *cm = &d->commit;
        struct list *pos, *tmp;
        if (!cm->storage_err || now_ms < cm->retry_at_ms)
                return;
        cm->retry_at_ms = now_ms + RETRY_MIN_MS;
        if (list_empty(&cm->retry)) {
                if (probe(d))
                        storage_works(d);
                return;
        }
        list_for_each_safe(pos, tmp, &cm->retry) {
                struct rjob *rj = container_of(pos, struct rjob, commit_link);
                list_del(pos);
                cm->n_retry--;
                if (!rj->rec_text) {
                        /* Built again (it failed for memory). */
                        rj->rec_err = 0;
                        commit_job(d, rj);
                        continue;
                }
                list_add_tail(&cm->next.jobs, &rj->commit_link);
        }
}
