#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every man page builds from scdoc and is clean under `mandoc -Tlint`.
set -u
pages=$(ls "$SBX_BUILDDIR"/man/*.[1-8] "$SBX_SRCDIR"/man/*.[1-8] 2>/dev/null | sort -u)
if [ -z "$MANDOC" ] || ! command -v "$MANDOC" >/dev/null 2>&1; then
        echo "1..0 # SKIP mandoc is not installed (apt-get install mandoc)"
        exit 0
fi
n=0
for p in $pages; do n=$((n + 1)); done
echo "1..$n"
i=0
for p in $pages; do
        i=$((i + 1))
        # STYLE and WARNING level; mandoc's "lint" also reports purely
        # informational "base" notes that scdoc output cannot avoid.
        out=$("$MANDOC" -Tlint -W warning "$p" 2>&1)
        if [ -z "$out" ]; then
                echo "ok $i - mandoc -Tlint $(basename "$p")"
        else
                echo "not ok $i - mandoc -Tlint $(basename "$p")"
                echo "$out" | sed 's/^/# /'
        fi
done
