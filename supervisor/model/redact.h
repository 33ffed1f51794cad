/* SPDX-License-Identifier: Apache-2.0 */
/* Redaction of a job's secrets from what it prints: every occurrence of a
 * secret's value, raw or in one of the encodings a program is likely to
 * print it in, becomes "[secret NAME]". A redactor holds the secrets and
 * their patterns; a redact_stream applies them to one stream of output fed
 * in chunks, holding back only the bytes that may still turn out to be the
 * start of a pattern. The stream's result never depends on how the bytes
 * were cut into chunks: it equals redact_buffer() on the whole.
 *
 * Matching is leftmost first, then longest at that position; after a
 * replacement the scan resumes past the replaced bytes, so of two
 * overlapping occurrences the later one is cut and its tail is printed.
 *
 * Pure but for redact_fd(); not thread-safe (the event loop's). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REDACT_MAX_SECRETS 32
/* A value shorter than this is refused by redactor_add (-EINVAL): it would
 * garble ordinary output. */
#define REDACT_MIN_LEN 8
#define REDACT_MAX_LEN 16384
#define REDACT_NAME_MAX 64
/* raw, base64, base64url, their prefixes the value alone decides (when its
 * length is not a multiple of 3), hex, HEX, %XX, %xx */
#define REDACT_FORMS 9

struct redactor;

struct redactor *redactor_new(void);
/* Wipes the secrets' bytes before freeing them. NULL is fine. */
void redactor_free(struct redactor *r);
/* Adds secret `name` (1..64 bytes of [A-Za-z0-9_], unique within r) with its
 * value (REDACT_MIN_LEN..REDACT_MAX_LEN bytes, any bytes, NUL included) and
 * the forms the value is also searched in: the raw bytes; standard base64
 * and URL-safe base64, each without '=' padding, and, when the length is
 * not a multiple of 3, each without its last character (what the value
 * decides alone, when more bytes were encoded after it); lower- and upper-case hex;
 * URL percent-encoding (RFC 3986: unreserved chars kept, every other byte
 * %XX upper-case hex; and the same with lower-case hex digits). A form
 * equal to a pattern already present (of this secret or an earlier one) is
 * not added twice: its occurrences are named for the secret that had it
 * first. Returns 0, -EINVAL (bad or repeated name, bad length), -E2BIG
 * (REDACT_MAX_SECRETS already), -ENOMEM; on error r is unchanged. */
int redactor_add(struct redactor *r, const char *name, const void *value, size_t len);
/* Secrets added. */
size_t redactor_count(const struct redactor *r);
/* Secret i's name; NULL when i >= redactor_count(). */
const char *redactor_name(const struct redactor *r, size_t i);
/* Replacements made so far for secret i, over all streams and buffers; 0
 * when i >= redactor_count(). */
uint64_t redactor_hits(const struct redactor *r, size_t i);
/* The longest pattern: a stream holds back at most this - 1 bytes. */
size_t redactor_max_pattern(const struct redactor *r);
/* Distinct patterns over all secrets (at most REDACT_FORMS a secret). */
size_t redactor_pattern_count(const struct redactor *r);

/* One stream of output (stdout, a file...), embeddable in another struct.
 * Bytes are replaced by the marker "[secret NAME]" wherever any pattern
 * occurs, also when a pattern is split across feeds. The stream uses r
 * until released; secrets added to r meanwhile apply from the next feed. */
struct redact_stream {
        struct redactor *r;
        char *held; /* held back from the last feed, then room to join the next one's head */
        size_t held_len;
        size_t held_cap;
        char *out; /* what the last feed emits */
        size_t out_len;
        size_t out_cap;
};

void redact_stream_init(struct redact_stream *s, struct redactor *r);
/* Feed n bytes; *out and *out_len are what may be emitted now (a buffer owned
 * by the stream, valid until the next call). final=true flushes everything
 * held (call it once at the end, with n possibly 0); the stream is then
 * empty and could start over. Returns 0 or -ENOMEM: then nothing is
 * emitted (*out_len 0) and the stream is only good for release. */
int redact_stream_feed(struct redact_stream *s, const void *in, size_t n, bool final, const char **out, size_t *out_len);
/* Frees the buffers (the held bytes wiped: they may be a secret's head). */
void redact_stream_release(struct redact_stream *s);

/* One-shot on a whole buffer: a malloc'd result (NUL-terminated for
 * convenience, length in *out_len). Returns 0 or -ENOMEM. */
int redact_buffer(struct redactor *r, const void *in, size_t n, char **out, size_t *out_len);
/* Copies in_fd to out_fd (both plain files, read from the current offset)
 * redacted, in chunks of 64 KiB; returns bytes written or -errno. Blocking:
 * not for the event loop with big files. */
int64_t redact_fd(struct redactor *r, int in_fd, int out_fd);
