/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-mcp's tools. run_code, run_bundle and session_exec follow their
 * job on a connection of their own until its end event and answer then;
 * the others are one request to the daemon each. A failure the model can
 * act on (its program failed, a limit, a path that is not there, what
 * the tenant's policy refuses) is a tool result with isError; a call that
 * does not fit the tool's input schema is a JSON-RPC error. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcp.h"

/* What the model is shown of each stream; the rest is in get_artifact. */
#define SHOWN_OUTPUT (64 * 1024)
/* get_artifact and session_get_file hand back at most this much. */
#define MAX_FILE (8u << 20)

/* ---- the tool definitions ---- */

static const char run_result_schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"job\":{\"type\":\"string\"},"
        "\"state\":{\"type\":\"string\",\"description\":\"succeeded, failed, timed_out, killed, oom, rejected or error\"},"
        "\"exit_code\":{\"type\":[\"integer\",\"null\"]},"
        "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
        "\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"
        "\"error\":{\"type\":[\"string\",\"null\"]},"
        "\"value\":{\"description\":\"the JSON value the program wrote to $SBX_RESULT, or null\"},"
        "\"artifacts\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},\"sha256\":{\"type\":\"string\"}},"
        "\"required\":[\"path\",\"size\",\"sha256\"]}}},"
        "\"required\":[\"job\",\"state\",\"exit_code\",\"stdout\",\"stderr\",\"artifacts\"]}";

static const char files_schema[] =
        "{\"type\":\"array\",\"description\":\"files placed in the workspace first\",\"items\":{\"type\":\"object\","
        "\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},\"content_b64\":{\"type\":\"string\"}},"
        "\"required\":[\"path\"],\"additionalProperties\":false},\"maxItems\":256}";

static const char network_schema[] = "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":32,"
                                     "\"description\":\"hosts (or host:port) the program may reach; without it, no network\"}";

static const char artifacts_schema[] = "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":64,"
                                       "\"description\":\"globs of workspace files to keep, e.g. out/* (read them with get_artifact)\"}";

static json_t *load(const char *s) {
        return json_loads(s, 0, NULL);
}

static json_t *tool(const char *name, const char *title, const char *desc, json_t *in, json_t *out) {
        json_t *t = json_pack("{s:s, s:s, s:s, s:o}", "name", name, "title", title, "description", desc, "inputSchema", in);
        if (t && out)
                json_object_set_new(t, "outputSchema", out);
        return t;
}

json_t *mcp_tools_list(void) {
        json_t *run_in = json_pack(
                "{s:s, s:{s:{s:s, s:[s,s,s,s]}, s:{s:s}, s:o, s:{s:s, s:i, s:i}, s:o, s:o, s:{s:s}}, s:[s,s], s:b}", "type",
                "object", "properties", "language", "type", "string", "enum", "python", "node", "bash", "sh", "code", "type",
                "string", "files", load(files_schema), "timeout_s", "type", "integer", "minimum", 1, "maximum", 86400, "network",
                load(network_schema), "artifacts", load(artifacts_schema), "stdin", "type", "string", "required", "language",
                "code", "additionalProperties", 0);
        json_t *bundle_in = json_pack("{s:s, s:{s:{s:s}, s:{s:s, s:{s:s}}, s:{s:s, s:i, s:i}, s:o}, s:[s], s:b}", "type",
                                      "object", "properties", "bundle", "type", "string", "args", "type", "array", "items",
                                      "type", "string", "timeout_s", "type", "integer", "minimum", 1, "maximum", 86400,
                                      "artifacts", load(artifacts_schema), "required", "bundle", "additionalProperties", 0);
        json_t *art_in = json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s, s:[s,s]}}, s:[s], s:b}", "type", "object", "properties",
                                   "job", "type", "string", "path", "type", "string", "stream", "type", "string", "enum",
                                   "stdout", "stderr", "required", "job", "additionalProperties", 0);
        json_t *file_out = load("{\"type\":\"object\",\"properties\":{\"job\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
                                "\"size\":{\"type\":\"integer\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
                                "\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"size\",\"encoding\",\"content\"]}");
        json_t *screate_in = json_pack("{s:s, s:{s:{s:s, s:i, s:i}, s:o, s:o}, s:b}", "type", "object", "properties", "ttl_s",
                                       "type", "integer", "minimum", 1, "maximum", 86400, "network", load(network_schema),
                                       "files", load(files_schema), "additionalProperties", 0);
        json_t *screate_out = load("{\"type\":\"object\",\"properties\":{\"session\":{\"type\":\"string\"},"
                                   "\"state\":{\"type\":\"string\"}},\"required\":[\"session\",\"state\"]}");
        json_t *sexec_in = json_pack("{s:s, s:{s:{s:s}, s:{s:s, s:[s,s,s,s]}, s:{s:s}, s:{s:s, s:{s:s}}, s:{s:s, s:i, s:i}, "
                                     "s:{s:s}}, s:[s], s:b}",
                                     "type", "object", "properties", "session", "type", "string", "language", "type", "string",
                                     "enum", "python", "node", "bash", "sh", "code", "type", "string", "command", "type", "array",
                                     "items", "type", "string", "timeout_s", "type", "integer", "minimum", 1, "maximum", 86400,
                                     "stdin", "type", "string", "required", "session", "additionalProperties", 0);
        json_t *sput_in = json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}, s:[s,s], s:b}", "type", "object",
                                    "properties", "session", "type", "string", "path", "type", "string", "content", "type",
                                    "string", "content_b64", "type", "string", "required", "session", "path",
                                    "additionalProperties", 0);
        json_t *sget_in = json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s], s:b}", "type", "object", "properties", "session", "type",
                                    "string", "path", "type", "string", "required", "session", "path", "additionalProperties", 0);
        json_t *sclose_in = json_pack("{s:s, s:{s:{s:s}}, s:[s], s:b}", "type", "object", "properties", "session", "type",
                                      "string", "required", "session", "additionalProperties", 0);
        return json_pack(
                "[o,o,o,o,o,o,o,o]",
                tool("run_code", "Run code in a sandbox",
                     "Run a program in a fresh sandbox: Python, Node.js, bash or sh code, with optional files placed in its "
                     "working directory first. Returns its stdout, stderr, exit code, the JSON value it wrote to $SBX_RESULT "
                     "and the files it made that match 'artifacts'. No network unless 'network' names hosts the policy allows.",
                     run_in, load(run_result_schema)),
                tool("run_bundle", "Run a bundle", "Run a signed bundle from the tenant's registry (NAME, NAME@VERSION).",
                     bundle_in, load(run_result_schema)),
                tool("get_artifact", "Read a job's file",
                     "Read an artifact of a finished job (a 'path' its result listed) or its whole stdout or stderr ('stream').",
                     art_in, json_incref(file_out)),
                tool("session_create", "Start a session",
                     "Start a sandbox that lives across calls (until session_close, its TTL or idleness): its files stay.",
                     screate_in, screate_out),
                tool("session_exec", "Run in a session",
                     "Run code (language and code) or a command (an argument list) in a session's sandbox, in its files.", sexec_in,
                     load(run_result_schema)),
                tool("session_put_file", "Write a file in a session",
                     "Write a file of the session's workspace (its directory must exist), from 'content' or 'content_b64'.",
                     sput_in, NULL),
                tool("session_get_file", "Read a file of a session", "Read a file of the session's workspace.", sget_in,
                     file_out),
                tool("session_close", "End a session", "End a session: its processes and files are gone.", sclose_in, NULL));
}

