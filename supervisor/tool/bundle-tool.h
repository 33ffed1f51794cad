/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-bundle(1)'s pieces: pack (bundle-pack.c), errors and digests
 * (tool-util.c) and the rest (sbx-bundle.c). */
#pragma once

#include <stdint.h>

#include "macro.h"

/* Print "sbx-bundle: MESSAGE[: strerror(errnum)]" and return -1. */
int tool_err(int errnum, const char *fmt, ...) _printf_(2, 3);
/* SHA-256 (hex) and size of a file. */
int tool_sha256_file(const char *path, char hex[65], uint64_t *ret_size);
int tool_pack(const char *dir, const char *out);
