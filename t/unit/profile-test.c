/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the profile library: every key, every error path with its
 * file:line message, merging, validation, the search path, and the round
 * trip parse -> write -> parse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <linux/capability.h>
#include <seccomp.h>

#include "profile.h"

/* ---- helpers -------------------------------------------------------------- */

static char *write_string(const struct profile *p) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        assert_int_equal(profile_write(p, f), 0);
        fclose(f);
        return buf;
}

static void load_ok(struct profile *p, const char *text) {
        struct sbx_error e = { 0 };
        int r = profile_load_string(p, "t.ini", text, &e);
        if (r < 0)
                print_error("unexpected error: %s\nprofile:\n%s\n", e.msg, text);
        assert_int_equal(r, 0);
}

/* Load text into a fresh profile and expect exactly this message. */
static void expect_error(const char *text, const char *msg) {
        struct profile p;
        struct sbx_error e = { 0 };
        profile_init(&p);
        int r = profile_load_string(&p, "t.ini", text, &e);
        if (r >= 0 || strcmp(e.msg, msg) != 0)
                print_error("profile:\n%s\ngot r=%d '%s'\nwant '%s'\n", text, r, e.msg, msg);
        assert_true(r < 0);
        assert_string_equal(e.msg, msg);
        profile_free(&p);
}

static void expect_invalid(const char *text, const char *msg) {
        struct profile p;
        struct sbx_error e = { 0 };
        profile_init(&p);
        load_ok(&p, text);
        int r = profile_validate(&p, &e);
        if (r >= 0 || strcmp(e.msg, msg) != 0)
                print_error("profile:\n%s\ngot r=%d '%s'\nwant '%s'\n", text, r, e.msg, msg);
        assert_int_equal(r, -EINVAL);
        assert_string_equal(e.msg, msg);
        profile_free(&p);
}

/* Write p, load the text into a fresh profile and compare. */
static void assert_round_trip(const struct profile *p) {
        char *text = write_string(p);
        struct profile q;
        profile_init(&q);
        load_ok(&q, text);
        if (!profile_equal(p, &q))
                print_error("round trip differs; written:\n%s\n", text);
        assert_true(profile_equal(p, &q));
        /* Stable: writing what was read back gives the same bytes. */
        char *again = write_string(&q);
        assert_string_equal(text, again);
        free(again);
        free(text);
        profile_free(&q);
}

static char tmpdir[64];

static int setup_tmpdir(void **state) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof(tmpdir), "%s/sbx-unit-XXXXXX", base && strlen(base) < 30 ? base : "/tmp");
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmpdir(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

/* ---- defaults and keys ------------------------------------------------- */

static void test_defaults(void **state) {
        struct profile p;
        profile_init(&p);
        assert_int_equal(p.namespaces, PROFILE_NS_ALL);
        assert_true(p.uid == PROFILE_ID_SAME);
        assert_true(p.gid == (gid_t) PROFILE_ID_SAME);
        assert_true(p.die_with_parent && p.new_session && p.env_clear);
        assert_int_equal(p.net, NET_NONE);
        assert_int_equal(p.seccomp, SECCOMP_DEFAULT);
        assert_int_equal(p.landlock, LANDLOCK_BEST_EFFORT);
        assert_true(p.limits.core_bytes == 0);
        assert_true(p.limits.timeout_ms == PROFILE_UNSET && p.limits.memory_bytes == PROFILE_UNSET &&
                    p.limits.cpu_s == PROFILE_UNSET && p.limits.open_files == PROFILE_UNSET);
        assert_false(p.sys);
        assert_false(p.ports_set);
        assert_int_equal(profile_validate(&p, NULL), 0);
        /* An empty profile is the defaults. */
        struct profile q;
        profile_init(&q);
        load_ok(&q, "; nothing\n\n# at all\n");
        assert_true(profile_equal(&p, &q));
        profile_free(&q);
        profile_free(&p);
}

static void test_sandbox_keys(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[sandbox]\nnamespaces = pid uts\nhostname = box-1.local\nuid = 1000\ngid = 0\n"
                    "die-with-parent = no\nnew-session = false\n");
        assert_int_equal(p.namespaces, PROFILE_NS_USER | PROFILE_NS_MOUNT | PROFILE_NS_PID | PROFILE_NS_UTS);
        /* No net namespace is host networking, and the two fields agree. */
        assert_int_equal(p.net, NET_HOST);
        assert_string_equal(p.hostname, "box-1.local");
        assert_int_equal(p.uid, 1000);
        assert_int_equal(p.gid, 0);
        assert_false(p.die_with_parent);
        assert_false(p.new_session);
        load_ok(&p, "[sandbox]\nnamespaces = all\nshare = net cgroup\n");
        assert_int_equal(p.namespaces, PROFILE_NS_ALL & ~(PROFILE_NS_NET | PROFILE_NS_CGROUP));
        assert_int_equal(p.net, NET_HOST);
        load_ok(&p, "[sandbox]\nnamespaces =\n");
        assert_int_equal(p.namespaces, PROFILE_NS_USER | PROFILE_NS_MOUNT);
        /* A continuation line extends the set. */
        load_ok(&p, "[sandbox]\nnamespaces = pid\n    net ipc\n");
        assert_int_equal(p.namespaces, PROFILE_NS_USER | PROFILE_NS_MOUNT | PROFILE_NS_PID | PROFILE_NS_NET |
                                               PROFILE_NS_IPC);
        assert_int_equal(p.net, NET_NONE);
        load_ok(&p, "[net]\nmode = host\n");
        assert_false(p.namespaces & PROFILE_NS_NET);
        load_ok(&p, "[net]\nmode = none\n");
        assert_true(p.namespaces & PROFILE_NS_NET);
        /* The job's terminal: auto by default, then as said. */
        assert_int_equal(p.pty, PTY_AUTO);
        load_ok(&p, "[sandbox]\npty = yes\n");
        assert_int_equal(p.pty, PTY_YES);
        load_ok(&p, "[sandbox]\npty = no\n");
        assert_int_equal(p.pty, PTY_NO);
        profile_free(&p);
        expect_error("[sandbox]\npty = always\n", "t.ini:2: sandbox.pty: expected auto, yes or no (value 'always')");
}

