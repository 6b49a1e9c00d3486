#!/usr/bin/env bash
# Install into a temporary prefix and build a tiny program with
# `cc $(pkg-config --cflags --libs libsive)`, then run it.
set -euo pipefail
builddir=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$builddir" --destdir "$tmp" --quiet >/dev/null
pc=$(find "$tmp" -name libsive.pc | head -n 1)
[ -n "$pc" ] || { echo "libsive.pc not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
# The .pc names the final prefix; the sysroot maps it into the temporary tree.
export PKG_CONFIG_SYSROOT_DIR=$tmp
flags=$(pkg-config --cflags --libs libsive)
libdir=$(dirname "$(dirname "$pc")")
cat > "$tmp/hello.c" <<'C'
#include <sive/sive.h>
#include <stdio.h>
int main(void)
{
    sive_probe *p = NULL;
    if (sive_probe_new(&p, 10) != SIVE_OK) return 1;
    printf("libsive %s, dim %zu\n", sive_version_string(), sive_probe_dim(p));
    sive_probe_free(p);
    return 0;
}
C
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello" "$tmp/hello.c" $flags -Wl,-rpath,"$libdir"
"$tmp/hello"
