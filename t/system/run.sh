#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make check-system: sbx as Debian ships it, on a real machine. Builds (once,
# cached) a Debian 12 guest with systemd and pure cgroup v2 from Debian's
# packages, builds the Debian packages of this tree (cached by the tree's
# content), boots the guest with qemu (KVM where it works, else TCG), and
# has t/system/guest.sh install the packages and check sbx there as its
# users would. Prints TAP: the host's own steps, then one line per check in
# the guest. On failure the serial console log, the guest's journal and
# qemu's messages are kept in $SBX_SYSTEM_OUT (default t/system/out).
#
# Environment: SBX_SYSTEM_CACHE (default /var/cache/sbx-system),
# SBX_SYSTEM_DEBS (a directory of already built .debs to test instead),
# SBX_SYSTEM_TIMEOUT (seconds the guest may run, default 1500),
# SBX_SYSTEM_ACCEL (qemu -accel list, default "kvm tcg": the first that works).
set -uo pipefail

srcdir=${SBX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cache=${SBX_SYSTEM_CACHE:-/var/cache/sbx-system}
out=${SBX_SYSTEM_OUT:-$PWD/t/system/out}
timeout_s=${SBX_SYSTEM_TIMEOUT:-1500}
accel=${SBX_SYSTEM_ACCEL:-kvm tcg}
suite=bookworm

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
diag() { sed 's/^/# /'; }
# Nothing more can run: a plan of 0 before any test line, else a skip.
skip_all() {
        if [ "$n" -eq 0 ]; then
                echo "1..0 # SKIP $*"
        else
                n=$((n + 1))
                echo "ok $n - the guest's checks # SKIP $*"
                echo "1..$n"
        fi
        exit 0
}
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }

# --- what the host must have ------------------------------------------------
for tool in qemu-system-x86_64:qemu-system-x86 mmdebstrap:mmdebstrap mke2fs:e2fsprogs \
        debugfs:e2fsprogs dpkg-buildpackage:dpkg-dev; do
        command -v "${tool%%:*}" >/dev/null || skip_all "${tool%%:*} is not installed (apt-get install ${tool#*:})"
done
[ "$(uname -m)" = x86_64 ] || skip_all "the guest is amd64 and this host is $(uname -m)"

mkdir -p "$cache" "$out" || skip_all "cannot create $cache or $out"
exec 9>"$cache/lock"
flock 9

# --- the packages -------------------------------------------------------------
if [ -n "${SBX_SYSTEM_DEBS:-}" ]; then
        debs=$SBX_SYSTEM_DEBS
        ok "packages given in $debs"
