/* SPDX-License-Identifier: Apache-2.0 */
/* Bytes as a JSON string member written in pieces, for a reply too large
 * to build whole (a logs response: logs.c). The member is what
 * proto_set_data() makes of the same bytes: a string when they are valid
 * UTF-8 as jansson checks it, else base64 under NAME_b64. Which one must
 * be known before the first piece, so the bytes are checked first, in
 * pieces too (jsonpiece_check), then encoded piece by piece
 * (jsonpiece_encode); the pieces joined are byte for byte what jansson
 * writes for the whole. I/O free. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct utf8_state {
        unsigned need;        /* continuation bytes still expected */
        uint32_t cp, min;     /* the code point so far, its least valid value */
        bool bad;
};

void jsonpiece_check_init(struct utf8_state *u);
void jsonpiece_check(struct utf8_state *u, const unsigned char *s, size_t n);
/* Were all the bytes fed valid UTF-8, ending on a whole character? */
bool jsonpiece_check_end(const struct utf8_state *u);

/* Append s to *buf (of *len bytes) as the inside of a JSON string (utf8:
 * escaped as jansson escapes it) or as base64 (every piece but the last a
 * multiple of 3 bytes, so the pieces join). -ENOMEM or 0. */
int jsonpiece_encode(char **buf, size_t *len, const unsigned char *s, size_t n, bool utf8);
/* Append n bytes of s as they are. */
int jsonpiece_append(char **buf, size_t *len, const char *s, size_t n);
