#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Start-up cost of one sandboxed /bin/true: sbx-launch with its built-in
# default profile against bwrap with the same isolation (every namespace,
# the same mounts, a read-only root, a cleared environment, die-with-parent,
# a new session), both as an unprivileged user. Prints both means and the
# ratio sbx/bwrap (target: <= 1.0).
#
# Usage: bench/launch.sh [RUNS]   (SBX_LAUNCH overrides the binary)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
launch=${SBX_LAUNCH:-$top/launcher/sbx-launch}
runs=${1:-1000}

for tool in hyperfine bwrap jq; do
        command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is not installed (apt-get install $tool)" >&2; exit 77; }
done
[ -x "$launch" ] || { echo "bench: $launch not built (run make)" >&2; exit 1; }

# Stage the binary where the unprivileged user can reach it: the checkout
# may sit under a directory it cannot traverse.
stage=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'rm -rf "$stage"' EXIT INT TERM
cp "$launch" "$stage/sbx-launch"
chmod 0755 "$stage" "$stage/sbx-launch"

if [ "$(id -u)" = 0 ]; then
        chown nobody "$stage"
        as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
else
        as_user() { "$@"; }
fi

# bwrap's equivalent of profiles/default.ini.
bwrap_cmd="bwrap --unshare-all --hostname sbx \
--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin \
--symlink usr/lib /lib --symlink usr/lib64 /lib64 \
--size 67108864 --perms 1777 --tmpfs /tmp --proc /proc --dev /dev \
--remount-ro / --chdir /tmp \
--clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME /tmp \
--die-with-parent --new-session /bin/true"
sbx_cmd="$stage/sbx-launch -- /bin/true"

# Both must work before they are timed.
as_user $sbx_cmd || { echo "bench: sbx-launch fails here" >&2; exit 1; }
as_user $bwrap_cmd || { echo "bench: bwrap fails here" >&2; exit 1; }

cd "$stage"
as_user hyperfine -N --warmup 50 --runs "$runs" --export-json "$stage/result.json" \
        --command-name sbx-launch "$sbx_cmd" --command-name bwrap "$bwrap_cmd" >&2

sbx_ms=$(jq '.results[0].mean * 1000' "$stage/result.json")
sbx_sd=$(jq '.results[0].stddev * 1000' "$stage/result.json")
bw_ms=$(jq '.results[1].mean * 1000' "$stage/result.json")
bw_sd=$(jq '.results[1].stddev * 1000' "$stage/result.json")
ratio=$(jq '.results[0].mean / .results[1].mean' "$stage/result.json")
printf 'sbx-launch: %.3f ms (sd %.3f)\n' "$sbx_ms" "$sbx_sd"
printf 'bwrap:      %.3f ms (sd %.3f)\n' "$bw_ms" "$bw_sd"
printf 'ratio sbx-launch/bwrap: %.3f\n' "$ratio"
