/* SPDX-License-Identifier: Apache-2.0 */
/* The live jobs: each job from its acceptance until its clients have been
 * told of its durable end, with what the daemon needs to run it; ids, and
 * lookups by id and by idempotency key. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "outbox.h"
#include "privd-abi.h"
#include "job.h"
#include "loop.h"
#include "netevents.h"
#include "result.h"
#include "worker.h"

struct cache_entry;
struct netaudit_att;
struct netremote_att;
struct netlink_job;
struct dnsproxy;
struct secretproxy;
struct deps_install;
struct daemon;

/* Steps of a job's life, in monotonic microseconds, for the debug log. */
enum { T_ACCEPTED, T_STARTED, T_EXITED, T_COMMIT, T_TOLD, T_N };

struct rjob {
        struct job j;
        struct daemon *d;
        char req_digest[65];      /* proto_request_digest(): idempotency */
        struct list link;         /* in the registry */
        struct list watches;      /* struct job_watch.job_link: waiters and followers */

        /* runner */
        char *profile_path;       /* the named profile, resolved */
        pid_t pid;                /* the launcher */
        unsigned long long starttime;
        int timer_fd;             /* wall clock, then grace period */
        struct source timer_src;
        int cgroup_fd;            /* the job's cgroup, -1 without */
        unsigned cg_limits;       /* CG_LIMIT_* it enforces */
        bool slot;                /* counted as running by the scheduler */
        bool had_cgroup;          /* it ran in a cgroup of its own */
        bool cpu_watched;         /* its cgroup's CPU time is checked against cpu_s */
        bool own_uid;             /* its uid is from the pool (given back by prepare_release) */
        bool ws_mounted;          /* its workspace is a tmpfs of its own */
        bool ws_noswap;           /* ... mounted noswap: its pages never go to swap */
        bool ws_encrypted;        /* a directory on a disk, encrypted with a key of its own */
        /* privjob.c: the job as sbx-privd holds it, when the front runs without privilege */
        struct privd_handle ph;
        bool ph_open;             /* JOB_OPEN answered, JOB_CLOSE not yet sent */
        int ws_fd;                /* its workspace, from JOB_OPEN, until the artifacts are out */
        char *prep_error;         /* why its workspace could not be made */
        char setup_step[32];      /* the launcher's failed set-up step, or "" (for the metrics) */
        /* its callback's outbox entry, written with its record (commit.c) */
        char cb_delivery[OUTBOX_DELIVERY_LEN + 1];
        struct outbox_entry cb_entry;
        struct cb_prog *cb_prog;  /* its progress callbacks (callback-progress.c), while it runs */
        char *cb_text;
        size_t cb_len;
        char cb_name[40], cb_tmp[48];
        bool cb_fenced;           /* cluster: another node's result stands, with its callback */
        int64_t cgroup_cpu_us;    /* the cgroup's CPU time at the end, or -1 */

        struct capture cap;
        /* job-secrets.c: the values of the secrets it asked for (shared
         * with its session's box), and what redacts them from its output */
        struct job_secrets *secrets;
        struct redactor *redact;

        /* A session's (session/): the sandbox that runs its agent, sbx-init
         * (the box), or one command the agent ran in it (an exec). */
        char session_id[PROTO_SESSION_ID_LEN + 1]; /* "": neither */
        bool session_box;
        bool session_exec;
        const char *session_end;  /* the box: why the session ended (its record), NULL while it lives */
        int session_fd;           /* the box: the agent's listening socket, the launcher's fd 8 until spawned */
        uint64_t session_idle_ms; /* the box: its idle timeout (journaled with it) */
        bool session_adopt;       /* the box: it outlived the last daemon, which recovery found running */
        uint32_t *session_orphans; /* ... and the agent's handles of its execs that the restart interrupted */
        unsigned n_session_orphans;
        uint32_t session_handle;  /* an exec: its handle in the agent (0 until it started) */
        json_t *session_service;  /* the box: its exposed ports and token (session/'s), journaled with its start */
        /* Of a tenant's warm pool (front/warm.c): the box, made ahead and
         * used once; or the job that ran in one (an exec whose box is it). */
        bool warm;
        bool warm_failed;         /* the box ended before its agent was ready (session/ says) */
        /* An exec: its box's sandbox as the box's start found it, for the
         * exec's record (it ran in that cgroup and workspace). */
        struct {
                bool cgroup, disk_quota, noswap, encrypted;
                unsigned cg_limits;
        } box;
        /* An exec: signal its process group (set by session/, which speaks
         * to the agent); the runner calls it to stop or kill it. */
        void (*session_signal)(struct rjob *rj, int signo);
        void *session;            /* session/'s, opaque here */

