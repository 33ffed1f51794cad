/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bundle.h"
#include "cgroup.h"
#include "daemon.h"
#include "log.h"
#include "netjob.h"
#include "prepare.h"
#include "privc.h"
#include "profile.h"
#include "proto.h"
#include "record.h"
#include "recover.h"
#include "runner.h"
#include "tenant.h"
#include "uidpool.h"
#include "workspace.h"

struct tally {
        unsigned requeued, ended, rejected, kept, adopted, handed_back;
};

/* The accept line: everything needed to run the job again after a crash
 * (the request as validated), and what its record needs if it cannot. */
json_t *accept_record(const struct rjob *rj) {
        const struct job *j = &rj->j;
        json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:s, s:o, s:s, s:i}", "ev", "accept", "job", j->id,
                              "tenant", j->tenant->name, "uid", (json_int_t) j->caller_uid, "job_uid",
                              (json_int_t) j->tenant->job_uid, "job_gid", (json_int_t) j->tenant->job_gid, "created",
                              proto_time(j->created_ms), "command", proto_argv(&j->req.run), "request",
                              proto_run_json(&j->req.run), "profile", j->pol.profile, "policy", policy_to_json(&j->pol),
                              "request_sha256", rj->req_digest, "attempt", (int) j->attempt);
        /* Claimed from the cluster's database: its lease's attempt, the
         * fence of its result (cluster-ops.c). */
        if (o && rj->cluster)
                json_object_set_new(o, "cluster", json_pack("{s:i}", "attempt", (int) rj->cl_attempt));
        /* A session's: recovery ends it rather than running it again. */
        if (o && rj->session_id[0])
                json_object_set_new(o, "session", json_pack("{s:s, s:s, s:I, s:b}", "id", rj->session_id, "role",
                                                            rj->session_box ? "sandbox" : "exec", "idle_ms",
                                                            (json_int_t) rj->session_idle_ms, "warm", rj->warm));
        return o;
}

/* A tenant the configuration no longer has: its interrupted jobs still get
 * records under its name. Kept by the daemon until it exits. */
static const struct tenant *ghost(struct daemon *d, const struct journal_entry *x) {
        struct ghost_tenant *g;
        for (g = d->ghosts; g; g = g->next)
                if (streq(g->t.name, x->tenant))
                        return &g->t;
        g = calloc(1, sizeof(*g));
        if (!g)
                return NULL;
        tenant_defaults(&g->t);
        g->t.name = strdup(x->tenant);
        g->t.job_uid = (uid_t) json_integer_value(json_object_get(x->accept, "job_uid"));
        g->t.job_gid = (gid_t) json_integer_value(json_object_get(x->accept, "job_gid"));
        if (!g->t.name) {
                free(g);
                return NULL;
        }
        /* counted under its name's slot (a reload may bring the name back) */
        if (config_slot_of(d->cfg, g->t.name, &g->t.slot) < 0 || sched_grow(&d->sched, d->cfg->n_slots) < 0 ||
            conns_grow(&d->conns, d->cfg->n_slots) < 0)
                g->t.slot = 0;
        g->next = d->ghosts;
        d->ghosts = g;
        return &g->t;
}

/* The validated request again, from the accept line; a line from before
 * the journal kept requests has only the command. */
static int request_of(const struct journal_entry *x, struct request *req, bool *whole) {
        struct sbx_error err;
        json_t *r = json_object_get(x->accept, "request");
        *whole = false;
        if (json_is_object(r)) {
                _cleanup_free_ char *line = json_dumps(r, JSON_COMPACT);
                if (line && proto_parse_request(line, strlen(line), req, &err) == 0) {
                        *whole = true;
                        return 0;
                }
                request_free(req);
        }
        json_t *cmd = json_object_get(x->accept, "command");
        size_t n = json_array_size(cmd);
        request_init(req);
        req->op = REQ_RUN;
        req->run.argv = calloc(n + 2, sizeof(char *));
        if (!req->run.argv)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *a = json_string_value(json_array_get(cmd, i));
                if (!(req->run.argv[req->run.argc] = strdup(a ? a : "?")))
                        return -ENOMEM;
                req->run.argc++;
        }
        if (n == 0 && !(req->run.argv[req->run.argc++] = strdup("?")))
                return -ENOMEM;
        return 0;
}

