#!/usr/bin/env bats
# sbx-supervisord(8) BUNDLES: a cache file system that fills up while a
# bundle is downloaded or unpacked. Unused trees go, least recently used
# first, and the archive is fetched once more; when that does not make
# room either, the job ends with E_CACHE_FULL, and nothing partial is kept.

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
        [ "$(id -u)" = 0 ] || skip "mounting a small tmpfs for the cache needs root"
        bundle_reset
        reg_serve
}

teardown() {
        sup_stop
        reg_stop
        if mountpoint -q "$SUP_DIR/state/cache"; then
                umount "$SUP_DIR/state/cache"
        fi
}

# big NAME MB: a bundle with MB MiB of incompressible data; prints its sha256.
big() {
        local dir
        dir=$(mk_bundle "$1" 1.0.0)
        head -c $(($2 * 1024 * 1024)) /dev/urandom > "$dir/data"
        publish_dir "$dir" 1
}

@test "a full cache file system: unused trees go and the download is tried again; else E_CACHE_FULL" {
        sha_a=$(big alpha 1)
        sha_b=$(big beta 1)
        big gamma 2 >/dev/null
        bundle_config
        # room for one 1 MiB bundle and the download of another, not both trees
        mkdir -p "$SUP_DIR/state/cache"
        mount -t tmpfs -o size=2600k,mode=0700 tmpfs "$SUP_DIR/state/cache"
        sup_start
        [ "$(ctl run --bundle alpha)" = "bundle alpha 1.0.0 args: " ]
        [ -d "$SUP_DIR/state/cache/$sha_a/tree" ]
        # beta does not fit beside alpha, which no job holds: alpha goes
        job=$(ctl submit --bundle beta)
        rec=$(job_record "$job")
        echo "$rec" >&2
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(ctl logs "$job")" = "bundle beta 1.0.0 args: " ]
        [ ! -e "$SUP_DIR/state/cache/$sha_a" ]
        [ -d "$SUP_DIR/state/cache/$sha_b/tree" ]
        grep -q "registry main: beta: the cache's file system was full; 1 unused trees ([0-9]* bytes) removed, fetching again" \
                "$SUP_DIR/daemon.log"
        # gamma does not fit even in the empty cache: a clear error, nothing kept
        bundle_refused E_CACHE_FULL "the bundle cache's file system is full: " gamma
        bundle_refused E_CACHE_FULL "No space left on device" gamma
        cache_whole
        # and jobs whose bundles fit still run
        [ "$(ctl run --bundle alpha -- again)" = "bundle alpha 1.0.0 args: again" ]
}
