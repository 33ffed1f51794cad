#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-protocol(7) download: a finished job's artifact or captured stream,
# whatever its size, streamed in bounded data events with its SHA-256 at
# the end, to the job's own tenant and nobody else; sbxctl download checks
# what it received against that digest.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

UID_B=41021

as_b() {
        setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

raw_as_b() {
        printf '%s\n' "$@" | setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sup-client" "$SUP_SOCK"
}

setup_file() {
        sup_init
        # a small client buffer: the download must fit its pieces to it
        sup_config "socket_mode = 0666
client_buffer = 256K"
        cat >> "$SUP_DIR/sup.conf" <<EOC
max_artifacts = 128M
max_disk = 256M

[tenant.bravo]
uids = $UID_B
job_user = nobody
job_group = nogroup
profiles = default
EOC
        sup_start
        # 50 MB of artifact, every line different (a counter): a lost,
        # repeated or reordered piece changes the digest.
        BIG=$(ctl submit --disk 200M --artifact big.txt --artifact 'sub/*' -- \
                sh -c 'seq 1 6500000 > big.txt; mkdir sub; printf "\001\002\377" > sub/bin; echo out; echo err >&2')
        ctl wait "$BIG" >/dev/null
        export BIG
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

@test "a 50 MB artifact comes back whole: the file, the record and the end event agree on its SHA-256" {
        want=$(seq 1 6500000 | sha256sum | cut -d' ' -f1)
        size=$(seq 1 6500000 | wc -c)
        [ "$size" -gt 50000000 ]
        ctl download -o "$SUP_DIR/big.txt" "$BIG" big.txt
        [ "$(sha256sum < "$SUP_DIR/big.txt" | cut -d' ' -f1)" = "$want" ]
        run -0 ctl result "$BIG"
        [[ "$output" == *"artifact:  big.txt $size bytes sha256:$want"* ]]
        rm -f "$SUP_DIR/big.txt"
}

@test "download on the wire: a response with the size, data events in order within the client's buffer, then size and SHA-256" {
        raw "{\"v\":1,\"op\":\"download\",\"id\":7,\"job\":\"$BIG\",\"artifact\":\"big.txt\"}" > "$SUP_DIR/wire"
        first=$(head -n 1 "$SUP_DIR/wire")
        [ "$(json_get ok <<<"$first")" = true ]
        [ "$(json_get id <<<"$first")" = 7 ]
        [ "$(json_get size <<<"$first")" = "$(seq 1 6500000 | wc -c)" ]
        last=$(tail -n 1 "$SUP_DIR/wire")
        [ "$(json_get event <<<"$last")" = download_end ]
        [ "$(json_get sha256 <<<"$last")" = "$(seq 1 6500000 | sha256sum | cut -d' ' -f1)" ]
        # every message is far smaller than the client's buffer (256K)
        [ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$SUP_DIR/wire")" -lt 100000 ]
        # the second data event starts where the first ended
        [ "$(sed -n 3p "$SUP_DIR/wire" | json_get offset)" = 49152 ]
        rm -f "$SUP_DIR/wire"
}

@test "binary artifacts and the captured streams download byte for byte" {
        run -0 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' download '$BIG' sub/bin | od -An -tx1"
        [ "$(echo $output)" = "01 02 ff" ]
        run -0 ctl download --stream stdout "$BIG"
        [ "$output" = out ]
        run -0 ctl download -o - --stream stderr "$BIG"
        [ "$output" = err ]
        # a stream the job never wrote to is an empty file with the empty digest
        job=$(ctl submit -- true)
        ctl wait "$job" >/dev/null
        run -0 raw "{\"v\":1,\"op\":\"download\",\"job\":\"$job\",\"stream\":\"stdout\"}"
        [ "$(json_get size <<<"${lines[0]}")" = 0 ]
        [ "$(json_get sha256 <<<"${lines[1]}")" = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 ]
}

@test "another tenant's job cannot be downloaded: it is not found for them" {
        run -0 raw_as_b "{\"v\":1,\"op\":\"download\",\"job\":\"$BIG\",\"artifact\":\"big.txt\"}"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
        run -0 raw_as_b "{\"v\":1,\"op\":\"download\",\"job\":\"$BIG\",\"stream\":\"stdout\"}"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
        run as_b download -o /dev/null "$BIG" big.txt
        [ "$status" -eq 125 ]
        [[ "$output" == *E_NOT_FOUND* ]]
}

@test "only files the record lists, of finished jobs, by valid paths" {
        run -0 raw "{\"v\":1,\"op\":\"download\",\"job\":\"$BIG\",\"artifact\":\"nope.txt\"}"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
        [[ "$(json_get error.message <<<"$output")" == *"no artifact 'nope.txt'"* ]]
        # the capture files sit next to the artifacts: not reachable as one
        run -0 raw "{\"v\":1,\"op\":\"download\",\"job\":\"$BIG\",\"artifact\":\"../stdout\"}"
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        run -0 raw "{\"v\":1,\"op\":\"download\",\"job\":\"$BIG\"}"
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        run -0 raw "{\"v\":1,\"op\":\"download\",\"job\":\"$BIG\",\"stream\":\"both\"}"
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        live=$(ctl submit --timeout 60s -- sleep 30)
        run -0 raw "{\"v\":1,\"op\":\"download\",\"job\":\"$live\",\"stream\":\"stdout\"}"
        [ "$(json_get error.code <<<"$output")" = E_NOT_DONE ]
        ctl cancel "$live" >/dev/null
        run ctl download "$BIG"
        [ "$status" -eq 2 ]
        run ctl download --stream both "$BIG"
        [ "$status" -eq 2 ]
}

@test "requests pipelined behind a download are answered after it, in order" {
        run -0 raw "{\"v\":1,\"op\":\"download\",\"id\":1,\"job\":\"$BIG\",\"artifact\":\"sub/bin\"}" '{"v":1,"op":"ping","id":2}'
        [ "$(json_get id <<<"${lines[0]}")" = 1 ]
        [ "$(json_get event <<<"${lines[1]}")" = data ]
        [ "$(json_get event <<<"${lines[2]}")" = download_end ]
        [ "$(json_get id <<<"${lines[3]}")" = 2 ]
}