/* What the job's capture files hold: all that is known of its output. */
static void capture_sizes(struct daemon *d, struct rjob *rj) {
        _cleanup_close_ int dir = openat(d->dirs.results_fd, rj->j.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        for (int i = 0; i < 2 && dir >= 0; i++) {
                struct stat st;
                if (fstatat(dir, proto_stream_name(i), &st, AT_SYMLINK_NOFOLLOW) == 0)
                        rj->cap.kept[i] = rj->cap.produced[i] = (uint64_t) st.st_size;
        }
}

/* Without a cgroup: the recorded pid — if it is still the same process —
 * and its process group. */
static void kill_leftover(const struct journal_entry *x) {
        unsigned long long st;
        if (x->pid > 0 && proc_starttime(x->pid, &st) == 0 && st == x->starttime_ticks) {
                kill(-x->pid, SIGKILL);
                kill(x->pid, SIGKILL);
        }
}

static struct rjob *rebuild(struct daemon *d, const struct journal_entry *x, bool *whole) {
        struct rjob *rj = rjob_new(d);
        if (!rj)
                return NULL;
        struct job *j = &rj->j;
        snprintf(j->id, sizeof(j->id), "%s", x->id);
        j->tenant = tenant_find(d->cfg, x->tenant) ?: ghost(d, x);
        j->caller_uid = x->caller_uid;
        j->created_ms = parse_rfc3339_ms(json_string_value(json_object_get(x->accept, "created")));
        json_t *att = json_object_get(x->accept, "attempt");
        j->attempt = json_is_integer(att) && json_integer_value(att) > 0 ? (unsigned) json_integer_value(att) : 1;
        const char *dg = json_string_value(json_object_get(x->accept, "request_sha256"));
        if (dg && strlen(dg) == 64)
                memcpy(rj->req_digest, dg, 65);
        if (!j->tenant || request_of(x, &j->req, whole) < 0) {
                rjob_free(rj);
                return NULL;
        }
        if (j->req.run.bundle) {
                /* What it was to run; what it resolved to, if it started. */
                j->bundle.set = bundle_ref_parse(j->req.run.bundle, &j->bundle.ref, NULL) == 0;
                j->bundle.registry = j->tenant->registry ? j->tenant->registry->name : NULL;
                record_bundle_restore(json_object_get(x->start, "bundle"), &j->bundle);
        }
        json_t *pol = json_object_get(x->start, "policy") ?: json_object_get(x->accept, "policy");
        if (policy_from_json(pol, &j->pol) < 0) {
                /* A line from before the journal kept decisions. */
                const char *p = json_string_value(json_object_get(x->accept, "profile"));
                snprintf(j->pol.profile, sizeof(j->pol.profile), "%s", p ? p : "?");
                j->pol.timeout_ms = j->pol.memory = j->pol.processes = j->pol.cpu_s = j->pol.cpu_milli = j->pol.output = PROTO_UNSET;
        }
        return rj;
}

/* A job that may run (again): its decision re-taken under today's
 * configuration, a fresh workspace, and a place in the queue. */
/* Its policy decided again, and its profile found: 0, or rejected. */
static int readmit(struct daemon *d, struct rjob *rj, struct tally *t) {
        struct sbx_error err;
        struct job *j = &rj->j;
        const char *code;
        sbx_error_clear(&err);
        /* A bundle's decision is taken again once it is resolved again. */
        int r = j->bundle.set ? bundle_admit(j->tenant, &j->req.run, &code, &err)
                              : policy_apply(j->tenant, &j->req.run, &d->caps, &j->pol, &err);
        if (r == 0 && !j->bundle.set) {
                r = profile_find(j->pol.profile, d->cfg->profile_path, &rj->profile_path, &err);
                if (r < 0)
                        sbx_error_msg(&err, -r, "no profile '%s' in %s", j->pol.profile, d->cfg->profile_path);
        }
        /* What the profile itself asks of the network (its audit), as at
         * the job's acceptance. */
        if (r == 0 && !j->bundle.set) {
                char why[SBX_ERROR_MAX];
                r = netjob_profile_policy(&d->caps, j->pol.profile, rj->profile_path, &j->pol, why, sizeof(why));
                if (r < 0)
                        sbx_error_msg(&err, -r, "%s", why);
        }
        if (r < 0) {
                char msg[SBX_ERROR_MAX + 64];
                snprintf(msg, sizeof(msg), "refused when decided again (after a restart, or on the node that claimed it): %s",
                         err.msg);
                job_transition(j, JEV_REJECTED, msg);
                t->rejected++;
                return r;
        }
        return 0;
}

/* Queued again (what it fetches first, fetched). */
static void queue_again(struct daemon *d, struct rjob *rj, struct tally *t) {
        struct job *j = &rj->j;
        sched_requeue(&d->sched, j);
        t->requeued++;
        if (j->bundle.set)
                bundle_job_start(rj);
        else if (run_has_deps(&j->req.run) && d->deps_start)
                d->deps_start(rj);
}

static int requeue(struct daemon *d, struct rjob *rj, struct tally *t) {
        int r = readmit(d, rj, t);
        if (r == 0)
                queue_again(d, rj, t);
        return r;
}

/* The job ended before the restart, and its record, which could not be
 * written then, is in the journal: that record is written, as it is, not
 * E_RESTARTED. false: the line does not state an outcome (nothing done). */
static bool recover_kept(struct daemon *d, struct rjob *rj, json_t *rec) {
        struct job *j = &rj->j;
        json_t *err = json_object_get(rec, "error");
        json_t *ec = json_object_get(rec, "exit_code"), *sig = json_object_get(rec, "signal");
        const char *delivery = json_string_value(json_object_get(json_object_get(rec, "callback"), "delivery"));
        if (job_recorded(j, json_string_value(json_object_get(rec, "state")), json_is_integer(ec) ? (int) json_integer_value(ec) : -1,
                         json_is_integer(sig) ? (int) json_integer_value(sig) : 0,
                         json_string_value(json_object_get(err, "code")), json_string_value(json_object_get(err, "message"))) < 0)
                return false;
        j->started_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "started")));
        j->ended_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "ended")));
        json_t *u = json_object_get(rec, "job_uid"), *g = json_object_get(rec, "job_gid");
        if (json_is_integer(u))
                j->job_uid = (uid_t) json_integer_value(u);
        if (json_is_integer(g))
                j->job_gid = (gid_t) json_integer_value(g);
        /* Its callback keeps the delivery id the record names. */
        if (delivery && strlen(delivery) == OUTBOX_DELIVERY_LEN)
                memcpy(rj->cb_delivery, delivery, OUTBOX_DELIVERY_LEN + 1);
        rj->rec_kept = json_incref(rec);
        /* Durable in the journal already: compaction keeps it there. */
        rj->end_gen = 1;
        rj->end_durable = true;
        commit_job(d, rj);
        return true;
}

