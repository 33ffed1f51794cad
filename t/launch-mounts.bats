#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) FILESYSTEM: a fresh root built from ordered operations;
# read-only means read-only, tmpfs sizes hold, symlinks at a destination
# never lead setup outside the new root, and the host's mount table does
# not change.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
}

@test "the root and ro-bind mounts are read-only" {
        run sbx -- sh -c 'touch /usr/sbx-x 2>&1; touch /sbx-x 2>&1; echo done'
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == *"Read-only file system"* ]]
        [[ "${lines[1]}" == *"Read-only file system"* ]]
        [ "${lines[2]}" = done ]
        [ ! -e /usr/sbx-x ]
}

@test "only what the profile names is visible" {
        run sbx -- sh -c 'ls /'
        [ "$status" -eq 0 ]
        [ "$(echo $output)" = "bin dev lib lib64 proc sbin tmp usr" ]
}

@test "bind is read-write and reaches the host directory" {
        d=$(user_dir)
        run sbx --bind "$d" /work -- sh -c 'echo written > /work/out'
        [ "$status" -eq 0 ]
        [ "$(cat "$d/out")" = written ]
}

@test "ro-bind of a file, dir, symlink and file operations" {
        d=$(user_dir)
        echo content > "$d/f"
        chmod 0644 "$d/f"
        echo from-fd > "$d/fdsrc"
        run sbx --ro-bind "$d/f" /etc/bound --dir /data/a/b --perms 0700 --dir /private \
                --symlink /etc/bound /link --file 7 /etc/fromfd \
                -- sh -c 'cat /etc/bound; test -d /data/a/b && echo dir; stat -c %a /private; cat /link; cat /etc/fromfd; echo x > /etc/bound' 7<"$d/fdsrc"
        [ "$status" -ne 0 ]
        [ "${lines[0]}" = content ]
        [ "${lines[1]}" = dir ]
        [ "${lines[2]}" = 700 ]
        [ "${lines[3]}" = content ]
        [ "${lines[4]}" = from-fd ]
        [[ "${lines[5]}" == *"Read-only file system"* ]]
        [ "$(cat "$d/f")" = content ]
}

@test "file data= from a profile, with its mode" {
        d=$(user_dir)
        printf '[fs]\nfile = /etc/motd data="hello\\nworld\\n" mode=0600\n' > "$d/p.ini"
        chmod 0644 "$d/p.ini"
        run sbx --profile default --profile "$d/p.ini" -- sh -c 'cat /etc/motd; stat -c %a /etc/motd'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = hello ]
        [ "${lines[1]}" = world ]
        [ "${lines[2]}" = 600 ]
}

@test "a tmpfs size is enforced" {
        run sbx --size 1M --tmpfs /small -- sh -c 'head -c 2097152 /dev/zero > /small/f; echo rc=$?; stat -c %s /small/f'
        [ "$status" -eq 0 ]
        [[ "$output" == *"No space left on device"* ]]
        [[ "$output" == *"rc=1"* ]]
        [ "${lines[-1]}" -le 1048576 ]
}

@test "a tmpfs inode limit is enforced" {
        run sbx --set 'fs.tmpfs=/few nr_inodes=5' -- sh -c 'for i in 1 2 3 4 5 6 7 8; do touch /few/$i 2>/dev/null || { echo stopped at $i; exit 0; }; done; echo not stopped'
        [ "$status" -eq 0 ]
        [[ "$output" == "stopped at"* ]]
}

