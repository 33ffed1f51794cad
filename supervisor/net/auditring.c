/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include "auditring.h"

void auditring_init(struct auditring *r, unsigned long *cons_pos, const unsigned long *prod_pos, const uint8_t *data, size_t size) {
        *r = (struct auditring){ .cons_pos = cons_pos, .prod_pos = prod_pos, .data = data, .size = size };
}

int auditring_map(struct auditring *r, int fd, size_t size) {
        long page = sysconf(_SC_PAGESIZE);
        *r = (struct auditring){ 0 };
        if (page <= 0 || size < (size_t) page || (size & (size - 1)))
                return -EINVAL;
        /* The kernel's layout: the consumer page, the producer page, then
         * the data twice. Only the first page may be mapped writable. */
        void *c = mmap(NULL, (size_t) page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (c == MAP_FAILED)
                return -errno;
        void *p = mmap(NULL, (size_t) page + 2 * size, PROT_READ, MAP_SHARED, fd, page);
        if (p == MAP_FAILED) {
                int e = -errno;
                munmap(c, (size_t) page);
                return e;
        }
        auditring_init(r, c, p, (const uint8_t *) p + page, size);
        r->page = (size_t) page;
        r->cons_map = c;
        r->prod_map = p;
        return 0;
}

void auditring_unmap(struct auditring *r) {
        if (r->cons_map)
                munmap(r->cons_map, r->page);
        if (r->prod_map)
                munmap(r->prod_map, r->page + 2 * r->size);
        *r = (struct auditring){ 0 };
}

int auditring_consume(struct auditring *r, void (*fn)(void *arg, const void *rec, size_t len), void *arg) {
        unsigned long cons = __atomic_load_n(r->cons_pos, __ATOMIC_ACQUIRE);
        unsigned long prod = __atomic_load_n(r->prod_pos, __ATOMIC_ACQUIRE);
        int n = 0;
        while (cons < prod) {
                const uint32_t *hdr = (const uint32_t *) (r->data + (cons & (r->size - 1)));
                /* The length word is the commit: read it before the record. */
                uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
                if (len & BPF_RINGBUF_BUSY_BIT)
                        break;
                size_t dlen = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
                if (dlen > r->size - BPF_RINGBUF_HDR_SZ)
                        return -EBADMSG;
                cons += (dlen + BPF_RINGBUF_HDR_SZ + 7) & ~(size_t) 7;
                if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
                        fn(arg, (const uint8_t *) hdr + BPF_RINGBUF_HDR_SZ, dlen);
                        n++;
                }
                /* Given back record by record: the programs can reuse
                 * the room while fn works on the next. */
                __atomic_store_n(r->cons_pos, cons, __ATOMIC_RELEASE);
        }
        return n;
}