/* What a running job's start line says of it. */
static void restore_started(struct daemon *d, struct rjob *rj, const struct journal_entry *x) {
        struct job *j = &rj->j;
        json_t *cg = json_object_get(x->start, "cg_limits");
        rj->cg_limits = json_is_integer(cg) ? (unsigned) json_integer_value(cg) : 0;
        rj->had_cgroup = json_is_true(json_object_get(x->start, "cgroup"));
        rj->ws_mounted = json_is_true(json_object_get(x->start, "disk_quota"));
        rj->ws_noswap = json_is_true(json_object_get(x->start, "ws_noswap"));
        rj->ws_encrypted = json_is_true(json_object_get(x->start, "ws_encrypted"));
        json_t *u = json_object_get(x->start, "job_uid"), *g = json_object_get(x->start, "job_gid");
        j->job_uid = json_is_integer(u) ? (uid_t) json_integer_value(u) : j->tenant->job_uid;
        j->job_gid = json_is_integer(g) ? (gid_t) json_integer_value(g) : j->tenant->job_gid;
        j->started_ms = parse_rfc3339_ms(json_string_value(json_object_get(x->start, "started")));
        rj->pid = x->pid;
        rj->starttime = x->starttime_ticks;
}

/* A session's sandbox that may have outlived the daemon: it started and
 * did not end, its tenant is still configured, and it needs nothing only
 * the last daemon held (a restricted network's veth and DNS proxy, the
 * network audit's ring: box_net_kept). With "user" set, only a listening
 * sbx-privd (helper_socket) keeps a front's jobs when the front goes. */
