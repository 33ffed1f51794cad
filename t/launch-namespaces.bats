#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) NAMESPACES: every namespace is new by default, the caller's
# ids are mapped one to one, pid 1 is ours, and the network has only an
# active loopback.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
}

ns_of() {
        readlink "/proc/$1/ns/$2"
}

@test "the caller's uid and gid are mapped to themselves, one id each" {
        run sbx -- cat /proc/self/uid_map /proc/self/gid_map
        [ "$status" -eq 0 ]
        uid=$(as_user id -u)
        gid=$(as_user id -g)
        [ "$(echo "${lines[0]}" | awk '{print $1, $2, $3}')" = "$uid $uid 1" ]
        [ "$(echo "${lines[1]}" | awk '{print $1, $2, $3}')" = "$gid $gid 1" ]
        [ "${#lines[@]}" -eq 2 ]
}

@test "--uid and --gid choose the ids inside; files made there belong to the caller outside" {
        d=$(user_dir)
        run sbx --uid 0 --gid 0 --bind "$d" /w -- sh -c 'id -u; id -g; touch /w/f'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = 0 ]
        [ "${lines[1]}" = 0 ]
        [ "$(stat -c %u:%g "$d/f")" = "$(as_user id -u):$(as_user id -g)" ]
}

@test "setgroups is denied inside" {
        run sbx -- cat /proc/self/setgroups
        [ "$status" -eq 0 ]
        [ "$output" = deny ]
}

@test "the host name is sbx by default and --hostname changes it" {
        run -0 sbx -- cat /proc/sys/kernel/hostname
        [ "$output" = sbx ]
        run -0 sbx --hostname job-7 -- cat /proc/sys/kernel/hostname
        [ "$output" = job-7 ]
        # the host's name is untouched
        [ "$(cat /proc/sys/kernel/hostname)" != job-7 ]
}

@test "the command runs as pid 2 under our pid 1, and sees only the sandbox's processes" {
        run sbx -- sh -c 'echo $$; cat /proc/1/comm; ls -d /proc/[0-9]* | wc -l'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = 2 ]
        [ "${lines[1]}" = sbx-launch ]
        # pid 1, the shell, and ls (wc runs after ls exits or alongside)
        [ "${lines[2]}" -le 4 ]
}

@test "user, mount, pid, net, ipc, uts and cgroup namespaces all differ from the host's" {
        run sbx -- sh -c 'for n in user mnt pid net ipc uts cgroup; do readlink /proc/self/ns/$n; done'
        [ "$status" -eq 0 ]
        i=0
        for n in user mnt pid net ipc uts cgroup; do
                [ "${lines[$i]}" != "$(ns_of self $n)" ]
                i=$((i + 1))
        done
}

@test "System V IPC objects of the host are invisible" {
        # a message queue made on the host (ipcmk is util-linux)
        command -v ipcmk >/dev/null || skip "ipcmk is not installed"
        id=$(as_user ipcmk -Q | awk '{print $NF}')
        run sbx -- cat /proc/sysvipc/msg
        as_user ipcrm -q "$id"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | wc -l)" -eq 1 ]   # the header line only
}

@test "the network has only lo, and lo is up" {
        run sbx -- cat /proc/net/dev
        [ "$status" -eq 0 ]
        # two header lines, then one line per interface
        [ "${#lines[@]}" -eq 3 ]
        [[ "${lines[2]}" == *lo:* ]]
        run sbx -- ip -o link show
        [ "$status" -eq 0 ]
        [ "${#lines[@]}" -eq 1 ]
        [[ "$output" == *"lo: <LOOPBACK,UP,LOWER_UP>"* ]]
}

@test "loopback works: a TCP connection to 127.0.0.1 inside" {
        run sbx -- python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.create_connection(s.getsockname()); a, _ = s.accept()
c.sendall(b"ping"); print(a.recv(4).decode())'
        [ "$status" -eq 0 ]
        [ "$output" = ping ]
}

@test "--share-net keeps the host's network namespace" {
        run sbx --share-net -- readlink /proc/self/ns/net
        [ "$status" -eq 0 ]
        [ "$output" = "$(ns_of self net)" ]
}

@test "--share-ipc and --share-uts keep those namespaces" {
        run sbx --share-ipc --share-uts -- sh -c 'readlink /proc/self/ns/ipc; readlink /proc/self/ns/uts'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "$(ns_of self ipc)" ]
        [ "${lines[1]}" = "$(ns_of self uts)" ]
}

@test "the command starts in a new session" {
        run sbx -- sh -c 'ps -o sid= -p $$; echo $$'
        [ "$status" -eq 0 ]
        [ "${lines[0]// /}" = "${lines[1]}" ]
}

@test "run by root, it still builds a user namespace (no real root inside)" {
        [ "$(id -u)" = 0 ] || skip "needs root to run sbx-launch as root"
        run env SBX_PROFILE_PATH="$SBX_PROFILE_PATH" "$SBX_LAUNCH" -- sh -c 'readlink /proc/self/ns/user; grep ^CapEff /proc/self/status'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" != "$(readlink /proc/self/ns/user)" ]
        [ "${lines[1]}" = "CapEff:	0000000000000000" ]
}

@test "--share-pid keeps the host's pid namespace (without /proc, which needs a new one)" {
        run sbx --profile /dev/null --share-pid --ro-bind /usr /usr --symlink usr/lib /lib \
                --symlink usr/lib64 /lib64 -- /usr/bin/readlink /proc/self/ns/pid
        # no /proc inside: readlink fails, but the command ran
        [ "$status" -eq 1 ]
        run sbx --share-pid -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"pid namespace"* ]]
        d=$(user_dir)
        run sbx --profile /dev/null --share-pid --ro-bind /usr /usr --symlink usr/lib /lib \
                --symlink usr/lib64 /lib64 --bind "$d" /w -- /usr/bin/sh -c 'echo $$ > /w/pid'
        [ "$status" -eq 0 ]
        [ "$(cat "$d/pid")" -gt 2 ]
}
