#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run a command the way a user at a terminal does: in a session of its own
whose controlling terminal is a fresh pseudo-terminal (the "caller's
terminal"), with that terminal as stdin, stdout and stderr. Type the given
input into it, read what the command shows, and report as JSON:

  status        the command's exit status (128+N for signal N)
  output        everything shown on the terminal
  modes_same    whether the terminal's modes after the command are those
                from before it (iflag, oflag, cflag, lflag and the control
                characters)
  pending       bytes waiting in the terminal's input queue afterwards:
                what a shell reading the terminal would read next
  rows_cols     the window size the test gave the terminal

Options: --input TEXT (typed after --input-after TEXT has been shown, or at
once), --resize ROWS COLS after --resize-after TEXT has been shown,
--signal NAME after --signal-after TEXT has been shown, --user NAME (the
command runs as that user, who then owns the terminal), --timeout SECONDS.
"""
import argparse
import fcntl
import json
import os
import pwd
import select
import signal
import struct
import sys
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def modes(fd):
    m = termios.tcgetattr(fd)
    return [m[0], m[1], m[2], m[3], [c if isinstance(c, int) else ord(c) for c in m[6]]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", default=None)
    ap.add_argument("--input-after", default=None)
    ap.add_argument("--resize", nargs=2, type=int, default=None)
    ap.add_argument("--resize-after", default=None)
    ap.add_argument("--signal", default=None)
    ap.add_argument("--signal-after", default=None)
    ap.add_argument("--user", default=None)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd

    master, slave = os.openpty()
    set_size(slave, 24, 80)
    # The modes a login leaves a terminal in: canonical, echo, signals.
    before = modes(slave)
    if a.user:
        pw = pwd.getpwnam(a.user)
        os.fchown(slave, pw.pw_uid, pw.pw_gid)

    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            os.close(slave)
            os.close(master)
            if a.user:
                os.setgroups([])
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)

    output = b""
    typed = a.input is None
    resized = a.resize is None
    signalled = a.signal is None
    status = None
    deadline = time.monotonic() + a.timeout
    os.set_blocking(master, False)
    while True:
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            try:
                output += os.read(master, 65536)
            except OSError:
                pass
        shown = output.decode("utf-8", "replace")
        if not typed and (a.input_after is None or a.input_after in shown):
            os.write(master, a.input.encode())
            typed = True
        if not resized and a.resize_after in shown:
            set_size(master, *a.resize)
            resized = True
        if not signalled and a.signal_after in shown:
            os.kill(pid, getattr(signal, "SIG" + a.signal))
            signalled = True
        if status is None:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
                if status < 0:
                    status = 128 - status
                settle = time.monotonic() + 0.3
        elif time.monotonic() > settle and not r:
            break
        if time.monotonic() > deadline:
            if status is None:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            status = "timeout"
            break

    after = modes(slave)
    # What is waiting in the input queue, whole lines or not.
    m = termios.tcgetattr(slave)
    m[3] &= ~termios.ICANON
    m[6][termios.VMIN] = 0
    m[6][termios.VTIME] = 0
    termios.tcsetattr(slave, termios.TCSANOW, m)
    pending = b""
    try:
        pending = os.read(slave, 65536)
    except (BlockingIOError, OSError):
        pass
    rows, cols = struct.unpack("HHHH", fcntl.ioctl(slave, termios.TIOCGWINSZ, b"\0" * 8))[:2]
    json.dump({
        "status": status,
        "output": output.decode("utf-8", "replace"),
        "modes_same": before == after,
        "modes_before": before,
        "modes_after": after,
        "pending": pending.decode("utf-8", "replace"),
        "rows_cols": [rows, cols],
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
