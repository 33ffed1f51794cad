/* SPDX-License-Identifier: Apache-2.0 */
/* The contract between sbx-launch and the programs that run it (the
 * supervisor): exit statuses, the status record's keys, the descriptor
 * numbers and the environment names. Both sides include this header; the
 * record itself is documented in sbx-launch(1). */
#pragma once

/* Exit statuses of sbx-launch besides the command's own. */
#define LAUNCH_EXIT_TIMEOUT 124
#define LAUNCH_EXIT_SETUP 125
#define LAUNCH_EXIT_NOEXEC 126
#define LAUNCH_EXIT_NOTFOUND 127
#define LAUNCH_EXIT_SIGNAL_BASE 128 /* 128+N: the command died of signal N */

/* The status record (--json-status-fd): one JSON object per line. */
#define LAUNCH_KEY_CHILD_PID "child-pid"
#define LAUNCH_KEY_EXIT_CODE "exit-code"
#define LAUNCH_KEY_SIGNAL "signal"
#define LAUNCH_KEY_TIMED_OUT "timed-out"
#define LAUNCH_KEY_WALL_MS "wall-ms"
#define LAUNCH_KEY_CPU_MS "cpu-ms"
#define LAUNCH_KEY_PEAK_RSS_KB "peak-rss-kb"
#define LAUNCH_KEY_LIMITS_BY "limits-by"
#define LAUNCH_KEY_PROTECTIONS "protections"
#define LAUNCH_KEY_ERROR "error"
#define LAUNCH_KEY_ERROR_STEP "step"
#define LAUNCH_KEY_ERROR_MESSAGE "message"

/* The descriptors the supervisor hands the launcher. */
#define LAUNCH_FD_STATUS 3  /* --json-status-fd */
#define LAUNCH_FD_PROFILE 4 /* the generated profile, as /dev/fd/4 */
#define LAUNCH_FD_PROFILE_PATH "/dev/fd/4"

/* The environment the supervisor gives the launcher and the job. */
#define LAUNCH_ENV_PROFILE_PATH "SBX_PROFILE_PATH"
#define LAUNCH_ENV_JOB_ID "SBX_JOB_ID"
#define LAUNCH_ENV_TENANT "SBX_TENANT"
#define LAUNCH_ENV_WORKSPACE "SBX_WORKSPACE"
#define LAUNCH_ENV_RESERVED_PREFIX "SBX_"
