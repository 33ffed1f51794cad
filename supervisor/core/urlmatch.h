/* SPDX-License-Identifier: Apache-2.0 */
/* URLs the daemon is asked to reach for someone else: a tenant's callback
 * receivers and the places a registry redirects to. They are parsed by
 * libcurl's URL API, the parser that later makes the connection, so what
 * is checked here is what curl connects to; a string prefix is not (for
 * "http://a:1" it passes "http://a:1@b:2/" and "http://a:1.evil.example/").
 * Nothing here does I/O. */
#pragma once

#include <stdbool.h>

struct urlmatch {
        char scheme[8]; /* "http" or "https" */
        char *host;     /* lower case, without a final '.'; an IPv6 literal
                         * in its shortest form between brackets */
        unsigned port;  /* as written, else the scheme's */
        char *path;     /* as curl gives it: from '/', dot segments removed */
        bool query;     /* it has a '?' part */
};

/* Parse an http:// or https:// URL. Refused (-EINVAL, *ret_why saying
 * why): what curl cannot parse, other schemes, userinfo ("user:pass@"),
 * a fragment, an IPv6 zone, a host that is not ASCII, and a path with a
 * backslash or with '/', '\' or '.' percent-encoded (a receiver that
 * decodes them could climb out of an allowed path). -ENOMEM. */
int urlmatch_parse(const char *url, struct urlmatch *ret, const char **ret_why);
void urlmatch_done(struct urlmatch *u);

/* Same scheme, host and port. */
bool urlmatch_same_origin(const struct urlmatch *a, const struct urlmatch *b);

/* Does rule allow u: the same origin, and u's path is rule's path or
 * below it on a segment boundary ("/a" allows "/a" and "/a/b", not "/ab";
 * "/a/" allows "/a/" and "/a/b"). The rule's query, if any, is ignored:
 * urlmatch_rule_check() refuses rules with one. */
bool urlmatch_allows(const struct urlmatch *rule, const struct urlmatch *u);

/* A parsed URL that may serve as a rule: no query. NULL, or why not. */
const char *urlmatch_rule_check(const struct urlmatch *rule);
