/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the profile parser: any bytes either fail to load
 * with a message, or load into a profile that profile_write() turns into
 * INI which loads back equal, and writes back to the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        /* Variables the seeds refer to, with values that need quoting. */
        setenv("WORKSPACE", "/tmp/work space", 1);
        setenv("SBX_FUZZ", "a;b\\c\"d$e", 1);
        return 0;
}

static char *write_string(const struct profile *p) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                abort();
        if (profile_write(p, f) < 0) {
                fprintf(stderr, "profile_write failed\n");
                abort();
        }
        fclose(f);
        return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 256 * 1024)
                return 0;
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        struct profile p, q;
        struct sbx_error err = { 0 };
        profile_init(&p);
        profile_init(&q);
        if (profile_load_string(&p, "fuzz.ini", text, &err) == 0) {
                (void) profile_validate(&p, &err);
                char *out = write_string(&p);
                if (profile_load_string(&q, "written.ini", out, &err) < 0) {
                        fprintf(stderr, "written profile does not load: %s\n---\n%s---\n", err.msg, out);
                        abort();
                }
                if (!profile_equal(&p, &q)) {
                        fprintf(stderr, "written profile loads back different\n---\n%s---\n", out);
                        abort();
                }
                char *again = write_string(&q);
                if (strcmp(out, again) != 0) {
                        fprintf(stderr, "writing is not stable\n---\n%s---\n%s---\n", out, again);
                        abort();
                }
                free(again);
                free(out);
        } else if (err.msg[0] == '\0') {
                fprintf(stderr, "error without a message\n");
                abort();
        }
        profile_free(&p);
        profile_free(&q);
        free(text);
        return 0;
}