static void test_fs_ops(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[fs]\n"
                    "ro-bind = /usr /usr\n"
                    "ro-bind-try = /lib64 //lib64/./\n"
                    "bind = /srv/data /data\n"
                    "bind-try = /a /b\n"
                    "dev-bind = /dev/fuse /dev/fuse\n"
                    "dev-bind-try = /dev/kvm /dev/kvm\n"
                    "symlink = usr/lib /lib\n"
                    "tmpfs = /tmp size=64M mode=1777 nr_inodes=1000\n"
                    "dir = /work mode=0700\n"
                    "file = /etc/motd data=\"hi there\\n\" mode=0644\n"
                    "file = /etc/passwd fd=3\n"
                    "file = /empty data=\n"
                    "proc = /proc\n"
                    "dev = /dev\n"
                    "mqueue = /dev/mqueue\n"
                    "remount-ro = /\n"
                    "chdir = /work\n");
        assert_int_equal(p.n_fs, 17);
        assert_int_equal(p.fs[0].type, FS_RO_BIND);
        assert_false(p.fs[0].try_);
        assert_string_equal(p.fs[1].dest, "/lib64");
        assert_true(p.fs[1].try_);
        assert_int_equal(p.fs[4].type, FS_DEV_BIND);
        assert_true(p.fs[5].try_);
        assert_int_equal(p.fs[6].type, FS_SYMLINK);
        assert_string_equal(p.fs[6].src, "usr/lib");
        assert_string_equal(p.fs[6].dest, "/lib");
        assert_true(p.fs[7].size_bytes == 64 << 20);
        assert_true(p.fs[7].nr_inodes == 1000);
        assert_true(p.fs[7].mode_set);
        assert_int_equal(p.fs[7].mode, 01777);
        assert_int_equal(p.fs[8].mode, 0700);
        assert_int_equal(p.fs[9].data_len, 9);
        assert_memory_equal(p.fs[9].data, "hi there\n", 9);
        assert_int_equal(p.fs[9].fd, -1);
        assert_int_equal(p.fs[10].fd, 3);
        assert_null(p.fs[10].data);
        assert_non_null(p.fs[11].data);
        assert_int_equal(p.fs[11].data_len, 0);
        assert_string_equal(p.fs[15].dest, "/");
        assert_int_equal(p.fs[16].type, FS_CHDIR);
        assert_string_equal(p.fs[3].origin, "t.ini:5");
        assert_true(p.fs[0].size_bytes == PROFILE_UNSET && p.fs[0].nr_inodes == PROFILE_UNSET);
        assert_false(p.fs[0].mode_set);
        assert_int_equal(profile_validate(&p, NULL), 0);
        assert_round_trip(&p);
        profile_free(&p);
}

static void test_env(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[env]\nclear = no\nset = PATH=/usr/bin:/bin \"PS1=a b\" EMPTY=\nkeep = TERM LANG\n"
                    "unset = LD_PRELOAD\nset = X=1=2\n");
        assert_false(p.env_clear);
        assert_int_equal(p.n_env, 7);
        assert_int_equal(p.env[0].type, ENV_SET);
        assert_string_equal(p.env[0].name, "PATH");
        assert_string_equal(p.env[0].value, "/usr/bin:/bin");
        assert_string_equal(p.env[1].value, "a b");
        assert_string_equal(p.env[2].value, "");
        assert_int_equal(p.env[3].type, ENV_KEEP);
        assert_string_equal(p.env[4].name, "LANG");
        assert_int_equal(p.env[5].type, ENV_UNSET);
        assert_null(p.env[5].value);
        assert_string_equal(p.env[6].name, "X");
        assert_string_equal(p.env[6].value, "1=2");
        assert_round_trip(&p);
        profile_free(&p);
}

static void test_net_ports(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[net]\ntcp-connect = 443 80\ntcp-bind = 8080\ntcp-connect = 22\n");
        assert_true(p.ports_set);
        assert_int_equal(p.n_connect_ports, 3);
        assert_int_equal(p.connect_ports[2], 22);
        assert_int_equal(p.n_bind_ports, 1);
        assert_int_equal(p.bind_ports[0], 8080);
        assert_round_trip(&p);
        profile_free(&p);

        /* "none": restrict TCP with no port allowed. */
        profile_init(&p);
        load_ok(&p, "[net]\nmode = host\ntcp-bind = none\n");
        assert_true(p.ports_set);
        assert_int_equal(p.n_bind_ports + p.n_connect_ports, 0);
        assert_int_equal(p.net, NET_HOST);
        assert_round_trip(&p);
        assert_int_equal(profile_validate(&p, NULL), 0);
        profile_free(&p);
}

static void test_limits(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[limits]\ntimeout = 90s\ncpu = 2m\nmemory = 512M\ndata = unlimited\nfile-size = 64M\n"
                    "stack = 8M\ncore = unlimited\nprocesses = 64\nopen-files = 256\n");
        assert_true(p.limits.timeout_ms == 90000);
        assert_true(p.limits.cpu_s == 120);
        assert_true(p.limits.memory_bytes == 512ULL << 20);
        assert_true(p.limits.data_bytes == PROFILE_UNLIMITED);
        assert_true(p.limits.file_size_bytes == 64ULL << 20);
        assert_true(p.limits.stack_bytes == 8ULL << 20);
        assert_true(p.limits.core_bytes == PROFILE_UNLIMITED);
        assert_true(p.limits.processes == 64);
        assert_true(p.limits.open_files == 256);
        assert_round_trip(&p);
        /* A later file overrides; none clears the timeout. */
        load_ok(&p, "[limits]\ntimeout = none\ncpu = 3000ms\nprocesses = unlimited\n");
        assert_true(p.limits.timeout_ms == PROFILE_UNSET);
        assert_true(p.limits.cpu_s == 3);
        assert_true(p.limits.processes == PROFILE_UNLIMITED);
        assert_int_equal(profile_validate(&p, NULL), 0);
        assert_round_trip(&p);
        profile_free(&p);
}

static void test_security(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[security]\nseccomp = strict\nallow = ptrace personality\ndeny = mount:EACCES\n"
                    "deny = unshare:38 chroot\nlandlock = required\n"
                    "capabilities = CAP_NET_BIND_SERVICE chown cap_SYS_ADMIN chown\nsys = yes\n");
        assert_int_equal(p.seccomp, SECCOMP_STRICT);
        assert_int_equal(p.n_seccomp_rules, 5);
        assert_true(p.seccomp_rules[0].allow);
        assert_int_equal(p.seccomp_rules[0].nr, seccomp_syscall_resolve_name("ptrace"));
        assert_string_equal(p.seccomp_rules[1].name, "personality");
        assert_false(p.seccomp_rules[2].allow);
        assert_int_equal(p.seccomp_rules[2].errnum, EACCES);
        assert_int_equal(p.seccomp_rules[3].errnum, 38);
        assert_int_equal(p.seccomp_rules[4].errnum, EPERM);
        assert_int_equal(p.landlock, LANDLOCK_REQUIRED);
        /* Names in any case, with or without CAP_, duplicates once. */
        assert_int_equal(p.n_caps, 3);
        assert_int_equal(p.caps[0], CAP_NET_BIND_SERVICE);
        assert_int_equal(p.caps[1], CAP_CHOWN);
        assert_int_equal(p.caps[2], CAP_SYS_ADMIN);
        assert_true(p.sys);
        assert_round_trip(&p);
        /* capabilities replaces the set; none empties it. */
        load_ok(&p, "[security]\ncapabilities = none\n");
        assert_int_equal(p.n_caps, 0);
        load_ok(&p, "[security]\ncapabilities = kill\n");
        assert_int_equal(p.n_caps, 1);
        assert_int_equal(p.caps[0], CAP_KILL);
        assert_round_trip(&p);
        profile_free(&p);
}

