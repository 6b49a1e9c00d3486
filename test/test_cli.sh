#!/usr/bin/env bash
# End-to-end tests of the `sive` program: usage errors, the toy table as
# JSON, train -> probe -> trajectory -> demo on the bundled data with tiny
# budgets, and broken inputs.  Usage: test_cli.sh path/to/sive
set -u
SIVE=${1:?usage: test_cli.sh path/to/sive}
. "$(dirname "$0")/tap.sh"

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
run "bad integer" 2 "$SIVE" probe --steps 12x ckpt && expect_err "bad integer" "--steps"
# ints are parsed strictly by the library (sive_probe_set_text): no exponent
run "integer with exponent" 2 "$SIVE" probe --steps 1e4 ckpt &&
    expect_err "integer with exponent" "--steps.*1e4"
run "out of range" 2 "$SIVE" probe --groups 1 ckpt && expect_err "out of range" "--groups"
run "bad format" 2 "$SIVE" probe --format xml ckpt && expect_err "bad format" "--format"
run "bad hidden" 2 "$SIVE" train --epochs 1 --hidden 12 && expect_err "bad hidden" "--hidden"
run "unknown option" 2 "$SIVE" trajectory --epochs 1 --bogus
run "no checkpoint" 2 "$SIVE" probe --steps 10 && expect_err "no checkpoint" "no checkpoint"
run "stray argument" 2 "$SIVE" demo extra
for c in toy train probe trajectory demo options; do
    run "$c --help" 0 "$SIVE" $c --help
done
# `sive help CMD` is `sive CMD --help`; -h (no short options) names --help
# and, where --h exists, says that --h is the radius
"$SIVE" probe --help >"$TMP/probe_help_a" 2>&1
run "help probe" 0 "$SIVE" help probe && cmp -s "$TMP/out" "$TMP/probe_help_a" &&
    ok "help probe: the same as probe --help" || bad "help probe: not probe --help"
run "probe -h" 2 "$SIVE" probe -h ckpt &&
    expect_err "probe -h" "^sive probe: unknown option '-h' (--help lists the options; --h X is the radius)"
run "train -h" 2 "$SIVE" train -h &&
    expect_err "train -h" "^sive train: unknown option '-h' (--help lists the options)$"

# --- options: the library's table is the one source of the probe flags --------
run "options json" 0 "$SIVE" options --format json && cp "$TMP/out" "$TMP/options.json" &&
    pycheck "options table" "$TMP/options.json" '
assert len(d) >= 10 and len({o["name"] for o in d}) == len(d)
for o in d:
    assert o["flag"] == "--" + o["name"].replace("_", "-"), o
    assert o["type"] in ("int", "double") and o["doc"], o
    if o["type"] == "int":
        assert o["lo"] <= o["default"] <= o["hi"], o
# the tier (docs/abi.md; not the id, which graduation keeps)
tier = {o["name"]: o["experimental"] for o in d}
assert all(isinstance(v, bool) for v in tier.values()), tier
assert tier["anneal"] and not tier["steps"] and not tier["metropolis"], tier'
"$SIVE" options >"$TMP/options.txt"
grep -q '^anneal .*(experimental) ' "$TMP/options.txt" &&
    ! grep -q '^steps .*(experimental)' "$TMP/options.txt" &&
    ok "options table marks the experimental tier" ||
    bad "options table: no (experimental) mark on anneal, or one on steps"
"$SIVE" probe --help | grep -A6 '^  --anneal X' | grep -q '; experimental: may change)$' &&
    ! "$SIVE" probe --help | grep -A3 '^  --steps INT' | grep -q experimental &&
    ok "probe --help marks the experimental tier" || bad "probe --help: tier not marked"
run "options table" 0 "$SIVE" options &&
    [ "$(($(wc -l <"$TMP/out") - 1))" -eq "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$TMP/options.json")" ] &&
    ok "options: one line per option"
# optlist FILTER: flag, type and bounds of the table's options that pass
# FILTER (a python expression on o)
optlist() {
    python3 -c 'import json,sys
for o in json.load(open(sys.argv[1])):
    if '"$1"': print(o["flag"], o["type"], o["lo"], o["hi"])' "$TMP/options.json"
}
# every option of the table is a flag of probe and trajectory (all but seed,
# which train's --seed sets, and the chain range, which only probe takes),
# listed by --help; trajectory's help lists no flag it refuses
"$SIVE" probe --help >"$TMP/probe_help"
"$SIVE" trajectory --help >"$TMP/traj_help"
missing=""
while read -r flag type lo hi; do
    grep -q -- "^  $flag " "$TMP/probe_help" || missing="$missing probe:$flag"
    case $flag in
    --seed) ;;
    --chain-begin | --chain-end)
        ! grep -q -- "$flag" "$TMP/traj_help" || missing="$missing trajectory-lists:$flag" ;;
    *) grep -q -- "^  $flag " "$TMP/traj_help" || missing="$missing trajectory:$flag" ;;
    esac
done < <(optlist True)
[ -z "$missing" ] && ok "probe/trajectory --help list exactly their options" ||
    bad "--help:$missing"

# docs/cli.md's usage block of each command is the program's own: the lines
# from "usage: sive CMD" up to the first line without a "[" option
for c in train probe trajectory toy calibrate options demo; do
    "$SIVE" $c --help | sed -n "/^usage: sive $c /,/^[^ u]/p" | sed '$d' >"$TMP/usage_$c"
    sed -n "/^usage: sive $c /,/^\`\`\`/p" "$(dirname "$0")/../docs/cli.md" | sed '$d' \
        >"$TMP/usage_doc_$c"
    if [ -s "$TMP/usage_$c" ] && cmp -s "$TMP/usage_$c" "$TMP/usage_doc_$c"; then
        ok "docs/cli.md's $c usage block is sive $c --help's"
    else
        bad "docs/cli.md's $c usage block differs from sive $c --help"
        diff "$TMP/usage_$c" "$TMP/usage_doc_$c" | head -10 | sed 's/^/  /'
    fi
