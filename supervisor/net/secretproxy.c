/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <sodium.h>

#include "conf.h"
#include "log.h"
#include "loop.h"
#include "secretproxy.h"
#include "util.h"

#define CONNECT_MS 10000        /* the upstream's TCP connect */
#define HANDSHAKE_MS 10000      /* each TLS handshake */
#define CHUNK 16384

struct psecret {
        char name[SECRET_NAME_MAX + 1];
        char *value;
        char *placeholder;
        size_t len;
};

struct secretproxy {
        atomic_uint refs;
        char job[32];
        struct source src;      /* the listening socket, on the loop */
        bool listening;
        struct psecret s[SECRET_MAX_PER_JOB];
        size_t n;
        struct secret_host hosts[SECRET_HOSTS_MAX];
        size_t n_hosts;
        char *ca_file;
        gnutls_x509_privkey_t ca_key, leaf_key;
        gnutls_x509_crt_t ca;
        char *ca_pem;
        char ca_hashname[16];
        pthread_mutex_t lock;   /* the leaf credentials, made on first use */
        gnutls_certificate_credentials_t leaf[SECRET_HOSTS_MAX];
        atomic_uint conns;
        atomic_uint_fast64_t served, refused;
};

struct pconn {
        struct secretproxy *px;
        int fd, up_fd;
        int host;               /* index into px->hosts, once the job named it */
        gnutls_session_t job, up;
};

/* The upstream's credentials, one for the daemon (the system's CAs take
 * a while to read): made on first use with the first proxy's ca_file
 * (a [daemon] key: the same for every job until a restart). */
static pthread_mutex_t up_lock = PTHREAD_MUTEX_INITIALIZER;
/* connections (threads) of every job together */
static atomic_uint all_conns;
static gnutls_certificate_credentials_t up_cred;
static char up_why[160];

static int up_credentials(const char *ca_file, gnutls_certificate_credentials_t *ret) {
        pthread_mutex_lock(&up_lock);
        if (!up_cred && !up_why[0]) {
                gnutls_certificate_credentials_t c;
                int r = gnutls_certificate_allocate_credentials(&c);
                if (r == 0 && gnutls_certificate_set_x509_system_trust(c) < 0)
                        log_warning("secrets proxy: the system's CAs could not be read; only secret_proxy_ca is trusted");
                if (r == 0 && ca_file && (r = gnutls_certificate_set_x509_trust_file(c, ca_file, GNUTLS_X509_FMT_PEM)) <= 0) {
                        snprintf(up_why, sizeof(up_why), "secret_proxy_ca %s: %s", ca_file,
                                 r == 0 ? "no certificate in it" : gnutls_strerror(r));
                        r = r == 0 ? GNUTLS_E_NO_CERTIFICATE_FOUND : r;
                }
                else if (r < 0)
                        snprintf(up_why, sizeof(up_why), "TLS credentials: %s", gnutls_strerror(r));
                if (r < 0)
                        gnutls_certificate_free_credentials(c);
                else
                        up_cred = c;
        }
        *ret = up_cred;
        pthread_mutex_unlock(&up_lock);
        return up_cred ? 0 : -EINVAL;
}

int secretproxy_setup(const char *ca_file, struct sbx_error *err) {
        gnutls_certificate_credentials_t c;
        if (!ca_file)
                return 0;
        if (up_credentials(ca_file, &c) < 0)
                return sbx_error_msg(err, EINVAL, "%s", up_why);
        return 0;
}

void secretproxy_placeholder(char *buf, size_t len) {
        static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        for (size_t i = 0; i < len; i++)
                buf[i] = i < 3 ? "sbx"[i] : set[randombytes_uniform(sizeof(set) - 1)];
}

/* OpenSSL finds a CA in a directory by the hash of its subject's
 * canonical form: each name's value as a UTF8String, lower case (ours is
 * already), the RDNs' DER without the outer SEQUENCE, SHA-1, the first
 * four bytes little-endian. The subject here is one common name. */
