#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A hostile registry beyond its archives (t/bundle-archive.bats) and
# beyond changed bytes (t/bundle-verify.bats): indexes that are signed
# but not valid indexes, an index too large to read, signature files that
# are not signatures, trusted comments without a serial or for another
# bundle, HTTP redirects within the registry, to file://, to another port
# or host and in a loop, and an index transfer cut short. Each is the job's result with its code
# and a message naming what was wrong; nothing of it is cached or run.

load sup-unit/bundle
bats_require_minimum_version 1.5.0

setup_file() {
        bundle_init
}

teardown_file() {
        bundle_fini
}

setup() {
        require_userns
        bundle_reset
        reg_serve
}

teardown() {
        sup_stop
        reg_stop
        other_stop
}

# other_serve: a second registry server with the same files on another
# port ($OTHER_URL), logging to $SUP_DIR/other.log.
other_serve() {
        rm -f "$SUP_DIR/other.port"
        /usr/bin/python3 "$SBX_SRCDIR/t/helpers/registry-server.py" "$REG" "$SUP_DIR/other.log" "$SUP_DIR/other.port" 3>&- &
        echo $! > "$SUP_DIR/other.pid"
        local i
        for i in $(seq 100); do
                [ -s "$SUP_DIR/other.port" ] && break
                sleep 0.05
        done
        [ -s "$SUP_DIR/other.port" ] || { echo "second registry server did not start" >&2; return 1; }
        : >> "$SUP_DIR/other.log"
        OTHER_URL="http://127.0.0.1:$(cat "$SUP_DIR/other.port")"
}

other_stop() {
        local pid
        [ -f "$SUP_DIR/other.pid" ] || return 0
        pid=$(cat "$SUP_DIR/other.pid")
        if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF registry-server.py; then
                kill "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        fi
        rm -f "$SUP_DIR/other.pid"
}

# fails_with CODE MESSAGE-PART [REF]: a run of the bundle ends with CODE,
# never started, audited; the cache holds nothing.
fails_with() {
        bundle_refused "$@"
        # (trees that cache gc --all removed may still be on their way out)
        [ -z "$(ls -A "$SUP_DIR/state/cache" | grep -v '^\.trash-')" ]
}

# index TEXT: hello's index.json is TEXT, signed properly (serial 1).
index() {
        printf '%s\n' "$1" > "$REG/hello/index.json"
        sign hello 1
}

@test "signed indexes that are not valid indexes are E_BUNDLE_INVALID, naming the member" {
        sha=$(publish hello 1.0.0 1)
        size=$(stat -c %s "$REG/hello/hello-1.0.0.tar.gz")
        entry='{"version":"1.0.0","sha256":"'$sha'","size":'$size',"file":"hello-1.0.0.tar.gz"}'
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        # the baseline: the same index, valid, runs
        index '{"format":1,"name":"hello","versions":['"$entry"']}'
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
        ctl cache gc --all >/dev/null
        index 'this is not JSON'
        fails_with E_BUNDLE_INVALID "hello/index.json: malformed JSON at byte"
        index '{"format":1,"name":"hello","versions":['"$entry"'],"mirror":"http://elsewhere"}'
        fails_with E_BUNDLE_INVALID "mirror"
        index '{"format":2,"name":"hello","versions":['"$entry"']}'
        fails_with E_BUNDLE_INVALID "format 2 is not one this daemon reads"
        index '{"format":1,"name":"hello","versions":[{"version":"1.0.0","sha256":"'$sha'","size":'$size',"file":"../../../etc/passwd"}]}'
        fails_with E_BUNDLE_INVALID "versions[0].file: must be a plain file name"
        index '{"format":1,"name":"hello","versions":[{"version":"1.0.0","sha256":"'"${sha^^}"'","size":'$size',"file":"hello-1.0.0.tar.gz"}]}'
        fails_with E_BUNDLE_INVALID "versions[0].sha256: expected 64 lowercase hex digits"
        index '{"format":1,"name":"hello","versions":[{"version":"1.0.0","sha256":"'$sha'","size":-5,"file":"hello-1.0.0.tar.gz"}]}'
        fails_with E_BUNDLE_INVALID "versions[0].size: must be positive"
        index '{"format":1,"name":"hello","versions":[{"version":"one","sha256":"'$sha'","size":'$size',"file":"hello-1.0.0.tar.gz"}]}'
        fails_with E_BUNDLE_INVALID "versions[0].version: not a semantic version"
        index '{"format":1,"name":"hello","versions":['"$entry,$entry"']}'
        fails_with E_BUNDLE_INVALID "versions[1]: version 1.0.0 is listed twice"
        index '{"format":1,"name":"hello","name":"hello","versions":['"$entry"']}'
        fails_with E_BUNDLE_INVALID "malformed JSON"
        index '{"format":1,"name":"other","versions":['"$entry"']}'
        fails_with E_BUNDLE_INVALID "hello/index.json is the index of bundle 'other'"
        # none of these raised the serial floor or left an index behind:
        # the valid one runs again
        index '{"format":1,"name":"hello","versions":['"$entry"']}'
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
}

