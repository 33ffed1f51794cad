/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "minisign.h"

#define ALG_LEN 2
#define UNTRUSTED_PREFIX "untrusted comment: "
#define TRUSTED_PREFIX "trusted comment: "

/* The next line of text (without its line end); false at the end. */
static bool next_line(const char **pos, const char *end, const char **ret, size_t *ret_len) {
        const char *s = *pos;
        if (s >= end)
                return false;
        const char *nl = memchr(s, '\n', (size_t) (end - s));
        size_t n = nl ? (size_t) (nl - s) : (size_t) (end - s);
        *pos = nl ? nl + 1 : end;
        if (n > 0 && s[n - 1] == '\r')
                n--;
        *ret = s;
        *ret_len = n;
        return true;
}

/* Exactly want bytes from base64 (standard alphabet, with padding). */
static int b64_exact(const char *s, size_t n, unsigned char *out, size_t want) {
        unsigned char buf[128];
        size_t got = 0;
        if (n > 4 * (sizeof(buf) / 3) + 4)
                return -EINVAL;
        if (sodium_base642bin(buf, sizeof(buf), s, n, NULL, &got, NULL, sodium_base64_VARIANT_ORIGINAL) < 0 || got != want)
                return -EINVAL;
        memcpy(out, buf, want);
        return 0;
}

static bool has_prefix(const char *s, size_t n, const char *prefix) {
        size_t p = strlen(prefix);
        return n >= p && memcmp(s, prefix, p) == 0;
}

int minisign_key_parse(const char *name, const char *text, size_t len, struct minisign_key *ret, struct sbx_error *err) {
        const char *pos = text, *end = text + len, *l;
        size_t n;
        unsigned char raw[ALG_LEN + MINISIGN_KEY_ID_LEN + MINISIGN_PK_LEN];
        if (len > MINISIGN_MAX_FILE || memchr(text, '\0', len))
                return sbx_error_msg(err, EINVAL, "%s: not a minisign public key", name);
        if (!next_line(&pos, end, &l, &n))
                return sbx_error_msg(err, EINVAL, "%s: empty public key file", name);
        if (has_prefix(l, n, UNTRUSTED_PREFIX) && !next_line(&pos, end, &l, &n))
                return sbx_error_msg(err, EINVAL, "%s:2: the public key is missing", name);
        if (b64_exact(l, n, raw, sizeof(raw)) < 0)
                return sbx_error_msg(err, EINVAL, "%s: not a minisign public key (expected the base64 of 42 bytes)", name);
        if (memcmp(raw, "Ed", ALG_LEN) != 0)
                return sbx_error_msg(err, EINVAL, "%s: unknown key algorithm (expected Ed25519, \"Ed\")", name);
        /* Anything after the key but blank lines is not a key file. */
        while (next_line(&pos, end, &l, &n))
                if (n > 0)
                        return sbx_error_msg(err, EINVAL, "%s: unexpected text after the public key", name);
        memcpy(ret->id, raw + ALG_LEN, MINISIGN_KEY_ID_LEN);
        memcpy(ret->pk, raw + ALG_LEN + MINISIGN_KEY_ID_LEN, MINISIGN_PK_LEN);
        return 0;
}

int minisign_key_load(const char *path, struct minisign_key *ret, struct sbx_error *err) {
        char buf[MINISIGN_MAX_FILE + 1];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return sbx_error_set(err, errno, "minisign public key %s", path);
        size_t len = 0;
        for (;;) {
                ssize_t k = read(fd, buf + len, sizeof(buf) - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return sbx_error_set(err, errno, "minisign public key %s", path);
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len == sizeof(buf))
                        return sbx_error_msg(err, EFBIG, "%s: larger than a minisign public key", path);
        }
        return minisign_key_parse(path, buf, len, ret, err);
}