/* ---- value syntax ------------------------------------------------------ */

static void test_quotes_escapes(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[fs]\n"
                    "bind = \"/my dir\" /in\\ side\n"
                    "file = /f data=a\\tb\\\\c\\\"d\\;e\\#f\\$g\\x00h\\x7Fi\\r\\'\n"
                    "bind = /cost$$ /semi\\;colon  ; a comment\n");
        assert_string_equal(p.fs[0].src, "/my dir");
        assert_string_equal(p.fs[0].dest, "/in side");
        assert_int_equal(p.fs[1].data_len, 19);
        assert_memory_equal(p.fs[1].data, "a\tb\\c\"d;e#f$g\0h\x7fi\r'", 19);
        /* inih cuts " ;" even inside quotes: what remains is an unterminated quote. */
        assert_string_equal(p.fs[2].src, "/cost$");
        assert_string_equal(p.fs[2].dest, "/semi;colon");
        assert_round_trip(&p);
        profile_free(&p);
        expect_error("[fs]\nfile = /g \"data=x ; comment\"\n",
                     "t.ini:2: fs.file: unterminated double quote (value '/g \"data=x')");
}

static void test_variables(void **state) {
        struct profile p;
        profile_init(&p);
        setenv("SBX_T_WS", "/home/a user/work", 1);
        setenv("SBX_T_TRICKY", "\\n\"$x;", 1);
        load_ok(&p, "[fs]\nbind = ${SBX_T_WS} /workspace\nbind = /x${SBX_T_TRICKY} /y\n"
                    "[env]\nset = \"GREETING=${SBX_T_WS} ok\" PRICE=$$5\n");
        /* Expanded values are one word and taken literally. */
        assert_string_equal(p.fs[0].src, "/home/a user/work");
        assert_string_equal(p.fs[1].src, "/x\\n\"$x;");
        assert_string_equal(p.env[0].value, "/home/a user/work ok");
        assert_string_equal(p.env[1].value, "$5");
        assert_round_trip(&p);
        profile_free(&p);
        unsetenv("SBX_T_UNDEFINED");
        expect_error("[sandbox]\n\n[fs]\nbind = ${SBX_T_UNDEFINED} /w\n",
                     "t.ini:4: fs.bind: undefined variable ${SBX_T_UNDEFINED} (value '${SBX_T_UNDEFINED} /w')");
        expect_error("[fs]\nbind = $HOME /w\n",
                     "t.ini:2: fs.bind: '$' must start ${NAME}; write $$ for a literal '$' (value '$HOME /w')");
        expect_error("[fs]\nbind = ${HOME /w\n", "t.ini:2: fs.bind: unterminated '${' (a variable is written "
                                                  "${NAME}, a literal '$' as $$) (value '${HOME /w')");
        expect_error("[fs]\nbind = ${1X} /w\n", "t.ini:2: fs.bind: bad variable name '${1X}' (value '${1X} /w')");
        expect_error("[fs]\nbind = ${} /w\n", "t.ini:2: fs.bind: empty variable name '${}' (value '${} /w')");
}

static void test_continuation(void **state) {
        struct profile p;
        profile_init(&p);
        /* '\' joins lines into one value; the indentation is dropped. */
        load_ok(&p, "[fs]\nfile = /etc/long data=\"first part,\\\n    second part\\\n\tthird\"\nproc = /proc\n");
        assert_string_equal(p.fs[0].data, "first part,second partthird");
        assert_string_equal(p.fs[0].origin, "t.ini:2");
        assert_string_equal(p.fs[1].origin, "t.ini:5");
        /* An escaped backslash at the end is not a continuation. */
        load_ok(&p, "[fs]\nbind = /a /b\\\\\n");
        assert_string_equal(p.fs[2].dest, "/b\\");
        /* An indented line after a list key is another entry of that key;
         * inline comments are stripped there too. */
        load_ok(&p, "[env]\nkeep = A\n   B   ; comment\n");
        assert_int_equal(p.n_env, 2);
        assert_string_equal(p.env[1].name, "B");
        assert_string_equal(p.env[1].origin, "t.ini:3");
        profile_free(&p);

        expect_error("[fs]\nbind = /a \\\n/b\n",
                     "t.ini:2: the value ends in '\\' but line 3 is not an indented continuation line");
        expect_error("[fs]\nbind = /a \\\n", "t.ini:2: the value ends in '\\' but the file ends before its "
                                             "continuation");
        expect_error("[fs]\nbind = /a \\\n[env]\n",
                     "t.ini:2: the value ends in '\\' but line 3 is not an indented continuation line");
        expect_error("[sandbox]\nhostname = a\n   b\n", "t.ini:3: sandbox.hostname: takes a single line (an "
                                                         "indented line continues the previous key)");
        /* inih counts any isspace() as indentation, \v included. */
        expect_error("[sandbox]\nhostname = a\n\vb\n", "t.ini:3: sandbox.hostname: takes a single line (an "
                                                           "indented line continues the previous key)");
        expect_error("[fs]\n  bind = /a /a\n  bind = /b /b\n",
                     "t.ini:3: indented line is read as a continuation of 'bind'; do not indent keys");
}

static void test_lines(void **state) {
        struct profile p;
        profile_init(&p);
        /* CRLF line ends, a UTF-8 BOM, no final newline, inline comments. */
        load_ok(&p, "\xef\xbb\xbf[sandbox] ; c\r\nhostname = crlf ; comment\r\n[fs]\r\nproc = /proc");
        assert_string_equal(p.hostname, "crlf");
        assert_string_equal(p.fs[0].dest, "/proc");
        profile_free(&p);

        /* The longest line accepted, then one byte more. */
        char line[PROFILE_MAX_LINE + 64];
        int pre = snprintf(line, sizeof(line), "[fs]\ndir = /");
        memset(line + pre, 'd', sizeof(line) - (size_t) pre);
        line[5 + PROFILE_MAX_LINE] = '\0';
        profile_init(&p);
        load_ok(&p, line);
        assert_int_equal(strlen(p.fs[0].dest), PROFILE_MAX_LINE - 6);
        profile_free(&p);
        line[5 + PROFILE_MAX_LINE] = 'd';
        line[5 + PROFILE_MAX_LINE + 1] = '\0';
        expect_error(line, "t.ini:2: line longer than 199 bytes (split a long value with a '\\' at the end of "
                           "the line and continue it on an indented line)");
}