done
run "trajectory refuses --chain-begin" 2 "$SIVE" trajectory --epochs 1 --chain-begin 1 &&
    expect_err "trajectory --chain-begin" "unknown option '--chain-begin'"
# long options are matched in full (glibc would take --step for --steps),
# every message of a command has the command's prefix
run "abbreviated flag" 2 "$SIVE" probe --step 300 ckpt &&
    expect_err "abbreviated flag" "^sive probe: unknown option '--step' (options are not abbreviated: --steps, --step-extrapolate?)"
run "abbreviated flag with =" 2 "$SIVE" trajectory --epoch=1 &&
    expect_err "abbreviated flag with =" "^sive trajectory: unknown option '--epoch'"
run "missing value" 2 "$SIVE" train --epochs && expect_err "missing value" "^sive train: option '--epochs' needs a value"
run "demo prefix" 2 "$SIVE" demo --bogus && expect_err "demo prefix" "^sive demo: unknown option '--bogus'"
run "toy prefix" 2 "$SIVE" toy --steps 1 && expect_err "toy prefix" "^sive toy: --steps"
# `sive options`: aligned columns, "none" for no default (as --help says)
run "options aligned" 0 "$SIVE" options &&
    python3 - "$TMP/out" <<'PY' && ok "options: aligned, none for no default" || bad "options table"
import sys
lines = open(sys.argv[1]).read().splitlines()
cols = {(l.index(" int ") if " int " in l else l.index(" double ")) for l in lines[1:]}
assert len(cols) == 1 and lines[0].index(" type ") in cols, cols
bounds = {l.index("[") if "[" in l[30:60] else l.index("(") for l in lines[1:]}
assert len(bounds) == 1, bounds
h = [l for l in lines if l.startswith("h ")][0]
assert " none " in h and "nan" not in h, h
PY
# the library's bounds are the CLI's: one below the lower bound is refused,
# the bound itself is accepted (--help after it stops before any work)
while read -r flag type lo hi; do
    run "$flag below its bound" 2 "$SIVE" probe "$flag" $((lo - 1)) ckpt &&
        expect_err "$flag below its bound" "outside"
    run "$flag at its bound" 0 "$SIVE" probe "$flag" "$lo" --help
done < <(optlist 'o["name"] in ("steps", "groups", "chains")')

# the usage synopsis lists every flag that --help describes (it is generated
# from the option table), the radius options as one exclusive choice
synopsis_check() {
    local cmd=$1 missing=""
    "$SIVE" "$cmd" --help >"$TMP/help_$cmd"
    # the synopsis: the "usage:" line and its continuation lines
    awk 'NR == 1 { print; next } /^ +\[|^ +--epochs/ && !/^  --/ { print; next } { exit }' \
        "$TMP/help_$cmd" >"$TMP/syn_$cmd"
    while read -r flag; do
        grep -q -- "$flag[] ]" "$TMP/syn_$cmd" || missing="$missing $flag"
    done < <(grep -Eo -- '^  --[a-z-]+' "$TMP/help_$cmd" | sed 's/^  //')
    if [ -z "$missing" ]; then ok "$cmd usage synopsis lists every flag"; else
        bad "$cmd usage synopsis lacks$missing"
        sed 's/^/  synopsis: /' "$TMP/syn_$cmd"
    fi
}
for c in probe trajectory toy train; do synopsis_check $c; done
grep -q -- "\[--h X | --c-h X\]" "$TMP/syn_probe" && ok "synopsis: --h | --c-h" ||
    bad "synopsis lacks [--h X | --c-h X]"
# --h and --c-h select the two radius modes: both at once is a usage error
run "--h with --c-h" 2 "$SIVE" probe --h 0.1 --c-h 1 ckpt && expect_err "--h with --c-h" "exclude"
run "--c-h with --h" 2 "$SIVE" trajectory --epochs 1 --c-h 1 --h 0.1 &&
    expect_err "--c-h with --h" "exclude"
run "--h twice" 0 "$SIVE" probe --h 0.1 --h 0.2 --help

# --- toy as JSON -------------------------------------------------------------
run "toy k1 json" 0 "$SIVE" toy --model k1 --steps 20000 --format json &&
    pycheck "toy json keys" "$TMP/out" '
for k in ("oracle", "online_mean", "raw_variance", "sive", "sive_unclipped"):
    assert fin(d[k]["mean"]) and fin(d[k]["std"]), k
for k in ("ess", "noise_correction", "noise_correction_std", "mcse", "rhat"):
    assert fin(d[k]), k
assert d["model"] == "k1" and d["steps"] == 20000 and isinstance(d["flag_names"], list)'
# the toy takes the library's bounds, not its own (0.1 refused --steps < 8
# and --burn-in > 0.99)
run "toy burn-in 0.995" 0 "$SIVE" toy --model k1 --steps 20000 --burn-in 0.995 --format json &&
    pycheck "toy burn-in 0.995 ran" "$TMP/out" 'assert d["burn_in"] == 0.995 and fin(d["sive"]["mean"])'
run "toy steps below the bound" 2 "$SIVE" toy --steps 1 && expect_err "toy steps" "--steps"
# NaN is written as null (docs/cli.md): every chain diverged (a tether of
# eta/h^2 = 100 per step), or one chain (no std over chains)
run "toy diverged json" 1 "$SIVE" toy --model k1 --steps 200 --chains 2 --h 1e-3 --format json &&
    pycheck "toy diverged: null, not nan or 0" "$TMP/out" '
assert d["chains_ok"] == 0 and d["flag_names"] == ["diverged"], d
for k in ("oracle", "online_mean", "raw_variance", "sive", "sive_unclipped"):
    assert d[k] == {"mean": None, "std": None}, (k, d[k])
