/* SPDX-License-Identifier: Apache-2.0 */
/* The one helper thread: it runs the fsyncs of a group commit (the journal,
 * the results directory) so that the event loop keeps serving other clients
 * and jobs while the disk works. It touches nothing but the file
 * descriptors it is handed and reports completion on an eventfd. */
#pragma once

#include <stdbool.h>

/* Start the thread (with every signal blocked, as the caller's mask must
 * already be); returns the eventfd that becomes readable on completion. */
int syncer_start(void);
/* Ask for fdatasync(journal_fd) and fsync(dir_fd); -1 skips one. Only one
 * request may be in flight. */
void syncer_submit(int journal_fd, int dir_fd);
/* After the eventfd fired: consume it; returns 0 or the first -errno. */
int syncer_complete(void);
void syncer_stop(void);
