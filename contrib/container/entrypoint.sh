#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sbx-node, the entrypoint of the node image (contrib/container/): makes the
# container fit for sandboxes and job cgroups, then becomes sbx-supervisord
# (exec: the daemon is the container's main process and gets its SIGTERM)
# with the arguments given:
#
#   sbx-node [--config FILE] [OPTION]...
#
# As root (a node that runs jobs), each step where it applies; what it
# cannot do it says, and goes on (the daemon, or the first job, then says
# what is missing). Not as root (an api node, which runs no job), nothing.
#
# 1. /proc. Runtimes hide parts of the container's /proc (/proc/kcore,
#    /proc/keys, ... under other mounts; /proc/sys read-only). The kernel
#    lets a process in a user namespace of its own (sbx-launch, for every
#    sandbox) mount a new procfs only while some procfs of its mount
#    namespace is wholly visible, so with those masks every job would fail
#    with "proc: /proc: Operation not permitted". Kubernetes unmasks /proc
#    only for pods in user namespaces (procMount: Unmasked). Instead this
#    mounts one whole procfs at /run/sbx-node/proc, a directory only root
#    may enter (the daemon's front, user sbx, and the jobs cannot), and
#    leaves /proc masked. And it binds that procfs's sys/net over
#    /proc/sys/net, so that the privileged helper may switch forwarding on
#    for restricted jobs: those settings are the pod's network namespace's
#    own; the rest of /proc/sys stays read-only. Both need CAP_SYS_ADMIN
#    and an AppArmor profile that allows mounts.
# 2. Cgroups. A container with a cgroup namespace of its own (the default
#    on cgroup v2 hosts) sees its cgroup as the root of /sys/fs/cgroup.
#    Unlike the host's real root, that cgroup cannot both hold processes
#    and give controllers to child cgroups, so this
#    - remounts /sys/fs/cgroup read-write when the runtime mounted it
#      read-only (as Kubernetes does for any container that is not
#      privileged; CAP_SYS_ADMIN again),
#    - moves every process of the container's cgroup into a leaf, init,
#    - gives the memory, pids and cpu controllers to the children, and
#    - makes sbx, the daemon's cgroup for the jobs (cgroup =
#      /sys/fs/cgroup/sbx in the node's configuration).
set -eu

cg=/sys/fs/cgroup
procdir=/run/sbx-node/proc
say() { echo "sbx-node: $*" >&2; }

# Mount points below /proc (the runtime's masks), from mountinfo.
proc_masked() {
        awk '$5 ~ "^/proc/" { found = 1 } END { exit !found }' /proc/self/mountinfo
}

prepare_proc() {
        proc_masked || return 0
        if ! mountpoint -q "$procdir"; then
                # (/run may be a volume of the pod's, without the image's
                # directory: made here, root's alone)
                if mkdir -p "$procdir" 2>/dev/null; then
                        chmod 0700 "$(dirname "$procdir")" "$procdir" 2>/dev/null || true
                fi
                if ! mount -t proc -o nosuid,nodev,noexec proc "$procdir" 2>/dev/null; then
                        say "/proc is masked and no procfs can be mounted at $procdir (needs CAP_SYS_ADMIN and no AppArmor mount rule against it): sandboxes that mount /proc will fail"
                        return 0
                fi
        fi
        if [ ! -w /proc/sys/net/ipv4/conf/all/forwarding ]; then
                if mount --bind "$procdir/sys/net" /proc/sys/net 2>/dev/null; then
                        say "a whole procfs at $procdir for the sandboxes; /proc/sys/net writable"
                else
                        say "a whole procfs at $procdir for the sandboxes; /proc/sys/net stays read-only: restricted jobs will fail"
                fi
        else
                say "a whole procfs at $procdir for the sandboxes"
        fi
}

prepare_cgroups() {
        if [ ! -f "$cg/cgroup.controllers" ]; then
                say "$cg is not a cgroup v2 tree (a cgroup v1 or hybrid host?): no job cgroups made here"
                return 0
        fi
        if ! grep -qx '0::/' /proc/self/cgroup; then
                say "not at the root of a cgroup namespace of its own ($(grep '^0::' /proc/self/cgroup)): the cgroup tree is left as it is"
                return 0
        fi
        if [ ! -w "$cg/cgroup.subtree_control" ]; then
                if ! mount -o remount,rw "$cg" 2>/dev/null; then
                        say "$cg is read-only and cannot be remounted read-write (needs CAP_SYS_ADMIN and no AppArmor mount rule against it)"
                        return 0
                fi
                say "remounted $cg read-write"
        fi
        if ! mkdir -p "$cg/init" "$cg/sbx" 2>/dev/null; then
                say "cannot make $cg/init and $cg/sbx"
                return 0
        fi
        # Every process of the container's cgroup: this one, and an init
        # that a runtime may have started before it (podman --init).
        while read -r pid; do
                echo "$pid" >"$cg/init/cgroup.procs" 2>/dev/null || true
        done <"$cg/cgroup.procs"
        enabled=
        for c in memory pids cpu; do
                if grep -qw "$c" "$cg/cgroup.controllers" && echo "+$c" >"$cg/cgroup.subtree_control" 2>/dev/null; then
                        enabled="$enabled $c"
                fi
        done
        say "job cgroups in $cg/sbx, controllers:${enabled:- none (limits fall back to rlimits)}"
}

if [ "$(id -u)" = 0 ]; then
        prepare_proc
        prepare_cgroups
fi
exec /usr/sbin/sbx-supervisord "$@"