int minisign_sig_parse(const char *name, const char *text, size_t len, struct minisign_sig *ret, struct sbx_error *err) {
        const char *pos = text, *end = text + len, *l;
        size_t n;
        unsigned char raw[ALG_LEN + MINISIGN_KEY_ID_LEN + MINISIGN_SIG_LEN];
        memset(ret, 0, sizeof(*ret));
        if (len > MINISIGN_MAX_FILE)
                return sbx_error_msg(err, EINVAL, "%s: larger than %d bytes", name, MINISIGN_MAX_FILE);
        if (memchr(text, '\0', len))
                return sbx_error_msg(err, EINVAL, "%s: NUL byte in a signature file", name);
        if (!next_line(&pos, end, &l, &n) || !has_prefix(l, n, UNTRUSTED_PREFIX))
                return sbx_error_msg(err, EINVAL, "%s:1: expected \"untrusted comment: ...\"", name);
        if (!next_line(&pos, end, &l, &n) || b64_exact(l, n, raw, sizeof(raw)) < 0)
                return sbx_error_msg(err, EINVAL, "%s:2: expected the base64 of a 74-byte signature", name);
        if (memcmp(raw, "ED", ALG_LEN) == 0)
                ret->prehashed = true;
        else if (memcmp(raw, "Ed", ALG_LEN) != 0)
                return sbx_error_msg(err, EINVAL, "%s:2: unknown signature algorithm (expected \"ED\" or \"Ed\")", name);
        memcpy(ret->id, raw + ALG_LEN, MINISIGN_KEY_ID_LEN);
        memcpy(ret->sig, raw + ALG_LEN + MINISIGN_KEY_ID_LEN, MINISIGN_SIG_LEN);
        if (!next_line(&pos, end, &l, &n) || !has_prefix(l, n, TRUSTED_PREFIX))
                return sbx_error_msg(err, EINVAL, "%s:3: expected \"trusted comment: ...\"", name);
        size_t tn = n - strlen(TRUSTED_PREFIX);
        if (tn > MINISIGN_MAX_TRUSTED)
                return sbx_error_msg(err, EINVAL, "%s:3: trusted comment longer than %d bytes", name, MINISIGN_MAX_TRUSTED);
        memcpy(ret->trusted, l + strlen(TRUSTED_PREFIX), tn);
        ret->trusted[tn] = '\0';
        if (!next_line(&pos, end, &l, &n) || b64_exact(l, n, ret->global, MINISIGN_SIG_LEN) < 0)
                return sbx_error_msg(err, EINVAL, "%s:4: expected the base64 of the 64-byte global signature", name);
        while (next_line(&pos, end, &l, &n))
                if (n > 0)
                        return sbx_error_msg(err, EINVAL, "%s: unexpected text after the global signature", name);
        return 0;
}

void minisign_key_id_str(const unsigned char id[MINISIGN_KEY_ID_LEN], char out[17]) {
        /* minisign prints the id as a little-endian 64-bit number. */
        static const char digits[] = "0123456789ABCDEF";
        for (int i = 0; i < MINISIGN_KEY_ID_LEN; i++) {
                unsigned char b = id[MINISIGN_KEY_ID_LEN - 1 - i];
                out[2 * i] = digits[b >> 4];
                out[2 * i + 1] = digits[b & 15];
        }
        out[16] = '\0';
}

int minisign_verify(const struct minisign_key *keys, size_t n_keys, const struct minisign_sig *s, const void *data, size_t len,
                    struct sbx_error *err) {
        const struct minisign_key *k = NULL;
        char id[17];
        for (size_t i = 0; i < n_keys && !k; i++)
                if (memcmp(keys[i].id, s->id, MINISIGN_KEY_ID_LEN) == 0)
                        k = &keys[i];
        minisign_key_id_str(s->id, id);
        if (!k)
                return sbx_error_msg(err, ENOKEY, "signed with key %s, which is not a trusted key", id);
        unsigned char hash[crypto_generichash_BYTES_MAX];
        const unsigned char *msg = data;
        size_t msg_len = len;
        if (s->prehashed) {
                /* minisign's "ED": the signature is over BLAKE2b-512. */
                crypto_generichash(hash, sizeof(hash), data, len, NULL, 0);
                msg = hash;
                msg_len = sizeof(hash);
        }
        if (crypto_sign_verify_detached(s->sig, msg, msg_len, k->pk) != 0)
                return sbx_error_msg(err, EBADMSG, "the signature by key %s does not match the file", id);
        /* The trusted comment is signed together with the signature. */
        size_t tn = strlen(s->trusted);
        unsigned char both[MINISIGN_SIG_LEN + MINISIGN_MAX_TRUSTED];
        memcpy(both, s->sig, MINISIGN_SIG_LEN);
        memcpy(both + MINISIGN_SIG_LEN, s->trusted, tn);
        if (crypto_sign_verify_detached(s->global, both, MINISIGN_SIG_LEN + tn, k->pk) != 0)
                return sbx_error_msg(err, EBADMSG, "the trusted comment's signature by key %s does not verify", id);
        return 0;
}