static void openssl_hashname(const char *cn, char out[16]) {
        size_t n = strlen(cn);
        uint8_t der[128], md[20];
        size_t k = 0;
        der[k++] = 0x31; der[k++] = (uint8_t) (n + 9);
        der[k++] = 0x30; der[k++] = (uint8_t) (n + 7);
        der[k++] = 0x06; der[k++] = 3; der[k++] = 0x55; der[k++] = 0x04; der[k++] = 0x03;
        der[k++] = 0x0c; der[k++] = (uint8_t) n;
        memcpy(der + k, cn, n);
        k += n;
        gnutls_hash_fast(GNUTLS_DIG_SHA1, der, k, md);
        snprintf(out, 16, "%08x.0", (unsigned) md[0] | (unsigned) md[1] << 8 | (unsigned) md[2] << 16 | (unsigned) md[3] << 24);
}

static int set_serial(gnutls_x509_crt_t c) {
        uint8_t serial[16];
        randombytes_buf(serial, sizeof(serial));
        serial[0] &= 0x7f; /* positive */
        return gnutls_x509_crt_set_serial(c, serial, sizeof(serial));
}

/* The job's CA: its own key, valid from an hour ago for a week (a job
 * lives at most its timeout; a session its TTL), able to sign for the
 * secrets' hosts and nothing else (a critical name constraint). */
