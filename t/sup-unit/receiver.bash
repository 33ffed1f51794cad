# SPDX-License-Identifier: Apache-2.0
# Shared by the callback bats files: t/helpers/callback-receiver.py on
# 127.0.0.1 (its log in $SUP_DIR/recv/log, its mode set with mode), and
# waits on what it received and on what callbacks ls says.

# recv_start: a fresh secret for the tenants' callbacks in $SUP_DIR/secret
# (32 random bytes in hex), then the receiver that checks signatures with it.
recv_start() {
        head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$SUP_DIR/secret"
        chmod 0600 "$SUP_DIR/secret"
        mkdir -p "$SUP_DIR/recv"
        rm -f "$SUP_DIR/recv/port"
        python3 "$SBX_SRCDIR/t/helpers/callback-receiver.py" "$SUP_DIR/recv" "$SUP_DIR/secret" 3>&- &
        echo $! > "$SUP_DIR/recv.pid"
        for i in $(seq 200); do
                [ -s "$SUP_DIR/recv/port" ] && break
                sleep 0.05
        done
        [ -s "$SUP_DIR/recv/port" ] || { echo "receiver did not start" >&2; return 1; }
}

# recv_fini: the receiver, then the daemon and its directory (teardown_file).
# The receiver first: sup_fini removes the directory with its pid file, and
# a receiver left running holds bats' output pipe open, so the file would
# never end.
recv_fini() {
        recv_stop
        sup_fini
}

recv_stop() {
        local pid
        [ -f "$SUP_DIR/recv.pid" ] || return 0
        pid=$(cat "$SUP_DIR/recv.pid")
        if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF callback-receiver.py; then
                kill "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        fi
        rm -f "$SUP_DIR/recv.pid"
}

mode() {
        echo "$*" > "$SUP_DIR/recv/mode.tmp"
        mv "$SUP_DIR/recv/mode.tmp" "$SUP_DIR/recv/mode"
}

# The receiver's log lines about a job.
posts() {
        grep -F "\"job\": \"$1\"" "$SUP_DIR/recv/log" 2>/dev/null || true
}

# wait_posts JOB N [STATUS]: until N requests for the job (with STATUS) were logged.
wait_posts() {
        local i
        for i in $(seq 600); do
                [ "$(posts "$1" | grep -c "\"status\": ${3:-[0-9]*}")" -ge "$2" ] && return 0
                sleep 0.1
        done
        echo "job $1: fewer than $2 posts${3:+ answered $3}:" >&2
        posts "$1" >&2
        return 1
}

# wait_cb JOB STATE: until callbacks ls shows the job in that state.
wait_cb() {
        local i
        for i in $(seq 600); do
                ctl callbacks ls --state "$2" | grep -q "^$1 " && return 0
                sleep 0.1
        done
        echo "job $1 never became $2:" >&2
        ctl callbacks ls >&2
        return 1
}
