#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs inside the Debian 12 guest of t/system/run.sh, as root, from the
# payload disk (/mnt/payload: debs/, readme-sample.sh): installs the
# packages and checks sbx as an administrator and an ordinary user would.
# One TAP line per check on standard output; what a failed check saw
# follows it as # lines. Waits poll for events (never a fixed sleep that
# must be long enough): the guest may run under TCG on a loaded host.
set -uo pipefail
export LC_ALL=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
payload=/mnt/payload
log=$(mktemp)
n=0
# The job cgroups are sbx-privd's: its unit's cgroup, delegated to it.
cg_service=/sys/fs/cgroup/system.slice/sbx-privd.service

echo "# virtualization: $(systemd-detect-virt)"
echo "# kernel: $(uname -r); cgroup controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"

# check DESCRIPTION COMMAND...: ok when COMMAND succeeds; its output is shown
# when it does not.
check() {
        local desc=$1
        shift
        n=$((n + 1))
        if "$@" >"$log" 2>&1; then
                echo "ok $n - $desc"
        else
                echo "not ok $n - $desc"
                tail -n 30 "$log" | sed 's/^/# /'
        fi
}
# A check that needs what the guest lacks.
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# What a check says about itself, shown with its output on failure.
say() { echo "$*"; }
# A figure worth seeing whatever the outcome: a TAP comment at once.
exec 3>&1
note() { echo "# $*" >&3; }

# wait_for SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
        local until=$(($(date +%s) + $1))
        shift
        until "$@" >/dev/null 2>&1; do
                [ "$(date +%s)" -lt "$until" ] || return 1
                sleep 0.2
        done
}

# The ordinary user, in the group the socket and the tenant are for.
as_user() { (cd /home/alice && setpriv --reuid=alice --regid=alice --init-groups -- env HOME=/home/alice "$@"); }
sbxctl_u() { as_user sbxctl "$@"; }
# A job's record (waits for its end), and one field of it.
record() { sbxctl_u wait --json "$1" 2>/dev/null; }
state_of() { sbxctl_u status "$1" 2>/dev/null | head -n 1; }
running() { sbxctl_u status "$1" 2>/dev/null | grep -qw running; }
# A running job's cgroup: sbx-privd names them job-p<slot>-<gen>, not
# by the job's id; the checks that look run one job at a time.
job_cg() {
        wait_for 60 running "$1" || return 1
        ls -td "$cg_service"/job-p* 2>/dev/null | head -n 1
}