elif git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
        # The tracked files as they are in the work tree (changes included,
        # dated now when unpacked, not at the epoch of the archive):
        # the key is their content, so an unchanged tree is not rebuilt.
        tree_tar=$(mktemp /tmp/sbx-system-tree.XXXXXX)
        (cd "$srcdir" && git ls-files -z | tar --null -T - --sort=name --mtime=@0 --owner=0 --group=0 -cf "$tree_tar")
        debs=$cache/debs-$(sha256sum <"$tree_tar" | cut -c1-16)
        if ls "$debs"/sbx-supervisor_*.deb >/dev/null 2>&1; then
                ok "packages of this tree cached in $debs"
        else
                s=$(date +%s)
                bdir=$(mktemp -d /tmp/sbx-system-build.XXXXXX)
                mkdir "$bdir/sbx" && tar -m -xf "$tree_tar" -C "$bdir/sbx"
                if (cd "$bdir/sbx" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
                        dpkg-buildpackage -us -uc -b -Pnocheck >"$bdir/build.log" 2>&1); then
                        rm -rf "$cache"/debs-*
                        mkdir -p "$debs" && cp "$bdir"/*.deb "$debs/"
                        ok "packages built in $(($(date +%s) - s)) s: $debs"
                else
                        not_ok "dpkg-buildpackage"
                        tail -n 40 "$bdir/build.log" | diag
                        echo "1..$n"
                        exit 1
                fi
                rm -rf "$bdir"
        fi
        rm -f "$tree_tar"
else
        skip_all "not a git checkout: set SBX_SYSTEM_DEBS to a directory of built .debs"
fi
# --- the guest image ----------------------------------------------------------
# What the guest has besides a minimal Debian: systemd as init, the stock
# kernel, what the checks and the shipped profiles use, and what the
# packages depend on (the guest has no network: dpkg -i installs them
# offline). The key names the image by this list and by this script's image
# steps, so a change rebuilds it.
guest_pkgs="systemd,systemd-sysv,udev,dbus,linux-image-amd64,initramfs-tools,python3,nodejs,jq,procps,iproute2"
for deb in "$debs"/*.deb; do
        case $deb in *-dbgsym_*) continue ;; esac
        dpkg-deb -f "$deb" Depends
done | tr ',' '\n' | sed -E 's/\|.*//; s/\(.*//; s/[[:space:]]//g' | grep -v '^sbx-' | sort -u >"$cache/deps.txt"
guest_pkgs+=$(sed 's/^/,/' "$cache/deps.txt" | tr -d '\n')
image_steps=$(sed -n '/^# >>> image/,/^# <<< image/p' "$0")
image_key=$(printf '%s\n%s\n%s\n' "$suite" "$guest_pkgs" "$image_steps" | sha256sum | cut -c1-16)
image=$cache/image-$image_key

# >>> image
build_image() {
        local tmp=$1 root=$1/root
        # The test service: mounts the payload disk, runs its guest.sh with
        # TAP on the second serial port, keeps the journal, powers off.
        mmdebstrap --variant=apt --include="$guest_pkgs" \
                --customize-hook='echo sbx-guest > "$1/etc/hostname"' \
                --customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 sbx-guest\n" > "$1/etc/hosts"' \
                --customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\n" > "$1/etc/fstab"' \
                --customize-hook='for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer man-db.timer; do ln -sf /dev/null "$1/etc/systemd/system/$u"; done' \
                --customize-hook='mkdir -p "$1/mnt/payload" && cat > "$1/usr/local/sbin/sbx-system-test" <<"EOF"
#!/bin/sh
# Runs the checks the host put on the payload disk (/dev/vdb), then powers off.
mount /dev/vdb /mnt/payload || { echo "Bail out! no payload disk" > /dev/ttyS1; systemctl poweroff; exit 1; }
stty -F /dev/ttyS1 raw -echo 2>/dev/null
mkdir -p /mnt/payload/out
bash /mnt/payload/guest.sh > /dev/ttyS1 2> /mnt/payload/out/guest.stderr
echo "# guest.sh exited $?" > /dev/ttyS1
journalctl -b --no-pager -o short-monotonic > /mnt/payload/out/journal.txt 2>&1
sync
umount /mnt/payload
systemctl poweroff
EOF
chmod 0755 "$1/usr/local/sbin/sbx-system-test"' \
                --customize-hook='cat > "$1/etc/systemd/system/sbx-system-test.service" <<"EOF"
[Unit]
Description=sbx system test (t/system/guest.sh from the payload disk)
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/sbx-system-test
TimeoutStartSec=infinity
StandardOutput=journal+console
EOF
ln -s ../sbx-system-test.service "$1/etc/systemd/system/multi-user.target.wants/sbx-system-test.service"' \
                "$suite" "$root" >"$tmp/mmdebstrap.log" 2>&1 || return 1
        cp "$root"/boot/vmlinuz-* "$tmp/vmlinuz" && cp "$root"/boot/initrd.img-* "$tmp/initrd.img" || return 1
        rm -rf "$root/boot"/* "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*_Packages
        mke2fs -q -t ext4 -L root -d "$root" "$tmp/root.img" 4G >/dev/null || return 1
        rm -rf "$root"
}
# <<< image

if [ -f "$image/root.img" ]; then
        ok "guest image (Debian 12, systemd, linux-image-amd64) cached in $image"
elif [ "$(id -u)" != 0 ]; then
        skip_all "the guest image is not built yet and building it (mmdebstrap into a directory, mke2fs -d) needs root"
elif ! timeout 30 bash -c 'exec 3<>/dev/tcp/deb.debian.org/80' 2>/dev/null; then
        skip_all "the guest image is not built yet and deb.debian.org, whose packages it is built from, cannot be reached"
else
        rm -rf "$image.tmp" && mkdir -p "$image.tmp"
        s=$(date +%s)
        if build_image "$image.tmp"; then
                mv "$image.tmp" "$image"
                ok "guest image built in $(($(date +%s) - s)) s: $image"
        else
                not_ok "building the guest image"
                tail -n 30 "$image.tmp/mmdebstrap.log" | diag
                cp "$image.tmp/mmdebstrap.log" "$out/" 2>/dev/null
                echo "1..$n"
                exit 1
        fi
fi
# Images of older keys go.
for old in "$cache"/image-*; do
        [ "$old" = "$image" ] || rm -rf "$old"
done

flock -u 9

# --- the payload disk: packages, checks, the README's sample job --------------
run=$(mktemp -d /tmp/sbx-system-run.XXXXXX)
mkdir -p "$run/payload/debs"
cp "$debs"/*.deb "$run/payload/debs/" && rm -f "$run/payload/debs"/*-dbgsym_*.deb
cp "$srcdir/t/system/guest.sh" "$run/payload/"
# The README's sample job: the sbx-launch command of the quick start,
# with the installed launcher.
sed -n '/<!-- quickstart:setup -->/,/<!-- \/quickstart -->/p' "$srcdir/README.md" |
        grep -o "\./launcher/sbx-launch -- sh -c '[^']*'" | sed 's|^\./launcher/sbx-launch|sbx-launch|' \
        >"$run/payload/readme-sample.sh"
# The sample bundle in a registry signed with a key made for the run, by
# the packaged sbx-bundle (run here: the guest has no minisign).
if command -v minisign >/dev/null; then
        mkdir -p "$run/bundle/x" "$run/payload/registry"
        dpkg-deb -x "$(ls "$debs"/sbx-bundle_*.deb | head -n 1)" "$run/bundle/x" &&
                (cd "$run/bundle" && ./x/usr/bin/sbx-bundle pack "$srcdir/contrib/bundles/hello" >/dev/null) &&
                "$run/bundle/x/usr/bin/sbx-bundle" index "$run/payload/registry" "$run/bundle"/hello-*.tar.gz >/dev/null &&
                minisign -G -W -p "$run/payload/registry/publisher.pub" -s "$run/bundle/publisher.sec" >/dev/null &&
                minisign -S -s "$run/bundle/publisher.sec" -m "$run/payload/registry/hello/index.json" \
                        -t 'serial=1 name=hello' >/dev/null ||
                echo "# the sample bundle could not be packed and signed here: its check will say so"
else
        echo "# no minisign here (apt-get install minisign): the bundle check will be skipped"
fi
mke2fs -q -t ext4 -L payload -d "$run/payload" "$run/payload.img" 256M >/dev/null

# --- boot ---------------------------------------------------------------------
accel_args=()
# KVM can be there and still not run a guest (nested virtualization that
# hangs): the first accelerator whose kernel prints its banner on the
# console within 30 s is the one.
for a in $accel; do
        [ "$a" = kvm ] && [ ! -w /dev/kvm ] && continue
        rm -f "$run/probe.log"
        timeout 30 qemu-system-x86_64 -accel "$a" -cpu max -m 256 -display none -monitor none -no-reboot -nic none \
                -kernel "$image/vmlinuz" -append "console=ttyS0 panic=-1 rdinit=/nonexistent" \
                -serial "file:$run/probe.log" >/dev/null 2>&1 &
        probe=$!
        wait_s=0
        until grep -q "Linux version" "$run/probe.log" 2>/dev/null || [ $wait_s -ge 30 ] || ! kill -0 $probe 2>/dev/null; do
                sleep 1
                wait_s=$((wait_s + 1))
        done
        kill $probe 2>/dev/null
        wait $probe 2>/dev/null
        if grep -q "Linux version" "$run/probe.log" 2>/dev/null; then
                accel_args=(-accel "$a")
                break
        fi
        echo "# qemu -accel $a: no kernel banner on the console within ${wait_s} s; trying the next"
done
if [ -z "${accel_args[*]:-}" ]; then
        rm -rf "$run"
        skip_all "qemu boots no kernel here with any of: $accel"
fi
s=$(date +%s)
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 "${accel_args[@]}" -cpu max -smp 2 -m 2048 \
        -display none -monitor none -no-reboot -nic none \
        -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
        -append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.unified_cgroup_hierarchy=1" \
        -drive "file=$image/root.img,format=raw,if=virtio,snapshot=on" \
        -drive "file=$run/payload.img,format=raw,if=virtio" \
        -serial "file:$run/serial.log" -chardev "file,id=tap,path=$run/tap.log" -device isa-serial,chardev=tap \
        >"$run/qemu.log" 2>&1
qrc=$?
boot_s=$(($(date +%s) - s))
debugfs -R "rdump /out $run" "$run/payload.img" >/dev/null 2>&1

tr -d '\r' <"$run/tap.log" >"$run/tap.txt"
if [ "$qrc" -eq 0 ] && grep -q '^# guest.sh exited' "$run/tap.txt"; then
        virt=$(sed -n 's/^# virtualization: //p' "$run/tap.txt")
        ok "guest booted (${virt:-?}: kvm is KVM, qemu is TCG) and ran its checks in $boot_s s"
else
        not_ok "guest booted and ran its checks (qemu exit $qrc after $boot_s s; timeout ${timeout_s} s)"
        diag <"$run/qemu.log"
        tail -n 40 "$run/serial.log" | diag
fi
# The guest's checks, renumbered after the host's.
while IFS= read -r line; do
        case $line in
        1..*) ;;
        "not ok "*"# TODO"*) n=$((n + 1)); echo "not ok $n - ${line#not ok * - }" ;;
        "ok "*) ok "${line#ok * - }" ;;
        "not ok "*) not_ok "${line#not ok * - }" ;;
        *) echo "$line" ;;
        esac
done <"$run/tap.txt"
grep -q '^1\.\.' "$run/tap.txt" || not_ok "the guest's checks ended without their plan (see the serial log)"

echo "# check-system took $(elapsed) s"
if [ "$failed" -gt 0 ]; then
        rm -rf "$out" && mkdir -p "$out"
        cp "$run"/serial.log "$run"/qemu.log "$run"/tap.txt "$out/" 2>/dev/null
        cp -r "$run"/out/. "$out/" 2>/dev/null
        echo "# kept in $out: serial.log (console), journal.txt (the guest's journal), qemu.log, tap.txt"
fi
rm -rf "$run"
rmdir "$out" 2>/dev/null
echo "1..$n"
[ "$failed" -eq 0 ]
