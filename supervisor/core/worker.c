/* SPDX-License-Identifier: Apache-2.0 */
#include "worker.h"

#define WORKERS 2

static struct pool workers = { .efd = -1 };

int worker_start(void) {
        return pool_start(&workers, WORKERS);
}

void worker_submit(struct work *w) {
        pool_submit(&workers, w);
}

void worker_complete(void) {
        pool_complete(&workers);
}

void worker_stop(void) {
        pool_stop(&workers);
}