# --- installing ---------------------------------------------------------------
install_debs() {
        dpkg -i "$payload"/debs/*.deb
}
check "the packages install (dpkg -i sbx-launch sbx-supervisor sbx-bundle)" install_debs

installed_state() {
        getent group sbx && getent passwd sbx && getent passwd sbx-job &&
                [ "$(stat -c %U:%a /var/lib/sbx)" = sbx:711 ] && [ "$(stat -c %U:%a /var/lib/sbx-privd)" = root:711 ] &&
                [ -d /run/sbx ] && [ -d /var/log/sbx ] &&
                for u in sbx-supervisord sbx-privd; do
                        [ "$(systemctl is-enabled $u.socket)" = enabled ] && [ "$(systemctl is-active $u.socket)" = active ] &&
                                ! systemctl is-active $u.service || return 1
                done &&
                [ "$(stat -c %U:%G:%a /run/sbx-privd.sock)" = root:sbx:660 ] &&
                dpkg-query -W -f='${Conffiles}\n' sbx-supervisor | grep -q ' /etc/sbx/sbx-supervisord.conf '
}
check "installing made the group and user sbx, the user sbx-job and the state directories, enabled and started both sockets (not the daemon nor its helper), and the configuration is a conffile" installed_state

# The administrator's part: a tenant for the group sbx, a user in it.
setup_tenant() {
        cat >>/etc/sbx/sbx-supervisord.conf <<'EOF'

[tenant.users]
gids = sbx
profiles = default shell python node
EOF
        useradd -m -G sbx alice && systemctl start sbx-supervisord.socket
}
check "a tenant for the group sbx, a user alice in it, systemctl start sbx-supervisord.socket" setup_tenant

first_job() {
        out=$(sbxctl_u run -- echo hello from a job) && say "$out" && [ "$out" = "hello from a job" ] &&
                wait_for 30 systemctl is-active sbx-supervisord.service && systemctl is-active sbx-privd.service
}
check "alice's sbxctl run starts the daemon and its helper through the sockets and gets the job's output" first_job

# --- the daemon under systemd -----------------------------------------------------
status_is() { # PID FIELD VALUE
        grep -qE "^$2:[[:space:]]+$3\$" "/proc/$1/status"
}
front_as_unit_says() {
        local pid uid
        pid=$(systemctl show -p MainPID --value sbx-supervisord.service)
        uid=$(id -u sbx)
        say "MainPID $pid"
        grep -E '^(Uid|NoNewPrivs|Seccomp|Cap...):' "/proc/$pid/status"
        status_is "$pid" Uid "$uid[[:space:]]+$uid[[:space:]]+$uid[[:space:]]+$uid" &&
                for c in CapEff CapPrm CapInh CapBnd CapAmb; do status_is "$pid" $c 0000000000000000 || return 1; done &&
                status_is "$pid" NoNewPrivs 1 && status_is "$pid" Seccomp 2
}
check "the front runs as the unit says: user sbx, no capability in any set, no new privileges, its syscall filter" front_as_unit_says

helper_as_unit_says() {
        local pid
        pid=$(systemctl show -p MainPID --value sbx-privd.service)
        say "MainPID $pid"
        grep -E '^(Uid|NoNewPrivs|Seccomp|CapBnd):' "/proc/$pid/status"
        cat "/proc/$pid/cgroup"
        [ "$(systemctl show -p Delegate --value sbx-privd.service)" = yes ] &&
                grep -q "^0::/system.slice/sbx-privd.service/sbx-privd$" "/proc/$pid/cgroup" &&
                grep -qE '^Uid:\s+0\s' "/proc/$pid/status" &&
                status_is "$pid" NoNewPrivs 1 && status_is "$pid" Seccomp 2 &&
                for c in memory pids cpu; do
                        grep -qw $c "$cg_service/cgroup.controllers" && grep -qw $c "$cg_service/cgroup.subtree_control" || return 1
                done
}
check "sbx-privd runs as its unit says (root, no new privileges, its syscall filter) in the cgroup systemd delegated to it, moved to its leaf, with memory, pids and cpu enabled for its jobs" helper_as_unit_says

journal_has_logs() {
        journalctl -b -u sbx-supervisord.service -u sbx-privd.service --no-pager | tail -n 20
        journalctl -b -u sbx-supervisord.service --no-pager | grep -q "ready on /run/sbx/sbx-supervisord.sock" &&
                journalctl -b -u sbx-supervisord.service --no-pager |
                grep -q "job cgroups: sbx-privd's; controllers: memory yes, pids yes, cpu yes" &&
                journalctl -b -u sbx-privd.service --no-pager | grep -q "moved into $cg_service/sbx-privd" &&
                journalctl -b -u sbx-privd.service --no-pager | grep -q "front connected: pid [0-9]* uid $(id -u sbx)"
}
check "journald holds the daemon's and its helper's logs (ready, the helper's delegated job cgroups, the front connected)" journal_has_logs

# --- limits by the job cgroup ---------------------------------------------------------
oom_job() {
        local id r
        id=$(sbxctl_u submit --memory 64M --timeout 120s -- python3 -c 'b = bytearray(400 << 20); print(len(b))') || return 1
        r=$(record "$id")
        say "$r" | jq -c '{state, error, limits: .limits.memory, limit_hit, peak_rss_kb}'
        [ "$(jq -r .state <<<"$r")" = oom ] && [ "$(jq -r .error.code <<<"$r")" = E_OOM ] &&
                [ "$(jq -r .limits.memory.by <<<"$r")" = cgroup ] &&
                jq -e '.limit_hit.limit == "memory" and .limit_hit.by == "cgroup" and .limit_hit.value == 67108864 and .limit_hit.memory_events.oom_kill >= 1' <<<"$r" >/dev/null
}
check "a job over memory.max (64M, touching 400M) ends oom with E_OOM, and limit_hit names memory.max with the cgroup's memory.events" oom_job

fork_bomb() {
        local id cg max=0 cur
        id=$(sbxctl_u submit --processes 32 --timeout 300s -- sh -c 'b() { b | b & }; b; sleep 300') || return 1
        cg=$(job_cg "$id")
        # until the bomb has hit pids.max
        wait_for 120 sh -c "grep -q '^max [1-9]' $cg/pids.events" || { say "pids.events never counted a refusal"; cat "$cg/pids.events"; return 1; }
        for _ in 1 2 3 4 5 6 7 8 9 10; do
                cur=$(cat "$cg/pids.current")
                [ "$cur" -gt "$max" ] && max=$cur
                sleep 0.2
        done
        note "fork bomb: pids.max $(cat "$cg/pids.max"), highest pids.current seen $max, pids.events: $(cat "$cg/pids.events")"
        sbxctl_u cancel "$id" >/dev/null
        r=$(record "$id")
        [ "$(cat "$cg/pids.max" 2>/dev/null || echo 32)" = 32 ] && [ "$max" -le 32 ] &&
                [ "$(jq -r .limits.processes.by <<<"$r")" = cgroup ] && [ "$(jq -r .limits.processes.value <<<"$r")" = 32 ]
}
check "a fork bomb stops at pids.max (32 processes; the kernel refused the rest)" fork_bomb

# The CPU share of a spinning job over 6 s, from its cgroup's cpu.stat
# (usage_usec against the clock), then its record's limits.cpus.by.
spin_share() {
        local id cg u0 t0 u1 t1 r
        id=$(sbxctl_u submit "$@" --timeout 300s -- sh -c 'while :; do :; done') || return 1
        cg=$(job_cg "$id")
        wait_for 60 sh -c "awk '\$1 == \"usage_usec\" && \$2 > 200000 { ok = 1 } END { exit !ok }' $cg/cpu.stat" ||
                { say "job $id never ran"; return 1; }
        u0=$(awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat") t0=$(date +%s%N)
        sleep 6
        u1=$(awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat") t1=$(date +%s%N)
        say "job $id ($*): cpu.max $(cat "$cg/cpu.max"), usage_usec $u0 -> $u1 in $(((t1 - t0) / 1000)) us" >&2
        sbxctl_u cancel "$id" >/dev/null
        r=$(record "$id")
        echo "$(((u1 - u0) * 1000 / ((t1 - t0) / 1000))) $(jq -r .limits.cpus.by <<<"$r")"
}
half_cpu() {
        local full half
        full=$(spin_share) && half=$(spin_share --cpus 0.5) || return 1
        note "CPU share from cpu.stat over 6 s, per mille, and limits.cpus.by: unlimited $full; --cpus 0.5: $half"
        set -- $full $half
        # unlimited, a spinning job takes a whole CPU of the guest's two
        [ "$1" -gt 800 ] && [ "$3" -gt 400 ] && [ "$3" -lt 600 ] && [ "$4" = cgroup ]
}
check "--cpus 0.5 yields about half a CPU (usage_usec of cpu.stat over 6 s; an unlimited spin takes a whole one)" half_cpu

cancel_kills_all() {
        local id cg pids uid
        # setsid: one process escapes the job's session and process group,
        # not its cgroup.
        id=$(sbxctl_u submit --timeout 300s -- sh -c 'sleep 600 & setsid sleep 600 & sleep 600 & wait') || return 1
        cg=$(job_cg "$id")
        wait_for 60 sh -c "[ \$(wc -l < $cg/cgroup.procs) -ge 4 ]" || { cat "$cg/cgroup.procs"; return 1; }
        pids=$(cat "$cg/cgroup.procs")
        uid=$(stat -c %u "/proc/$(head -n 1 <<<"$pids")")
        say "job $id, uid $uid, processes: $(echo $pids)"
        sbxctl_u cancel "$id" >/dev/null
        r=$(record "$id")
        say "$r" | jq -c '{state, error}'
        wait_for 30 sh -c "! [ -e $cg/cgroup.procs ] || ! [ -s $cg/cgroup.procs ]" || { say "left in the cgroup:"; cat "$cg/cgroup.procs"; return 1; }
        for p in $pids; do
                [ ! -e "/proc/$p" ] || { say "process $p lives on"; return 1; }
        done
        ! pgrep -u "$uid" && [ "$(jq -r .state <<<"$r")" = killed ]
}
check "cancel leaves nothing behind (cgroup.kill: a process in a session of its own goes too)" cancel_kills_all

limits_by_cgroup() {
        local id r
        id=$(sbxctl_u submit --memory 128M --processes 64 --cpus 1 --cpu 60s -- true) && r=$(record "$id") || return 1
        say "$r" | jq -c .limits
        jq -e '.limits.memory.by == "cgroup" and .limits.processes.by == "cgroup" and .limits.cpus.by == "cgroup" and .limits.cpu_s.by == "cgroup" and .cgroup == true' <<<"$r"
}
check "limits in the result say \"by\": \"cgroup\" (memory, processes, cpus, cpu time)" limits_by_cgroup

# --- stopping and killing the daemon -------------------------------------------------
submit_sleepers() {
        local i id
        for i in $(seq "$1"); do
                id=$(sbxctl_u submit --timeout 600s -- sleep 600) || return 1
                echo "$id"
        done
}
all_running() {
        local id
        for id in "$@"; do running "$id" || return 1; done
}
records_of() {
        local id r
        for id in "$@"; do
                # wait: a daemon that has just started may still be
                # recording the jobs it found cut off (E_NOT_DONE)
                r=$(timeout 120 setpriv --reuid=alice --regid=alice --init-groups -- sbxctl wait --json "$id" 2>&1)
                jq -e .state <<<"$r" >/dev/null 2>&1 || { say "job $id: no record: $r"; return 1; }
                say "job $id: $(jq -c '{state, error: .error.code, ended}' <<<"$r")"
                jq -e '.ended != null and (.state == "killed" or .state == "error")' <<<"$r" >/dev/null || return 1
        done
}

stop_with_jobs() {
        local ids
        ids=$(submit_sleepers 3) || return 1
        wait_for 90 all_running $ids || { say "jobs not running"; return 1; }
        systemctl stop sbx-supervisord.service || return 1
        # the next connection starts the daemon again (socket activation)
        records_of $ids
}
check "systemctl stop with jobs running: every job has a record" stop_with_jobs

kill_and_start() {
        local ids listed
        ids=$(submit_sleepers 2) || return 1
        wait_for 90 all_running $ids || { say "jobs not running"; return 1; }
        systemctl kill -s KILL sbx-supervisord.service
        wait_for 60 sh -c '! systemctl is-active -q sbx-supervisord.service || [ "$(systemctl show -p NRestarts --value sbx-supervisord.service)" -gt 0 ]'
        systemctl start sbx-supervisord.service || return 1
        records_of $ids || return 1
        listed=$(sbxctl_u ls --limit 50)
        for id in $ids; do grep -q "$id" <<<"$listed" || { say "$id not in sbxctl ls"; return 1; }; done
}
check "systemctl kill -s KILL, then start: no job lost (each has a record and is listed)" kill_and_start

# --- the network of restricted jobs, under the unit --------------------------------
# A host for jobs to reach: 192.0.2.1 (TEST-NET-1) in a network namespace
# of its own behind a veth (the guest's own addresses are never reachable
# from a restricted job), with servers on ports 8080 and 8081.
net_setup() {
        ip netns add sbxt && ip link add sbxt0 type veth peer name eth0 netns sbxt &&
                ip addr add 192.0.2.254/24 dev sbxt0 && ip link set sbxt0 up &&
                ip -n sbxt link set lo up && ip -n sbxt link set eth0 up &&
                ip -n sbxt addr add 192.0.2.1/24 dev eth0 || return 1
        for port in 8080 8081; do
                (cd /tmp && exec ip netns exec sbxt python3 -m http.server --bind 192.0.2.1 $port >/dev/null 2>&1 &)
        done
        # The pool is the helper's setting (its unit, by a drop-in) and the
        # front's (its network_pool), the same.
        mkdir -p /etc/systemd/system/sbx-privd.service.d &&
                { echo '[Service]'; echo 'ExecStart='
                  awk '/^ExecStart=/ { p = 1 } p { c = /\\$/; sub(/\\$/, ""); printf "%s", $0; if (!c) exit }' /lib/systemd/system/sbx-privd.service
                  echo ' --net-pool 10.213.0.0/24 --net-state /var/lib/sbx-privd/net'; } >/etc/systemd/system/sbx-privd.service.d/net.conf &&
                cat /etc/systemd/system/sbx-privd.service.d/net.conf && systemctl daemon-reload || return 1
        sed -i 's|^\[daemon\]$|[daemon]\nnetwork_pool = 10.213.0.0/24|' /etc/sbx/sbx-supervisord.conf &&
                sed -i 's|^\[tenant.users\]$|&\nnetwork = none host restricted\nnetwork_allow = 192.0.2.0/24:*/any|' /etc/sbx/sbx-supervisord.conf &&
                systemctl restart sbx-privd.service sbx-supervisord.service &&
                wait_for 30 sh -c 'journalctl -b -u sbx-supervisord.service --no-pager | grep -q "restricted jobs: \(veths\|unavailable\)"' &&
                wait_for 30 python3 -c 'import socket; socket.create_connection(("192.0.2.1", 8081), 5)' || return 1
        journalctl -b -u sbx-supervisord.service --no-pager | grep "restricted jobs\|network audit" | tail -n 2
        journalctl -b -u sbx-supervisord.service --no-pager | grep -q "restricted jobs: veths" &&
                journalctl -b -u sbx-supervisord.service --no-pager | grep -q "network audit: eBPF programs loaded"
}
check "with a network_pool, the daemon under the unit offers restricted jobs and the network audit (veths, nftables, eBPF)" net_setup

