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
# The same without the seccomp filter and Landlock, to show what the core
# launcher costs apart from those (bwrap here applies neither).
core_cmd="$stage/sbx-launch --set security.seccomp=none --set security.landlock=off -- /bin/true"

# Both must work before they are timed.
as_user $sbx_cmd || { echo "bench: sbx-launch fails here" >&2; exit 1; }
as_user $bwrap_cmd || { echo "bench: bwrap fails here" >&2; exit 1; }

cd "$stage"
# Load from other work on the machine drifts over seconds; timing the two
# in alternating short rounds keeps the drift from favouring either.
rounds=10
per_round=$(( (runs + rounds - 1) / rounds ))
i=0
while [ "$i" -lt "$rounds" ]; do
        as_user hyperfine -N --warmup 20 --runs "$per_round" --export-json "$stage/round-$i.json" \
                --command-name sbx-launch "$sbx_cmd" --command-name bwrap "$bwrap_cmd" \
                --command-name sbx-launch-core "$core_cmd" >/dev/null 2>&1
        i=$((i + 1))
done

# Pool every timing of every round per command.
jq -s '
  def stats(k): [.[].results[k].times[]] as $t | ($t | add / length) as $m |
    {mean: ($m * 1000), sd: (($t | map(. - $m | . * .) | add / length | sqrt) * 1000), n: ($t | length)};
  def ratios: [.[] | .results[0].mean / .results[1].mean];
  {sbx: stats(0), bwrap: stats(1), core: stats(2), ratios: ratios}' "$stage"/round-*.json > "$stage/summary.json"

sbx_ms=$(jq '.sbx.mean' "$stage/summary.json")
sbx_sd=$(jq '.sbx.sd' "$stage/summary.json")
bw_ms=$(jq '.bwrap.mean' "$stage/summary.json")
bw_sd=$(jq '.bwrap.sd' "$stage/summary.json")
n=$(jq '.sbx.n' "$stage/summary.json")
ratio=$(jq '.sbx.mean / .bwrap.mean' "$stage/summary.json")
lo=$(jq '.ratios | min' "$stage/summary.json")
hi=$(jq '.ratios | max' "$stage/summary.json")
printf 'runs: %d each, in %d alternating rounds\n' "$n" "$rounds"
printf 'sbx-launch: %.3f ms (sd %.3f)\n' "$sbx_ms" "$sbx_sd"
printf 'bwrap:      %.3f ms (sd %.3f)\n' "$bw_ms" "$bw_sd"
printf 'ratio sbx-launch/bwrap: %.3f (per round %.3f to %.3f)\n' "$ratio" "$lo" "$hi"
printf 'sbx-launch without seccomp and Landlock: %.3f ms (sd %.3f), ratio to bwrap %.3f\n' \
        "$(jq '.core.mean' "$stage/summary.json")" "$(jq '.core.sd' "$stage/summary.json")" \
        "$(jq '.core.mean / .bwrap.mean' "$stage/summary.json")"
