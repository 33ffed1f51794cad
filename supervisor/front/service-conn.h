/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the service proxy (service.c: the listener, request heads and
 * forwards; service-pump.c: moving bytes, bandwidth, ends and audit): a
 * proxied connection and the proxy's state. Not for the rest of the
 * daemon, which uses service.h. */
#pragma once

#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "loop.h"
#include "proto.h"
#include "util.h"

struct daemon;

#define HEAD_MAX 16384
#define BUF_SIZE 65536
#define CONNS_MAX 1024
/* Audit lines for refused connections, a second (the rest are counted). */
#define REFUSALS_LOGGED 100

enum sc_state { SC_HEAD, SC_CONNECTING, SC_PIPE };

/* A session's bandwidth (its tenant's service_bandwidth, both ways
 * together): a bucket of a second's worth of bytes, refilled as time
 * passes; a connection that finds it empty stops reading until the
 * proxy's tick refills it. */
#define TICK_MS 50
struct bucket {
        struct list link;
        char session[PROTO_SESSION_ID_LEN + 1];
        uint64_t rate;            /* bytes a second */
        uint64_t tokens;
        uint64_t at_ms;           /* last refill */
        unsigned users;           /* connections that use it */
};

struct svc_conn {
        struct list link;
        struct services *sv;
        struct source csrc, usrc, tsrc;
        int cfd, ufd, tfd;
        enum sc_state state;
        char head[HEAD_MAX];
        size_t head_len;
        char *buf[2];             /* [0] client to service, [1] service to client */
        size_t len[2], off[2];
        bool eof[2];              /* [0] the client, [1] the service stopped sending */
        char session[PROTO_SESSION_ID_LEN + 1];
        char tenant[64];
        uint16_t port;
        char peer[64];
        uint64_t started_ms;
        uint64_t bytes[2];        /* [0] to the service, [1] to the client */
        bool by_url;              /* let in by a signed URL, not the token */
        bool raw;                 /* session.forward: a socket client's bytes, no HTTP */
        struct bucket *bucket;    /* its session's bandwidth, or NULL: none */
        bool starved;             /* the bucket was empty: waiting for the tick */
};

struct services {
        struct daemon *d;
        int fd;
        struct source src;
        struct list conns;
        unsigned n;
        uint8_t key[crypto_auth_hmacsha256_KEYBYTES];
        time_t refusal_second;
        unsigned refusals, refusals_dropped;
        struct list buckets;
        int tick_fd;              /* refills buckets while a connection is starved */
        struct source tick_src;
        bool ticking;
};

/* service-pump.c */
/* Audit this refusal? (100 a second; the rest are counted in the log.) */
bool sv_refusal_logged(struct services *sv);
void sc_free(void *p);
void svc_close_src(struct source *s, int *fd);
/* The connection's end (status: the HTTP refusal, 0: it was proxied),
 * with its audit line. */
void sc_end(struct svc_conn *sc, int status, const char *why);
/* An HTTP answer with status and why (none for a forward), then the end. */
void sc_refuse(struct svc_conn *sc, int status, const char *why);
void sc_update_interest(struct svc_conn *sc);
/* Move what can be moved both ways; the end when both sides ended. */
void sc_pump_both(struct svc_conn *sc);
void sc_on_upstream(struct source *s, uint32_t events);
void sv_on_tick(struct source *s, uint32_t events);
/* The session's bucket, shared by its connections (made at the first). */
struct bucket *sv_bucket_get(struct services *sv, const char *session, uint64_t rate);