# tcp:ADDR:PORT... -> one line each: ok, or the errno's name
net_probe='import errno, socket, sys
for spec in sys.argv[1:]:
    _, addr, port = spec.split(":")
    try:
        socket.create_connection((addr, int(port)), 10).close()
        print(spec, "ok")
    except OSError as e:
        print(spec, errno.errorcode.get(e.errno, e.errno))'

restricted_job() {
        local id r out
        id=$(sbxctl_u submit --network restricted --allow 192.0.2.1:8080 --audit -- \
                python3 -c "$net_probe" tcp:192.0.2.1:8080 tcp:192.0.2.1:8081) || return 1
        r=$(record "$id")
        out=$(sbxctl_u logs "$id")
        say "$out"
        say "$r" | jq -c '{state, error, network_events: [.network_events[]? | {kind, address, port, verdict}]}'
        [ "$(jq -r .state <<<"$r")" = succeeded ] &&
                grep -qx "tcp:192.0.2.1:8080 ok" <<<"$out" && grep -qx "tcp:192.0.2.1:8081 EPERM" <<<"$out" &&
                jq -e '[.network_events[] | select(.port == 8080 and .verdict == "allow")] | length > 0' <<<"$r" >/dev/null &&
                jq -e '[.network_events[] | select(.port == 8081 and .verdict == "deny")] | length > 0' <<<"$r" >/dev/null
}
check "--network restricted: a job reaches what --allow admits and nothing else, and --audit records both attempts" restricted_job

