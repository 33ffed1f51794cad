#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --install --force --warnings=all
