# SPDX-License-Identifier: Apache-2.0
# Shared by the bundle bats files: a real registry (a directory tree served
# by t/helpers/registry-server.py on 127.0.0.1, which logs every request
# and misbehaves on request), bundles packed by the real sbx-bundle and
# indexes signed by the real minisign, and a real sbx-supervisord whose
# tenant runs them.

load sup-unit/daemon

# From setup_file: the daemon's staging, a registry, two key pairs.
bundle_init() {
        command -v minisign >/dev/null || skip "minisign is not installed (apt-get install minisign)"
        command -v python3 >/dev/null || skip "python3 is not installed"
        sup_init
        cp "$SBX_BUILDDIR/supervisor/sbx-bundle" "$SBX_STAGE/bin/"
        export REG="$SUP_DIR/reg" KEYS="$SUP_DIR/keys" SRC="$SUP_DIR/src"
        mkdir -p "$REG" "$KEYS" "$SRC"
        minisign -G -W -p "$KEYS/key.pub" -s "$KEYS/key.sec" >/dev/null
        minisign -G -W -p "$KEYS/other.pub" -s "$KEYS/other.sec" >/dev/null
        chmod 0644 "$KEYS"/*.pub
}

bundle_fini() {
        reg_stop
        sup_fini
}

# A fresh registry, daemon state and server log for each test.
bundle_reset() {
        sup_stop
        reg_stop
        rm -rf "$REG" "$SRC" "$SUP_DIR/state" "$SUP_DIR/http.log" "$SUP_DIR/http.control" "$SUP_DIR"/*.tar.gz
        mkdir -p "$REG" "$SRC"
        : > "$SUP_DIR/http.log"
        : > "$SUP_DIR/http.control"
}

reg_serve() {
        rm -f "$SUP_DIR/http.port"
        python3 "$SBX_SRCDIR/t/helpers/registry-server.py" "$REG" "$SUP_DIR/http.log" "$SUP_DIR/http.port" \
                "$SUP_DIR/http.control" 3>&- &
        echo $! > "$SUP_DIR/http.pid"
        local i
        for i in $(seq 100); do
                [ -s "$SUP_DIR/http.port" ] && break
                sleep 0.05
        done
        [ -s "$SUP_DIR/http.port" ] || { echo "registry server did not start" >&2; return 1; }
        export REG_URL="http://127.0.0.1:$(cat "$SUP_DIR/http.port")"
}

reg_stop() {
        local pid
        [ -f "$SUP_DIR/http.pid" ] || return 0
        pid=$(cat "$SUP_DIR/http.pid")
        if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF registry-server.py; then
                kill "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        fi
        rm -f "$SUP_DIR/http.pid"
}

# The server misbehaves for paths matching GLOB: reg_misbehave GLOB ACTION [ARG]
reg_misbehave() {
        echo "$*" >> "$SUP_DIR/http.control"
}

reg_behave() {
        : > "$SUP_DIR/http.control"
}

# How many requests the server logged for paths matching a grep pattern.
reg_requests() {
        grep -c -- "$1" "$SUP_DIR/http.log" || true
}

# bundle_config: the daemon's configuration with [registry.main] at
# $REG_URL (or REG_URL_OVERRIDE) and tenant admin using it. Extra lines:
# BUNDLE_DAEMON (in [daemon]), BUNDLE_TENANT (in [tenant.admin]),
# BUNDLE_REGISTRY (in [registry.main]).
bundle_config() {
        sup_config "${BUNDLE_DAEMON:-}"
        cat >> "$SUP_DIR/sup.conf" <<EOC
registry = main
${BUNDLE_TENANT:-}

[registry.main]
url = ${REG_URL_OVERRIDE:-$REG_URL}
keys = $KEYS/key.pub
${BUNDLE_REGISTRY:-}
EOC
}

# mk_bundle NAME VERSION [MANIFEST LINES] [SCRIPT]: a bundle directory in
# $SRC/NAME-VERSION whose program is run.sh (by default it prints who it is
# and its arguments). MANIFEST LINES are appended to the manifest.
mk_bundle() {
        local name=$1 version=$2 extra=${3:-} script=${4:-}
        local dir="$SRC/$name-$version"
        mkdir -p "$dir"
        cat > "$dir/manifest.ini" <<EOM
[bundle]
name = $name
version = $version
description = test bundle $name $version
[run]
command = /bundle/run.sh
profile = shell
$extra
EOM
        if [ -z "$script" ]; then
                script='echo "bundle $SBX_BUNDLE $SBX_BUNDLE_VERSION args: $*"'
        fi
        printf '#!/bin/sh\n%s\n' "$script" > "$dir/run.sh"
        chmod 0755 "$dir/run.sh"
        echo "$dir"
}

# sign NAME SERIAL [KEY]: sign REG/NAME/index.json as minisign does.
sign() {
        minisign -S -s "$KEYS/${3:-key}.sec" -m "$REG/$1/index.json" -t "serial=$2 name=$1" >/dev/null
}

# publish NAME VERSION SERIAL [MANIFEST LINES] [SCRIPT]: make, pack, index
# and sign a bundle; prints the archive's sha256.
publish() {
        local dir
        dir=$(mk_bundle "$1" "$2" "${4:-}" "${5:-}")
        "$SBX_STAGE/bin/sbx-bundle" pack "$dir" -o "$SUP_DIR/$1-$2.tar.gz" >/dev/null
        "$SBX_STAGE/bin/sbx-bundle" index "$REG" "$SUP_DIR/$1-$2.tar.gz" >/dev/null
        sign "$1" "$3"
        sha256sum "$SUP_DIR/$1-$2.tar.gz" | cut -d' ' -f1
}

# publish_raw NAME VERSION ARCHIVE SERIAL: list an archive as it is (no
# checks: a hostile publisher) in NAME's index and sign it.
publish_raw() {
        local name=$1 version=$2 file=$3 serial=$4 sha size
        mkdir -p "$REG/$name"
        cp "$file" "$REG/$name/$name-$version.tar.gz"
        sha=$(sha256sum "$file" | cut -d' ' -f1)
        size=$(stat -c %s "$file")
        printf '{"format":1,"name":"%s","versions":[{"version":"%s","sha256":"%s","size":%s,"file":"%s-%s.tar.gz"}]}\n' \
                "$name" "$version" "$sha" "$size" "$name" "$version" > "$REG/$name/index.json"
        sign "$name" "$serial"
}

# The record of a job once it ended: job_record JOB
job_record() {
        ctl --json wait "$1" >/dev/null || true
        ctl --json result "$1"
}

# bundle_refused CODE MESSAGE-PART [REF]: a run of the bundle REF (hello)
# ends in an error with CODE and a message holding MESSAGE-PART, never
# started, and the audit log says it was refused with that code.
bundle_refused() {
        local job rec
        job=$(ctl submit --bundle "${3:-hello}")
        rec=$(job_record "$job")
        echo "$rec" >&2
        [ "$(json_get result.state <<<"$rec")" = error ]
        [ "$(json_get result.error.code <<<"$rec")" = "$1" ]
        [[ "$(json_get result.error.message <<<"$rec")" == *"$2"* ]]
        [ "$(json_get result.started <<<"$rec")" = null ]
        grep -q '"event":"bundle","job":"'"$job"'".*"decision":"refused".*"code":"'"$1"'"' "$SUP_DIR/audit.log"
}

# No partial tree: every entry of the cache is a whole bundle (its
# meta.json, its tree and the manifest in it), nothing staged is left.
cache_whole() {
        local d
        for d in "$SUP_DIR/state/cache"/* "$SUP_DIR/state/cache"/.*; do
                case "${d##*/}" in
                . | .. | '*' | '.*') continue ;;
                .staging-* | .trash-* | .dl-*)
                        echo "left over: $d" >&2
                        return 1
                        ;;
                esac
                [ -f "$d/meta.json" ] && [ -f "$d/tree/manifest.ini" ] || {
                        echo "not whole: $d" >&2
                        return 1
                }
        done
}

# publish_dir DIR SERIAL: pack, index and sign a bundle directory made by
# hand; prints the archive's sha256.
publish_dir() {
        local dir=$1 out name
        name=$(awk -F' *= *' '$1 == "name" { print $2; exit }' "$dir/manifest.ini")
        out="$SUP_DIR/$(basename "$dir").tar.gz"
        "$SBX_STAGE/bin/sbx-bundle" pack "$dir" -o "$out" >/dev/null
        "$SBX_STAGE/bin/sbx-bundle" index "$REG" "$out" >/dev/null
        sign "$name" "$2"
        sha256sum "$out" | cut -d' ' -f1
}
