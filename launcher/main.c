/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary entry point; the launcher proper replaces this file. */
#include "profile.h"
#include "harden.h"

int main(void) {
        struct profile p;
        profile_init(&p);
        profile_free(&p);
        return 125;
}
