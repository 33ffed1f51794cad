#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What Python and npm packages cost a job (sbx-supervisord(8)
# DEPENDENCIES), through a real sbx-supervisord as root: five small wheels
# built here offline, served by a PEP 503 index (t/helpers/pip-index.py),
# and five small npm tarballs served by an npm registry
# (t/helpers/npm-registry.py), on a test host in a network namespace of
# its own.
#   first    a job pinning the five, whose layer is not made yet: it waits
#            for the install job (pip in its sandbox) and then runs
#            (ROUNDS times, each with another version of one package, so
#            each is a new layer)
#   cached   the same pins again: the layer is at hand
#   none     the same job without packages
# "cached" and "none" run `python3 -c pass` (what the layer's mount and
# PYTHONPATH cost) and, as "cached-import", the import of the five;
# the same for npm ("npm-first", "npm-cached" and "node-none" run
# `node -e 0` and `true`, "npm-cached-require" requires the five); hyperfine,
# alternating rounds.
# Usage: bench/deps.sh [ROUNDS]       (as root, after make)
set -eu

rounds=${1:-3}
command -v hyperfine >/dev/null || { echo "bench: needs hyperfine" >&2; exit 77; }
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || { echo "bench: needs pip (python3-pip)" >&2; exit 77; }
. "$(dirname "$0")/testhost.sh"

bench_setup deps
mkdir -p "$stage/wheels"
# wheel NAME VERSION
wheel() {
        local src=$stage/src/$1-$2
        mkdir -p "$src/$1"
        printf 'VALUE = "%s %s"\n' "$1" "$2" > "$src/$1/__init__.py"
        printf 'from setuptools import setup\nsetup(name="%s", version="%s", packages=["%s"])\n' "$1" "$2" "$1" > "$src/setup.py"
        (cd "$src" && /usr/bin/python3 -m pip wheel -q --no-deps --no-build-isolation --no-index -w "$stage/wheels" . >/dev/null 2>&1)
}
for p in benchb benchc benchd benche; do wheel "$p" 1.0; done
for r in $(seq 0 "$rounds"); do wheel bencha "1.$r"; done
npm_ok=0
if command -v npm >/dev/null && command -v node >/dev/null; then
        npm_ok=1
        mkdir -p "$stage/registry"
        # tgz NAME VERSION
        tgz() {
                local src=$stage/src/npm-$1-$2
                mkdir -p "$src/package"
                printf '{"name": "%s", "version": "%s", "main": "index.js"}\n' "$1" "$2" > "$src/package/package.json"
                printf 'module.exports = "%s %s";\n' "$1" "$2" > "$src/package/index.js"
                tar -C "$src" -czf "$stage/registry/$1-$2.tgz" package
        }
        for p in nbenchb nbenchc nbenchd nbenche; do tgz "$p" 1.0.0; done
        for r in $(seq 0 "$rounds"); do tgz nbencha "1.0.$r"; done
        bench_bg "$stage/registry.out" /usr/bin/python3 "$top/t/helpers/npm-registry.py" "$stage/registry" "$th.1" 8081 \
                "$stage/registry.log" "$th.2:8081"
fi
bench_bg "$stage/index.out" /usr/bin/python3 "$top/t/helpers/pip-index.py" "$stage/wheels" "$th.1" 8080 "$stage/index.log" "$th.2:8080"
cat > "$stage/sup.conf" <<EOC

[tenant.bench]
uids = root
pip_index = http://$th.1:8080/simple/
pip_allow = bench*
npm_registry = http://$th.1:8081/
npm_allow = nbench*
EOC
bench_daemon

echo "machine:      $(nproc) CPUs, kernel $(uname -r)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"

pins() { printf -- '--pip bencha==1.%s --pip benchb==1.0 --pip benchc==1.0 --pip benchd==1.0 --pip benche==1.0' "$1"; }
imp='import bencha, benchb, benchc, benchd, benche'
# first: the job's submission to its end, the install in it
for r in $(seq 1 "$rounds"); do
        t0=$(date +%s%N)
        ctl run $(pins "$r") -- python3 -c "$imp" > /dev/null
        t1=$(date +%s%N)
        echo "first $(( (t1 - t0) / 1000000 ))" >> "$stage/first"
