/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-bundle(1): the publisher's tool. pack a directory into a bundle
 * archive; check an archive the way the daemon will unpack it; index
 * archives into a registry tree (REGISTRY/NAME/index.json, the archives
 * beside it), and say how to sign the index with minisign and which
 * serial to give it. The tool never signs: the secret key stays with
 * minisign. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle-tool.h"
#include "extract.h"
#include "index.h"
#include "manifest.h"
#include "minisign.h"
#include "util.h"

/* Unpack the archive into a scratch directory under the rules (and the
 * default bounds) of the daemon, and read its manifest. */
static int check_archive(const char *path, struct manifest *m) {
        struct sbx_error err;
        struct extract_stats st;
        atomic_bool stop = false;
        struct extract_limits lim = { .max_bytes = 512ull << 20, .max_entries = 10000, .max_path = EXTRACT_MAX_PATH };
        char scratch[] = "/tmp/sbx-bundle.XXXXXX", name[4200];
        if (!mkdtemp(scratch))
                return tool_err(errno, "mkdtemp");
        int r = 0;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int dir = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || dir < 0)
                r = tool_err(errno, "%s", fd < 0 ? path : scratch);
        if (r == 0 && extract_archive(fd, dir, &lim, &stop, &st, &err) < 0)
                r = tool_err(0, "%s: the daemon would refuse it: %s", path, err.msg);
        if (r == 0) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                snprintf(name, sizeof(name), "%s:" MANIFEST_FILE, path);
                int e = read_file_at(dir, MANIFEST_FILE, MANIFEST_MAX_SIZE, &text, &len);
                if (e < 0)
                        r = tool_err(-e, "%s", name);
                else if (manifest_parse(m, name, text, len, &err) < 0)
                        r = tool_err(0, "%s", err.msg);
        }
        /* The scratch tree is read-only by now: as root that is no matter;
         * otherwise make it writable to remove it. */
        if (dir >= 0 && geteuid() != 0) {
                char cmd[64];
                snprintf(cmd, sizeof(cmd), "chmod -R u+w %s", scratch);
                (void) !system(cmd);
        }
        rm_rf_at(AT_FDCWD, scratch);
        if (r == 0)
                printf("%s: %s %s, %" PRIu64 " entries, %" PRIu64 " bytes unpacked: the daemon accepts it\n", path, m->name,
                       m->version, st.entries, st.bytes);
        return r;
}

static int copy_file(const char *from, const char *to) {
        char tmp[4500], buf[65536];
        snprintf(tmp, sizeof(tmp), "%s.tmp", to);
        _cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (in < 0 || out < 0)
                return tool_err(errno, "%s", in < 0 ? from : tmp);
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return tool_err(errno, "%s", from);
                if (n == 0)
                        break;
                if (write_all(out, buf, (size_t) n) < 0)
                        return tool_err(errno, "%s", tmp);
        }
        if (fsync(out) < 0 || rename(tmp, to) < 0)
                return tool_err(errno, "%s", to);
        return 0;
}

/* The serial of the last signature (0 without one), to suggest the next. */
static uint64_t last_serial(const char *bdir, const char *name) {
        char path[4300], *text = NULL;
        size_t len = 0;
        struct minisign_sig sig;
        uint64_t serial = 0;
        snprintf(path, sizeof(path), "%s/index.json.minisig", bdir);
        if (read_file_at(AT_FDCWD, path, MINISIGN_MAX_FILE, &text, &len) == 0 &&
            minisign_sig_parse(path, text, len, &sig, NULL) == 0)
                (void) index_comment_serial(sig.trusted, name, &serial, NULL);
        free(text);
        return serial;
}

