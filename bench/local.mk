# SPDX-License-Identifier: Apache-2.0
EXTRA_DIST += bench/README.md
