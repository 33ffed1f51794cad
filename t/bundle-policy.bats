#!/usr/bin/env bats
# What a bundle job may do: its manifest's capabilities intersected with
# its tenant's policy (sbx-manifest(5) CAPABILITIES, sbx-supervisord.conf(5)
# bundle keys). A declared capability the policy does not allow, or one the
# daemon cannot grant, refuses the job (state rejected, E_FORBIDDEN naming
# it); limits go through the tenant's caps (E_LIMIT, or clamped); nothing
# undeclared is given. Tenants without a registry run no bundles; a
# bundles-only tenant runs nothing else.

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

# rejected REF CODE MESSAGE-PART [ctl options...]
rejected() {
        local ref=$1 code=$2 want=$3 job rec
        shift 3
        job=$(ctl submit "$@" --bundle "$ref")
        rec=$(job_record "$job")
        echo "$rec" >&2
        [ "$(json_get result.state <<<"$rec")" = rejected ]
        [ "$(json_get result.error.code <<<"$rec")" = "$code" ]
        [[ "$(json_get result.error.message <<<"$rec")" == *"$want"* ]]
        [ "$(json_get result.started <<<"$rec")" = null ]
        grep -q '"job":"'"$job"'".*"decision":"refused".*"code":"'"$code"'"' "$SUP_DIR/audit.log"
}

