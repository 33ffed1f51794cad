/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "fileio.h"
#include "secret-store.h"
#include "util.h"

/* The tenant's directory, made when create. Names were checked by the
 * protocol (name_valid, secret_name_valid): no '/', no "..". */
static int tenant_dir(int state_fd, const char *tenant, bool create) {
        if (create && mkdirat(state_fd, SECRETS_DIR, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int top = openat(state_fd, SECRETS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (top < 0)
                return -errno;
        if (create && mkdirat(top, tenant, 0700) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(top, tenant, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int secret_store_set(int state_fd, const char *tenant, const char *name, const void *value, size_t len) {
        if (!name_valid(tenant) || !secret_name_valid(name))
                return -EINVAL;
        _cleanup_close_ int dir = tenant_dir(state_fd, tenant, true);
        if (dir < 0)
                return dir;
        return write_file_durable(dir, name, value, len, 0600, true);
}

int secret_store_rm(int state_fd, const char *tenant, const char *name) {
        if (!name_valid(tenant) || !secret_name_valid(name))
                return -EINVAL;
        _cleanup_close_ int dir = tenant_dir(state_fd, tenant, false);
        if (dir < 0)
                return dir;
        if (unlinkat(dir, name, 0) < 0)
                return -errno;
        return fsync(dir) < 0 ? -errno : 0;
}

int secret_store_get(int state_fd, const char *tenant, const char *name, char **ret, size_t *ret_len) {
        if (!name_valid(tenant) || !secret_name_valid(name))
                return -EINVAL;
        _cleanup_close_ int dir = tenant_dir(state_fd, tenant, false);
        if (dir < 0)
                return dir;
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        char *buf = malloc(SECRET_VALUE_MAX + 2);
        if (!buf)
                return -ENOMEM;
        size_t len = 0;
        while (len < SECRET_VALUE_MAX + 1) {
                ssize_t n = read(fd, buf + len, SECRET_VALUE_MAX + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n < 0) {
                                int e = errno;
                                sodium_memzero(buf, len);
                                free(buf);
                                return -e;
                        }
                        break;
                }
                len += (size_t) n;
        }
        if (len < SECRET_VALUE_MIN || len > SECRET_VALUE_MAX) {
                sodium_memzero(buf, len);
                free(buf);
                return -EBADMSG;
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}

bool secret_store_has(int state_fd, const char *tenant, const char *name) {
        if (!name_valid(tenant) || !secret_name_valid(name))
                return false;
        _cleanup_close_ int dir = tenant_dir(state_fd, tenant, false);
        struct stat st;
        return dir >= 0 && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

static int by_name(const void *a, const void *b) {
        return strcmp(json_string_value(json_object_get(*(json_t *const *) a, "name")),
                      json_string_value(json_object_get(*(json_t *const *) b, "name")));
}

json_t *secret_store_list(int state_fd, const char *tenant) {
        json_t *out = json_array();
        if (!out)
                return NULL;
        int dir = tenant_dir(state_fd, tenant, false);
        if (dir == -ENOENT)
                return out;
        DIR *dp = dir >= 0 ? fdopendir(dir) : NULL;
        if (!dp) {
                if (dir >= 0)
                        close(dir);
                json_decref(out);
                return NULL;
        }
        struct dirent *de;
        while ((de = readdir(dp))) {
                struct stat st;
                /* write_file_durable's temporary files start with '.' */
                if (!secret_name_valid(de->d_name) || fstatat(dirfd(dp), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                json_array_append_new(out, json_pack("{s:s, s:I, s:I}", "name", de->d_name, "bytes", (json_int_t) st.st_size,
                                                     "updated_ms",
                                                     (json_int_t) st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000));
        }
        closedir(dp);
        size_t n = json_array_size(out);
        json_t **v = malloc(n * sizeof(*v) + 1);
        if (v) {
                for (size_t i = 0; i < n; i++)
                        v[i] = json_incref(json_array_get(out, i));
                qsort(v, n, sizeof(*v), by_name);
                json_array_clear(out);
                for (size_t i = 0; i < n; i++)
                        json_array_append_new(out, v[i]);
                free(v);
        }
        return out;
}
