/* The deep linear network's Gibbs layer move (sive_dln_set_move(),
 * SIVE_DLN_MOVE_GIBBS; docs/theory.md "Orbit moves"): in population mode
 * K = 1/2 |W_L ... W_1 - W_T|^2 is quadratic in each layer given the
 * others, so W_s given the rest under exp(-t K - |theta - theta*|^2/(2h^2))
 * is Gaussian and is drawn exactly.
 *
 * With A = W_L ... W_{s+1} (H_L x H_s) and B = W_{s-1} ... W_1 (H_{s-1} x
 * H_0), one-sided Jacobi gives orthogonal V, U with the columns of A V and
 * of B^T U mutually orthogonal (norms sigma_i, rho_j).  In X = V^T W_s U,
 * A W_s B = (A V) X (B^T U)^T, so K = sum_ij (s_ij^2 X_ij^2 - 2 X_ij N_ij)/2
 * + const with s_ij = sigma_i rho_j and N = (A V)^T W_T (B^T U), and the
 * tether is |X - X*|^2/(2h^2): the X_ij are independent Gaussians of
 * precision t s_ij^2 + 1/h^2 and mean (t N_ij + X*_ij/h^2)/precision.
 * Jacobi on the products themselves, not an eigensolver on A^T A: the
 * s_ij^2 come from column norms, without a squared condition number
 * (bench/dln_gibbs_target.py found eigh of the squares unstable at large
 * h).  The move's log_ratio is log q(W_s old | rest) - log q(W_s new |
 * rest), so the library's Metropolis-Hastings ratio is 1 to rounding.  The
 * Jacobi and the products are lib/numerics/linalg.c's, shared with the
 * core's layer-block Newton move (sampler_kron.c). */
#include "dln_impl.h"
#include "linalg.h"

#include <math.h>
#include <string.h>

size_t sivei_dln_max_width(const sive_dln *m)
{
    size_t h = 0;
    for (size_t s = 0; s <= m->layers; s++)
        h = m->width[s] > h ? m->width[s] : h;
    return h;
}

/* Ten squares of the widest layer and two of its vectors; H_0 counts:
 * the layer-1 draw's U and B's start, the identity, are H_0 x H_0. */
#define GIBBS_SQUARES 10

size_t sivei_dln_gibbs_scratch(const sive_dln *m)
{
    const size_t h = sivei_dln_max_width(m);
    return GIBBS_SQUARES * h * h + 2 * h;
}

void sivei_dln_suffix(const sive_dln *m, const double *th, size_t s, double *a, double *t)
{
    const size_t L = m->layers, hl = m->width[L];
    sivei_identity(a, hl);
    for (size_t k = L; k > s; k--) { /* a (hl x H_k) <- a W_k */
        sivei_gemm(a, 0, th + m->offset[k], 0, t, hl, m->width[k], m->width[k - 1]);
        memcpy(a, t, hl * m->width[k - 1] * sizeof *a);
    }
}

void sivei_dln_prefix_t(const sive_dln *m, const double *th, size_t s, double *b, double *t)
{
    const size_t h0 = m->width[0];
    sivei_identity(b, h0);
    for (size_t k = 1; k < s; k++) { /* b (h0 x H_k) <- b W_k^T */
        sivei_gemm(b, 0, th + m->offset[k], 1, t, h0, m->width[k - 1], m->width[k]);
        memcpy(b, t, h0 * m->width[k] * sizeof *b);
    }
}

void sivei_dln_gibbs(const sive_dln *m, double *scratch, const sive_move_info *info,
                     const double *th, double *out, double *log_ratio)
{
    const size_t L = m->layers, hl = m->width[L], h0 = m->width[0];
    const size_t hmax = sivei_dln_max_width(m), q = hmax * hmax;
    double *a = scratch, *b = a + q, *v = b + q, *u = v + q, *t1 = u + q, *t2 = t1 + q,
           *nm = t2 + q, *xs = nm + q, *xo = xs + q, *z = xo + q; /* GIBBS_SQUARES */
    double *sa = z + q, *sb = sa + hmax;
    sive_rng g;
    sive_rng_seed(&g, info->batch->seed, 0x6769626273ULL /* "gibbs" */);
    const size_t s = 1 + (size_t)sive_rng_below(&g, L);
    const size_t ho = m->width[s], hi = m->width[s - 1];
    memcpy(out, th, m->dim * sizeof *out);
    sivei_dln_suffix(m, th, s, a, t1);
    sivei_dln_prefix_t(m, th, s, b, t1);
    sivei_jacobi_cols(a, hl, ho, v); /* a = A V */
    sivei_jacobi_cols(b, h0, hi, u); /* b = B^T U */
    for (size_t i = 0; i < ho; i++)
        sa[i] = sivei_col_norm2(a, hl, ho, i);
    for (size_t j = 0; j < hi; j++)
        sb[j] = sivei_col_norm2(b, h0, hi, j);
    sivei_gemm(m->teacher, 0, b, 0, t1, hl, h0, hi); /* W_T B^T U (hl x hi) */
    sivei_gemm(a, 1, t1, 0, nm, ho, hl, hi);         /* N = (A V)^T W_T B^T U */
    const double *star = info->theta_star;
    sivei_gemm(star + m->offset[s], 0, u, 0, t1, ho, hi, hi); /* X* = V^T W_s* U */
    sivei_gemm(v, 1, t1, 0, xs, ho, ho, hi);
    sivei_gemm(th + m->offset[s], 0, u, 0, t1, ho, hi, hi); /* X_old */
    sivei_gemm(v, 1, t1, 0, xo, ho, ho, hi);
    sive_rng_normals(&g, z, ho * hi);
    const double t = info->t, ih2 = 1.0 / (info->h * info->h);
    double lr = 0.0;
    for (size_t i = 0; i < ho; i++)
        for (size_t j = 0; j < hi; j++) {
            const size_t k = i * hi + j;
            const double prec = t * sa[i] * sb[j] + ih2;
            const double mu = (t * nm[k] + xs[k] * ih2) / prec, dold = xo[k] - mu;
            lr += 0.5 * (z[k] * z[k] - prec * dold * dold);
            t2[k] = mu + z[k] / sqrt(prec); /* X_new */
        }
    sivei_gemm(v, 0, t2, 0, t1, ho, ho, hi); /* W_s' = V X_new U^T */
    sivei_gemm(t1, 0, u, 1, out + m->offset[s], ho, hi, hi);
    *log_ratio = lr;
}
