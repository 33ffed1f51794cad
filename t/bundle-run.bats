#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Running bundles (sbx-manifest(5), sbx-supervisord.conf(5) [registry.NAME]):
# from a signed registry over HTTP or file://, read-only at /bundle, the
# record saying what ran and where it came from; the cache answering
# without asking the registry; versions side by side; one download for
# many jobs; eviction that never takes a tree in use; bundle show and the
# cache commands; contrib/try-bundle.sh, the README's sample, end to end.

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

@test "a bundle runs from a signed registry over HTTP; its record says what ran and where from" {
        sha=$(publish hello 1.0.0 1 "" 'echo "bundle $SBX_BUNDLE $SBX_BUNDLE_VERSION args: $*"; touch /bundle/x 2>/dev/null && echo wrote || echo read-only; pwd')
        bundle_config
        sup_start
        run ctl run --bundle hello -- a "b c"
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "bundle hello 1.0.0 args: a b c" ]
        [ "${lines[1]}" = "read-only" ]
        [ "${lines[2]}" = "/workspace" ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        rec=$(ctl --json result "$job")
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(json_get result.bundle.name <<<"$rec")" = hello ]
        [ "$(json_get result.bundle.ref <<<"$rec")" = hello ]
        [ "$(json_get result.bundle.version <<<"$rec")" = 1.0.0 ]
        [ "$(json_get result.bundle.sha256 <<<"$rec")" = "$sha" ]
        [ "$(json_get result.bundle.registry <<<"$rec")" = main ]
        [ "$(json_get result.bundle.source <<<"$rec")" = registry ]
        [ "$(json_get result.bundle.stale <<<"$rec")" = false ]
        [ "$(json_get result.bundle.serial <<<"$rec")" = 1 ]
        [ "$(json_get result.bundle.time_us.download <<<"$rec")" -gt 0 ]
        [ "$(json_get result.bundle.time_us.resolve <<<"$rec")" -gt 0 ]
        [ "$(json_get result.command.0 <<<"$rec")" = /bundle/run.sh ]
        [ "$(json_get result.command.2 <<<"$rec")" = "b c" ]
        [ "$(json_get result.profile <<<"$rec")" = shell ]
        # the tree: root-owned and read-only on the host too
        tree="$SUP_DIR/state/cache/$sha/tree"
        [ "$(stat -c '%U %a' "$tree")" = "root 555" ]
        [ "$(stat -c '%U %a' "$tree/run.sh")" = "root 555" ]
        [ "$(stat -c '%U %a' "$tree/manifest.ini")" = "root 444" ]
        # the audit log has the grant
        grep -q '"event":"bundle","job":"'"$job"'".*"decision":"granted"' "$SUP_DIR/audit.log"
        grep -q '"event":"bundle_fetch","what":"archive".*"decision":"verified"' "$SUP_DIR/audit.log"
}