/* ---- helpers ---- */

static json_t *text(const char *s) {
        return json_pack("[{s:s, s:s}]", "type", "text", "text", s);
}

/* A tool result: structured (taken) with its JSON as the text. */
static void answer(json_t *id, json_t *structured, bool is_error, bool modern) {
        char *s = json_dumps(structured, JSON_COMPACT | JSON_ENCODE_ANY);
        json_t *r = json_pack("{s:o, s:o, s:b}", "content", text(s ? s : "{}"), "structuredContent", structured, "isError",
                              is_error);
        free(s);
        mcp_result(id, r, modern);
}

/* A failure the model can act on, as a result. */
static void tool_error(json_t *id, bool modern, const char *msg) {
        mcp_result(id, json_pack("{s:o, s:b}", "content", text(msg), "isError", 1), modern);
}

static void daemon_error(json_t *id, bool modern, json_t *m) {
        json_t *e = json_object_get(m, "error");
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s: %s", json_string_value(json_object_get(e, "code")) ?: "E_INTERNAL",
                 json_string_value(json_object_get(e, "message")) ?: "the daemon refused the request");
        tool_error(id, modern, msg);
}

static json_t *req(const char *op) {
        return json_pack("{s:i, s:s}", "v", 1, "op", op);
}

static const char *interpreter(const char *lang) {
        if (!strcmp(lang, "python"))
                return "python3";
        if (!strcmp(lang, "node"))
                return "node";
        if (!strcmp(lang, "bash"))
                return "bash";
        if (!strcmp(lang, "sh"))
                return "sh";
        return NULL;
}

