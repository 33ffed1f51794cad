/* SPDX-License-Identifier: Apache-2.0 */
/* A workspace that is a plain directory on a disk (a daemon that cannot
 * mount a tmpfs for it) is encrypted where the file system can (fscrypt,
 * policy v2): each gets a key of its own, random, handed to the kernel
 * and wiped from this process at once; at the end the key is removed,
 * so whatever of the job's files the disk still holds is ciphertext
 * without a key. */
#pragma once

/* Encrypt the empty directory dirfd with a fresh key. 0; -EOPNOTSUPP,
 * -ENOTTY or -EINVAL where the file system has no encryption (or it is
 * not enabled on it); -EDQUOT past the user's key quota; or -errno. */
int wscrypt_lock_new(int dirfd);

/* Remove the key of the directory dirfd, if it has one of this kind: 0
 * when removed or there was none, -errno otherwise. Files still open keep
 * their key until closed (the kernel finishes the removal then). */
int wscrypt_forget(int dirfd);
