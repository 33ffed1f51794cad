#!/usr/bin/env bats
# Verifying what a registry sends (sbx-supervisord(8) BUNDLES): an archive
# whose digest or size is not the signed index's, a transfer cut short, an
# index signed by no trusted key or changed after signing, an index older
# than one already seen, a registry that answers 500, refuses connections
# or stalls. Each is the job's result with its code, audited; nothing of it
# is cached; with offline = use-cached an unreachable registry lets the
# newest cached version run, and the record says it is stale.

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
}

# Nothing of a refused bundle is kept.
cache_empty() {
        [ -z "$(ls -A "$SUP_DIR/state/cache")" ]
}

@test "an archive that is not the one the index signs: E_BUNDLE_INTEGRITY, nothing cached" {
        sha=$(publish hello 1.0.0 1)
        f="$REG/hello/hello-1.0.0.tar.gz"
        # same size, one byte changed
        printf 'X' | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null
        bundle_config
        sup_start
        bundle_refused E_BUNDLE_INTEGRITY "hello-1.0.0.tar.gz: sha256 "
        bundle_refused E_BUNDLE_INTEGRITY ", the signed index gives $sha"
        cache_empty
        # more bytes than the index says
        cp "$SUP_DIR/hello-1.0.0.tar.gz" "$f"
        echo more >> "$f"
        bundle_refused E_BUNDLE_INTEGRITY "more bytes than the"
        cache_empty
        # the right bytes run
        cp "$SUP_DIR/hello-1.0.0.tar.gz" "$f"
        [ "$(ctl run --bundle hello)" = "bundle hello 1.0.0 args: " ]
}

@test "a download cut short: E_BUNDLE_INTEGRITY, nothing cached" {
        publish hello 1.0.0 1 >/dev/null
        reg_misbehave '*.tar.gz' truncate
        bundle_config
        sup_start
        bundle_refused E_BUNDLE_INTEGRITY "the download was cut short"
        cache_empty
}

@test "an index signed by a key the registry is not trusted with: E_BUNDLE_SIGNATURE" {
        publish hello 1.0.0 1 >/dev/null
        sign hello 1 other
        # minisign writes the id without leading zeros; the daemon always
        # writes its 16 digits
        id=$(head -1 "$KEYS/other.pub" | awk '{ printf "%016s", $NF }' | tr " " 0)
        bundle_config
        sup_start
        bundle_refused E_BUNDLE_SIGNATURE "signed with key $id, which is not a trusted key"
        [ "$(reg_requests 'tar.gz')" -eq 0 ]
        cache_empty
}

@test "an index changed after it was signed, or its trusted comment: E_BUNDLE_SIGNATURE" {
        publish hello 1.0.0 1 >/dev/null
        publish hello 1.1.0 2 >/dev/null
        cp "$REG/hello/index.json" "$SUP_DIR/index.good"
        # point 1.1.0 at 1.0.0's archive: a valid index, not the signed one
        sed -i 's/"file": "hello-1.1.0.tar.gz"/"file": "hello-1.0.0.tar.gz"/' "$REG/hello/index.json"
        ! cmp -s "$REG/hello/index.json" "$SUP_DIR/index.good" || false
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        bundle_refused E_BUNDLE_SIGNATURE "hello/index.json: the signature by key"
        # the serial in the trusted comment is signed too
        cp "$SUP_DIR/index.good" "$REG/hello/index.json"
        sed -i 's/^trusted comment: serial=2 /trusted comment: serial=9 /' "$REG/hello/index.json.minisig"
        bundle_refused E_BUNDLE_SIGNATURE "the trusted comment's signature"
        # unsigned
        rm "$REG/hello/index.json.minisig"
        bundle_refused E_BUNDLE_SIGNATURE "hello/index.json is not signed"
        [ "$(reg_requests 'tar.gz')" -eq 0 ]
        cache_empty
}

@test "an index older than one seen before is a rollback, refused unless a digest is pinned, across restarts" {
        sha1=$(publish hello 1.0.0 1)
        cp "$REG/hello/index.json" "$SUP_DIR/index.1"
        cp "$REG/hello/index.json.minisig" "$SUP_DIR/index.1.minisig"
        publish hello 2.0.0 2 >/dev/null
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        [ "$(ctl run --bundle hello)" = "bundle hello 2.0.0 args: " ]
        [ "$(cat "$SUP_DIR/state/registry/main/hello.serial")" = 2 ]
        # the registry (or someone between) serves the old, validly signed index
        cp "$SUP_DIR/index.1" "$REG/hello/index.json"
        cp "$SUP_DIR/index.1.minisig" "$REG/hello/index.json.minisig"
        bundle_refused E_BUNDLE_ROLLBACK "served the index of hello with serial 1, older than serial 2 already seen"
        bundle_refused E_BUNDLE_ROLLBACK "serial 1, older than serial 2" hello@1.0.0
        # a caller who pins the digest may run from it
        [ "$(ctl run --bundle "hello@sha256:$sha1")" = "bundle hello 1.0.0 args: " ]
        # the highest serial seen outlives the daemon
        sup_stop
        sup_start
        bundle_refused E_BUNDLE_ROLLBACK "older than serial 2"
        grep -q '"event":"bundle_fetch","what":"index","registry":"main","bundle":"hello","decision":"verified","serial":1' "$SUP_DIR/audit.log"
}

