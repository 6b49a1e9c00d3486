#!/usr/bin/python3
"""Exact finite-(t, h) targets of a deep linear network by blocked Gibbs.

  bench/dln_gibbs_target.py --case "L4 6-6-6-6-6 r3" --t 1e4 --h 1.4 [--h ...]
  bench/dln_gibbs_target.py --widths 1 1 1 --rank 0 --t 1e4 --h 1
  bench/dln_gibbs_target.py --selfcheck          # the validations, ~10 s

The estimand of SIVE on a deep linear network in population mode is
t^2 Var_q[K] under the tethered law

    q(theta) ~ exp(-t K(theta) - |theta - theta*|^2 / (2 h^2)),
    K = 1/2 ||W_L ... W_1 - W_T||_F^2

(include/sive/dln.h: the population loss minus its constant), theta* the
balanced factorisation of the suite (bench_truth: singular values 1 + j/r,
teacher seed S, factorisation seed S + 2), taken from libsive-ref itself
through ctypes so the centre is the probe's (the law is not invariant to
the choice of theta* in the fibre).  Nothing else of libsive is used.

Given the other layers, K is quadratic in W_s: with A = W_L...W_{s+1}
= P diag(sigma) V^T and B = W_{s-1}...W_1 = U diag(rho) Q^T (full SVDs) and
X = V^T W_s U, K = sum_ij (s_ij X_ij - M_ij)^2 / 2 + K_out with s_ij =
sigma_i rho_j, M = P^T W_T Q and K_out the part of |M|^2/2 that no X_ij
reaches, and the tether is |X - X*|^2/(2h^2): the entries of X are
independent Gaussians, precision t s_ij^2 + 1/h^2.  One sweep draws every
layer exactly in turn (no step size, no rejection), then moves along the
symmetry orbits W_s -> G W_s, W_{s+1} -> W_{s+1} G^-1 with G = exp(eps Z),
Z symmetric Gaussian (a Metropolis-Hastings step: the tether and the
Jacobian |det G|^(H_{s-1} - H_{s+1}) decide; eps adapts in the burn-in and
is then frozen); --no-orbit drops them (on the suite's cases the layer
draws alone give the same values with a similar ESS: docs/validation.md).

Rao-Blackwellised: each layer update also gives t E[K | rest] and
t^2 Var[K | rest] in closed form (sums over the entries of X, of mean mu
and variance v: K_out + ((s mu - M)^2 + s^2 v)/2 and s^4 v^2/2 +
s^2 (s mu - M)^2 v), and t^2 Var_q[K] = E[t^2 Var(K|rest)] +
Var(t E[K|rest]), averaged over the layers.  C independent chains, half
started at theta*, half dispersed at theta* + h N(0, I); the standard
error is the larger of batch means (N/25 sweeps) and whole chains as
batches; split-R^ is computed on the batch means of the estimator's
linearisation and of log |W_s|^2, and the two start groups' estimates
are compared (z).  Needs numpy; libsive-ref (build/lib/libsive-ref.so,
or SIVE_REF_LIBRARY) for a teacher of rank > 0 and for lambda.
"""
import argparse
import ctypes
import math
import os
import pathlib
import sys
import time

try:
    import numpy as np
except ImportError:  # meson's test reads 77 as "skipped"
    print("dln_gibbs_target.py needs numpy (Debian: python3-numpy)", file=sys.stderr)
    sys.exit(77)

# ---------------------------------------------------------------- the case


def parse_case(name):
    """'L4 6-6-6-6-6 r3' -> (widths, rank); '50x7' means 7 widths of 50."""
    widths = rank = None
    for tok in name.split():
        if tok[0] == "r" and tok[1:].isdigit():
            rank = int(tok[1:])
        elif "-" in tok or "x" in tok[1:]:
            if "x" in tok:
                w, n = tok.split("x")
                widths = [int(w)] * int(n)
            else:
                widths = [int(w) for w in tok.split("-")]
    if widths is None or rank is None:
        raise ValueError(f"cannot read widths and rank from {name!r}")
    return widths, rank


def ref_library():
    path = os.environ.get("SIVE_REF_LIBRARY")
    if path:
        return ctypes.CDLL(path)
    root = pathlib.Path(__file__).resolve().parents[1]
    for build in ("build", "builddir"):
        p = root / build / "lib" / "libsive-ref.so"
        if p.exists():
            return ctypes.CDLL(str(p))
    raise OSError("libsive-ref.so not found: build libsive (meson) or set SIVE_REF_LIBRARY")


