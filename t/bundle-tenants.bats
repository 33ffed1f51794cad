#!/usr/bin/env bats
# Bundles between tenants (sbx-supervisord(8) BUNDLES, SECURITY): a
# download is never shared across registries, so one tenant's slow
# registry cannot hold up another's job or name itself in that job's
# error; a tenant's cache gc removes only what no other tenant uses.

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
        rm -f "$SUP_DIR/http2.port" "$SUP_DIR/http2.log" "$SUP_DIR/http2.control"
        : > "$SUP_DIR/http2.log"
        : > "$SUP_DIR/http2.control"
}

teardown() {
        sup_stop
        reg_stop
        reg2_stop
}

# A second registry server over the same directory (the same archives,
# indexes and signatures), with a log and a control file of its own.
reg2_serve() {
        python3 "$SBX_SRCDIR/t/helpers/registry-server.py" "$REG" "$SUP_DIR/http2.log" "$SUP_DIR/http2.port" \
                "$SUP_DIR/http2.control" 3>&- &
        echo $! > "$SUP_DIR/http2.pid"
        local i
        for i in $(seq 100); do
                [ -s "$SUP_DIR/http2.port" ] && break
                sleep 0.05
        done
        [ -s "$SUP_DIR/http2.port" ] || { echo "second registry server did not start" >&2; return 1; }
        export REG2_URL="http://127.0.0.1:$(cat "$SUP_DIR/http2.port")"
}

reg2_stop() {
        local pid
        [ -f "$SUP_DIR/http2.pid" ] || return 0
        pid=$(cat "$SUP_DIR/http2.pid")
        if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF registry-server.py; then
                kill "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        fi
        rm -f "$SUP_DIR/http2.pid"
}

# Tenant admin (root) uses registry main; tenant other (nobody) uses
# registry REGISTRY (second: the second server; main: the same as admin).
two_tenants() {
        BUNDLE_DAEMON="socket_mode = 0666" bundle_config
        cat >> "$SUP_DIR/sup.conf" <<EOC

[tenant.other]
uids = nobody
profiles = shell
registry = $1

[registry.second]
url = ${REG2_URL:-$REG_URL}
keys = $KEYS/key.pub
${REG2_LINES:-}
EOC
}

@test "one tenant's stalled registry does not hold up another's job with the same archive, nor name itself to it" {
        publish hello 1.0.0 1 >/dev/null
        reg2_serve
        echo "*.tar.gz hold $SUP_DIR/go" > "$SUP_DIR/http2.control"
        rm -f "$SUP_DIR/go"
        REG2_LINES="stall_timeout = 4s" two_tenants second
        sup_start
        # other's job waits for its registry, which holds the archive
        slow=$(ctl_nobody submit --bundle hello -- other)
        for i in $(seq 600); do
                [ "$(grep -c 'tar.gz' "$SUP_DIR/http2.log")" -ge 1 ] && break
                sleep 0.05
        done
        [ "$(grep -c 'tar.gz' "$SUP_DIR/http2.log")" -eq 1 ]
        [ "$(ctl_nobody --json status "$slow" | json_get job.state)" = fetching ]
        # admin's job, the same archive from its own registry, runs at once
        start=$(date +%s%N)
        job=$(ctl submit --bundle hello -- admin)
        rec=$(job_record "$job")
        took_ms=$((($(date +%s%N) - start) / 1000000))
        echo "$rec" >&2
        echo "admin's job took $took_ms ms" >&2
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(ctl logs "$job")" = "bundle hello 1.0.0 args: admin" ]
        [ "$(reg_requests 'tar.gz')" -eq 1 ]
        # nothing admin is told names the other tenant's registry
        [[ "$rec" != *"$REG2_URL"* ]]
        [[ "$rec" != *second* ]]
        [ "$took_ms" -lt 4000 ]
        # the other tenant's job fails on its own registry's stall, then
        # runs from the verified tree once it asks again
        ctl_nobody --json wait "$slow" >/dev/null || true
        rec=$(ctl_nobody --json result "$slow")
        [ "$(json_get result.error.code <<<"$rec")" = E_REGISTRY_UNAVAILABLE ]
        [[ "$(json_get result.error.message <<<"$rec")" == *"$REG2_URL"* ]]
        touch "$SUP_DIR/go"
        [ "$(ctl_nobody run --bundle hello -- again)" = "bundle hello 1.0.0 args: again" ]
        cache_whole
}

