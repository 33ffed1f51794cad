/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl run --npm-lock FILE and --pip-requirements FILE: lock files as
 * pins. --npm-lock: the packages of an npm lock file
 * (package-lock.json or npm-shrinkwrap.json, lockfileVersion 2 or 3) as
 * the request's npm pins, each NAME@VERSION#INTEGRITY. What runs is the
 * production tree: devDependencies are left out, and so are optional
 * packages for another system (their "os" or "cpu" not this one's).
 * sbx pins one version a name, so a lock with a package at two versions
 * is refused, naming it; so are links, aliases and packages without an
 * integrity (git and file dependencies). */
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "macro.h"
#include "sbxctl.h"

/* Does a lock entry's "os" or "cpu" list admit value? (npm's form: names,
 * or "!name" for all but it.) */
static bool admits(json_t *list, const char *value) {
        size_t i;
        json_t *v;
        bool any_positive = false;
        if (!json_is_array(list))
                return true;
        json_array_foreach(list, i, v) {
                const char *s = json_string_value(v);
                if (!s)
                        continue;
                if (s[0] == '!') {
                        if (streq(s + 1, value))
                                return false;
                } else {
                        any_positive = true;
                        if (streq(s, value))
                                return true;
                }
        }
        return !any_positive;
}

/* The machine as Node names it (process.arch). */
static const char *node_cpu(void) {
        static struct utsname u;
        if (uname(&u) < 0)
                return "x64";
        if (streq(u.machine, "x86_64"))
                return "x64";
        if (streq(u.machine, "aarch64"))
                return "arm64";
        if (streq(u.machine, "i686") || streq(u.machine, "i386"))
                return "ia32";
        return u.machine;
}

void sbxctl_npm_lock(json_t *npm, const char *path) {
        size_t len;
        unsigned char *d = sbxctl_slurp(path, &len);
        json_error_t je;
        json_t *root = json_loadb((const char *) d, len, JSON_REJECT_DUPLICATES, &je);
        free(d);
        if (!root)
                die("--npm-lock %s: line %d: %s", path, je.line, je.text);
        json_t *pkgs = json_object_get(root, "packages"), *v;
        if (!json_is_object(pkgs))
                die("--npm-lock %s: no \"packages\" (lockfileVersion %lld: one of npm 7 or later is needed)", path,
                    (long long) json_integer_value(json_object_get(root, "lockfileVersion")));
        json_t *seen = json_object();   /* name -> version */
        const char *key, *cpu = node_cpu();
        json_object_foreach(pkgs, key, v) {
                if (!*key)
                        continue;
                const char *base = key;
                for (const char *p = key; (p = strstr(p, "node_modules/")); p += 13)
                        base = p + 13;
                if (strncmp(key, "node_modules/", 13) != 0)
                        continue;       /* a workspace's own directory */
                if (json_is_true(json_object_get(v, "dev")))
                        continue;
                if (json_is_true(json_object_get(v, "optional")) &&
                    (!admits(json_object_get(v, "os"), "linux") || !admits(json_object_get(v, "cpu"), cpu)))
                        continue;
                const char *version = json_string_value(json_object_get(v, "version"));
                const char *integrity = json_string_value(json_object_get(v, "integrity"));
                const char *name = json_string_value(json_object_get(v, "name"));
                if (json_is_true(json_object_get(v, "link")))
                        die("--npm-lock %s: %s is a link (to %s): sbx installs packages from the registry only", path, key,
                            json_string_value(json_object_get(v, "resolved")) ?: "?");
                if (name && !streq(name, base))
                        die("--npm-lock %s: %s is an alias of %s: sbx refuses aliases", path, key, name);
                if (!version || !integrity)
                        die("--npm-lock %s: %s has no %s (a git, file or URL dependency?): sbx installs registry packages "
                            "with their integrity", path, key, version ? "integrity" : "version");
                const char *had = json_string_value(json_object_get(seen, base));
                if (had && !streq(had, version))
                        die("--npm-lock %s: %s is in it at %s and at %s: sbx pins one version a name", path, base, had, version);
                if (had)
                        continue;
                json_object_set_new(seen, base, json_string(version));
                char *pin;
                if (asprintf(&pin, "%s@%s#%s", base, version, integrity) < 0)
                        die("out of memory");
                json_array_append_new(npm, json_string(pin));
                free(pin);
        }
        if (json_object_size(seen) == 0)
                die("--npm-lock %s: no packages to install in it", path);
        json_decref(seen);
        json_decref(root);
}

/* One requirement of a requirements file (a logical line, comments and
 * continuations gone) as a pin, appended to pip. */
static void pip_requirement(json_t *pip, const char *path, unsigned line, char *s) {
        char *save = NULL, *spec = NULL, *hashes = NULL;
        size_t n_hashes = 0, cap = 0, len = 0;
        for (char *tok = strtok_r(s, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                const char *h = NULL;
                if (strncmp(tok, "--hash=", 7) == 0)
                        h = tok + 7;
                else if (streq(tok, "--hash"))
                        h = strtok_r(NULL, " \t", &save);
                else if (tok[0] == '-')
                        die("--pip-requirements %s:%u: pip's option '%s' is not taken: only pins (NAME==VERSION, with "
                            "--hash=sha256:HEX if any)", path, line, tok);
                else if (spec || strchr(tok, ';'))
                        die("--pip-requirements %s:%u: an environment marker ('%s'): sbxctl does not evaluate them; "
                            "compile the requirements for the sandbox's Python", path, line, tok);
                else {
                        spec = tok;
                        continue;
                }
                if (!h || strncmp(h, "sha256:", 7) != 0)
                        die("--pip-requirements %s:%u: a hash is --hash=sha256:HEX (got '%s')", path, line, h ? h : "");
                if (++n_hashes > 32)
                        die("--pip-requirements %s:%u: more than 32 hashes for one package", path, line);
                size_t need = len + strlen(h + 7) + 2;
                if (need > cap && !(hashes = realloc(hashes, cap = need * 2)))
                        die("out of memory");
                len += (size_t) sprintf(hashes + len, "%s%s", len ? "," : "", h + 7);
        }
        if (!spec)
                die("--pip-requirements %s:%u: hashes without a package", path, line);
        if (strchr(spec, '[') || !strstr(spec, "==") || strpbrk(spec, "<>~!,"))
                die("--pip-requirements %s:%u: '%s' is not NAME==VERSION (pins are exact; no extras, no ranges)", path, line, spec);
        char *pin;
        if (asprintf(&pin, "%s%s%s", spec, hashes ? "#sha256=" : "", hashes ? hashes : "") < 0)
                die("out of memory");
        json_array_append_new(pip, json_string(pin));
        free(pin);
        free(hashes);
}

void sbxctl_pip_requirements(json_t *pip, const char *path) {
        size_t len;
        char *text = (char *) sbxctl_slurp(path, &len);
        char *buf = malloc(len + 1), *next;
        if (!buf)
                die("out of memory");
        /* logical lines: a backslash at a line's end continues it */
        unsigned line = 1, first = 1;
        size_t k = 0;
        for (size_t i = 0; i <= len; i++) {
                char c = i < len ? text[i] : '\n';
                if (c == '\\' && i + 1 < len && text[i + 1] == '\n') {
                        buf[k++] = ' ';
                        i++;
                        line++;
                        continue;
                }
                if (c != '\n') {
                        buf[k++] = c == '\r' ? ' ' : c;
                        continue;
                }
                buf[k] = '\0';
                /* a comment: '#' at the start or after white space */
                for (char *h = buf; (h = strchr(h, '#')); h++)
                        if (h == buf || h[-1] == ' ' || h[-1] == '\t') {
                                *h = '\0';
                                break;
                        }
                next = buf + strspn(buf, " \t");
                if (*next)
                        pip_requirement(pip, path, first, next);
                k = 0;
                first = ++line;
        }
        if (json_array_size(pip) == 0)
                die("--pip-requirements %s: no packages in it", path);
        free(buf);
        free(text);
}
