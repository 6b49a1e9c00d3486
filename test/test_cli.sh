#!/usr/bin/env bash
# End-to-end tests of the `sive` program: usage errors, the toy table as
# JSON, train -> probe -> trajectory -> demo on the bundled data with tiny
# budgets, and broken inputs.  Usage: test_cli.sh path/to/sive
set -u
SIVE=${1:?usage: test_cli.sh path/to/sive}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
tests=0

ok() { tests=$((tests + 1)); echo "ok $tests - $1"; }
bad() { tests=$((tests + 1)); fails=$((fails + 1)); echo "not ok $tests - $1"; }

# run NAME EXPECTED_STATUS CMD...: stdout -> $TMP/out, stderr -> $TMP/err
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

# expect_err NAME PATTERN: stderr matches
expect_err() {
    if grep -q -- "$2" "$TMP/err"; then ok "$1: message"; else
        bad "$1: stderr lacks '$2'"
        sed 's/^/  stderr: /' "$TMP/err" | head -10
    fi
}

# pycheck NAME FILE PYTHON: runs PYTHON with `d` = json.load(FILE)
pycheck() {
    if python3 - "$2" <<EOF
import json, math, sys
d = json.load(open(sys.argv[1]))
def fin(x): return isinstance(x, (int, float)) and math.isfinite(x)
$3
EOF
    then ok "$1"; else bad "$1"; fi
}

# --- usage -----------------------------------------------------------------
run "help" 0 "$SIVE" --help && grep -q trajectory "$TMP/out" && ok "help lists commands"
run "no command" 2 "$SIVE"
run "unknown command" 2 "$SIVE" frobnicate && expect_err "unknown command" "unknown command"
run "train without --epochs" 2 "$SIVE" train && expect_err "train" "--epochs"
run "bad integer" 2 "$SIVE" probe --steps 12x ckpt && expect_err "bad integer" "--steps expects"
run "out of range" 2 "$SIVE" probe --groups 1 ckpt && expect_err "out of range" "--groups"
run "bad format" 2 "$SIVE" probe --format xml ckpt && expect_err "bad format" "--format"
run "bad hidden" 2 "$SIVE" train --epochs 1 --hidden 12 && expect_err "bad hidden" "--hidden"
run "unknown option" 2 "$SIVE" trajectory --epochs 1 --bogus
run "no checkpoint" 2 "$SIVE" probe --steps 10 && expect_err "no checkpoint" "no checkpoint"
run "stray argument" 2 "$SIVE" demo extra
for c in toy train probe trajectory demo; do
    run "$c --help" 0 "$SIVE" $c --help
done

# --- toy as JSON -------------------------------------------------------------
run "toy k1 json" 0 "$SIVE" toy --model k1 --steps 20000 --format json &&
    pycheck "toy json keys" "$TMP/out" '
for k in ("oracle", "naive", "raw", "sive", "sive_unclipped"):
    assert fin(d[k]["mean"]) and fin(d[k]["std"]), k
for k in ("ess", "noise_correction", "noise_correction_std", "mcse", "rhat"):
    assert fin(d[k]), k
assert d["model"] == "k1"'

# --- train -> probe ------------------------------------------------------------
CK="$TMP/ck"
run "train 1 epoch" 0 "$SIVE" train --epochs 1 --out "$CK" --seed 3 --quiet &&
    [ -s "$CK/epoch_0.ckpt" ] && [ -s "$CK/epoch_1.ckpt" ] && ok "checkpoints written"
grep -Eq '^ +1 +[0-9.]+ +[0-9.]+' "$TMP/out" && ok "train prints a line per epoch" ||
    bad "train output: $(cat "$TMP/out")"
[ -s "$TMP/err" ] && bad "train --quiet wrote to stderr" || ok "train --quiet is quiet"

run "train --every" 0 "$SIVE" train --epochs 3 --every 2 --out "$TMP/every" --quiet &&
    [ -e "$TMP/every/epoch_2.ckpt" ] && [ -e "$TMP/every/epoch_3.ckpt" ] &&
    [ ! -e "$TMP/every/epoch_1.ckpt" ] && ok "--every keeps epochs 0, 2 and 3"

TINY=(--steps 200 --groups 8 --eval-batch 16 --grad-batch 64 --chains 2)
run "probe json" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 2 --format json --quiet &&
    pycheck "probe json finite" "$TMP/out" '
assert isinstance(d, dict) and d["status"] == 0 and d["epoch"] == 1
for k in ("sive", "sive_unclipped", "raw_variance", "online_mean", "tail_mean_loss", "h"):
    assert fin(d[k]["mean"]) and fin(d[k]["std"]), k
for k in ("mcse", "ess", "rhat", "noise_correction", "noise_correction_std"):
    assert fin(d[k]), k
assert d["chains_ok"] == 2 and len(d["per_chain"]) == 2
assert d["settings"]["steps"] == 200 and d["settings"]["groups"] == 8
assert isinstance(d["health"], list)'
cp "$TMP/out" "$TMP/probe2.json"

# the thread count must not change the numbers
run "probe 1 thread" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 1 --format json --quiet &&
    python3 - "$TMP/out" "$TMP/probe2.json" <<'EOF' && ok "1 and 2 threads agree" || bad "1 and 2 threads differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["per_chain"] == b["per_chain"], (a["per_chain"], b["per_chain"])
EOF

run "probe two checkpoints json" 0 "$SIVE" probe "$CK/epoch_0.ckpt" "$CK/epoch_1.ckpt" "${TINY[@]}" \
    --steps 100 --format json --quiet &&
    pycheck "json array" "$TMP/out" 'assert isinstance(d, list) and [x["epoch"] for x in d] == [0, 1]'
