/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl download: one file of a finished job, an artifact or a captured
 * stream, received in the daemon's bounded pieces and checked against the
 * size and SHA-256 the daemon sends at the end. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "sbxctl.h"

static void write_out(int fd, const unsigned char *b, size_t n, const char *name) {
        while (n > 0) {
                ssize_t w = write(fd, b, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        die("%s: %s", name, strerror(errno));
                b += w;
                n -= (size_t) w;
        }
}

struct dl_state {
        int fd;
        const char *name;     /* where the bytes go, for messages */
        uint64_t got;
        crypto_hash_sha256_state sha;
};

/* One data event: its bytes, in order. */
static void take_data(struct dl_state *s, json_t *m) {
        const char *b = json_string_value(json_object_get(m, "data_b64"));
        json_t *off = json_object_get(m, "offset");
        if (!b || !json_is_integer(off) || (uint64_t) json_integer_value(off) != s->got)
                die("bad data event from the daemon (expected offset %llu)", (unsigned long long) s->got);
        size_t bl = strlen(b), n = 0;
        unsigned char *buf = malloc(bl ? bl : 1);
        if (!buf)
                die("out of memory");
        if (sodium_base642bin(buf, bl, b, bl, NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL) < 0)
                die("bad base64 from the daemon");
        crypto_hash_sha256_update(&s->sha, buf, n);
        if (!json_out || s->fd != STDOUT_FILENO)
                write_out(s->fd, buf, n, s->name);
        s->got += n;
        free(buf);
}

/* The end event: what we received must be what the daemon sent. */
static void check_end(struct dl_state *s, json_t *m, uint64_t size) {
        unsigned char digest[crypto_hash_sha256_BYTES];
        char hex[2 * crypto_hash_sha256_BYTES + 1];
        crypto_hash_sha256_final(&s->sha, digest);
        sodium_bin2hex(hex, sizeof(hex), digest, sizeof(digest));
        const char *want = json_string_value(json_object_get(m, "sha256"));
        if (s->got != size || (uint64_t) json_integer_value(json_object_get(m, "size")) != size)
                die("%s: received %llu bytes, the daemon announced %llu", s->name, (unsigned long long) s->got, (unsigned long long) size);
        if (!want || !streq(want, hex))
                die("%s: SHA-256 mismatch (received %s, the daemon sent %s)", s->name, hex, want ? want : "none");
}

static void receive(struct dl_state *s, uint64_t size) {
        for (;;) {
                json_t *m = recv_message();
                const char *ev = json_string_value(json_object_get(m, "event"));
                if (ev && streq(ev, "data")) {
                        take_data(s, m);
                } else if (ev && streq(ev, "download_end")) {
                        check_end(s, m, size);
                        json_decref(m);
                        return;
                } else if (ev && streq(ev, "error")) {
                        json_t *e = json_object_get(m, "error");
                        die("download failed: %s: %s", json_string_value(json_object_get(e, "code")) ?: "E_?",
                            json_string_value(json_object_get(e, "message")) ?: "");
                }
                json_decref(m);
        }
}

int sbxctl_download(int argc, char **argv) {
        static const struct option opts[] = {
                { "output", required_argument, NULL, 'o' }, { "stream", required_argument, NULL, 'S' }, { NULL, 0, NULL, 0 },
        };
        const char *out = NULL, *stream = NULL;
        int o;
        optind = 1;
        while ((o = getopt_long(argc, argv, "+:o:", opts, NULL)) >= 0) {
                if (o == 'o')
                        out = optarg;
                else if (o == 'S' && (streq(optarg, "stdout") || streq(optarg, "stderr")))
                        stream = optarg;
                else if (o == 'S')
                        usage_error("download: --stream: expected stdout or stderr, got '%s'", optarg);
                else if (o == ':')
                        usage_error("download: %s needs a value", argv[optind - 1]);
                else
                        usage_error("download: unknown option '%s'", argv[optind - 1]);
        }
        int want = stream ? 1 : 2;
        if (argc - optind != want)
                usage_error("download: expected %s", stream ? "JOB (with --stream)" : "JOB PATH, or --stream S JOB");
        json_t *req = new_req("download");
        json_object_set_new(req, "job", json_string(argv[optind]));
        if (stream)
                json_object_set_new(req, "stream", json_string(stream));
        else
                json_object_set_new(req, "artifact", json_string(argv[optind + 1]));
        struct dl_state s = { .fd = STDOUT_FILENO, .name = "standard output" };
        if (out && !streq(out, "-")) {
                s.fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (s.fd < 0)
                        die("%s: %s", out, strerror(errno));
                s.name = out;
        }
        crypto_hash_sha256_init(&s.sha);
        connect_daemon();
        json_t *m = request(req);
        uint64_t size = (uint64_t) json_integer_value(json_object_get(m, "size"));
        receive(&s, size);
        if (s.fd != STDOUT_FILENO && close(s.fd) < 0)
                die("%s: %s", out, strerror(errno));
        return 0;
}