/* argv for language and code: the interpreter with its "run this" flag. */
static json_t *code_argv(const char *lang, const char *code) {
        const char *prog = interpreter(lang);
        if (!prog)
                return NULL;
        return json_pack("[s,s,s]", prog, !strcmp(lang, "node") ? "-e" : "-c", code);
}

/* The caller's files as the daemon's (path, data or data_b64). */
static int add_files(json_t *r, json_t *files, const char **why) {
        if (!files)
                return 0;
        if (!json_is_array(files)) {
                *why = "files must be an array";
                return -1;
        }
        json_t *out = json_array(), *f;
        size_t i;
        json_array_foreach(files, i, f) {
                const char *path = json_string_value(json_object_get(f, "path"));
                json_t *c = json_object_get(f, "content"), *b = json_object_get(f, "content_b64");
                if (!path || (c && !json_is_string(c)) || (b && !json_is_string(b)) || (c && b)) {
                        json_decref(out);
                        *why = "each file needs a path and one string content or content_b64";
                        return -1;
                }
                json_array_append_new(out, json_pack("{s:s, s:O}", "path", path, b ? "data_b64" : "data",
                                                     b ? b : c ? c : json_string("")));
        }
        json_object_set_new(r, "files", out);
        return 0;
}

static void add_network(json_t *r, json_t *hosts) {
        if (json_is_array(hosts) && json_array_size(hosts))
                json_object_set_new(r, "network", json_pack("{s:s, s:O}", "mode", "restricted", "allow", hosts));
}

static void add_timeout(json_t *r, json_t *args) {
        json_t *t = json_object_get(args, "timeout_s");
        if (json_is_integer(t) && json_integer_value(t) > 0)
                json_object_set_new(r, "timeout_ms", json_integer(json_integer_value(t) * 1000));
}

/* ---- calls that follow a job ---- */

static void start_followed(json_t *id, json_t *params, bool modern, json_t *r) {
        struct call *c = mcp_io->call_new(mcp_io);
        if (!c) {
                json_decref(r);
                tool_error(id, modern, "too many tool calls in progress at once; retry when one has ended");
                return;
        }
        c->id = json_incref(id);
        c->modern = modern;
        json_t *tok = json_object_get(json_object_get(params, "_meta"), "progressToken");
        c->progress = tok ? json_incref(tok) : NULL;
        json_object_set_new(r, "follow", json_true());
        int e = dconn_open(&c->conn);
        if (e < 0 || (e = dconn_send(&c->conn, r)) < 0) {
                char msg[512];
                snprintf(msg, sizeof(msg), "cannot reach sbx-supervisord (%s): %s", mcp_io->where, strerror(-e));
                if (e < 0 && c->conn.fd < 0)
                        json_decref(r);
                mcp_error(id, JSONRPC_INTERNAL, "%s", msg);
                mcp_call_free(c);
                return;
        }
        if (mcp_io->sync)
                while (!mcp_call_feed(c))
                        ;
}

static void keep_output(struct call *c, int s, json_t *ev) {
        const char *d = json_string_value(json_object_get(ev, "data"));
        size_t n = d ? strlen(d) : 0;
        if (!d) /* bytes that are not UTF-8: counted, not shown */
                n = json_string_length(json_object_get(ev, "data_b64")) / 4 * 3;
        c->out_seen[s] += n;
        if (!d || c->out_len[s] >= SHOWN_OUTPUT)
                return;
        size_t take = n < SHOWN_OUTPUT - c->out_len[s] ? n : SHOWN_OUTPUT - c->out_len[s];
        char *p = realloc(c->out[s], c->out_len[s] + take + 1);
        if (!p)
                return;
        memcpy(p + c->out_len[s], d, take);
        c->out_len[s] += take;
        p[c->out_len[s]] = '\0';
        c->out[s] = p;
}

