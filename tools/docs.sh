#!/usr/bin/env bash
# Build the API reference (Doxygen) into build-docs/docs/api/html, installing
# doxygen first when it is missing (uses sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-deps.sh
if ! command -v doxygen >/dev/null; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "docs: installing doxygen" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends doxygen >/dev/null
fi
[ -d build-docs ] || meson setup build-docs --buildtype=release -Ddocs=enabled >/dev/null
ninja -C build-docs
meson test -C build-docs --suite abi --print-errorlogs doc-comments doc-reference
echo "docs: build-docs/docs/api/html/index.html"
