/* SPDX-License-Identifier: Apache-2.0 */
/* The logs operation: a job's captured output, read off the event loop and
 * sent in bounded pieces, so that no capture size makes a message larger
 * than a bound or stalls other clients.
 *
 * Without follow: one response with up to max_bytes of each stream from
 * offset, with each stream's size so the client can ask for the rest. The
 * response is one line, but it is not made whole: its members other than
 * the data first, then the data read and encoded piece by piece as the
 * client reads (jsonpiece.h), so a megabyte's response costs the daemon a
 * piece, and many of them pipelined on many connections cost no more
 * each.
 * With follow: a response, then the capture so far as output events, read
 * piece by piece as the client keeps up (paced.h); then, for a live job,
 * its live output (it joins the followers once the replay has caught up
 * with what is captured, so no byte is sent twice or missed); for a
 * finished job, the end event with its record. While a replay runs the
 * connection reads no further requests, keeping responses in order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conn.h"
#include "daemon.h"
#include "dispatch.h"
#include "jsonpiece.h"
#include "paced.h"
#include "result.h"
#include "subscribe.h"
#include "worker.h"

/* Bytes of output read per piece of a replay: one output event. */
#define REPLAY_PIECE PROTO_EVENT_CHUNK
/* Bytes read per piece of a response: a multiple of 3, so that base64
 * pieces join. */
#define SNAP_READ (48u * 1024)

struct logs_req {
        struct paced p;       /* the reply; p.job is id */
        int results_fd;
        char id[24];
        json_t *tag;
        unsigned streams;
        uint64_t off[2];      /* next byte of each stream */
        uint64_t max_bytes;   /* per stream, per response or piece */
        /* filled by the worker */
        uint64_t size[2];     /* each stream's captured size when read */
        bool have_record;     /* the job is finished: its record ends the replay */
        /* a response without follow, sent in pieces */
        uint64_t len[2];      /* the bytes of each stream it carries */
        uint64_t done[2];     /* of them sent */
        bool utf8[2];         /* as a string, or base64 */
        int cur;              /* the stream being sent, 2 at the end */
        bool in_member;       /* its member is open */
};

static void req_free(struct paced *p) {
        struct logs_req *q = container_of(p, struct logs_req, p);
        json_decref(q->tag);
        free(q);
}

/* A stream's capture, opened for each step: a reply waiting for its client
 * holds no descriptor (thousands of them would exhaust the daemon's). */