static bool box_may_go_on(const struct daemon *d, const struct journal_entry *x) {
        json_t *sess = json_object_get(x->accept, "session");
        return x->pid > 0 && !x->end && tenant_find(d->cfg, x->tenant) &&
               streq(json_string_value(json_object_get(sess, "role")) ?: "", "sandbox");
}

static bool box_net_kept(const struct policy_decision *pol) {
        return pol->net != NET_RESTRICTED && !pol->net_audit;
}

/* Its cgroup was kept for it (cgroup_reap_orphans); it is not adopted
 * after all: every process of it goes. */
static void kill_kept_cgroup(struct daemon *d, struct rjob *rj) {
        int fd;
        if (!d->cg.enabled || cgroup_job_open(&d->cg, rj->j.id, &fd) < 0)
                return;
        cgroup_job_kill(&d->cg, fd);
        close(fd);
        cgroup_job_release(&d->cg, rj->j.id, NULL, NULL);
}

struct keep_boxes {
        const struct daemon *d;
        const struct journal_entry *e;
        size_t n;
};

/* The cgroups of sessions' sandboxes that may go on are not reaped. */
static bool keep_box_cgroup(const char *id, void *arg) {
        const struct keep_boxes *k = arg;
        for (size_t i = 0; i < k->n; i++)
                if (streq(k->e[i].id, id))
                        return !k->e[i].done && box_may_go_on(k->d, &k->e[i]);
        return false;
}

/* The session's box goes on: the job runs again as far as the daemon is
 * concerned, and the session is made again around it (sessions_adopt).
 * 0; -ESRCH when the sandbox ended while the daemon was away. */
static int adopt_box(struct daemon *d, struct rjob *rj, const struct journal_entry *x) {
        struct job *j = &rj->j;
        json_t *sess = json_object_get(x->accept, "session");
        json_t *idle = json_object_get(sess, "idle_ms"), *ttl = json_object_get(x->start, "timeout_ms");
        json_t *svc = json_object_get(x->start, "service");
        restore_started(d, rj, x);
        if (json_is_integer(ttl) && json_integer_value(ttl) > 0)
                j->pol.timeout_ms = (uint64_t) json_integer_value(ttl);
        rj->session_idle_ms = json_is_integer(idle) && json_integer_value(idle) > 0 ? (uint64_t) json_integer_value(idle)
                                                                                     : j->tenant->session_idle_max_ms;
        if (json_is_object(svc))
                rj->session_service = json_incref(svc);
        if (json_is_string(json_object_get(x->start, "deps_layer")) && d->deps_adopt)
                d->deps_adopt(rj, json_string_value(json_object_get(x->start, "deps_layer")));
        if (uidpool_contains(&d->uids, j->job_uid)) {
                uidpool_claim(&d->uids, j->job_uid);
                rj->own_uid = true;
        }
        job_transition(j, JEV_PREPARE, NULL);
        job_transition(j, JEV_START, NULL);
        int r = runner_adopt(rj);
        if (r < 0)
                return r;
        rj->session_adopt = true;
        return 0;
}

/* An exec that a restart interrupted, in a box that goes on: its process
 * is stopped once the agent is reached again (sessions_adopt). */
