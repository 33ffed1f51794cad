#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Python packages (sbx-supervisord(8) DEPENDENCIES): a job asks for pins
# its tenant's pip_allow admits; an install job of the tenant runs the
# real pip in a sandbox restricted to the tenant's index (a PEP 503 index
# on the test host, t/helpers/pip-index.py, serving wheels this file
# builds offline); the layer it makes is mounted read-only at /deps/pip
# and reused by every later job with the same pins, whatever tenant.
# Hostile: names and versions off the list, a wrong hash, a source-only
# package (setup.py never run), a wheel on another host (denied,
# audited), a layer past deps_max_bytes, an index that never answers.

load sup-unit/daemon
load helpers/testhost
bats_require_minimum_version 1.5.0

# wheel NAME VERSION [BYTES]: a wheel of package NAME (its VALUE says
# which), with a data file of BYTES random bytes, into $SUP_DIR/wheels.
wheel() {
        local src=$SUP_DIR/src/$1-$2 mod=${1//-/_}
        mkdir -p "$src/$mod"
        printf 'VALUE = "%s %s"\n' "$1" "$2" > "$src/$mod/__init__.py"
        [ -z "${3:-}" ] || head -c "$3" /dev/urandom > "$src/$mod/blob.bin"
        printf 'from setuptools import setup\nsetup(name="%s", version="%s", packages=["%s"], package_data={"%s": ["*.bin"]})\n' \
                "$1" "$2" "$mod" "$mod" > "$src/setup.py"
        (cd "$src" && /usr/bin/python3 -m pip wheel -q --no-deps --no-build-isolation --no-index -w "$SUP_DIR/wheels" . >/dev/null 2>&1)
}

setup_file() {
        sup_init
        /usr/bin/python3 -m pip --version >/dev/null 2>&1 || return 0
        mkdir -p "$SUP_DIR/wheels"
        wheel sbxdemo 1.0.0
        wheel sbxdemo 2.0.0
        wheel sbx-other 0.3
        wheel bigpkg 1.0 400000
        wheel sbxlate 1.0
        # published long ago, but for one
        touch -d 2020-01-01T00:00:00Z "$SUP_DIR"/wheels/*.whl
        wheel sbxfresh 1.0
        testhost_up sbxp "1 2"
        if [ "$NET_OK" = 1 ]; then
                testhost_serve servers pip-index.py "$SUP_DIR/wheels" "${TH}.1" 8080 "$SUP_DIR/index.log" "${TH}.2:8080"
                wait_until 30 testhost_ready servers || true
        fi
        export POOL="10.217.$((RANDOM % 250)).0/24"
        sup_config "network_pool = $POOL
socket_mode = 0666"
        cat >> "$SUP_DIR/sup.conf" <<EOC
pip_index = http://${TH}.1:8080/simple/
pip_allow = sbxdemo==1.* SBX_Other sdistonly elsewhere bigpkg slowpkg sbxlate

[tenant.t1]
uids = nobody
profiles = default
pip_index = http://${TH}.1:8080/simple/
pip_allow = sbxdemo

[tenant.small]
uids = daemon
profiles = default
pip_index = http://${TH}.1:8080/simple/
pip_allow = bigpkg slowpkg
deps_max_bytes = 100K
deps_timeout = 3s

[tenant.aged]
uids = bin
profiles = default
pip_index = http://${TH}.1:8080/simple/
pip_allow = sbxdemo sbxfresh
deps_min_age = 30d
EOC
        sup_start
}

teardown_file() {
        testhost_down
}

setup() {
        require_userns
        /usr/bin/python3 -m pip --version >/dev/null 2>&1 || skip "no pip here (python3-pip)"
        restricted_skip_unless_ready
        grep -q ready "$SUP_DIR/servers.out" || skip "the package index did not start"
}

# sbxctl as another local user (a tenant of its own)
ctl_as() {
        local u=$1
        shift
        setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

IMPORT='import sbxdemo, sys; print(sbxdemo.VALUE, sbxdemo.__file__, sys.path[1])'

# jobrun OPTS... -- CMD...: submitted and waited for; record in $res,
# stdout in $out.
jobrun() {
        local opts=()
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        run ctl --json submit "${opts[@]}" -- "$@"
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        id=$(json_get job <<<"$output")
        res=$(ctl --json wait "$id") || true
        out=$(ctl logs "$id")
}

@test "an allowed package: an install job runs pip restricted to the index; the job imports it from a read-only /deps/pip" {
        jobrun --pip sbxdemo==1.0.0 -- python3 -c "$IMPORT; open('/deps/pip/x', 'w')"
        # the write fails: read-only
        [ "$(json_get result.state <<<"$res")" = failed ] || { echo "$res"; false; }
        [[ "$out" == "sbxdemo 1.0.0 /deps/pip/sbxdemo/__init__.py"* ]] || { echo "$out"; false; }
        [[ "$(ctl logs --stream stderr "$id" 2>&1)" == *"Read-only file system"* ]]
        [ "$(json_get result.dependencies.cached <<<"$res")" = false ]
        [ "$(json_get result.dependencies.mount <<<"$res")" = /deps ]
        [ "$(json_get result.dependencies.lock.0.ecosystem <<<"$res")" = pip ]
        [ "$(json_get result.dependencies.lock.0.name <<<"$res")" = sbxdemo ]
        [ "$(json_get result.dependencies.lock.0.version <<<"$res")" = 1.0.0 ]
        [ "$(json_get result.dependencies.lock.0.sha256 <<<"$res")" = "$(sha256sum "$SUP_DIR"/wheels/sbxdemo-1.0.0-*.whl | cut -d' ' -f1)" ]
        # the install is a job of the tenant's, with its own record and output
        inst=$(json_get result.dependencies.install_job <<<"$res")
        run -0 ctl --json result "$inst"
        [ "$(json_get result.state <<<"$output")" = succeeded ]
        [ "$(json_get result.network.mode <<<"$output")" = restricted ]
        [[ "$(ctl logs "$inst")" == *"Successfully installed sbxdemo-1.0.0"* ]]
        grep -q '^/simple/sbxdemo/$' "$SUP_DIR/index.log"
}

@test "the same pins again: the layer is at hand, no install, nothing asked of the index; a job of another tenant with the same pins shares it" {
        jobrun --pip sbxdemo==1.0.0 -- python3 -c "$IMPORT"
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        key=$(json_get result.dependencies.layer <<<"$res")
        local asked
        asked=$(wc -l < "$SUP_DIR/index.log")
        jobrun --pip sbxdemo==1.0.0 -- python3 -c "$IMPORT"
        [ "$(json_get result.dependencies.cached <<<"$res")" = true ]
        jq -e '.result.dependencies | has("install_job") | not' <<<"$res"
        [[ "$out" == "sbxdemo 1.0.0"* ]]
        # tenant t1, another allowlist, the same pins and index: the same layer
        run -0 ctl_nobody --json submit --pip sbxdemo==1.0.0 -- python3 -c "$IMPORT"
        tid=$(json_get job <<<"$output")
        run ctl_nobody --json wait "$tid"
        [ "$(json_get result.state <<<"$output")" = succeeded ] || { echo "$output"; false; }
        [ "$(json_get result.dependencies.layer <<<"$output")" = "$key" ]
        [ "$(json_get result.dependencies.cached <<<"$output")" = true ]
        [ "$(wc -l < "$SUP_DIR/index.log")" = "$asked" ]
        # other pins, another layer
        jobrun --pip sbx-other==0.3 --pip sbxdemo==1.0.0 -- python3 -c 'import sbx_other, sbxdemo; print(sbx_other.VALUE)'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$out" = "sbx-other 0.3" ]
        [ "$(json_get result.dependencies.layer <<<"$res")" != "$key" ]
}

@test "pins off the tenant's list are refused before anything runs, each named with why" {
        run -125 ctl submit --pip evilpkg==1.0 --pip sbxdemo==2.0.0 --pip sbx_other==0.3 -- true
        [[ "$output" == *E_FORBIDDEN* ]]
        [[ "$output" == *"evilpkg==1.0 (not in the tenant's pip_allow)"* ]]
        [[ "$output" == *"sbxdemo==2.0.0 (version 2.0.0 is not one the tenant's pip_allow admits for sbxdemo)"* ]]
        [[ "$output" != *"sbx-other"* ]]
        # t1 allows sbxdemo only
        run -125 ctl_nobody submit --pip sbx-other==0.3 -- true
        [[ "$output" == *"sbx-other==0.3 (not in the tenant's pip_allow)"* ]]
        # bad pins
        run -125 ctl submit --pip 'sbxdemo>=1.0' -- true
        [[ "$output" == *E_BAD_REQUEST*"field 'pip[0]'"*"NAME==VERSION"* ]]
        run -125 ctl submit --pip 'sbxdemo==1.*' -- true
        [[ "$output" == *"no ranges, no '*'"* ]]
        run -125 ctl submit --pip sbxdemo==1.0.0 --pip SBXdemo==1.0.0 -- true
        [[ "$output" == *"'sbxdemo' is named twice"* ]]
        run -125 ctl submit --pip sbxdemo==1.0.0#sha256=abc -- true
        [[ "$output" == *"#sha256= takes 64 lower-case hex digits"* ]]
        # the tenant's cap
        run -125 ctl --json submit $(for i in $(seq 21); do printf -- '--pip p%s==1 ' "$i"; done) -- true
        [[ "$output" == *E_LIMIT*"deps_max_packages (20)"* ]]
}

@test "a pin with the wrong hash: pip refuses the wheel, the job ends E_DEPS naming the install job; the right hash installs" {
        jobrun --pip "sbxdemo==1.0.0#sha256=$(printf '%064d' 0)" -- python3 -c "$IMPORT"
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        [[ "$(json_get result.error.message <<<"$res")" == *"install job j"* ]]
        inst=$(grep -o 'install job j[0-9a-f]*' <<<"$(json_get result.error.message <<<"$res")" | cut -d' ' -f3)
        [ "$(ctl --json result "$inst" | jq -r .result.state)" = failed ]
        [[ "$(ctl logs --stream stderr "$inst" 2>&1)" == *"THESE PACKAGES DO NOT MATCH THE HASHES"* ]] || { ctl logs --stream stderr "$inst"; false; }
        jobrun --pip "sbxdemo==1.0.0#sha256=$(sha256sum "$SUP_DIR"/wheels/sbxdemo-1.0.0-*.whl | cut -d' ' -f1)" -- python3 -c "$IMPORT"
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
}

@test "sbxctl --pip-requirements: a hashed requirements file, several hashes a package (one of them the wheel's); what it cannot pin is refused, named by line" {
        local f=$BATS_TEST_TMPDIR/requirements.txt sha
        sha=$(sha256sum "$SUP_DIR"/wheels/sbxdemo-1.0.0-*.whl | cut -d' ' -f1)
        cat > "$f" <<EOR
# compiled for the sandbox's Python
sbxdemo==1.0.0 \\
    --hash=sha256:$(printf '%064d' 1) \\
    --hash=sha256:$sha
    # a comment line

sbx-other==0.3 --hash=sha256:$(sha256sum "$SUP_DIR"/wheels/sbx_other-0.3-*.whl | cut -d' ' -f1)  # a trailing comment
EOR
        jobrun --pip-requirements "$f" -- python3 -c 'import sbxdemo, sbx_other; print(sbxdemo.VALUE, sbx_other.VALUE)'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$out" = "sbxdemo 1.0.0 sbx-other 0.3" ]
        [ "$(jq -r '.result.dependencies.lock[] | select(.name == "sbxdemo") | .sha256' <<<"$res")" = "$sha" ]
        # none of the hashes the wheel's
        printf 'sbxdemo==1.0.0 --hash=sha256:%064d --hash=sha256:%064d\n' 1 2 > "$f"
        jobrun --pip-requirements "$f" -- true
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        printf 'sbxdemo==1.0.0\nrequests>=2\n' > "$f"
        run -125 ctl run --pip-requirements "$f" -- true
        [[ "$output" == *"$f:2: 'requests>=2' is not NAME==VERSION"* ]]
        printf 'sbxdemo==1.0.0 ; python_version < "3.8"\n' > "$f"
        run -125 ctl run --pip-requirements "$f" -- true
        [[ "$output" == *"$f:1: an environment marker"* ]]
        printf '\n\n-r other.txt\n' > "$f"
        run -125 ctl run --pip-requirements "$f" -- true
        [[ "$output" == *"$f:3: pip's option '-r' is not taken"* ]]
        printf 'sbxdemo==1.0.0 --hash=md5:abc\n' > "$f"
        run -125 ctl run --pip-requirements "$f" -- true
        [[ "$output" == *"a hash is --hash=sha256:HEX"* ]]
        printf 'requests[socks]==2.31.0\n' > "$f"
        run -125 ctl run --pip-requirements "$f" -- true
        [[ "$output" == *"no extras"* ]]
}

@test "a package with only a source archive is not built (no setup.py runs): E_DEPS" {
        jobrun --pip sdistonly==1.0 -- true
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        run -1 grep -q ran-setup "$SUP_DIR/index.log"
        run -1 grep -q '^/files/sdistonly' "$SUP_DIR/index.log"
}

@test "a wheel on another host than the index: the install job's connection is denied and audited, E_DEPS" {
        jobrun --pip elsewhere==1.0 -- true
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        inst=$(grep -o 'install job j[0-9a-f]*' <<<"$(json_get result.error.message <<<"$res")" | cut -d' ' -f3)
        run -0 ctl --json result "$inst"
        python3 -c '
import json, sys
r = json.load(sys.stdin)["result"]
ev = [e for e in r["network_events"] if e.get("address") == sys.argv[1] and e.get("port") == 8080]
assert ev and all(e["verdict"] == "deny" for e in ev), r["network_events"]' "${TH}.2" <<<"$output"
}

@test "a layer past deps_max_bytes, and an index that does not answer within deps_timeout: E_DEPS, each saying so" {
        run -0 ctl_as daemon --json submit --pip bigpkg==1.0 -- true
        sid=$(json_get job <<<"$output")
        run -125 ctl_as daemon --json wait "$sid"
        [ "$(json_get result.error.code <<<"$output")" = E_DEPS ] || { echo "$output"; false; }
        [[ "$(json_get result.error.message <<<"$output")" == *"larger than deps_max_bytes (102400 bytes)"* ]]
        run -0 ctl_as daemon --json submit --pip slowpkg==1.0 -- true
        sid=$(json_get job <<<"$output")
        run -125 ctl_as daemon --json wait "$sid"
        [ "$(json_get result.error.code <<<"$output")" = E_DEPS ] || { echo "$output"; false; }
        [[ "$(json_get result.error.message <<<"$output")" == *"install timed_out"* || "$(json_get result.error.message <<<"$output")" == *"E_TIMEOUT"* ]] ||
                { echo "$output"; false; }
}

@test "deps_min_age: each package's upload-time from the index's JSON page; one published too recently is refused, naming when" {
        run -0 ctl_as bin --json submit --pip sbxdemo==1.0.0 -- python3 -c "$IMPORT"
        sid=$(json_get job <<<"$output")
        run -0 ctl_as bin --json wait "$sid"
        [ "$(json_get result.state <<<"$output")" = succeeded ] || { echo "$output"; false; }
        [ "$(json_get result.dependencies.lock.0.published <<<"$output")" = "$(date -d 2020-01-01T00:00:00Z +%s)" ]
        # not the admin tenant's layer (that one has no release times)
        [ "$(json_get result.dependencies.cached <<<"$output")" = false ]
        run -0 ctl_as bin --json submit --pip sbxfresh==1.0 -- true
        sid=$(json_get job <<<"$output")
        run -125 ctl_as bin --json wait "$sid"
        [ "$(json_get result.error.code <<<"$output")" = E_FORBIDDEN ] || { echo "$output"; false; }
        [[ "$(json_get result.error.message <<<"$output")" == *"pip sbxfresh==1.0 (published $(date -u +%Y-%m-%d)T"*"less than the tenant's deps_min_age ago)"* ]] ||
                { echo "$output"; false; }
        # the layer was made; a tenant without deps_min_age would use it, this one never
        run -0 ctl_as bin --json submit --pip sbxfresh==1.0 -- true
        sid=$(json_get job <<<"$output")
        run -125 ctl_as bin --json wait "$sid"
        [ "$(json_get result.dependencies.cached <<<"$output")" != true ]
        [[ "$(json_get result.error.message <<<"$output")" == *"less than the tenant's deps_min_age ago"* ]]
}

@test "a session's sandbox gets its packages for all its execs" {
        run -0 ctl session create --pip sbxdemo==1.0.0 --ttl 2m
        sid=$output
        run -0 ctl session exec "$sid" -- python3 -c "$IMPORT"
        [[ "$output" == "sbxdemo 1.0.0 /deps/pip/"* ]]
        run -0 ctl session close "$sid"
}

@test "SIGKILL of the daemon while a job waits for its install: after the restart it is installed again and runs" {
        run -0 ctl --json submit --pip sbxlate==1.0 -- python3 -c 'import sbxlate; print(sbxlate.VALUE)'
        job=$(json_get job <<<"$output")
        [ "$(json_get state <<<"$output")" = fetching ]
        grep -q '"pip":\["sbxlate==1.0"\]' "$SUP_DIR/state/journal"
        pid=$(cat "$SUP_DIR/daemon.pid")
        kill -KILL "$pid"
        sup_wait_gone "$pid"
        sup_start
        run -0 ctl --json wait "$job"
        [ "$(json_get result.state <<<"$output")" = succeeded ] || { echo "$output"; false; }
        [ "$(json_get result.dependencies.cached <<<"$output")" = false ]
        [ "$(ctl logs "$job")" = "sbxlate 1.0" ]
}

@test "pip_allow without pip_index, a bad pip_index, a bad pin pattern: configuration errors naming the key" {
        local c=$BATS_TEST_TMPDIR/bad.conf
        check() {
                sed '/^\[tenant.t1\]/,$d' "$SUP_DIR/sup.conf" | sed '/^pip_index/d; /^pip_allow/d' > "$c"
                printf '%s\n' "$@" >> "$c"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$c" --check-config
        }
        check 'pip_allow = x'
        [ "$status" -ne 0 ]
        [[ "$output" == *"pip_allow names packages, but there is no pip_index"* ]]
        check 'pip_index = ftp://example.com/simple/'
        [ "$status" -ne 0 ]
        [[ "$output" == *"pip_index 'ftp://example.com/simple/': not an http:// or https:// URL"* ]]
        check 'pip_index = https://user:pw@example.com/simple/'
        [[ "$output" == *"no user or password in it"* ]]
        check 'pip_index = https://example.com:99999/simple/'
        [[ "$output" == *"a port is 1 to 65535"* ]]
        check 'pip_index = https://example.com/simple/' 'pip_allow = bad/name'
        [[ "$output" == *"pip_allow: 'bad/name'"* ]]
        check 'pip_index = https://example.com/simple/' 'pip_allow = good==1.*' 'deps_max_packages = 0'
        [[ "$output" == *"deps_max_packages: 1 to 256"* ]]
        check 'pip_index = https://example.com/simple/' 'pip_allow = good==1.*'
        [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "with privilege separation (user = sbx): the install runs through sbx-privd, the layer is the front's, the job reads it" {
        sup_user_mode
        sup_stop
        chmod 0755 "$SUP_DIR"
        sed -i "s|^state_dir = .*|state_dir = $SUP_DIR/state-user|; s|^socket = .*|socket = $SUP_SOCK|" "$SUP_DIR/sup.conf"
        sed -i "s|^\\[daemon\\]\$|&\\n$(printf %s "$SUP_USER_LINES" | sed -z 's/\n/\\n/g')|" "$SUP_DIR/sup.conf"
        export SUP_SOCK SBX_SOCKET
        sup_start
        jobrun --pip sbxdemo==1.0.0 -- python3 -c "$IMPORT"
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; cat "$SUP_DIR/daemon.log" | tail -20; false; }
        [[ "$out" == "sbxdemo 1.0.0 /deps/pip/"* ]]
        key=$(json_get result.dependencies.layer <<<"$res")
        [ "$(stat -c %U "$SUP_DIR/state-user/deps/$key/layer/pip/sbxdemo/__init__.py")" = sbx ]
        [ "$(stat -c %a "$SUP_DIR/state-user/deps")" = 711 ]
}