@test "a cache hit asks nothing of the registry" {
        publish hello 1.0.0 1 >/dev/null
        bundle_config
        sup_start
        ctl run --bundle hello >/dev/null
        [ "$(reg_requests 'hello/index.json$')" -eq 1 ]
        [ "$(reg_requests 'tar.gz')" -eq 1 ]
        before=$(wc -l < "$SUP_DIR/http.log")
        for i in 1 2 3; do
                run ctl run --bundle hello -- "$i"
                [ "$status" -eq 0 ]
                [ "$output" = "bundle hello 1.0.0 args: $i" ]
        done
        ctl run --bundle hello@1.0.0 >/dev/null
        # not one request more
        [ "$(wc -l < "$SUP_DIR/http.log")" -eq "$before" ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        rec=$(ctl --json result "$job")
        [ "$(json_get result.bundle.source <<<"$rec")" = cache ]
        [ "$(json_get result.bundle.time_us.download <<<"$rec")" -eq 0 ]
}

@test "after index_ttl the index is asked for again, the cached archive is not" {
        publish hello 1.0.0 1 >/dev/null
        BUNDLE_REGISTRY="index_ttl = 1s" bundle_config
        sup_start
        ctl run --bundle hello >/dev/null
        sleep 1.2
        ctl run --bundle hello >/dev/null
        [ "$(reg_requests 'hello/index.json$')" -eq 2 ]
        [ "$(reg_requests 'hello/index.json.minisig$')" -eq 2 ]
        [ "$(reg_requests 'tar.gz')" -eq 1 ]
}

@test "a new version published while the old one runs: the old job keeps its tree, a new job gets the new one" {
        # long enough for the new version's job to run meanwhile, under
        # ASan on a loaded machine too
        publish hello 1.0.0 1 "" 'echo "start $SBX_BUNDLE_VERSION"; sleep 15; echo "end $SBX_BUNDLE_VERSION $(cat /bundle/run.sh | wc -c)"' >/dev/null
        BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
        old=$(ctl submit --bundle hello)
        for i in $(seq 600); do
                [ "$(ctl --json status "$old" | json_get job.state)" = running ] && break
                sleep 0.05
        done
        [ "$(ctl --json status "$old" | json_get job.state)" = running ]
        publish hello 2.0.0 2 "" 'echo "new $SBX_BUNDLE_VERSION"' >/dev/null
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
        [ "$output" = "new 2.0.0" ]
        # both trees are there while the old job runs
        run -0 ctl cache ls
        [[ "$output" == *"hello                1.0.0 "*"1    "* ]]
        [[ "$output" == *"hello                2.0.0 "* ]]
        ctl wait "$old" >/dev/null
        run -0 ctl logs "$old"
        [ "${lines[0]}" = "start 1.0.0" ]
        [[ "${lines[1]}" == "end 1.0.0 "* ]]
        [ "$(ctl --json result "$old" | json_get result.bundle.version)" = 1.0.0 ]
        # the old version still runs when asked for by name (once it has
        # started, its 15 s are not waited for)
        old=$(ctl submit --bundle hello@1.0.0)
        wait_until 60 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' logs $old | grep -qx 'start 1.0.0'"
        run -0 ctl cancel "$old"
}

@test "pinned versions and digests run what they name; an unknown version is E_NOT_FOUND" {
        sha1=$(publish hello 1.0.0 1)
        publish hello 1.1.0 2 >/dev/null
        bundle_config
        sup_start
        run -0 ctl run --bundle hello
        [ "$output" = "bundle hello 1.1.0 args: " ]
        run -0 ctl run --bundle "hello@sha256:$sha1" -- x
        [ "$output" = "bundle hello 1.0.0 args: x" ]
        run -0 ctl run --bundle "hello@1.0.0"
        [ "$output" = "bundle hello 1.0.0 args: " ]
        run ctl run --bundle "hello@3.0.0"
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_NOT_FOUND: registry main has no hello@3.0.0"* ]]
        run ctl run --bundle "nosuch"
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_NOT_FOUND: registry main has no bundle nosuch"* ]]
        # a malformed reference never reaches the daemon's queue
        run ctl run --bundle "hello@1.0"
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_BAD_REQUEST: field 'bundle': 'hello@1.0': '1.0' is not a semantic version"* ]]
}

@test "50 jobs asking for one missing bundle cause one download, and wait visibly" {
        publish hello 1.0.0 1 >/dev/null
        reg_misbehave '*.tar.gz' hold "$SUP_DIR/go"
        rm -f "$SUP_DIR/go"
        bundle_config
        sup_start
        jobs=()
        for i in $(seq 50); do
                jobs+=("$(ctl submit --bundle hello -- "$i")")
        done
        # still downloading: they wait in state fetching
        [ "$(ctl --json status "${jobs[49]}" | json_get job.state)" = fetching ]
        [ "$(ctl --json status "${jobs[49]}" | json_get job.bundle)" = hello ]
        [ "$(ctl --json ls --state fetching | grep -o '"job":' | wc -l)" -eq 50 ]
        # the archive is being asked for, once
        for i in $(seq 100); do
                [ "$(reg_requests 'tar.gz')" -ge 1 ] && break
                sleep 0.05
        done
        [ "$(reg_requests 'tar.gz')" -eq 1 ]
        touch "$SUP_DIR/go"
        for j in "${jobs[@]}"; do
                ctl wait "$j" >/dev/null
        done
        for i in 1 25 50; do
                [ "$(ctl logs "${jobs[$((i - 1))]}")" = "bundle hello 1.0.0 args: $i" ]
        done
        [ "$(reg_requests 'tar.gz')" -eq 1 ]
        [ "$(reg_requests 'hello/index.json$')" -eq 1 ]
        [ "$(ctl --json ls --state succeeded | grep -o '"job":' | wc -l)" -eq 50 ]
}

# A bundle with a file of N KiB of random bytes (which do not compress).
big_bundle() {
        local dir
        dir=$(mk_bundle "$1" 1.0.0 "" "${2:-echo $SBX_BUNDLE}")
        head -c "$(($3 * 1024))" /dev/urandom > "$dir/data"
        echo "$dir"
}

@test "a small budget removes unused trees, least recently used first, never one in use" {
        sha_a=$(publish_dir "$(big_bundle a 'echo a; sleep 15' 700)" 1)
        sha_b=$(publish_dir "$(big_bundle b 'echo b' 700)" 1)
        sha_c=$(publish_dir "$(big_bundle c 'echo c' 700)" 1)
        BUNDLE_DAEMON="cache_size = 1M" bundle_config
        sup_start
        ja=$(ctl submit --bundle a)
        for i in $(seq 600); do
                [ "$(ctl --json status "$ja" | json_get job.state)" = running ] && break
                sleep 0.05
        done
        # b runs while a does: 1.4M, over the budget; a is in use, b goes
        [ "$(ctl run --bundle b)" = b ]
        [ -d "$SUP_DIR/state/cache/$sha_a/tree" ]
        for i in $(seq 50); do
                [ -d "$SUP_DIR/state/cache/$sha_b" ] || break
                sleep 0.1
        done
        [ ! -d "$SUP_DIR/state/cache/$sha_b" ]
        [ "$(ctl --json status "$ja" | json_get job.state)" = running ]
        ctl wait "$ja" >/dev/null
        [ "$(ctl logs "$ja")" = a ]
        # a, unused now and the least recently used, makes room for c
        [ "$(ctl run --bundle c)" = c ]
        for i in $(seq 50); do
                [ -d "$SUP_DIR/state/cache/$sha_a" ] || break
                sleep 0.1
        done
        [ ! -d "$SUP_DIR/state/cache/$sha_a" ]
        [ -d "$SUP_DIR/state/cache/$sha_c/tree" ]
        grep -q "cache: b 1.0.0 ($sha_b, .* bytes) removed" "$SUP_DIR/daemon.log"
        cache_whole
}

@test "cache ls lists the cached bundles; cache gc --all removes the unused ones" {
        sha=$(publish hello 1.0.0 1)
        bundle_config
        sup_start
        ctl run --bundle hello >/dev/null
        run ctl cache ls
        [ "$status" -eq 0 ]
        [[ "${lines[1]}" == "hello                1.0.0        ${sha:0:12} "* ]]
        [ "$(ctl --json cache ls | json_get bundles.0.sha256)" = "$sha" ]
        [ "$(ctl --json cache ls | json_get bundles.0.jobs)" = 0 ]
        # within the budget and young: plain gc keeps it
        [ "$(ctl --json cache gc | json_get freed)" = 0 ]
        [ -d "$SUP_DIR/state/cache/$sha" ]
        run ctl cache gc --all
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "removed hello 1.0.0 ("*" bytes)" ]]
        [ "$(ctl --json cache ls | json_get bytes)" = 0 ]
        for i in $(seq 50); do
                [ -d "$SUP_DIR/state/cache/$sha" ] || break
                sleep 0.1
        done
        [ ! -d "$SUP_DIR/state/cache/$sha" ]
        # and comes back on the next run
        [ "$(ctl run --bundle hello)" = "bundle hello 1.0.0 args: " ]
}

