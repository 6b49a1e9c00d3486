#!/usr/bin/python3
"""The exact finite-t target of a two-layer linear network at rank 0.

  bench/dln_l2_target.py [--widths 5 6 4] [--seed 1] LOG10_T...

For the population loss K = 1/2 ||W2 W1||_F^2 (teacher rank 0, theta* = 0;
widths H0 inputs, H1 hidden, H2 outputs) under the tethered law
q ~ exp(-t K - |theta|^2/(2 h^2)), t^2 Var_q[K] depends on (t, h) only
through T = t h^4 (docs/theory.md, "Multiplicity and finite t").  In units
theta' = theta/h the tether is N(0, I) and, given W2, the H0 columns of W1
are Gaussian with precision I + T W2^T W2: with l_i the eigenvalues of
W2 W2^T (real Wishart, n = H1 degrees of freedom, p = H2),
    q(l) ~ prod l_i^((n-p-1)/2) e^(-l_i/2) prod_{i<j} |l_i - l_j|
           * prod (1 + T l_i)^(-H0/2),
    t E[K | l]     = H0/2 sum T l_i/(1 + T l_i),
    t^2 Var[K | l] = H0/2 sum (T l_i/(1 + T l_i))^2,
and t^2 Var_q[K] = E[t^2 Var[K|l]] + Var[t E[K|l]].  The p-dimensional
l-integral is done by importance sampling in s = log l from a mixture
(uniform over the range, normal at l ~ 1/T, normal at l ~ 1), with a
standard error from 20 batches.  (Requires p = H2 <= H1; else transpose:
the widths' order does not change K's law.)  Needs numpy.
"""
import argparse

import numpy as np


def target(T, H0, H1, H2, rng, n_draws=1_000_000, chunks=8):
    p, n = H2, H1
    lo, hi = np.log(1e-6 / T), np.log(200.0)
    logw_all, tm_all, tv_all = [], [], []
    for _ in range(chunks):
        comp = rng.integers(0, 3, size=(n_draws, p))
        s = np.where(comp == 0, rng.uniform(lo, hi, (n_draws, p)),
                     np.where(comp == 1, rng.normal(-np.log(T), 2.0, (n_draws, p)),
                              rng.normal(0.5, 1.5, (n_draws, p))))
        q = ((s >= lo) & (s <= hi)) / (hi - lo) / 3 \
            + np.exp(-0.5 * ((s + np.log(T)) / 2.0) ** 2) / (2.0 * np.sqrt(2 * np.pi)) / 3 \
            + np.exp(-0.5 * ((s - 0.5) / 1.5) ** 2) / (1.5 * np.sqrt(2 * np.pi)) / 3
        l = np.exp(s)
        logw = (((n - p - 1) / 2 + 1) * s - l / 2 - (H0 / 2) * np.log1p(T * l)
                - np.log(q)).sum(1)
        for i in range(p):
            for j in range(i + 1, p):
                logw += np.log(np.abs(l[:, i] - l[:, j]) + 1e-300)
        logw[(s > hi).any(1)] = -np.inf
        x = T * l / (1 + T * l)
        logw_all.append(logw)
        tm_all.append((H0 / 2) * x.sum(1))
        tv_all.append((H0 / 2) * (x * x).sum(1))
    logw, tm, tv = (np.concatenate(a) for a in (logw_all, tm_all, tv_all))
    w = np.exp(logw - logw.max())

    def value(sl):
        ww = w[sl]
        mean = (ww * tm[sl]).sum() / ww.sum()
        return (ww * (tv[sl] + (tm[sl] - mean) ** 2)).sum() / ww.sum(), mean

    val, mean = value(slice(None))
    b = 20
    vals = [value(slice(k * len(w) // b, (k + 1) * len(w) // b))[0] for k in range(b)]
    ess = w.sum() ** 2 / (w * w).sum()
    return val, np.std(vals) / np.sqrt(b), ess, mean


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--widths", type=int, nargs=3, default=[5, 6, 4])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("log10_T", type=float, nargs="+")
    a = ap.parse_args()
    H0, H1, H2 = a.widths
    if H2 > H1:
        H0, H2 = H2, H0
    if H2 > H1:
        ap.error("needs min(H0, H2) <= H1")
    rng = np.random.default_rng(a.seed)
    for lt in a.log10_T:
        v, se, ess, mean = target(10.0 ** lt, H0, H1, H2, rng)
        print(f"T 1e{lt:g}: t^2 Var = {v:.4f} +- {se:.4f} (ESS {ess:.0f}); "
              f"t E[K] = {mean:.4f}", flush=True)


if __name__ == "__main__":
    main()
