#!/usr/bin/env bash
# Open MPI (issue 10): `mpirun -np 2 sive probe` writes the same JSON, CSV
# and traces as one process (the wall time aside); a unit that fails (a
# damaged checkpoint) is named with its rank, the run exits non-zero and
# writes nothing.  Usage: test_mpi.sh path/to/sive mpi|nompi
set -u
SIVE=${1:?usage: test_mpi.sh path/to/sive mpi|nompi}
if [ "${2:-}" != mpi ]; then echo "SKIP: sive was built without Open MPI (-Dmpi)"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "SKIP: mpirun not found (openmpi-bin)"; exit 77; fi
. "$(dirname "$0")/tap.sh"
# root needs --allow-run-as-root; 2 ranks on fewer cores need --oversubscribe
MPIRUN=(mpirun --oversubscribe -np 2)
[ "$(id -u)" = 0 ] && MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2)
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
for f in json csv; do
    "$SIVE" probe "${CKS[@]}" "${P[@]}" --format $f --traces "$TMP/t1.$f.csv" >"$TMP/one.$f" ||
        bad "one process $f"
    if "${MPIRUN[@]}" "$SIVE" probe "${CKS[@]}" "${P[@]}" --format $f --traces "$TMP/t2.$f.csv" \
        >"$TMP/two.$f" 2>"$TMP/err"; then ok "mpirun -np 2 probe $f"; else
        bad "mpirun -np 2 probe $f"; sed 's/^/  stderr: /' "$TMP/err" | head; fi
    strip() { if [ $f = json ]; then sed -E 's/"seconds":[^,}]*//g'; else sed -E 's/,[^,]*$//'; fi; }
    cmp -s <(strip <"$TMP/one.$f") <(strip <"$TMP/two.$f") && ok "$f identical (but the time)" ||
        bad "$f differs: $(diff <(strip <"$TMP/one.$f") <(strip <"$TMP/two.$f") | head -4)"
    cmp -s "$TMP/t1.$f.csv" "$TMP/t2.$f.csv" && ok "traces identical" || bad "traces differ"
done

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

tap_finish
