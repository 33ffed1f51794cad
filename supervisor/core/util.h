/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by the supervisor's modules and sbxctl: an intrusive
 * doubly linked list, clocks, and a few fd utilities. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <time.h>

#include "fileio.h"
#include "macro.h"

struct list {
        struct list *prev, *next;
};

#define LIST_INIT(l) ((struct list){ &(l), &(l) })
#define container_of(ptr, type, member) ((type *) ((char *) (ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_for_each_safe(pos, tmp, head) \
        for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

static inline void list_init(struct list *l) {
        l->prev = l->next = l;
}

static inline bool list_empty(const struct list *l) {
        return l->next == l;
}

static inline void list_add_tail(struct list *head, struct list *n) {
        n->prev = head->prev;
        n->next = head;
        head->prev->next = n;
        head->prev = n;
}

static inline void list_del(struct list *n) {
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->prev = n->next = n;
}

/* CLOCK_MONOTONIC in micro- and milliseconds, CLOCK_REALTIME in
 * milliseconds. */
uint64_t now_mono_us(void);
uint64_t now_mono_ms(void);
uint64_t now_real_ms(void);

/* RFC 3339 UTC with milliseconds: "2026-11-22T04:21:18.123Z". */
const char *format_rfc3339(uint64_t real_ms, char *buf, size_t len);

/* Remove a directory tree below dirfd/name without following symlinks. */
int rm_rf_at(int dirfd, const char *name);

/* json as one compact line ending in '\n' (malloc'd, not NUL-terminated
 * beyond that); the form of every JSON line sbx writes: the journal, the
 * audit log, result records, protocol messages. NULL without memory. */
typedef struct json_t json_t;
char *json_line(const json_t *j, size_t *ret_len);
/* Append msg's line (json_line) to the buffer *buf of *len bytes; msg is
 * taken (NULL, as from a failed json_pack, is -ENOMEM). */
int json_line_append(char **buf, size_t *len, json_t *msg);

/* Is word one of the space-separated words of list? */
bool words_contain(const char *list, const char *word);

/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void hex_encode(const unsigned char *in, size_t len, char *out);

/* A directory stream over a duplicate of dirfd, so that closing the stream
 * leaves the caller's fd open. Returns 0 or a negative errno. */
int opendir_dup(int dirfd, DIR **ret);

static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* A tenant or profile name: 1 to 64 of [A-Za-z0-9._-], not starting with
 * '.', so it is safe as a file name and in messages. */
bool name_valid(const char *s);
