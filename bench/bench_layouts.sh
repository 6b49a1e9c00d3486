#!/bin/sh
# Thread layouts of `sive probe` on an idle and on a busy machine, in one
# run: for 1 and 2 chains, --threads 1 and --threads 2 (BLIS threads by
# the CLI's default, cpus / parallel chains, adapting per call,
# lib/ref/mlp_model.c), --threads 1 with SIVE_BLIS_ADAPT=0 (0.2's fixed layout;
# --threads 2 with it is the same layout for 1 chain and needs no
# adapting for 2), and one thread in all (--threads 1 --blis-threads 1).  "busy" runs
# a shell busy loop pinned to the last CPU (taskset) during the runs.
# Layouts are interleaved round by round so that they share the load of
# the moment; each figure is the median (and best) over the rounds of the
# probe's own seconds (JSON "seconds") / steps, in ms per step of the run
# (all chains).
#
#   bench/bench_layouts.sh [rounds (3)] [steps (40)] [build dir (build)]
#
# LAYOUTS="T1 T2 T1xB1" in the environment runs only those (T1-fixed, the
# fixed layout that collapses under load, takes most of the time).
# Needs a checkpoint: made once in $TMPDIR/sive-layouts by `sive train`.
set -eu
rounds=${1:-3}
steps=${2:-40}
b=${3:-build}
sive=$b/tools/sive
tmp=${TMPDIR:-/tmp}/sive-layouts
mkdir -p "$tmp"
[ -f "$tmp/epoch_1.ckpt" ] || "$sive" train --epochs 1 --out "$tmp" --quiet >/dev/null
ck=$tmp/epoch_1.ckpt
last=$(($(nproc) - 1))
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus"
"$sive" version | sed -n 2p
echo "probe: paper's configuration (N 512, B_eval 64, B_grad 1024), $steps steps, checkpoint after 1 epoch, $rounds rounds"

# layout name | environment | options
layouts='T1|SIVE_BLIS_ADAPT=1|--threads 1
T2|SIVE_BLIS_ADAPT=1|--threads 2
T1-fixed|SIVE_BLIS_ADAPT=0|--threads 1
T1xB1|SIVE_BLIS_ADAPT=1|--threads 1 --blis-threads 1'

only=${LAYOUTS:-T1 T2 T1-fixed T1xB1}
out=$tmp/times.txt
: > "$out"
for load in idle busy; do
  pid=
  if [ $load = busy ]; then
    taskset -c "$last" sh -c 'while :; do :; done' &
    pid=$!
  fi
  r=0
  while [ $r -lt "$rounds" ]; do
    for k in 1 2; do
      echo "$layouts" | while IFS='|' read -r name env opts; do
        case " $only " in *" $name "*) ;; *) continue ;; esac
        # shellcheck disable=SC2086
        s=$(env $env "$sive" probe "$ck" --chains $k $opts --steps "$steps" --quiet \
              --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
        echo "$load $k $name $s" >> "$out"
      done
    done
    r=$((r + 1))
  done
  [ -n "$pid" ] && kill "$pid"
done
python3 - "$out" "$steps" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
steps = int(sys.argv[2])
t = {}
for load, k, name, s in rows:
    t.setdefault((load, k, name), []).append(float(s) * 1e3 / steps)
names = [n for n in ["T1", "T2", "T1-fixed", "T1xB1"] if any(k[2] == n for k in t)]
print("\nload average at the end: " + open("/proc/loadavg").read().split()[0])
print("ms per step, median (best) over rounds; T1 = --threads 1, T2 = --threads 2,"
      " -fixed = SIVE_BLIS_ADAPT=0, T1xB1 = --threads 1 --blis-threads 1")
print("%-5s %6s " % ("load", "chains") + " ".join("%16s" % n for n in names) +
      "   T2/T1  T2/T1xB1")
b1 = "T1xB1" if "T1xB1" in names else names[0]
for load in ("idle", "busy"):
    for k in ("1", "2"):
        v = {n: t[(load, k, n)] for n in names}
        med = {n: st.median(v[n]) for n in names}
        print("%-5s %6s " % (load, k) +
              " ".join("%16s" % ("%.1f (%.1f)" % (med[n], min(v[n]))) for n in names) +
              "   %5.2f  %8.2f" % (med["T2"] / med["T1"], med["T2"] / med[b1]))
# the same round's T1 and T2 ran seconds apart: their ratio pair by pair
print("\nT2/T1 pair by pair (round 1, 2, ...), median [min, max]")
for load in ("idle", "busy"):
    for k in ("1", "2"):
        r = [b / a for a, b in zip(t[(load, k, "T1")], t[(load, k, "T2")])]
        print("%-5s %6s  %s   median %.2f [%.2f, %.2f]" % (load, k,
              " ".join("%.2f" % x for x in r), st.median(r), min(r), max(r)))
PY