/* ---- errors -------------------------------------------------------------- */

static void test_errors(void **state) {
        static const struct {
                const char *text, *msg;
        } cases[] = {
                { "[foo]\n", "t.ini:1: unknown section [foo] (known: sandbox fs env net limits security)" },
                { "[fs]\n\n[ fs ]\nproc = /proc\n", "t.ini:3: unknown section [ fs ] (known: sandbox fs env net limits security)" },
                { "x = 1\n", "t.ini:1: key 'x' outside of any [section]" },
                { "[fs] ro-bind = /a /b\n", "t.ini:1: unexpected text after the section header (line '[fs] ro-bind = /a /b')" },
                { "\xef\xbb\xbf[fs] x\n", "t.ini:1: unexpected text after the section header (line '\xef\xbb\xbf[fs] x')" },
                { "\xef\xbb\xbf[nope]\n", "t.ini:1: unknown section [nope] (known: sandbox fs env net limits security)" },
                { "[Fs]\n", "t.ini:1: unknown section [Fs] (known: sandbox fs env net limits security)" },
                { "[fs]\nBind = /a /b\n", "t.ini:2: fs.Bind: unknown key (known in [fs]: bind bind-try ro-bind ro-bind-try dev-bind dev-bind-try tmpfs dir symlink file proc dev mqueue remount-ro chdir)" },
                { "[net]\nports = 1\n", "t.ini:2: net.ports: unknown key (known in [net]: mode tcp-bind tcp-connect audit)" },
                { "[sandbox]\njust words\n", "t.ini:2: syntax error: expected '[section]' or 'key = value' (line 'just words')" },
                { "[sandbox\n", "t.ini:1: syntax error: expected '[section]' or 'key = value' (line '[sandbox')" },
                { "[sandbox]\nuid = 1\nuid = 2\n", "t.ini:3: sandbox.uid: set twice in this file (first on line 2)" },
                { "[sandbox]\nnamespaces = pid\n[sandbox]\nnamespaces = net\n",
                  "t.ini:4: sandbox.namespaces: set twice in this file (first on line 2)" },
                { "[sandbox]\nnamespaces = pid time\n",
                  "t.ini:2: sandbox.namespaces: unknown namespace 'time' (known: user mount pid net ipc uts cgroup all) (value 'pid time')" },
                { "[sandbox]\nshare = user\n",
                  "t.ini:2: sandbox.share: the user namespace is always new and cannot be shared (value 'user')" },
                { "[sandbox]\nshare = all\n",
                  "t.ini:2: sandbox.share: the user and mount namespaces are always new and cannot be shared (value 'all')" },
                { "[sandbox]\nshare =\n", "t.ini:2: sandbox.share: expected namespace names to share with the host (value '')" },
                { "[sandbox]\nhostname = a b\n", "t.ini:2: sandbox.hostname: expected one host name, got 2 words (value 'a b')" },
                { "[sandbox]\nhostname = a_b\n",
                  "t.ini:2: sandbox.hostname: a host name has only letters, digits, '-' and '.' (value 'a_b')" },
                { "[sandbox]\nhostname = -a\n",
                  "t.ini:2: sandbox.hostname: a host name cannot start or end with '-' or '.' (value '-a')" },
                { "[sandbox]\nhostname = \"\"\n", "t.ini:2: sandbox.hostname: a host name has 1 to 64 characters (value '\"\"')" },
                { "[sandbox]\nuid = -1\n", "t.ini:2: sandbox.uid: not a number (value '-1')" },
                { "[sandbox]\ngid = 4294967295\n",
                  "t.ini:2: sandbox.gid: id out of range (0 to 4294967294) (value '4294967295')" },
                { "[sandbox]\ndie-with-parent = maybe\n",
                  "t.ini:2: sandbox.die-with-parent: expected a boolean: yes, no, true, false, on, off, 1 or 0 (value 'maybe')" },
                { "[sandbox]\nnew-session =\n", "t.ini:2: sandbox.new-session: expected yes or no, got 0 words (value '')" },
                { "[fs]\nbind = /a\n", "t.ini:2: fs.bind: expected SOURCE DEST, got 1 word (value '/a')" },
                { "[fs]\nbind = a /b\n", "t.ini:2: fs.bind: source 'a' must be an absolute path (value 'a /b')" },
                { "[fs]\nro-bind = /a b\n", "t.ini:2: fs.ro-bind: destination 'b' must be an absolute path (value '/a b')" },
                { "[fs]\nbind = /a /b/../etc\n",
                  "t.ini:2: fs.bind: destination '/b/../etc' must not contain '..' (value '/a /b/../etc')" },
                { "[fs]\ntmpfs = /..\n", "t.ini:2: fs.tmpfs: destination '/..' must not contain '..' (value '/..')" },
                { "[fs]\nbind = \"\" /b\n", "t.ini:2: fs.bind: source is empty (value '\"\" /b')" },
                { "[fs]\ntmpfs = /t size=0\n",
                  "t.ini:2: fs.tmpfs: size= wants a size greater than 0 such as 64M, not '0' (value '/t size=0')" },
                { "[fs]\ntmpfs = /t size=64Q\n",
                  "t.ini:2: fs.tmpfs: size= wants a size greater than 0 such as 64M, not '64Q' (value '/t size=64Q')" },
                { "[fs]\ntmpfs = /t mode=999\n",
                  "t.ini:2: fs.tmpfs: mode= wants an octal mode up to 07777, not '999' (value '/t mode=999')" },
                { "[fs]\ntmpfs = /t nr_inodes=x\n",
                  "t.ini:2: fs.tmpfs: nr_inodes= wants a count greater than 0, not 'x' (value '/t nr_inodes=x')" },
                { "[fs]\ntmpfs = /t uid=0\n",
                  "t.ini:2: fs.tmpfs: unknown option 'uid=0' (expected DEST [size=SIZE] [mode=OCTAL] [nr_inodes=N]) (value '/t uid=0')" },
                { "[fs]\ntmpfs = /t mode=1 mode=2\n",
                  "t.ini:2: fs.tmpfs: option 'mode=' given twice (value '/t mode=1 mode=2')" },
                { "[fs]\ndir = /d size=1M\n",
                  "t.ini:2: fs.dir: unknown option 'size=1M' (expected DEST [mode=OCTAL]) (value '/d size=1M')" },
                { "[fs]\nproc = /proc /x\n", "t.ini:2: fs.proc: expected DEST, got 2 words (value '/proc /x')" },
                { "[fs]\nfile = /f\n", "t.ini:2: fs.file: file needs fd=N or data=TEXT (value '/f')" },
                { "[fs]\nfile = /f fd=1 data=x\n",
                  "t.ini:2: fs.file: file takes fd= or data=, not both (value '/f fd=1 data=x')" },
                { "[fs]\nfile = /f fd=-1\n",
                  "t.ini:2: fs.file: fd= wants a file descriptor number, not '-1' (value '/f fd=-1')" },
                { "[fs]\nfile = /f data=\\q\n",
                  "t.ini:2: fs.file: unknown escape '\\q' (known: \\n \\t \\r \\\\ \\\" \\' \\; \\# \\$ \\<space> \\xHH) (value '/f data=\\q')" },
                { "[fs]\nfile = /f data=\\x4\n",
                  "t.ini:2: fs.file: '\\x' needs two hex digits (value '/f data=\\x4')" },
                { "[fs]\nbind = /a\\x00b /c\n", "t.ini:2: fs.bind: source contains a NUL byte (value '/a\\x00b /c')" },
                { "[fs]\nsymlink = \"\" /l\n", "t.ini:2: fs.symlink: symlink target is empty (value '\"\" /l')" },
                { "[fs]\nchdir = work\n", "t.ini:2: fs.chdir: directory 'work' must be an absolute path (value 'work')" },
                { "[env]\nset = PATH\n",
                  "t.ini:2: env.set: expected NAME=VALUE (quote values with spaces: NAME=\"a b\") (value 'PATH')" },
                { "[env]\nset = 1X=2\n",
                  "t.ini:2: env.set: bad variable name '1X' (letters, digits and '_', not starting with a digit) (value '1X=2')" },
                { "[env]\nkeep = A-B\n",
                  "t.ini:2: env.keep: bad variable name 'A-B' (letters, digits and '_', not starting with a digit) (value 'A-B')" },
                { "[env]\nunset =\n", "t.ini:2: env.unset: expected one or more variable names (value '')" },
                { "[env]\nclear = 2\n",
                  "t.ini:2: env.clear: expected a boolean: yes, no, true, false, on, off, 1 or 0 (value '2')" },
                { "[net]\nmode = allowlist\n", "t.ini:2: net.mode: expected none or host (value 'allowlist')" },
                { "[net]\ntcp-bind = 0\n", "t.ini:2: net.tcp-bind: '0' is not a TCP port (1 to 65535) (value '0')" },
                { "[net]\ntcp-connect = 65536\n",
                  "t.ini:2: net.tcp-connect: '65536' is not a TCP port (1 to 65535) (value '65536')" },
                { "[limits]\ntimeout = 0\n",
                  "t.ini:2: limits.timeout: a timeout must be longer than 0 (write none for no timeout) (value '0')" },
                { "[limits]\ntimeout = soon\n",
                  "t.ini:2: limits.timeout: expected a duration such as 30s, 5m, 1500ms, or none (value 'soon')" },
                { "[limits]\ncpu = 1500ms\n",
                  "t.ini:2: limits.cpu: cpu time is counted in whole seconds (at least 1s) (value '1500ms')" },
                { "[limits]\ncpu = 0\n", "t.ini:2: limits.cpu: cpu time is counted in whole seconds (at least 1s) (value '0')" },
                { "[limits]\nmemory = lots\n",
                  "t.ini:2: limits.memory: expected a size such as 512M or 2G, or unlimited (value 'lots')" },
                { "[limits]\nmemory = 18446744073709551615\n",
                  "t.ini:2: limits.memory: size too large (value '18446744073709551615')" },
                { "[limits]\nstack = 99999999999T\n", "t.ini:2: limits.stack: size too large (value '99999999999T')" },
                { "[limits]\nprocesses = -1\n", "t.ini:2: limits.processes: expected a count, or unlimited (value '-1')" },
                { "[limits]\nopen-files = 18446744073709551615\n",
                  "t.ini:2: limits.open-files: count too large (value '18446744073709551615')" },
                { "[security]\nseccomp = off\n", "t.ini:2: security.seccomp: expected default, strict or none (value 'off')" },
                { "[security]\nlandlock = yes\n",
                  "t.ini:2: security.landlock: expected off, best-effort or required (value 'yes')" },
                { "[security]\ndeny = nosuchcall\n", "t.ini:2: security.deny: unknown syscall 'nosuchcall' (value 'nosuchcall')" },
                { "[security]\nallow = read:EPERM\n",
                  "t.ini:2: security.allow: allow takes syscall names without :ERRNO (value 'read:EPERM')" },
                { "[security]\ndeny = read:EWHAT\n",
                  "t.ini:2: security.deny: 'EWHAT' is not an errno name (like EPERM) or number (1 to 4095) (value 'read:EWHAT')" },
                { "[security]\ndeny = read:4096\n",
                  "t.ini:2: security.deny: '4096' is not an errno name (like EPERM) or number (1 to 4095) (value 'read:4096')" },
                { "[security]\ndeny = :EPERM\n", "t.ini:2: security.deny: expected a syscall name (value ':EPERM')" },
                { "[security]\ncapabilities = CAP_FLY\n",
                  "t.ini:2: security.capabilities: unknown capability 'CAP_FLY' (or none) (value 'CAP_FLY')" },
                { "[security]\ncapabilities = CAP_\n",
                  "t.ini:2: security.capabilities: unknown capability 'CAP_' (or none) (value 'CAP_')" },
                { "[security]\ncapabilities =\n",
                  "t.ini:2: security.capabilities: expected none or capability names such as CAP_NET_BIND_SERVICE (value '')" },
                { "[security]\nsys = ro\n",
                  "t.ini:2: security.sys: expected a boolean: yes, no, true, false, on, off, 1 or 0 (value 'ro')" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                expect_error(cases[i].text, cases[i].msg);
#ifdef __x86_64__
        /* Exists on i386 only: libseccomp gives a pseudo number. */
        expect_error("[security]\ndeny = socketcall\n",
                     "t.ini:2: security.deny: syscall 'socketcall' does not exist on this architecture (value 'socketcall')");
#endif
}

/* n lines of "key = value" in section; expect the last one to fail. */
static void expect_too_many(const char *section, const char *key, const char *value, size_t n, const char *what) {
        char *text = malloc(32 + n * (strlen(key) + strlen(value) + 4)), *s = text;
        s += sprintf(s, "[%s]\n", section);
        for (size_t i = 0; i < n; i++)
                s += sprintf(s, "%s = %s\n", key, value);
        char msg[256];
        snprintf(msg, sizeof(msg), "t.ini:%zu: %s.%s: %s (value '%s')", n + 1, section, key, what, value);
        expect_error(text, msg);
        free(text);
}

static void test_too_many(void **state) {
        expect_too_many("env", "unset", "X", PROFILE_MAX_ENV_OPS + 1, "too many [env] operations (at most 1024)");
        expect_too_many("security", "deny", "ptrace", PROFILE_MAX_SECCOMP_RULES + 1,
                        "too many seccomp rules (at most 512)");
        expect_too_many("fs", "proc", "/proc", PROFILE_MAX_FS_OPS + 1, "too many [fs] operations (at most 256)");

        size_t n = PROFILE_MAX_FS_OPS + 1;
        char *text = malloc(16 + n * 16), *s = text;
        s += sprintf(s, "[fs]\n");
        for (size_t i = 0; i < n; i++)
                s += sprintf(s, "dir = /d%zu\n", i);
        char msg[128];
        snprintf(msg, sizeof(msg), "t.ini:%zu: fs.dir: too many [fs] operations (at most %d) (value '/d%zu')", n + 1,
                 PROFILE_MAX_FS_OPS, n - 1);
        expect_error(text, msg);
        free(text);

        text = malloc(32 + 70 * 6);
        s = text + sprintf(text, "[net]\ntcp-bind =");
        for (int i = 1; i <= PROFILE_MAX_PORTS + 1; i++)
                s += sprintf(s, " %d", i);
        struct profile p;
        struct sbx_error e;
        profile_init(&p);
        assert_int_equal(profile_load_string(&p, "t.ini", text, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "t.ini:2: net.tcp-bind: too many ports (at most 64)"));
        profile_free(&p);
        free(text);

        /* Data larger than the limit, given through continuation lines. */
        size_t big = PROFILE_MAX_FILE_DATA + 1;
        text = malloc(big + big / 100 * 8 + 64);
        s = text + sprintf(text, "[fs]\nfile = /f data=");
        for (size_t i = 0; i < big; i += 100)
                s += sprintf(s, "%.*s\\\n    ", (int) (big - i < 100 ? big - i : 100),
                             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        sprintf(s, "x\n");
        profile_init(&p);
        assert_int_equal(profile_load_string(&p, "t.ini", text, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "t.ini:2: fs.file: data= is longer than 65536 bytes (pass larger files with fd=)"));
        profile_free(&p);
        free(text);
}

static void test_validate(void **state) {
        expect_invalid("[sandbox]\nnamespaces = user mount\n[fs]\nproc = /proc\n",
                       "t.ini:4: fs.proc: /proc needs the pid namespace (add pid to sandbox.namespaces)");
        expect_invalid("[sandbox]\nshare = ipc\n[fs]\nmqueue = /dev/mqueue\n",
                       "t.ini:4: fs.mqueue: an mqueue mount needs the ipc namespace (add ipc to sandbox.namespaces)");
        expect_invalid("[sandbox]\nshare = uts\nhostname = x\n",
                       "sandbox.hostname: setting a host name needs the uts namespace (it would rename the host)");
        expect_invalid("[security]\nlandlock = off\n[net]\ntcp-connect = 443\n",
                       "net.tcp-bind/tcp-connect: port rules are enforced by Landlock, which security.landlock = off "
                       "turns off");
        expect_invalid("[limits]\nmemory = 64K\n", "limits.memory: less than 1M cannot start a program");
        expect_invalid("[limits]\nopen-files = 2\n", "limits.open-files: at least 3 (stdin, stdout and stderr)");
        expect_invalid("[limits]\nprocesses = 0\n", "limits.processes: at least 1 (the command itself)");
        expect_invalid("[limits]\nmemory = 16M\nstack = 32M\n", "limits.stack: larger than limits.memory");
        expect_invalid("[limits]\nstack = 1K\n", "limits.stack: less than 16K cannot start a program");
        expect_invalid("[limits]\ndata = 1K\n", "limits.data: less than 64K cannot start a program");
        expect_invalid("[sandbox]\nnew-session = no\npty = yes\n",
                       "sandbox.pty: a terminal of the job's own needs a new session (sandbox.new-session = yes)");

        /* And a few that are fine. */
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[net]\nmode = host\ntcp-bind = 8080\n[fs]\nproc = /proc\n[limits]\nmemory = unlimited\n"
                    "stack = 8M\n[security]\nseccomp = none\ndeny = ptrace\n");
        assert_int_equal(profile_validate(&p, NULL), 0);
        profile_free(&p);
}

/* ---- merging, profile_set, files ---------------------------------------- */

static void test_merge(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[sandbox]\nhostname = first\nnamespaces = all\n[fs]\nro-bind = /usr /usr\n"
                    "[env]\nset = A=1\n[limits]\nmemory = 1G\ntimeout = 10s\n[security]\ncapabilities = chown\n"
                    "deny = ptrace\n[net]\ntcp-connect = 80\n");
        load_ok(&p, "[sandbox]\nhostname = second\nnamespaces = pid\n[fs]\ntmpfs = /tmp\n[env]\nset = A=2\n"
                    "[limits]\nmemory = 2G\n[security]\ncapabilities = kill\ndeny = mount\n[net]\ntcp-connect = 443\n");
        /* Scalars and sets: the later file wins. */
        assert_string_equal(p.hostname, "second");
        assert_int_equal(p.namespaces, PROFILE_NS_USER | PROFILE_NS_MOUNT | PROFILE_NS_PID);
        assert_true(p.limits.memory_bytes == 2ULL << 30);
        assert_true(p.limits.timeout_ms == 10000);
        assert_int_equal(p.n_caps, 1);
        assert_int_equal(p.caps[0], CAP_KILL);
        /* Ordered lists: appended, in order. */
        assert_int_equal(p.n_fs, 2);
        assert_int_equal(p.fs[0].type, FS_RO_BIND);
        assert_int_equal(p.fs[1].type, FS_TMPFS);
        assert_int_equal(p.n_env, 2);
        assert_string_equal(p.env[1].value, "2");
        assert_int_equal(p.n_seccomp_rules, 2);
        assert_string_equal(p.seccomp_rules[1].name, "mount");
        assert_int_equal(p.n_connect_ports, 2);

        /* profile_set: same checks, origin in the message. */
        struct sbx_error e;
        assert_int_equal(profile_set(&p, "limits", "memory", "4G", "--memory", &e), 0);
        assert_true(p.limits.memory_bytes == 4ULL << 30);
        assert_int_equal(profile_set(&p, "fs", "bind", "\"/a b\" /c", "--set", &e), 0);
        assert_string_equal(p.fs[2].src, "/a b");
        assert_string_equal(p.fs[2].origin, "--set");
        assert_int_equal(profile_set(&p, "limits", "memory", "4Q", "--memory", &e), -EINVAL);
        assert_string_equal(e.msg, "--memory: limits.memory: expected a size such as 512M or 2G, or unlimited (value '4Q')");
        assert_int_equal(profile_set(&p, "limits", "ram", "4G", "command line", &e), -EINVAL);
        assert_string_equal(e.msg, "command line: limits.ram: unknown key (known in [limits]: timeout cpu memory data "
                                   "file-size stack core processes open-files)");
        assert_int_equal(profile_set(&p, "nope", "x", "1", "command line", &e), -EINVAL);
        assert_string_equal(e.msg, "command line: unknown section [nope] (known: sandbox fs env net limits security)");

        /* profile_set_words: literal words, no quotes, escapes or variables. */
        const char *w[] = { "/src $HOME \"q\"", "/dest\\n" };
        assert_int_equal(profile_set_words(&p, "fs", "ro-bind", w, 2, "--ro-bind", &e), 0);
        assert_string_equal(p.fs[3].src, "/src $HOME \"q\"");
        assert_string_equal(p.fs[3].dest, "/dest\\n");
        const char *d[] = { "/etc/x", "data=$x\\n" };
        assert_int_equal(profile_set_words(&p, "fs", "file", d, 2, "--file-data", &e), 0);
        assert_string_equal(p.fs[4].data, "$x\\n");
        const char *bad[] = { "relative", "/d" };
        assert_int_equal(profile_set_words(&p, "fs", "bind", bad, 2, "--bind", &e), -EINVAL);
        assert_string_equal(e.msg, "--bind: fs.bind: source 'relative' must be an absolute path (value 'relative /d')");
        assert_round_trip(&p);
        profile_free(&p);
}

static void test_files(void **state) {
        char path[128], path2[128];
        struct profile p;
        struct sbx_error e;

        snprintf(path, sizeof(path), "%s/base.ini", tmpdir);
        write_file(path, "[fs]\nro-bind = /usr /usr\n\n[limits]\ncpu = 1.5s\n");
        profile_init(&p);
        assert_int_equal(profile_load_file(&p, path, &e), -EINVAL);
        char want[256];
        snprintf(want, sizeof(want), "%s:5: limits.cpu: expected a duration such as 10s or 2m, or unlimited (value '1.5s')", path);
        assert_string_equal(e.msg, want);
        profile_free(&p);

        snprintf(path2, sizeof(path2), "%s/missing.ini", tmpdir);
        profile_init(&p);
        assert_int_equal(profile_load_file(&p, path2, &e), -ENOENT);
        snprintf(want, sizeof(want), "%s: No such file or directory", path2);
        assert_string_equal(e.msg, want);
        assert_int_equal(profile_load_file(&p, tmpdir, &e), -EISDIR);

        /* A NUL byte in a file is an error on its line, not the end of it. */
        FILE *f = fopen(path, "w");
        fwrite("[fs]\n\nproc = /p\0roc\n", 1, 20, f);
        fclose(f);
        assert_int_equal(profile_load_file(&p, path, &e), -EINVAL);
        snprintf(want, sizeof(want), "%s:3: NUL byte in the file", path);
        assert_string_equal(e.msg, want);

        write_file(path, "[fs]\nproc = /proc\n");
        assert_int_equal(profile_load_file(&p, path, &e), 0);
        assert_int_equal(p.n_fs, 1);
        snprintf(want, sizeof(want), "%s:2", path);
        assert_string_equal(p.fs[0].origin, want);
        profile_free(&p);
}

static void test_resolve(void **state) {
        char dir1[128], dir2[128], path[160], want[1024];
        char *ret = NULL;
        struct sbx_error e;

        snprintf(dir1, sizeof(dir1), "%s/one", tmpdir);
        snprintf(dir2, sizeof(dir2), "%s/two", tmpdir);
        mkdir(dir1, 0755);
        mkdir(dir2, 0755);
        snprintf(path, sizeof(path), "%s/python.ini", dir2);
        write_file(path, "[sandbox]\n");
        snprintf(path, sizeof(path), "%s/python.ini", dir1);
        mkdir(path, 0755); /* a directory of that name is skipped */

        char env[300];
        snprintf(env, sizeof(env), "%s::%s", dir1, dir2);
        setenv("SBX_PROFILE_PATH", env, 1);
        assert_int_equal(profile_resolve("python", &ret, &e), 0);
        snprintf(path, sizeof(path), "%s/python.ini", dir2);
        assert_string_equal(ret, path);
        free(ret);

        /* Paths are taken as they are. */
        assert_int_equal(profile_resolve("./x", &ret, &e), 0);
        assert_string_equal(ret, "./x");
        free(ret);
        assert_int_equal(profile_resolve("x.ini", &ret, &e), 0);
        assert_string_equal(ret, "x.ini");
        free(ret);

        assert_int_equal(profile_resolve("nosuch", &ret, &e), -ENOENT);
        snprintf(want, sizeof(want), "profile 'nosuch' not found (looked for %s/nosuch.ini, %s/nosuch.ini, %s/nosuch.ini)",
                 dir1, dir2, SBX_PROFILEDIR);
        assert_string_equal(e.msg, want);
        unsetenv("SBX_PROFILE_PATH");
        assert_int_equal(profile_resolve("nosuch", &ret, &e), -ENOENT);
        snprintf(want, sizeof(want), "profile 'nosuch' not found (looked for %s/nosuch.ini)", SBX_PROFILEDIR);
        assert_string_equal(e.msg, want);
        assert_int_equal(profile_resolve("", &ret, &e), -EINVAL);

        /* profile_find, as the supervisor uses it: its own path only. */
        snprintf(env, sizeof(env), "%s:%s:", dir2, dir1);
        assert_int_equal(profile_find("python", env, &ret, &e), 0);
        snprintf(path, sizeof(path), "%s/python.ini", dir2);
        assert_string_equal(ret, path);
        free(ret);
        assert_int_equal(profile_find("python", dir1, &ret, &e), -ENOENT);
        snprintf(want, sizeof(want), "profile 'python' not found (looked for %s/python.ini)", dir1);
        assert_string_equal(e.msg, want);
        assert_int_equal(profile_find("python", "", &ret, &e), -ENOENT);
        assert_string_equal(e.msg, "profile 'python' not found (looked for nothing: the search path is empty)");
        assert_int_equal(profile_find("../two/python", env, &ret, &e), -EINVAL);
        assert_int_equal(profile_find("..", env, &ret, &e), -EINVAL);
        assert_int_equal(profile_find("", env, &ret, &e), -EINVAL);
}

/* ---- the round trip of a profile that uses everything ------------------- */

static void test_round_trip_rich(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[sandbox]\nnamespaces = user mount pid ipc uts cgroup\nhostname = rich\nuid = 0\ngid = 100\n"
                    "die-with-parent = no\nnew-session = no\npty = no\n"
                    "[fs]\nro-bind = /usr /usr\nro-bind-try = /lib64 /lib64\nbind = \"/with space\" /w\n"
                    "dev-bind-try = /dev/dri /dev/dri\nsymlink = usr/bin /bin\ntmpfs = /tmp size=64M mode=1777 nr_inodes=4096\n"
                    "tmpfs = /run\ndir = /work mode=0700\nfile = /etc/motd data=\"line 1\\nline\\t2 \\; $$HOME \\\\ \\\"q\\\" #x\\x01\\xff\"\n"
                    "file = /etc/hosts fd=5 mode=0444\nproc = /proc\ndev = /dev\nmqueue = /dev/mqueue\nremount-ro = /usr\nchdir = /work\n"
                    "[env]\nclear = no\nset = PATH=/usr/bin:/bin \"A=  two  spaces  \" B=;semi C=#hash D=\\\\\nkeep = TERM\nunset = LD_PRELOAD\n"
                    "[net]\ntcp-bind = 8080\ntcp-connect = 443 80\n"
                    "[limits]\ntimeout = 1500ms\ncpu = 1h\nmemory = 3G\ndata = unlimited\nfile-size = 1536\nstack = 8M\ncore = 1M\n"
                    "processes = 100\nopen-files = unlimited\n"
                    "[security]\nseccomp = strict\nallow = personality\ndeny = ptrace:ENOSYS mount:1234\nlandlock = required\n"
                    "capabilities = NET_RAW CAP_SYS_CHROOT\nsys = yes\n");
        assert_int_equal(p.net, NET_HOST);
        assert_int_equal(profile_validate(&p, NULL), 0);
        assert_round_trip(&p);

        /* Long values written by profile_write() wrap within the line limit
         * and still load back equal. */
        char data[5000], path[1500];
        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = "ab ;#\\$\"\n\t\x01 \xc3\xa9  "[i % 16];
        path[0] = '/';
        for (size_t i = 1; i < sizeof(path) - 1; i++)
                path[i] = (i % 9) ? 'p' : ' ';
        path[sizeof(path) - 1] = '\0';
        char *dataword = malloc(sizeof(data) + 6);
        memcpy(dataword, "data=", 5);
        memcpy(dataword + 5, data, sizeof(data));
        dataword[5 + sizeof(data)] = '\0';
        data[sizeof(data) - 1] = '\0';
        dataword[5 + sizeof(data) - 1] = '\0';
        const char *fw[] = { "/etc/big", dataword };
        struct sbx_error e;
        assert_int_equal(profile_set_words(&p, "fs", "file", fw, 2, "--file", &e), 0);
        const char *bw[] = { path, path };
        assert_int_equal(profile_set_words(&p, "fs", "bind", bw, 2, "--bind", &e), 0);
        char *ev = NULL;
        assert_true(asprintf(&ev, "LONG=%s", path) > 0);
        const char *sw[] = { ev };
        assert_int_equal(profile_set_words(&p, "env", "set", sw, 1, "--setenv", &e), 0);
        char *text = write_string(&p);
        for (char *line = text, *nl; *line; line = nl + 1) {
                nl = strchr(line, '\n');
                assert_non_null(nl);
                assert_true(nl - line <= PROFILE_MAX_LINE);
        }
        free(text);
        assert_round_trip(&p);
        free(ev);
        free(dataword);
        profile_free(&p);
}