@test "an index larger than 1 MiB is refused as it arrives" {
        publish hello 1.0.0 1 >/dev/null
        # valid JSON, padded past the bound
        { printf '{"format":1,"name":"hello","versions":[]'; head -c 1100000 /dev/zero | tr '\0' ' '; printf '}\n'; } \
                > "$REG/hello/index.json"
        sign hello 2
        bundle_config
        sup_start
        fails_with E_BUNDLE_INVALID "hello/index.json: larger than 1048576 bytes"
}

@test "signature files that are not minisign signatures are E_BUNDLE_SIGNATURE, naming the line" {
        publish hello 1.0.0 1 >/dev/null
        sig="$REG/hello/index.json.minisig"
        cp "$sig" "$SUP_DIR/good.minisig"
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        printf 'hello\n' > "$sig"
        fails_with E_BUNDLE_SIGNATURE "index.json.minisig:1: expected \"untrusted comment: ...\""
        { head -1 "$SUP_DIR/good.minisig"; echo 'not base64 at all!'; } > "$sig"
        fails_with E_BUNDLE_SIGNATURE "index.json.minisig:2: expected the base64 of a 74-byte signature"
        # the signature line alone, no trusted comment or global signature
        head -2 "$SUP_DIR/good.minisig" > "$sig"
        fails_with E_BUNDLE_SIGNATURE "index.json.minisig:3: expected \"trusted comment: ...\""
        head -3 "$SUP_DIR/good.minisig" > "$sig"
        fails_with E_BUNDLE_SIGNATURE "index.json.minisig:4: expected the base64 of the 64-byte global signature"
        printf 'untrusted comment: x\n\0\n' > "$sig"
        fails_with E_BUNDLE_SIGNATURE "NUL byte in a signature file"
        : > "$sig"
        fails_with E_BUNDLE_SIGNATURE "index.json.minisig"
        cp "$SUP_DIR/good.minisig" "$sig"
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
}

@test "a trusted comment without a serial, with a bad one, or for another bundle is E_BUNDLE_INVALID" {
        publish hello 1.0.0 1 >/dev/null
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        resign() { minisign -S -s "$KEYS/key.sec" -m "$REG/hello/index.json" -t "$1" >/dev/null; }
        resign 'name=hello'
        fails_with E_BUNDLE_INVALID "trusted comment: no serial=N (sign with minisign -t 'serial=N name=hello')"
        resign 'serial=0 name=hello'
        fails_with E_BUNDLE_INVALID "trusted comment: serial must be a number from 1 to 2^53"
        resign 'serial=99999999999999999999 name=hello'
        fails_with E_BUNDLE_INVALID "trusted comment: serial must be a number from 1 to 2^53"
        resign 'serial=3 serial=4 name=hello'
        fails_with E_BUNDLE_INVALID "trusted comment: serial= given twice"
        # an index signed for another bundle, served as hello's
        resign 'serial=5 name=other'
        fails_with E_BUNDLE_INVALID "trusted comment: the signature is for bundle 'other', not 'hello'"
        # none of them raised the serial floor: serial 1 still runs
        [ ! -e "$SUP_DIR/state/registry/main/hello.serial" ] || [ "$(cat "$SUP_DIR/state/registry/main/hello.serial")" -le 1 ]
        resign 'serial=1 name=hello'
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
}

