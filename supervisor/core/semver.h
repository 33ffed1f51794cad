/* SPDX-License-Identifier: Apache-2.0 */
/* Bundle versions are Semantic Versioning 2.0.0: MAJOR.MINOR.PATCH with
 * an optional -PRERELEASE and +BUILD; "latest" is the highest by semver
 * precedence. Pure, unit-tested. */
#pragma once

#include <stdbool.h>

#define SEMVER_MAX 64

/* Is s a version (at most SEMVER_MAX bytes, no leading zeros in numbers)? */
bool semver_valid(const char *s);
/* <0, 0, >0 as a precedes, equals (build metadata ignored) or follows b;
 * both must be valid. */
int semver_cmp(const char *a, const char *b);