static int open_stream(const struct logs_req *q, int i) {
        char path[64];
        snprintf(path, sizeof(path), "%s/%s", q->id, proto_stream_name(i));
        int fd = openat(q->results_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int read_at(int fd, unsigned char *buf, size_t n, uint64_t off) {
        size_t got = 0;
        while (got < n) {
                ssize_t k = pread(fd, buf + got, n - got, (off_t) (off + got));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO; /* a capture never shrinks */
                got += (size_t) k;
        }
        return 0;
}

int logs_read_stream(int results_fd, const char *id, int i, uint64_t off, uint64_t max, char **ret, size_t *ret_len,
                       uint64_t *ret_size) {
        char path[64];
        *ret = NULL;
        *ret_len = 0;
        *ret_size = 0;
        snprintf(path, sizeof(path), "%s/%s", id, proto_stream_name(i));
        _cleanup_close_ int fd = openat(results_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno; /* nothing captured */
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        *ret_size = (uint64_t) st.st_size;
        if (off >= *ret_size)
                return 0;
        size_t n = (size_t) (*ret_size - off < max ? *ret_size - off : max);
        _cleanup_free_ char *buf = malloc(n ? n : 1);
        if (!buf)
                return -ENOMEM;
        size_t got = 0;
        while (got < n) {
                ssize_t k = pread(fd, buf + got, n - got, (off_t) (off + got));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                got += (size_t) k;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = got;
        return 0;
}

/* Without follow, off the loop: the size of each stream and the range
 * it sends, whether that range is UTF-8 (read once to know, in pieces),
 * and the response's line up to its data members. */
static void run_snapshot(struct work *w) {
        struct logs_req *q = container_of(w, struct logs_req, p.work);
        _cleanup_free_ unsigned char *buf = malloc(SNAP_READ);
        json_t *o = json_pack("{s:s, s:I}", "job", q->id, "offset", (json_int_t) q->off[0]);
        if (!buf || !o) {
                json_decref(o);
                q->p.err = -ENOMEM;
                return;
        }
        for (int i = 0; i < 2 && q->p.err == 0; i++) {
                if (!(q->streams & proto_stream_bit(i)))
                        continue;
                char key[32];
                _cleanup_close_ int fd = open_stream(q, i);
                struct stat st;
                if (fd < 0 && fd != -ENOENT) /* ENOENT: nothing captured */
                        q->p.err = fd;
                else if (fd >= 0 && fstat(fd, &st) < 0)
                        q->p.err = -errno;
                else if (fd >= 0)
                        q->size[i] = (uint64_t) st.st_size;
                if (q->p.err < 0)
                        break;
                uint64_t left = q->size[i] > q->off[0] ? q->size[i] - q->off[0] : 0;
                q->len[i] = left < q->max_bytes ? left : q->max_bytes;
                struct utf8_state u;
                jsonpiece_check_init(&u);
                for (uint64_t at = 0; at < q->len[i] && q->p.err == 0; at += SNAP_READ) {
                        size_t n = (size_t) (q->len[i] - at < SNAP_READ ? q->len[i] - at : SNAP_READ);
                        q->p.err = read_at(fd, buf, n, q->off[0] + at);
                        jsonpiece_check(&u, buf, n);
                }
                q->utf8[i] = jsonpiece_check_end(&u);
                snprintf(key, sizeof(key), "%s_size", proto_stream_name(i));
                json_object_set_new(o, key, json_integer((json_int_t) q->size[i]));
                snprintf(key, sizeof(key), "%s_end", proto_stream_name(i));
                json_object_set_new(o, key, json_integer((json_int_t) (q->off[0] + q->len[i])));
        }
        if (q->p.err < 0) {
                json_decref(o);
                return;
        }
        /* The line without its closing brace: the data members follow. */
        q->p.err = paced_append(&q->p, proto_ok(q->tag, o));
        if (q->p.err == 0)
                q->p.out_len -= 2; /* "}\n" */
        q->cur = -1;
        q->p.mid_line = true;
}

/* Off the loop: the next piece of the response's data members, and its
 * end after the last. */
static void run_snapshot_piece(struct paced *p) {
        struct logs_req *q = container_of(p, struct logs_req, p);
        _cleanup_free_ unsigned char *buf = malloc(SNAP_READ);
        if (!buf) {
                p->err = -ENOMEM;
                return;
        }
        while (p->err == 0 && p->out_len < PACED_PIECE) {
                if (!q->in_member) {
                        do
                                q->cur++;
                        while (q->cur < 2 && !(q->streams & proto_stream_bit(q->cur)));
                        if (q->cur == 2) {
                                p->err = jsonpiece_append(&p->out, &p->out_len, "}\n", 2);
                                p->end_sent = true;
                                return;
                        }
                        char m[32];
                        int n = snprintf(m, sizeof(m), ",\"%s%s\":\"", proto_stream_name(q->cur), q->utf8[q->cur] ? "" : "_b64");
                        p->err = jsonpiece_append(&p->out, &p->out_len, m, (size_t) n);
                        q->in_member = true;
                        continue;
                }
                int i = q->cur;
                uint64_t left = q->len[i] - q->done[i];
                size_t n = (size_t) (left < SNAP_READ ? left : SNAP_READ);
                if (n > 0) {
                        _cleanup_close_ int fd = open_stream(q, i);
                        p->err = fd < 0 ? fd : read_at(fd, buf, n, q->off[0] + q->done[i]);
                        if (p->err == 0)
                                p->err = jsonpiece_encode(&p->out, &p->out_len, buf, n, q->utf8[i]);
                        q->done[i] += n;
                }
                if (p->err == 0 && q->done[i] == q->len[i]) {
                        p->err = jsonpiece_append(&p->out, &p->out_len, "\"", 1);
                        q->in_member = false;
                }
        }
}

/* With follow: the next piece of each stream as output events, and for a
 * finished job at the end of its capture, its record. */
static void run_piece(struct paced *p) {
        struct logs_req *q = container_of(p, struct logs_req, p);
        bool at_end = true;
        for (int i = 0; i < 2 && p->err == 0; i++) {
                if (!(q->streams & proto_stream_bit(i)))
                        continue;
                _cleanup_free_ char *data = NULL;
                size_t len;
                p->err = logs_read_stream(q->results_fd, q->id, i, q->off[i], q->max_bytes, &data, &len, &q->size[i]);
                for (size_t at = 0; p->err == 0 && at < len; at += PROTO_EVENT_CHUNK) {
                        size_t n = len - at < PROTO_EVENT_CHUNK ? len - at : PROTO_EVENT_CHUNK;
                        p->err = paced_append(p, proto_ev_output(q->id, i, data + at, n));
                }
                q->off[i] += len;
                if (q->off[i] < q->size[i])
                        at_end = false;
        }
        if (p->err == 0 && at_end && q->have_record) {
                json_t *rec = NULL;
                int r = result_load(q->results_fd, q->id, &rec);
                p->err = paced_append(p, proto_ev_end(q->id, r == 0 ? rec : NULL));
                json_decref(rec);
                p->end_sent = true;
        }
}

/* After a piece: a live job, caught up with what it captured, goes on as a
 * follower, and the replay ends. Looked up again: it may have ended
 * meanwhile. */
static bool piece_sent(struct paced *p) {
        struct logs_req *q = container_of(p, struct logs_req, p);
        struct conn *c = p->c;
        struct rjob *rj = q->have_record ? NULL : jobs_find(&c->d->jobs, q->id);
        if (!q->have_record && !rj) {
                q->have_record = true; /* ended: read to the end, then its record */
                return false;
        }
        if (!rj)
                return false;
        for (int i = 0; i < 2; i++)
                if ((q->streams & proto_stream_bit(i)) && q->off[i] < rj->cap.kept[i])
                        return false;
        subscribe_add(c, rj, W_FOLLOW, q->streams, q->tag);
        return true;
}

static const struct paced_ops replay_ops = {
        .piece = run_piece,
        .sent = piece_sent,
        .free = req_free,
};

static const struct paced_ops snapshot_ops = {
        .piece = run_snapshot_piece,
        .free = req_free,
};

static void snapshot_done(struct work *w) {
        struct logs_req *q = container_of(w, struct logs_req, p.work);
        struct conn *c = q->p.c;
        if (!c->closed && q->p.err < 0) {
                conn_send(c, proto_error(q->tag, E_INTERNAL, "cannot read the output of %s: %s", q->id, strerror(-q->p.err)));
                paced_finish(&q->p);
                return;
        }
        paced_continue(&q->p);
}

void logs_serve(struct conn *c, struct request *req, struct rjob *rj, const char *id) {
        struct daemon *d = c->d;
        /* Every message within the client's buffer, whatever its bytes: a
         * byte may take up to six in JSON (\u00XX), two streams. */
        uint64_t bound = d->cfg->client_buffer / 12;
        if (req->follow && rj && !subscribe_room(c, req->tag))
                return;
        struct logs_req *q = calloc(1, sizeof(*q));
        if (!q) {
                conn_send(c, proto_error(req->tag, E_INTERNAL, "out of memory"));
                return;
        }
        q->results_fd = d->dirs.results_fd;
        snprintf(q->id, sizeof(q->id), "%s", id);
        q->tag = req->tag ? json_incref(req->tag) : NULL;
        q->streams = req->streams;
        q->off[0] = q->off[1] = req->follow ? 0 : req->offset;
        q->max_bytes = req->follow ? REPLAY_PIECE : req->max_bytes;
        if (q->max_bytes > bound)
                q->max_bytes = bound;
        q->have_record = !rj;
        paced_init(&q->p, c, req->follow ? &replay_ops : &snapshot_ops, q->id);
        if (req->follow) {
                conn_send(c, proto_ok(req->tag, json_pack("{s:s}", "job", id)));
                paced_next(&q->p);
                return;
        }
        paced_submit(&q->p, run_snapshot, snapshot_done);
}
