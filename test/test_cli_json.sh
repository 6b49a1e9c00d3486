#!/usr/bin/env bash
# `--format json` is valid JSON whatever bytes a path holds (issue 14 #5):
# the error object of `sive probe` on checkpoints that are not checkpoints
# (a few bytes of text: a missing one now stops the command before any
# output, each named on stderr), named
# with invalid UTF-8 (0xff, an overlong "/", a truncated sequence, an
# encoded surrogate, a code point above U+10FFFF), valid multi-byte UTF-8
# and control characters.  The output must decode as strict UTF-8 and
# parse, invalid bytes must read U+FFFD one for one, and valid characters
# must come back unchanged.  Usage: test_cli_json.sh path/to/sive
set -u
SIVE=${1:?usage: test_cli_json.sh path/to/sive}
. "$(dirname "$0")/tap.sh"

# check NAME BYTES EXPECTED: BYTES (printf format) is the file name;
# EXPECTED is the Python literal the "checkpoint" member must end with.
check() {
    local name=$1 path
    # the name is a printf format on purpose: it carries \NNN escapes
    # shellcheck disable=SC2059
    path=$TMP/$(printf "$2")
    printf 'not a checkpoint\n' >"$path"
    tests=$((tests + 1))
    "$SIVE" probe "$path" --format json --quiet >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if [ "$got" -eq 0 ] || grep -q "runtime error\|Sanitizer" "$TMP/err"; then
        fails=$((fails + 1))
        echo "not ok $tests - $name: exit $got"
        sed 's/^/  stderr: /' "$TMP/err" | head -10
        return
    fi
    if python3 - "$TMP/out" "$3" <<'PY'; then
import json, sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")          # strict: no invalid bytes, no surrogates
d = json.loads(text)                # strict: no raw control characters
want = eval(sys.argv[2])
assert d["checkpoint"].endswith(want), (d["checkpoint"], want)
assert want in d["error"], d["error"]
PY
        echo "ok $tests - $name"
    else
        fails=$((fails + 1))
        echo "not ok $tests - $name"
        head -c 400 "$TMP/out" | od -c | head -8 | sed 's/^/  stdout: /'
    fi
}

check "0xff byte" 'a\377b.ckpt' '"a\ufffdb.ckpt"'
check "overlong slash" 'a\300\257b.ckpt' '"a\ufffd\ufffdb.ckpt"'
check "overlong 3-byte" 'a\340\200\257b.ckpt' '"a\ufffd\ufffd\ufffdb.ckpt"'
check "truncated sequence" 'a\342\202b.ckpt' '"a\ufffd\ufffdb.ckpt"'
check "lone continuation" 'a\200\277b.ckpt' '"a\ufffd\ufffdb.ckpt"'
check "encoded surrogate" 'a\355\240\200b.ckpt' '"a\ufffd\ufffd\ufffdb.ckpt"'
check "above U+10FFFF" 'a\364\220\200\200b.ckpt' '"a\ufffd\ufffd\ufffd\ufffdb.ckpt"'
check "0xfe at the end" 'a.ckpt\376' '"a.ckpt\ufffd"'
check "valid UTF-8 kept" 'caf\303\251-\342\202\254-\360\237\230\200.ckpt' \
    '"caf\u00e9-\u20ac-\U0001f600.ckpt"'
check "controls and quotes" 'a\tb\001"c\\d.ckpt' '"a\tb\x01\"c\\d.ckpt"'
check "valid after invalid" '\377\303\251\377.ckpt' '"\ufffd\u00e9\ufffd.ckpt"'

tap_finish
