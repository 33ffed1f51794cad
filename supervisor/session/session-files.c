/* SPDX-License-Identifier: Apache-2.0 */
/* A session's files, through its agent (session.put, .get, .ls): the
 * agent resolves every path beneath the workspace and follows no link
 * (sbx-init(8) PATHS); the descriptors it hands over are checked by
 * lib/initc.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "proto.h"
#include "session-internal.h"

/* Entries in one session.ls answer. */
#define LS_MAX 10000

static int path_call(struct session *s, uint32_t type, uint32_t arg, uint32_t arg2, const char *path, struct sbx_error *err) {
        char buf[sizeof(struct sbx_init_path) + SBX_INIT_PATH_MAX];
        size_t len;
        if (initc_encode_path(buf, sizeof(buf), arg, arg2, path, &len) < 0)
                return sbx_error_msg(err, ENAMETOOLONG, "field 'path': too long");
        int r = agent_call(s, type, buf, len);
        if (r < 0)
                return sbx_error_msg(err, ESHUTDOWN, "the session's agent failed; the session ends");
        if (msg_call.hdr.error)
                return sbx_error_msg(err, msg_call.hdr.error, "%s: %s", path, strerror(msg_call.hdr.error));
        return 0;
}

int session_put(struct session *s, const char *path, uint64_t offset, const void *data, size_t len, unsigned mode,
                struct sbx_error *err) {
        int r = path_call(s, SBX_INIT_OPEN, offset ? SBX_INIT_OPEN_MORE : SBX_INIT_OPEN_WRITE, mode, path, err);
        if (r < 0)
                return r;
        int fd = msg_call.fds[0];
        msg_call.fds[0] = -1;
        msg_call.n_fds = 0;
        /* The next piece goes where the last one ended, or nowhere: a lost
         * or repeated piece is said, not written over. */
        struct sbx_init_stat st;
        memcpy(&st, msg_call.payload, sizeof(st));
        if (offset && st.size != offset) {
                close(fd);
                return sbx_error_msg(err, EEXIST, "%s is %" PRIu64 " bytes, not %" PRIu64 ": the pieces of an upload come in order",
                                     path, st.size, offset);
        }
        if (offset && lseek(fd, (off_t) offset, SEEK_SET) < 0) {
                r = -errno;
                close(fd);
                return sbx_error_set(err, r, "%s", path);
        }
        /* A regular file of the sandbox: a full one (its tmpfs' size) says
         * ENOSPC. */
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
                (void) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        r = write_all(fd, data, len);
        close(fd);
        if (r == -ENOSPC)
                return sbx_error_msg(err, ENOSPC, "%s: no space left in the session's workspace (its disk limit)", path);
        return r < 0 ? sbx_error_set(err, r, "%s", path) : 0;
}

int session_get(struct session *s, const char *path, uint64_t offset, uint64_t max, json_t **ret, struct sbx_error *err) {
        int r = path_call(s, SBX_INIT_OPEN, SBX_INIT_OPEN_READ, 0, path, err);
        if (r < 0)
                return r;
        struct sbx_init_stat st;
        memcpy(&st, msg_call.payload, sizeof(st));
        int fd = msg_call.fds[0];
        msg_call.fds[0] = -1;
        msg_call.n_fds = 0;
        _cleanup_free_ char *buf = malloc(max ? max : 1);
        if (!buf) {
                close(fd);
                return sbx_error_set(err, ENOMEM, "%s", path);
        }
        size_t got = 0;
        while (got < max) {
                ssize_t n = pread(fd, buf + got, max - got, (off_t) (offset + got));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        close(fd);
                        return sbx_error_set(err, e, "%s", path);
                }
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        close(fd);
        json_t *o = json_pack("{s:s, s:I, s:I, s:b}", "path", path, "size", (json_int_t) st.size, "offset", (json_int_t) offset, "eof",
                              offset + got >= st.size);
        if (!o || proto_set_data(o, "data", buf, got) < 0) {
                json_decref(o);
                return sbx_error_set(err, ENOMEM, "%s", path);
        }
        *ret = o;
        return 0;
}

static const char *type_name(uint8_t t) {
        switch (t) {
        case DT_REG: return "file";
        case DT_DIR: return "directory";
        case DT_LNK: return "symlink";
        default: return "other";
        }
}

int session_ls(struct session *s, const char *path, json_t **ret, struct sbx_error *err) {
        json_t *arr = json_array();
        uint32_t skip = 0;
        bool more = true;
        if (!arr)
                return sbx_error_set(err, ENOMEM, "%s", path);
        while (more && skip < LS_MAX) {
                int r = path_call(s, SBX_INIT_LIST, skip, 0, path, err);
                if (r < 0) {
                        json_decref(arr);
                        return r;
                }
                struct sbx_init_list l;
                memcpy(&l, msg_call.payload, sizeof(l));
                size_t pos = 0;
                uint8_t type;
                const char *name;
                while (initc_list_next(&msg_call, &pos, &type, &name))
                        json_array_append_new(arr, json_pack("{s:s, s:s}", "name", name, "type", type_name(type)));
                skip += l.count;
                more = (l.flags & SBX_INIT_LIST_MORE) && l.count > 0;
        }
        *ret = json_pack("{s:s, s:o, s:b}", "path", path, "entries", arr, "truncated", more);
        return *ret ? 0 : sbx_error_set(err, ENOMEM, "%s", path);
}