assert d["oracle_mcse"] is None, d["oracle_mcse"]'
run "toy one chain json" 0 "$SIVE" toy --model k1 --steps 2000 --chains 1 --format json &&
    pycheck "toy one chain: std null" "$TMP/out" '
for k in ("oracle", "online_mean", "raw_variance", "sive", "sive_unclipped"):
    assert fin(d[k]["mean"]) and d[k]["std"] is None, (k, d[k])'

# the toy table marks only what makes a number untrustworthy: K1's large but
# precisely known correction (dominant_correction) and the step's share of
# its exact ULA target (step_bias) are information
run "toy k1 table" 0 "$SIVE" toy --model k1 --steps 20000 &&
    if grep -q '^SIVE .*!' "$TMP/out" ||
       ! grep -q '^health  *(dominant_correction|step_bias)$' "$TMP/out"; then
        bad "toy k1: dominant_correction alone marked as a failure"
        sed 's/^/  out: /' "$TMP/out" | grep -E "SIVE|health"
    else ok "toy k1: dominant_correction is information"; fi
run "toy tail too short" 2 "$SIVE" toy --model k1 --steps 4 && expect_err "toy tail" "tail"
run "toy c-h is not a toy option" 2 "$SIVE" toy --c-h 1
# the table is aligned by display width (λ̂, ±, ², σ are multi-byte) and
# rounds each number to its uncertainty
run "toy table" 0 "$SIVE" toy --steps 20000 &&
    python3 - "$TMP/out" <<'PY' && ok "toy table: columns aligned, numbers rounded" || bad "toy table"
import re, sys, unicodedata
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
def col(line, text):  # display column where the last text starts
    return sum(1 for ch in line[:line.rindex(text)] if not unicodedata.combining(ch))
head = next(l for l in lines if l.startswith("Estimator"))
k2 = col(head, "K2")
rows = [l for l in lines if l.startswith(("SIVE ", "noise correction C", "  theory", "MCSE", "ESS", "split"))]
assert len(rows) == 8, rows
for l in rows:
    cells = re.split(r"  +", l.strip())
    assert col(l, cells[-1]) == k2, (l, k2)
sive = next(l for l in lines if l.startswith("SIVE "))
assert not re.search(r"\d\.\d{4} ± ", sive), sive  # not 0.5515 ± 0.0483
assert re.search(r"\d ± 0\.\d\d(?!\d)", sive), sive  # 2 significant digits
PY
# a flagged model (K2 imprecise at this budget: MCSE ~45 % of lambda-hat):
# its SIVE cells carry the mark, the health row names the flags and the
# library's health lines follow the table; K1's dominant_correction is
# information, not marked
run "toy short" 0 "$SIVE" toy --steps 3000 &&
grep -q '^SIVE .*[0-9] !$' "$TMP/out" && grep -q '^health .* ! .*imprecise' "$TMP/out" &&
    grep -q '^! k2: imprecise: ' "$TMP/out" &&
    grep -q '^  k1 (information): dominant_correction: ' "$TMP/out" &&
    ok "toy table: flags marked and explained" || bad "toy table: no marked flag"
run "toy csv" 0 "$SIVE" toy --model k1 --steps 20000 --format csv &&
    python3 - "$TMP/out" <<'PY' && ok "toy csv: health column" || bad "toy csv health"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 5, rows
# the paper's K1 point: the correction dominates, and base_lr 0.05 adds ~10 % (step_bias)
assert all(r["health"] == "dominant_correction|step_bias" and r["flags"] == "2176"
           for r in rows), rows
PY
run "toy csv healthy" 0 "$SIVE" toy --model k1 --steps 20000 --sigma 0 --base-lr 0.0125 \
    --format csv &&
    python3 - "$TMP/out" <<'PY' && ok "toy csv: empty health when healthy" || bad "toy csv healthy"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert all(r["health"] == "" and r["flags"] == "0" for r in rows), rows
PY

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
# the MLP has no orbit move: the message says so instead of "set sive_model.move"
run "probe --orbit-every" 2 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --metropolis 1 \
    --orbit-every 1 --quiet && expect_err "probe --orbit-every" "leave --orbit-every 0"
run "probe json" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 2 --format json --quiet &&
    pycheck "probe json finite" "$TMP/out" '
assert isinstance(d, dict) and d["status"] == 0 and d["epoch"] == 1
for k in ("sive", "sive_unclipped", "raw_variance", "online_mean", "tail_mean_loss", "h"):
    assert fin(d[k]["mean"]) and fin(d[k]["std"]), k
for k in ("mcse", "ess", "rhat", "noise_correction", "noise_correction_std"):
    assert fin(d[k]), k
assert d["chains_ok"] == 2 and len(d["per_chain"]) == 2
assert d["settings"]["steps"] == 200 and d["settings"]["groups"] == 8
assert isinstance(d["health"], list) and isinstance(d["flag_names"], list)
assert all(c["status"] == "ok" for c in d["per_chain"])'
# the settings are the option table (plus the CLI's blis_threads)
python3 - "$TMP/out" "$TMP/options.json" <<'EOF' && ok "settings keys = option names" || bad "settings keys"
import json, sys
d, opts = (json.load(open(f)) for f in sys.argv[1:])
assert set(d["settings"]) == {o["name"] for o in opts} | {"blis_threads"}, d["settings"]
EOF
# the settings are what the run resolved and ran (the result's options, as
# Python's Result.to_dict(): metropolis 0 on a mini-batch loss, never the
# requested -1 "auto"); settings_requested keeps what was asked
pycheck "settings resolved, settings_requested as asked" "$TMP/out" '
s, q = d["settings"], d["settings_requested"]
assert s["metropolis"] == 0 and s["c_h"] == 1, s
assert q["metropolis"] == -1 and set(q) == set(s), q
assert (q["kron_every"], q["radius_lookahead"], s["kron_every"], s["radius_lookahead"]) == (-1, -1, 0, 0), (s, q)
assert (q["radius_check"], s["radius_check"]) == (-1, 0), (s, q)  # ULA: no check, no cost
assert {k for k in s if s[k] != q[k]} == {"metropolis", "kron_every", "radius_lookahead", "radius_check"}, (s, q)'
cp "$TMP/out" "$TMP/probe2.json"
# the whole bundled set without replacement: an exact loss, so the defaults
# resolve to the Metropolis sampler with the radius from the loss
run "probe json, defaults resolved" 0 "$SIVE" probe "$CK/epoch_1.ckpt" --steps 40 --groups 2 \
    --eval-batch 8 --grad-batch 8000 --replacement 0 --chains 2 --format json --quiet &&
    pycheck "settings: metropolis 1, c_h 0 as run" "$TMP/out" '
