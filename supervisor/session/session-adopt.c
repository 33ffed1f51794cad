/* SPDX-License-Identifier: Apache-2.0 */
/* Sessions across a restart. A box's launcher has no parent-death signal:
 * when the daemon dies, the sandbox and its agent go on (sbx-init
 * --listen-fd keeps its processes, holds their ends and waits for the next
 * connection, for its --orphan-timeout). Recovery (job/recover.c) finds the
 * launcher again by the journal's pid and start time and watches it
 * through a pidfd; here the session is made again around it (its id,
 * tenant, idle timeout; its TTL is the box's wall clock, which counts from
 * the start the journal kept) and the daemon connects to the agent's
 * socket, which the agent still listens on. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"
#include "log.h"
#include "runner.h"
#include "session-internal.h"
#include "session.h"

static void adopt_one(struct sessions *ss, struct rjob *box) {
        struct sbx_error err;
        sbx_error_clear(&err);
        struct session *s = session_alloc(ss, box, box->session_id, box->session_idle_ms, &err);
        if (!s) {
                log_error("session %s: cannot be made again after the restart (%s): it ends", box->session_id, err.msg);
                box->session_end = "restarted";
                runner_stop(box, JEV_CANCEL);
                return;
        }
        s->created_ms = box->j.created_ms;
        /* A warm sandbox is made again rather than kept: the pool after a
         * restart is made under the configuration as it is now. */
        if (s->warm) {
                log_info("session %s (tenant %s): a warm sandbox from before the restart: it ends", s->id, s->tenant_name);
                s->taken = true;
                session_end(s, "restarted");
                return;
        }
        session_restore_service(s);
        log_info("session %s (tenant %s): its sandbox outlived the restart; connecting to its agent again", s->id,
                 s->tenant_name);
        session_connect(s);
}

static bool is_live(const struct sessions *ss, const char *name) {
        for (const struct list *p = ss->live.next; p != &ss->live; p = p->next)
                if (streq(list_entry(p, struct session, link)->id, name))
                        return true;
        return false;
}

/* A session recovery ended (its sandbox was gone, or could not be
 * watched again): requests about it get E_SESSION_ENDED saying why. */
static void remember_ended(struct sessions *ss, struct rjob *box) {
        struct sbx_error err;
        struct session *s = session_alloc(ss, box, box->session_id, 0, &err);
        if (!s)
                return;
        s->created_ms = box->j.created_ms;
        s->end_reason = box->session_end;
        box->session = NULL;
        session_forget(s);
}

void sessions_adopt(struct sessions *ss) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &ss->jobs->all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                if (!rj->session_box || rj->session)
                        continue;
                if (rj->session_adopt && rj->j.state == JOB_RUNNING)
                        adopt_one(ss, rj);
                else if (rj->session_end && rj->j.state == JOB_DONE)
                        remember_ended(ss, rj);
        }
        /* The sockets of sessions that did not go on lead nowhere. */
        _cleanup_closedir_ DIR *dir = NULL;
        if (opendir_dup(ss->dir_fd, &dir) < 0)
                return;
        struct dirent *de;
        while ((de = readdir(dir)))
                if (de->d_name[0] != '.' && !is_live(ss, de->d_name))
                        unlinkat(ss->dir_fd, de->d_name, 0);
}

void session_stop_orphans(struct session *s) {
        struct rjob *box = s->box;
        if (!box)
                return;
        for (unsigned i = 0; i < box->n_session_orphans; i++) {
                struct sbx_init_signal m = { .handle = box->session_orphans[i], .signo = SIGKILL, .flags = SBX_INIT_SIGNAL_GROUP };
                /* ESRCH: it ended meanwhile; its record says E_RESTARTED all the same. */
                if (agent_call(s, SBX_INIT_SIGNAL, &m, sizeof(m)) < 0)
                        break;
        }
        if (box->n_session_orphans)
                log_info("session %s: %u commands the restart interrupted were stopped", s->id, box->n_session_orphans);
        free(box->session_orphans);
        box->session_orphans = NULL;
        box->n_session_orphans = 0;
}