def libsive_case(widths, rank, seed, scales=None):
    """W_T, the layers of theta* and (lambda, m), from libsive-ref."""
    lib = ref_library()
    L = len(widths) - 1
    W = (ctypes.c_size_t * (L + 1))(*widths)
    lam, mult = ctypes.c_double(), ctypes.c_int64()
    if lib.sive_dln_lambda(W, ctypes.c_size_t(L), ctypes.c_size_t(rank),
                           ctypes.byref(lam), ctypes.byref(mult)):
        raise ValueError("sive_dln_lambda refused the widths")
    sv = (ctypes.c_double * max(rank, 1))(*[1.0 + j / rank for j in range(rank)])
    m = ctypes.c_void_p()
    lib.sive_dln_new.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                 ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p,
                                 ctypes.c_uint64]
    if lib.sive_dln_new(ctypes.byref(m), W, L, rank, sv, seed):
        raise ValueError("sive_dln_new failed")
    lib.sive_dln_dim.restype = ctypes.c_size_t
    lib.sive_dln_dim.argtypes = [ctypes.c_void_p]
    d = lib.sive_dln_dim(m)
    wt = np.zeros(widths[-1] * widths[0])
    theta = np.zeros(d)
    lib.sive_dln_teacher.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.sive_dln_factorisation.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_uint64, ctypes.c_void_p]
    sc = None if scales is None else (ctypes.c_double * L)(*scales)
    rc = lib.sive_dln_teacher(m, wt.ctypes.data) or \
        lib.sive_dln_factorisation(m, sc, seed + 2, theta.ctypes.data)
    lib.sive_dln_free.argtypes = [ctypes.c_void_p]
    lib.sive_dln_free(m)
    if rc:
        raise ValueError("sive_dln_teacher/factorisation failed")
    layers, off = [], 0
    for s in range(1, L + 1):
        n = widths[s] * widths[s - 1]
        layers.append(theta[off:off + n].reshape(widths[s], widths[s - 1]))
        off += n
    return wt.reshape(widths[-1], widths[0]), layers, lam.value, mult.value


def zero_case(widths):
    L = len(widths) - 1
    return (np.zeros((widths[-1], widths[0])),
            [np.zeros((widths[s], widths[s - 1])) for s in range(1, L + 1)])


# ---------------------------------------------------------------- sampler


def chain_product(Ws, C, n):
    P = np.broadcast_to(np.eye(n), (C, n, n)).copy()
    for W in Ws:
        P = W @ P
    return P


