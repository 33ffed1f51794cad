#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# npm packages (sbx-supervisord(8) DEPENDENCIES): a job asks for pins its
# tenant's npm_allow admits; an install job runs the real npm client,
# scripts off, in a sandbox restricted to the tenant's registry (an npm
# registry on the test host, t/helpers/npm-registry.py, serving tarballs
# this file packs); the layer is mounted read-only at /deps, npm's
# node_modules on the job's NODE_PATH, and reused by later jobs whose
# tenant admits every package of its lock. Hostile: names and versions off
# the list, a dependency off another tenant's list in a shared layer, a
# wrong integrity, an install script (never run), a tarball on another
# host (denied, audited), a layer past deps_max_bytes, a registry that
# never answers, a package published too recently.

load sup-unit/daemon
load helpers/testhost
bats_require_minimum_version 1.5.0

# pkg NAME VERSION [DEPENDENCIES-JSON [POSTINSTALL [BYTES]]]: a tarball of
# package NAME (it exports "NAME VERSION") into $SUP_DIR/registry.
pkg() {
        local name=$1 version=$2 deps=${3:-'{}'} script=${4:-} bytes=${5:-}
        local src=$SUP_DIR/src/${name//\//-}-$version scripts=''
        mkdir -p "$src/package"
        [ -z "$script" ] || scripts=$(printf ', "scripts": {"postinstall": "%s"}' "$script")
        printf '{"name": "%s", "version": "%s", "main": "index.js", "dependencies": %s%s}\n' \
                "$name" "$version" "$deps" "$scripts" > "$src/package/package.json"
        printf 'module.exports = "%s %s";\n' "$name" "$version" > "$src/package/index.js"
        [ -z "$bytes" ] || head -c "$bytes" /dev/urandom > "$src/package/blob.bin"
        tar -C "$src" -czf "$SUP_DIR/registry/${name//\//-}-$version.tgz" package
}

# integrity NAME VERSION: npm's sha512 integrity of the tarball
integrity() {
        printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$SUP_DIR/registry/${1//\//-}-$2.tgz" | base64 -w0)"
}

setup_file() {
        sup_init
        command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 || return 0
        mkdir -p "$SUP_DIR/registry" "$SUP_DIR/wheels"
        testhost_up sbxn "1 2"
        pkg sbxnpm 1.0.0
        pkg sbxnpm 2.0.0
        pkg sbxdep 1.0.0
        pkg sbxuses 1.0.0 '{"sbxdep": "1.0.0"}'
        pkg sbxscript 1.0.0 '{}' "node -e \\\"require('http').get('http://${TH}.1:8081/ran-script')\\\"; touch ran-script"
        pkg @sbx/scoped 1.0.0
        pkg elsewhere 1.0.0
        pkg bignpm 1.0.0 '{}' '' 400000
        for n in 1 2 3 4; do pkg "blob$n" 1.0.0 '{}' '' 400000; done
        # published long ago, but for one
        touch -d 2020-01-01T00:00:00Z "$SUP_DIR"/registry/*.tgz
        pkg sbxfresh 1.0.0
        # a wheel for the job that asks for both kinds
        mkdir -p "$SUP_DIR/src/pyboth/pyboth"
        echo 'VALUE = "pyboth 1.0"' > "$SUP_DIR/src/pyboth/pyboth/__init__.py"
        printf 'from setuptools import setup\nsetup(name="pyboth", version="1.0", packages=["pyboth"])\n' > "$SUP_DIR/src/pyboth/setup.py"
        (cd "$SUP_DIR/src/pyboth" && /usr/bin/python3 -m pip wheel -q --no-deps --no-build-isolation --no-index -w "$SUP_DIR/wheels" . >/dev/null 2>&1) || true
        if [ "$NET_OK" = 1 ]; then
                testhost_serve servers npm-registry.py "$SUP_DIR/registry" "${TH}.1" 8081 "$SUP_DIR/registry.log" "${TH}.2:8081"
                testhost_serve pip pip-index.py "$SUP_DIR/wheels" "${TH}.1" 8080 "$SUP_DIR/index.log" "${TH}.2:8080"
                wait_until 30 testhost_ready servers pip || true
        fi
        export POOL="10.218.$((RANDOM % 250)).0/24"
        sup_config "network_pool = $POOL
socket_mode = 0666
deps_cache_size = 1M"
        cat >> "$SUP_DIR/sup.conf" <<EOC
npm_registry = http://${TH}.1:8081/
npm_allow = sbxnpm@1.* sbxdep sbxuses sbxscript @sbx/* elsewhere sbxfresh blob*
pip_index = http://${TH}.1:8080/simple/
pip_allow = pyboth

[tenant.t1]
uids = nobody
profiles = default
npm_registry = http://${TH}.1:8081/
npm_allow = sbxnpm sbxuses

[tenant.small]
uids = daemon
profiles = default
npm_registry = http://${TH}.1:8081/
npm_allow = bignpm slowpkg
deps_max_bytes = 100K
deps_timeout = 3s

[tenant.aged]
uids = bin
profiles = default
npm_registry = http://${TH}.1:8081/
npm_allow = sbxnpm sbxfresh
deps_min_age = 30d
EOC
        sup_start
}

teardown_file() {
        testhost_down
}

setup() {
        require_userns
        command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 || skip "no node and npm here (nodejs, npm)"
        restricted_skip_unless_ready
}

ctl_as() {
        local u=$1
        shift
        setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

# jobrun [--as USER] OPTS... -- CMD...: submitted and waited for; record
# in $res, stdout in $out.
jobrun() {
        local as=root opts=()
        if [ "$1" = --as ]; then as=$2; shift 2; fi
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        run ctl_as "$as" --json submit "${opts[@]}" -- "$@"
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        id=$(json_get job <<<"$output")
        res=$(ctl_as "$as" --json wait "$id") || true
        out=$(ctl_as "$as" logs "$id")
}

# the install job named in an E_DEPS message of $res
install_of() {
        grep -o 'install job j[0-9a-f]*' <<<"$(json_get result.error.message <<<"$res")" | cut -d' ' -f3
}

@test "an allowed package: npm runs restricted to the registry; the job requires it from a read-only /deps/npm/node_modules" {
        jobrun --npm sbxnpm@1.0.0 -- node -e 'console.log(require("sbxnpm"), require.resolve("sbxnpm"), process.env.NODE_PATH); require("fs").writeFileSync("/deps/npm/x", "")'
        [ "$(json_get result.state <<<"$res")" = failed ] || { echo "$res"; false; }
        [ "$out" = "sbxnpm 1.0.0 /deps/npm/node_modules/sbxnpm/index.js /deps/npm/node_modules" ] || { echo "$out"; false; }
        [[ "$(ctl logs --stream stderr "$id" 2>&1)" == *"EROFS"* ]]
        [ "$(json_get result.dependencies.cached <<<"$res")" = false ]
        [ "$(json_get result.dependencies.mount <<<"$res")" = /deps ]
        [ "$(json_get result.dependencies.lock.0.ecosystem <<<"$res")" = npm ]
        [ "$(json_get result.dependencies.lock.0.name <<<"$res")" = sbxnpm ]
        [ "$(json_get result.dependencies.lock.0.version <<<"$res")" = 1.0.0 ]
        [ "$(json_get result.dependencies.lock.0.integrity <<<"$res")" = "$(integrity sbxnpm 1.0.0)" ]
        [ "$(json_get result.dependencies.lock.0.url <<<"$res")" = "http://${TH}.1:8081/sbxnpm/-/sbxnpm-1.0.0.tgz" ]
        inst=$(json_get result.dependencies.install_job <<<"$res")
        run -0 ctl --json result "$inst"
        [ "$(json_get result.state <<<"$output")" = succeeded ]
        [ "$(json_get result.network.mode <<<"$output")" = restricted ]
        [ "$(json_get result.command.0 <<<"$output")" = npm ]
        [[ "$(ctl logs "$inst")" == *"added 1 package"* ]] || { ctl logs "$inst"; false; }
        grep -q '^/sbxnpm$' "$SUP_DIR/registry.log"
}

@test "the same pins again: the layer is at hand, nothing asked of the registry; another tenant whose list admits the lock shares it" {
        jobrun --npm sbxnpm@1.0.0 -- node -e 'console.log(require("sbxnpm"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        key=$(json_get result.dependencies.layer <<<"$res")
        local asked
        asked=$(wc -l < "$SUP_DIR/registry.log")
        jobrun --as nobody --npm sbxnpm@1.0.0 -- node -e 'console.log(require("sbxnpm"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$(json_get result.dependencies.cached <<<"$res")" = true ]
        [ "$(json_get result.dependencies.layer <<<"$res")" = "$key" ]
        [ "$out" = "sbxnpm 1.0.0" ]
        [ "$(wc -l < "$SUP_DIR/registry.log")" = "$asked" ]
}

@test "a pin's dependencies are resolved by npm and admitted by the list; a tenant whose list lacks one cannot use the layer" {
        jobrun --npm sbxuses@1.0.0 -- node -e 'console.log(require("sbxuses"), require("sbxdep"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$out" = "sbxuses 1.0.0 sbxdep 1.0.0" ]
        run -0 jq -r '[.result.dependencies.lock[].name] | sort | join(" ")' <<<"$res"
        [ "$output" = "sbxdep sbxuses" ]
        # t1 admits sbxuses but not sbxdep: the cached layer is not its
        jobrun --as nobody --npm sbxuses@1.0.0 -- node -e 'require("sbxuses")'
        [ "$(json_get result.error.code <<<"$res")" = E_FORBIDDEN ] || { echo "$res"; false; }
        [[ "$(json_get result.error.message <<<"$res")" == *"npm sbxdep@1.0.0 (not in the tenant's npm_allow)"* ]]
        [[ "$(json_get result.error.message <<<"$res")" != *"sbxuses@"* ]]
}

@test "other pins that come to the same lock: the install runs, and its layer is the one made already (named by its lock)" {
        jobrun --npm sbxuses@1.0.0 -- node -e 'require("sbxuses")'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        key=$(json_get result.dependencies.layer <<<"$res")
        jobrun --npm sbxuses@1.0.0 --npm sbxdep@1.0.0 -- node -e 'console.log(require("sbxuses"), require("sbxdep"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$(json_get result.dependencies.cached <<<"$res")" = false ]
        [ "$(json_get result.dependencies.layer <<<"$res")" = "$key" ]
        [ "$out" = "sbxuses 1.0.0 sbxdep 1.0.0" ]
        # one layer for the two, each request's key naming it
        [ "$(grep -lx "$key" "$SUP_DIR"/state/deps/by-request/* | wc -l)" = 2 ] || { grep . "$SUP_DIR"/state/deps/by-request/*; false; }
        [ -d "$SUP_DIR/state/deps/$key/layer/npm/node_modules/sbxdep" ]
}

# lockfile FILE ENTRY-JSON...: an npm lock file (lockfileVersion 3) of
# the entries given ("PATH": {...})
lockfile() {
        local f=$1 e
        shift
        { printf '{"name": "app", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "app"}'
          for e in "$@"; do printf ', %s' "$e"; done
          printf '}}\n'; } > "$f"
}

# entry NAME VERSION [EXTRA-JSON]: a lock entry of a package of the registry
entry() {
        printf '"node_modules/%s": {"version": "%s", "resolved": "http://%s.1:8081/%s/-/%s-%s.tgz", "integrity": "%s"%s}' \
                "$1" "$2" "$TH" "$1" "$1" "$2" "$(integrity "$1" "$2")" "${3:+, $3}"
}

@test "sbxctl --npm-lock: a lock file's production packages pinned with their integrities; what it cannot pin is refused, named" {
        local f=$BATS_TEST_TMPDIR/package-lock.json
        # dev and other systems' optional packages are left out
        lockfile "$f" "$(entry sbxuses 1.0.0 '"dependencies": {"sbxdep": "1.0.0"}')" "$(entry sbxdep 1.0.0)" \
                "$(entry evil 6.6.6 '"dev": true')" "$(entry fsevents 2.3.3 '"optional": true, "os": ["darwin"]')" \
                "$(entry sbxnpm 1.0.0 '"optional": true, "os": ["linux"]')"
        jobrun --npm-lock "$f" -- node -e 'console.log(require("sbxuses"), require("sbxdep"), require("sbxnpm"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$out" = "sbxuses 1.0.0 sbxdep 1.0.0 sbxnpm 1.0.0" ]
        run -0 jq -r '[.result.dependencies.lock[] | .name + "@" + .version] | join(" ")' <<<"$res"
        [ "$output" = "sbxdep@1.0.0 sbxnpm@1.0.0 sbxuses@1.0.0" ]
        # what cannot be pinned
        lockfile "$f" "$(entry sbxnpm 1.0.0)" "$(entry sbxuses 1.0.0)" '"node_modules/sbxuses/node_modules/sbxnpm": {"version": "2.0.0", "integrity": "sha512-x"}'
        run -125 ctl run --npm-lock "$f" -- true
        [[ "$output" == *"sbxnpm is in it at 1.0.0 and at 2.0.0: sbx pins one version a name"* ]]
        lockfile "$f" '"node_modules/mine": {"resolved": "../mine", "link": true}'
        run -125 ctl run --npm-lock "$f" -- true
        [[ "$output" == *"node_modules/mine is a link"* ]]
        lockfile "$f" "$(entry sbxnpm 1.0.0 '"name": "evil"')"
        run -125 ctl run --npm-lock "$f" -- true
        [[ "$output" == *"is an alias of evil"* ]]
        lockfile "$f" '"node_modules/fromgit": {"version": "1.0.0", "resolved": "git+ssh://git@example.com/x.git#abc"}'
        run -125 ctl run --npm-lock "$f" -- true
        [[ "$output" == *"node_modules/fromgit has no integrity"* ]]
        printf '{"lockfileVersion": 1, "dependencies": {}}\n' > "$f"
        run -125 ctl run --npm-lock "$f" -- true
        [[ "$output" == *"lockfileVersion 1"* ]]
        printf '{"packages": {"": {}, "node_modules/a": {"version": "1.0.0", "integrity": "x", "version": "2"}}}\n' > "$f"
        run -125 ctl run --npm-lock "$f" -- true
        [[ "$output" == *"duplicate"* ]]
}

@test "pins off the tenant's list are refused before anything runs, each named with why; bad pins name the field" {
        run -125 ctl submit --npm evil@1.0.0 --npm sbxnpm@2.0.0 --npm @sbx/scoped@1.0.0 -- true
        [[ "$output" == *E_FORBIDDEN* ]]
        [[ "$output" == *"npm evil@1.0.0 (not in the tenant's npm_allow)"* ]]
        [[ "$output" == *"npm sbxnpm@2.0.0 (version 2.0.0 is not one the tenant's npm_allow admits for sbxnpm)"* ]]
        [[ "$output" != *"scoped"* ]]
        run -125 ctl submit --npm 'sbxnpm@^1.0.0' -- true
        [[ "$output" == *E_BAD_REQUEST*"field 'npm[0]'"*"no ranges, no tags"* ]]
        run -125 ctl submit --npm sbxnpm -- true
        [[ "$output" == *"is not NAME@VERSION"* ]]
        run -125 ctl submit --npm sbxnpm@1.0.0 --npm sbxnpm@1.0.0 -- true
        [[ "$output" == *"'sbxnpm' is named twice"* ]]
        run -125 ctl submit --npm 'sbxnpm@1.0.0#sha1-abc' -- true
        [[ "$output" == *"#sha512-BASE64"* ]]
        run -125 ctl_as daemon submit --npm sbxnpm@1.0.0 -- true
        [[ "$output" == *"npm sbxnpm@1.0.0 (not in the tenant's npm_allow)"* ]]
        # a scoped name, admitted by @sbx/*
        jobrun --npm @sbx/scoped@1.0.0 -- node -e 'console.log(require("@sbx/scoped"))'
        [ "$out" = "@sbx/scoped 1.0.0" ] || { echo "$res"; false; }
}

@test "integrities: a wrong one fails the install naming it; the right ones install; with integrities a dependency must be pinned too" {
        local zero
        zero="sha512-$(head -c 64 /dev/zero | base64 -w0)"
        jobrun --npm "sbxnpm@1.0.0#$zero" -- node -e 'require("sbxnpm")'
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        [[ "$(json_get result.error.message <<<"$res")" == *"sbxnpm@1.0.0 has integrity $(integrity sbxnpm 1.0.0), not the pinned one"* ]] || { echo "$res"; false; }
        jobrun --npm "sbxnpm@1.0.0#$(integrity sbxnpm 1.0.0)" -- node -e 'console.log(require("sbxnpm"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        jobrun --npm "sbxuses@1.0.0#$(integrity sbxuses 1.0.0)" -- node -e 'require("sbxuses")'
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        [[ "$(json_get result.error.message <<<"$res")" == *"sbxdep@1.0.0 was installed as a dependency but not pinned"* ]]
        jobrun --npm "sbxuses@1.0.0#$(integrity sbxuses 1.0.0)" --npm "sbxdep@1.0.0#$(integrity sbxdep 1.0.0)" -- node -e 'console.log(require("sbxuses"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
}

@test "an install script is never run: the registry hears nothing from it, it leaves nothing in the layer" {
        jobrun --npm sbxscript@1.0.0 -- sh -c 'node -e "console.log(require(\"sbxscript\"))"; ls /deps/npm/node_modules/sbxscript'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [[ "$out" == "sbxscript 1.0.0"* ]]
        [[ "$out" != *ran-script* ]]
        run -1 grep -q ran-script "$SUP_DIR/registry.log"
        # the script is in the package, so it was npm that did not run it
        grep -q postinstall "$SUP_DIR/src/sbxscript-1.0.0/package/package.json"
}

@test "a tarball on another host than the registry: the install job's connection is denied and audited, E_DEPS" {
        jobrun --npm elsewhere@1.0.0 -- true
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        run -0 ctl --json result "$(install_of)"
        python3 -c '
import json, sys
r = json.load(sys.stdin)["result"]
ev = [e for e in r["network_events"] if e.get("address") == sys.argv[1] and e.get("port") == 8081]
assert ev and all(e["verdict"] == "deny" for e in ev), r["network_events"]' "${TH}.2" <<<"$output"
}

@test "a layer past deps_max_bytes, and a registry that does not answer within deps_timeout: E_DEPS, each saying so" {
        jobrun --as daemon --npm bignpm@1.0.0 -- true
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        [[ "$(json_get result.error.message <<<"$res")" == *"larger than deps_max_bytes (102400 bytes)"* ]]
        jobrun --as daemon --npm slowpkg@1.0.0 -- true
        [ "$(json_get result.error.code <<<"$res")" = E_DEPS ] || { echo "$res"; false; }
        [[ "$(json_get result.error.message <<<"$res")" == *"install timed_out"* || "$(json_get result.error.message <<<"$res")" == *"E_TIMEOUT"* ]] ||
                { echo "$res"; false; }
}

@test "deps_min_age: each version's time from the registry's document; one published too recently is refused, naming when" {
        jobrun --as bin --npm sbxnpm@1.0.0 -- node -e 'console.log(require("sbxnpm"))'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$(json_get result.dependencies.lock.0.published <<<"$res")" = "$(date -d 2020-01-01T00:00:00Z +%s)" ]
        jobrun --as bin --npm sbxfresh@1.0.0 -- true
        [ "$(json_get result.error.code <<<"$res")" = E_FORBIDDEN ] || { echo "$res"; false; }
        [[ "$(json_get result.error.message <<<"$res")" == *"npm sbxfresh@1.0.0 (published $(date -u +%Y-%m-%d)T"*"less than the tenant's deps_min_age ago)"* ]] ||
                { echo "$res"; false; }
}

@test "pip and npm packages in one job: one install job runs both, the job imports and requires them" {
        [ -n "$(ls "$SUP_DIR"/wheels/pyboth-*.whl 2>/dev/null)" ] || skip "no wheel could be built here (pip wheel)"
        jobrun --pip pyboth==1.0 --npm sbxnpm@1.0.0 -- sh -c 'python3 -c "import pyboth; print(pyboth.VALUE)"; node -e "console.log(require(\"sbxnpm\"))"'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        [ "$out" = "pyboth 1.0
sbxnpm 1.0.0" ] || { echo "$out"; false; }
        run -0 jq -r '[.result.dependencies.lock[] | .ecosystem + ":" + .name] | sort | join(" ")' <<<"$res"
        [ "$output" = "npm:sbxnpm pip:pyboth" ]
        run -0 ctl --json result "$(json_get result.dependencies.install_job <<<"$res")"
        [ "$(json_get result.command.0 <<<"$output")" = /bin/sh ]
}

# the layer (its directory in STATE/deps) that holds package NAME
layer_with() {
        local d
        for d in "$SUP_DIR"/state/deps/*/layer/npm/node_modules/"$1"; do
                [ -d "$d" ] && echo "${d%/layer/npm/node_modules/*}"
        done
}

@test "deps_cache_size: a new layer past it removes the least recently used no job holds; one a session holds stays, across a restart" {
        run -0 ctl session create --npm blob1@1.0.0 --ttl 2m
        sid=$output
        a=$(layer_with blob1)
        [ -n "$a" ]
        # the daemon killed: the session goes on, and holds its layer again
        pid=$(cat "$SUP_DIR/daemon.pid")
        kill -KILL "$pid"
        sup_wait_gone "$pid"
        sup_start
        grep -q '"deps_layer":"'"${a: -64}"'"' "$SUP_DIR/state/journal"
        jobrun --npm blob2@1.0.0 -- true
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        b=$(layer_with blob2)
        # three layers of 400 kB are more than 1M: blob2's goes, blob1's is held
        jobrun --npm blob3@1.0.0 -- true
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        wait_until 20 test ! -e "$b"
        [ -d "$a" ]
        [ -n "$(layer_with blob3)" ]
        grep -q "packages: layer ${b: -64:12} removed" "$SUP_DIR/daemon.log"
        run -0 ctl session exec "$sid" -- node -e 'console.log(require("blob1"))'
        [ "$output" = "blob1 1.0.0" ]
        run -0 ctl session close "$sid"
        # no longer held, and the least recently used: the next one past the bound removes it
        jobrun --npm blob4@1.0.0 -- true
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; false; }
        wait_until 20 test ! -e "$a"
        # no request names a layer that is gone; blob2's is installed again
        run -1 grep -rl "${b: -64}" "$SUP_DIR/state/deps/by-request"
        jobrun --npm blob2@1.0.0 -- node -e 'console.log(require("blob2"))'
        [ "$(json_get result.dependencies.cached <<<"$res")" = false ]
        [ "$out" = "blob2 1.0.0" ]
}

@test "npm_allow without npm_registry, a bad npm_registry, a bad pattern: configuration errors naming the key" {
        local c=$BATS_TEST_TMPDIR/bad.conf
        check() {
                sed '/^\[tenant.t1\]/,$d' "$SUP_DIR/sup.conf" | sed '/^npm_registry/d; /^npm_allow/d' > "$c"
                printf '%s\n' "$@" >> "$c"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$c" --check-config
        }
        check 'npm_allow = x'
        [ "$status" -ne 0 ]
        [[ "$output" == *"npm_allow names packages, but there is no npm_registry"* ]]
        check 'npm_registry = ftp://example.com/'
        [ "$status" -ne 0 ]
        [[ "$output" == *"npm_registry 'ftp://example.com/': not an http:// or https:// URL"* ]]
        check 'npm_registry = https://example.com/' 'npm_allow = @'
        [ "$status" -ne 0 ]
        [[ "$output" == *"npm_allow: '@'"* ]]
        check 'npm_registry = https://example.com/' 'npm_allow = bad$name'
        [ "$status" -ne 0 ]
        [[ "$output" == *"npm_allow: 'bad\$name'"* ]]
        check 'npm_registry = https://example.com/' 'npm_allow = lodash@4.* @myorg/*' 'deps_min_age = 7d'
        [ "$status" -eq 0 ] || { echo "$output"; false; }
}
