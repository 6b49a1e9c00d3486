#!/usr/bin/env bash
# Open MPI (issue 10): `mpirun -np 2 sive probe` writes the same JSON, CSV
# and traces as one process (the wall time aside), evaluation views
# included; a unit that fails (a damaged checkpoint) is named with its
# rank, the run exits non-zero and writes nothing; a missing checkpoint is
# named before any unit, as without mpirun.  Likewise `mpirun -np 3 sive trajectory` (its CSV, JSON,
# stdout and plot), with faults of one rank: no data, other options; with
# --c-h auto the radius of a checkpoint cut between ranks searched once and
# broadcast, and a failed search broadcast as a value (no rank hangs).
# Usage: test_mpi.sh path/to/sive mpi|nompi
set -u
SIVE=${1:?usage: test_mpi.sh path/to/sive mpi|nompi}
if [ "${2:-}" != mpi ]; then echo "SKIP: sive was built without Open MPI (-Dmpi)"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "SKIP: mpirun not found (openmpi-bin)"; exit 77; fi
. "$(dirname "$0")/tap.sh"
SIVE=$(realpath "$SIVE") # the trajectory runs in directories of their own
# root needs --allow-run-as-root; 2 ranks on fewer cores need --oversubscribe
MPI=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPI=(mpirun --allow-run-as-root --oversubscribe)
MPIRUN=("${MPI[@]}" -np 2)
export OMPI_MCA_btl_vader_single_copy_mechanism=none # containers without CMA
# Open MPI's own allocations outlive MPI_Finalize: under LeakSanitizer they
# would read as our leaks (the library's are checked by every other test)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0"

"$SIVE" train --epochs 1 --out "$TMP/ck" --seed 3 --quiet >/dev/null || { bad "train"; exit 1; }
# threads and BLIS threads fixed: they are reported in the settings, and a
# rank's default would count the cores it is bound to
P=(--steps 40 --groups 4 --eval-batch 8 --grad-batch 16 --chains 3 --seed 7 --threads 2
   --blis-threads 1 --quiet)
CKS=("$TMP/ck/epoch_0.ckpt" "$TMP/ck/epoch_1.ckpt")
# what differs, by name: the first differing CSV columns of each line (a
# chain that blows up turns a last-bit difference into a large one), or
# the JSON's first differing bytes
fields_differ() {
    if [ "$f" = csv ]; then
        paste -d '\n' "$1" "$2" | awk -F, 'NR == 1 { split($0, h) } NR % 2 == 1 { a = $0; next }
            { split(a, x); n = 0; for (i = 1; i <= NF && n < 4; i++) if (x[i] != $i && h[i] != "seconds")
                { printf "line %d %s: %s vs %s; ", NR / 2, h[i], x[i], $i; n++ } }'
    else
        diff <(strip <"$1") <(strip <"$2") | head -c 400
    fi
}
for f in json csv; do
    "$SIVE" probe "${CKS[@]}" "${P[@]}" --format $f --traces "$TMP/t1.$f.csv" >"$TMP/one.$f" ||
        bad "one process $f"
    if "${MPIRUN[@]}" "$SIVE" probe "${CKS[@]}" "${P[@]}" --format $f --traces "$TMP/t2.$f.csv" \
        >"$TMP/two.$f" 2>"$TMP/err"; then ok "mpirun -np 2 probe $f"; else
        bad "mpirun -np 2 probe $f"; sed 's/^/  stderr: /' "$TMP/err" | head; fi
    strip() { if [ $f = json ]; then sed -E 's/"seconds":[^,}]*//g'; else sed -E 's/,[^,]*$//'; fi; }
    cmp -s <(strip <"$TMP/one.$f") <(strip <"$TMP/two.$f") && ok "$f identical (but the time)" ||
        bad "$f differs ($("$SIVE" version | tail -1)): $(fields_differ "$TMP/one.$f" "$TMP/two.$f")"
    cmp -s "$TMP/t1.$f.csv" "$TMP/t2.$f.csv" && ok "traces identical" || bad "traces differ"