static int make_ca(struct secretproxy *px, struct sbx_error *err) {
        char cn[64];
        time_t now = time(NULL);
        gnutls_x509_name_constraints_t nc = NULL;
        gnutls_datum_t pem = { 0 };
        int r;
        snprintf(cn, sizeof(cn), "sbx-proxy-ca-%s", px->job);
        for (char *p = cn; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char) (*p - 'A' + 'a');
        if ((r = gnutls_x509_privkey_init(&px->ca_key)) < 0 ||
            (r = gnutls_x509_privkey_generate(px->ca_key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
            (r = gnutls_x509_privkey_init(&px->leaf_key)) < 0 ||
            (r = gnutls_x509_privkey_generate(px->leaf_key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
            (r = gnutls_x509_crt_init(&px->ca)) < 0 || (r = gnutls_x509_crt_set_version(px->ca, 3)) < 0 ||
            (r = set_serial(px->ca)) < 0 || (r = gnutls_x509_crt_set_activation_time(px->ca, now - 3600)) < 0 ||
            (r = gnutls_x509_crt_set_expiration_time(px->ca, now + 7 * 86400)) < 0 ||
            (r = gnutls_x509_crt_set_dn_by_oid(px->ca, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn))) < 0 ||
            (r = gnutls_x509_crt_set_key(px->ca, px->ca_key)) < 0 ||
            (r = gnutls_x509_crt_set_basic_constraints(px->ca, 1, 0)) < 0 ||
            (r = gnutls_x509_crt_set_key_usage(px->ca, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN)) < 0 ||
            (r = gnutls_x509_name_constraints_init(&nc)) < 0)
                goto fail;
        for (size_t i = 0; i < px->n_hosts; i++) {
                gnutls_datum_t d = { (unsigned char *) px->hosts[i].name, (unsigned) strlen(px->hosts[i].name) };
                if ((r = gnutls_x509_name_constraints_add_permitted(nc, GNUTLS_SAN_DNSNAME, &d)) < 0)
                        goto fail;
        }
        if ((r = gnutls_x509_crt_set_name_constraints(px->ca, nc, 1)) < 0 ||
            (r = gnutls_x509_crt_sign2(px->ca, px->ca, px->ca_key, GNUTLS_DIG_SHA256, 0)) < 0 ||
            (r = gnutls_x509_crt_export2(px->ca, GNUTLS_X509_FMT_PEM, &pem)) < 0)
                goto fail;
        gnutls_x509_name_constraints_deinit(nc);
        if (!(px->ca_pem = strndup((const char *) pem.data, pem.size))) {
                gnutls_free(pem.data);
                return sbx_error_set(err, ENOMEM, "secrets proxy");
        }
        gnutls_free(pem.data);
        openssl_hashname(cn, px->ca_hashname);
        return 0;
fail:
        if (nc)
                gnutls_x509_name_constraints_deinit(nc);
        return sbx_error_msg(err, EIO, "secrets proxy: the job's CA: %s", gnutls_strerror(r));
}

/* The credentials the job's side of a connection to host i is served
 * with: a certificate for that name, signed by the job's CA. */
static gnutls_certificate_credentials_t leaf_for(struct secretproxy *px, int i) {
        gnutls_certificate_credentials_t c = NULL;
        gnutls_x509_crt_t crt = NULL;
        const char *name = px->hosts[i].name;
        time_t now = time(NULL);
        int r;
        pthread_mutex_lock(&px->lock);
        if (px->leaf[i])
                goto out;
        if ((r = gnutls_x509_crt_init(&crt)) < 0 || (r = gnutls_x509_crt_set_version(crt, 3)) < 0 || (r = set_serial(crt)) < 0 ||
            (r = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
            (r = gnutls_x509_crt_set_expiration_time(crt, now + 7 * 86400)) < 0 ||
            (r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, name, strlen(name))) < 0 ||
            (r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name, strlen(name), GNUTLS_FSAN_SET)) < 0 ||
            (r = gnutls_x509_crt_set_key(crt, px->leaf_key)) < 0 || (r = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
            (r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
            (r = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
            (r = gnutls_x509_crt_sign2(crt, px->ca, px->ca_key, GNUTLS_DIG_SHA256, 0)) < 0 ||
            (r = gnutls_certificate_allocate_credentials(&c)) < 0 ||
            (r = gnutls_certificate_set_x509_key(c, &crt, 1, px->leaf_key)) < 0) {
                log_warning("%s: secrets proxy: a certificate for %s: %s", px->job, name, gnutls_strerror(r));
                if (c)
                        gnutls_certificate_free_credentials(c);
                goto out;
        }
        px->leaf[i] = c;
out:
        if (crt)
                gnutls_x509_crt_deinit(crt);
        c = px->leaf[i];
        pthread_mutex_unlock(&px->lock);
        return c;
}

static int host_index(const struct secretproxy *px, const char *name) {
        for (size_t i = 0; i < px->n_hosts; i++)
                if (streq(px->hosts[i].name, name))
                        return (int) i;
        return -1;
}

bool secretproxy_host(const struct secretproxy *px, const char *name) {
        return px && host_index(px, name) >= 0;
}

/* The job's ClientHello is in: the name it asks for picks the
 * certificate; a name not ours ends the handshake. */
static int on_hello(gnutls_session_t s) {
        struct pconn *c = gnutls_session_get_ptr(s);
        char name[256];
        size_t len = sizeof(name);
        unsigned type;
        gnutls_certificate_credentials_t cred;
        if (gnutls_server_name_get(s, name, &len, &type, 0) < 0 || type != GNUTLS_NAME_DNS || len >= sizeof(name))
                return GNUTLS_E_UNRECOGNIZED_NAME;
        name[len] = '\0';
        for (char *p = name; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char) (*p - 'A' + 'a');
        if ((c->host = host_index(c->px, name)) < 0) {
                log_info("%s: secrets proxy: refused a connection for '%.64s' (not a host of the job's header secrets)",
                         c->px->job, name);
                return GNUTLS_E_UNRECOGNIZED_NAME;
        }
        if (!(cred = leaf_for(c->px, c->host)))
                return GNUTLS_E_CERTIFICATE_ERROR;
        return gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
}

static const gnutls_datum_t http11 = { (unsigned char *) "http/1.1", 8 };

/* Blocking reads and writes bounded by the idle time; each TLS record
 * sent at once (Nagle's wait for the peer's delayed ACK cost 40 ms on
 * every request's last piece). */
static void tune(int fd) {
        struct timeval tv = { .tv_sec = SECRETPROXY_IDLE_MS / 1000 };
        int one = 1;
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A TCP connection to the host, by its name or the entry's address,
 * within CONNECT_MS: the descriptor, or -errno. */
static int up_connect(const struct secret_host *h, char *why, size_t len) {
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                  .ai_flags = h->addr[0] ? AI_NUMERICHOST : 0 };
        struct addrinfo *ai = NULL;
        char port[8];
        int fd = -1, r;
        snprintf(port, sizeof(port), "%u", (unsigned) h->port);
        if ((r = getaddrinfo(h->addr[0] ? h->addr : h->name, port, &hints, &ai)) != 0) {
                snprintf(why, len, "%s: %s", h->addr[0] ? h->addr : h->name, gai_strerror(r));
                return -EHOSTUNREACH;
        }
        r = -EHOSTUNREACH;
        snprintf(why, len, "%s port %u: no address", h->name, (unsigned) h->port);
        for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
                int e = 0;
                if ((fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
                        e = errno;
                else if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && (e = errno) == EINPROGRESS) {
                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                        socklen_t el = sizeof(e);
                        if (poll(&p, 1, CONNECT_MS) != 1)
                                e = ETIMEDOUT;
                        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
                                e = errno;
                }
                if (e != 0) {
                        r = -e;
                        snprintf(why, len, "%s port %u: %s", h->addr[0] ? h->addr : h->name, (unsigned) h->port, strerror(e));
                        if (fd >= 0)
                                close(fd);
                        fd = -1;
                }
        }
        freeaddrinfo(ai);
        if (fd < 0)
                return r;
        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        tune(fd);
        return fd;
}

/* The job hears why there is no upstream, as an HTTP answer. */
static void bad_gateway(struct pconn *c, const char *why) {
        char body[512], msg[768];
        int n = snprintf(body, sizeof(body), "sbx secrets proxy: %s\n", why);
        int m = snprintf(msg, sizeof(msg), "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                                           "Content-Length: %d\r\n\r\n%s", n, body);
        if (m > 0 && (size_t) m < sizeof(msg))
                (void) gnutls_record_send(c->job, msg, (size_t) m);
}

static int up_open(struct pconn *c, char *why, size_t len) {
        const struct secret_host *h = &c->px->hosts[c->host];
        gnutls_certificate_credentials_t cred;
        int r;
        if (up_credentials(c->px->ca_file, &cred) < 0) {
                snprintf(why, len, "%s", up_why);
                return -EINVAL;
        }
        if ((c->up_fd = up_connect(h, why, len)) < 0)
                return c->up_fd;
        if ((r = gnutls_init(&c->up, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL)) < 0 || (r = gnutls_set_default_priority(c->up)) < 0 ||
            (r = gnutls_server_name_set(c->up, GNUTLS_NAME_DNS, h->name, strlen(h->name))) < 0 ||
            (r = gnutls_alpn_set_protocols(c->up, &http11, 1, 0)) < 0 ||
            (r = gnutls_credentials_set(c->up, GNUTLS_CRD_CERTIFICATE, cred)) < 0) {
                snprintf(why, len, "TLS to %s: %s", h->name, gnutls_strerror(r));
                return -EIO;
        }
        gnutls_session_set_verify_cert(c->up, h->name, 0);
        gnutls_transport_set_int(c->up, c->up_fd);
        gnutls_handshake_set_timeout(c->up, HANDSHAKE_MS);
        do
                r = gnutls_handshake(c->up);
        while (r < 0 && !gnutls_error_is_fatal(r));
        if (r < 0) {
                if (r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
                        gnutls_datum_t out = { 0 };
                        unsigned status = gnutls_session_get_verify_cert_status(c->up);
                        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
                                snprintf(why, len, "TLS to %s: its certificate: %s", h->name, out.data);
                                gnutls_free(out.data);
                                return -EIO;
                        }
                }
                snprintf(why, len, "TLS to %s: %s", h->name, gnutls_strerror(r));
                return -EIO;
        }
        return 0;
}

/* One direction's replacement: each pattern of from by the same number
 * of bytes of to. The bytes that could still begin a pattern are held
 * back until more come (or the end). */
struct subst {
        const char *from[SECRET_MAX_PER_JOB], *to[SECRET_MAX_PER_JOB];
        size_t len[SECRET_MAX_PER_JOB], n;
        char buf[CHUNK + SECRET_VALUE_MAX];
        size_t have;
};

static void subst_apply(struct subst *x) {
        for (size_t k = 0; k < x->n; k++) {
                char *p = x->buf, *end = x->buf + x->have;
                while ((p = memmem(p, (size_t) (end - p), x->from[k], x->len[k]))) {
                        memcpy(p, x->to[k], x->len[k]);
                        p += x->len[k];
                }
        }
}

/* What may go out now of x->buf: all of it but its longest tail that
 * begins a pattern (all of it at the end). */
static size_t subst_ready(struct subst *x, bool end) {
        size_t hold = 0;
        subst_apply(x);
        if (end)
                return x->have;
        for (size_t k = 0; k < x->n; k++) {
                size_t from = x->have > x->len[k] - 1 ? x->have - (x->len[k] - 1) : 0;
                for (size_t p = from; p < x->have && x->have - p > hold; p++)
                        if (x->buf[p] == x->from[k][0] && memcmp(x->buf + p, x->from[k], x->have - p) == 0) {
                                hold = x->have - p;
                                break;
                        }
        }
        return x->have - hold;
}

static void subst_drop(struct subst *x, size_t n) {
        memmove(x->buf, x->buf + n, x->have - n);
        x->have -= n;
}

static int send_all(gnutls_session_t s, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = gnutls_record_send(s, p, n);
                if (k < 0) {
                        if (!gnutls_error_is_fatal((int) k))
                                continue;
                        return -EIO;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Read what from has into x, send what is decided to to: 1 while the
 * connection goes on, 0 at from's end (what was held back sent), -1 on an
 * error. */
static int pump(gnutls_session_t from, gnutls_session_t to, struct subst *x) {
        ssize_t k;
        do
                k = gnutls_record_recv(from, x->buf + x->have, CHUNK);
        while (k == GNUTLS_E_INTERRUPTED);
        /* a record of the handshake's (a TLS 1.3 session ticket), or
         * SECRETPROXY_IDLE_MS in the middle of a record: the caller's
         * poll decides */
        if (k == GNUTLS_E_AGAIN)
                return 1;
        bool end = k == 0 || k == GNUTLS_E_PREMATURE_TERMINATION;
        if (k < 0 && !end) {
                log_debug("secrets proxy: a connection ends: %s", gnutls_strerror((int) k));
                return -1;
        }
        if (k > 0)
                x->have += (size_t) k;
        size_t n = subst_ready(x, end);
        if (n > 0 && send_all(to, x->buf, n) < 0)
                return -1;
        subst_drop(x, n);
        return end ? 0 : 1;
}

static void relay(struct pconn *c, struct subst *out, struct subst *back) {
        for (;;) {
                int r;
                if (gnutls_record_check_pending(c->job) > 0)
                        r = pump(c->job, c->up, out);
                else if (gnutls_record_check_pending(c->up) > 0)
                        r = pump(c->up, c->job, back);
                else {
                        struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = c->up_fd, .events = POLLIN } };
                        int n = poll(p, 2, SECRETPROXY_IDLE_MS);
                        if (n <= 0)
                                return; /* idle, or an error */
                        if (p[0].revents)
                                r = pump(c->job, c->up, out);
                        else
                                r = pump(c->up, c->job, back);
                }
                if (r <= 0) {
                        /* one side ended: the other is told, and that is all */
                        gnutls_bye(c->job, GNUTLS_SHUT_WR);
                        gnutls_bye(c->up, GNUTLS_SHUT_WR);
                        return;
                }
        }
}

static void subst_init(struct subst *x, const struct secretproxy *px, int host, bool out) {
        x->n = x->have = 0;
        for (size_t i = 0; i < px->n; i++) {
                bool meant = false;
                for (size_t k = 0; k < px->n_hosts && !meant; k++)
                        meant = streq(px->hosts[k].secret, px->s[i].name) && streq(px->hosts[k].name, px->hosts[host].name);
                /* the way back hides every value, meant for this host or not */
                if (out && !meant)
                        continue;
                x->from[x->n] = out ? px->s[i].placeholder : px->s[i].value;
                x->to[x->n] = out ? px->s[i].value : px->s[i].placeholder;
                x->len[x->n] = px->s[i].len;
                x->n++;
        }
}

static void serve(struct pconn *c) {
        struct secretproxy *px = c->px;
        char why[256];
        int r;
        tune(c->fd);
        if ((r = gnutls_init(&c->job, GNUTLS_SERVER | GNUTLS_NO_SIGNAL)) < 0 || (r = gnutls_set_default_priority(c->job)) < 0 ||
            (r = gnutls_alpn_set_protocols(c->job, &http11, 1, 0)) < 0) {
                log_warning("%s: secrets proxy: TLS: %s", px->job, gnutls_strerror(r));
                return;
        }
        gnutls_session_set_ptr(c->job, c);
        gnutls_handshake_set_post_client_hello_function(c->job, on_hello);
        gnutls_transport_set_int(c->job, c->fd);
        gnutls_handshake_set_timeout(c->job, HANDSHAKE_MS);
        do
                r = gnutls_handshake(c->job);
        while (r < 0 && !gnutls_error_is_fatal(r));
        if (r < 0 || c->host < 0) {
                atomic_fetch_add(&px->refused, 1);
                log_debug("%s: secrets proxy: the job's handshake: %s", px->job, gnutls_strerror(r));
                return;
        }
        if (up_open(c, why, sizeof(why)) < 0) {
                atomic_fetch_add(&px->refused, 1);
                log_warning("%s: secrets proxy: %s", px->job, why);
                bad_gateway(c, why);
                gnutls_bye(c->job, GNUTLS_SHUT_WR);
                return;
        }
        atomic_fetch_add(&px->served, 1);
        log_debug("%s: secrets proxy: %s connected", px->job, px->hosts[c->host].name);
        struct subst *x = malloc(2 * sizeof(*x));
        if (!x)
                return;
        subst_init(&x[0], px, c->host, true);
        subst_init(&x[1], px, c->host, false);
        relay(c, &x[0], &x[1]);
        /* it held secrets' values */
        sodium_memzero(x, 2 * sizeof(*x));
        free(x);
}

static void *conn_main(void *arg) {
        struct pconn *c = arg;
        struct secretproxy *px = c->px;
        serve(c);
        if (c->job)
                gnutls_deinit(c->job);
        if (c->up)
                gnutls_deinit(c->up);
        if (c->up_fd >= 0)
                close(c->up_fd);
        close(c->fd);
        free(c);
        atomic_fetch_sub(&px->conns, 1);
        atomic_fetch_sub(&all_conns, 1);
        secretproxy_unref(px);
        return NULL;
}

static void on_accept(struct source *s, uint32_t events) {
        struct secretproxy *px = container_of(s, struct secretproxy, src);
        (void) events;
        for (int i = 0; i < 16; i++) {
                int fd = accept4(px->src.fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                struct pconn *c = NULL;
                pthread_t t;
                pthread_attr_t a;
                unsigned all = atomic_fetch_add(&all_conns, 1);
                if (atomic_fetch_add(&px->conns, 1) >= SECRETPROXY_CONNS || all >= SECRETPROXY_CONNS_ALL ||
                    !(c = calloc(1, sizeof(*c)))) {
                        atomic_fetch_sub(&px->conns, 1);
                        atomic_fetch_sub(&all_conns, 1);
                        atomic_fetch_add(&px->refused, 1);
                        close(fd);
                        continue;
                }
                *c = (struct pconn) { .px = px, .fd = fd, .up_fd = -1, .host = -1 };
                atomic_fetch_add(&px->refs, 1);
                pthread_attr_init(&a);
                pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&a, 256 * 1024);
                if (pthread_create(&t, &a, conn_main, c) != 0) {
                        atomic_fetch_sub(&px->conns, 1);
                        atomic_fetch_sub(&all_conns, 1);
                        atomic_fetch_add(&px->refused, 1);
                        close(fd);
                        free(c);
                        secretproxy_unref(px);
                }
                pthread_attr_destroy(&a);
        }
}

int secretproxy_new(const char *job_id, const struct secretproxy_secret *s, size_t n, const struct secret_host *hosts,
                    size_t n_hosts, const char *ca_file, struct secretproxy **ret, struct sbx_error *err) {
        struct secretproxy *px = calloc(1, sizeof(*px));
        *ret = NULL;
        if (!px)
                return sbx_error_set(err, ENOMEM, "secrets proxy");
        atomic_init(&px->refs, 1);
        px->src.fd = -1;
        pthread_mutex_init(&px->lock, NULL);
        snprintf(px->job, sizeof(px->job), "%s", job_id);
        for (size_t i = 0; i < n && i < SECRET_MAX_PER_JOB; i++) {
                struct psecret *p = &px->s[px->n++];
                snprintf(p->name, sizeof(p->name), "%s", s[i].name);
                p->len = s[i].len;
                if (!(p->value = malloc(p->len)) || !(p->placeholder = malloc(p->len))) {
                        secretproxy_unref(px);
                        return sbx_error_set(err, ENOMEM, "secrets proxy");
                }
                memcpy(p->value, s[i].value, p->len);
                memcpy(p->placeholder, s[i].placeholder, p->len);
        }
        /* the hosts of these secrets only */
        for (size_t i = 0; i < n_hosts; i++)
                for (size_t k = 0; k < px->n; k++)
                        if (streq(hosts[i].secret, px->s[k].name) && px->n_hosts < SECRET_HOSTS_MAX) {
                                px->hosts[px->n_hosts++] = hosts[i];
                                break;
                        }
        if (ca_file && !(px->ca_file = strdup(ca_file))) {
                secretproxy_unref(px);
                return sbx_error_set(err, ENOMEM, "secrets proxy");
        }
        int r = make_ca(px, err);
        if (r < 0) {
                secretproxy_unref(px);
                return r;
        }
        *ret = px;
        return 0;
}

const char *secretproxy_ca_pem(const struct secretproxy *px) {
        return px->ca_pem;
}

const char *secretproxy_ca_hashname(const struct secretproxy *px) {
        return px->ca_hashname;
}

int secretproxy_listen(struct secretproxy *px, int fd) {
        if (!px) {
                close(fd);
                return 0;
        }
        if (listen(fd, SECRETPROXY_CONNS) < 0 || loop_add(&px->src, fd, EPOLLIN, on_accept) < 0) {
                int r = -errno;
                close(fd);
                return r < 0 ? r : -EIO;
        }
        px->listening = true;
        return 0;
}

void secretproxy_close(struct secretproxy *px) {
        if (!px || !px->listening)
                return;
        loop_del(&px->src);
        close(px->src.fd);
        px->src.fd = -1;
        px->listening = false;
}

void secretproxy_counts(const struct secretproxy *px, uint64_t *ret_served, uint64_t *ret_refused) {
        *ret_served = px ? atomic_load(&px->served) : 0;
        *ret_refused = px ? atomic_load(&px->refused) : 0;
}

void secretproxy_unref(struct secretproxy *px) {
        if (!px || atomic_fetch_sub(&px->refs, 1) > 1)
                return;
        /* closed by its job on the loop (secretproxy_close) before this */
        for (size_t i = 0; i < px->n; i++) {
                if (px->s[i].value)
                        sodium_memzero(px->s[i].value, px->s[i].len);
                free(px->s[i].value);
                free(px->s[i].placeholder);
        }
        for (size_t i = 0; i < SECRET_HOSTS_MAX; i++)
                if (px->leaf[i])
                        gnutls_certificate_free_credentials(px->leaf[i]);
        if (px->ca)
                gnutls_x509_crt_deinit(px->ca);
        if (px->ca_key)
                gnutls_x509_privkey_deinit(px->ca_key);
        if (px->leaf_key)
                gnutls_x509_privkey_deinit(px->leaf_key);
        pthread_mutex_destroy(&px->lock);
        free(px->ca_pem);
        free(px->ca_file);
        free(px);
}
