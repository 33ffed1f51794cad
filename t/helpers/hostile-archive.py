#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Archives a hostile or careless publisher could sign, for the bundle
tests: each is a gzip'd tar with a valid manifest (bundle "evil" 1.0.0, or
NAME given) and run.sh, plus what KIND names.

    hostile-archive.py KIND OUT [NAME]
"""
import io
import sys
import tarfile

KIND, OUT = sys.argv[1], sys.argv[2]
NAME = sys.argv[3] if len(sys.argv) > 3 else "evil"
MANIFEST = (
    "[bundle]\nname = %s\nversion = 1.0.0\n[run]\ncommand = /bundle/run.sh\nprofile = shell\n" % NAME
).encode()


def info(name, kind=tarfile.REGTYPE, size=0, mode=0o644, **kw):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.size = size
    ti.mode = mode
    ti.mtime = 0
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti


def add_file(tar, name, data, mode=0o644):
    tar.addfile(info(name, size=len(data), mode=mode), io.BytesIO(data))


class Zeros(io.RawIOBase):
    """n zero bytes, without holding them."""

    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k


def body(tar):
    if KIND != "no-manifest":
        if KIND == "manifest-link":
            tar.addfile(info("manifest.ini", tarfile.SYMTYPE, linkname="run.sh"))
        elif KIND == "manifest-syntax":
            add_file(tar, "manifest.ini", MANIFEST + b"[limits]\nmemory = 64M\nswap = 1G\n")
        elif KIND == "manifest-other":
            add_file(tar, "manifest.ini", MANIFEST.replace(b"name = " + NAME.encode(), b"name = other"))
        else:
            add_file(tar, "manifest.ini", MANIFEST)
    add_file(tar, "run.sh", b"#!/bin/sh\necho evil\n", 0o755)
    if KIND == "absolute":
        add_file(tar, "/tmp/sbx-evil-absolute", b"x")
    elif KIND == "dotdot":
        add_file(tar, "sub/../../sbx-evil-dotdot", b"x")
    elif KIND == "symlink-absolute":
        tar.addfile(info("etc", tarfile.SYMTYPE, linkname="/etc"))
    elif KIND == "symlink-out":
        tar.addfile(info("sub/up", tarfile.SYMTYPE, linkname="../../.."))
    elif KIND == "symlink-chain":
        # each link stays inside on its own; followed one after the other
        # they lead out
        tar.addfile(info("here", tarfile.SYMTYPE, linkname="."))
        tar.addfile(info("out", tarfile.SYMTYPE, linkname="here/.."))
    elif KIND == "through-symlink":
        tar.addfile(info("d", tarfile.SYMTYPE, linkname="sub"))
        add_file(tar, "sub/ok", b"x")
        add_file(tar, "d/written-through-a-link", b"x")
    elif KIND == "hardlink-out":
        tar.addfile(info("h", tarfile.LNKTYPE, linkname="/etc/passwd"))
    elif KIND == "hardlink-missing":
        tar.addfile(info("h", tarfile.LNKTYPE, linkname="not-unpacked-before"))
    elif KIND == "chardev":
        tar.addfile(info("null", tarfile.CHRTYPE, devmajor=1, devminor=3))
    elif KIND == "blockdev":
        tar.addfile(info("sda", tarfile.BLKTYPE, devmajor=8, devminor=0))
    elif KIND == "fifo":
        tar.addfile(info("pipe", tarfile.FIFOTYPE))
    elif KIND == "setuid":
        add_file(tar, "su", b"#!/bin/sh\n", 0o4755)
    elif KIND == "setgid":
        add_file(tar, "sg", b"#!/bin/sh\n", 0o2755)
    elif KIND == "many":
        for i in range(200):
            add_file(tar, "many/f%d" % i, b"x")
    elif KIND == "long-path":
        add_file(tar, "/".join(["d" * 50] * 22), b"x")
    elif KIND == "long-name":
        add_file(tar, "n" * 300, b"x")
    elif KIND == "control":
        add_file(tar, "bad\nname", b"x")
    elif KIND == "twice":
        add_file(tar, "dup", b"first")
        add_file(tar, "dup", b"second")
    elif KIND == "bomb":
        # a GiB of zeros: about a MiB once compressed
        n = 1 << 30
        tar.addfile(info("zeros", size=n), io.BufferedReader(Zeros(n), 1 << 20))
    elif KIND not in ("good", "no-manifest", "manifest-link", "manifest-syntax", "manifest-other"):
        sys.exit("unknown kind " + KIND)


if KIND == "not-tar":
    with open(OUT, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 8)
    sys.exit(0)
with tarfile.open(OUT, "w:gz", format=tarfile.PAX_FORMAT, compresslevel=6) as tar:
    body(tar)