/* One generated key loads back as exactly the words given, whatever they
 * hold (the supervisor writes its workspace path this way). */
static void test_write_key(void **state) {
        const char *const words[] = { "/var/lib/my state;x/$HOME/#1 \"q\"\\", "/workspace" };
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        fputs("[fs]\n", f);
        assert_int_equal(profile_write_key(f, "bind", words, 2), 0);
        assert_int_equal(fclose(f), 0);
        struct profile p;
        profile_init(&p);
        load_ok(&p, text);
        assert_int_equal(p.n_fs, 1);
        assert_int_equal(p.fs[0].type, FS_BIND);
        assert_string_equal(p.fs[0].src, words[0]);
        assert_string_equal(p.fs[0].dest, "/workspace");
        profile_free(&p);
        free(text);
}

static void test_write_stable(void **state) {
        struct profile p;
        profile_init(&p);
        load_ok(&p, "[fs]\nro-bind = /usr /usr\ntmpfs = /tmp size=64M mode=1777\n[limits]\ntimeout = 30s\n"
                    "[security]\ndeny = ptrace\n");
        char *text = write_string(&p);
        assert_string_equal(text,
                            "[sandbox]\n"
                            "namespaces = user mount pid net ipc uts cgroup\n"
                            "die-with-parent = yes\n"
                            "new-session = yes\n"
                            "pty = auto\n"
                            "\n[fs]\n"
                            "ro-bind = /usr /usr\n"
                            "tmpfs = /tmp size=64M mode=1777\n"
                            "\n[env]\n"
                            "clear = yes\n"
                            "\n[net]\n"
                            "mode = none\n"
                            "\n[limits]\n"
                            "timeout = 30s\n"
                            "core = 0\n"
                            "\n[security]\n"
                            "seccomp = default\n"
                            "deny = ptrace:EPERM\n"
                            "landlock = best-effort\n"
                            "capabilities = none\n"
                            "sys = no\n");
        free(text);
        profile_free(&p);
}

