/* SPDX-License-Identifier: Apache-2.0 */
/* The network audit's ring buffer read without bpf(): a front without
 * privilege gets the ring buffer map's descriptor and its size from
 * sbx-privd (NET_RING) and may make no bpf() call at all
 * (kernel.unprivileged_bpf_disabled), so it maps the map itself — the
 * consumer position's page writable, the producer position's page and the
 * data (mapped twice in a row by the kernel, so a record that wraps reads
 * in one piece) read-only — and walks the records by hand. Waiting is
 * epoll on the same descriptor. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct auditring {
        unsigned long *cons_pos;  /* ours to move */
        const unsigned long *prod_pos;
        const uint8_t *data;      /* size bytes, then the same again */
        size_t size, page;
        void *cons_map, *prod_map; /* NULL for rings of auditring_init */
};

/* Map the ring of the map fd (size: data bytes, a power of two of a page
 * at least, as the helper said): 0 or -errno. */
int auditring_map(struct auditring *r, int fd, size_t size);
void auditring_unmap(struct auditring *r);
/* A ring over memory laid out as the kernel lays it out (the unit tests). */
void auditring_init(struct auditring *r, unsigned long *cons_pos, const unsigned long *prod_pos, const uint8_t *data, size_t size);

/* Hand each committed record to fn, in order, and give its room back;
 * stops at one the kernel is still writing. Records discarded by the
 * programs are skipped. Returns how many fn got, or -EBADMSG for a
 * record longer than the ring (the positions are left where they were
 * before it). */
int auditring_consume(struct auditring *r, void (*fn)(void *arg, const void *rec, size_t len), void *arg);