@test "a read-only host path the tenant does not allow is refused, naming it; one it allows is there, read-only" {
        publish hosts 1.0.0 1 "[capabilities]
read-only = /etc/hosts" 'head -c 0 /etc/hosts && echo readable; { echo x >> /etc/hosts; } 2>/dev/null || echo read-only' >/dev/null
        publish plain 1.0.0 1 "" 'test -e /etc/hosts && echo there || echo absent' >/dev/null
        bundle_config
        sup_start
        rejected hosts E_FORBIDDEN "bundle hosts declares read-only = /etc/hosts, which tenant 'admin' does not allow (bundle_paths)"
        sup_stop
        BUNDLE_TENANT="bundle_paths = /etc/hosts /etc/resolv.conf" bundle_config
        sup_start
        run ctl run --bundle hosts
        [ "$status" -eq 0 ]
        [ "$output" = "readable
read-only" ]
        # what a bundle does not declare it does not get, whatever the tenant allows
        [ "$(ctl run --bundle plain)" = absent ]
}

@test "environment variables: only those the manifest declares may be set" {
        publish env 1.0.0 1 "[capabilities]
env = GREETING" 'echo "${GREETING:-unset} ${OTHER:-unset}"' >/dev/null
        bundle_config
        sup_start
        [ "$(ctl run --env GREETING=hi --bundle env)" = "hi unset" ]
        rejected env E_FORBIDDEN "field 'env.OTHER': bundle env does not declare this variable (capabilities.env)" --env OTHER=x
}

@test "network = restricted: its endpoints are the job's allow entries, within the tenant's network_allow" {
        publish net 1.0.0 1 "[capabilities]
network = restricted
connect = 127.0.0.1:8080 10.9.9.9:443" "python3 -c \"
import socket
try:
    socket.create_connection(('10.9.9.8', 443), timeout=5); print('reached')
except PermissionError:
    print('refused')
\"" >/dev/null
        # a tenant without the mode
        bundle_config
        sup_start
        rejected net E_FORBIDDEN "bundle net: field 'network': tenant 'admin' may not use network mode 'restricted'"
        sup_stop
        [ "$(id -u)" = 0 ] && [ "$SUP_CGROUP" != none ] || skip "restricted jobs need a root daemon with job cgroups"
        # an endpoint beyond the tenant's cap, named
        BUNDLE_DAEMON="network_pool = 10.216.$((RANDOM % 250)).0/24" BUNDLE_TENANT="network = none restricted
network_allow = 127.0.0.1:*" bundle_config
        sup_start
        grep -q "restricted jobs: veths" "$SUP_DIR/daemon.log" || skip "this daemon cannot run restricted jobs here"
        rejected net E_FORBIDDEN "bundle net: field 'network.allow[1]': 10.9.9.9:443/tcp is beyond tenant 'admin''s network_allow"
        sup_stop
        # within it: it runs restricted, audited, and reaches nothing else
        BUNDLE_DAEMON="network_pool = 10.216.$((RANDOM % 250)).0/24" BUNDLE_TENANT="network = none restricted
network_allow = 127.0.0.1:* 10.0.0.0/8:443" bundle_config
        sup_start
        job=$(ctl submit --bundle net)
        rec=$(job_record "$job")
        [ "$(json_get result.state <<<"$rec")" = succeeded ] || { echo "$rec"; false; }
        [ "$(json_get result.network.mode <<<"$rec")" = restricted ]
        [ "$(ctl logs "$job")" = refused ]
        [ "$(json_get result.network_events.0.address <<<"$rec")" = 10.9.9.8 ]
        [ "$(json_get result.network_events.0.verdict <<<"$rec")" = deny ]
}

@test "limits: the manifest's are the job's; a caller may lower them; the tenant's caps refuse or clamp" {
        publish lim 1.0.0 1 "[limits]
memory = 256M
timeout = 20s" >/dev/null
        publish big 1.0.0 1 "[limits]
memory = 4G" >/dev/null
        BUNDLE_TENANT="max_memory = 1G" bundle_config
        sup_start
        ctl run --bundle lim >/dev/null
        rec=$(ctl --json result "$(ctl --json ls --limit 1 | json_get jobs.0.job)")
        [ "$(json_get result.limits.memory.value <<<"$rec")" = 268435456 ]
        [ "$(json_get result.limits.timeout_ms.value <<<"$rec")" = 20000 ]
        ctl run --memory 100M --bundle lim >/dev/null
        rec=$(ctl --json result "$(ctl --json ls --limit 1 | json_get jobs.0.job)")
        [ "$(json_get result.limits.memory.value <<<"$rec")" = 104857600 ]
        rejected lim E_LIMIT "field 'limits.memory': 536870912 is above what bundle lim declares (268435456)" --memory 512M
        rejected big E_LIMIT "bundle big: field 'limits.memory': 4294967296 is above tenant 'admin''s cap of 1073741824"
        sup_stop
        BUNDLE_TENANT="max_memory = 1G
over_limit = clamp" bundle_config
        sup_start
        ctl run --bundle big >/dev/null
        rec=$(ctl --json result "$(ctl --json ls --limit 1 | json_get jobs.0.job)")
        [ "$(json_get result.state <<<"$rec")" = succeeded ]
        [ "$(json_get result.limits.memory.value <<<"$rec")" = 1073741824 ]
        [ "$(json_get result.clamped <<<"$rec")" = "limits.memory 4294967296 -> 1073741824" ]
}

@test "a runtime profile the tenant may not use is refused" {
        mkdir -p "$SRC"
        publish py 1.0.0 1 >/dev/null
        sed -i 's/^profile = shell/profile = python/' "$SRC/py-1.0.0/manifest.ini"
        rm -rf "$REG/py"
        "$SBX_STAGE/bin/sbx-bundle" pack "$SRC/py-1.0.0" -o "$SUP_DIR/py.tar.gz" >/dev/null
        "$SBX_STAGE/bin/sbx-bundle" index "$REG" "$SUP_DIR/py.tar.gz" >/dev/null
        sign py 1
        bundle_config
        sup_start
        rejected py E_FORBIDDEN "bundle py: field 'profile': tenant 'admin' may not use profile 'python'"
}

@test "a bundles-only tenant runs bundles, and its inline commands are refused" {
        publish hello 1.0.0 1 >/dev/null
        BUNDLE_DAEMON="socket_mode = 0666" bundle_config
        cat >> "$SUP_DIR/sup.conf" <<EOC

[tenant.ci]
uids = nobody
profiles = shell
registry = main
bundles_only = yes
EOC
        sup_start
        run ctl_nobody run -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_FORBIDDEN: field 'command': tenant 'ci' runs bundles only (bundles_only): name a bundle"* ]]
        grep -q '"op":"run","uid":65534,.*"tenant":"ci","decision":"rejected".*"code":"E_FORBIDDEN"' "$SUP_DIR/audit.log"
        run ctl_nobody run --bundle hello -- ci
        [ "$status" -eq 0 ]
        [ "$output" = "bundle hello 1.0.0 args: ci" ]
}

@test "a tenant without a registry, or not allowed the bundle, is refused at once" {
        publish hello 1.0.0 1 >/dev/null
        publish other 1.0.0 1 >/dev/null
        BUNDLE_DAEMON="socket_mode = 0666" BUNDLE_TENANT="bundles = hello" bundle_config
        cat >> "$SUP_DIR/sup.conf" <<EOC

[tenant.plain]
uids = nobody
profiles = shell
EOC
        sup_start
        run ctl_nobody run --bundle hello
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_FORBIDDEN: field 'bundle': tenant 'plain' has no registry: it runs no bundles"* ]]
        run ctl run --bundle other
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_FORBIDDEN: field 'bundle': tenant 'admin' may not run bundle 'other' (bundles)"* ]]
        [ "$(ctl run --bundle hello)" = "bundle hello 1.0.0 args: " ]
        # the manifest decides the profile and the network, not the caller
        run ctl run --profile shell --bundle hello
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_BAD_REQUEST: field 'profile': a bundle's manifest names its profile"* ]]
        run -125 ctl run --network host --bundle hello
        [[ "$output" == *"E_BAD_REQUEST: field 'network': a bundle's manifest declares its network"* ]]
}

@test "the configuration of registries is checked at start, naming file and line" {
        BUNDLE_TENANT="bundle_paths = /etc/shadow" bundle_config
        run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"sup.conf:"*": bundle_paths: '/etc/shadow' is not one of the paths bundles may ask for"* ]]
        bundle_config
        sed -i "s|^keys = .*|keys = $SUP_DIR/nosuch.pub|" "$SUP_DIR/sup.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"sup.conf:"*": keys: minisign public key $SUP_DIR/nosuch.pub: No such file or directory"* ]]
        bundle_config
        echo "not a key" > "$SUP_DIR/bad.pub"
        sed -i "s|^keys = .*|keys = $SUP_DIR/bad.pub|" "$SUP_DIR/sup.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"not a minisign public key"* ]]
        bundle_config
        sed -i '/^keys = /d' "$SUP_DIR/sup.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
        [[ "$output" == *"[registry.main] has no keys"* ]]
        bundle_config
        sed -i 's/^registry = main/registry = nosuch/' "$SUP_DIR/sup.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
        [[ "$output" == *"[tenant.admin] registry = nosuch, but there is no [registry.nosuch]"* ]]
        bundle_config
        sed -i 's|^url = .*|url = ftp://example.com/x|' "$SUP_DIR/sup.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
        [[ "$output" == *"url: expected an http://, https:// or file:/// URL"* ]]
        bundle_config
        printf 'offline = sometimes\n' >> "$SUP_DIR/sup.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
        [[ "$output" == *".offline: expected fail or use-cached (value 'sometimes')"* ]]
}