class Gibbs:
    """C chains of the blocked Gibbs sampler (layer updates + orbit moves)."""

    def __init__(self, widths, WT, Wstar, t, h, C, rng, orbit=True):
        self.w, self.L, self.t, self.h, self.C = widths, len(widths) - 1, t, h, C
        self.WT, self.Ws, self.rng, self.orbit = WT, Wstar, rng, orbit
        self.eps = np.full(self.L - 1, 0.3)  # orbit move size per boundary
        self.acc = np.zeros(self.L - 1)
        self.W = [np.broadcast_to(W, (C,) + W.shape).copy() for W in Wstar]
        half = C // 2  # dispersed starts
        for k in range(self.L):
            self.W[k][half:] += h * rng.standard_normal(self.W[k][half:].shape)

    def loss(self):
        P = chain_product(self.W, self.C, self.w[0])
        D = P - self.WT
        return 0.5 * (D * D).sum((1, 2))

    def sweep(self):
        """One scan over the layers, then the orbit moves; returns per chain
        the layers' means of t E[K|rest], of its square and of
        t^2 Var[K|rest], each taken before that layer's draw."""
        L, C, t, ih2 = self.L, self.C, self.t, 1.0 / self.h ** 2
        # suffix products A_k = W_{L-1} ... W_{k+1} (0-based layers)
        A = [None] * L  # A[L-1] = I
        for k in range(L - 2, -1, -1):
            A[k] = self.W[k + 1] if A[k + 1] is None else A[k + 1] @ self.W[k + 1]
        B = None  # W_{k-1} ... W_0
        ms = np.zeros(C)
        m2 = np.zeros(C)
        vs = np.zeros(C)
        WT = self.WT
        for k in range(L):
            ho, hi = self.W[k].shape[1], self.W[k].shape[2]
            # A = P diag(sig) Vh (full frames), B = Ub diag(rho) Qh: in
            # X = Vh W_k Ub, A W_k B = P diag(sig) X diag(rho) Qh, so
            # K = sum_ij (s_ij X_ij - M_ij)^2 / 2 + K_out with s = sig rho,
            # M = P^T W_T Qh^T, K_out = the part of |M|^2/2 no X reaches.
            # (The SVD, not eigh of A^T A: no squared condition number, and
            # mu below is bounded by sqrt(t) h |M| / 2 whatever the rounding.)
            sig = np.ones((C, ho))
            rho = np.ones((C, hi))
            M = np.broadcast_to(WT, (C,) + WT.shape)
            Vh = Ub = None
            if A[k] is not None:
                P, sv, Vh = np.linalg.svd(A[k])
                sig = np.zeros((C, ho))
                sig[:, :sv.shape[1]] = sv
                M = np.swapaxes(P, 1, 2) @ M
            if B is not None:
                Ub, sv, Qh = np.linalg.svd(B)
                rho = np.zeros((C, hi))
                rho[:, :sv.shape[1]] = sv
                M = M @ np.swapaxes(Qh, 1, 2)
            ra, rb = min(ho, M.shape[1]), min(hi, M.shape[2])
            Mk = np.zeros((C, ho, hi))
            Mk[:, :ra, :rb] = M[:, :ra, :rb]
            K_out = 0.5 * ((M * M).sum((1, 2)) - (Mk * Mk).sum((1, 2)))
            Xs = np.broadcast_to(self.Ws[k], (C, ho, hi))
            if Vh is not None:
                Xs = Vh @ Xs
            if Ub is not None:
                Xs = Xs @ Ub
            sc = sig[:, :, None] * rho[:, None, :]
            v = 1.0 / (t * sc * sc + ih2)
            mu = (t * sc * Mk + Xs * ih2) * v
            res = sc * mu - Mk  # the residual's conditional mean
            m = t * (K_out + 0.5 * (res * res + sc * sc * v).sum((1, 2)))
            var = t * t * (0.5 * (sc * sc * v) ** 2 + sc * sc * res * res * v).sum((1, 2))
            ms += m
            m2 += m * m
            vs += var
            X = mu + np.sqrt(v) * self.rng.standard_normal(mu.shape)
            if Vh is not None:
                X = np.swapaxes(Vh, 1, 2) @ X
            if Ub is not None:
                X = X @ np.swapaxes(Ub, 1, 2)
            self.W[k] = X
            B = X if B is None else X @ B
        if self.orbit:
            self.K = self.loss()
            for j in range(1, L):
                self.orbit_move(j)
        return ms / L, m2 / L, vs / L

    def orbit_move(self, j):
        """W_{j-1} -> G W_{j-1}, W_j -> W_j G^-1 (0-based layers; G acts on
        the hidden width H_j), G = exp(eps Z) with Z symmetric Gaussian
        (Z -> -Z gives G^-1, so the proposal is inversion-symmetric; products
        of such G reach every G of positive determinant); Metropolis-Hastings
        on the tether, the (rounding-level) loss change and the Jacobian
        |det G|^(H_{j-1} - H_{j+1}), det G = exp(eps tr Z)."""
        C, n = self.C, self.w[j]
        Y = self.rng.standard_normal((C, n, n))
        lam, U = np.linalg.eigh((Y + np.swapaxes(Y, 1, 2)) / (2.0 * math.sqrt(n)))
        e = self.eps[j - 1] * lam
        Ut = np.swapaxes(U, 1, 2)
        G, Gi = (U * np.exp(e)[:, None, :]) @ Ut, (U * np.exp(-e)[:, None, :]) @ Ut
        logdet = e.sum(1)
        lo, hi_ = self.W[j - 1], self.W[j]
        nlo, nhi = G @ lo, hi_ @ Gi
        d = lambda A, S: ((A - S) ** 2).sum((1, 2))
        dt = (d(nlo, self.Ws[j - 1]) + d(nhi, self.Ws[j]) - d(lo, self.Ws[j - 1])
              - d(hi_, self.Ws[j])) / (2 * self.h ** 2)
        self.W[j - 1], self.W[j] = nlo, nhi
        K_new = self.loss()
        la = -dt - self.t * (K_new - self.K) + (self.w[j - 1] - self.w[j + 1]) * logdet
        ok = np.log(self.rng.uniform(size=C)) < la
        self.W[j - 1] = np.where(ok[:, None, None], nlo, lo)
        self.W[j] = np.where(ok[:, None, None], nhi, hi_)
        self.K = np.where(ok, K_new, self.K)
        self.acc[j - 1] = ok.mean()

    def adapt(self, i):
        """Robbins-Monro on log eps toward acceptance 0.4 (burn-in only)."""
        g = 1.0 / (1 + i) ** 0.6
        self.eps = np.clip(self.eps * np.exp(g * (self.acc - 0.4)), 1e-6, 10.0)


