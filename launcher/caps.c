/* SPDX-License-Identifier: Apache-2.0 */
/* Capabilities: the command's process holds a full set in the sandbox's
 * user namespace until here. Everything goes, bounding set included, so
 * that neither the job nor anything it executes (file capabilities, a
 * setuid binary that slipped in) can regain one (CVE-2022-29162: runc
 * left the inheritable set filled). */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <linux/capability.h>
#include <cap-ng.h>

#include "caps.h"

/* The common case, nothing kept, in plain system calls: libcap-ng would
 * read /proc/self/status three times and capget twice before doing the
 * same drops. The bounding set goes first, while CAP_SETPCAP is still
 * effective; every drop is checked, and the kernel's 0 for a drop means
 * the bit is clear, so a read-back of each bit would only repeat it. */
static int drop_all(struct sbx_error *err) {
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };
        int c;

        for (c = 0; c <= CAP_LAST_CAP + 32; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
                        if (errno == EINVAL)
                                break; /* past the kernel's last capability */
                        return sbx_error_set(err, errno, "capabilities: dropping %d from the bounding set", c);
                }
        if (c == 0 || c > CAP_LAST_CAP + 32)
                return sbx_error_msg(err, EPERM, "capabilities: the bounding set could not be emptied");
        if (syscall(SYS_capset, &hdr, data) < 0)
                return sbx_error_set(err, errno, "capabilities: clearing the sets");
        /* Ambient is a subset of permitted and inheritable, both empty
         * now, so the kernel has cleared it already; say it anyway. */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return sbx_error_set(err, errno, "capabilities: clearing the ambient set");
        return 0;
}

int caps_drop(const struct profile *p, struct protections *prot, struct sbx_error *err) {
        int r;

        if (p->n_caps == 0) {
                r = drop_all(err);
                if (r < 0)
                        return r;
        } else {
                capng_clear(CAPNG_SELECT_ALL);
                for (size_t i = 0; i < p->n_caps; i++) {
                        /* Ambient needs the capability in permitted and
                         * inheritable; ambient is what carries it across
                         * execve() for a non-root uid, the bounding set for
                         * root. */
                        r = capng_update(CAPNG_ADD,
                                         CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_INHERITABLE |
                                         CAPNG_BOUNDING_SET | CAPNG_AMBIENT,
                                         (unsigned) p->caps[i]);
                        if (r < 0)
                                return sbx_error_msg(err, EINVAL, "capabilities: cannot keep capability %d", p->caps[i]);
                }
                /* Bounding set first (needs CAP_SETPCAP, still held), then
                 * the process sets; libcap-ng orders this itself. */
                r = capng_apply(CAPNG_SELECT_ALL);
                if (r < 0)
                        return sbx_error_msg(err, EPERM, "capabilities: applying the kept set failed (libcap-ng error %d)", r);
                return 0;
        }

        /* Trust but verify: re-read what the kernel now holds. */
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };
        if (syscall(SYS_capget, &hdr, data) < 0)
                return sbx_error_set(err, errno, "capabilities: reading back the sets");
        for (size_t i = 0; i < ARRAY_SIZE(data); i++)
                if (data[i].effective || data[i].permitted || data[i].inheritable)
                        return sbx_error_msg(err, EPERM, "capabilities: a capability survived the drop");
        /* The ambient set needs no check: the kernel keeps it a subset of
         * permitted and inheritable, both empty now. */
        prot->caps_dropped = true;
        return 0;
}
