#!/usr/bin/env bash
# `sive calibrate` end to end on the toy K2 with a small budget (a few
# seconds): the h sweep finds its plateau, JSON/CSV/traces are written and
# usage errors exit 2.  Usage: test_calibrate.sh path/to/sive
set -u
SIVE=${1:?usage: test_calibrate.sh path/to/sive}
. "$(dirname "$0")/tap.sh"
has() { # has NAME FILE PATTERN
    if grep -q -- "$3" "$2"; then ok "$1"; else
        bad "$1: $2 lacks '$3'"; head -40 "$2" | sed 's/^/  /'
    fi
}

# usage errors
run "no checkpoint, no toy" 2 "$SIVE" calibrate
run "bad --param" 2 "$SIVE" calibrate --model k2 --param nope
run "bad --values" 2 "$SIVE" calibrate --model k2 --values 1,x
run "toy with a checkpoint" 2 "$SIVE" calibrate --model k2 some.ckpt
run "bad --set" 2 "$SIVE" calibrate --model k2 --set nope=1 --values 1,2 --steps 1000 \
    --chains 2 --out "$TMP/x" --no-plot
run "--help" 0 "$SIVE" calibrate --help
has "--help names the rules" "$TMP/out" "2 combined SE"

# h on K2: 20000 steps x 4 chains per value; the plateau starts by h = 1
run "k2 h sweep" 0 "$SIVE" calibrate --model k2 --param h --values 0.05,0.2,1,2,5,20 \
    --steps 20000 --chains 4 --out "$TMP/h" --format json --quiet
has "json recommendation" "$TMP/out" '"recommendation":{"found":true'
python3 - "$TMP/out" <<'PY' && ok "h plateau at 0.2 .. 2" || bad "h plateau at 0.2 .. 2"
import json, sys
d = json.load(open(sys.argv[1]))
rec = d["recommendation"]
assert rec["found"] and 0.2 <= rec["value"] <= 2, rec
assert len(d["rows"]) == 6 and d["rows"][0]["value"] == 0.05
assert all(r["rms_disp_rel_h"] > 0 for r in d["rows"])
PY
for f in calibrate.csv calibrate.json traces.csv calibrate.gp; do
    [ -s "$TMP/h/$f" ] && ok "wrote $f" || bad "missing $f"
done
[ "$(wc -l <"$TMP/h/calibrate.csv")" -eq 7 ] && ok "csv: header + 6 rows" || bad "csv rows"
if command -v gnuplot >/dev/null; then
    [ -s "$TMP/h/calibrate.png" ] && ok "png" || bad "no png"
fi

# the table, N on K2: the noise-correction rule
run "k2 N sweep table" 0 "$SIVE" calibrate --model k2 --param groups --values 2,8,32,128 \
    --steps 10000 --chains 2 --out "$TMP/n" --no-plot --quiet
has "table: recommendation or none" "$TMP/out" "recommendation: groups = \|no plateau found"
has "table: health column" "$TMP/out" "health"

# a range without a plateau says so and what to try
run "k2 h no plateau" 0 "$SIVE" calibrate --model k2 --param h --values 0.02,0.05,0.1 \
    --steps 10000 --chains 2 --out "$TMP/np" --no-plot --quiet
has "no plateau message" "$TMP/out" "no plateau found in this range\|too noisy"
has "what to try" "$TMP/out" "try:"

# Ctrl-C: the sweep stops, exit 130
"$SIVE" calibrate --model k2 --param h --values 1,2,4,8,16,32,64,128 --steps 300000 \
    --chains 2 --out "$TMP/int" --no-plot >"$TMP/int.out" 2>"$TMP/int.err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
got=$?
[ "$got" -eq 130 ] && grep -q "interrupted" "$TMP/int.err" && ok "Ctrl-C: exit 130" ||
    { bad "Ctrl-C: exit $got"; cat "$TMP/int.err"; }

tap_finish