static void orphan_exec(struct daemon *d, const char *sid, const struct journal_entry *x) {
        json_t *h = json_object_get(x->start, "handle");
        if (!json_is_integer(h) || json_integer_value(h) <= 0 || json_integer_value(h) > UINT32_MAX)
                return;
        for (struct list *p = d->jobs.all.next; p != &d->jobs.all; p = p->next) {
                struct rjob *box = list_entry(p, struct rjob, link);
                if (!box->session_adopt || !streq(box->session_id, sid))
                        continue;
                uint32_t *n = realloc(box->session_orphans, (box->n_session_orphans + 1) * sizeof(*n));
                if (!n)
                        return;
                n[box->n_session_orphans++] = (uint32_t) json_integer_value(h);
                box->session_orphans = n;
                return;
        }
}

/* A job this node claimed from the cluster's database: an outcome the
 * journal kept is written (fenced by its attempt); else it is given back
 * (cluster-ops.c ends this node's leases at start): whatever of it runs
 * here is killed, and the cluster runs it again or records it
 * interrupted, as its retries say. */
static void recover_claimed(struct daemon *d, struct rjob *rj, const struct journal_entry *x, json_t *cl, struct tally *t) {
        rj->cluster = true;
        rj->cl_attempt = (unsigned) json_integer_value(json_object_get(cl, "attempt"));
        if (x->end && recover_kept(d, rj, x->end)) {
                t->kept++;
                return;
        }
        if (x->pid > 0) {
                kill_leftover(x);
                restore_started(d, rj, x);
                if (!rj->had_cgroup)
                        prepare_reap_uid(d, rj->j.job_uid);
        }
        jobs_remove(&d->jobs, rj);
        rjob_free(rj);
        t->handed_back++;
}

static void recover_one(struct daemon *d, const struct journal_entry *x, struct tally *t) {
        bool whole;
        struct rjob *rj = rebuild(d, x, &whole);
        if (!rj) {
                log_error("recovery: job %s: cannot rebuild it from the journal; it keeps its journal entry", x->id);
                return;
        }
        struct job *j = &rj->j;
        bool started = x->pid > 0;
        bool own_tenant = tenant_find(d->cfg, x->tenant) != NULL;
        jobs_add(&d->jobs, rj);
        json_t *cl = json_object_get(x->accept, "cluster");
        if (json_is_object(cl)) {
                recover_claimed(d, rj, x, cl, t);
                return;
        }
        if (x->end && recover_kept(d, rj, x->end)) {
                t->kept++;
                return;
        }
        /* A session's sandbox goes on after the restart when it can (it
         * never runs again: a new one would be a new session); its execs
         * that ran are interrupted, and the rest never run. */
        const char *restarted = NULL;
        json_t *sess = json_object_get(x->accept, "session");
        const char *sid = json_string_value(json_object_get(sess, "id"));
        if (sid && strlen(sid) == PROTO_SESSION_ID_LEN) {
                memcpy(rj->session_id, sid, PROTO_SESSION_ID_LEN + 1);
                rj->session_box = streq(json_string_value(json_object_get(sess, "role")) ?: "", "sandbox");
                rj->session_exec = !rj->session_box;
                rj->warm = json_is_true(json_object_get(sess, "warm"));
                rj->session_end = "restarted";
                whole = false;
                /* An exec has no launcher: it started when it was given a handle. */
                started = started || (rj->session_exec && x->start);
                if (rj->session_box && box_may_go_on(d, x)) {
                        if (privc_on(&d->privc) && !d->cfg->helper_socket)
                                restarted = "supervisor restarted: the sbx-privd it starts itself ends the front's jobs with it "
                                            "(one of its own, helper_socket, keeps a session's sandbox)";
                        else if (box_net_kept(&j->pol)) {
                                int r = adopt_box(d, rj, x);
                                if (r == 0) {
                                        rj->session_end = NULL;
                                        log_info("recovery: session %s: its sandbox (job %s) goes on", sid, j->id);
                                        t->adopted++;
                                        return;
                                }
                                rj->session_end = r == -ESRCH ? "crashed" : "restarted";
                                restarted = r != -ESRCH ? "supervisor restarted, and its sandbox could not be watched again"
                                            : privc_on(&d->privc)
                                                    ? "its sandbox ended while the supervisor was not running (sbx-privd holds "
                                                      "it no more: it exited, or no front took it back in time)"
                                                    : "its sandbox ended while the supervisor was not running";
                                if (r != -ESRCH)
                                        log_warning("recovery: session %s: its sandbox cannot be watched again (%s): it ends", sid,
                                                    strerror(-r));
                        } else
                                restarted = "supervisor restarted: a session with a restricted network or a network audit "
                                            "does not outlive it";
                        kill_kept_cgroup(d, rj);
                }
                if (rj->session_exec && started)
                        orphan_exec(d, sid, x);
        }
        if (started) {
                if (!rj->session_exec)
                        kill_leftover(x);
                restore_started(d, rj, x);
                /* Without a cgroup, anything left of the job runs as its
                 * uid: all of it is killed (an exec's uid is its box's,
                 * which sees to its own). */
                if (!rj->had_cgroup && !rj->session_exec)
                        prepare_reap_uid(d, j->job_uid);
                job_transition(j, JEV_PREPARE, NULL);
                job_transition(j, JEV_START, NULL);
        }
        /* Never started: it cannot have had side effects, so it runs. A
         * started one runs again only if its request asked for retries. */
        if (whole && own_tenant && (!started || j->attempt <= j->req.run.retries)) {
                if (started)
                        job_transition(j, JEV_RETRY, NULL);
                if (requeue(d, rj, t) == 0)
                        return;
        } else if (started) {
                job_transition(j, JEV_RESTARTED, restarted);
                capture_sizes(d, rj);
                t->ended++;
        } else {
                job_transition(j, JEV_REJECTED,
                               rj->session_id[0] ? "a session's command accepted before a restart and not started: it is not run after one"
                               : own_tenant ? "accepted before a restart, and the journal has too little of it to run it again"
                                            : "accepted before a restart; its tenant is no longer configured");
                t->rejected++;
        }
        /* Its record goes through the group commit like any job's. */
        runner_end(rj);
}