def run(widths, WT, Wstar, t, h, sweeps, burn, C, seed, batches=25, orbit=True):
    rng = np.random.default_rng(seed)
    g = Gibbs(widths, WT, Wstar, t, h, C, rng, orbit)
    for i in range(burn):
        g.sweep()
        if orbit:
            g.adapt(i)
    ms, m2, vs = (np.empty((sweeps, C)) for _ in range(3))
    norms = np.empty((g.L, sweeps, C))  # log |W_s|^2: the orbits' slow coordinates
    acc = np.zeros(max(g.L - 1, 1))
    for i in range(sweeps):
        ms[i], m2[i], vs[i] = g.sweep()
        for k in range(g.L):
            norms[k, i] = np.log((g.W[k] ** 2).sum((1, 2)) + 1e-300)
        acc[:g.L - 1] += g.acc
    r = summarise(ms, m2, vs, batches)
    nd = [batch_diag(norms[k], batches) for k in range(g.L)]
    r["norm_ess"] = min(e for e, _ in nd)
    r["norm_rhat"] = max(rh for _, rh in nd)
    r["eps"], r["orbit_acc"] = g.eps.copy(), acc / sweeps
    return r


def estimate(ms, m2, vs):
    mu = ms.mean()
    return vs.mean() + m2.mean() - mu * mu, mu


def batch_diag(x, batches):
    """ESS (batch means) and split-R^ (on the batch means) of a series
    x[sweep, chain]; also the batch means."""
    N, C = x.shape
    b = N // batches
    xb = x[:b * batches].reshape(batches, b, C).mean(1)  # (batches, C)
    vb = xb.var(ddof=1)
    ess = N * C * x.var() / (b * vb) if vb > 0 else float("inf")
    hb = batches // 2
    seqs = np.concatenate([xb[:hb], xb[hb:2 * hb]], axis=1)  # (hb, 2C)
    W_ = seqs.var(0, ddof=1).mean()
    B_ = hb * seqs.mean(0).var(ddof=1)
    rhat = math.sqrt(((hb - 1) / hb * W_ + B_ / hb) / W_) if W_ > 0 else float("nan")
    return ess, rhat


def summarise(ms, m2, vs, batches):
    """t^2 Var = E v + E m^2 - (E m)^2 with a batch-means SE over all
    chains' batches, split-R^ on the batch means, ESS, start groups' z."""
    N, C = ms.shape
    val, mu = estimate(ms, m2, vs)
    g = vs + m2 - 2 * mu * ms  # linearisation of the estimator
    b = N // batches
    gb = g[:b * batches].reshape(batches, b, C).mean(1)  # (batches, C)
    se = gb.std(ddof=1) / math.sqrt(batches * C)
    # whole chains as batches: a slower mode than a batch shows here
    se_chain = g.mean(0).std(ddof=1) / math.sqrt(C)
    ess, rhat = batch_diag(g, batches)
    # the two start groups (theta*, dispersed) against each other
    h = C // 2
    parts = []
    for sl in (slice(0, h), slice(h, C)):
        v_, _ = estimate(ms[:, sl], m2[:, sl], vs[:, sl])
        parts.append((v_, gb[:, sl].std(ddof=1) / math.sqrt(batches * (sl.stop - sl.start))))
    zg = (parts[0][0] - parts[1][0]) / math.hypot(parts[0][1], parts[1][1])
    return {"value": val, "se": max(se, se_chain), "se_batch": se, "se_chain": se_chain,
            "tEK": mu, "ess": ess, "rhat": rhat,
            "groups": parts, "z_groups": zg}


# ---------------------------------------------------------------- exact checks


