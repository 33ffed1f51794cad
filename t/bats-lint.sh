#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Rejects checks in t/*.bats that pass whatever happens. bats runs a test
# under `set -e`, and bash's errexit ignores a failing command that is
#  - not the last of an && list:   [ "$a" = 1 ] && [ "$b" = 2 ]
#    passes when $a is wrong (only the last test of the test body counts);
#  - inverted with `!`:            ! grep -q secret log
#    passes when the secret is there, unless it ends in `|| false`;
# and `run` swallows its command's status: after `run` the test must use
# $status (or say `run -N` / `run !`), before the next `run`. And a
# t/*.bats that no test list names would never run at all.
# A negation or && list that is the whole last line of a test is fine: its
# status is the test's. Conditions of if/while/until are fine.
#
#   t/bats-lint.sh            self-test on t/bats-lint/*.sample, then t/*.bats
#   t/bats-lint.sh FILE...    lint these files only (exit 1 on a finding)
set -u
AWK=${AWK:-awk}
srcdir=${SBX_SRCDIR:-$(dirname "$0")/..}

# One line per finding: FILE:LINE: what is wrong.
lint() {
        "$AWK" '
function reset_file() {
        stk = ""; intest = 0; infn = ""; nhd = 0; hdi = 0
        lm = ""; lc = ""; lstart = 0
        ntests = 0; nl = 0
}

# Scan one physical line of shell. Tracks quotes, $(...) and backquotes
# across lines in stk; sets M (the line with everything not at the top
# level, and comments, blanked: same length) and C (the line with only
# comments blanked), cont when a backslash continues the line, and queues
# here-document terminators.
function scan(line,    i, n, ch, nx, top, pre, m, c, j, w, dash, q) {
        M = ""; C = ""; cont = 0
        n = length(line)
        for (i = 1; i <= n; i++) {
                ch = substr(line, i, 1); nx = substr(line, i + 1, 1)
                top = substr(stk, length(stk), 1)
                pre = stk
                if (top == "s") {
                        if (ch == "\047") stk = substr(stk, 1, length(stk) - 1)
                } else if (top == "d" || top == "b") {
                        if (ch == "\\") {
                                M = M "__"; C = C ch nx; i++; continue
                        }
                        if ((top == "d" && ch == "\"") || (top == "b" && ch == "`"))
                                stk = substr(stk, 1, length(stk) - 1)
                        else if (ch == "$" && nx == "(") {
                                stk = stk "p"; M = M "__"; C = C ch nx; i++; continue
                        } else if (ch == "`" && top == "d")
                                stk = stk "b"
                } else {
                        # top level ("") or inside $( ... ) ("p")
                        if (ch == "\\") {
                                if (i == n) { cont = 1; M = M " "; C = C " "; continue }
                                M = M "__"; C = C ch nx; i++; continue
                        }
                        if (ch == "#" && (i == 1 || substr(line, i - 1, 1) ~ /[ \t;(]/)) {
                                for (; i <= n; i++) { M = M " "; C = C " " }
                                break
                        }
                        if (ch == "\047") stk = stk "s"
                        else if (ch == "\"") stk = stk "d"
                        else if (ch == "`") stk = stk "b"
                        else if (ch == "$" && nx == "(") {
                                stk = stk "p"; M = M "__"; C = C ch nx; i++; continue
                        } else if (ch == "(" && top == "p") stk = stk "p"
                        else if (ch == ")" && top == "p") stk = substr(stk, 1, length(stk) - 1)
                        else if (stk == "" && ch == "<" && nx == "<" && substr(line, i + 2, 1) != "<") {
                                # a here-document: its body is not shell
                                j = i + 2; dash = 0
                                if (substr(line, j, 1) == "-") { dash = 1; j++ }
                                while (substr(line, j, 1) ~ /[ \t]/) j++
                                q = substr(line, j, 1)
                                if (q == "\047" || q == "\"") j++
                                w = ""
                                while (substr(line, j, 1) ~ /[A-Za-z0-9_]/) { w = w substr(line, j, 1); j++ }
                                if (q == "\047" || q == "\"") j++
                                if (w != "") {
                                        nhd++; hdw[nhd] = w; hdd[nhd] = dash
                                        m = substr(line, i, j - i)
                                        M = M m; C = C m; i = j - 1; continue
                                }
                        }
                }
                M = M ((pre == "" && stk == "") ? ch : "_"); C = C ch
        }
}

# Cut logical line k of the current test into words and operators.
function tokens(k,    s, n, i, ch, nx, w, ws) {
        s = LM[k]; n = length(s); nt = 0; w = ""
        for (i = 1; i <= n + 1; i++) {
                ch = (i <= n) ? substr(s, i, 1) : " "; nx = substr(s, i + 1, 1)
                if (ch == "&" && (substr(s, i - 1, 1) ~ /[<>]/ || nx == ">")) ch = "w&"
                if (ch ~ /^[ \t]$/ || ch == ";" || ch == "&" || ch == "|" || ch == "(" || ch == ")") {
                        if (w != "") { nt++; tok[nt] = w; tpos[nt] = ws; w = "" }
                        if (ch ~ /^[ \t]$/) continue
                        nt++; tpos[nt] = i
                        if ((ch == "&" || ch == "|" || ch == ";") && nx == ch) { tok[nt] = ch ch; i++ }
                        else tok[nt] = ch
                        continue
                }
                if (ch == "w&") ch = "&"
                if (w == "") ws = i
                w = w ch
        }
}

# [, [[, test, grep, cmp, diff: commands whose status is the check.
function is_check(words,    a) {
        split(words, a, " ")
        if (a[1] == "[" || a[1] == "[[" || a[1] == "test") return 1
        if (a[1] ~ /^(grep|egrep|fgrep|cmp|diff)$/) return 1
        return 0
}

function finding(line, msg) {
        printf "%s:%d: %s\n", FILENAME, line, msg
        found++
}

# A segment of logical line k ends: judge it. A segment that is the whole
# last line of the test gives the test its status, so it may end in a
# check or a negation.
function judge(    j, whole) {
        if (np == 0) return
        whole = (k == tl && nseg_line == 1 && endofline)
        if (np >= 2 && pop[np] == "&&" && !pneg[np] && is_check(pw[np]) && !cond && !whole)
                finding(LN[k], "a check at the end of an && list: a failure before the && is ignored (one check per line, or if ... fi)")
        # A negation followed by && or || is the condition of what follows
        # (`! a || false` is the way to make it a check); at the end of a
        # list it is a check that cannot fail.
        if (pneg[np] && !cond && !whole)
                finding(LN[k], "a negated command is ignored by errexit: end it with || false")
        for (j = 1; j <= np; j++) if (prun[j]) {
                nrun++; runline[nrun] = LN[k]; runseg[nrun] = ng; runchecked[nrun] = prunck[j]
        }
        np = 0; cond = 0
}

# Cut logical line k into segments (lists of pipelines joined by && or
# ||), each judged as it ends; note the pipelines that start with run.
function segments(    t, w, cp) {
        np = 0; cond = 0
        for (t = 1; t <= nt; t++) {
                w = tok[t]
                cp = (np == 0 || pw[np] == "")
                if (w == "&&" || w == "||") {
                        np++; pw[np] = ""; pneg[np] = 0; pop[np] = w; prun[np] = 0; prunck[np] = 0
                        continue
                }
                if (w == ";" || w == ";;" || w == "&" || w == "(" || w == ")" ||
                    (cp && (w == "do" || w == "then" || w == "else" || w == "done" || w == "fi" || w == "esac" || w == "{" || w == "}"))) {
                        endsegment(t)
                        continue
                }
                if (np == 0) {
                        np = 1; pw[1] = ""; pneg[1] = 0; pop[1] = ""; prun[1] = 0; prunck[1] = 0
                        segfrom = tpos[t]
                }
                if (pw[np] == "" && (w == "if" || w == "elif" || w == "while" || w == "until")) { cond = 1; continue }
                if (pw[np] == "" && w == "!") { pneg[np] = 1; continue }
                if (w == "|") { pw[np] = pw[np] " |"; continue }
                if (pw[np] == "" && w == "run") prun[np] = 1
                else if (prun[np] && pw[np] ~ /^run( --?[a-z-]+)*$/ && (w ~ /^-[0-9]+$/ || w == "!")) prunck[np] = 1
                if (pw[np] == "" && (w in statusfn)) segstatus = 1
                pw[np] = (pw[np] == "") ? w : pw[np] " " w
        }
        endofline = 1
        endsegment(nt + 1)
        endofline = 0
}

function endsegment(t,    txt, j) {
        if (np == 0) return
        nseg_line++
        ng++
        isrun[ng] = 0
        for (j = 1; j <= np; j++) if (prun[j]) isrun[ng] = 1
        txt = substr(LC[k], segfrom, (t <= nt ? tpos[t] : length(LC[k]) + 1) - segfrom)
        gstatus[ng] = segstatus || (txt ~ /\$\{?status([^A-Za-z0-9_]|$)/)
        segstatus = 0
        judge()
}

# A run is checked by the first segment after it, up to the next run,
# that reads $status or calls a function of this file that does.
function analyse(    r, g, ok) {
        nrun = 0; ng = 0
        for (k = tf; k <= tl; k++) {
                nseg_line = 0
                tokens(k)
                segments()
        }
        for (r = 1; r <= nrun; r++) {
                if (runchecked[r]) continue
                ok = 0
                for (g = runseg[r] + 1; g <= ng; g++) {
                        if (isrun[g]) break
                        if (gstatus[g]) { ok = 1; break }
                }
                if (!ok) finding(runline[r], "run without a check of $status before the next run or the end of the test (or run -N / run !)")
        }
}

function end_test() {
        tf = tstart; tl = nl
        analyse()
}

FNR == 1 { reset_file() }

# here-document bodies
nhd > 0 {
        hdi = (hdi == 0) ? 1 : hdi
        t = $0
        if (hdd[hdi]) sub(/^\t+/, "", t)
        if (t == hdw[hdi]) { hdi++; if (hdi > nhd) { nhd = 0; hdi = 0 } }
        next
}

!intest && lm == "" {
        if ($0 ~ /^@test[ \t]/ && $0 ~ /\{[ \t]*$/) { intest = 1; tstart = nl + 1; stk = ""; next }
        if (match($0, /^[A-Za-z_][A-Za-z0-9_]*[ \t]*\(\)/)) { infn = $0; sub(/[ \t]*\(.*/, "", infn) }
        if (infn != "" && $0 ~ /\$\{?status([^A-Za-z0-9_]|$)/) statusfn[infn] = 1
        if ($0 ~ /^}/) infn = ""
}

intest && /^@test[ \t]/ {
        finding(FNR, "cannot read the test before this one (an unclosed quote?)")
        intest = 0; lm = ""; lc = ""; stk = ""
}

intest && lm == "" && stk == "" && $0 ~ /^}[ \t]*$/ {
        intest = 0
        end_test()
        next
}

{
        scan($0)
        if (!intest) next
        if (lm == "") lstart = FNR
        lm = lm M " "; lc = lc C " "
        t = M; sub(/[ \t]+$/, "", t)
        if (stk != "" || cont || t ~ /(&&|\|\||\|)$/) next
        if (lm ~ /^[ \t]*$/) { lm = ""; lc = ""; next }
        nl++; LM[nl] = lm; LC[nl] = lc; LN[nl] = lstart
        lm = ""; lc = ""
}

END { exit found > 0 }
' "$@"
}

if [ $# -gt 0 ]; then
        lint "$@"
        exit
fi

samples=$(ls "$srcdir"/t/bats-lint/*.sample)
files=$(ls "$srcdir"/t/*.bats)
n=0
for f in $samples $files; do n=$((n + 1)); done
echo "1..$n"
i=0
# Each sample marks the lines the lint must report with "lint-expect".
for f in $samples; do
        i=$((i + 1))
        want=$(grep -n '# lint-expect$' "$f" | cut -d: -f1 | sort -n | tr '\n' ' ')
        got=$(lint "$f" | cut -d: -f2 | sort -n | tr '\n' ' ')
        if [ "$want" = "$got" ]; then
                echo "ok $i - self-test $(basename "$f")"
        else
                echo "not ok $i - self-test $(basename "$f")"
                echo "# want findings on lines: $want"
                echo "# got: $got"
                lint "$f" | sed 's/^/# /'
        fi
done
for f in $files; do
        i=$((i + 1))
        out=$(lint "$f")
        # and make check runs it: a file named in no list is never run
        if ! grep -qs "t/$(basename "$f")" "$srcdir/Makefile.am" "$srcdir"/t/*.mk; then
                out="${out:+$out
}$(basename "$f"): in no test list of Makefile.am or t/*.mk: make check would never run it"
        fi
        if [ -z "$out" ]; then
                echo "ok $i - bats-lint $(basename "$f")"
        else
                echo "not ok $i - bats-lint $(basename "$f")"
                echo "$out" | sed 's/^/# /'
        fi
done