@test "a relative source on the command line is taken from the caller's working directory, as bwrap does" {
        d=$(user_dir)
        as_user mkdir "$d/sub" "$d/out"
        printf 'print("job ran")\n' > "$d/sub/job.py"
        chmod 0644 "$d/sub/job.py"
        cd "$d"
        # ./x, x, . and ../x forms; the destination stays absolute
        run sbx --ro-bind ./sub/job.py /job/job.py --ro-bind sub /job/sub --bind out /out \
                --ro-bind . /cwd -- sh -c 'cat /job/job.py; ls /job/sub; ls /cwd | tr "\n" " "; echo x > /out/w'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = 'print("job ran")' ]
        [ "${lines[1]}" = job.py ]
        [ "${lines[2]}" = "out sub " ]
        [ "$(cat "$d/out/w")" = x ]
        cd "$d/sub"
        run -0 sbx --ro-bind ../sub/job.py /j -- cat /j
        [ "$output" = 'print("job ran")' ]
        # --print-profile shows the absolute path that is bound
        cd "$d"
        run -0 sbx --ro-bind ./sub/job.py /job/job.py --bind-try no-such /x --print-profile
        [[ "$output" == *"ro-bind = $d/sub/job.py /job/job.py"* ]]
        [[ "$output" == *"bind-try = $d/no-such /x"* ]]
        # a missing relative source names the absolute path it tried
        run sbx --ro-bind ./missing.py /j -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"ro-bind: $d/missing.py: No such file or directory"* ]]
        # symlink targets stay as written: they are read inside the sandbox
        run -0 sbx --symlink usr/bin /b2 --print-profile
        [[ "$output" == *"symlink = usr/bin /b2"* ]]
        # in a profile file a source must still be absolute
        printf '[fs]\nro-bind = sub/job.py /j\n' > "$d/rel.ini"
        chmod 0644 "$d/rel.ini"
        run sbx --profile "$d/rel.ini" --check
        [ "$status" -eq 125 ]
        [[ "$output" == *"rel.ini:2: fs.ro-bind: source 'sub/job.py' must be an absolute path"* ]]
}

@test "-try forms skip a missing source; plain forms fail on it" {
        run sbx --ro-bind-try /nonexistent-sbx /x -- sh -c 'test -e /x && echo present || echo absent'
        [ "$status" -eq 0 ]
        [ "$output" = absent ]
        run sbx --ro-bind /nonexistent-sbx /x -- true
        [ "$status" -eq 125 ]
}

@test "remount-ro makes a writable mount read-only" {
        run sbx --tmpfs /w --remount-ro /w -- sh -c 'touch /w/x 2>&1'
        [ "$status" -ne 0 ]
        [[ "$output" == *"Read-only file system"* ]]
}

@test "dev: the minimal devices work and nothing else is there" {
        run sbx -- sh -c 'echo x > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c; ls /dev'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = 4 ]
        [ "${lines[1]}" = 4 ]
        [ "$(echo ${lines[@]:2})" = "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero" ]
        run -0 sbx -- sh -c 'test -e /dev/sda || test -e /dev/vda || test -e /dev/mem || echo none'
        [ "$output" = none ]
}

@test "dev: /dev/shm is world-writable and sticky, pts is a private instance" {
        run sbx -- sh -c 'stat -c %a /dev/shm; ls /dev/pts'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = 1777 ]
        [ "${lines[1]}" = ptmx ]
}

