#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Try bundles from the build tree, end to end: pack the sample bundle
# (contrib/bundles/hello) with sbx-bundle, publish it in a throwaway
# registry, sign the registry's index with a minisign key made for the
# occasion, start sbx-supervisord with that registry and the key trusted,
# run the bundle twice through sbxctl (the second run from the cache),
# show the first run's record, the bundle and the cache, and stop the
# daemon.
#
# Usage: contrib/try-bundle.sh [ARG]...   (the bundle's arguments)
#        (SBX_BUILDDIR: the build tree, when it is not the source tree)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${SBX_BUILDDIR:-$top}
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbx-unpack supervisor/sbxctl supervisor/sbx-bundle; do
        [ -x "$build/$f" ] || { echo "try-bundle: $build/$f is not built (run make)" >&2; exit 1; }
done
command -v minisign >/dev/null || { echo "try-bundle: minisign is not installed (apt-get install minisign)" >&2; exit 1; }

d=$(mktemp -d /tmp/sbx-try-bundle.XXXXXX)
pid=
cleanup() {
        [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
        rm -rf "$d"
}
trap cleanup EXIT INT TERM

# Staged where the job user can reach them (see try-supervisor.sh).
chmod 0755 "$d"
mkdir "$d/bin" "$d/profiles" "$d/registry" "$d/keys"
cp "$build/launcher/sbx-launch" "$build/supervisor/sbx-supervisord" "$build/supervisor/sbx-unpack" "$build/supervisor/sbxctl" \
        "$build/supervisor/sbx-bundle" "$d/bin/"
cp "$top"/profiles/*.ini "$d/profiles/"
chmod -R a+rX "$d"

echo "== publisher: pack the sample bundle, index it, sign the index"
(cd "$d" && "$d/bin/sbx-bundle" pack "$top/contrib/bundles/hello")
"$d/bin/sbx-bundle" index "$d/registry" "$d"/hello-*.tar.gz
minisign -G -W -p "$d/keys/publisher.pub" -s "$d/keys/publisher.sec" >/dev/null
minisign -S -s "$d/keys/publisher.sec" -m "$d/registry/hello/index.json" -t 'serial=1 name=hello' >/dev/null
ls -l "$d/registry/hello"

echo "== operator: a tenant whose bundles come from that registry"
job_user=$(id -un)
[ "$(id -u)" = 0 ] && job_user=nobody
cat > "$d/sbx-supervisord.conf" <<EOC
[daemon]
socket = $d/sbx.sock
state_dir = $d/state
launcher = $d/bin/sbx-launch
profile_path = $d/profiles
cgroup = none
cache_size = 64M

[registry.local]
url = file://$d/registry
keys = $d/keys/publisher.pub

[tenant.me]
uids = $(id -u)
job_user = $job_user
profiles = default shell
registry = local
EOC
cat "$d/sbx-supervisord.conf"

"$d/bin/sbx-supervisord" --config "$d/sbx-supervisord.conf" 2>"$d/daemon.log" &
pid=$!
i=0
until "$d/bin/sbxctl" --socket "$d/sbx.sock" ping >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
                echo "try-bundle: the daemon did not start:" >&2
                cat "$d/daemon.log" >&2
                exit 1
        fi
        sleep 0.05
done

ctl() { "$d/bin/sbxctl" --socket "$d/sbx.sock" "$@"; }
echo "== caller: run it (downloaded, verified, unpacked), then again (from the cache)"
[ $# -gt 0 ] || set -- world
ctl run --bundle hello --env GREETING=hello -- "$@"
first=$(ctl ls --limit 1 | awk 'NR == 2 { print $1 }')
ctl run --bundle hello@1.0.0 --env GREETING=again -- "$@"
echo "== the first run's record"
ctl result "$first"
echo "== the bundle as the daemon sees it, and its cache"
ctl bundle show hello
ctl cache ls