s, q = d["settings"], d["settings_requested"]
assert (s["metropolis"], s["c_h"], q["metropolis"], q["c_h"]) == (1, 0, -1, 1), (s, q)
assert (s["kron_every"], s["radius_lookahead"]) == (0, 8), s  # the MLP supplies no curvature
assert {k for k in s if s[k] != q[k]} == {"metropolis", "c_h", "kron_every", "radius_lookahead", "radius_check"}, (s, q)
assert any(l.startswith("defaults: metropolis 1 and c_h = auto") for l in d["health"])'

# the thread count must not change the numbers
run "probe 1 thread" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 1 --format json --quiet &&
    python3 - "$TMP/out" "$TMP/probe2.json" <<'EOF' && ok "1 and 2 threads agree" || bad "1 and 2 threads differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["per_chain"] == b["per_chain"], (a["per_chain"], b["per_chain"])
EOF

# the seed is a uint64: every 64-bit value as text (2^64 - 1 is the bits of
# -1, the settings print it unsigned); one above is refused by name
SEEDRUN=("$CK/epoch_1.ckpt" --steps 40 --groups 8 --eval-batch 16 --grad-batch 64 --chains 1
         --format json --quiet)
run "probe --seed 2^64-1" 0 "$SIVE" probe "${SEEDRUN[@]}" --seed 18446744073709551615 &&
    cp "$TMP/out" "$TMP/seed_max.json"
run "probe --seed -1" 0 "$SIVE" probe "${SEEDRUN[@]}" --seed -1 &&
    python3 - "$TMP/seed_max.json" "$TMP/out" <<'EOF' && ok "seed 2^64-1 is -1's bits" || bad "seed 2^64-1 differs from -1"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["settings"]["seed"] == b["settings"]["seed"] == 18446744073709551615, (a["settings"], b["settings"])
assert a["per_chain"] == b["per_chain"] and a["sive"] == b["sive"], (a["sive"], b["sive"])
EOF
run "probe --seed 2^63" 0 "$SIVE" probe "${SEEDRUN[@]}" --seed 9223372036854775808
run "probe --seed 2^64" 2 "$SIVE" probe "${SEEDRUN[@]}" --seed 18446744073709551616 &&
    expect_err "probe --seed 2^64" "^sive probe: --seed: option 'seed' = 18446744073709551616 is outside \\[-9223372036854775808, 18446744073709551615\\]"
run "train --seed 2^64-1" 0 "$SIVE" train --epochs 0 --out "$TMP/seedck" --seed 18446744073709551615 --quiet
run "train --seed 2^64" 2 "$SIVE" train --epochs 0 --out "$TMP/seedck" --seed 18446744073709551616 &&
    expect_err "train --seed 2^64" "^sive train: --seed expects an integer in \\[0, 18446744073709551615\\], got '18446744073709551616'"
run "train --seed -1" 2 "$SIVE" train --epochs 0 --out "$TMP/seedck" --seed -1 &&
    expect_err "train --seed -1" "^sive train: --seed expects an integer"

# the settings line: on stdout (the table's) and stderr (a note) when they go
# apart; once when both are one terminal (script(1) gives them a pty)
run "probe table" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 2 &&
    grep -q '^SIVE probe: t = ' "$TMP/out" && grep -q '^sive probe: t = ' "$TMP/err" &&
    ok "settings line on stdout and on stderr" || bad "settings line: not on both streams"
# (skipped where script(1) is missing or cannot open a pseudo-terminal)
if command -v script >/dev/null && script -qec true /dev/null </dev/null >/dev/null 2>&1; then
    script -qec "$(printf '%q ' "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 2)" \
        /dev/null </dev/null >"$TMP/tty" 2>&1
    st=$?
    [ "$st" = 0 ] && [ "$(grep -c 'probe: t = ' "$TMP/tty")" = 1 ] && grep -q '^SIVE probe: t = ' "$TMP/tty" &&
        ok "settings line once on a terminal" ||
        bad "settings line on a terminal: exit $st, $(grep -c 'probe: t = ' "$TMP/tty") times"
else
    ok "settings line once on a terminal # SKIP no script(1) or no pty"
fi

# --params: the three layers cover theta (the unrestricted run, number for
# number); one layer is another probe with its own radius; bad lists refused
run "probe --params all layers" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 2 \
    --format json --quiet --params layer1,layer2,layer3 &&
    python3 - "$TMP/out" "$TMP/probe2.json" <<'EOF' && ok "--params covering theta = all" || bad "--params cover"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["per_chain"] == b["per_chain"] and a["settings"]["params"] == "layer1,layer2,layer3"
EOF
run "probe --params one layer" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --format json \
    --quiet --params 3.weight,3.bias &&
    python3 - "$TMP/out" "$TMP/probe2.json" <<'EOF' && ok "--params one layer differs" || bad "--params layer"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["status"] == 0 and a["sive"] != b["sive"] and a["h"] != b["h"]
