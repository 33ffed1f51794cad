#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What bundles cost, with hyperfine, through a private sbx-supervisord and
# a registry served over HTTP on 127.0.0.1 (t/helpers/registry-server.py):
#
#   - warm (cache hit): `sbxctl run --bundle tiny` (manifest: /bin/true
#     under the default profile; tree cached, index fresh) against the
#     same command inline, `sbxctl run -- /bin/true`; the difference of
#     their p50 and p95 is what a bundle adds to a job's start (target:
#     at most 0.3 ms);
#   - cold (cache miss): fetching, verifying and unpacking a 50 MB bundle
#     (`sbxctl bundle show big`, with the cache emptied and the index
#     asked for again before each run) against the shell pipeline a user
#     would write for the same work (fetch the index and its signature,
#     `minisign -V`, then `curl | tee >(sha256sum) | tar -xz` and compare
#     the digest with the index); the ratio daemon/pipeline (target: at
#     most 1.0). The daemon also syncs the tree to disk before it renames
#     it into the cache; the pipeline followed by `sync -f` is timed too;
#   - the result record's time_us of a few cold `sbxctl run --bundle big`
#     (resolve, download, verify, extract).
#
# The two sides of each comparison alternate in rounds and their timings
# are pooled: the machine's speed drifts over seconds.
#
# Usage: bench/bundle.sh [WARM_RUNS] [COLD_RUNS]   (run as root, after make;
#        defaults 500 and 20). Exits 77 without hyperfine, jq, minisign,
#        curl or python3.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
warm_runs=${1:-500}
cold_runs=${2:-20}
rounds=5

[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as nobody)" >&2; exit 77; }
for tool in hyperfine jq minisign curl python3; do
        command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is not installed (apt-get install $tool)" >&2; exit 77; }
done
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbx-unpack supervisor/sbxctl supervisor/sbx-bundle; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (run make)" >&2; exit 1; }
done

