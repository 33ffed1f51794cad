#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sbx-init(8) in a live sandbox against one sandbox per command:
#
#  1. start: fork and exec of sbx-init (outside any sandbox) to its READY
#     event, as measured by the test client (the agent's own start-up);
#  2. spawn of `true` through the test client (t/helpers/init-client) in
#     one live sandbox: request to reply (the command has exec'd), and
#     request to its EXIT event (the round trip);
#  3. a one-shot `sbx-launch -- /bin/true` with the same default profile,
#     timed by hyperfine;
#  4. the machine's floor: /bin/true without any sandbox, by hyperfine.
# and sbx-init's own peak resident set. min, p50, p95 and p99 of each, as the unprivileged user nobody (or yourself
# when not root).
#
# Usage: bench/init.sh [RUNS]   (default 1000)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-1000}
for tool in hyperfine jq; do
        command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is not installed (apt-get install $tool)" >&2; exit 77; }
done
for f in launcher/sbx-launch init/sbx-init t/helpers/init-client; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (run make and make check)" >&2; exit 1; }
done

stage=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'rm -rf "$stage"' EXIT INT TERM
cp "$top/launcher/sbx-launch" "$top/init/sbx-init" "$top/t/helpers/init-client" "$stage/"
chmod 0755 "$stage" "$stage"/*
if [ "$(id -u)" = 0 ]; then
        chown nobody "$stage"
        as_user() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
else
        as_user() { "$@"; }
fi
cd "$stage"

pct() { # pct FILE: p50 p95 p99 of the numbers in FILE, one a line
        sort -n "$1" | awk '{ v[NR] = $1 } END { printf "min %d  p50 %d  p95 %d  p99 %d\n", v[1], v[int(NR * 0.50) + 1], v[int(NR * 0.95) + 1], v[int(NR * 0.99) + 1] }'
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

starts=$(( runs / 5 ))
i=0
: > start.txt
while [ "$i" -lt "$starts" ]; do
        as_user ./init-client -- ./sbx-init --workspace "$stage" </dev/null |
                sed -n 's/^ready pid=.* start_us=//p' >> start.txt
        i=$((i + 1))
done
echo "sbx-init start, fork to READY, no sandbox ($starts runs), us: $(pct start.txt)"

echo "bench $runs" | as_user ./init-client --timeout 10000 -- ./sbx-launch --pass-fd 3 --ro-bind "$stage" /sbx \
        --tmpfs /work -- /sbx/sbx-init --workspace /work > spawn.txt
set -- $(sed -n 's/^bench n=[0-9]* spawn_us p50=\([0-9]*\) p95=\([0-9]*\) p99=\([0-9]*\) roundtrip_us p50=\([0-9]*\) p95=\([0-9]*\) p99=\([0-9]*\)$/\1 \2 \3 \4 \5 \6/p' spawn.txt)
[ $# -eq 6 ] || { echo "bench: the test client said: $(cat spawn.txt)" >&2; exit 1; }
echo "spawn of true in a live sandbox, request to reply ($runs runs), us: p50 $1  p95 $2  p99 $3"
echo "spawn of true in a live sandbox, request to EXIT ($runs runs), us: p50 $4  p95 $5  p99 $6"

echo "run -- sh -c 'grep VmHWM /proc/2/status'" | as_user ./init-client -- ./sbx-launch --pass-fd 3 --ro-bind "$stage" /sbx \
        --tmpfs /work -- /sbx/sbx-init --workspace /work > rss.txt
echo "sbx-init peak RSS after one spawn: $(sed -n 's/^VmHWM:[[:space:]]*//p' rss.txt)"

as_user hyperfine -N --warmup 20 --runs "$runs" --export-json oneshot.json "./sbx-launch -- /bin/true" >/dev/null
jq -r '.results[0].times[] * 1000000 | floor' oneshot.json > oneshot.txt
echo "one-shot sbx-launch -- /bin/true ($runs runs), us: $(pct oneshot.txt)"

# The machine's own floor: a bare fork and exec of /bin/true, no sandbox.
as_user hyperfine -N --warmup 20 --runs "$runs" --export-json host.json "/bin/true" >/dev/null
jq -r '.results[0].times[] * 1000000 | floor' host.json > host.txt
echo "host: /bin/true, no sandbox ($runs runs), us: $(pct host.txt)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