assert a["params_dim"] == 128 * 10 + 10 and "params_dim" not in b
EOF
run "--params unknown name" 2 "$SIVE" probe --params 4.weight ckpt &&
    expect_err "--params unknown name" "no parameters named '4.weight'"
run "--params bad range" 2 "$SIVE" probe --params 5:3 ckpt &&
    expect_err "--params bad range" "A < B"

# --eval-data: views on the same chains; the run's own numbers unchanged
run "probe --eval-data" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --threads 2 \
    --format json --quiet --eval-data test --eval-data class=3 --eval-data train &&
    cp "$TMP/out" "$TMP/views_whole.json" &&
    python3 - "$TMP/out" "$TMP/probe2.json" <<'EOF' && ok "--eval-data: views, run unchanged" || bad "--eval-data"
import json, math, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["per_chain"] == b["per_chain"]
assert [v["name"] for v in a["views"]] == ["test", "class=3", "train"]
for v in a["views"]:
    assert math.isfinite(v["sive"]["mean"]) and math.isfinite(v["mcse"]) and len(v["per_chain"]) == 2
# one path: the views share the run's displacement, not its losses
assert all(v["sive"] != a["sive"] for v in a["views"])
EOF
run "--eval-data bad spec" 2 "$SIVE" probe --eval-data foo ckpt &&
    expect_err "--eval-data bad spec" "is not train, test"
# a class past the data's labels (MNIST: 0-9) is a mistake: exit 2 before
# any checkpoint is read (this one does not exist: it would be exit 1)
run "--eval-data class=12" 2 "$SIVE" probe "$TMP/no-such.ckpt" "${TINY[@]}" --quiet \
    --eval-data test --eval-data class=12 &&
    expect_err "--eval-data class=12" "class=12: no class 12 in the training set (its classes are 0 to 9)"
run "--eval-data test:class=10" 2 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --quiet \
    --format json --eval-data test:class=10 && expect_err "--eval-data test:class=10" "no class 10 in the test set"
[ -s "$TMP/out" ] && bad "--eval-data test:class=10: output written" ||
    ok "--eval-data test:class=10: nothing run"
# parts with views saved and merged: the whole run's views
for part in 0:1 1:2; do
    run "probe --eval-data part $part" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --quiet \
        --eval-data test --eval-data class=3 --chain-range "$part" \
        --save-result "$TMP/views_${part%%:*}.sres"
done
run "merge views" 0 "$SIVE" merge --format json --quiet "$TMP/views_0.sres" "$TMP/views_1.sres" &&
    python3 - "$TMP/out" "$TMP/views_whole.json" <<'EOF' && ok "merged views = the whole run's" || bad "merged views"
import json, sys
m, whole = (json.load(open(f)) for f in sys.argv[1:])
assert [v["name"] for v in m["views"]] == ["test", "class=3"]
for a, b in zip(whole["views"][:2], m["views"]):
    assert a["per_chain"] == b["per_chain"] and a["sive"] == b["sive"], (a["sive"], b["sive"])
EOF

run "probe two checkpoints json" 0 "$SIVE" probe "$CK/epoch_0.ckpt" "$CK/epoch_1.ckpt" "${TINY[@]}" \
    --steps 100 --format json --quiet &&
    pycheck "json array" "$TMP/out" 'assert isinstance(d, list) and [x["epoch"] for x in d] == [0, 1]'
run "probe csv" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --format csv --anchor 0.1 --quiet &&
    [ "$(wc -l <"$TMP/out")" -eq 2 ] && ok "csv: header + one row"
run "probe table" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --traces "$TMP/tr.csv" --quiet &&
    grep -q "lambda-hat (SIVE)" "$TMP/out" && ok "table has lambda-hat"
# one chain: no std, so only SIVE is rounded to its MCSE; the online mean
# (far from SIVE) keeps 4 digits of the JSON's value (it printed 0)
run "probe one chain json" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --chains 1 \
    --format json --quiet && cp "$TMP/out" "$TMP/one.json"
run "probe one chain table" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --chains 1 --quiet &&
    grep "online mean (naive)" "$TMP/out" | awk '{ print $NF }' >"$TMP/one_online"
pycheck "one chain: online mean to 4 digits, not to SIVE's MCSE" "$TMP/one.json" "
v = d['online_mean']['mean']
shown = float(open('$TMP/one_online').read())
assert fin(v) and v != 0 and abs(shown - v) <= 5e-4 * abs(v) + 1e-12, (shown, v)"
# the settings line before the run: neither --h, --c-h nor --metropolis
# given, so the run picks the radius and sampler at its start (not "c_h = 1")
head -1 "$TMP/out" | grep -q "c_h = auto (from the loss or 1, resolved at the start),.*metropolis = auto" &&
    ok "settings line: c_h auto" || bad "settings line: $(head -1 "$TMP/out")"
run "probe table --c-h 1" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --steps 40 --c-h 1 --quiet &&
    head -1 "$TMP/out" | grep -q "c_h = 1, " && ok "settings line: c_h as given" ||
    bad "settings line --c-h 1: $(head -1 "$TMP/out")"
grep -q "start test z" "$TMP/out" && bad "table: start_z without --anneal" ||
    ok "table: no start_z without --anneal"
# --anneal: the table's start test z is the JSON's start_z
run "probe --anneal json" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --anneal 4 \
    --format json --quiet && cp "$TMP/out" "$TMP/anneal.json"
run "probe --anneal table" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --anneal 4 --quiet &&
    python3 - "$TMP/out" "$TMP/anneal.json" <<'PY' && ok "table: start_z with --anneal" ||
