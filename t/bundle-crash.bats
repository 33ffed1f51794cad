#!/usr/bin/env bats
# sbx-supervisord(8) CRASH RECOVERY with bundles: the daemon SIGKILLed
# while it downloads a bundle, or while it unpacks one, then started
# again: the cache holds no partial tree (only whole bundles or nothing),
# and the job, which never started, runs and has its result.

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

kill_daemon() {
        kill -KILL "$SUP_PID"
        wait "$SUP_PID" 2>/dev/null || true
        SUP_PID=
        rm -f "$SUP_DIR/daemon.pid"
}

@test "SIGKILL while a bundle downloads: nothing of it is kept, and the job runs after the restart" {
        publish hello 1.0.0 1 >/dev/null
        reg_misbehave '*.tar.gz' stall 60
        bundle_config
        sup_start
        job=$(ctl submit --bundle hello -- again)
        for i in $(seq 200); do
                [ "$(reg_requests 'tar.gz')" -ge 1 ] && break
                sleep 0.05
        done
        [ "$(reg_requests 'tar.gz')" -ge 1 ]
        [ "$(ctl --json status "$job" | json_get job.state)" = fetching ]
        kill_daemon
        # the download went into an unlinked file: nothing to see
        run -0 ls -A "$SUP_DIR/state/cache"
        [ -z "$output" ]
        reg_behave
        sup_start
        rec=$(job_record "$job")
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(json_get result.bundle.version <<<"$rec")" = 1.0.0 ]
        [ "$(ctl logs "$job")" = "bundle hello 1.0.0 args: again" ]
        grep -q "recovery: 1 jobs accepted before a restart are queued to run" "$SUP_DIR/daemon.log"
        cache_whole
}

@test "SIGKILL while a bundle unpacks: the staged tree is removed at start, and the job runs after the restart" {
        dir=$(mk_bundle many 1.0.0 "" 'echo "many $(ls /bundle/files | wc -l)"')
        mkdir "$dir/files"
        # enough files that unpacking them takes a while
        (cd "$dir/files" && seq 6000 | xargs touch)
        head -c $((64 * 1024 * 1024)) /dev/urandom > "$dir/files/big"
        sha=$(publish_dir "$dir" 1)
        bundle_config
        caught=
        for attempt in 1 2 3; do
                rm -rf "$SUP_DIR/state"
                sup_start
                job=$(ctl submit --bundle many)
                for i in $(seq 2000); do
                        if compgen -G "$SUP_DIR/state/cache/.staging-*" >/dev/null; then
                                kill_daemon
                                caught=1
                                break
                        fi
                        [ "$(ctl --json status "$job" | json_get job.state)" = fetching ] || break
                        sleep 0.005
                done
                [ -n "$caught" ] && break
                sup_stop
        done
        [ -n "$caught" ] || skip "unpacking was always done before it could be interrupted"
        # a partial tree was there when the daemon died, never renamed into place
        [ ! -e "$SUP_DIR/state/cache/$sha" ]
        sup_start
        # gone at start
        ! compgen -G "$SUP_DIR/state/cache/.staging-*" || false
        rec=$(job_record "$job")
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(ctl logs "$job")" = "many 6001" ]
        cache_whole
        [ -f "$SUP_DIR/state/cache/$sha/tree/files/big" ]
}

@test "SIGKILL while a bundle job runs: queued again, it fetches its index anew, and its old workspace does not stop it" {
        publish hello 1.0.0 1 "" 'sleep 3; echo "slept args: $*"' >/dev/null
        bundle_config
        sup_start
        # retries: a job that started is run again after a restart
        job=$(ctl submit --retries 1 --bundle hello -- x)
        for i in $(seq 600); do
                [ "$(ctl --json status "$job" | json_get job.state)" = running ] && break
                sleep 0.05
        done
        [ "$(ctl --json status "$job" | json_get job.state)" = running ]
        [ -d "$SUP_DIR/state/work/$job" ]
        kill_daemon
        # after the restart the job waits for its index, which the registry holds
        reg_misbehave '*/index.json' hold "$SUP_DIR/go"
        rm -f "$SUP_DIR/go"
        sup_start
        [ "$(ctl --json status "$job" | json_get job.state)" = fetching ]
        touch "$SUP_DIR/go"
        rec=$(job_record "$job")
        echo "$rec" >&2
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(json_get result.attempt <<<"$rec")" = 2 ]
        [ "$(ctl logs "$job")" = "slept args: x" ]
}
