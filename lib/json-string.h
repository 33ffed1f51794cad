/* SPDX-License-Identifier: Apache-2.0 */
/* JSON string literals from arbitrary bytes, for the launcher's status
 * record (which is written without a JSON library: the launcher's hot path
 * stays small). The output is always a complete, valid JSON string of
 * valid UTF-8, whatever the input: a path or a message may hold any byte. */
#pragma once

#include <stddef.h>

/* The room json_string_escape() needs for an input of n bytes so that it
 * never truncates: two quotes, a NUL, and at most six bytes per input byte
 * ("\u001f" or "\ufffd"). */
#define JSON_STRING_MAX(n) (6 * (size_t) (n) + 3)

/* Write s as a JSON string literal, quotes included, into buf (size >= 3)
 * and return its length (without the NUL).
 *
 * '"', '\\' and the control bytes below 0x20 are escaped; valid UTF-8
 * sequences (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF) are copied; every other byte becomes U+FFFD, written "\ufffd",
 * one per byte. When buf is too small the string is cut before the first
 * character that does not fit and still closed with its quote, so the
 * result is always valid JSON. */
size_t json_string_escape(char *buf, size_t size, const char *s);

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when the byte at
 * s does not start one. s is NUL-terminated. */
size_t json_utf8_sequence(const unsigned char *s);