import json, math, re, sys
text, d = open(sys.argv[1], encoding="utf-8").read(), json.load(open(sys.argv[2]))
z = d["start_z"]
z = z["mean"] if isinstance(z, dict) else z
assert math.isfinite(z), z
m = re.search(r"^  start test z \(start_z\) +(-?[0-9.]+) \(chains started hot - cold\)$", text, re.M)
assert m and m.group(1) == "%.2f" % z, (m, z)
# its two parts: summary-only numbers in the JSON, one table row
zl, zm = d["start_z_lambda"], d["start_z_mean"]
assert math.isfinite(zl) and math.isfinite(zm), (zl, zm)
m = re.search(r"^  start test parts +(-?[0-9.]+) of lambda-hat, (-?[0-9.]+) of t mean tail loss$",
              text, re.M)
assert m and m.groups() == ("%.2f" % zl, "%.2f" % zm), (m, zl, zm)
assert d["auto_step_grads"]["mean"] is None and d["auto_step_rescaled"]["mean"] is None
PY
    bad "table: start_z with --anneal"
# a tiny budget raises low_ess: the summary row carries the mark and names
# the flag, the flags are explained below the table, the numbers are rounded
run "probe table, tiny budget" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --steps 40 --quiet &&
    python3 - "$TMP/out" <<'PY' && ok "probe table: flagged row marked, flags explained" || bad "probe table flags"
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
lines = text.splitlines()
head = next(i for i, l in enumerate(lines)
            if "λ̂ (SIVE)" in l and "MCSE" in l and "ESS L̄" in l and "ESS λ̂" in l)
row = lines[head + 1]
assert row.startswith("!") and "low_ess" in row and "epoch_1.ckpt" in row, row
legend = next(i for i in range(head, len(lines)) if lines[i].startswith("! raised flags"))
assert any(l.startswith("  low_ess: the tail effective sample size") for l in lines[legend:])
# the library's health text, as is, in the checkpoint's block
assert re.search(r"^  ! health: low_ess: chain 0: tail ESS [0-9.]+ < 100: raise steps$", text, re.M)
# lambda-hat rounded to its std: 2 significant digits of the std
lam = re.search(r"^  lambda-hat \(SIVE\) +(\S+) ± (\S+)$", text, re.M)
assert lam and len(lam.group(2).replace(".", "").strip("0")) <= 2, lam and lam.group(0)
assert not re.search(r"\.\d{4} ± ", text), "4-decimal number"
# the radius slope only where the health logic reads it: not on an unstable
# or nonstationary tail (this tiny budget's -1e3-ish slopes), else a number
slope = re.search(r"^  d ln lambda / d ln h +(.*)$", text, re.M).group(1)
skip = "unstable" in row or "nonstationary" in row
assert slope.startswith("not assessed: ") or not skip, (slope, row)
assert not skip or re.match(r"not assessed: (unstable|nonstationary) tail$|"
                            r"not assessed: unclipped lambda-hat <= 0$", slope), slope
assert skip or slope.startswith("not assessed: unclipped") or slope.endswith(" (SE)"), slope
# a diagnostic's ± that is a standard error says so (the header's ± is the std)
assert re.search(r"^  noise correction C +\S+ ± \S+ \(SE\)$", text, re.M), "noise correction"
# the settings that matter are in the header
for k in ("t", "base_lr", "c_h", "grad_batch", "burn_in", "steps", "groups", "eval_batch",
          "eval_stride", "chains"):
    assert re.search(r"\b%s = " % k, lines[0]), (k, lines[0])
PY
run "probe csv, tiny budget" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --steps 40 \
    --format csv --quiet &&
    python3 - "$TMP/out" <<'PY' && ok "probe csv: health column" || bad "probe csv health"
import csv, sys
names = ["diverged", "negative_sive", "nonstationary", "low_ess", "high_rhat",
         "noisy_correction", "aborted", "dominant_correction", "chart", "imprecise",
         "radius_bound", "step_bias", "unstable", "start_dependent"]
(r,) = list(csv.DictReader(open(sys.argv[1])))
flags = int(r["flags"])
want = "|".join(n for b, n in enumerate(names) if flags >> b & 1)
assert flags & 8 and r["health"] == want, (flags, r["health"], want)
PY
[ "$(wc -l <"$TMP/tr.csv")" -eq 401 ] && ok "traces: 2 chains x 200 steps" ||
    bad "traces: $(wc -l <"$TMP/tr.csv") lines"
head -1 "$TMP/tr.csv" | grep -q '^checkpoint,chain,step,lbar,s2,' && ok "traces header" ||
    bad "traces header: $(head -1 "$TMP/tr.csv")"

# --- broken inputs -------------------------------------------------------------
run "missing checkpoint" 1 "$SIVE" probe "$TMP/nope.ckpt" "${TINY[@]}" --quiet &&
    expect_err "missing checkpoint" "^sive probe: .*nope.ckpt: file not found"
grep -q "input/output error" "$TMP/err" && bad "missing checkpoint: reported as an I/O error" ||
    ok "missing checkpoint: not an I/O error"
# every checkpoint is checked before the first is probed: a typo (or a
# directory) among several stops the command at once, naming each
run "unreadable checkpoints among several" 1 "$SIVE" probe "$CK/epoch_1.ckpt" "$TMP/nope.ckpt" \
    "$CK" "${TINY[@]}" &&
    expect_err "unreadable checkpoints: missing" "^sive probe: .*nope.ckpt: file not found" &&
    expect_err "unreadable checkpoints: directory" "^sive probe: $CK: is a directory"
[ -s "$TMP/out" ] && bad "unreadable checkpoints: a probe ran: $(head -3 "$TMP/out")" ||
    ok "unreadable checkpoints: nothing probed"
run "calibrate missing checkpoint" 1 "$SIVE" calibrate "$TMP/nope.ckpt" --quiet &&
    expect_err "calibrate missing checkpoint" "^sive calibrate: .*nope.ckpt: file not found"
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
    expect_err "missing data dir" "nodata.*(directory not found)"