@test "bundle show: the manifest, the profile a job would get, and the caller's verdict" {
        publish hello 1.0.0 1 "[capabilities]
env = GREETING
[limits]
memory = 128M" >/dev/null
        bundle_config
        sup_start
        run ctl bundle show hello
        [ "$status" -eq 0 ]
        [[ "$output" == *"bundle:        hello 1.0.0 (registry main)"* ]]
        [[ "$output" == *"index serial:  1"* ]]
        [[ "$output" == *"command:       /bundle/run.sh"* ]]
        [[ "$output" == *"env:           GREETING"* ]]
        [[ "$output" == *"verdict:       allowed by your policy"* ]]
        # the tree comes to the job as a mount on a descriptor, never by its path
        [[ "$output" == *"ro-bind = fd:7 /bundle"* ]]
        [[ "$output" == *"memory = 134217728"* ]]
        [ "$(ctl --json bundle show hello | json_get manifest.limits.memory)" = 134217728 ]
        run ctl bundle show nosuch
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_NOT_FOUND"* ]]
}

@test "a file:// registry works like an HTTP one" {
        publish hello 1.0.0 1 >/dev/null
        REG_URL_OVERRIDE="file://$REG/" bundle_config
        sup_start
        run ctl run --bundle hello -- f
        [ "$status" -eq 0 ]
        [ "$output" = "bundle hello 1.0.0 args: f" ]
        [ "$(reg_requests .)" -eq 0 ]
}