        /* netjob.c: its network audit, and what it recorded */
        struct netaudit_att *net_att;
        struct netremote_att *net_ratt; /* the same, done by sbx-privd (netremote.c) */
        bool net_audited;         /* the audit was attached for its whole run */
        struct netevents net;
        struct netlink_job *netlink; /* a restricted job's veth */
        char *net_fail;           /* why its network could not be set up */
        struct dnsproxy *dns;     /* its DNS proxy (dnsproxy.c) */
        struct secretproxy *sproxy; /* its header secrets' proxy (secretproxy.c), or NULL */
        /* its Python packages (front/deps-ops.c): the layer's directory
         * once it is at hand, what the record says of them, the install
         * it waits for */
        char *deps_layer;
        json_t *deps_info;
        struct deps_install *deps_wait;

        /* bundle.c: the resolution it waits for, then the tree it holds */
        void *bundle_wait;
        struct cache_entry *bundle_tree;

        /* the end: artifacts, then the record through the group commit */
        struct work work;
        json_t *artifacts;
        json_t *limit_hit;        /* the record's "limit_hit", or NULL */
        bool artifacts_truncated;
        bool collect;             /* artifacts to copy out (runner_end) */
        char *artifacts_error;
        bool want_value;          /* its $SBX_RESULT is read at its end (runner_end) */
        json_t *value;            /* what it held */
        char *value_error;        /* or why it is not the value */
        json_t *rec;
        char *rec_text;           /* as stored, until synced */
        size_t rec_len;
        char rec_name[RESULT_NAME_MAX], rec_tmp[RESULT_NAME_MAX];
        int rec_err;              /* the last commit's verdict on it */
        unsigned rec_attempts;
        json_t *rec_kept;         /* after a restart: the record the journal kept, written as it is */
        uint64_t end_gen;         /* the batch whose journal sync holds its "end" line; 0: none appended */
        bool end_durable;         /* that line is synced: a restart keeps its outcome */
        bool end_failed;          /* the journal could not take that line (logged once) */
        struct list commit_link;  /* in a batch, or waiting for a retry */
        /* cluster mode (front/cluster-ops.c): claimed from the database,
         * at this attempt, which fences its result */
        bool cluster;
        unsigned cl_attempt;

        uint64_t t_us[T_N];
};

struct jobs {
        struct list all;          /* struct rjob.link */
        unsigned n;
};

void jobs_init(struct jobs *js);
/* A new job (state queued, nothing started), not yet registered. */
struct rjob *rjob_new(struct daemon *d);
/* Free what it owns; for loop_defer_free. */
void rjob_free(void *p);
void jobs_add(struct jobs *js, struct rjob *rj);
void jobs_remove(struct jobs *js, struct rjob *rj);
struct rjob *jobs_find(struct jobs *js, const char *id);
struct rjob *jobs_find_key(struct jobs *js, const struct tenant *t, const char *key);
/* "j" and 20 random lowercase hex digits. */
void jobs_new_id(char buf[static 24]);
/* A session's sandbox: why the session ended, as its record says. */
const char *rjob_session_end(const struct rjob *rj);

static inline struct rjob *rjob_of(struct job *j) {
        return container_of(j, struct rjob, j);
}