static void progress(struct call *c, const char *msg) {
        if (!c->progress)
                return;
        mcp_notify("notifications/progress",
                   json_pack("{s:O, s:i, s:s}", "progressToken", c->progress, "progress", ++c->progress_n, "message", msg));
}

static void finish(struct call *c, json_t *rec) {
        const char *state = json_string_value(json_object_get(rec, "state")) ?: "error";
        json_t *err = json_object_get(rec, "error");
        char ebuf[600] = "";
        if (json_is_object(err))
                snprintf(ebuf, sizeof(ebuf), "%s: %s", json_string_value(json_object_get(err, "code")) ?: "",
                         json_string_value(json_object_get(err, "message")) ?: "");
        json_t *s = json_pack("{s:s, s:s, s:O, s:s, s:s, s:b, s:b, s:o, s:O, s:O}", "job", c->job, "state", state, "exit_code",
                              json_object_get(rec, "exit_code") ?: json_null(), "stdout", c->out[0] ? c->out[0] : "", "stderr",
                              c->out[1] ? c->out[1] : "", "stdout_truncated", c->out_seen[0] > c->out_len[0], "stderr_truncated",
                              c->out_seen[1] > c->out_len[1], "error", ebuf[0] ? json_string(ebuf) : json_null(), "value",
                              json_object_get(rec, "value") ?: json_null(), "artifacts",
                              json_object_get(rec, "artifacts") ?: json_array());
        answer(c->id, s, strcmp(state, "succeeded") != 0, c->modern);
}

int mcp_call_event(struct call *c, json_t *m) {
        if (json_object_get(m, "ok")) {
                if (!json_is_true(json_object_get(m, "ok"))) {
                        if (!c->cancelled)
                                daemon_error(c->id, c->modern, m);
                        mcp_call_free(c);
                        return 1;
                }
                snprintf(c->job, sizeof(c->job), "%s", json_string_value(json_object_get(m, "job")) ?: "");
                if (c->cancelled) /* cancelled before the job was known */
                        mcp_call_cancel(c);
                return 0;
        }
        const char *ev = json_string_value(json_object_get(m, "event"));
        if (!ev)
                return 0;
        if (!strcmp(ev, "started"))
                progress(c, "started");
        else if (!strcmp(ev, "output")) {
                const char *st = json_string_value(json_object_get(m, "stream"));
                keep_output(c, st && !strcmp(st, "stderr"), m);
                progress(c, "output");
        } else if (!strcmp(ev, "end") || !strcmp(ev, "error")) {
                if (!c->cancelled) {
                        if (!strcmp(ev, "end"))
                                finish(c, json_object_get(m, "result"));
                        else
                                daemon_error(c->id, c->modern, m);
                }
                mcp_call_free(c);
                return 1;
        }
        return 0;
}

void mcp_call_lost(struct call *c) {
        if (!c->cancelled)
                mcp_error(c->id, JSONRPC_INTERNAL, "sbx-supervisord closed the connection before job %s ended",
                          c->job[0] ? c->job : "(not yet accepted)");
        mcp_call_free(c);
}

void mcp_call_cancel(struct call *c) {
        c->cancelled = true;
        if (!c->job[0])
                return; /* once the daemon names the job */
        char why[256];
        json_t *r = req("cancel");
        json_object_set_new(r, "job", json_string(c->job));
        json_t *m = dconn_call(r, why, sizeof(why));
        if (!m)
                fprintf(stderr, "sbx-mcp: cancelling %s: %s\n", c->job, why);
        json_decref(m);
}

/* ---- the tools ---- */

