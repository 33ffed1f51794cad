/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy of a job's header secrets (sbx-supervisord(8) SECRETS). The
 * job is given a placeholder of each such secret, as long as its value;
 * the names of the secrets' hosts resolve to 127.0.0.1 in its sandbox (its
 * DNS proxy answers them), where the daemon serves port 443 from a socket
 * opened inside the job's network namespace. A connection there is ended
 * with a certificate of the job's own CA (made here, for this job only,
 * limited by name constraints to those hosts) for the host the job named
 * (TLS SNI); the daemon opens TLS to the real host, its certificate
 * checked against the system's CAs and secret_proxy_ca, and passes the
 * bytes both ways: the placeholders of the secrets meant for that host
 * replaced by their values on the way out, and the values by the
 * placeholders on the way back. HTTP/1.1 only (ALPN), so that the
 * requests' bytes are the headers' bytes. A thread per connection, at most
 * SECRETPROXY_CONNS of a job and SECRETPROXY_CONNS_ALL in all at once;
 * nothing of it runs on the loop but the accept. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define SECRETPROXY_CONNS 16       /* connections of one job at once */
#define SECRETPROXY_CONNS_ALL 256  /* of every job together (a thread each) */
#define SECRETPROXY_IDLE_MS 60000  /* a connection silent both ways this long is closed */

struct secretproxy;
struct secret_host;

struct secretproxy_secret {
        const char *name;
        const char *value;         /* len bytes */
        const char *placeholder;   /* len bytes too */
        size_t len;
};

/* At start: the CAs of ca_file ([daemon] secret_proxy_ca), with the
 * system's, read now (before the daemon drops privilege); an error names
 * the file. Without it the system's are read at the first connection. */
int secretproxy_setup(const char *ca_file, struct sbx_error *err);
/* A proxy of job job_id's header secrets s (n of them), each sent to the
 * entries of hosts (the tenant's secret_hosts) that name it; ca_file: more
 * CAs to trust upstream ([daemon] secret_proxy_ca), or NULL. Makes the
 * job's CA and copies what it keeps. */
int secretproxy_new(const char *job_id, const struct secretproxy_secret *s, size_t n, const struct secret_host *hosts,
                    size_t n_hosts, const char *ca_file, struct secretproxy **ret, struct sbx_error *err);
/* The job's CA certificate (PEM), and the file name OpenSSL looks it up by
 * in a directory of $SSL_CERT_DIR ("%08x.0", its subject's hash). */
const char *secretproxy_ca_pem(const struct secretproxy *px);
const char *secretproxy_ca_hashname(const struct secretproxy *px);
/* Serve on fd (a TCP socket bound to 127.0.0.1:443 inside the job's
 * network namespace, not listening yet), taken; with px NULL (a job
 * without header secrets) fd is only closed. */
int secretproxy_listen(struct secretproxy *px, int fd);
/* Accept no more (connections already made end by themselves). On the
 * loop, before the job's own secretproxy_unref(). */
void secretproxy_close(struct secretproxy *px);
void secretproxy_unref(struct secretproxy *px);
/* name (lower case, no final dot) is one of px's hosts. px may be NULL. */
bool secretproxy_host(const struct secretproxy *px, const char *name);
/* Connections served and refused so far (the record's). */
void secretproxy_counts(const struct secretproxy *px, uint64_t *ret_served, uint64_t *ret_refused);
/* A placeholder of len bytes: "sbx" and random letters and digits. */
void secretproxy_placeholder(char *buf, size_t len);
