#!/usr/bin/env python3
"""Train the reference 784-128-128-10 MLP in PyTorch on the bundled digits
and probe it with sive.torch at several epochs; optionally probe the same
parameters through the library's C MLP too (--compare), with the same
options and seed, and report both estimates and the time per step.
Writes CSV to stdout (or --out FILE).

Usage: probe_torch_mlp.py [--data DIR] [--epochs E] [--every K] [--steps M]
                          [--chains C] [--compare] [--out FILE]

The nn.Sequential below flattens in the C MLP's layout (W1, b1, W2, b2,
W3, b3; each W [out][in]), so theta* from torch is a valid C MLP parameter
vector: with --compare, both probes sample the same posterior and differ
only by floating-point arithmetic and the cost of Python/torch callbacks.
Needs torch (Debian: python3-torch) and numpy.  Runs from the source tree
(examples/python/sive.py, next to it, loads ../../python/sive) or, copied
elsewhere, with the installed package on PYTHONPATH.
"""
import argparse
import csv
import math
import os
import pathlib
import sys
import time

try:
    import torch
except ImportError:
    print("skipped: torch is not installed (Debian: apt-get install python3-torch)")
    sys.exit(77)

import numpy as np

import sive
import sive.torch


def tensors(ds):
    """A sive.Dataset as (float32 inputs in [0, 1], int64 labels)."""
    x = torch.from_numpy(ds.pixels().reshape(len(ds), -1).astype(np.float32) / 255.0)
    y = torch.from_numpy(ds.labels().astype(np.int64))
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("SIVE_DATA_DIR")
                    or str(pathlib.Path(__file__).resolve().parents[2] / "data"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--every", type=int, default=1, help="probe every K epochs")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--compare", action="store_true", help="probe through the C MLP too")
    ap.add_argument("--out", help="CSV file (default: stdout)")
    a = ap.parse_args()

    train, test = sive.Dataset.open_dir(a.data)
    x, y = tensors(train)
    xt, yt = tensors(test)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    n = len(x)
    # The probe's budget: t = n/log n; far below the paper's (see docs/python.md).
    opts = dict(t=sive.torch.wbic_t(n), steps=a.steps, groups=16, eval_batch=32, grad_batch=64,
                chains=a.chains, seed=1)
    mlp = sive.Mlp() if a.compare else None

    out = open(a.out, "w", newline="") if a.out else sys.stdout
    w = csv.writer(out)
    cols = ["epoch", "train_loss", "test_loss", "lambda_torch", "mcse_torch",
            "ms_per_step_torch"]
    if a.compare:
        cols += ["lambda_c", "mcse_c", "ms_per_step_c"]
    w.writerow(cols)
    gen = torch.Generator().manual_seed(0)
    ok = True
    for epoch in range(a.epochs + 1):
        if epoch:
            net.train()
            for idx in torch.randperm(n, generator=gen).split(32):
                opt.zero_grad()
                loss_fn(net(x[idx]), y[idx]).backward()
                opt.step()
        if epoch % a.every:
            continue
        net.eval()
        with torch.no_grad():
            train_loss, test_loss = float(loss_fn(net(x), y)), float(loss_fn(net(xt), yt))
        t0 = time.perf_counter()
        r = sive.torch.probe(net, loss_fn, x, y, **opts)
        sec = time.perf_counter() - t0
        row = [epoch, f"{train_loss:.5f}", f"{test_loss:.5f}", f"{r.lambda_hat:.3f}",
               f"{r.mcse:.3f}", f"{1e3 * sec / (a.steps * a.chains):.3f}"]
        ok = ok and math.isfinite(r.lambda_hat) and r.chains_ok == r.chains
        if a.compare:
            theta = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy()
            with sive.mlp_model(mlp, train) as m, sive.Probe(**opts) as p:
                t0 = time.perf_counter()
                with p.run(m, theta) as rc:
                    sec_c = time.perf_counter() - t0
                    row += [f"{rc.lambda_hat:.3f}", f"{rc.mcse:.3f}",
                            f"{1e3 * sec_c / (a.steps * a.chains):.3f}"]
        w.writerow(row)
        out.flush()
    if a.out:
        out.close()
    print("status", "OK" if ok else "FAILED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