def scalar_chain_exact(L, T, dy=0.004):
    """t^2 Var[K] for K = 1/2 prod w_i^2 (L scalars), tether N(0, 1), T = t h^(2L):
    the density of s = sum ln w_i^2 by FFT convolution of ln chi^2_1 densities."""
    lo, hi = -70.0, 6.0
    y = np.arange(lo, hi, dy)
    p1 = np.exp(y / 2 - np.exp(y) / 2) / math.sqrt(2 * math.pi)
    n = len(y) * L
    f = np.fft.rfft(p1, n)
    p = np.fft.irfft(f ** L, n) * dy ** (L - 1)
    s = L * lo + dy * np.arange(n)
    lw = -0.5 * T * np.exp(s)
    keep = lw > -745
    p, s, lw = p[keep], s[keep], lw[keep]
    w = p * np.exp(lw)
    K = 0.5 * np.exp(s)
    Z = w.sum()
    m1 = (w * K).sum() / Z
    m2 = (w * K * K).sum() / Z
    return T * T * (m2 - m1 * m1)


def prod_target(t, h):
    """tools/truth.c's truth_prod_target(1, 1, t, h): t^2 Var of u^2 v^2."""
    c = 1.0 / (2 * h * h)
    cross = min(h, math.sqrt(c / t))
    s0, s1, n = math.log(cross) - 40.0, math.log(14.0 * h), 60000
    s = s0 + (s1 - s0) / n * np.arange(n + 1)
    u = np.exp(s)
    f = u * u
    A = t * f + c
    gam = [math.gamma(0.5), math.gamma(1.5), math.gamma(2.5)]
    wts = np.where((np.arange(n + 1) == 0) | (np.arange(n + 1) == n), 1,
                   np.where(np.arange(n + 1) % 2 == 1, 4, 2))
    base = np.exp(-u * u * c) * u  # du = u ds
    I = [(wts * base * f ** p * gam[p] / A ** (p + 0.5)).sum() for p in range(3)]
    mean = I[1] / I[0]
    return t * t * (I[2] / I[0] - mean * mean)


def fmt(r):
    return (f"{r['value']:.4f} +- {r['se']:.4f} (SE by batches {r['se_batch']:.4f}, by chains "
            f"{r['se_chain']:.4f}; t E[K] {r['tEK']:.4f}; ESS {r['ess']:.0f}, "
            f"split-R^ {r['rhat']:.3f}; log|W_s|^2: min ESS {r['norm_ess']:.0f}, max R^ "
            f"{r['norm_rhat']:.3f}; theta* starts {r['groups'][0][0]:.3f}, dispersed "
            f"{r['groups'][1][0]:.3f}: z {r['z_groups']:+.2f})")