stage=$(mktemp -d /tmp/sbx-bench-bundle.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles" "$stage/reg" "$stage/keys" "$stage/src/tiny" "$stage/src/big"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/supervisor/sbx-unpack" "$top/supervisor/sbxctl" "$top/supervisor/sbx-bundle" \
        "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
pid=
http=
cleanup() {
        [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
        [ -z "$http" ] || { kill "$http" 2>/dev/null || true; wait "$http" 2>/dev/null || true; }
        rm -rf "$stage"
}
trap cleanup EXIT INT TERM

# Two bundles: tiny runs /bin/true; big carries 50 MB that does not
# compress (five 10 MB files of random bytes).
manifest() {
        printf '[bundle]\nname = %s\nversion = 1.0.0\n[run]\ncommand = /bin/true\nprofile = default\n' "$1" \
                > "$stage/src/$1/manifest.ini"
}
manifest tiny
manifest big
for i in 1 2 3 4 5; do
        head -c 10485760 /dev/urandom > "$stage/src/big/data$i"
done
minisign -G -W -p "$stage/keys/key.pub" -s "$stage/keys/key.sec" >/dev/null
(cd "$stage" && for b in tiny big; do "$stage/bin/sbx-bundle" pack "src/$b" >/dev/null; done)
"$stage/bin/sbx-bundle" index "$stage/reg" "$stage/tiny-1.0.0.tar.gz" "$stage/big-1.0.0.tar.gz" >/dev/null
for b in tiny big; do
        minisign -S -s "$stage/keys/key.sec" -m "$stage/reg/$b/index.json" -t "serial=1 name=$b" >/dev/null
done
big_bytes=$(stat -c %s "$stage/reg/big/big-1.0.0.tar.gz")

: > "$stage/http.log"
python3 "$top/t/helpers/registry-server.py" "$stage/reg" "$stage/http.log" "$stage/http.port" &
http=$!
for _ in $(seq 100); do [ -s "$stage/http.port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$stage/http.port")"

cat > "$stage/sup.conf" <<EOC
[daemon]
socket = $stage/sock
state_dir = $stage/state
launcher = $stage/bin/sbx-launch
profile_path = $stage/profiles
cgroup = none
cache_size = 1G
socket_mode = 0666

[registry.warm]
url = $url
keys = $stage/keys/key.pub
index_ttl = 1h

[registry.cold]
url = $url
keys = $stage/keys/key.pub
index_ttl = 0

[tenant.warm]
uids = root
registry = warm

[tenant.cold]
uids = nobody
registry = cold
EOC
"$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>"$stage/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$stage/sock" ] && break; sleep 0.05; done
ctl="$stage/bin/sbxctl --socket $stage/sock"
# The cold side's requests come from another uid, so that its tenant's
# registry asks for the index every time.
as_nobody="setpriv --reuid=nobody --regid=nogroup --clear-groups --"
$ctl run --bundle tiny >/dev/null || { echo "bench: the tiny bundle does not run:" >&2; cat "$stage/daemon.log" >&2; exit 1; }
$ctl run -- /bin/true >/dev/null

echo "machine:      $(nproc) CPUs, kernel $(uname -r), hyperfine $(hyperfine --version | cut -d' ' -f2)"
echo "state dir:    $stage/state ($(stat -f -c %T "$stage") file system), job cgroups off"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"

pool() { # FILE... -> p50, p95 and mean of each command, in ms
        jq -s '
          def q(p): sort as $s | $s[((($s | length) - 1) * p | floor)];
          def st(k): [.[].results[k].times[]] | map(. * 1000) as $t |
            {n: ($t | length), p50: ($t | q(0.5)), p95: ($t | q(0.95)), mean: ($t | add / length)};
          {a: st(0), b: st(1), c: (if (.[0].results | length) > 2 then st(2) else null end)}' "$@"
}

echo "--- warm: bundle (cache hit) vs the same command inline, $warm_runs runs each in $rounds alternating rounds"
per=$(( (warm_runs + rounds - 1) / rounds ))
for r in $(seq "$rounds"); do
        hyperfine -N --warmup 10 --runs "$per" --export-json "$stage/warm-$r.json" \
                --command-name bundle "$ctl run --bundle tiny" \
                --command-name inline "$ctl run -- /bin/true" >/dev/null 2>&1
done
requests_before=$(wc -l < "$stage/http.log")
pool "$stage"/warm-*.json > "$stage/warm.json"
jq -r '"bundle: p50 \(.a.p50 * 1000 | round / 1000) ms, p95 \(.a.p95 * 1000 | round / 1000) ms, mean \(.a.mean * 1000 | round / 1000) ms (n \(.a.n))",
       "inline: p50 \(.b.p50 * 1000 | round / 1000) ms, p95 \(.b.p95 * 1000 | round / 1000) ms, mean \(.b.mean * 1000 | round / 1000) ms (n \(.b.n))",
       "added by the bundle: p50 \((.a.p50 - .b.p50) * 1000 | round / 1000) ms, p95 \((.a.p95 - .b.p95) * 1000 | round / 1000) ms"' \
        "$stage/warm.json"
echo "registry requests during the warm runs: $(($(wc -l < "$stage/http.log") - requests_before))"

echo "--- cold: fetch, verify and unpack a $big_bytes-byte bundle, $cold_runs runs each in $rounds alternating rounds"
pipe="$stage/pipe"
pipeline="curl -sf $url/big/index.json -o $pipe/index.json \
&& curl -sf $url/big/index.json.minisig -o $pipe/index.json.minisig \
&& minisign -Vq -p $stage/keys/key.pub -m $pipe/index.json \
&& curl -sf $url/big/big-1.0.0.tar.gz | tee >(sha256sum > $pipe/sum) | tar -xz -C $pipe/tree && wait \
&& grep -qF \"\$(cut -c1-64 $pipe/sum)\" $pipe/index.json"
# Each run starts from nothing: the daemon's cache emptied (and the trees
# it removes gone from the disk), the pipeline's directory fresh.
gc="$as_nobody $ctl cache gc --all"
fresh="rm -rf $pipe && mkdir -p $pipe/tree"
per=$(( (cold_runs + rounds - 1) / rounds ))
for r in $(seq "$rounds"); do
        hyperfine -N --runs "$per" --export-json "$stage/cold-$r.json" \
                --prepare "sh -c '$gc >/dev/null && sleep 0.5 && sync'" --command-name daemon "$as_nobody $ctl bundle show big" \
                --prepare "sh -c '$fresh && sync'" --command-name pipeline "bash -c '$pipeline'" \
                --prepare "sh -c '$fresh && sync'" --command-name "pipeline+sync" "bash -c '$pipeline && sync -f $pipe'" \
                >/dev/null 2>&1 || { echo "bench: a cold run failed" >&2; exit 1; }
done
pool "$stage"/cold-*.json > "$stage/cold.json"
jq -r '"daemon (bundle show):       p50 \(.a.p50 | round) ms, p95 \(.a.p95 | round) ms, mean \(.a.mean | round) ms (n \(.a.n))",
       "pipeline:                   p50 \(.b.p50 | round) ms, p95 \(.b.p95 | round) ms, mean \(.b.mean | round) ms",
       "pipeline, then sync -f:     p50 \(.c.p50 | round) ms, p95 \(.c.p95 | round) ms, mean \(.c.mean | round) ms",
       "ratio daemon/pipeline (p50): \(.a.p50 / .b.p50 * 1000 | round / 1000); to the synced pipeline: \(.a.p50 / .c.p50 * 1000 | round / 1000)"' \
        "$stage/cold.json"

echo "--- cold runs through a job (sbxctl run --bundle big): the record's time_us"
for i in 1 2 3; do
        $as_nobody $ctl cache gc --all >/dev/null
        sleep 0.5
        sync
        $as_nobody $ctl --json run --bundle big | jq -r 'select(.event == "end") | .result.bundle |
                "source \(.source): resolve \(.time_us.resolve / 1000 | round) ms, download \(.time_us.download / 1000 | round) ms, verify \(.time_us.verify / 1000 | round) ms, extract \(.time_us.extract / 1000 | round) ms"'
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
