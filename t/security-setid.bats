#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# SECURITY.md 31, issue 9: a job must not plant a setuid or setgid program
# on a writable bind. The review copied python3 into the bind, ran
# chmod 6755, and any local user could run the host copy with the job's
# uid. The sandbox's mount is nosuid, the host's is not: only refusing the
# mode itself (the syscall filter) protects the host path.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
        d=$(user_dir)
        st="$BATS_TEST_TMPDIR/status"
}

# Every way of giving a file a set-id mode, tried from inside; prints one
# "NAME RESULT" line each (RESULT an errno name or OK).
attempts='
import ctypes, errno, os, shutil, stat
libc = ctypes.CDLL(None, use_errno=True)
def sys(nr, *a):
    if libc.syscall(nr, *a) < 0:
        raise OSError(ctypes.get_errno(), "syscall")
def t(name, f):
    try:
        f(); print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
shutil.copy("/usr/bin/python3", "/work/py")
t("chmod-6755", lambda: os.chmod("/work/py", 0o6755))
t("chmod-4755", lambda: os.chmod("/work/py", 0o4755))
t("chmod-2755", lambda: os.chmod("/work/py", 0o2755))
fd = os.open("/work/py", os.O_RDONLY)
t("fchmod", lambda: os.fchmod(fd, 0o4755))
t("fchmodat", lambda: sys(268, -100, b"/work/py", 0o4755))
t("fchmodat2", lambda: sys(452, -100, b"/work/py", 0o4755, 0))
t("fchmodat2-empty-path", lambda: sys(452, fd, b"", 0o4755, 0x1000))
t("open-creat", lambda: os.open("/work/o1", os.O_CREAT | os.O_WRONLY, 0o4755))
t("openat-creat", lambda: os.open("o2", os.O_CREAT | os.O_WRONLY, 0o2755, dir_fd=os.open("/work", os.O_RDONLY)))
t("open-tmpfile", lambda: os.open("/work", os.O_TMPFILE | os.O_WRONLY, 0o4755))
t("creat", lambda: sys(85, b"/work/o3", 0o4755))
t("mknod", lambda: os.mknod("/work/o4", stat.S_IFREG | 0o4755))
t("mknodat", lambda: sys(259, -100, b"/work/o5", stat.S_IFREG | 0o2755, 0))
how = (ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, 0o4755, 0)
t("openat2", lambda: sys(437, -100, b"/work/o6", how, 24))
t("chmod-0755", lambda: os.chmod("/work/py", 0o755))
t("open-creat-0644", lambda: os.close(os.open("/work/o7", os.O_CREAT | os.O_WRONLY, 0o644)))
'

expected="chmod-6755 EPERM
chmod-4755 EPERM
chmod-2755 EPERM
fchmod EPERM
fchmodat EPERM
fchmodat2 EPERM
fchmodat2-empty-path EPERM
open-creat EPERM
openat-creat EPERM
open-tmpfile EPERM
creat EPERM
mknod EPERM
mknodat EPERM
openat2 ENOSYS
chmod-0755 OK
open-creat-0644 OK"

# Nothing under the bind has a set-id bit on the host.
no_setid_on_host() {
        [ -z "$(find "$d" -perm /6000)" ]
}

@test "setuid planting: chmod 6755 of a copied binary fails and the host copy has no set-id bit" {
        run sbx --bind "$d" /work -- sh -c 'cp /usr/bin/python3 /work/py && chmod 6755 /work/py; echo "chmod $?"; ls -l /work/py'
        [ "$status" -eq 0 ]
        [[ "$output" == *"Operation not permitted"* ]]
        [[ "$output" == *"chmod 1"* ]]
        [[ "$output" == *"-rwxr-xr-x"* ]]
        [ -f "$d/py" ]
        no_setid_on_host
}

@test "setuid planting: every call that sets a mode refuses S_ISUID and S_ISGID (default filter)" {
        run sbx --json-status-fd 5 --bind "$d" /work -- python3 -c "$attempts" 5>"$st"
        [ "$status" -eq 0 ]
        [ "$output" = "$expected" ]
        no_setid_on_host
        [ "$(jq -s '.[1].protections."setid-refused"' "$st")" = true ]
}

@test "setuid planting: the strict filter refuses them too and still allows ordinary modes" {
        run sbx --set security.seccomp=strict --bind "$d" /work -- python3 -c "$attempts"
        [ "$status" -eq 0 ]
        # strict has no fchmodat2 or mknod at all (ENOSYS) and no openat2
        [ "$output" = "$(sed -e 's/^\(fchmodat2\(-empty-path\)\?\|mknod\|mknodat\) EPERM$/\1 ENOSYS/' <<<"$expected")" ]
        no_setid_on_host
}

@test "setuid planting: a profile's allow line does not lift the guard, a deny line replaces it" {
        run sbx --set security.allow=chmod --set security.seccomp=strict --bind "$d" /work -- \
                python3 -c 'import os, shutil; shutil.copy("/usr/bin/true", "/work/t")
try:
    os.chmod("/work/t", 0o4755); print("set")
except PermissionError:
    print("EPERM")
os.chmod("/work/t", 0o700); print("plain ok")'
        [ "$status" -eq 0 ]
        [ "$output" = "EPERM
plain ok" ]
        run -1 sbx --set security.deny=chmod:EACCES --bind "$d" /work -- \
                python3 -c 'import os; os.chmod("/work", 0o755)'
        [[ "$output" == *"PermissionError"*"Permission denied"* ]]
        no_setid_on_host
}

@test "setuid planting: install -m 4755 and cp --preserve of a setuid file leave no set-id bit" {
        # a setuid file the job can read: the copy must lose the bit
        cp /usr/bin/true "$d/src"
        [ "$(id -u)" = 0 ] && chown nobody:nogroup "$d/src"
        chmod 4755 "$d/src"
        run -0 sbx --ro-bind "$d/src" /src --bind "$d" /work -- sh -c '
install -m 4755 /usr/bin/true /work/inst; echo "install $?"
cp --preserve=mode /src /work/cp; echo "cp $?"'
        [[ "$output" == *"install 1"* ]]
        rm -f "$d/src"
        no_setid_on_host
}

@test "setuid planting: a setgid host directory still hands its group and bit to new directories" {
        chmod 2775 "$d"
        run sbx --bind "$d" /work -- sh -c 'mkdir /work/sub && stat -c %A /work/sub'
        [ "$status" -eq 0 ]
        [ "$output" = "drwxr-sr-x" ]
}

@test "setuid planting: seccomp = none loads no guard, and the record says so" {
        run sbx --json-status-fd 5 --set security.seccomp=none -- true 5>"$st"
        [ "$status" -eq 0 ]
        [ "$(jq -s '.[1].protections."setid-refused"' "$st")" = false ]
}
