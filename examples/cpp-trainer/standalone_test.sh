#!/bin/sh
# Build the trainer the way a user outside the tree would: install libsive
# into a temporary prefix, compile main.cpp with
#     c++ -std=c++17 main.cpp $(pkg-config --cflags --libs libsive)
# and run it against the installed library.
# Usage: standalone_test.sh BUILDDIR path/to/main.cpp
set -eu
builddir=$1
src=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --no-rebuild: meson test runs this; every target must already be built
# (`ninja -C BUILDDIR`), else the install fails, and the log says which.
if ! meson install -C "$builddir" --destdir "$tmp" --no-rebuild >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "FAIL: meson install into $tmp failed (is the whole build up to date?)"
    exit 1
fi
pc=$(find "$tmp" -name libsive.pc | head -n 1)
[ -n "$pc" ] || { echo "FAIL: libsive.pc not installed"; exit 1; }
# The .pc names the final prefix; the sysroot maps it into the temporary tree.
PKG_CONFIG_PATH=$(dirname "$pc")
PKG_CONFIG_SYSROOT_DIR=$tmp
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
libdir=$(dirname "$(dirname "$pc")")
flags=$(pkg-config --cflags --libs libsive)
echo "${CXX:-c++} -std=c++17 main.cpp $flags"
# shellcheck disable=SC2086  # flags is a word list
# The temporary libdir goes first: the .pc's own rpath (the final libdir)
# may hold another installed copy.
"${CXX:-c++}" -std=c++17 -O2 -Wall -Wextra -Werror -o "$tmp/cpp-trainer" "$src" \
    -Wl,-rpath,"$libdir" $flags
# The program must use the installed copy, not the build tree's.
ldd "$tmp/cpp-trainer" | grep -q "libsive.so.* => $tmp/" ||
    { ldd "$tmp/cpp-trainer"; echo "FAIL: not linked against the installed libsive"; exit 1; }
"$here/check.sh" "$tmp/cpp-trainer" 1000 500
