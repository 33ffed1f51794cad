/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "mcp.h"

/* A reply line of the daemon is bounded by its client_buffer; this is
 * more than any of its defaults. */
#define MAX_LINE (64u << 20)

int dconn_open(struct dconn *c) {
        memset(c, 0, sizeof(*c));
        c->fd = mcp_io->connect(mcp_io);
        return c->fd < 0 ? c->fd : 0;
}

void dconn_close(struct dconn *c) {
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
        free(c->buf);
        c->buf = NULL;
        c->len = c->cap = 0;
}

int dconn_send(struct dconn *c, json_t *req) {
        char *s = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        if (!s)
                return -ENOMEM;
        size_t n = strlen(s);
        s[n] = '\n'; /* over its NUL: sent with its length */
        int r = fd_write_all(c->fd, s, n + 1);
        free(s);
        return r;
}

json_t *dconn_next(struct dconn *c) {
        char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
        if (!nl)
                return NULL;
        size_t n = (size_t) (nl - c->buf);
        json_t *m = json_loadb(c->buf, n, 0, NULL);
        memmove(c->buf, nl + 1, c->len - n - 1);
        c->len -= n + 1;
        /* a line that is not JSON is the daemon's fault: an error message */
        return m ? m : json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", "E_INTERNAL", "message", "a reply that is not JSON");
}

int dconn_fill(struct dconn *c) {
        if (c->cap - c->len < 65536) {
                if (c->cap >= MAX_LINE)
                        return -E2BIG;
                size_t cap = c->cap ? c->cap * 2 : 131072;
                char *b = realloc(c->buf, cap);
                if (!b)
                        return -ENOMEM;
                c->buf = b;
                c->cap = cap;
        }
        ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -errno;
        if (n == 0)
                return -EPIPE;
        c->len += (size_t) n;
        return 0;
}

json_t *dconn_call(json_t *req, char *why, size_t why_len) {
        struct dconn c;
        int r = dconn_open(&c);
        if (r < 0) {
                json_decref(req);
                snprintf(why, why_len, "cannot reach sbx-supervisord (%s): %s", mcp_io->where, strerror(-r));
                return NULL;
        }
        json_t *m = NULL;
        r = dconn_send(&c, req);
        while (r >= 0 && !(m = dconn_next(&c)))
                r = dconn_fill(&c);
        if (!m)
                snprintf(why, why_len, "sbx-supervisord (%s): %s", mcp_io->where, r == -EPIPE ? "it closed the connection" : strerror(-r));
        dconn_close(&c);
        return m;
}