done

# evaluation views (issue 24): each rank's parts carry the views' traces
# (and, with control variates, that the views used them) as bytes; rank 0's
# merge must give one process's view numbers
for cv in 0 1; do
    V=(--eval-data test --eval-data class=3 --control-variate $cv --format json)
    "$SIVE" probe "${CKS[@]}" "${P[@]}" "${V[@]}" >"$TMP/v1.json" || bad "views cv $cv: one process"
    "${MPIRUN[@]}" "$SIVE" probe "${CKS[@]}" "${P[@]}" "${V[@]}" >"$TMP/v2.json" 2>"$TMP/err" ||
        bad "views cv $cv: mpirun: $(head -3 "$TMP/err")"
    untime() { sed -E 's/"seconds":[^,}]*//g' "$1"; }
    # 2 checkpoints: their settings, settings_requested and 2 views each say it
    [ "$(grep -o '"views":\[{"name":"test"' "$TMP/v1.json" | wc -l)" = 2 ] &&
        [ "$(grep -o "\"control_variate\":$cv" "$TMP/v2.json" | wc -l)" = 8 ] &&
        cmp -s <(untime "$TMP/v1.json") <(untime "$TMP/v2.json") &&
        ok "mpirun -np 2 probe --eval-data (control variates $cv): views identical (but the time)" ||
        bad "views cv $cv differ: $(diff <(untime "$TMP/v1.json") <(untime "$TMP/v2.json") | head -c 400)"
done

# a radius from the loss (--c-h auto): each checkpoint's chain-0 unit
# searches once and broadcasts its result, the other units take its radius
# (sive_probe_set_radius_from): the output is one process's, the "radius:"
# health line included
A=(--c-h auto --metropolis 0 --steps 100 --format json)
"$SIVE" probe "${CKS[@]}" "${P[@]}" "${A[@]}" >"$TMP/a1.json" || bad "c_h auto: one process"
"${MPI[@]}" -np 3 "$SIVE" probe "${CKS[@]}" "${P[@]}" "${A[@]}" >"$TMP/a2.json" 2>"$TMP/err" ||
    bad "c_h auto: mpirun: $(head -3 "$TMP/err")"
untime() { sed -E 's/"seconds":[^,}]*//g' "$1"; }
[ "$(grep -o '"radius: chosen from the loss' "$TMP/a2.json" | wc -l)" = 2 ] &&
    cmp -s <(untime "$TMP/a1.json") <(untime "$TMP/a2.json") &&
    ok "mpirun -np 3 probe --c-h auto: one process's output, radius lines included" ||
    bad "c_h auto differs: $(diff <(untime "$TMP/a1.json") <(untime "$TMP/a2.json") | head -c 400)"

# fault: the second checkpoint is damaged; its units fail on some rank
cp "${CKS[1]}" "$TMP/bad.ckpt"
python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=1; open(p,'wb').write(b)" "$TMP/bad.ckpt"
"${MPIRUN[@]}" "$SIVE" probe "${CKS[0]}" "$TMP/bad.ckpt" "${P[@]}" --format json \
    --traces "$TMP/fault.csv" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -ne 0 ] && ok "a failed unit: exit $rc" || bad "a failed unit: exit 0"
grep -q "rank 1, unit 3 (checkpoint .*bad.ckpt, chain 0) failed" "$TMP/err" && ok "the unit is named" ||
    bad "message: $(head -5 "$TMP/err")"
[ -s "$TMP/out" ] && bad "output written: $(head -c 200 "$TMP/out")" || ok "no output"
[ -e "$TMP/fault.csv" ] && bad "traces file written" || ok "no traces file"
ls "$TMP" | grep -q '\.tmp\.' && bad "temporary left: $(ls "$TMP")" || ok "no temporaries"

