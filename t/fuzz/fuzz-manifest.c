/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the manifest parser (sbx-manifest(5)): any bytes
 * either fail with a message, or give a manifest whose every field holds
 * what the format promises, which turns into JSON. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "semver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct manifest m;
        struct sbx_error err = { 0 };
        manifest_init(&m);
        if (manifest_parse(&m, "fuzz/manifest.ini", (const char *) data, size, &err) == 0) {
                if (!bundle_name_valid(m.name) || !semver_valid(m.version) || m.n_command == 0 || !m.command[0] ||
                    m.command[m.n_command] || !m.profile || !m.description) {
                        fprintf(stderr, "parsed manifest breaks an invariant\n");
                        abort();
                }
                if ((m.net == MANIFEST_NET_RESTRICTED) != (m.n_connect > 0)) {
                        fprintf(stderr, "network and connect disagree\n");
                        abort();
                }
                json_t *j = manifest_to_json(&m);
                if (!j) {
                        fprintf(stderr, "manifest_to_json failed\n");
                        abort();
                }
                json_decref(j);
        } else if (err.msg[0] == '\0') {
                fprintf(stderr, "error without a message\n");
                abort();
        }
        manifest_free(&m);
        return 0;
}