/* Workspaces from before the restart go (mounts too): jobs queued again
 * get new ones when they start — a bundle job queued again is already
 * "fetching" here, its index being asked for anew, and a workspace left
 * from its first attempt would make its start fail (EEXIST); those of
 * jobs that ended E_RESTARTED go with their records, after their
 * artifacts are copied. */
static void sweep_workspaces(struct daemon *d) {
        _cleanup_closedir_ DIR *wd = NULL;
        if (opendir_dup(d->dirs.work_fd, &wd) < 0)
                return;
        struct dirent *de;
        while ((de = readdir(wd)))
                if (proto_valid_job_id(de->d_name)) {
                        const struct rjob *rj = jobs_find(&d->jobs, de->d_name);
                        if (!rj || rj->j.state == JOB_QUEUED || rj->j.state == JOB_FETCHING)
                                workspace_remove(d->dirs.work_fd, d->dirs.work_path, de->d_name);
                }
}

int recover_run(struct daemon *d, struct sbx_error *err) {
        struct journal_entry *e = NULL;
        size_t n = 0;
        struct tally t = { 0 };
        int r = journal_replay(d->dirs.state_fd, &e, &n);
        if (r < 0)
                return sbx_error_set(err, r, "journal in %s", d->cfg->state_dir);
        if (d->cg.enabled) {
                struct keep_boxes keep = { .d = d, .e = e, .n = n };
                int k = cgroup_reap_orphans(&d->cg, keep_box_cgroup, &keep);
                if (k > 0)
                        log_notice("recovery: killed the processes of %d leftover job cgroups", k);
        }
        /* The space that outcomes may take when the disk is full; without
         * it no new jobs are accepted (commit.c probes until it is made). */
        r = journal_reserve(&d->journal);
        if (r < 0)
                commit_storage_failed(d, "the journal's reserve", r);
        for (size_t i = 0; i < n; i++) {
                const struct journal_entry *x = &e[i];
                if (x->done || jobs_find(&d->jobs, x->id))
                        continue;
                if (result_exists(d->dirs.results_fd, x->id)) {
                        /* A claimed job whose record was written here but
                         * perhaps not to the cluster's database: written
                         * there again, as the journal's "end" would be. */
                        struct journal_entry y = *x;
                        if (json_is_object(json_object_get(x->accept, "cluster")) &&
                            result_load(d->dirs.results_fd, x->id, &y.end) == 0) {
                                recover_one(d, &y, &t);
                                json_decref(y.end);
                        }
                        continue;
                }
                recover_one(d, x, &t);
        }
        journal_entries_free(e, n);
        sweep_workspaces(d);
        if (t.requeued) {
                log_notice("recovery: %u jobs accepted before a restart are queued to run", t.requeued);
                runner_schedule(d);
        }
        if (t.adopted)
                log_notice("recovery: %u sessions go on: their sandboxes outlived the last daemon", t.adopted);
        if (t.kept)
                log_notice("recovery: %u jobs that ended before a restart get the records the journal kept for them", t.kept);
        if (t.ended)
                log_notice("recovery: %u jobs interrupted by a restart get records (state error, E_RESTARTED)", t.ended);
        if (t.rejected)
                log_notice("recovery: %u jobs accepted before a restart cannot run and get records (state rejected)", t.rejected);
        if (t.handed_back)
                log_notice("recovery: %u jobs claimed from the cluster before a restart are given back to it", t.handed_back);
        /* The journal now needs only what is in memory: the jobs queued
         * again and those whose records are not yet written. */
        r = daemon_compact_journal(d);
        if (r < 0)
                log_warning("recovery: journal not compacted (%s); the old one still holds every job", strerror(-r));
        return 0;
}

