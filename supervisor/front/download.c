/* SPDX-License-Identifier: Apache-2.0 */
/* The download operation: one file of a finished job (an artifact its
 * record lists, or a captured stream), whatever its size, streamed through
 * the socket in bounded pieces with its SHA-256 at the end.
 *
 * A response names the file and its size; data events carry its bytes in
 * order (base64, each at most PROTO_DOWNLOAD_CHUNK bytes before encoding);
 * a download_end event gives the size sent and the SHA-256 of those bytes.
 * Opening and reading happen off the event loop, one piece at a time and
 * only as fast as the client reads (paced.h), so a 50 MB artifact costs
 * the daemon a piece of memory, never its size, and never holds up other
 * clients. While a download runs the connection reads no further
 * requests, keeping responses in order. Only the job's own tenant finds
 * the job (dispatch.c's lookup). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn.h"
#include "daemon.h"
#include "dispatch.h"
#include "paced.h"
#include "result.h"
#include "worker.h"

/* Bytes read per piece at most (less with a small client buffer): one
 * data event, about PACED_PIECE once encoded. */
#define DOWNLOAD_PIECE PROTO_DOWNLOAD_CHUNK

struct dl_req {
        struct paced p;       /* the reply; p.job is id */
        int results_fd;
        char id[24];
        json_t *tag;
        char *artifact;       /* or NULL: the stream */
        int stream;           /* 0 stdout, 1 stderr */
        uint64_t piece;       /* bytes per piece */
        /* filled off the loop */
        int fd;
        uint64_t size, off;
        crypto_hash_sha256_state sha;
        const char *code;     /* set with p.err before the response: the error's code */
        char msg[256];
};

static void req_free(struct paced *p) {
        struct dl_req *q = container_of(p, struct dl_req, p);
        if (q->fd >= 0)
                close(q->fd);
        json_decref(q->tag);
        free(q->artifact);
        free(q);
}

static int fail(struct dl_req *q, int err, const char *code, const char *fmt, ...) _printf_(4, 5);

static int fail(struct dl_req *q, int err, const char *code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(q->msg, sizeof(q->msg), fmt, ap);
        va_end(ap);
        q->code = code;
        return q->p.err = -err;
}

/* Is path among the artifacts of the job's record? */
static int listed(struct dl_req *q) {
        json_t *rec = NULL;
        int r = result_load(q->results_fd, q->id, &rec);
        if (r < 0)
                return fail(q, -r, E_INTERNAL, "cannot read the result of %s: %s", q->id, strerror(-r));
        size_t i;
        json_t *a;
        bool found = false;
        json_array_foreach(json_object_get(rec, "artifacts"), i, a)
                if (streq(json_string_value(json_object_get(a, "path")) ?: "", q->artifact))
                        found = true;
        json_decref(rec);
        if (!found)
                return fail(q, ENOENT, E_NOT_FOUND, "job %s has no artifact '%s'", q->id, q->artifact);
        return 0;
}

/* The file, opened beneath the results directory without following any
 * symbolic link (the daemon wrote these files itself; this holds even so). */
static int open_file(struct dl_req *q) {
        char path[PROTO_MAX_PATH + 64];
        if (q->artifact)
                snprintf(path, sizeof(path), "%s/artifacts/%s", q->id, q->artifact);
        else
                snprintf(path, sizeof(path), "%s/%s", q->id, proto_stream_name(q->stream));
        struct open_how how = {
                .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, q->results_fd, path, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS && !strchr(path + strlen(q->id) + 1, '/'))
                fd = openat(q->results_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        return fd < 0 ? -errno : (int) fd;
}

static void run_open(struct work *w) {
        struct dl_req *q = container_of(w, struct dl_req, p.work);
        if (q->artifact && listed(q) < 0)
                return;
        int fd = open_file(q);
        if (fd == -ENOENT && !q->artifact) {
                q->size = 0; /* nothing was captured: an empty file */
        } else if (fd < 0) {
                fail(q, -fd, E_INTERNAL, "cannot open %s of %s: %s", q->artifact ?: proto_stream_name(q->stream), q->id, strerror(-fd));
                return;
        } else {
                q->fd = fd;
                struct stat st;
                if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                        fail(q, EINVAL, E_INTERNAL, "%s of %s is not a regular file", q->artifact ?: "stream", q->id);
                        return;
                }
                q->size = (uint64_t) st.st_size;
        }
        crypto_hash_sha256_init(&q->sha);
}