/* A full disk is an error, not a silently truncated profile. */
static void test_write_error(void **state) {
        FILE *f = fopen("/dev/full", "w");
        if (!f) {
                skip();
                return;
        }
        struct profile p;
        profile_init(&p);
        assert_int_equal(profile_write(&p, f), -ENOSPC);
        fclose(f);
        profile_free(&p);
}

static void test_names(void **state) {
        assert_string_equal(fs_op_type_name(FS_REMOUNT_RO), "remount-ro");
        assert_string_equal(fs_op_type_name(FS_CHDIR), "chdir");
        assert_string_equal(fs_op_type_name((enum fs_op_type) 99), "unknown");
        assert_string_equal(net_mode_name(NET_HOST), "host");
        assert_string_equal(seccomp_mode_name(SECCOMP_STRICT), "strict");
        assert_string_equal(landlock_mode_name(LANDLOCK_BEST_EFFORT), "best-effort");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_sandbox_keys),
                cmocka_unit_test(test_fs_ops),
                cmocka_unit_test(test_env),
                cmocka_unit_test(test_net_ports),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_security),
                cmocka_unit_test(test_quotes_escapes),
                cmocka_unit_test(test_variables),
                cmocka_unit_test(test_continuation),
                cmocka_unit_test(test_lines),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_too_many),
                cmocka_unit_test(test_validate),
                cmocka_unit_test(test_merge),
                cmocka_unit_test(test_files),
                cmocka_unit_test(test_resolve),
                cmocka_unit_test(test_round_trip_rich),
                cmocka_unit_test(test_write_key),
                cmocka_unit_test(test_write_stable),
                cmocka_unit_test(test_write_error),
                cmocka_unit_test(test_names),
        };
        return cmocka_run_group_tests(tests, setup_tmpdir, teardown_tmpdir);
}