# --- a bundle from a signed registry, under the unit ----------------------------------
bundle_job() {
        local out
        mkdir -p /srv/sbx-registry /etc/sbx/keys && cp -r "$payload/registry/." /srv/sbx-registry/ &&
                cp /srv/sbx-registry/publisher.pub /etc/sbx/keys/publisher.pub || return 1
        printf '\n[registry.main]\nurl = file:///srv/sbx-registry\nkeys = /etc/sbx/keys/publisher.pub\n' \
                >>/etc/sbx/sbx-supervisord.conf
        sed -i 's|^\[tenant.users\]$|&\nregistry = main\nbundles = hello|' /etc/sbx/sbx-supervisord.conf &&
                systemctl restart sbx-supervisord.service || return 1
        out=$(sbxctl_u run --bundle hello --env GREETING=hi -- alice) && say "$out" &&
                grep -q "^hi, alice, from bundle hello 1.0.0 " <<<"$out" &&
                grep -q "^it cannot be written; the workspace can: " <<<"$out"
}
if [ -f "$payload/registry/hello/index.json.minisig" ]; then
        check "the sample bundle runs from a signed file:// registry (fetched, verified, unpacked into the state directory)" bundle_job
else
        skip "the sample bundle runs from a signed file:// registry" "the host could not sign a registry (no minisign there)"