@test "a cached tree is root's alone on the host: a local user cannot read it by its path, a job still runs it" {
        dir=$(mk_bundle hello 1.0.0 "" 'echo "bundle $SBX_BUNDLE"; cat /bundle/secret.txt')
        echo secret > "$dir/secret.txt"
        sha=$(publish_dir "$dir" 1)
        bundle_config
        sup_start
        [ "$(ctl run --bundle hello)" = "$(printf 'bundle hello\nsecret')" ]
        tree="$SUP_DIR/state/cache/$sha/tree"
        [ -f "$tree/manifest.ini" ]
        [ "$(stat -c '%U %a' "$SUP_DIR/state/cache")" = "root 700" ]
        [ "$(stat -c '%U %a' "$SUP_DIR/state/cache/$sha")" = "root 700" ]
        # a local user who knows the digest
        run setpriv --reuid=nobody --regid=nogroup --clear-groups -- cat "$tree/manifest.ini"
        [ "$status" -ne 0 ]
        [[ "$output" == *"Permission denied"* ]]
        run setpriv --reuid=nobody --regid=nogroup --clear-groups -- ls "$SUP_DIR/state/cache"
        [ "$status" -ne 0 ]
        # the job reads its tree, read-only, and nothing of the cache's path
        job=$(ctl submit --bundle hello)
        rec=$(job_record "$job")
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(ctl logs "$job")" = "$(printf 'bundle hello\nsecret')" ]
        # a cache made by an older daemon (0711) is closed at start
        sup_stop
        chmod 0711 "$SUP_DIR/state/cache" "$SUP_DIR/state/cache/$sha"
        sup_start
        [ "$(stat -c '%a' "$SUP_DIR/state/cache")" = 700 ]
        [ "$(stat -c '%a' "$SUP_DIR/state/cache/$sha")" = 700 ]
        run setpriv --reuid=nobody --regid=nogroup --clear-groups -- cat "$tree/manifest.ini"
        [ "$status" -ne 0 ]
        [ "$(ctl run --bundle hello)" = "$(printf 'bundle hello\nsecret')" ]
}

@test "cache gc --all removes only the unused trees no other tenant used, across restarts" {
        sha_hello=$(publish hello 1.0.0 1)
        sha_solo=$(publish solo 1.0.0 1)
        # both tenants take bundles from the same registry
        two_tenants main
        sup_start
        [ "$(ctl run --bundle hello -- admin)" = "bundle hello 1.0.0 args: admin" ]
        [ "$(ctl_nobody run --bundle hello -- other)" = "bundle hello 1.0.0 args: other" ]
        [ "$(ctl_nobody run --bundle solo)" = "bundle solo 1.0.0 args: " ]
        # who used each tree outlives the daemon
        sup_stop
        sup_start
        out=$(ctl_nobody --json cache gc --all)
        echo "$out" >&2
        [ "$(json_get removed.0.sha256 <<<"$out")" = "$sha_solo" ]
        [ "$(grep -o '"sha256"' <<<"$out" | wc -l)" -eq 1 ]
        [ ! -d "$SUP_DIR/state/cache/$sha_solo" ]
        # admin still uses hello: it stays, and runs from the cache
        [ -d "$SUP_DIR/state/cache/$sha_hello/tree" ]
        before=$(reg_requests 'tar.gz')
        [ "$(ctl run --bundle hello -- again)" = "bundle hello 1.0.0 args: again" ]
        [ "$(reg_requests 'tar.gz')" -eq "$before" ]
        # the other tenant let go of it: admin's gc --all removes it
        out=$(ctl --json cache gc --all)
        [ "$(json_get removed.0.sha256 <<<"$out")" = "$sha_hello" ]
        [ ! -d "$SUP_DIR/state/cache/$sha_hello" ]
}