# no radius can be searched (the defaults on the MLP's mini-batch loss
# resolve to ULA at c_h 1): the units go round-robin, u mod R
# (docs/scale.md), and no checkpoint's chain-0 unit runs alone before the
# others (the ranks waited for it); with 2 chains the damaged checkpoint's
# chain-0 unit is unit 2, on rank 0
P2=(--steps 40 --groups 4 --eval-batch 8 --grad-batch 16 --chains 2 --seed 7 --threads 2
    --blis-threads 1 --quiet)
"${MPIRUN[@]}" "$SIVE" probe "${CKS[0]}" "$TMP/bad.ckpt" "${P2[@]}" --format json \
    >"$TMP/out" 2>"$TMP/err"
grep -q "rank 0, unit 2 (checkpoint .*bad.ckpt, chain 0) failed" "$TMP/err" &&
    ok "no search: units round-robin (u mod R)" || bad "no search: message: $(head -5 "$TMP/err")"

# a value the library refuses for this data: exit 2 before any unit, as
# without mpirun, the reason once (rank 0), nothing written
"${MPIRUN[@]}" "$SIVE" probe "${CKS[0]}" "${P[@]}" --replacement 0 --grad-batch 100000 \
    --format json --traces "$TMP/refused.csv" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && ok "a refused value: exit 2" || bad "a refused value: exit $rc"
[ "$(grep -c "sive probe: sampling without replacement needs" "$TMP/err")" = 1 ] &&
    ok "a refused value: said once" || bad "a refused value: message: $(head -5 "$TMP/err")"
[ -s "$TMP/out" ] || [ -e "$TMP/refused.csv" ] && bad "a refused value: output written" ||
    ok "a refused value: nothing written"
# an --eval-data class past the labels: the same, before any unit
"${MPIRUN[@]}" "$SIVE" probe "${CKS[0]}" "${P[@]}" --eval-data class=12 --format json \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c "no class 12 in the training set" "$TMP/err")" = 1 ] &&
    [ ! -s "$TMP/out" ] && ok "--eval-data class=12: exit 2, said once, nothing written" ||
    bad "--eval-data class=12: exit $rc: $(head -3 "$TMP/err")"
# --orbit-every: the MLP has no orbit move; said once, in words a command-line
# user can act on
"${MPIRUN[@]}" "$SIVE" probe "${CKS[0]}" "${P[@]}" --metropolis 1 --orbit-every 1 \
    --format json >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c "leave --orbit-every 0" "$TMP/err")" = 1 ] &&
    [ ! -s "$TMP/out" ] && ok "--orbit-every: exit 2, said once, nothing written" ||
    bad "--orbit-every: exit $rc: $(head -3 "$TMP/err")"

# a missing checkpoint: named before any unit, as without mpirun (the same
# message and exit status, not a unit's "input/output error"), said once
"$SIVE" probe "${CKS[0]}" "$TMP/nope.ckpt" "${P[@]}" --format json >"$TMP/out" 2>"$TMP/err1"
rc1=$?
"${MPIRUN[@]}" "$SIVE" probe "${CKS[0]}" "$TMP/nope.ckpt" "${P[@]}" --format json \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
[ $rc -eq $rc1 ] && [ $rc -ne 0 ] && ok "a missing checkpoint: exit $rc, as one process" ||
    bad "a missing checkpoint: exit $rc, one process $rc1"
msg="sive probe: $TMP/nope.ckpt: file not found"
[ "$(grep -cxF "$msg" "$TMP/err1")" = 1 ] && [ "$(grep -cxF "$msg" "$TMP/err")" = 1 ] &&
    ! grep -q "input/output error" "$TMP/err" && ok "a missing checkpoint: named once" ||
    bad "a missing checkpoint: message: $(head -3 "$TMP/err")"
[ -s "$TMP/out" ] && bad "a missing checkpoint: output written" || ok "a missing checkpoint: no output"

