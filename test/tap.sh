# Shared harness of the shell tests (sourced): a temporary directory $TMP
# removed on exit, TAP lines through ok/bad, run() for a command's exit
# status, and tap_finish to print the plan and set the script's status.

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
tests=0

ok() { tests=$((tests + 1)); echo "ok $tests - $1"; }
bad() { tests=$((tests + 1)); fails=$((fails + 1)); echo "not ok $tests - $1"; }

# run NAME EXPECTED_STATUS CMD...: stdout -> $TMP/out, stderr -> $TMP/err;
# a sanitizer report in stderr fails whatever the status.
run() {
    local name=$1 want=$2
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if grep -q "runtime error\|Sanitizer" "$TMP/err"; then
        bad "$name: sanitizer report"
        head -30 "$TMP/err" | sed 's/^/  stderr: /'
        return 1
    fi
    if [ "$got" -eq "$want" ]; then
        ok "$name (exit $got)"
    else
        bad "$name: exit $got, expected $want"
        sed 's/^/  stderr: /' "$TMP/err" | head -20
        return 1
    fi
}

tap_finish() {
    echo "1..$tests"
    [ "$fails" -eq 0 ] || { echo "$fails of $tests failed"; exit 1; }
    exit 0
}
