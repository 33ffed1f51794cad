/* SPDX-License-Identifier: Apache-2.0 */
/* Environment variable names as sbx accepts them everywhere (profiles'
 * [env] keys and ${NAME}, sbx-launch --setenv, the supervisor's env
 * field): what a POSIX shell can name. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define ENV_NAME_MAX 255

/* The first len bytes of s are a name: 1 to ENV_NAME_MAX ASCII letters,
 * digits and '_', not starting with a digit. */
bool env_name_valid(const char *s, size_t len);
