/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statedir.h"
#include "util.h"

/* Hold an exclusive lock on dirfd/name for the daemon's life (the lock dies
 * with the process); key and path name the directory in errors. */
static int lock_dir(int dirfd, const char *name, const char *key, const char *path, struct sbx_error *err) {
        int lock = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock < 0)
                return sbx_error_set(err, errno, "%s %s: lock", key, path);
        if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
                int e = errno;
                close(lock);
                if (e == EWOULDBLOCK)
                        return sbx_error_msg(err, EBUSY, "another sbx-supervisord is using %s %s", key, path);
                return sbx_error_set(err, e, "%s %s: lock", key, path);
        }
        /* Deliberately kept open: closing it would drop the lock. */
        return 0;
}

/* The workspaces: STATE/work, or workspace_dir (its own file system, say a
 * tmpfs: scratch that never outlives its job need not share the results'
 * disk). The daemon owns it alone: no one else may write it, and a lock
 * keeps a second daemon from sweeping the first one's workspaces. */
static int open_work_dir(struct statedir *sd, const struct config *cfg, struct sbx_error *err) {
        const char *key = cfg->work_dir ? "workspace_dir" : "state_dir";
        if (cfg->work_dir) {
                sd->work_path = strdup(cfg->work_dir);
                if (!sd->work_path)
                        return sbx_error_msg(err, ENOMEM, "out of memory");
                if (mkdir(sd->work_path, 0711) < 0 && errno != EEXIST)
                        return sbx_error_set(err, errno, "workspace_dir %s", sd->work_path);
                sd->work_fd = open(sd->work_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        } else {
                if (asprintf(&sd->work_path, "%s/work", cfg->state_dir) < 0) {
                        sd->work_path = NULL;
                        return sbx_error_msg(err, ENOMEM, "out of memory");
                }
                if (mkdirat(sd->state_fd, "work", 0711) < 0 && errno != EEXIST)
                        return sbx_error_set(err, errno, "state_dir %s", cfg->state_dir);
                sd->work_fd = openat(sd->state_fd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (sd->work_fd < 0)
                return sbx_error_set(err, errno, "%s %s", key, sd->work_path);
        struct stat st;
        if (fstat(sd->work_fd, &st) < 0)
                return sbx_error_set(err, errno, "%s %s", key, sd->work_path);
        if (st.st_uid != geteuid())
                return sbx_error_msg(err, EPERM, "%s %s is owned by uid %u, not by the daemon", key, sd->work_path,
                                     (unsigned) st.st_uid);
        if (fchmod(sd->work_fd, 0711) < 0)
                return sbx_error_set(err, errno, "%s %s: chmod", key, sd->work_path);
        return lock_dir(sd->work_fd, ".lock", key, sd->work_path, err);
}

int statedir_open(struct statedir *sd, const struct config *cfg, struct sbx_error *err) {
        const char *path = cfg->state_dir;
        sd->state_path = path;
        if (mkdir(path, 0711) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "state_dir %s", path);
        sd->state_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sd->state_fd < 0)
                return sbx_error_set(err, errno, "state_dir %s", path);
        /* One daemon per state directory: a second one would "recover" the
         * first one's running jobs. */
        int r = lock_dir(sd->state_fd, "lock", "state_dir", path, err);
        if (r < 0)
                return r;
        /* The job uid must be able to reach its workspace (the launcher
         * binds it), but not list anyone's: 0711 on the path. */
        if (fchmod(sd->state_fd, 0711) < 0)
                return sbx_error_set(err, errno, "state_dir %s: chmod", path);
        if (mkdirat(sd->state_fd, "results", 0700) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "state_dir %s: results", path);
        sd->results_fd = openat(sd->state_fd, "results", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sd->results_fd < 0)
                return sbx_error_set(err, errno, "state_dir %s: results", path);
        /* A front without privilege: the workspaces are sbx-privd's. */
        if (cfg->user) {
                if (cfg->work_dir)
                        sd->work_path = strdup(cfg->work_dir);
                else if (asprintf(&sd->work_path, "%s/work", path) < 0)
                        sd->work_path = NULL;
                return sd->work_path ? 0 : sbx_error_set(err, ENOMEM, "state_dir");
        }
        return open_work_dir(sd, cfg, err);
}

void statedir_close(struct statedir *sd) {
        if (sd->results_fd >= 0)
                close(sd->results_fd);
        if (sd->work_fd >= 0)
                close(sd->work_fd);
        if (sd->state_fd >= 0)
                close(sd->state_fd);
        sd->results_fd = sd->work_fd = sd->state_fd = -1;
        free(sd->work_path);
        sd->work_path = NULL;
}
