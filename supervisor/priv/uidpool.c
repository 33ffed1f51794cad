/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uidpool.h"

int uidpool_init(struct uidpool *p, uid_t first, uint32_t size) {
        memset(p, 0, sizeof(*p));
        if (size == 0)
                return 0;
        uint64_t last = (uint64_t) first + size - 1;
        /* 65534 is the overflow uid (nobody): never a job's own. */
        if (size > UIDPOOL_MAX_SIZE || first == 0 || last >= (uint64_t) (uid_t) -1 || (first <= 65534 && last >= 65534))
                return -EINVAL;
        p->used = calloc((size + 63) / 64, sizeof(uint64_t));
        if (!p->used)
                return -ENOMEM;
        p->first = first;
        p->size = size;
        return 0;
}

void uidpool_done(struct uidpool *p) {
        free(p->used);
        memset(p, 0, sizeof(*p));
}

bool uidpool_contains(const struct uidpool *p, uid_t uid) {
        return p->size && uid >= p->first && (uint64_t) uid - p->first < p->size;
}

static bool is_used(const struct uidpool *p, uint32_t i) {
        return p->used[i / 64] & (1ull << (i % 64));
}

static void set_used(struct uidpool *p, uint32_t i, bool on) {
        if (on)
                p->used[i / 64] |= 1ull << (i % 64);
        else
                p->used[i / 64] &= ~(1ull << (i % 64));
}

bool uidpool_in_use(const struct uidpool *p, uid_t uid) {
        return uidpool_contains(p, uid) && is_used(p, uid - p->first);
}

int uidpool_take(struct uidpool *p, uid_t *ret) {
        if (!p->size || p->n_used == p->size)
                return -EAGAIN;
        for (uint32_t k = 0; k < p->size; k++) {
                uint32_t i = (p->next + k) % p->size;
                if (is_used(p, i))
                        continue;
                set_used(p, i, true);
                p->n_used++;
                p->next = (i + 1) % p->size;
                *ret = p->first + i;
                return 0;
        }
        return -EAGAIN;
}

bool uidpool_claim(struct uidpool *p, uid_t uid) {
        if (!uidpool_contains(p, uid))
                return false;
        uint32_t i = uid - p->first;
        if (!is_used(p, i)) {
                set_used(p, i, true);
                p->n_used++;
        }
        return true;
}

void uidpool_release(struct uidpool *p, uid_t uid) {
        if (!uidpool_contains(p, uid))
                return;
        uint32_t i = uid - p->first;
        if (is_used(p, i)) {
                set_used(p, i, false);
                p->n_used--;
        }
}