static void run_code(json_t *id, json_t *params, json_t *args, bool modern) {
        const char *lang = json_string_value(json_object_get(args, "language"));
        const char *code = json_string_value(json_object_get(args, "code"));
        json_t *argv = lang && code ? code_argv(lang, code) : NULL;
        const char *why = NULL;
        if (!argv) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "run_code needs 'language' (python, node, bash or sh) and 'code'");
                return;
        }
        json_t *r = req("run");
        json_object_set_new(r, "command", argv);
        if (add_files(r, json_object_get(args, "files"), &why) < 0) {
                json_decref(r);
                mcp_error(id, JSONRPC_INVALID_PARAMS, "%s", why);
                return;
        }
        add_network(r, json_object_get(args, "network"));
        add_timeout(r, args);
        json_t *a = json_object_get(args, "artifacts"), *in = json_object_get(args, "stdin");
        if (json_is_array(a) && json_array_size(a))
                json_object_set(r, "artifacts", a);
        if (json_is_string(in))
                json_object_set(r, "stdin", in);
        start_followed(id, params, modern, r);
}

static void run_bundle(json_t *id, json_t *params, json_t *args, bool modern) {
        const char *b = json_string_value(json_object_get(args, "bundle"));
        if (!b) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "run_bundle needs 'bundle'");
                return;
        }
        json_t *r = req("run");
        json_object_set_new(r, "bundle", json_string(b));
        json_t *av = json_object_get(args, "args"), *a = json_object_get(args, "artifacts");
        if (json_is_array(av))
                json_object_set(r, "args", av);
        if (json_is_array(a) && json_array_size(a))
                json_object_set(r, "artifacts", a);
        add_timeout(r, args);
        start_followed(id, params, modern, r);
}

static void session_exec(json_t *id, json_t *params, json_t *args, bool modern) {
        const char *s = json_string_value(json_object_get(args, "session"));
        const char *lang = json_string_value(json_object_get(args, "language"));
        const char *code = json_string_value(json_object_get(args, "code"));
        json_t *cmd = json_object_get(args, "command");
        json_t *argv = json_is_array(cmd) && json_array_size(cmd) ? json_incref(cmd) : lang && code ? code_argv(lang, code) : NULL;
        if (!s || !argv || (json_is_array(cmd) && (lang || code))) {
                json_decref(argv);
                mcp_error(id, JSONRPC_INVALID_PARAMS, "session_exec needs 'session' and either 'command' or 'language' and 'code'");
                return;
        }
        json_t *r = req("session.exec");
        json_object_set_new(r, "session", json_string(s));
        json_object_set_new(r, "command", argv);
        json_t *in = json_object_get(args, "stdin");
        if (json_is_string(in))
                json_object_set(r, "stdin", in);
        add_timeout(r, args);
        start_followed(id, params, modern, r);
}

/* One request; its ok reply, or NULL with the error answered. */
static json_t *one(json_t *id, bool modern, json_t *r) {
        char why[512];
        json_t *m = dconn_call(r, why, sizeof(why));
        if (!m) {
                mcp_error(id, JSONRPC_INTERNAL, "%s", why);
                return NULL;
        }
        if (!json_is_true(json_object_get(m, "ok"))) {
                daemon_error(id, modern, m);
                json_decref(m);
                return NULL;
        }
        return m;
}

/* content of n bytes as the file result's encoding and content */
static json_t *file_result(const char *job, const char *path, const unsigned char *data, size_t n, json_t *b64_from) {
        json_t *s = json_pack("{s:s, s:I}", "path", path, "size", (json_int_t) n);
        if (job)
                json_object_set_new(s, "job", json_string(job));
        json_t *t = data ? json_stringn((const char *) data, n) : NULL; /* NULL when not UTF-8 */
        if (t) {
                json_object_set_new(s, "encoding", json_string("utf-8"));
                json_object_set_new(s, "content", t);
        } else {
                json_object_set_new(s, "encoding", json_string("base64"));
                json_object_set(s, "content", b64_from);
        }
        return s;
}

static unsigned char *b64_decode(const char *b64, size_t *ret_n);