# Symlinks placed at a destination or in a parent, in a directory the job
# (or anyone) controls, must never make setup write outside the new root.
make_trap_dir() {
        d=$(user_dir)
        target=$(user_dir)
        ln -s "$target" "$d/abs"
        ln -s "../$(basename "$target")" "$d/rel"
        ln -s /nonexistent-sbx-dangling "$d/dangling"
        ln -s / "$d/root"
        chown -h nobody:nogroup "$d"/* 2>/dev/null || true
}

@test "an absolute symlink at a mount destination is refused" {
        make_trap_dir
        run sbx --bind "$d" /w --tmpfs /w/abs -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"tmpfs: /w/abs: Too many levels of symbolic links"* ]]
        run sbx --bind "$d" /w --ro-bind /usr/bin /w/abs -- true
        [ "$status" -eq 125 ]
        [ -z "$(ls -A "$target")" ]
}

@test "an absolute symlink in a parent of a destination is refused" {
        make_trap_dir
        run sbx --bind "$d" /w --dir /w/abs/made-by-sbx -- true
        [ "$status" -eq 125 ]
        run sbx --bind "$d" /w --tmpfs /w/root/tmp/sbx-escape -- true
        [ "$status" -eq 125 ]
        [ ! -e "$target/made-by-sbx" ]
        [ ! -e /tmp/sbx-escape ]
}

@test "a relative symlink pointing outside is refused" {
        make_trap_dir
        run sbx --bind "$d" /w --dir /w/rel/made-by-sbx -- true
        [ "$status" -eq 125 ]
        run sbx --bind "$d" /w --file 0 /w/rel/file-by-sbx -- true </dev/null
        [ "$status" -eq 125 ]
        [ -z "$(ls -A "$target")" ]
}

@test "a dangling symlink at a destination is refused, nothing is created at its target" {
        make_trap_dir
        run sbx --bind "$d" /w --dir /w/dangling -- true
        [ "$status" -eq 125 ]
        run sbx --bind "$d" /w --file 0 /w/dangling -- true </dev/null
        [ "$status" -eq 125 ]
        run sbx --bind "$d" /w --symlink /x /w/dangling/y -- true
        [ "$status" -eq 125 ]
        [ ! -e /nonexistent-sbx-dangling ]
}

@test "a symlink made by the profile itself is not followed by later operations" {
        run sbx --symlink /usr /u --tmpfs /u/x -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"/u/x: Too many levels of symbolic links"* ]]
}

@test "the host's mount table is unchanged by a run with many mounts" {
        # Other tests running at the same time may mount things of their
        # own; none of the host's mounts may come from this sandbox: its
        # bind source, its staging root (/tmp) or its mqueue.
        before="$BATS_TEST_TMPDIR/before"
        cat /proc/self/mountinfo > "$before"
        d=$(user_dir)
        run sbx --bind "$d" /w --tmpfs /a --dir /b --remount-ro /b --mqueue /mq -- sh -c 'cat /proc/self/mountinfo | wc -l'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" -gt 8 ]
        new=$(grep -vxF -f "$before" /proc/self/mountinfo || true)
        echo "new host mounts: $new" >&2
        ! grep -qF "$d" <<<"$new" || false
        ! grep -qE ' /tmp |mqueue' <<<"$new" || false
        ! grep -qF "$d" /proc/self/mountinfo || false
}

@test "mounts made by the host later do not become visible inside (root is a slave, not shared)" {
        run -1 sbx -- sh -c 'grep -c shared: /proc/self/mountinfo'
        [ "$output" = 0 ]
}

@test "the command's working directory is inside the new root" {
        run sbx -- sh -c 'pwd; ls -la /proc/self/cwd' 
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = /tmp ]
        run -0 sbx --chdir / -- pwd
        [ "$output" = / ]
        run sbx --chdir /nonexistent -- pwd
        [ "$status" -eq 125 ]
        [[ "$output" == *"chdir: /nonexistent: No such file or directory"* ]]
}

@test "dev-bind keeps a device usable; bind and ro-bind make it nodev" {
        run sbx --dev-bind /dev/null /dn -- sh -c 'echo x > /dn && echo usable'
        [ "$status" -eq 0 ]
        [ "$output" = usable ]
        run sbx --bind /dev/null /dn -- sh -c 'echo x > /dn'
        [ "$status" -ne 0 ]
        [[ "$output" == *"Permission denied"* ]]
}

@test "security.sys = yes mounts a read-only /sys of the sandbox's own network namespace" {
        run sbx --set security.sys=yes -- sh -c 'grep " /sys " /proc/self/mounts; ls /sys/class/net; touch /sys/x 2>&1; cat /sys/kernel/mm/transparent_hugepage/enabled >/dev/null && echo readable'
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "sysfs /sys sysfs ro,nosuid,nodev,noexec"* ]]
        # only the sandbox's loopback, not the host's interfaces
        [ "${lines[1]}" = lo ]
        [[ "${lines[2]}" == *"Read-only file system"* ]]
        [ "${lines[3]}" = readable ]
        # without it there is no /sys at all
        run sbx -- sh -c 'ls /sys'
        [ "$status" -ne 0 ]
        [[ "$output" == *"No such file or directory"* ]]
}

@test "security.sys = yes with the host's network binds the host's /sys read-only, submounts included" {
        run sbx --set security.sys=yes --set net.mode=host -- sh -c 'ls /sys/class/net | grep -qx lo && echo host-lo; touch /sys/x 2>&1; n=0; while read -r src dst type opts rest; do case $dst in /sys*) n=$((n + 1)); case $opts in ro,*) ;; *) echo "writable: $dst" ;; esac ;; esac; done </proc/self/mounts; echo "end $n"'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = host-lo ]
        [[ "${lines[1]}" == *"Read-only file system"* ]]
        # every mount under /sys is read-only, and there is more than one
        [[ "${lines[2]}" =~ ^end\ ([0-9]+)$ ]]
        [ "${BASH_REMATCH[1]}" -gt 1 ]
}
