#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the demo on the
# bundled data.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-deps.sh
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
exec build/tools/sive demo "$@"