@test "a registry that answers 500: E_REGISTRY_UNAVAILABLE with the cause" {
        publish hello 1.0.0 1 >/dev/null
        reg_misbehave '*' 500
        bundle_config
        sup_start
        bundle_refused E_REGISTRY_UNAVAILABLE "registry unreachable: GET $REG_URL/hello/index.json: HTTP 500"
        cache_empty
}

@test "a registry that refuses connections: the job fails, or with offline = use-cached the newest cached version runs, stale" {
        publish hello 1.0.0 1 >/dev/null
        publish hello 1.1.0 2 >/dev/null
        bundle_config
        sup_start
        # cache both versions while the registry is there
        [ "$(ctl run --bundle hello@1.0.0)" = "bundle hello 1.0.0 args: " ]
        [ "$(ctl run --bundle hello)" = "bundle hello 1.1.0 args: " ]
        sup_stop
        reg_stop
        # a port nobody listens on
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        REG_URL_OVERRIDE="http://127.0.0.1:$port" bundle_config
        sup_start
        bundle_refused E_REGISTRY_UNAVAILABLE "registry unreachable: GET http://127.0.0.1:$port/hello/index.json"
        bundle_refused E_REGISTRY_UNAVAILABLE "onnect"
        sup_stop
        REG_URL_OVERRIDE="http://127.0.0.1:$port" BUNDLE_REGISTRY="offline = use-cached" bundle_config
        sup_start
        run ctl run --bundle hello -- s
        [ "$status" -eq 0 ]
        [ "$output" = "bundle hello 1.1.0 args: s" ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        rec=$(ctl --json result "$job")
        [ "$(json_get result.bundle.source <<<"$rec")" = cache ]
        [ "$(json_get result.bundle.stale <<<"$rec")" = true ]
        [ "$(json_get result.bundle.serial <<<"$rec")" = null ]
        [[ "$(json_get result.bundle.stale_reason <<<"$rec")" == *"registry unreachable: GET http://127.0.0.1:$port/hello/index.json"* ]]
        grep -q "job $job (trace [0-9a-f]*): runs hello 1.1.0 from the cache, the registry could not be asked" "$SUP_DIR/daemon.log"
        # a pinned version runs if it is cached, and is stale too
        [ "$(ctl run --bundle hello@1.0.0)" = "bundle hello 1.0.0 args: " ]
        # what is not cached cannot run
        bundle_refused E_REGISTRY_UNAVAILABLE "no cached version of hello to run instead" hello@2.0.0
        bundle_refused E_REGISTRY_UNAVAILABLE "no cached version of other to run instead" other
}

@test "a registry that stalls: the transfer times out (stall_timeout), E_REGISTRY_UNAVAILABLE" {
        publish hello 1.0.0 1 >/dev/null
        reg_misbehave '*.tar.gz' stall 60
        BUNDLE_REGISTRY="stall_timeout = 1s" bundle_config
        sup_start
        job=$(ctl submit --bundle hello)
        [ "$(ctl --json status "$job" | json_get job.state)" = fetching ]
        start=$(date +%s)
        rec=$(job_record "$job")
        [ $(($(date +%s) - start)) -lt 30 ]
        [ "$(json_get result.error.code <<<"$rec")" = E_REGISTRY_UNAVAILABLE ]
        [[ "$(json_get result.error.message <<<"$rec")" == *"timed out"* ]]
        cache_empty
}

@test "an index that lists an archive the registry does not have: E_REGISTRY_UNAVAILABLE" {
        publish hello 1.0.0 1 >/dev/null
        rm "$REG/hello/hello-1.0.0.tar.gz"
        bundle_config
        sup_start
        bundle_refused E_REGISTRY_UNAVAILABLE "HTTP 404"
}

@test "a job fetching its bundle can be cancelled; the download goes on for the cache" {
        publish hello 1.0.0 1 >/dev/null
        reg_misbehave '*.tar.gz' hold "$SUP_DIR/go"
        rm -f "$SUP_DIR/go"
        bundle_config
        sup_start
        job=$(ctl submit --bundle hello)
        # cancelled while its archive is on the way (a job cancelled while
        # the index is fetched never asks for the archive)
        for i in $(seq 600); do
                [ "$(reg_requests 'tar.gz')" -ge 1 ] && break
                sleep 0.05
        done
        [ "$(reg_requests 'tar.gz')" -eq 1 ]
        [ "$(ctl --json status "$job" | json_get job.state)" = fetching ]
        ctl cancel "$job" >/dev/null
        rec=$(job_record "$job")
        [ "$(json_get result.state <<<"$rec")" = killed ]
        [ "$(json_get result.error.code <<<"$rec")" = E_CANCELLED ]
        touch "$SUP_DIR/go"
        # The download goes on: its bundle appears in the cache (after a
        # staging directory of its own, renamed into place when whole).
        for i in $(seq 600); do
                [ -n "$(ls "$SUP_DIR/state/cache")" ] && ! ls -d "$SUP_DIR/state/cache"/.staging-* >/dev/null 2>&1 && break
                sleep 0.05
        done
        if [ -z "$(ls "$SUP_DIR/state/cache")" ]; then
                ls -la "$SUP_DIR/state/cache" >&2
                tail -20 "$SUP_DIR/daemon.log" >&2
                false
        fi
        cache_whole
        [ "$(ctl run --bundle hello)" = "bundle hello 1.0.0 args: " ]
        [ "$(reg_requests 'tar.gz')" -eq 1 ]
}
