/* SPDX-License-Identifier: Apache-2.0 */
/* Daemon logging: one line per event on stderr, journal-friendly (with
 * <N> priority prefixes when stderr is the journal) or JSON lines. Only the
 * daemon's top layers log; modules return errors. */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

void log_setup(bool json);
void log_msg(int prio, const char *fmt, ...) _printf_(2, 3);

#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
