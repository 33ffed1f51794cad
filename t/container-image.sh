#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The node image for real. Builds it with contrib/container/build.sh from
# the .deb files in DEB_DIR, then
#   1. starts a node of the image's own configuration (without its
#      [cluster] section) with what contrib/kubernetes/worker.yaml allows a
#      worker: those capabilities and no other, the runtime's seccomp
#      filter and /proc masks, no_new_privs, a read-only root with
#      volumes on /var/lib/sbx, /run and /tmp; runs a job through it with
#      sbxctl, checks the front, the job's uid and cgroup, /healthz and
#      /readyz, and a clean stop on SIGTERM;
#   2. checks the image's configuration with its own daemon;
#   3. where a PostgreSQL server is installed here (and python3-yaml, to
#      read the ConfigMap): starts one on the podman network, and an api
#      node and a worker node with contrib/kubernetes/configmap.yaml's
#      api.conf and worker.conf, each with what its manifest allows, the
#      connection string mounted as the Secret would be; a job submitted
#      to the api node runs on the worker; sbxctl nodes and drain.
# Prints TAP; exits 77 (and a plan of 0 with the reason) where podman is
# missing or cannot run containers here.
#
#   t/container-image.sh DEB_DIR
#
# Needs root and podman. Environment: BASE (the base image; default
# debian:12 if present or pullable, else a Debian 12 root made with
# mmdebstrap and imported as localhost/sbx-debian:12, kept for the next
# run), SBX_DEBIAN_MIRROR (for mmdebstrap, default
# http://deb.debian.org/debian), BUILD_OPTS (to podman build, e.g.
# --no-cache), SBX_IMAGE_KEEP=1 (keep the built image).
set -uo pipefail

