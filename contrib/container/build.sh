#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the sbx-supervisord node image (contrib/container/Containerfile)
# from this tree's Debian packages.
#
#   contrib/container/build.sh DEB_DIR [TAG]
#
# DEB_DIR holds the .deb files of `dpkg-buildpackage -us -uc -b` (which
# puts them in the directory above the tree): sbx-launch_*.deb and
# sbx-supervisor_*.deb are taken (the newest of each by version if there
# are several; debug symbols and sbx-bundle are left out). TAG defaults to
# localhost/sbx-supervisord:VERSION, the packages' version.
#
# Environment: CONTAINER_ENGINE (podman, else docker if podman is not
# installed), BASE (the base image, default debian:12; one made with
# mmdebstrap where no registry is reachable, see the Containerfile),
# EXTRA_PACKAGES (Debian packages for the jobs' /usr, e.g. "python3"),
# BUILD_OPTS (more options for `ENGINE build`, e.g. --ulimit or --runtime
# settings a host needs).
set -eu

usage() {
        echo "usage: $0 DEB_DIR [TAG]" >&2
        exit 2
}
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
        usage
fi
debdir=$1
here=$(cd "$(dirname "$0")" && pwd)

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
        if command -v podman >/dev/null 2>&1; then
                engine=podman
        elif command -v docker >/dev/null 2>&1; then
                engine=docker
        else
                echo "$0: neither podman nor docker is installed (apt-get install podman)" >&2
                exit 1
        fi
fi

# The newest package of a name in DEB_DIR, by Debian version order.
newest() {
        best=
        for f in "$debdir/$1"_*.deb; do
                [ -e "$f" ] || continue
                v=$(dpkg-deb -f "$f" Version)
                if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$bestv"; then
                        best=$f bestv=$v
                fi
        done
        if [ -z "$best" ]; then
                echo "$0: no $1_*.deb in $debdir (build them with dpkg-buildpackage -us -uc -b)" >&2
                exit 1
        fi
        echo "$best"
}
launch=$(newest sbx-launch)
supervisor=$(newest sbx-supervisor)
version=$(dpkg-deb -f "$supervisor" Version)
if [ "$(dpkg-deb -f "$launch" Version)" != "$version" ]; then
        echo "$0: $launch and $supervisor are not of one version" >&2
        exit 1
fi
tag=${2:-localhost/sbx-supervisord:$version}

# The build context: the packages and this directory's files, nothing of
# the rest of the tree.
ctx=$(mktemp -d "${TMPDIR:-/tmp}/sbx-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT INT TERM
mkdir "$ctx/debs"
cp "$launch" "$supervisor" "$ctx/debs/"
cp "$here/Containerfile" "$here/sbx-supervisord.conf" "$here/entrypoint.sh" "$ctx/"

echo "building $tag with $engine from $(basename "$launch") and $(basename "$supervisor")" >&2
# shellcheck disable=SC2086 # BUILD_OPTS is a list of options
"$engine" build ${BUILD_OPTS:-} \
        --build-arg "BASE=${BASE:-debian:12}" \
        --build-arg "EXTRA_PACKAGES=${EXTRA_PACKAGES:-}" \
        -f "$ctx/Containerfile" -t "$tag" "$ctx"
echo "$tag"
