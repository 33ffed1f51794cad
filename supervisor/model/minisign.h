/* SPDX-License-Identifier: Apache-2.0 */
/* Verifying minisign signatures (the format of the minisign tool, which
 * publishers sign registry indexes with), on libsodium: Ed25519 over the
 * file ("Ed", the legacy mode) or over its BLAKE2b-512 hash ("ED", the
 * prehashed mode minisign uses by default), and the global signature over
 * the signature and the trusted comment, which binds the comment (the
 * index's serial) to the file. Parsing never trusts a length or a field it
 * has not checked. Pure, unit-tested with vectors made by the real tool. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define MINISIGN_KEY_ID_LEN 8
#define MINISIGN_PK_LEN 32
#define MINISIGN_SIG_LEN 64
#define MINISIGN_MAX_TRUSTED 1024
#define MINISIGN_MAX_FILE 8192

struct minisign_key {
        unsigned char id[MINISIGN_KEY_ID_LEN];
        unsigned char pk[MINISIGN_PK_LEN];
};

struct minisign_sig {
        bool prehashed;                     /* "ED": over BLAKE2b-512 of the file */
        unsigned char id[MINISIGN_KEY_ID_LEN];
        unsigned char sig[MINISIGN_SIG_LEN];
        char trusted[MINISIGN_MAX_TRUSTED + 1]; /* the trusted comment, without "trusted comment: " */
        unsigned char global[MINISIGN_SIG_LEN];
};

/* A public key file ("untrusted comment: ..." then the base64 key), or the
 * base64 line alone. name is for messages. */
int minisign_key_parse(const char *name, const char *text, size_t len, struct minisign_key *ret, struct sbx_error *err);
int minisign_key_load(const char *path, struct minisign_key *ret, struct sbx_error *err);

/* A .minisig file: untrusted comment, signature, trusted comment, global
 * signature. */
int minisign_sig_parse(const char *name, const char *text, size_t len, struct minisign_sig *ret, struct sbx_error *err);

/* Is data signed by one of keys? 0; -ENOKEY when no key has the
 * signature's id; -EBADMSG when the signature or the global signature
 * (over the trusted comment) does not verify. err says which. */
int minisign_verify(const struct minisign_key *keys, size_t n_keys, const struct minisign_sig *s, const void *data, size_t len,
                    struct sbx_error *err);

/* The key id as minisign prints it: 16 uppercase hex digits. */
void minisign_key_id_str(const unsigned char id[MINISIGN_KEY_ID_LEN], char out[17]);