static int load_index(const char *bdir, const char *name, struct bundle_index *ix) {
        char path[4300], *text = NULL;
        size_t len = 0;
        struct sbx_error err;
        snprintf(path, sizeof(path), "%s/index.json", bdir);
        int r = read_file_at(AT_FDCWD, path, INDEX_MAX_SIZE, &text, &len);
        if (r == -ENOENT) {
                memset(ix, 0, sizeof(*ix));
                snprintf(ix->name, sizeof(ix->name), "%s", name);
                return 0;
        }
        if (r < 0)
                return tool_err(-r, "%s", path);
        r = index_parse(text, len, ix, &err);
        free(text);
        if (r < 0)
                return tool_err(0, "%s: %s", path, err.msg);
        if (!streq(ix->name, name)) {
                index_free(ix);
                return tool_err(0, "%s: the index of '%s', not '%s'", path, ix->name, name);
        }
        return 0;
}

static int save_index(const char *bdir, const struct bundle_index *ix) {
        char path[4300];
        json_t *j = index_to_json(ix);
        snprintf(path, sizeof(path), "%s/index.json", bdir);
        _cleanup_free_ char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
        json_decref(j);
        if (!s)
                return tool_err(ENOMEM, "index.json");
        size_t n = strlen(s);
        s[n] = '\n';
        _cleanup_close_ int dir = open(bdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0 || write_file_durable(dir, "index.json", s, n + 1, 0644, true) < 0)
                return tool_err(errno, "%s", path);
        return 0;
}

/* One archive into REGISTRY/NAME/: copied beside the index (a version,
 * once published, never changes), and listed in it. */