run "probe csv" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --format csv --anchor 0.1 --quiet &&
    [ "$(wc -l <"$TMP/out")" -eq 2 ] && ok "csv: header + one row"
run "probe table" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --traces "$TMP/tr.csv" --quiet &&
    grep -q "lambda-hat (SIVE)" "$TMP/out" && ok "table has lambda-hat"
[ "$(wc -l <"$TMP/tr.csv")" -eq 401 ] && ok "traces: 2 chains x 200 steps" ||
    bad "traces: $(wc -l <"$TMP/tr.csv") lines"

# --- broken inputs -------------------------------------------------------------
run "missing checkpoint" 1 "$SIVE" probe "$TMP/nope.ckpt" "${TINY[@]}" --quiet &&
    expect_err "missing checkpoint" "nope.ckpt"
head -c 1000 "$CK/epoch_1.ckpt" >"$TMP/trunc.ckpt"
run "truncated checkpoint" 1 "$SIVE" probe "$TMP/trunc.ckpt" "${TINY[@]}" --quiet &&
    expect_err "truncated checkpoint" "trunc.ckpt"
cp "$CK/epoch_1.ckpt" "$TMP/flip.ckpt"
printf '\x55' | dd of="$TMP/flip.ckpt" bs=1 seek=5000 conv=notrunc status=none
run "corrupted checkpoint" 1 "$SIVE" probe "$TMP/flip.ckpt" "${TINY[@]}" --format json --quiet &&
    pycheck "error object in json" "$TMP/out" 'assert d["status"] != 0 and "flip.ckpt" in d["error"]'
printf 'not a checkpoint' >"$TMP/text.ckpt"
run "one bad among good" 1 "$SIVE" probe "$TMP/text.ckpt" "$CK/epoch_1.ckpt" "${TINY[@]}" \
    --format json --quiet &&
    pycheck "good one still probed" "$TMP/out" 'assert d[0]["status"] != 0 and d[1]["status"] == 0'
run "missing data dir" 1 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --data "$TMP/nodata" --quiet &&
    expect_err "missing data dir" "nodata"
run "impossible probe settings" 1 "$SIVE" probe "$CK/epoch_1.ckpt" --steps 4 --groups 8 \
    --eval-batch 16 --grad-batch 64 --chains 2 --quiet && expect_err "impossible probe" "tail"
touch "$TMP/file"
run "out is a file" 1 "$SIVE" train --epochs 1 --out "$TMP/file/sub" --quiet

# --- trajectory ------------------------------------------------------------------
TJ="$TMP/tj"
run "trajectory" 0 "$SIVE" trajectory --epochs 2 --out "$TJ" "${TINY[@]}" --format json --quiet &&
    pycheck "trajectory stdout json" "$TMP/out" '
e = d["epochs"]
assert [x["epoch"] for x in e] == [0, 1, 2]
for x in e:
    for k in ("online", "retrospective", "sive"):
        assert fin(x[k]["mean"]) and len(x[k]["chains"]) == 2, (k, x[k])
    assert fin(x["train_loss"]) and fin(x["test_loss"])
last = e[-1]
# chain c of the last epoch is anchored at its own tail minimum: Retrospective = Online
for r, o in zip(last["retrospective"]["chains"], last["online"]["chains"]):
    assert abs(r - o) <= 1e-6 * abs(o), (r, o)'
pycheck "trajectory.json" "$TJ/trajectory.json" 'assert len(d["epochs"]) == 3 and len(d["retrospective_anchor"]) == 2'
python3 - "$TJ/trajectory.csv" <<'EOF' && ok "trajectory.csv" || bad "trajectory.csv"
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [int(r["epoch"]) for r in rows] == [0, 1, 2]
for r in rows:
    for k in ("train_loss", "online_mean", "retrospective_mean", "sive_mean", "sive_std"):
        assert math.isfinite(float(r[k])), k
EOF
if command -v gnuplot >/dev/null; then
    [ -s "$TJ/trajectory.png" ] && ok "trajectory.png" || bad "no trajectory.png with gnuplot installed"
else
    ok "trajectory.png skipped: no gnuplot"
fi
run "trajectory without gnuplot" 0 env SIVE_GNUPLOT="$TMP/no-gnuplot" "$SIVE" trajectory \
    --epochs 1 --out "$TMP/tj2" "${TINY[@]}" --steps 100 &&
    expect_err "no gnuplot note" "gnuplot not found"
[ -e "$TMP/tj2/trajectory.png" ] && bad "png without gnuplot" || ok "no png without gnuplot"
grep -q "^Epoch" "$TMP/out" && ok "trajectory table on stdout"
run "trajectory csv stdout" 0 "$SIVE" trajectory --epochs 1 --out "$TMP/tj3" "${TINY[@]}" \
    --steps 100 --format csv --no-plot --quiet &&
    [ "$(wc -l <"$TMP/out")" -eq 3 ] && [ ! -e "$TMP/tj3/trajectory.png" ] && ok "csv + --no-plot"

# --- demo --------------------------------------------------------------------------
run "demo --quick" 0 "$SIVE" demo --quick --out "$TMP/demo" --quiet &&
    grep -q "Table 1" "$TMP/out" && grep -q "Retrospective" "$TMP/out" &&
    [ -s "$TMP/demo/trajectory.csv" ] && [ -s "$TMP/demo/trajectory.json" ] && ok "demo output"

echo "1..$tests"
[ "$fails" -eq 0 ] || { echo "$fails of $tests failed"; exit 1; }
