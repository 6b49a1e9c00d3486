#!/bin/sh
# Run every libFuzzer target of test/fuzz for SECONDS each (docs/reliability.md).
#
#   tools/fuzz.sh DIR SECONDS
#
# DIR is a build directory: created when missing (clang, -Dfuzzing=true,
# AddressSanitizer + UndefinedBehaviorSanitizer), reused otherwise (it must
# then be a -Dfuzzing=true build).  Builds only the fuzz targets, generates
# the seed corpora from data/ (test/fuzz/make_corpus.sh) into
# DIR/fuzz-corpus, and runs the targets one after the other; what they
# find goes to DIR/fuzz-work/<target> (kept between runs) and crashes to
# DIR/fuzz-crashes/.  Prints one line per target (executions, rate) and
# exits non-zero if a target crashed, leaked, timed out, ran out of memory
# or failed an oracle.  Without clang/libFuzzer it skips with a message and
# exits 0.
#
# Environment: FUZZ_TARGETS="fuzz_idx_memory ..." runs only these;
# FUZZ_ARGS adds libFuzzer options to every run.
set -u

if [ $# -ne 2 ] || ! [ "$2" -gt 0 ] 2>/dev/null; then
    echo "usage: $0 BUILD_DIR SECONDS" >&2
    exit 2
fi
dir=$1
secs=$2
src=$(cd "$(dirname "$0")/.." && pwd)
all="fuzz_idx_memory fuzz_idx_files fuzz_open_dir fuzz_checkpoint fuzz_checkpoint_reframed
     fuzz_result_file fuzz_options"
targets=${FUZZ_TARGETS:-$all}

# clang with libFuzzer, or skip
cc=${CC:-clang}
case $cc in *clang*) ;; *) cc=clang ;; esac
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz.sh: skipped: $cc not found (libFuzzer needs clang)"
    exit 0
fi
probe=$(mktemp -d)
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
    >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    rm -rf "$probe"
    echo "fuzz.sh: skipped: $cc cannot link -fsanitize=fuzzer (libFuzzer missing)"
    exit 0
fi
rm -rf "$probe"

if [ ! -f "$dir/build.ninja" ]; then
    CC=$cc meson setup "$dir" "$src" -Dfuzzing=true -Dbuildtype=debugoptimized \
        -Db_sanitize=address,undefined -Db_lundef=false >"$dir.setup.log" 2>&1 || {
        cat "$dir.setup.log" >&2
        echo "fuzz.sh: meson setup $dir failed" >&2
        exit 1
    }
    mv "$dir.setup.log" "$dir/fuzz-setup.log"
elif ! meson introspect "$dir" --buildoptions 2>/dev/null |
        python3 -c 'import json,sys; sys.exit(0 if any(o["name"] == "fuzzing" and o["value"] is True for o in json.load(sys.stdin)) else 1)'; then
    echo "fuzz.sh: $dir is not a -Dfuzzing=true build: give a new directory" >&2
    exit 1
fi
ninja -C "$dir" fuzz-targets >"$dir/fuzz-build.log" 2>&1 || {
    tail -40 "$dir/fuzz-build.log" >&2
    echo "fuzz.sh: building the fuzz targets failed ($dir/fuzz-build.log)" >&2
    exit 1
}
"$src/test/fuzz/make_corpus.sh" "$dir" "$dir/fuzz-corpus" >/dev/null || {
    echo "fuzz.sh: generating the seed corpora failed" >&2
    exit 1
}

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
mkdir -p "$dir/fuzz-work" "$dir/fuzz-crashes" "$dir/fuzz-logs" "$dir/fuzz-tmp"
fail=0
total=0
printf '%-26s %8s %12s %10s  %s\n' target seconds executions "exec/s" result
for t in $targets; do
    case $t in
    fuzz_open_dir) maxlen=65536 ;;
    fuzz_idx_memory | fuzz_idx_files) maxlen=32768 ;;
    *) maxlen=16384 ;;
    esac
    mkdir -p "$dir/fuzz-work/$t"
    log=$dir/fuzz-logs/$t.log
    start=$(date +%s)
    # shellcheck disable=SC2086
    TMPDIR=$dir/fuzz-tmp "$dir/test/fuzz/$t" -max_total_time="$secs" \
        -max_len=$maxlen -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=256 \
        -print_final_stats=1 -artifact_prefix="$dir/fuzz-crashes/$t-" \
        ${FUZZ_ARGS:-} "$dir/fuzz-work/$t" "$dir/fuzz-corpus/$t" >"$log" 2>&1
    rc=$?
    end=$(date +%s)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ "$rc" -eq 0 ]; then
        result=ok
    else
        result="FAILED (exit $rc, $log)"
        fail=1
    fi
    total=$((total + ${execs:-0}))
    printf '%-26s %8s %12s %10s  %s\n' "$t" $((end - start)) "${execs:-?}" \
        "${rate:-?}" "$result"
    if [ "$rc" -ne 0 ]; then
        grep -E -m 20 'ERROR|oracle failed|SUMMARY|Test unit written' "$log" >&2
    fi
done
printf '%-26s %8s %12s\n' total "" "$total"
rm -rf "$dir/fuzz-tmp"
exit $fail