fi

# --- hardening -------------------------------------------------------------------------
# Every shipped service, as systemd-analyze security rates it; the front's
# at most 2.0, the helper's printed (what it holds and why: sbx-supervisord(8),
# PRIVILEGE SEPARATION).
exposure_of() {
        systemd-analyze security --no-pager "$1" | tail -n 1 | grep -oE '[0-9]+\.[0-9]+' | head -n 1
}
for unit in $(dpkg -L sbx-supervisor | grep -E '^/lib/systemd/system/.*\.service$' | xargs -n 1 basename); do
        note "systemd-analyze security: $unit exposure $(exposure_of "$unit")"
done
front_exposure() {
        local e
        e=$(exposure_of sbx-supervisord.service)
        systemd-analyze security --no-pager sbx-supervisord.service | grep '✗'
        say "exposure $e"
        [ -n "$e" ] && awk -v e="$e" 'BEGIN { exit !(e <= 2.0) }'
}
check "systemd-analyze security: the front's unit (sbx-supervisord.service, user sbx) at most 2.0" front_exposure
helper_exposure() {
        local e
        e=$(exposure_of sbx-privd.service)
        systemd-analyze security --no-pager sbx-privd.service | grep '✗'
        say "exposure $e"
        [ -n "$e" ] && awk -v e="$e" 'BEGIN { exit !(e <= 4.9) }'
}
check "systemd-analyze security: the helper's unit (sbx-privd.service, root) at most 4.9, what it reaches holding what sbx-supervisord(8) lists" helper_exposure