@test "redirects: followed within HTTP, refused to file:// and after five" {
        publish hello 1.0.0 1 >/dev/null
        mkdir -p "$REG/moved/hello"
        cp "$REG/hello/index.json" "$REG/moved/hello/index.json"
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        reg_misbehave 'hello/index.json' redirect /moved/hello/index.json
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
        [ "$(reg_requests 'moved/hello/index.json$')" -eq 1 ]
        ctl cache gc --all >/dev/null
        # a file on the daemon's host is never read for a registry on HTTP
        reg_behave
        reg_misbehave 'hello/index.json' redirect "file://$REG/hello/index.json"
        fails_with E_REGISTRY_UNAVAILABLE "redirects to file://$REG/hello/index.json, not followed"
        reg_behave
        reg_misbehave 'hello/hello-1.0.0.tar.gz' redirect "file://$REG/hello/hello-1.0.0.tar.gz"
        fails_with E_REGISTRY_UNAVAILABLE "redirects to file://$REG/hello/hello-1.0.0.tar.gz, not followed"
        # a loop ends after five redirects
        reg_behave
        reg_misbehave 'hello/index.json' redirect /hello/index.json
        : > "$SUP_DIR/http.log"
        fails_with E_REGISTRY_UNAVAILABLE "registry unreachable: GET $REG_URL/hello/index.json"
        # the first request and five redirects
        [ "$(reg_requests 'GET /hello/index.json$')" -eq 6 ]
}

@test "redirects to another port or host are not followed: the job's error names where they pointed" {
        publish hello 1.0.0 1 >/dev/null
        other_serve
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        # the same files on another port of the same address
        reg_misbehave 'hello/index.json' redirect "$OTHER_URL/hello/index.json"
        fails_with E_REGISTRY_UNAVAILABLE \
                "GET $REG_URL/hello/index.json: HTTP 302 redirects to $OTHER_URL/hello/index.json, not followed: another origin"
        # the same port by another name
        reg_behave
        local port=${REG_URL##*:}
        reg_misbehave 'hello/index.json' redirect "http://localhost:$port/hello/index.json"
        fails_with E_REGISTRY_UNAVAILABLE "redirects to http://localhost:$port/hello/index.json, not followed: another origin"
        # an archive too
        reg_behave
        reg_misbehave 'hello/hello-1.0.0.tar.gz' redirect "$OTHER_URL/hello/hello-1.0.0.tar.gz"
        fails_with E_REGISTRY_UNAVAILABLE "redirects to $OTHER_URL/hello/hello-1.0.0.tar.gz, not followed: another origin"
        # nothing was asked of the other origin
        [ ! -s "$SUP_DIR/other.log" ]
        [ "$(reg_requests 'GET /hello/index.json$')" -eq 3 ]
}

@test "an index transfer cut short is the registry's failure, not an index" {
        publish hello 1.0.0 1 >/dev/null
        bundle_config
        sup_start
        reg_misbehave 'hello/index.json' truncate
        fails_with E_REGISTRY_UNAVAILABLE "hello/index.json: the transfer ended early"
        reg_behave
        reg_misbehave 'hello/index.json.minisig' 500
        fails_with E_REGISTRY_UNAVAILABLE "index.json.minisig: HTTP 500"
        reg_behave
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
}
