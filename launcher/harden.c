/* SPDX-License-Identifier: Apache-2.0 */
/* Placeholder until the hardening modules land: applies nothing and records
 * nothing, so the status record reports every protection as absent. */
#include "harden.h"

int harden_proc(int proc_dirfd, struct protections *prot, struct sbx_error *err) {
        (void) proc_dirfd;
        (void) prot;
        (void) err;
        return 0;
}

int harden_sandbox(const struct profile *p, struct protections *prot, struct sbx_error *err) {
        (void) p;
        (void) prot;
        (void) err;
        return 0;
}

int harden_exec(const struct profile *p, const int *keep_fds, size_t n_keep_fds,
                struct protections *prot, struct sbx_error *err) {
        (void) p;
        (void) keep_fds;
        (void) n_keep_fds;
        (void) prot;
        (void) err;
        return 0;
}