static json_t *data_event(const struct dl_req *q, const unsigned char *data, size_t len) {
        size_t blen = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
        _cleanup_free_ char *b = malloc(blen);
        if (!b)
                return NULL;
        sodium_bin2base64(b, blen, data, len, sodium_base64_VARIANT_ORIGINAL);
        return json_pack("{s:i, s:s, s:s, s:I, s:s}", "v", PROTO_VERSION, "event", "data", "job", q->id, "offset",
                         (json_int_t) q->off, "data_b64", b);
}

/* The next piece as data events; at the end of the file, the end event. */
static void run_piece(struct paced *p) {
        struct dl_req *q = container_of(p, struct dl_req, p);
        uint64_t left = q->size - q->off;
        size_t n = (size_t) (left < q->piece ? left : q->piece);
        _cleanup_free_ unsigned char *buf = malloc(n ? n : 1);
        if (!buf) {
                p->err = -ENOMEM;
                return;
        }
        size_t got = 0;
        while (got < n) {
                ssize_t k = pread(q->fd, buf + got, n - got, (off_t) (q->off + got));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        p->err = -errno;
                        return;
                }
                if (k == 0) {
                        /* Records and their files are never rewritten:
                         * a shorter file is damage, not news. */
                        p->err = -EIO;
                        return;
                }
                got += (size_t) k;
        }
        if (n > 0)
                crypto_hash_sha256_update(&q->sha, buf, n);
        for (size_t at = 0; at < n && p->err == 0; at += PROTO_DOWNLOAD_CHUNK) {
                size_t k = n - at < PROTO_DOWNLOAD_CHUNK ? n - at : PROTO_DOWNLOAD_CHUNK;
                p->err = paced_append(p, data_event(q, buf + at, k));
                q->off += k;
        }
        if (p->err == 0 && q->off == q->size) {
                unsigned char digest[crypto_hash_sha256_BYTES];
                char hex[2 * crypto_hash_sha256_BYTES + 1];
                crypto_hash_sha256_final(&q->sha, digest);
                hex_encode(digest, sizeof(digest), hex);
                p->err = paced_append(p, json_pack("{s:i, s:s, s:s, s:I, s:s}", "v", PROTO_VERSION, "event", "download_end", "job",
                                                  q->id, "size", (json_int_t) q->size, "sha256", hex));
                p->end_sent = true;
        }
}

static const struct paced_ops download_ops = {
        .piece = run_piece,
        .free = req_free,
};

static void open_done(struct work *w) {
        struct dl_req *q = container_of(w, struct dl_req, p.work);
        struct conn *c = q->p.c;
        if (c->closed) {
                paced_finish(&q->p);
                return;
        }
        if (q->p.err < 0) {
                conn_send(c, proto_error(q->tag, q->code ?: E_INTERNAL, "%s", q->msg[0] ? q->msg : strerror(-q->p.err)));
                paced_finish(&q->p);
                return;
        }
        json_t *o = json_pack("{s:s, s:I}", "job", q->id, "size", (json_int_t) q->size);
        if (o && q->artifact)
                json_object_set_new(o, "artifact", json_string(q->artifact));
        else if (o)
                json_object_set_new(o, "stream", json_string(proto_stream_name(q->stream)));
        conn_send(c, proto_ok(q->tag, o));
        paced_next(&q->p);
}

void download_serve(struct conn *c, struct request *req, struct rjob *rj, const char *id) {
        struct daemon *d = c->d;
        if (rj) {
                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s has not ended: its files are downloaded once its record is written "
                                                               "(logs with follow streams a live job's output)", id));
                return;
        }
        struct dl_req *q = calloc(1, sizeof(*q));
        if (!q) {
                conn_send(c, proto_error(req->tag, E_INTERNAL, "out of memory"));
                return;
        }
        q->fd = -1;
        q->results_fd = d->dirs.results_fd;
        snprintf(q->id, sizeof(q->id), "%s", id);
        q->tag = req->tag ? json_incref(req->tag) : NULL;
        q->artifact = TAKE_PTR(req->artifact);
        q->stream = req->streams == STREAM_STDERR ? 1 : 0;
        /* A piece, base64 (4/3) with its JSON, stays under half the
         * client's buffer: the rest is room for what is still unread. */
        q->piece = d->cfg->client_buffer / 4;
        if (q->piece > DOWNLOAD_PIECE)
                q->piece = DOWNLOAD_PIECE;
        paced_init(&q->p, c, &download_ops, q->id);
        paced_submit(&q->p, run_open, open_done);
}