done
ctl run $(pins 0) -- true > /dev/null   # the layer the cached runs use
for r in $(seq 1 "$rounds"); do
        # the order turned round every other round (hyperfine runs one
        # command's runs, then the next's)
        cmds=(-n none "$stage/bin/sbxctl --socket $stage/sock run -- python3 -c pass"
              -n none-true "$stage/bin/sbxctl --socket $stage/sock run -- true"
              -n cached-true "$stage/bin/sbxctl --socket $stage/sock run $(pins 0) -- true"
              -n cached "$stage/bin/sbxctl --socket $stage/sock run $(pins 0) -- python3 -c pass"
              -n cached-import "$stage/bin/sbxctl --socket $stage/sock run $(pins 0) -- python3 -c '$imp'")
        if [ $((r % 2)) = 0 ]; then
                cmds=("${cmds[@]:12:3}" "${cmds[@]:9:3}" "${cmds[@]:6:3}" "${cmds[@]:3:3}" "${cmds[@]:0:3}")
        fi
        hyperfine -N --warmup 3 --runs 30 --export-json "$stage/h$r.json" "${cmds[@]}" > /dev/null
done
npins() { printf -- '--npm nbencha@1.0.%s --npm nbenchb@1.0.0 --npm nbenchc@1.0.0 --npm nbenchd@1.0.0 --npm nbenche@1.0.0' "$1"; }
req='for (const p of ["nbencha", "nbenchb", "nbenchc", "nbenchd", "nbenche"]) require(p)'
if [ "$npm_ok" = 1 ]; then
        for r in $(seq 1 "$rounds"); do
                t0=$(date +%s%N)
                ctl run $(npins "$r") -- node -e "$req" > /dev/null
                t1=$(date +%s%N)
                echo "npm-first $(( (t1 - t0) / 1000000 ))" >> "$stage/first"
        done
        ctl run $(npins 0) -- true > /dev/null
        for r in $(seq 1 "$rounds"); do
                cmds=(-n node-none "$stage/bin/sbxctl --socket $stage/sock run -- node -e 0"
                      -n npm-none-true "$stage/bin/sbxctl --socket $stage/sock run -- true"
                      -n npm-cached-true "$stage/bin/sbxctl --socket $stage/sock run $(npins 0) -- true"
                      -n npm-cached "$stage/bin/sbxctl --socket $stage/sock run $(npins 0) -- node -e 0"
                      -n npm-cached-require "$stage/bin/sbxctl --socket $stage/sock run $(npins 0) -- node -e '$req'")
                if [ $((r % 2)) = 0 ]; then
                        cmds=("${cmds[@]:12:3}" "${cmds[@]:9:3}" "${cmds[@]:6:3}" "${cmds[@]:3:3}" "${cmds[@]:0:3}")
                fi
                hyperfine -N --warmup 3 --runs 20 --export-json "$stage/n$r.json" "${cmds[@]}" > /dev/null
        done
fi
awk '{ print "first run (install and job),", $1 ":", $2, "ms" }' "$stage/first"
/usr/bin/python3 - "$stage" "$rounds" <<'EOF'
import json, statistics, sys
stage, rounds = sys.argv[1], int(sys.argv[2])
med = {}
import os
for r in range(1, rounds + 1):
    for f in (f"{stage}/h{r}.json", f"{stage}/n{r}.json"):
        if not os.path.exists(f):
            continue
        for res in json.load(open(f))["results"]:
            med.setdefault(res["command"], []).append(res["median"] * 1000)
for k, v in med.items():
    print(f"{k:14s} median per round: " + ", ".join(f"{x:.2f}" for x in v) + " ms")
d = [c - n for c, n in zip(med["cached"], med["none"])]
print("cached - none:  " + ", ".join(f"{x:+.2f}" for x in d) + " ms")
d = [c - n for c, n in zip(med["cached-true"], med["none-true"])]
print("the same, true: " + ", ".join(f"{x:+.2f}" for x in d) + " ms")
if "npm-cached" in med:
    d = [c - n for c, n in zip(med["npm-cached"], med["node-none"])]
    print("npm-cached - node-none: " + ", ".join(f"{x:+.2f}" for x in d) + " ms")
    d = [c - n for c, n in zip(med["npm-cached-true"], med["npm-none-true"])]
    print("the same, true:         " + ", ".join(f"{x:+.2f}" for x in d) + " ms")
EOF
