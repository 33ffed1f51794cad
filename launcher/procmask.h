/* SPDX-License-Identifier: Apache-2.0 */
/* Masking a freshly mounted procfs. */
#pragma once

#include "protections.h"

/* Hide the entries that leak kernel memory or state or act on the whole
 * machine (kcore, keys, timer_list, sched_debug, sysrq-trigger,
 * latency_stats, acpi, scsi, ...) under empty read-only mounts, and make
 * the kernel-tunable trees (sys, bus, fs, irq) read-only. proc_dirfd is a
 * directory fd (O_PATH is fine) of the new procfs mount. Entries the
 * kernel does not have are skipped. Needs CAP_SYS_ADMIN in the user
 * namespace that owns the mount namespace. */
int procmask_apply(int proc_dirfd, struct sbx_error *err);
