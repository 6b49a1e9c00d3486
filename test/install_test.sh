#!/usr/bin/env bash
# Install into a temporary prefix and build a tiny program with
# `cc $(pkg-config --cflags --libs libsive)`, then run it, and one with
# libsive-ref.pc (the reference stack).  Also checks that
# sive/version.h is installed and that the .pc's Libs carry the rpath of the
# final libdir (docs/abi.md, "Linking").
set -euo pipefail
builddir=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$builddir" --destdir "$tmp" --quiet >/dev/null
pc=$(find "$tmp" -name libsive.pc | head -n 1)
[ -n "$pc" ] || { echo "libsive.pc not installed"; exit 1; }
[ -n "$(find "$tmp" -path '*/include/sive/version.h')" ] ||
    { echo "sive/version.h not installed"; exit 1; }
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
final_libdir=$(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=libdir libsive)
# The .pc names the final prefix; the sysroot maps it into the temporary tree.
export PKG_CONFIG_SYSROOT_DIR=$tmp
flags=$(pkg-config --cflags --libs libsive)
echo "pkg-config --cflags --libs libsive: $flags"
# pkgconf maps the rpath into the sysroot as well, pkg-config 0.29 does not.
case " $flags " in
    *" -Wl,-rpath,$final_libdir "* | *" -Wl,-rpath,$tmp$final_libdir "*) ;;
    *) echo "libsive.pc: Libs lack -Wl,-rpath,$final_libdir"; exit 1 ;;
esac
libdir=$(dirname "$(dirname "$pc")")
# Only the version API: it is the same in every release.
cat > "$tmp/hello.c" <<'C'
#include <sive/version.h>
#include <sive/sive.h>
#include <stdio.h>
int main(void)
{
    printf("libsive %s, built against %s\n", sive_version_string(),
           SIVE_VERSION_STRING);
    return sive_version_number() == SIVE_VERSION_NUMBER ? 0 : 1;
}
C
# The temporary libdir goes first: the .pc's rpath (the final libdir) may
# hold another installed copy.
# shellcheck disable=SC2086  # flags is a word list
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/hello" "$tmp/hello.c" -Wl,-rpath,"$libdir" $flags
# The program must use the installed copy, not the build tree's.
# (ldd's output is captured first: with pipefail, grep -q closing the pipe
# early would make the pipeline fail at random)
deps=$(ldd "$tmp/hello")
grep -q "libsive.so.* => $tmp/" <<<"$deps" ||
    { echo "$deps"; echo "not linked against the installed libsive"; exit 1; }
"$tmp/hello"
# A core-only consumer needs no BLIS, zstd or zlib: neither in the flags
# (shared or static) nor among the libraries it loads.
for mode in "" --static; do
    # shellcheck disable=SC2086  # mode is empty or one word
    core=$(pkg-config $mode --libs libsive)
    case " $core " in *" -lblis "* | *" -lzstd "* | *" -lz "* | *-lsive-ref*)
        echo "pkg-config $mode --libs libsive pulls the reference stack: $core"; exit 1 ;;
    esac
done
case $deps in *libblis* | *libzstd* | *"libz.so"* | *libsive-ref*)
    echo "$deps"; echo "a core-only program loads the reference stack"; exit 1 ;;
esac

# A reference-stack consumer through libsive-ref.pc (Requires: libsive):
# the MLP, and an error of libsive-ref read through libsive's one
# per-thread last error.
[ -n "$(find "$tmp" -name libsive-ref.pc)" ] || { echo "libsive-ref.pc not installed"; exit 1; }
ref_flags=$(pkg-config --cflags --libs libsive-ref)
echo "pkg-config --cflags --libs libsive-ref: $ref_flags"
case " $ref_flags " in *" -lsive-ref "*" -lsive "* | *" -lsive "*" -lsive-ref "*) ;;
    *) echo "libsive-ref.pc does not give -lsive-ref and -lsive"; exit 1 ;;
esac
cat > "$tmp/ref.c" <<'C'
#include <sive/mlp.h>
#include <sive/sive.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    sive_mlp *m = NULL;
    if (sive_mlp_new(&m, 4, 3, 2, 2) != SIVE_OK || sive_mlp_dim(m) == 0)
        return 1;
    sive_mlp_free(m);
    /* a refused argument: the message lands in libsive's last error */
    if (sive_mlp_new(NULL, 4, 3, 2, 2) != SIVE_E_INVALID_ARG ||
        !strstr(sive_last_errmsg(), "sive_mlp_new"))
        return 2;
    printf("libsive-ref: %s\n", sive_last_errmsg());
    return 0;
}
C
# shellcheck disable=SC2086  # ref_flags is a word list
cc -std=c11 -Wall -Wextra -Werror -o "$tmp/ref" "$tmp/ref.c" -Wl,-rpath,"$libdir" $ref_flags
ref_deps=$(ldd "$tmp/ref")
grep -q "libsive-ref.so.* => $tmp/" <<<"$ref_deps" && grep -q "libsive.so.* => $tmp/" <<<"$ref_deps" ||
    { echo "$ref_deps"; echo "not linked against the installed libsive and libsive-ref"; exit 1; }
"$tmp/ref"

# The installed program runs with an empty environment: no LD_LIBRARY_PATH,
# no SIVE_DATA_DIR (its rpath is relative to itself, and the bundled digits
# are found beside its prefix).
sive=$(find "$tmp" -path '*/bin/sive' -type f | head -n 1)
[ -n "$sive" ] || { echo "sive not installed"; exit 1; }
out=$(env -i "$sive" version) || { echo "installed sive version failed: $out"; exit 1; }
echo "$out"
case $out in *"libsive 0."*) ;; *) echo "unexpected: $out"; exit 1 ;; esac
env -i "$sive" toy --model k1 --steps 400 --chains 2 --format json >/dev/null ||
    { echo "installed sive toy failed"; exit 1; }

# The Python package (when meson installed it): importable from the
# prefix's site directory in a clean environment, and loading the installed
# library (found relative to the package, so the --destdir tree works).
init=$(find "$tmp" -path '*/sive/__init__.py' | head -n 1)
if [ -z "$init" ]; then
    echo "python package not installed (meson option python disabled or no python3): not checked"
    exit 0
fi
site=$(dirname "$(dirname "$init")")
[ -f "$site/sive/torch.py" ] && [ -f "$site/sive/_config.py" ] ||
    { echo "python package incomplete in $site"; exit 1; }
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    echo "no numpy for /usr/bin/python3: python package import not checked"
    exit 0
fi
out=$(cd / && env -i PATH=/usr/bin:/bin PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
      /usr/bin/python3 -c 'import sive, sive.torch; print(sive.__file__); print(sive.library_path); print(sive.version())')
echo "python: $out"
{ read -r file; read -r lib; } <<<"$out"
case $file in "$site"/*) ;; *) echo "imported sive from $file, not from $site"; exit 1 ;; esac
case $lib in "$tmp"/*) ;; *) echo "sive loaded $lib, not the installed library"; exit 1 ;; esac
