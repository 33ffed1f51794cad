/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/fscrypt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>

#include "wscrypt.h"

/* The largest key fscrypt takes; AES-256-XTS uses all 64 bytes. */
#define KEY_BYTES FSCRYPT_MAX_KEY_SIZE

int wscrypt_lock_new(int dirfd) {
        /* The key travels in the ioctl's argument only, which is wiped
         * before it is freed. */
        size_t size = sizeof(struct fscrypt_add_key_arg) + KEY_BYTES;
        struct fscrypt_add_key_arg *arg = calloc(1, size);
        if (!arg)
                return -ENOMEM;
        int r = 0;
        if (getrandom(arg->raw, KEY_BYTES, 0) != KEY_BYTES)
                r = -EIO;
        else {
                arg->key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER;
                arg->raw_size = KEY_BYTES;
                if (ioctl(dirfd, FS_IOC_ADD_ENCRYPTION_KEY, arg) < 0)
                        r = -errno;
        }
        struct fscrypt_policy_v2 pol = {
                .version = FSCRYPT_POLICY_V2,
                .contents_encryption_mode = FSCRYPT_MODE_AES_256_XTS,
                .filenames_encryption_mode = FSCRYPT_MODE_AES_256_CTS,
                .flags = FSCRYPT_POLICY_FLAGS_PAD_32,
        };
        memcpy(pol.master_key_identifier, arg->key_spec.u.identifier, sizeof(pol.master_key_identifier));
        explicit_bzero(arg, size);
        free(arg);
        if (r < 0)
                return r;
        if (ioctl(dirfd, FS_IOC_SET_ENCRYPTION_POLICY, &pol) < 0) {
                r = -errno;
                /* Not used after all: give the key back. */
                struct fscrypt_remove_key_arg rm = { .key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER };
                memcpy(rm.key_spec.u.identifier, pol.master_key_identifier, sizeof(pol.master_key_identifier));
                (void) ioctl(dirfd, FS_IOC_REMOVE_ENCRYPTION_KEY, &rm);
        }
        return r;
}

int wscrypt_forget(int dirfd) {
        struct fscrypt_get_policy_ex_arg got = { .policy_size = sizeof(got.policy) };
        if (ioctl(dirfd, FS_IOC_GET_ENCRYPTION_POLICY_EX, &got) < 0)
                return errno == ENODATA || errno == EOPNOTSUPP || errno == ENOTTY || errno == EINVAL ? 0 : -errno;
        if (got.policy.version != FSCRYPT_POLICY_V2)
                return 0;
        struct fscrypt_remove_key_arg rm = { .key_spec.type = FSCRYPT_KEY_SPEC_TYPE_IDENTIFIER };
        memcpy(rm.key_spec.u.identifier, got.policy.v2.master_key_identifier, sizeof(rm.key_spec.u.identifier));
        if (ioctl(dirfd, FS_IOC_REMOVE_ENCRYPTION_KEY, &rm) < 0)
                return errno == ENOKEY ? 0 : -errno;
        return 0;
}