# values the library refuses only when a run starts are usage errors (exit
# 2, docs/cli.md), found before any work: nothing on stdout
run "impossible probe settings" 2 "$SIVE" probe "$CK/epoch_1.ckpt" --steps 4 --groups 8 \
    --eval-batch 16 --grad-batch 64 --chains 2 --quiet && expect_err "impossible probe" "tail"
[ -s "$TMP/out" ] && bad "impossible probe settings: output written" ||
    ok "impossible probe settings: nothing run"
run "trajectory: refused settings before training" 2 "$SIVE" trajectory --epochs 1 \
    --out "$TMP/tj-refused" --steps 3 --quiet && expect_err "trajectory refused" "tail"
[ -e "$TMP/tj-refused/epoch_0.ckpt" ] && bad "trajectory refused: trained anyway" ||
    ok "trajectory refused: nothing trained"
# an output path that cannot be written is found before the run (the
# default budget would run for minutes)
start=$(date +%s)
run "save-result unwritable" 1 "$SIVE" probe "$CK/epoch_1.ckpt" --quiet \
    --save-result "$TMP/no/such/x.sres" && expect_err "save-result unwritable" "no/such/x.sres"
[ $(($(date +%s) - start)) -lt 20 ] && [ ! -s "$TMP/out" ] && ok "save-result checked before the run" ||
    bad "save-result checked only after the run"
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
# the probe settings as the runs resolved them (metropolis 0 on a mini-batch
# loss, as `sive probe`'s settings), probe_requested as given (-1: auto),
# and each epoch's own resolved settings
pycheck "trajectory.json: probe resolved, probe_requested as given" "$TJ/trajectory.json" '
s, q = d["probe"], d["probe_requested"]
assert s["metropolis"] == 0 and q["metropolis"] == -1 and set(q) == set(s), (s, q)
assert {k for k in s if s[k] != q[k]} == {"metropolis", "kron_every", "radius_lookahead", "radius_check"}, (s, q)
assert s["steps"] == 200 and s["chains"] == 2 and "blis_threads" in s, s
assert all(e["settings"] == s for e in d["epochs"]), [e["settings"] for e in d["epochs"]]'
# the chain geometry `sive probe` prints is in the JSON too
pycheck "trajectory.json: geometry diagnostics" "$TJ/trajectory.json" '
for e in d["epochs"]:
    for k in ("h", "tether_step", "slope_proxy", "rms_disp_rel_h"):
        assert fin(e[k]) and e[k] > 0, (k, e[k])'
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
grep -Eq "^ +Epoch .*ESS L̄ +ESS λ̂" "$TMP/out" && ok "trajectory table on stdout"
grep -Eq '^! +1 .*low_ess' "$TMP/out" && grep -q '^  low_ess: ' "$TMP/out" &&
    ok "trajectory table: flagged rows marked, flags explained" || bad "trajectory table flags"
grep -q 'M = 100, 2 chains, N = 8, B_{eval} = 16, B_{grad} = 64, stride 1' "$TMP/tj2/trajectory.gp" &&
    grep -q 'health flag raised' "$TMP/tj2/trajectory.gp" &&
    ok "plot: budget in the title, flagged points marked" || bad "plot script: budget or flags"
python3 - "$TMP/tj2/trajectory.csv" "$TMP/tj2/trajectory.gp" <<'PY' && ok "plot: flags column" || bad "plot flags column"
import csv, re, sys
head = next(csv.reader(open(sys.argv[1])))
col = int(re.search(r"\(\$(\d+) > 0 \? \$9", open(sys.argv[2]).read()).group(1))
assert head[col - 1] == "flags" and head[col] == "health", (col, head)
for r in csv.DictReader(open(sys.argv[1])):
    assert (r["health"] == "") == (r["flags"] == "0"), r
PY
# the legend names the flags the circled points raised (the CSV says which)
python3 - "$TMP/tj2/trajectory.csv" "$TMP/tj2/trajectory.gp" <<'PY' && ok "plot: flag names in the legend" || bad "plot legend lacks the flag names"
import csv, re, sys
raised = {n for r in csv.DictReader(open(sys.argv[1])) if int(r["epoch"]) >= 1
          for n in r["health"].split("|") if n}
legend = re.search(r'title "health flag raised: ([^(]*) \(per point', open(sys.argv[2]).read()).group(1)
names = {n.replace("\\\\_", "_") for n in legend.split(", ")}
assert raised and names == raised, (legend, raised)
PY
run "trajectory csv stdout" 0 "$SIVE" trajectory --epochs 1 --out "$TMP/tj3" "${TINY[@]}" \
    --steps 100 --format csv --no-plot --quiet &&
    [ "$(wc -l <"$TMP/out")" -eq 3 ] && [ ! -e "$TMP/tj3/trajectory.png" ] && ok "csv + --no-plot"

# --- long runs: the estimate up front; Ctrl-C keeps what was done -------------------
# interrupt RUN...: start it (stdout -> $TMP/int.out, stderr -> $TMP/int.err),
# wait for the duration estimate, which a run of minutes prints once on
# stderr (not a terminal here) ~2 s in, send SIGINT; $got is the exit
# status and $ms the time from the signal to the exit
interrupt() {
    # the previous run's stderr must not satisfy the wait below: a SIGINT
    # sent before the handler is installed is ignored (background job)
    rm -f "$TMP/int.err"
    "$@" >"$TMP/int.out" 2>"$TMP/int.err" &
    local pid=$! t0
    for _ in $(seq 1 200); do grep -q "will take about" "$TMP/int.err" 2>/dev/null && break; sleep 0.1; done
    t0=$(date +%s%N)
    kill -INT $pid
    wait $pid
    got=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
}
interrupt "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --steps 2000000 --format json
[ "$got" -eq 130 ] && ok "Ctrl-C: exit 130" || bad "Ctrl-C: exit $got"
# the library calls the progress callback at least every 0.25 s
[ "$ms" -lt 3000 ] && ok "Ctrl-C: stopped $ms ms after the signal" || bad "Ctrl-C: took $ms ms"
[ "$(grep -c 'will take about' "$TMP/int.err")" -eq 1 ] &&
    grep -Eq 'sive probe: this will take about [0-9.]+ (min|h) more \(timed from its first [0-9.]+ s: [0-9]+ chain steps/s\)' "$TMP/int.err" &&
    ok "estimate printed once, saying how it was timed" ||
    { bad "no estimate"; sed 's/^/  stderr: /' "$TMP/int.err"; }