srcdir=${SBX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
# What worker.yaml adds (t/container.bats checks that the two agree).
caps=CHOWN,DAC_OVERRIDE,FOWNER,KILL,SETGID,SETUID,SETPCAP,SYS_ADMIN,SYS_PTRACE,NET_ADMIN,NET_BIND_SERVICE

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
diag() { sed 's/^/# /'; }
skip_all() {
        if [ "$n" -eq 0 ]; then
                echo "1..0 # SKIP $*"
        else
                n=$((n + 1))
                echo "ok $n - the rest # SKIP $*"
                echo "1..$n"
        fi
        exit 77
}
bail() {
        echo "1..$n"
        exit 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(date +%s)

[ $# -eq 1 ] || { echo "usage: $0 DEB_DIR" >&2; exit 2; }
debdir=$1
command -v podman >/dev/null || skip_all "podman is not installed (apt-get install podman)"
[ "$(id -u)" = 0 ] || skip_all "not root: a worker's container holds capabilities of the host's user namespace (rootful podman)"
ls "$debdir"/sbx-supervisor_*.deb >/dev/null 2>&1 || skip_all "no sbx-supervisor_*.deb in $debdir (dpkg-buildpackage -us -uc -b)"

work=$(mktemp -d /tmp/sbx-image-test.XXXXXX)
chmod 0755 "$work"
tag=localhost/sbx-supervisord:test-$$
names=()
cgdirs=()
pg_bin='' pg_user=''
cleanup() {
        local c
        for c in "${names[@]}"; do
                podman rm -f "$c" >/dev/null 2>&1
        done
        [ -n "${SBX_IMAGE_KEEP:-}" ] || podman rmi -f "$tag" >/dev/null 2>&1
        for c in "${cgdirs[@]}"; do
                # job cgroups the helper left, deepest first
                [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null
        done
        if [ -n "$pg_bin" ] && [ -f "$work/pg/data/postmaster.pid" ]; then
                setpriv --reuid="$pg_user" --regid="$(id -g "$pg_user")" --clear-groups -- \
                        "$pg_bin/pg_ctl" -D "$work/pg/data" -m fast -w stop >/dev/null 2>&1
        fi
        rm -rf "$work"
}
trap cleanup EXIT

# --- podman, and a base image ---------------------------------------------------
base=${BASE:-}
if [ -z "$base" ]; then
        for b in docker.io/library/debian:12 localhost/sbx-debian:12; do
                if podman image exists "$b"; then base=$b; break; fi
        done
fi
if [ -z "$base" ] && timeout 120 podman pull -q docker.io/library/debian:12 >"$work/pull.log" 2>&1; then
        base=docker.io/library/debian:12
fi
if [ -z "$base" ]; then
        command -v mmdebstrap >/dev/null ||
                skip_all "no debian:12 image, none can be pulled, and mmdebstrap is not installed to make one"
        s=$(date +%s)
        mirror=${SBX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
        if mmdebstrap --quiet --variant=minbase bookworm - "deb $mirror bookworm main" \
                "deb $mirror bookworm-updates main" "deb ${mirror%/debian}/debian-security bookworm-security main" \
                2>"$work/mmdebstrap.log" | podman import -q - localhost/sbx-debian:12 >/dev/null 2>>"$work/mmdebstrap.log"; then
                base=localhost/sbx-debian:12
                ok "base image localhost/sbx-debian:12 made with mmdebstrap in $(($(date +%s) - s)) s"
        else
                tail -n 20 "$work/mmdebstrap.log" | diag
                skip_all "no debian:12 image, none can be pulled, and mmdebstrap could not make one"
        fi
fi

# Can podman run a container here, as it is? A host may need another
# runtime (crun refuses hybrid cgroup hosts; runc does not) or lower
# rlimits than podman's defaults (without CAP_SYS_RESOURCE they cannot be
# raised past the caller's): a containers.conf of the test's own then.
if ! podman run --rm "$base" true >"$work/probe.log" 2>&1; then
        hn=$(ulimit -Hn) hu=$(ulimit -Hu) pm=$(cat /proc/sys/kernel/pid_max)
        [ "$hu" = unlimited ] && hu=$pm
        [ "$hu" -gt "$pm" ] && hu=$pm
        [ "$hn" = unlimited ] && hn=1048576
        {
                echo "[containers]"
                echo "default_ulimits = [\"nofile=$hn:$hn\", \"nproc=$hu:$hu\"]"
                if command -v runc >/dev/null; then
                        echo "[engine]"
                        echo "runtime = \"runc\""
                fi
        } >"$work/containers.conf"
        export CONTAINERS_CONF=$work/containers.conf
        if podman run --rm "$base" true >"$work/probe2.log" 2>&1; then
                ok "podman runs containers here with $(tr '\n' ' ' <"$work/containers.conf")"
        else
                diag <"$work/probe.log"
                diag <"$work/probe2.log"
                skip_all "podman cannot run containers here: $(tail -n 1 "$work/probe2.log")"
        fi
fi

# --- the image -------------------------------------------------------------------
s=$(date +%s)
if BASE=$base "$srcdir/contrib/container/build.sh" "$debdir" "$tag" >"$work/build.log" 2>&1; then
        ok "image $tag built from $base in $(($(date +%s) - s)) s" \
                "($(podman image inspect -f '{{.Size}}' "$tag" | awk '{ printf "%d MB", $1 / 1e6 }'))"
else
        not_ok "contrib/container/build.sh $debdir $tag"
        tail -n 40 "$work/build.log" | diag
        bail
fi
if podman run --rm --entrypoint sh "$tag" -c \
        'dpkg-query -W -f "\${Package}\n" | grep -Ex "gcc|gcc-[0-9]+|g\+\+.*|cpp|cpp-[0-9]+|clang.*|make|build-essential|.*-dev"; test $? = 1' \
        >"$work/dev.log" 2>&1; then
        ok "no compiler or -dev package in the image"
else
        not_ok "no compiler or -dev package in the image"
        diag <"$work/dev.log"
fi

# --- how a node is started -------------------------------------------------------
# The job cgroups: the container's own cgroup v2 tree on a cgroup v2 host
# (the entrypoint makes it usable); on a hybrid host, a directory of the
# host's cgroup2 mount bound where the configuration expects it.
cg2=
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
        cg2=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
        [ -n "$cg2" ] || skip_all "no cgroup v2 on this host: a worker's configuration needs job cgroups"
fi

# start_node NAME worker|api PODMAN-OPTION... -- NODE-ARG...: a node as its
# manifest runs it, its pod's emptyDir volumes directories of its own that
# anyone may write.
start_node() {
        local name=$1 kind=$2 opts=() v
        shift 2
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        names+=("$name")
        for v in data run tmp; do
                mkdir -p "$work/$name/$v"
        done
        chmod 0777 "$work/$name/data" "$work/$name/run"
        chmod 1777 "$work/$name/tmp"
        opts+=(--read-only --read-only-tmpfs=false -v "$work/$name/data:/var/lib/sbx" -v "$work/$name/run:/run"
                -v "$work/$name/tmp:/tmp" --security-opt no-new-privileges --cap-drop ALL --hostname "$name")
        if [ "$kind" = worker ]; then
                opts+=(--cap-add "$caps")
                if [ -n "$cg2" ]; then
                        cgdirs+=("$cg2/$name")
                        mkdir "$cg2/$name" || return 1
                        opts+=(-v "$cg2/$name:/sys/fs/cgroup/sbx")
                else
                        opts+=(--cgroupns=private)
                fi
        else
                opts+=(--user 999:999)
        fi
        podman run -d --name "$name" "${opts[@]}" "$tag" "$@" >"$work/$name.start" 2>&1
}

# wait_node NAME: it answers sbxctl ping (30 s at most)
wait_node() {
        local _
        for _ in $(seq 300); do
                podman exec "$1" sbxctl ping >/dev/null 2>&1 && return 0
                [ "$(podman inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ] || break
                sleep 0.1
        done
        local code
        code=$(podman inspect -f '{{.State.ExitCode}}' "$1" 2>/dev/null)
        echo "$1 exited with status $code$([ "$code" = 139 ] && echo ': the daemon was killed by SIGSEGV')" >&2
        podman logs "$1" 2>&1 | tail -n 30 >&2
        return 1
}

# --- 1. a node of the image's configuration, with a worker's privileges ---------
awk '/^\[/ { skip = ($0 ~ /^\[cluster\]/) } !skip' "$srcdir/contrib/container/sbx-supervisord.conf" >"$work/node.conf"
node=sbx-image-test-$$
s=$(now_ms)
if start_node "$node" worker -v "$work/node.conf:/etc/sbx/node.conf:ro" -p 127.0.0.1::8080 -- --config /etc/sbx/node.conf &&
        wait_node "$node" 2>"$work/wait.log"; then
        ok "a node answers sbxctl ping $(($(now_ms) - s)) ms after podman run"
else
        not_ok "a node answers sbxctl ping"
        diag <"$work/wait.log"
        bail
fi

# The front: user sbx, no capability, no_new_privs, its seccomp filter.
st=$(podman exec "$node" cat /proc/1/status)
if grep -Eq '^Uid:[[:space:]]+999[[:space:]]' <<<"$st" && grep -Eq '^CapEff:[[:space:]]+0+$' <<<"$st" &&
        grep -Eq '^CapBnd:[[:space:]]+0+$' <<<"$st" && grep -Eq '^NoNewPrivs:[[:space:]]+1$' <<<"$st" &&
        grep -Eq '^Seccomp:[[:space:]]+2$' <<<"$st"; then
        ok "the daemon's front is user sbx without capabilities, no_new_privs, seccomp"
else
        not_ok "the daemon's front is user sbx without capabilities, no_new_privs, seccomp"
        grep -E '^(Uid|Cap|NoNew|Seccomp)' <<<"$st" | diag
fi

s=$(now_ms)
out=$(podman exec "$node" sbxctl run -- echo hi 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = hi ]; then
        ok "sbxctl run -- echo hi: \"$out\" in $(($(now_ms) - s)) ms"
else
        not_ok "sbxctl run -- echo hi (exit $rc)"
        echo "$out" | diag
        podman logs "$node" 2>&1 | tail -n 20 | diag
fi

# In a sandbox: a uid of job_uids, no capability, a cgroup of its own.
id=$(podman exec "$node" sbxctl submit -- sh -c 'echo "$(id -u) $(grep ^CapEff /proc/self/status | tr -d "\t")"' 2>&1)
podman exec "$node" sbxctl wait "$id" >/dev/null 2>&1
out=$(podman exec "$node" sbxctl logs "$id" 2>&1)
if [[ $out =~ ^(18790[0-9]{5})\ CapEff:0+$ ]]; then
        ok "the job ran as job uid ${BASH_REMATCH[1]} without capabilities"
else
        not_ok "the job ran as a job uid without capabilities"
        echo "$out" | diag
fi
# (output kept, then searched: with pipefail, grep -q ending a pipe early
# fails the pipe)
rec=$(podman exec "$node" sbxctl result --json "$id" 2>&1)
if grep -q '"cgroup": true' <<<"$rec"; then
        ok "the job had a cgroup of its own"
else
        not_ok "the job had a cgroup of its own"
        head -n 20 <<<"$rec" | diag
fi

if command -v curl >/dev/null; then
        hp=$(podman port "$node" 8080/tcp | head -n 1)
        h=$(curl -s -o /dev/null -w '%{http_code}' "http://$hp/healthz")
        r=$(curl -s -o /dev/null -w '%{http_code}' "http://$hp/readyz")
        if [ "$h" = 200 ] && [ "$r" = 200 ]; then
                ok "GET /healthz and /readyz: 200 (the probes' answers)"
        else
                not_ok "GET /healthz and /readyz: $h and $r"
        fi
else
        ok "GET /healthz and /readyz # SKIP curl is not installed"
fi

# SIGTERM, as Kubernetes stops a pod: a clean stop.
podman stop -t 30 "$node" >/dev/null 2>&1
code=$(podman inspect -f '{{.State.ExitCode}}' "$node")
log=$(podman logs "$node" 2>&1)
if [ "$code" = 0 ] && grep -q 'stopped$' <<<"$log"; then
        ok "SIGTERM stops the node cleanly (exit 0)"
else
        not_ok "SIGTERM stops the node cleanly (exit $code)"
        tail -n 10 <<<"$log" | diag
fi
echo "# the node's log:"
diag <<<"$log"

# --- 2. the image's own configuration, by its own daemon -------------------------
mkdir "$work/secret"
echo "postgresql://sbx@db.invalid:5432/sbx" >"$work/secret/conninfo"
if out=$(podman run --rm --entrypoint sbx-supervisord -v "$work/secret:/run/secrets/sbx-db:ro" "$tag" --check-config 2>&1) &&
        [[ $out == *": OK ("* ]]; then
        ok "the image's sbx-supervisord.conf passes its daemon's --check-config: $out"
else
        not_ok "the image's sbx-supervisord.conf passes its daemon's --check-config"
        echo "$out" | diag
fi

# --- 3. an api node and a worker node sharing a PostgreSQL -----------------------
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
        pg_bin=
        ok "an api node and a worker node on one database # SKIP no PostgreSQL server here (apt-get install postgresql-15)"
elif ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
        pg_bin=
        ok "an api node and a worker node on one database # SKIP python3-yaml is not installed"
else
        pg_user=postgres
        id -u "$pg_user" >/dev/null 2>&1 || pg_user=nobody
        pg_as() { setpriv --reuid="$pg_user" --regid="$(id -g "$pg_user")" --clear-groups -- "$@"; }
        # The server listens where the containers reach it (the podman
        # network's gateway, host.containers.internal in a container) on a
        # port of its own, and lets in user sbx from that network only, by
        # password: the connection string is a secret's, as in Kubernetes.
        subnet=$(podman network inspect podman 2>/dev/null | sed -n 's/.*"subnet": "\(.*\)".*/\1/p' | head -n 1)
        port=$((20000 + $$ % 20000))
        pass=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        mkdir -p "$work/pg"
        echo "$pass" >"$work/pg/pw"
        chown -R "$pg_user" "$work/pg"
        if pg_as "$pg_bin/initdb" -D "$work/pg/data" -U sbx -E UTF8 --auth-local=trust --auth-host=scram-sha-256 \
                --pwfile="$work/pg/pw" >"$work/pg/initdb.log" 2>&1 &&
                echo "host all sbx ${subnet:-10.88.0.0/16} scram-sha-256" >>"$work/pg/data/pg_hba.conf" &&
                pg_as "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w -t 60 \
                        -o "-k $work/pg -c listen_addresses='*' -c port=$port" start >/dev/null 2>&1; then
                ok "PostgreSQL ($(basename "$(dirname "$pg_bin")")) on port $port for the cluster"
        else
                not_ok "PostgreSQL for the cluster"
                cat "$work/pg/initdb.log" "$work/pg/log" 2>/dev/null | tail -n 20 | diag
                bail
        fi
        # The Secret's file: root's, readable by group sbx (defaultMode
        # 0440, fsGroup 999); the ConfigMap's files at /etc/sbx.
        echo "postgresql://sbx:$pass@host.containers.internal:$port/postgres" >"$work/secret/conninfo"
        chown 0:999 "$work/secret/conninfo"
        chmod 0440 "$work/secret/conninfo"
        mkdir "$work/etc"
        /usr/bin/python3 "$srcdir/t/helpers/k8s-manifests.py" configs "$srcdir/contrib/kubernetes" "$work/etc" >/dev/null
        chmod -R a+rX "$work/etc"
        common=(-v "$work/etc:/etc/sbx:ro" -v "$work/secret:/run/secrets/sbx-db:ro")
        worker=sbx-worker-test-$$
        api=sbx-api-test-$$
        s=$(now_ms)
        if start_node "$worker" worker "${common[@]}" -- --config /etc/sbx/worker.conf &&
                start_node "$api" api "${common[@]}" -- --config /etc/sbx/api.conf &&
                wait_node "$worker" 2>"$work/wait.log" && wait_node "$api" 2>>"$work/wait.log"; then
                ok "an api node and a worker node (worker.conf, api.conf) answer $(($(now_ms) - s)) ms after podman run"
        else
                not_ok "an api node and a worker node start"
                diag <"$work/wait.log"
                bail
        fi
        # As the README's admin: sbxctl in the api pod, as user sbx.
        out=$(podman exec "$api" sbxctl nodes 2>&1)
        if grep -q "$api.*api" <<<"$out" && grep -q "$worker.*worker" <<<"$out"; then
                ok "sbxctl nodes on the api node lists both, with their roles"
        else
                not_ok "sbxctl nodes on the api node lists both, with their roles"
        fi
        echo "$out" | diag
        s=$(now_ms)
        out=$(podman exec "$api" sbxctl run -- sh -c 'echo hi from a worker' 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && [ "$out" = "hi from a worker" ]; then
                ok "a job run through the api node: \"$out\" in $(($(now_ms) - s)) ms"
        else
                not_ok "a job run through the api node (exit $rc)"
                echo "$out" | diag
        fi
        id=$(podman exec "$api" sbxctl submit -- true 2>&1)
        podman exec "$api" sbxctl wait "$id" >/dev/null 2>&1
        wlog=$(podman logs "$worker" 2>&1)
        alog=$(podman logs "$api" 2>&1)
        if grep -q "job $id .*succeeded" <<<"$wlog" && ! grep -q "job $id .*succeeded" <<<"$alog"; then
                ok "the worker ran it, not the api node"
        else
                not_ok "the worker ran it, not the api node"
                tail -n 5 <<<"$wlog" | diag
        fi
        out=$(podman exec "$worker" sbxctl run -- true 2>&1)
        if [[ $out == *E_UNSUPPORTED* ]]; then
                ok "the worker refuses a submission: $out"
        else
                not_ok "the worker refuses a submission"
                echo "$out" | diag
        fi
        # The README's drain, through the api node: a drained worker
        # claims nothing; undone, it does.
        podman exec "$api" sbxctl drain "$worker" >"$work/drain.log" 2>&1
        id=$(podman exec "$api" sbxctl submit -- echo drained 2>&1)
        sleep 2
        st1=$(podman exec "$api" sbxctl status "$id" 2>&1)
        podman exec "$api" sbxctl drain "$worker" --undo >>"$work/drain.log" 2>&1
        podman exec "$api" sbxctl wait "$id" >/dev/null 2>&1
        st2=$(podman exec "$api" sbxctl status "$id" 2>&1)
        if grep -q queued <<<"$st1" && grep -q succeeded <<<"$st2"; then
                ok "sbxctl drain: the job waits while the worker drains, and runs once it is undone"
        else
                not_ok "sbxctl drain: the job waits while the worker drains, and runs once it is undone"
                { cat "$work/drain.log"; echo "$st1"; echo "$st2"; } | diag
        fi
        for c in "$api" "$worker"; do
                podman stop -t 30 "$c" >/dev/null 2>&1
        done
        if [ "$(podman inspect -f '{{.State.ExitCode}}' "$api")" = 0 ] &&
                [ "$(podman inspect -f '{{.State.ExitCode}}' "$worker")" = 0 ]; then
                ok "SIGTERM stops both cleanly"
        else
                not_ok "SIGTERM stops both cleanly"
        fi
        echo "# the worker's log:"
        podman logs "$worker" 2>&1 | diag
        echo "# the api node's log:"
        podman logs "$api" 2>&1 | diag
fi

echo "# $(($(date +%s) - t0)) s in all"
echo "1..$n"
[ "$failed" -eq 0 ]
