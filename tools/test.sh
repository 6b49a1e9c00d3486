#!/usr/bin/env bash
# README command 2: the whole test suite, in a release build and again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then each fuzz target for
# a short fixed time when clang is installed (SIVE_FUZZ_SECONDS, default 30;
# 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-deps.sh
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build
meson test -C build --print-errorlogs --num-processes 2
[ -d build-asan ] || meson setup build-asan -Dbuildtype=debug -Doptimization=1 \
  -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --num-processes 2 --no-suite slow
fuzz_seconds=${SIVE_FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" -gt 0 ]; then
  tools/fuzz.sh build-fuzz "$fuzz_seconds"
fi
# One closing line over both builds (meson's own summaries are per build).
sum() { grep -h "^$1:" build/meson-logs/testlog.txt build-asan/meson-logs/testlog.txt |
        awk '{s += $2} END {print s + 0}'; }
echo "tests: $(sum Ok) passed, $(sum Fail) failed, $(sum Skipped) skipped"