pycheck "Ctrl-C: the JSON is written with the status" "$TMP/int.out" '
assert d["status"] == -6 and "interrupted" in d["error"], (d["status"], d["error"])
assert "aborted" in d["flag_names"]
for c in d["per_chain"]:
    assert c["status"] == "aborted" and 0 < c["stop_step"] < 2000000, c'
interrupt "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --steps 2000000
[ "$got" -eq 130 ] && grep -Eq '^  chain 1 +aborted at step [0-9]+ of 2000000' "$TMP/int.out" &&
    grep -Eq '^!.*aborted' "$TMP/int.out" && ok "Ctrl-C: the table shows the aborted chains" ||
    { bad "Ctrl-C table (exit $got)"; sed 's/^/  stdout: /' "$TMP/int.out" | head -40; }
# a --chain-range part is timed on its own chains: 1 of 8 here, so the
# estimate is about 2e6 steps at the rate it states (all 8 would be 8x)
interrupt "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --chains 8 --chain-range 0:1 \
    --threads 1 --steps 2000000
python3 - "$TMP/int.err" <<'PY' && ok "estimate counts the chain range's chains" ||
import re, sys
m = re.search(r"about ([0-9.]+) (min|h) more \(timed from its first [0-9.]+ s: ([0-9]+) chain",
              open(sys.argv[1]).read())
s = float(m.group(1)) * (60 if m.group(2) == "min" else 3600)
assert 0.5 < s * float(m.group(3)) / 2e6 < 2, (s, m.group(3))
PY
    { bad "chain-range estimate"; sed 's/^/  stderr: /' "$TMP/int.err"; }
# the first Ctrl-C says at once that the run stops after the model call
# running (one call on a huge batch can be long) and that a second one quits
grep -q "stopping after the running model call (Ctrl-C again quits at once)" "$TMP/int.err" &&
    ok "Ctrl-C: the stop is announced" || bad "Ctrl-C: no notice on stderr"
# a trajectory keeps the epochs probed: table, CSV and JSON, with the status
interrupt "$SIVE" trajectory --epochs 1 --out "$TMP/tji" "${TINY[@]}" --steps 2000000 --no-plot
[ "$got" -eq 130 ] && grep -q "^epoch 0, chain 0: aborted at step" "$TMP/int.out" &&
    ok "Ctrl-C: trajectory table" || { bad "Ctrl-C trajectory (exit $got)"; cat "$TMP/int.err"; }
pycheck "Ctrl-C: trajectory.json" "$TMP/tji/trajectory.json" '
assert d["interrupted"] is True and len(d["epochs"]) == 1, d.get("interrupted")
e = d["epochs"][0]
assert e["status"] == -6 and len(e["stopped_chains"]) == 2 and "aborted" in e["flag_names"], e'
python3 - "$TMP/tji/trajectory.csv" <<'PY' && ok "Ctrl-C: trajectory.csv" || bad "Ctrl-C: trajectory.csv"
import csv, sys
(r,) = list(csv.DictReader(open(sys.argv[1])))
assert r["status"] == "-6" and "aborted" in r["health"], r
PY
# a short run says nothing
run "no estimate for a short run" 0 "$SIVE" probe "$CK/epoch_1.ckpt" "${TINY[@]}" --format json
grep -q "will take" "$TMP/err" && bad "short run printed an estimate" || ok "short run: no estimate"

# --- demo --------------------------------------------------------------------------
run "demo --quick" 0 "$SIVE" demo --quick --out "$TMP/demo" --quiet &&
    grep -q "Table 1" "$TMP/out" && grep -q "Retrospective" "$TMP/out" &&
    [ -s "$TMP/demo/trajectory.csv" ] && [ -s "$TMP/demo/trajectory.json" ] && ok "demo output"
# the demo's stdout shows the flags (a marked row, explained below) and
# rounded numbers; its budget line compares with the paper's operating point
grep -Eq '^! +[0-9]+ .*(low_ess|high_rhat|nonstationary)' "$TMP/out" &&
    grep -q '^! raised flags' "$TMP/out" && ok "demo: flagged rows marked and explained" ||
    bad "demo: no marked row"
python3 - "$TMP/out" <<'PY' && ok "demo: every ± rounded to its uncertainty" || bad "demo: unrounded numbers"
import re, sys
pairs = re.findall(r"(-?[0-9.]+) ± ([0-9.]+)", open(sys.argv[1], encoding="utf-8").read())
assert len(pairs) > 20, pairs
for v, u in pairs:
    if u == "0":
        continue  # no spread: v keeps 4 significant digits
    sig = u.replace(".", "").lstrip("0")
    assert len(sig if "." in u else sig.rstrip("0")) <= 2, (v, u)
    dv, du = (len(x.split(".")[1]) if "." in x else 0 for x in (v, u))
    assert dv == du, (v, u)
PY
grep -q 'N = 16 (paper 512), B_eval = 32 (paper 64), B_grad = 128 (paper 1024)' "$TMP/out" &&
    ok "demo --quick budget against the paper's" || bad "demo --quick budget text"

tap_finish
