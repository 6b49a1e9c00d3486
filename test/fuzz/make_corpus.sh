#!/bin/sh
# Seed corpora for the fuzz targets, generated from the project's own data
# (data/mnist-10k-*.zst: small IDX pairs cut from the bundled digits, in
# plain, gzip and zstd form; MNIST directories; checkpoints of small models
# written by the library) - nothing binary is committed.
#
#   test/fuzz/make_corpus.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR is a -Dfuzzing=true build (its test/fuzz/fuzz_seeds is built
# if missing); OUT_DIR/<target>/seed-NN are (re)written.
set -eu
if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$1
out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$build/test/fuzz/fuzz_seeds" ] || ninja -C "$build" test/fuzz/fuzz_seeds >/dev/null
rm -rf "$out"
mkdir -p "$out"
# the helper links the (possibly sanitized) library: no leak report noise
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$build/test/fuzz/fuzz_seeds" "$src/data" "$out"
for d in "$out"/*/; do
    printf '%s: %s seeds, %s bytes\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)" \
        "$(cat "$d"/* | wc -c)"
done
