/* SPDX-License-Identifier: Apache-2.0 */
#include "env-name.h"

static bool name_char(char c, bool first) {
        return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

bool env_name_valid(const char *s, size_t len) {
        if (len == 0 || len > ENV_NAME_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!name_char(s[i], i == 0))
                        return false;
        return true;
}
