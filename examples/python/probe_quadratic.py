#!/usr/bin/env python3
"""Probe a numpy quadratic whose answer is known exactly.

With x = theta - theta*, the loss is L0 + K(x), K(x) = g.x + x.H.x / 2
(H diagonal), observed with Gaussian evaluation noise sigma per group.
Under the tethered ULA chain every coordinate is a Gaussian AR(1) process,
so t^2 Var[K] - what SIVE estimates - has a closed form (docs/theory.md,
"Exact targets").  The same model and options as examples/c/probe_quadratic.c
and examples/julia/probe_quadratic.jl: all three print the same numbers.

Usage: probe_quadratic.py [seed]      exit 0 when |z| <= 4
"""
import sys

import numpy as np

import sive

D = 8
i = np.arange(D)
H = 1.0 + 0.5 * i
G = 0.02 * (1 + i % 3) * np.where(i % 2 == 1, -1.0, 1.0)
THETA_STAR = 0.1 * (i + 1)
L0, SIGMA = 1.0, 1e-3      # L0 is a loss floor the estimator never needs
T, A, RADIUS = 1e4, 0.05, 0.05


def k(theta):
    x = theta - THETA_STAR
    return float(np.sum(G * x + 0.5 * H * x * x))


def grad(theta, batch):
    # Exact gradient: an analytic model has no mini-batches (batch.index is None).
    return G + H * (theta - THETA_STAR), L0 + k(theta)


def group_loss(theta, batch):
    # N noisy observations; the noise is drawn from the per-call seed with the
    # library's generator, so the run is reproducible (and equals the C one).
    noise = sive.Rng(batch.seed, 0).normals(batch.n_groups)
    return L0 + k(theta) + SIGMA * noise


def exact_lambda():
    eta = A / T
    rho = 1.0 - A * H - eta / RADIUS**2
    mu = -A * G / (1.0 - rho)
    v = 2.0 * eta / (1.0 - rho**2)
    return T**2 * float(np.sum((G + H * mu) ** 2 * v + 0.5 * H**2 * v**2))


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    # An analytic model: no data set, so the per-group form of the loss.
    model = sive.Model(D, grad, group_loss=group_loss)
    with sive.Probe(t=T, base_lr=A, h=RADIUS, steps=4000, groups=16, chains=4,
                    seed=seed) as probe:
        with probe.run(model, THETA_STAR) as r:
            lam = r.stat(sive.Stat.SIVE_UNCLIPPED)
            exact = exact_lambda()
            z = (lam - exact) / r.mcse
            print(f"lambda = {lam:.3f} (MCSE {r.mcse:.3f}), exact {exact:.3f}, "
                  f"z = {z:.2f}, ESS {r.ess:.0f}")
            print(f"raw variance {r.stat(sive.Stat.RAW_VARIANCE):.3f} - noise correction "
                  f"{r.noise_correction:.3f} (SE {r.noise_correction_std:.3f})")
            if r.health:
                print("health:\n" + r.health)
    ok = np.isfinite(z) and abs(z) <= 4.0
    print("status", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