# faults of one probe rank (issue 23, M1): another --chains or checkpoint
# list left rank 0 waiting forever for units never sent; other --data
# merged silently.  Every rank first agrees on the work: the odd rank is
# named, the job ends, nothing is written.
probe_fault() { # NAME RANK2-ARGS...
    local name=$1
    shift
    timeout 120 "${MPI[@]}" -np 2 "$SIVE" probe "${CKS[@]}" "${P[@]}" --format json : \
        -np 1 "$SIVE" probe "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "probe $name: exit $rc" ||
        bad "probe $name: exit $rc (124: a rank hung)"
    grep -q "rank 2 plans other work than rank 0" "$TMP/err" && ok "probe $name: rank named" ||
        bad "probe $name: message: $(head -5 "$TMP/err")"
    [ -s "$TMP/out" ] && bad "probe $name: output written" || ok "probe $name: no output"
}
probe_fault other-chains "${CKS[@]}" "${P[@]}" --format json --chains 2
probe_fault other-checkpoints "${CKS[0]}" "${P[@]}" --format json
probe_fault other-data "${CKS[@]}" "${P[@]}" --format json --data "$TMP/nowhere"
probe_fault other-option "${CKS[@]}" "${P[@]}" --format json --t 5000

# M2: results travel as bytes in memory (sive_result_to_bytes), so a run
# writes nothing under $TMPDIR (0.2 staged them in /tmp/sive-mpi-*, which a
# killed rank left behind).
MT="$TMP/mt"
mkdir -p "$MT"
TMPDIR=$MT "${MPIRUN[@]}" "$SIVE" probe "${CKS[0]}" "${P[@]}" --format json >"$TMP/out" 2>"$TMP/err" ||
    bad "probe with a private TMPDIR: $(head -3 "$TMP/err")"
left=$(ls "$MT" | grep '^sive-mpi-')
[ -z "$left" ] && ok "the run leaves no stage directory" || bad "left: $left"

# trajectory: rank 0 trains; 2 checkpoints x 3 chains = 6 units, 2 per rank,
# so ranks cut checkpoints into chain ranges (rank 1: epoch 0 chain 2 and
# epoch 1 chain 0) and rank 0 merges pieces of several ranks.  Each run in
# its own directory with the same --out, so the paths printed agree.
T=(trajectory --epochs 1 --hidden 16,16 --steps 30 --groups 4 --eval-batch 8 --grad-batch 16
   --chains 3 --seed 5 --threads 2 --blis-threads 1 --out o --format json)
# the wall times: the last two CSV columns, two JSON members
untime_csv() { sed -E 's/,[^,]*,[^,]*$//' "$1"; }
untime_json() { sed -E 's/"(train|probe)_seconds":[^,}]*//g' "$1"; }
mkdir "$TMP/t1" "$TMP/t3"
(cd "$TMP/t1" && "$SIVE" "${T[@]}" --quiet >stdout 2>err) || bad "one process trajectory"
if (cd "$TMP/t3" && "${MPI[@]}" -np 3 "$SIVE" "${T[@]}" >stdout 2>err); then
    ok "mpirun -np 3 trajectory"; else bad "mpirun -np 3 trajectory"; sed 's/^/  stderr: /' "$TMP/t3/err" | head; fi
# three one-process runs would write the same files: check the ranks split
grep -q "6 units (checkpoint, chain) over 3 ranks" "$TMP/t3/err" && ok "the units are spread" ||
    bad "not spread: $(head -3 "$TMP/t3/err")"
head -1 "$TMP/t1/o/trajectory.csv" | grep -q ',train_seconds,probe_seconds$' &&
    [ "$(wc -l <"$TMP/t1/o/trajectory.csv")" -eq 3 ] && ok "CSV: 2 epochs, times last" ||
    bad "CSV layout: $(head -c 300 "$TMP/t1/o/trajectory.csv")"
