/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's directories: STATE (locked: one daemon per state
 * directory), STATE/results, and the workspaces (STATE/work or
 * workspace_dir, also locked and owned by the daemon). */
#pragma once

#include "conf.h"
#include "error.h"

struct statedir {
        int state_fd;
        int results_fd;
        int work_fd;
        char *work_path;     /* workspace_dir, or STATE/work */
        const char *state_path;
};

int statedir_open(struct statedir *sd, const struct config *cfg, struct sbx_error *err);
void statedir_close(struct statedir *sd);
