/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for what a registry sends before anything is trusted:
 * the index parser (what parses is written back and reads back equal),
 * the minisign signature parser, the trusted comment's serial and the
 * bundle references callers send. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "minisign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_index(const char *text, size_t size) {
        struct bundle_index ix, again;
        struct sbx_error err = { 0 };
        if (index_parse(text, size, &ix, &err) < 0) {
                if (!err.msg[0]) {
                        fprintf(stderr, "index error without a message\n");
                        abort();
                }
                return;
        }
        json_t *j = index_to_json(&ix);
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (!s || index_parse(s, strlen(s), &again, &err) < 0) {
                fprintf(stderr, "written index does not read back: %s\n", err.msg);
                abort();
        }
        if (again.n != ix.n || strcmp(again.name, ix.name) != 0) {
                fprintf(stderr, "written index reads back different\n");
                abort();
        }
        for (size_t i = 0; i < ix.n; i++)
                if (!index_find_version(&again, ix.v[i].version) ||
                    strcmp(index_find_version(&again, ix.v[i].version)->sha256, ix.v[i].sha256) != 0) {
                        fprintf(stderr, "version %s lost\n", ix.v[i].version);
                        abort();
                }
        const struct index_entry *l = index_latest(&ix);
        if (ix.n > 0 && !l) {
                fprintf(stderr, "no latest among %zu versions\n", ix.n);
                abort();
        }
        free(s);
        json_decref(j);
        index_free(&again);
        index_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *text = (const char *) data;
        struct sbx_error err = { 0 };
        check_index(text, size);
        struct minisign_sig sig;
        if (minisign_sig_parse("fuzz.minisig", text, size, &sig, &err) == 0) {
                uint64_t serial;
                (void) index_comment_serial(sig.trusted, "hello", &serial, &err);
        }
        struct minisign_key key;
        (void) minisign_key_parse("fuzz.pub", text, size, &key, &err);
        if (size < 256) {
                char ref[256];
                memcpy(ref, data, size);
                ref[size] = '\0';
                struct bundle_ref r;
                if (bundle_ref_parse(ref, &r, &err) == 0) {
                        char back[256], again_s[256];
                        struct bundle_ref r2;
                        bundle_ref_str(&r, back, sizeof(back));
                        if (bundle_ref_parse(back, &r2, &err) < 0) {
                                fprintf(stderr, "reference '%s' written as '%s' does not parse\n", ref, back);
                                abort();
                        }
                        bundle_ref_str(&r2, again_s, sizeof(again_s));
                        if (strcmp(back, again_s) != 0)
                                abort();
                }
        }
        return 0;
}
