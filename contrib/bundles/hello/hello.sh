#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The sample bundle's program: greets, then shows what it may touch.
echo "${GREETING:-hello}, ${1:-world}, from bundle $SBX_BUNDLE $SBX_BUNDLE_VERSION (job $SBX_JOB_ID, uid $(id -u))"
echo "the bundle, read-only at $SBX_BUNDLE_DIR: $(ls "$SBX_BUNDLE_DIR" | tr '\n' ' ')"
if touch "$SBX_BUNDLE_DIR/scribble" 2>/dev/null; then
        echo "wrote into the bundle: that should not happen" >&2
        exit 1
fi
echo "it cannot be written; the workspace can: $(pwd)"