static int index_one(const char *registry, const char *archive, char *name_out) {
        struct manifest m;
        struct bundle_index ix;
        char hex[65], bdir[4200], file[INDEX_MAX_FILE + 1], dest[4400];
        uint64_t size;
        manifest_init(&m);
        int r = check_archive(archive, &m);
        if (r == 0)
                r = tool_sha256_file(archive, hex, &size);
        if (r < 0) {
                manifest_free(&m);
                return r;
        }
        snprintf(name_out, BUNDLE_NAME_MAX + 1, "%s", m.name);
        snprintf(bdir, sizeof(bdir), "%s/%s", registry, m.name);
        snprintf(file, sizeof(file), "%s-%s.tar.gz", m.name, m.version);
        snprintf(dest, sizeof(dest), "%s/%s", bdir, file);
        if (mkdir(bdir, 0755) < 0 && errno != EEXIST)
                r = tool_err(errno, "%s", bdir);
        if (r == 0)
                r = load_index(bdir, m.name, &ix);
        if (r < 0) {
                manifest_free(&m);
                return r;
        }
        const struct index_entry *old = index_find_version(&ix, m.version);
        if (old && !streq(old->sha256, hex))
                r = tool_err(0, "%s %s is published already with sha256 %s; a version never changes: publish a new one", m.name,
                             m.version, old->sha256);
        struct stat a, b;
        bool same = stat(archive, &a) == 0 && stat(dest, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
        if (r == 0 && !same)
                r = copy_file(archive, dest);
        if (r == 0 && !old) {
                struct index_entry *n = realloc(ix.v, (ix.n + 1) * sizeof(*n));
                if (!n)
                        r = tool_err(ENOMEM, "index");
                else {
                        ix.v = n;
                        memset(&n[ix.n], 0, sizeof(n[ix.n]));
                        snprintf(n[ix.n].version, sizeof(n[ix.n].version), "%s", m.version);
                        snprintf(n[ix.n].sha256, sizeof(n[ix.n].sha256), "%s", hex);
                        snprintf(n[ix.n].file, sizeof(n[ix.n].file), "%s", file);
                        n[ix.n].size = size;
                        ix.n++;
                }
        }
        if (r == 0)
                r = save_index(bdir, &ix);
        if (r == 0)
                printf("%s: %s %s (sha256 %s, %" PRIu64 " bytes)%s\n", dest, m.name, m.version, hex, size,
                       old ? " was listed already" : " added");
        index_free(&ix);
        manifest_free(&m);
        return r;
}

static void suggest(const char *registry, const char *name) {
        char bdir[4200];
        snprintf(bdir, sizeof(bdir), "%s/%s", registry, name);
        uint64_t serial = last_serial(bdir, name) + 1;
        printf("sign it (serial %" PRIu64 ", above every serial signed before):\n"
               "  minisign -S -s KEY -m %s/index.json -t 'serial=%" PRIu64 " name=%s'\n",
               serial, bdir, serial, name);
}

/* Without archives: every archive of REGISTRY/NAME/ listed again. */
static int index_all(const char *registry, char names[][BUNDLE_NAME_MAX + 1], size_t max, size_t *n_names) {
        _cleanup_closedir_ DIR *top = opendir(registry);
        struct dirent *de;
        int r = 0;
        if (!top)
                return tool_err(errno, "%s", registry);
        while (r == 0 && (de = readdir(top))) {
                char bdir[4200];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(bdir, sizeof(bdir), "%s/%s", registry, de->d_name);
                _cleanup_closedir_ DIR *sub = opendir(bdir);
                struct dirent *f;
                while (r == 0 && sub && (f = readdir(sub))) {
                        size_t l = strlen(f->d_name);
                        char path[8400], name[BUNDLE_NAME_MAX + 1];
                        if (l < 8 || strcmp(f->d_name + l - 7, ".tar.gz") != 0)
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", bdir, f->d_name);
                        r = index_one(registry, path, name);
                        if (r == 0 && *n_names < max && (*n_names == 0 || !streq(names[*n_names - 1], name)))
                                snprintf(names[(*n_names)++], BUNDLE_NAME_MAX + 1, "%s", name);
                }
        }
        return r;
}

static int cmd_index(const char *registry, char **archives, int n) {
        static char names[256][BUNDLE_NAME_MAX + 1];
        size_t n_names = 0;
        int r = 0;
        if (n == 0)
                r = index_all(registry, names, 256, &n_names);
        for (int i = 0; r == 0 && i < n; i++) {
                char name[BUNDLE_NAME_MAX + 1];
                r = index_one(registry, archives[i], name);
                bool seen = false;
                for (size_t k = 0; k < n_names; k++)
                        seen |= streq(names[k], name);
                if (r == 0 && !seen && n_names < 256)
                        snprintf(names[n_names++], sizeof(names[0]), "%s", name);
        }
        for (size_t k = 0; r == 0 && k < n_names; k++)
                suggest(registry, names[k]);
        return r;
}

static void usage(FILE *f) {
        fprintf(f, "Usage: sbx-bundle pack DIR [-o FILE]\n"
                   "       sbx-bundle check ARCHIVE...\n"
                   "       sbx-bundle index REGISTRY [ARCHIVE]...\n"
                   "Make bundles for sbx-supervisord and publish them in a registry (see sbx-bundle(1)).\n");
}

int main(int argc, char **argv) {
        if (sodium_init() < 0)
                return tool_err(0, "libsodium initialisation failed") ? 1 : 1;
        if (argc >= 2 && (streq(argv[1], "-h") || streq(argv[1], "--help"))) {
                usage(stdout);
                return 0;
        }
        if (argc >= 2 && (streq(argv[1], "-V") || streq(argv[1], "--version"))) {
                printf("sbx-bundle %s\n", PACKAGE_VERSION);
                return 0;
        }
        if (argc >= 3 && streq(argv[1], "pack")) {
                const char *out = NULL;
                if (argc == 5 && streq(argv[3], "-o"))
                        out = argv[4];
                else if (argc != 3) {
                        usage(stderr);
                        return 2;
                }
                return tool_pack(argv[2], out) < 0 ? 1 : 0;
        }
        if (argc >= 3 && streq(argv[1], "check")) {
                int r = 0;
                for (int i = 2; i < argc; i++) {
                        struct manifest m;
                        manifest_init(&m);
                        r |= check_archive(argv[i], &m);
                        manifest_free(&m);
                }
                return r < 0 ? 1 : 0;
        }
        if (argc >= 3 && streq(argv[1], "index"))
                return cmd_index(argv[2], argv + 3, argc - 3) < 0 ? 1 : 0;
        usage(stderr);
        return 2;
}
