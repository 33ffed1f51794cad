/* SPDX-License-Identifier: Apache-2.0 */
/* Strict parsers for the numbers people write in profiles, configs and on
 * command lines. Each returns 0 or -EINVAL/-ERANGE and never accepts
 * trailing garbage, signs where none belong, or overflow. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Decimal unsigned integer, no sign, no leading/trailing space, <= max. */
int parse_uint64(const char *s, uint64_t max, uint64_t *ret);

/* Size with optional binary suffix: 512, 64K, 64k, 512M, 2G, 1T, also KiB/MiB/
 * GiB/TiB and a plain "B". "unlimited" gives UINT64_MAX. */
int parse_size(const char *s, uint64_t *ret);

/* Duration with unit: 1500ms, 30s, 5m, 2h, 1d; a bare number means seconds.
 * Result in milliseconds. "unlimited"/"0" are not special here: the caller
 * decides what 0 means. */
int parse_duration_ms(const char *s, uint64_t *ret);

/* A number of CPUs with at most three decimals, "0.5", "2", "1.25", in
 * thousandths of a CPU; 0 is -ERANGE (the caller checks its own range). */
int parse_cpus_milli(const char *s, uint64_t *ret);

/* yes/no/true/false/on/off/1/0 */
int parse_bool(const char *s, bool *ret);

/* Octal file mode up to 07777, e.g. 1777, 0755. */
int parse_mode(const char *s, mode_t *ret);

/* Format helpers used by the profile writer; return buf. */
const char *format_size(uint64_t bytes, char *buf, size_t len);
const char *format_duration_ms(uint64_t ms, char *buf, size_t len);