static void get_artifact(json_t *id, json_t *args, bool modern) {
        const char *job = json_string_value(json_object_get(args, "job"));
        const char *path = json_string_value(json_object_get(args, "path"));
        const char *stream = json_string_value(json_object_get(args, "stream"));
        if (!job || !path == !stream) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "get_artifact needs 'job' and one of 'path' and 'stream'");
                return;
        }
        struct dconn c;
        char msg[512];
        json_t *r = req("download");
        json_object_set_new(r, "job", json_string(job));
        json_object_set_new(r, path ? "artifact" : "stream", json_string(path ? path : stream));
        int e = dconn_open(&c);
        if (e < 0 || (e = dconn_send(&c, r)) < 0) {
                if (c.fd < 0)
                        json_decref(r);
                mcp_error(id, JSONRPC_INTERNAL, "cannot reach sbx-supervisord (%s): %s", mcp_io->where, strerror(-e));
                dconn_close(&c);
                return;
        }
        unsigned char *buf = NULL;
        size_t len = 0;
        json_t *m;
        bool ok = false, done = false;
        while (!done) {
                while (!(m = dconn_next(&c)))
                        if ((e = dconn_fill(&c)) < 0)
                                break;
                if (!m) {
                        mcp_error(id, JSONRPC_INTERNAL, "sbx-supervisord closed the connection during the download");
                        break;
                }
                const char *ev = json_string_value(json_object_get(m, "event"));
                if (json_object_get(m, "ok") && !json_is_true(json_object_get(m, "ok"))) {
                        daemon_error(id, modern, m);
                        done = true;
                } else if (json_is_true(json_object_get(m, "ok"))) {
                        if (json_integer_value(json_object_get(m, "size")) > (json_int_t) MAX_FILE) {
                                snprintf(msg, sizeof(msg), "%s is %lld bytes, more than sbx-mcp hands over (%u); read it with sbxctl download",
                                         path ? path : stream, (long long) json_integer_value(json_object_get(m, "size")), MAX_FILE);
                                tool_error(id, modern, msg);
                                done = true;
                        }
                } else if (ev && !strcmp(ev, "data")) {
                        size_t n;
                        unsigned char *d = b64_decode(json_string_value(json_object_get(m, "data_b64")), &n);
                        unsigned char *nb = d ? realloc(buf, len + n + 1) : NULL;
                        if (nb) {
                                memcpy(nb + len, d, n);
                                len += n;
                                buf = nb;
                        }
                        free(d);
                        if (!nb) {
                                mcp_error(id, JSONRPC_INTERNAL, "out of memory");
                                done = true;
                        }
                } else if (ev && !strcmp(ev, "download_end")) {
                        ok = done = true;
                } else if (ev && !strcmp(ev, "error")) {
                        daemon_error(id, modern, m);
                        done = true;
                }
                json_decref(m);
        }
        dconn_close(&c);
        if (ok) {
                json_t *b64 = NULL;
                json_t *t = json_stringn((const char *) (buf ? buf : (unsigned char *) ""), len);
                if (!t) { /* not UTF-8: handed over in base64 */
                        size_t bl = sodium_base64_encoded_len(len, sodium_base64_VARIANT_ORIGINAL);
                        char *bs = malloc(bl);
                        if (bs)
                                b64 = json_string(sodium_bin2base64(bs, bl, buf, len, sodium_base64_VARIANT_ORIGINAL));
                        free(bs);
                }
                json_decref(t);
                answer(id, file_result(job, path ? path : stream, buf ? buf : (const unsigned char *) "", len, b64), false, modern);
                json_decref(b64);
        }
        free(buf);
}

static unsigned char *b64_decode(const char *b64, size_t *ret_n) {
        size_t n = b64 ? strlen(b64) : 0;
        unsigned char *out = b64 ? malloc(n / 4 * 3 + 3) : NULL;
        if (out && sodium_base642bin(out, n / 4 * 3 + 3, b64, n, NULL, ret_n, NULL, sodium_base64_VARIANT_ORIGINAL) < 0) {
                free(out);
                return NULL;
        }
        return out;
}

