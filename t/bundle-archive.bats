#!/usr/bin/env bats
# Hostile and careless archives, signed as if by their publisher (SECURITY.md
# 29): absolute paths, '..', symbolic links out of the tree (alone or in a
# chain), writing through a link, hard links to anything but a file of the
# bundle, devices, fifos, setuid and setgid bits, too many entries, too
# long paths, a 1 MB archive that expands to 1 GB, a path twice; and
# manifests that are missing, not files, wrong, or the wrong bundle's. Each
# is E_BUNDLE_INVALID naming the entry or the manifest's file:line;
# nothing is written outside the cache's staging, nothing is kept.

load sup-unit/bundle
bats_require_minimum_version 1.5.0

setup_file() {
        bundle_init
        # made once: a GiB of zeros takes a while to compress
        python3 "$SBX_SRCDIR/t/helpers/hostile-archive.py" bomb "$SUP_DIR/bomb.tar.gz.saved"
}

teardown_file() {
        bundle_fini
}

setup() {
        require_userns
        bundle_reset
        reg_serve
        SERIAL=0
        BUNDLE_DAEMON="bundle_max_entries = 100
bundle_max_unpacked = 64M" BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
}

teardown() {
        sup_stop
        reg_stop
        rm -f /tmp/sbx-evil-absolute "$SUP_DIR/state/sbx-evil-dotdot" "$SUP_DIR/state/cache/sbx-evil-dotdot"
}

# refused KIND MESSAGE-PART: an archive of KIND, signed and listed, is
# E_BUNDLE_INVALID with the message, and nothing of it stays.
refused() {
        local kind=$1 want=$2 job rec
        SERIAL=$((SERIAL + 1))
        if [ "$kind" = bomb ]; then
                cp "$SUP_DIR/bomb.tar.gz.saved" "$SUP_DIR/$kind.tgz"
        else
                python3 "$SBX_SRCDIR/t/helpers/hostile-archive.py" "$kind" "$SUP_DIR/$kind.tgz"
        fi
        publish_raw evil 1.0.0 "$SUP_DIR/$kind.tgz" "$SERIAL"
        # a new index each time
        job=$(ctl submit --bundle "evil@sha256:$(sha256sum "$SUP_DIR/$kind.tgz" | cut -d' ' -f1)")
        rec=$(job_record "$job")
        echo "$kind: $rec" >&2
        [ "$(json_get result.state <<<"$rec")" = error ]
        [ "$(json_get result.error.code <<<"$rec")" = E_BUNDLE_INVALID ]
        [[ "$(json_get result.error.message <<<"$rec")" == *"$want"* ]]
        [ -z "$(ls -A "$SUP_DIR/state/cache")" ]
        grep -q '"job":"'"$job"'".*"code":"E_BUNDLE_INVALID"' "$SUP_DIR/audit.log"
}

@test "a good archive made by python's tarfile runs (the baseline of this file)" {
        python3 "$SBX_SRCDIR/t/helpers/hostile-archive.py" good "$SUP_DIR/good.tgz"
        publish_raw evil 1.0.0 "$SUP_DIR/good.tgz" 1
        run ctl run --bundle evil
        [ "$status" -eq 0 ]
        [ "$output" = evil ]
}

@test "absolute paths and '..' are refused; nothing lands outside" {
        refused absolute "entry '/tmp/sbx-evil-absolute': the path is an absolute path"
        [ ! -e /tmp/sbx-evil-absolute ]
        refused dotdot "entry 'sub/../../sbx-evil-dotdot': the path contains '..'"
        [ ! -e "$SUP_DIR/state/sbx-evil-dotdot" ]
        [ ! -e "$SUP_DIR/state/cache/sbx-evil-dotdot" ]
}

@test "symbolic links that leave the tree, alone or in a chain, and writing through a link are refused" {
        refused symlink-absolute "entry 'etc': a symbolic link to an absolute path leaves the bundle"
        refused symlink-out "entry 'sub/up': a symbolic link whose target leaves the bundle"
        refused symlink-chain "entry 'out': a symbolic link that leads out of the bundle (through other links)"
        refused through-symlink "entry 'd/written-through-a-link': a directory on its path is a symbolic link or a file"
}

@test "hard links to anything but a file unpacked before are refused" {
        refused hardlink-out "entry 'h': the hard link's target is an absolute path"
        refused hardlink-missing "entry 'h': a hard link to 'not-unpacked-before', which is not a file unpacked before it"
}

@test "devices, fifos, setuid and setgid bits are refused" {
        refused chardev "entry 'null': a character device"
        refused blockdev "entry 'sda': a block device"
        refused fifo "entry 'pipe': a fifo"
        refused setuid "entry 'su': a setuid or setgid bit"
        refused setgid "entry 'sg': a setuid or setgid bit"
}

@test "too many entries, too long paths, a control character, a path twice are refused" {
        refused many "the bundle has more than 100 entries"
        refused long-path "the path is longer than 1024 bytes"
        refused long-name "the path has a component longer than 255 bytes"
        refused control "the path contains a control character"
        refused twice "entry 'dup': the path is in the archive twice"
        refused not-tar "not a tar archive"
}

@test "a 1 MB archive that expands to 1 GB stops at bundle_max_unpacked" {
        [ "$(stat -c %s "$SUP_DIR/bomb.tar.gz.saved")" -lt $((2 * 1024 * 1024)) ]
        refused bomb "the bundle unpacks to more than 67108864 bytes (at entry 'zeros')"
}

@test "a manifest missing, not a file, with a syntax error, or of another bundle is refused naming file:line" {
        refused no-manifest "evil-1.0.0.tar.gz:manifest.ini: missing"
        refused manifest-link "evil-1.0.0.tar.gz:manifest.ini: not a regular file"
        refused manifest-syntax "evil-1.0.0.tar.gz:manifest.ini:9: limits.swap: unknown key"
        refused manifest-other "the manifest is of other 1.0.0, the index lists it as evil 1.0.0"
}