def selfcheck(args):
    """The validations of docs/validation.md, short: L = 1 against the closed
    form (to rounding), scalar chains 1/2 prod w_i^2 against the FFT density
    (after the FFT against tools/truth.c's product quadrature), L2 5-6-4 r0
    against bench/dln_l2_target.py's 8.7665 +- 0.001 at T = 1e4.  Exit
    status 1 if a |z| reaches 4 or a split-R^ 1.1."""
    bad = 0

    def check(what, r, exact, exact_se=0.0, tol_z=4.0):
        nonlocal bad
        z = (r["value"] - exact) / math.hypot(r["se"], exact_se)
        ok = abs(z) < tol_z and r["rhat"] < 1.1
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {what}: {fmt(r)}; exact {exact:.4f}, z {z:+.2f}",
              flush=True)

    # (c) L = 1 (regular): every draw exact, the estimator's SE is 0
    w = [4, 3]
    WT, Ws = zero_case(w)
    t, h = 1e4, 0.05
    r = run(w, WT, Ws, t, h, 200, 10, 8, args.seed)
    v = 1 / (t + 1 / h ** 2)
    exact = 12 / 2 * (t * v) ** 2
    ok = abs(r["value"] - exact) < 1e-9 * exact
    bad += not ok
    print(f"{'ok ' if ok else 'BAD'} L1 4-3 at t 1e4, h 0.05: {r['value']:.12f}, "
          f"closed form {exact:.12f}", flush=True)
    # (b) scalar chains: 1/2 prod w^2 (lambda 1/2, m = L) against the FFT density
    print(f"    1/2 u^2 v^2 at T 2e4: FFT {scalar_chain_exact(2, 2e4):.5f}, "
          f"product quadrature (u^2 v^2, t 1e4) {prod_target(1e4, 1.0):.5f}", flush=True)
    for L, T in ((2, 1e4), (3, 1e6), (4, 1e8)):
        w = [1] * (L + 1)
        WT, Ws = zero_case(w)
        r = run(w, WT, Ws, T, 1.0, args.check_sweeps, 500, 32, args.seed + L)
        check(f"scalar chain L{L} at T {T:g}", r, scalar_chain_exact(L, T))
    # (a) L2 5-6-4 r0 against bench/dln_l2_target.py (8.7665 +- 0.001 at 1e4)
    w = [5, 6, 4]
    WT, Ws = zero_case(w)
    r = run(w, WT, Ws, 1e4, 1.0, args.check_sweeps, 500, 32, args.seed + 7)
    check("L2 5-6-4 r0 at T 1e4", r, 8.7665, 0.001)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.split("\n")[6:]))
    ap.add_argument("--case", help='a suite case name, e.g. "L4 6-6-6-6-6 r3"')
    ap.add_argument("--widths", type=int, nargs="+", help="H0 ... HL (instead of --case)")
    ap.add_argument("--rank", type=int, default=0, help="teacher rank with --widths")
    ap.add_argument("--scales", type=float, nargs="+",
                    help="a rescaled centre (the suite's 'rescaled' case: 2 1 0.5)")
    ap.add_argument("--seed", type=int, default=1, help="teacher seed (bench_truth's --seed)")
    ap.add_argument("--t", type=float, default=None, help="t (default: the suite's max(1e4, 9^L))")
    ap.add_argument("--h", type=float, nargs="+", default=[1.0], help="radii")
    ap.add_argument("--T", type=float, nargs="+",
                    help="r = 0 only: T = t h^(2L) values (h = 1, t = T)")
    ap.add_argument("--sweeps", type=int, default=20000)
    ap.add_argument("--burn", type=int, default=2000)
    ap.add_argument("--chains", type=int, default=32)
    ap.add_argument("--batches", type=int, default=25)
    ap.add_argument("--no-orbit", action="store_true", help="layer updates only")
    ap.add_argument("--rng-seed", type=int, default=1, help="the sampler's seed")
    ap.add_argument("--selfcheck", action="store_true", help="run the validations")
    ap.add_argument("--check-sweeps", type=int, default=2000)
    a = ap.parse_args()
    if a.selfcheck:
        a.seed = a.rng_seed
        sys.exit(selfcheck(a))
    if a.case:
        widths, rank = parse_case(a.case)
    elif a.widths:
        widths, rank = a.widths, a.rank
    else:
        ap.error("give --case or --widths")
    L = len(widths) - 1
    if rank > 0 or a.scales:
        WT, Ws, lam, mult = libsive_case(widths, rank, a.seed, a.scales)
    else:
        try:
            _, _, lam, mult = libsive_case(widths, 0, a.seed)
        except OSError:
            lam, mult = float("nan"), 0
        WT, Ws = zero_case(widths)
    t = a.t if a.t else max(1e4, 9.0 ** L)
    print(f"# {a.case or f'{widths} r{rank}'}: L {L}, d {sum(widths[s] * widths[s - 1] for s in range(1, L + 1))}, "
          f"lambda {lam:g}, m {mult}; {a.chains} chains x {a.sweeps} sweeps "
          f"(+{a.burn} burn-in), orbit moves {'off' if a.no_orbit else 'on'}", flush=True)
    grid = [(T, 1.0) for T in a.T] if a.T else [(t, h) for h in a.h]
    for tt, h in grid:
        t0 = time.time()
        r = run(widths, WT, Ws, tt, h, a.sweeps, a.burn, a.chains, a.rng_seed,
                a.batches, not a.no_orbit)
        extra = (f"; orbit eps {np.array2string(r['eps'], precision=3)} acc "
                 f"{np.array2string(r['orbit_acc'], precision=2)}" if not a.no_orbit and L > 1 else "")
        Tl = f" (T = t h^2L {tt * h ** (2 * L):.3g})" if rank == 0 and not a.scales else ""
        print(f"t {tt:.4g} h {h:g}{Tl}: t^2 Var = {fmt(r)}; "
              f"rel. to lambda {r['value'] / lam - 1:+.2%}; {time.time() - t0:.0f} s{extra}",
              flush=True)


if __name__ == "__main__":
    main()