struct rjob *recover_claim(struct daemon *d, json_t *accept, unsigned attempt, const char *interrupted,
                           bool (*take)(struct rjob *rj)) {
        struct journal_entry x = { 0 };
        struct tally t = { 0 };
        bool whole;
        const char *id = json_string_value(json_object_get(accept, "job"));
        if (!id || !proto_valid_job_id(id))
                return NULL;
        snprintf(x.id, sizeof(x.id), "%s", id);
        x.tenant = (char *) json_string_value(json_object_get(accept, "tenant"));
        x.caller_uid = (uid_t) json_integer_value(json_object_get(accept, "uid"));
        x.accept = accept;
        if (!x.tenant || jobs_find(&d->jobs, id))
                return NULL;
        struct rjob *rj = rebuild(d, &x, &whole);
        if (!rj)
                return NULL;
        struct job *j = &rj->j;
        rj->cluster = true;
        rj->cl_attempt = attempt;
        /* this node's part of its life starts with the claim (the debug
         * log's steps, the start-up histogram) */
        rj->t_us[T_ACCEPTED] = now_mono_us();
        jobs_add(&d->jobs, rj);
        /* Its journal line lets a restart of this node kill what it left
         * and give it back; the database already holds it durably. Not
         * synced: a daemon killed leaves it in the page cache, and a
         * machine that went down left nothing running to kill (its lease
         * is given back with the others at the start either way). */
        json_t *jr = accept_record(rj);
        if (jr && journal_append(&d->journal, jr, false) < 0)
                log_debug(JOB_LOG ": journal: its claim's line not written", JOB_LOG_ARGS(j));
        json_decref(jr);
        if (interrupted) {
                job_transition(j, JEV_PREPARE, NULL);
                job_transition(j, JEV_START, NULL);
                job_transition(j, JEV_RESTARTED, interrupted);
        } else if (!whole)
                job_transition(j, JEV_REJECTED, "its request in the cluster's database is not whole");
        else if (readmit(d, rj, &t) == 0) {
                if (!take || !take(rj))
                        queue_again(d, rj, &t);
                runner_schedule(d);
                return rj;
        }
        runner_end(rj);
        return rj;
}