static void session_create(json_t *id, json_t *args, bool modern) {
        json_t *r = req("session.create");
        const char *why = NULL;
        json_t *ttl = json_object_get(args, "ttl_s");
        if (json_is_integer(ttl))
                json_object_set(r, "ttl_s", ttl);
        add_network(r, json_object_get(args, "network"));
        if (add_files(r, json_object_get(args, "files"), &why) < 0) {
                json_decref(r);
                mcp_error(id, JSONRPC_INVALID_PARAMS, "%s", why);
                return;
        }
        json_t *m = one(id, modern, r);
        if (!m)
                return;
        char sid[64];
        snprintf(sid, sizeof(sid), "%s", json_string_value(json_object_get(m, "session")) ?: "");
        json_decref(m);
        /* ready once its agent answers: a few hundred ms */
        for (int i = 0; i < 600; i++) {
                json_t *q = req("session.show");
                json_object_set_new(q, "session", json_string(sid));
                if (!(m = one(id, modern, q)))
                        return;
                const char *st = json_string_value(json_object_get(m, "state"));
                if (st && strcmp(st, "starting") != 0) {
                        json_t *s = json_pack("{s:s, s:s}", "session", sid, "state", st);
                        json_decref(m);
                        answer(id, s, strcmp(json_string_value(json_object_get(s, "state")), "ready") != 0, modern);
                        return;
                }
                json_decref(m);
                struct timespec ts = { 0, 50 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        tool_error(id, modern, "the session did not become ready within 30 s");
}

static void session_put(json_t *id, json_t *args, bool modern) {
        json_t *c = json_object_get(args, "content"), *b = json_object_get(args, "content_b64");
        if (!json_is_string(json_object_get(args, "session")) || !json_is_string(json_object_get(args, "path")) || !c == !b) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "session_put_file needs 'session', 'path' and one of 'content' and 'content_b64'");
                return;
        }
        json_t *r = req("session.put");
        json_object_set(r, "session", json_object_get(args, "session"));
        json_object_set(r, "path", json_object_get(args, "path"));
        json_object_set(r, b ? "data_b64" : "data", b ? b : c);
        json_t *m = one(id, modern, r);
        if (m)
                answer(id, json_pack("{s:O, s:O}", "path", json_object_get(args, "path"), "size", json_object_get(m, "size")), false,
                       modern);
        json_decref(m);
}

static void session_get(json_t *id, json_t *args, bool modern) {
        const char *path = json_string_value(json_object_get(args, "path"));
        if (!json_is_string(json_object_get(args, "session")) || !path) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "session_get_file needs 'session' and 'path'");
                return;
        }
        json_t *r = req("session.get");
        json_object_set(r, "session", json_object_get(args, "session"));
        json_object_set_new(r, "path", json_string(path));
        json_t *m = one(id, modern, r);
        if (!m)
                return;
        if (!json_is_true(json_object_get(m, "eof"))) {
                tool_error(id, modern, "the file is larger than one piece (1 MiB); read it in parts with sbxctl session get");
        } else {
                json_t *d = json_object_get(m, "data");
                json_t *s = d ? file_result(NULL, path, (const unsigned char *) json_string_value(d), json_string_length(d), NULL)
                              : file_result(NULL, path, NULL, 0, json_object_get(m, "data_b64"));
                if (!d)
                        json_object_set(s, "size", json_object_get(m, "size"));
                answer(id, s, false, modern);
        }
        json_decref(m);
}

static void session_close(json_t *id, json_t *args, bool modern) {
        if (!json_is_string(json_object_get(args, "session"))) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "session_close needs 'session'");
                return;
        }
        json_t *r = req("session.close");
        json_object_set(r, "session", json_object_get(args, "session"));
        json_t *m = one(id, modern, r);
        if (m)
                answer(id, json_pack("{s:O, s:O}", "session", json_object_get(args, "session"), "state", json_object_get(m, "state")),
                       false, modern);
        json_decref(m);
}

void mcp_tools_call(json_t *id, json_t *params, bool modern) {
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        if (!name) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "tools/call needs 'name'");
                return;
        }
        if (args && !json_is_object(args)) {
                mcp_error(id, JSONRPC_INVALID_PARAMS, "'arguments' must be an object");
                return;
        }
        json_t *empty = args ? NULL : json_object();
        if (!args)
                args = empty;
        if (!strcmp(name, "run_code"))
                run_code(id, params, args, modern);
        else if (!strcmp(name, "run_bundle"))
                run_bundle(id, params, args, modern);
        else if (!strcmp(name, "session_exec"))
                session_exec(id, params, args, modern);
        else if (!strcmp(name, "get_artifact"))
                get_artifact(id, args, modern);
        else if (!strcmp(name, "session_create"))
                session_create(id, args, modern);
        else if (!strcmp(name, "session_put_file"))
                session_put(id, args, modern);
        else if (!strcmp(name, "session_get_file"))
                session_get(id, args, modern);
        else if (!strcmp(name, "session_close"))
                session_close(id, args, modern);
        else
                mcp_error(id, JSONRPC_INVALID_PARAMS, "unknown tool '%s'", name);
        json_decref(empty);
}