@test "sbx-bundle: pack is reproducible; index keeps versions immutable and suggests the next serial" {
        dir=$(mk_bundle hello 1.0.0)
        "$SBX_STAGE/bin/sbx-bundle" pack "$dir" -o "$SUP_DIR/one.tar.gz"
        touch -d '2001-01-01' "$dir/run.sh"
        chmod 0700 "$dir/run.sh"
        "$SBX_STAGE/bin/sbx-bundle" pack "$dir" -o "$SUP_DIR/two.tar.gz"
        cmp "$SUP_DIR/one.tar.gz" "$SUP_DIR/two.tar.gz"
        # entries sorted, owned by root, modes normalised, one time
        run -0 tar tzvf "$SUP_DIR/one.tar.gz"
        [[ "${lines[0]}" == "-rw-r--r-- 0/0 "*" 1970-01-01 00:00 manifest.ini" ]]
        [[ "${lines[1]}" == "-rwxr-xr-x 0/0 "*" 1970-01-01 00:00 run.sh" ]]
        run "$SBX_STAGE/bin/sbx-bundle" index "$REG" "$SUP_DIR/one.tar.gz"
        [ "$status" -eq 0 ]
        [[ "$output" == *"minisign -S -s KEY -m $REG/hello/index.json -t 'serial=1 name=hello'"* ]]
        sign hello 1
        run -0 "$SBX_STAGE/bin/sbx-bundle" index "$REG"
        [[ "$output" == *"was listed already"* ]]
        [[ "$output" == *"serial=2 name=hello"* ]]
        # the same version with other bytes is refused
        echo changed >> "$dir/run.sh"
        "$SBX_STAGE/bin/sbx-bundle" pack "$dir" -o "$SUP_DIR/three.tar.gz"
        run "$SBX_STAGE/bin/sbx-bundle" index "$REG" "$SUP_DIR/three.tar.gz"
        [ "$status" -eq 1 ]
        [[ "$output" == *"hello 1.0.0 is published already with sha256"* ]]
        # a bad manifest is refused at pack time, naming file and line
        printf '[bundle]\nname = hello\nversion = one\n' > "$dir/manifest.ini"
        run "$SBX_STAGE/bin/sbx-bundle" pack "$dir"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$dir/manifest.ini:3: bundle.version: not a semantic version"* ]]
}

@test "sbx-bundle: pack keeps links inside the bundle and refuses ones that lead out, naming them" {
        dir=$(mk_bundle hello 1.0.0)
        mkdir -p "$dir/lib/sub"
        ln -s ../run.sh "$dir/lib/ok"
        ln -s sub/../../manifest.ini "$dir/lib/ok2"
        "$SBX_STAGE/bin/sbx-bundle" pack "$dir" -o "$SUP_DIR/links.tar.gz"
        run -0 tar tzvf "$SUP_DIR/links.tar.gz"
        [[ "$output" == *"lib/ok -> ../run.sh"* ]]
        [[ "$output" == *"lib/ok2 -> sub/../../manifest.ini"* ]]
        # out of the root, at once, half-way, and absolute
        for target in ../../etc/passwd ../sub/../../x sub/../../../x /etc/passwd; do
                rm -f "$dir/lib/bad"
                ln -s "$target" "$dir/lib/bad"
                run "$SBX_STAGE/bin/sbx-bundle" pack "$dir" -o "$SUP_DIR/bad.tar.gz"
                echo "$target: $output" >&2
                [ "$status" -eq 1 ]
                [[ "$output" == *"$dir/lib/bad -> $target: the link leads out of the bundle"* ]]
        done
}

@test "contrib/try-bundle.sh packs, signs, publishes and runs the sample bundle, the second run from the cache" {
        before=$(ls -d /tmp/sbx-try-bundle.* 2>/dev/null | wc -l)
        run "$SBX_SRCDIR/contrib/try-bundle.sh" there
        [ "$status" -eq 0 ]
        [[ "$output" == *"hello, there, from bundle hello 1.0.0 (job j"* ]]
        [[ "$output" == *"again, there, from bundle hello 1.0.0 (job j"* ]]
        [[ "$output" == *"it cannot be written; the workspace can: /workspace"* ]]
        [[ "$output" == *"from the registry)"* ]]
        [[ "$output" == *"verdict:       allowed by your policy"* ]]
        [[ "$output" != *"that should not happen"* ]]
        [ "$(ls -d /tmp/sbx-try-bundle.* 2>/dev/null | wc -l)" -eq "$before" ]
}

@test "with user = sbx the tree is the front's, and sbx-privd mounts it read-only for the job" {
        sup_user_mode
        publish hello 1.0.0 1 "" 'echo "bundle $SBX_BUNDLE"; touch /bundle/x 2>/dev/null && echo wrote || echo read-only; id -u' >/dev/null
        BUNDLE_DAEMON=$SUP_USER_LINES bundle_config
        # with the shipped unit's umask: the tree stays readable by the job
        local mask
        mask=$(umask)
        umask 077
        sup_start
        umask "$mask"
        run ctl run --bundle hello
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "bundle hello" ]
        [ "${lines[1]}" = "read-only" ]
        [ "${lines[2]}" != 0 ]
        [ "${lines[2]}" != "$(id -u sbx)" ]
        # the cache is the front's now, and no job uid's
        [ "$(stat -c %U "$SUP_DIR/state/cache")" = sbx ]
}