for f in o/trajectory.csv o/trajectory.json stdout; do
    case $f in *.csv) u=untime_csv ;; *) u=untime_json ;; esac
    [ -s "$TMP/t1/$f" ] && [ -s "$TMP/t3/$f" ] && cmp -s <($u "$TMP/t1/$f") <($u "$TMP/t3/$f") && ok "trajectory $f identical (but the times)" ||
        bad "trajectory $f differs: $(diff <($u "$TMP/t1/$f") <($u "$TMP/t3/$f") | head -c 400)"
done
if [ -e "$TMP/t1/o/trajectory.png" ]; then # gnuplot installed
    cmp -s "$TMP/t1/o/trajectory.png" "$TMP/t3/o/trajectory.png" && ok "trajectory.png identical" ||
        bad "trajectory.png differs"
fi

# a radius from the loss (--c-h auto): a checkpoint cut between ranks has
# its radius searched once, by the rank of its chain 0, which broadcasts
# its result; the other pieces take that radius.  The output is one
# process's (lambda-hat of every chain and the "radius:" health lines).
# Layouts: 2 checkpoints x 3 chains on 3 ranks (both cut, chain 0 split
# off rank 0's piece), 3 x 2 on 2 ranks (one cut, two in one piece each).
TA=(--c-h auto --metropolis 0 --steps 60)
for layout in "3 --epochs 1 --chains 3" "2 --epochs 2 --chains 2"; do
    read -r np lay <<<"$layout"
    d="$TMP/auto$np"
    mkdir -p "$d/one" "$d/mpi"
    (cd "$d/one" && "$SIVE" "${T[@]}" "${TA[@]}" $lay --quiet >stdout 2>err) ||
        bad "c_h auto $layout: one process: $(head -3 "$d/one/err")"
    (cd "$d/mpi" && timeout 120 "${MPI[@]}" -np $np "$SIVE" "${T[@]}" "${TA[@]}" $lay >stdout 2>err) ||
        bad "c_h auto $layout: mpirun: $(grep sive "$d/mpi/err" | head -3)"
    n=$(( np == 3 ? 2 : 1 ))
    grep -q "$n checkpoints\? cut between ranks: the radius searched once" "$d/mpi/err" &&
        ok "c_h auto $layout: $n checkpoint(s) share a search" ||
        bad "c_h auto $layout: no shared search: $(grep sive "$d/mpi/err" | head -3)"
    [ "$(grep -o '"radius: chosen from the loss' "$d/mpi/stdout" | wc -l)" = $(( np == 3 ? 2 : 3 )) ] &&
        cmp -s <(untime_json "$d/one/stdout") <(untime_json "$d/mpi/stdout") &&
        ok "mpirun -np $np trajectory --c-h auto ($lay): one process's output, radius lines included" ||
        bad "c_h auto $layout differs: $(diff <(untime_json "$d/one/stdout") <(untime_json "$d/mpi/stdout") | head -c 400)"
done
# the piece that searches fails (rank 1 has no data: epoch 1's chain 0):
# its failure is broadcast as a value, rank 2's piece of epoch 1 is not run
# and says why, the job ends (no rank waits), nothing is written
d="$TMP/auto-fault"
mkdir "$d"
(cd "$d" && timeout 120 "${MPI[@]}" -np 1 "$SIVE" "${T[@]}" "${TA[@]}" --quiet : \
    -np 1 "$SIVE" "${T[@]}" "${TA[@]}" --quiet --data "$TMP/nowhere" : \
    -np 1 "$SIVE" "${T[@]}" "${TA[@]}" --quiet >stdout 2>err)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "c_h auto, a failed search: exit $rc" ||
    bad "c_h auto, a failed search: exit $rc (124: a rank hung)"
grep -q "rank 1, unit 3 (epoch 1, checkpoint o/epoch_1.ckpt, chain 0) failed: cannot open the data" "$d/err" &&
    grep -q "rank 2, units 4-5 (epoch 1, checkpoint o/epoch_1.ckpt, chains 1:3) failed: not run: the piece of chain 0, which searches this checkpoint's radius, failed" "$d/err" &&
    ok "c_h auto, a failed search: both pieces named" ||
    bad "c_h auto, a failed search: message: $(grep sive "$d/err" | head -5)"
[ ! -s "$d/stdout" ] && [ -z "$(ls -A "$d/o" | grep -v '^epoch_[0-9]*\.ckpt$')" ] &&
    ok "c_h auto, a failed search: nothing written" || bad "c_h auto, a failed search: output written"
# a rank with another option takes the radius of a search for other
# options: the library refuses its run, which names the option
d="$TMP/auto-other"
mkdir "$d"
(cd "$d" && timeout 120 "${MPI[@]}" -np 2 "$SIVE" "${T[@]}" "${TA[@]}" --quiet : \
    -np 1 "$SIVE" "${T[@]}" "${TA[@]}" --quiet --t 5000 >stdout 2>err)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] &&
    grep -q "rank 2, units 4-5 .* failed: the result whose radius this run takes had another 't'" "$d/err" &&
    [ ! -s "$d/stdout" ] && ok "c_h auto, another option on rank 2: exit $rc, named, nothing written" ||
    bad "c_h auto, another option on rank 2: exit $rc: $(grep sive "$d/err" | head -3)"

