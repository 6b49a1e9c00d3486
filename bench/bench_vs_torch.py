#!/usr/bin/python3
"""libsive's probe step against the same step in PyTorch, run alternately.

  bench/bench_vs_torch.py [--build build] [--alternations 5] [--steps 12]

Each alternation runs, as separate processes one after the other:
  libsive (a)        1 chain x 2 BLIS threads, through sive_mlp_model
  libsive (b)        2 chains in parallel x 1 BLIS thread (ms per step of
                     throughput), through sive_mlp_model
  libsive (b) dense  the same with every one of the 32 768 evaluation draws
                     through the network (the work PyTorch does)
  PyTorch            bench/peer_torch.py, torch.set_num_threads(2)
and prints ms per step of each, then the best and median over alternations
and the ratios libsive / PyTorch (below 0.5 = libsive at least 2x faster).
The PyTorch peer is optional: without torch the libsive figures are printed
and the comparison is skipped with a message.
"""
import argparse
import os
import statistics
import subprocess
import sys


def run(cmd, tag):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 3 and tag == "torch":
        return None, p.stdout.strip()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    last = p.stdout.strip().splitlines()[-1].split()
    return float(last[-1]), p.stdout


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--alternations", type=int, default=5)
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    step = os.path.join(args.build, "bench", "bench_step")
    # libsive-ref: the MLP and data, and (its dependency) libsive
    lib = os.path.join(args.build, "lib", "libsive-ref.so")
    peer = [sys.executable, os.path.join(here, "peer_torch.py"), "--lib", lib,
            "--steps", str(args.steps), "--rounds", "1", "--threads", "2"]
    s = str(args.steps)
    cases = [
        ("libsive (a) 1 chain x 2 BLIS", [step, "--one", "a", s, "1"], "lib"),
        ("libsive (b) 2 chains x 1 BLIS", [step, "--one", "b", s, "1"], "lib"),
        ("libsive (b) dense", [step, "--one", "b", s, "1", "dense"], "lib"),
        ("PyTorch, 2 threads", peer, "torch"),
    ]
    times = {c[0]: [] for c in cases}
    skip = None
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}; "
          f"{args.alternations} alternations of {args.steps} steps (first 2 untimed); "
          "ms per step")
    for a in range(args.alternations):
        row = []
        for name, cmd, tag in cases:
            if tag == "torch" and skip:
                continue
            ms, out = run(cmd, tag)
            if ms is None:
                skip = out
                continue
            times[name].append(ms)
            row.append(f"{ms:8.2f}")
        print(f"  alternation {a}: " + " ".join(row))
    print()
    print(f"{'':34s} {'best':>8s} {'median':>8s}")
    for name, _, _ in cases:
        v = times[name]
        if v:
            print(f"{name:34s} {min(v):8.2f} {statistics.median(v):8.2f}")
    if skip:
        print(f"\n{skip}\nno PyTorch comparison.")
        return
    tb = min(times["PyTorch, 2 threads"])
    tm = statistics.median(times["PyTorch, 2 threads"])
    print("\nratio libsive / PyTorch (best / best, median / median; acceptance <= 0.5)")
    for name, _, tag in cases:
        if tag == "lib":
            v = times[name]
            print(f"  {name:32s} {min(v) / tb:6.3f} {statistics.median(v) / tm:6.3f}"
                  f"   ({tb / min(v):.1f}x faster)")


if __name__ == "__main__":
    main()