# --- as an unprivileged user, with the installed launcher ------------------------------
check_host() {
        as_user sbx-launch --check-host
        as_user sbx-launch --check-host | grep -q '^ok       namespaces: ' &&
                as_user sbx-launch --check-host | grep -q '^ok       cgroup v2: unified, with the memory, pids and cpu controllers and cgroup.kill'
}
check "sbx-launch --check-host as alice: every requirement met on this host" check_host

profile_cmd() {
        case $1 in
        default) echo "sh -c 'echo ran under default'" ;;
        shell) echo "sh -c 'echo ran under shell'" ;;
        python) echo "python3 -c 'print(\"ran under python\")'" ;;
        node) echo "node -e 'console.log(\"ran under node\")'" ;;
        esac
}
launch_profile() {
        local out
        out=$(eval "as_user sbx-launch --profile $1 -- $(profile_cmd "$1")") && say "$out" && [ "$out" = "ran under $1" ]
}
job_profile() {
        local out
        out=$(eval "sbxctl_u run --profile $1 -- $(profile_cmd "$1")") && say "$out" && [ "$out" = "ran under $1" ]
}
for p in default shell python node; do
        check "the shipped profile $p runs alice's command with sbx-launch" launch_profile $p
        check "the shipped profile $p runs alice's job through the daemon" job_profile $p
done

readme_sample() {
        local cmd out
        cmd=$(cat "$payload/readme-sample.sh")
        [ -n "$cmd" ] || { say "no sample job found in the README"; return 1; }
        say "$cmd"
        out=$(as_user sh -c "$cmd") && say "$out" && grep -q '^hello from ' <<<"$out" &&
                grep -qE '^NoNewPrivs:\s+1$' <<<"$out" && grep -qE '^Seccomp:\s+2$' <<<"$out"
}
check "the README's sample job runs as alice with the installed sbx-launch" readme_sample

echo "1..$n"