# faults of one rank (mpirun's A : B gives rank 2 other arguments); every
# case: non-zero exit, the reason on stderr, nothing on stdout and no
# trajectory.* file (the checkpoints of the training stay)
traj_fault() { # NAME PATTERN RANK2-ARGS...
    local name=$1 want=$2 d="$TMP/$1"
    shift 2
    mkdir "$d"
    (cd "$d" && timeout 120 "${MPI[@]}" -np 2 "$SIVE" "${T[@]}" --quiet : \
        -np 1 "$SIVE" "${T[@]}" --quiet "$@" >stdout 2>err)
    local rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "$name: exit $rc" || bad "$name: exit $rc (124: a rank hung)"
    grep -q "$want" "$d/err" && ok "$name: named" || bad "$name: message: $(head -5 "$d/err")"
    [ -s "$d/stdout" ] && bad "$name: stdout written" || ok "$name: nothing on stdout"
    local left
    left=$(ls -A "$d/o" | grep -v '^epoch_[0-9]*\.ckpt$')
    [ -e "$d/o/epoch_1.ckpt" ] && [ -z "$left" ] && ok "$name: no trajectory files, no temporaries" || bad "$name: left $left"
}
traj_fault no-data "rank 2, units 4-5 (epoch 1, checkpoint o/epoch_1.ckpt, chains 1:3) failed: cannot open the data" \
    --data "$TMP/nowhere"
traj_fault other-options "epoch 1 (checkpoint o/epoch_1.ckpt): the ranks' chains do not merge: .*option 't'" \
    --t 5000
grep -q "part 1: rank 2, chains 1:3" "$TMP/other-options/err" && ok "other-options: the rank named" ||
    bad "other-options: parts not named: $(head -5 "$TMP/other-options/err")"
# another chain count on one rank: every rank plans with rank 0's, so the
# odd rank's piece fails by name instead of leaving rank 0 waiting
traj_fault other-chains "rank 2, unit.*failed: chain range" --chains 2
# a rank that stops at its arguments stops them all (no rank waits for it)
mkdir "$TMP/bad-args"
(cd "$TMP/bad-args" && timeout 120 "${MPI[@]}" -np 2 "$SIVE" "${T[@]}" : -np 1 "$SIVE" "${T[@]}" \
    --no-such-flag >stdout 2>err)
rc=$?
[ $rc -eq 2 ] && ok "bad-args: exit 2" || bad "bad-args: exit $rc (124: a rank hung)"
grep -q "rank 2 stopped at its arguments" "$TMP/bad-args/err" && ok "bad-args: named" ||
    bad "bad-args: message: $(head -3 "$TMP/bad-args/err")"
[ -e "$TMP/bad-args/o" ] && bad "bad-args: rank 0 went on" || ok "bad-args: nothing done"

tap_finish
