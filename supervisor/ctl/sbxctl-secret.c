/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl secret set|ls|rm: the values of tenants' secrets, kept by the
 * daemon. A value is read from standard input, never from the command
 * line (where ps and shell histories would show it). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <unistd.h>

#include "conf.h"
#include "proto.h"
#include "sbxctl.h"
#include "util.h"

/* Standard input, whole: at most SECRET_VALUE_MAX bytes after one final
 * newline ("\n" or "\r\n", as echo and a terminal add) is taken off,
 * unless keep_newline. */
static char *read_value(bool keep_newline, size_t *ret_len) {
        size_t cap = SECRET_VALUE_MAX + 3, len = 0;
        char *buf = malloc(cap);
        if (!buf)
                die("out of memory");
        if (isatty(STDIN_FILENO))
                fprintf(stderr, "sbxctl: reading the secret's value from standard input (end it with Ctrl-D)\n");
        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        die("secret set: standard input: %s", strerror(errno));
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len == cap) {
                        sodium_memzero(buf, len);
                        die("secret set: the value is longer than %d bytes", SECRET_VALUE_MAX);
                }
        }
        if (!keep_newline && len > 0 && buf[len - 1] == '\n') {
                len--;
                if (len > 0 && buf[len - 1] == '\r')
                        len--;
        }
        if (len < SECRET_VALUE_MIN || len > SECRET_VALUE_MAX) {
                sodium_memzero(buf, len);
                die("secret set: the value is %zu bytes; a secret is %d to %d bytes", len, SECRET_VALUE_MIN, SECRET_VALUE_MAX);
        }
        if (memchr(buf, '\0', len)) {
                sodium_memzero(buf, len);
                die("secret set: the value holds a NUL byte");
        }
        *ret_len = len;
        return buf;
}

static int cmd_set(int argc, char **argv) {
        bool keep = false;
        int k = 2;
        if (k < argc && streq(argv[k], "--keep-newline")) {
                keep = true;
                k++;
        }
        if (argc - k != 2)
                usage_error("secret set: expected [--keep-newline] TENANT NAME (the value comes on standard input)");
        size_t len;
        char *v = read_value(keep, &len);
        json_t *val = json_stringn(v, len);
        sodium_memzero(v, len);
        free(v);
        if (!val)
                die("secret set: the value is not UTF-8 text");
        json_t *req = new_req("secret.set");
        json_object_set_new(req, "tenant", json_string(argv[k]));
        json_object_set_new(req, "name", json_string(argv[k + 1]));
        json_object_set_new(req, "value", val);
        connect_daemon();
        json_t *s = json_object_get(request(req), "secret");
        if (!json_out)
                printf("secret %s of tenant %s set (%lld bytes)%s\n", argv[k + 1], argv[k],
                       (long long) json_integer_value(json_object_get(s, "bytes")),
                       json_is_null(json_object_get(s, "granted")) ? "; the tenant's policy does not grant it (secrets)" : "");
        return 0;
}

static int cmd_rm(int argc, char **argv) {
        if (argc != 4)
                usage_error("secret rm: expected TENANT NAME");
        json_t *req = new_req("secret.rm");
        json_object_set_new(req, "tenant", json_string(argv[2]));
        json_object_set_new(req, "name", json_string(argv[3]));
        connect_daemon();
        request(req);
        if (!json_out)
                printf("secret %s of tenant %s removed\n", argv[3], argv[2]);
        return 0;
}

static int cmd_ls(int argc, char **argv) {
        if (argc > 3)
                usage_error("secret ls: expected at most one tenant");
        json_t *req = new_req("secret.ls");
        if (argc == 3)
                json_object_set_new(req, "tenant", json_string(argv[2]));
        connect_daemon();
        json_t *m = request(req);
        if (json_out)
                return 0;
        size_t i;
        json_t *e;
        printf("%-32s %-8s %8s  %s\n", "NAME", "GRANTED", "BYTES", "UPDATED");
        json_array_foreach (json_object_get(m, "secrets"), i, e) {
                char when[40] = "(not set)";
                json_t *u = json_object_get(e, "updated_ms");
                if (json_is_integer(u))
                        format_rfc3339((uint64_t) json_integer_value(u), when, sizeof(when));
                json_t *b = json_object_get(e, "bytes");
                char bytes[24] = "-";
                if (json_is_integer(b))
                        snprintf(bytes, sizeof(bytes), "%lld", (long long) json_integer_value(b));
                printf("%-32s %-8s %8s  %s\n", json_string_value(json_object_get(e, "name")) ?: "?",
                       json_string_value(json_object_get(e, "granted")) ?: "no", bytes, when);
        }
        return 0;
}

int sbxctl_secret(int argc, char **argv) {
        if (argc < 2)
                usage_error("secret: expected set, ls or rm");
        if (streq(argv[1], "set"))
                return cmd_set(argc, argv);
        if (streq(argv[1], "ls"))
                return cmd_ls(argc, argv);
        if (streq(argv[1], "rm"))
                return cmd_rm(argc, argv);
        usage_error("secret: unknown command '%s' (expected set, ls or rm)", argv[1]);
}
