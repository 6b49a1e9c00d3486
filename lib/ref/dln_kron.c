/* The deep linear network's Kronecker curvature for the library's
 * layer-block Newton move (sive_model.blocks, sive_model.curvature;
 * SIVE_OPT_KRON_EVERY; docs/theory.md "Layer-block Newton moves").
 *
 * Given the other layers the network is linear in W_s: with P = W_L ...
 * W_{s+1} and Q = W_{s-1} ... W_1, f(x) = P W_s Q x, so the per-example
 * loss 1/2 |y - P W_s Q x|^2 has the Hessian P^T P (x) Q x x^T Q^T in W_s
 * (row-major), exactly and independently of W_s.  Averaged: population
 * mode (x ~ N(0, I)) gives P^T P (x) Q Q^T, data mode P^T P (x) Q S Q^T
 * with S = X^T X / n the examples' input second moment.  The roots handed
 * to the library are F_G = P and F_A = Q^T (population) or R Q^T with
 * R^T R = S (data; R from one Jacobi of X / sqrt(n) when the model is
 * made), so the library's Jacobi sees the products, not their squares. */
#include "dln_impl.h"
#include "linalg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sivei_dln_blocks(const sive_dln *m, sive_block *blocks)
{
    for (size_t s = 1; s <= m->layers; s++)
        blocks[s - 1] = (sive_block){.offset = m->offset[s], .rows = m->width[s],
                                     .cols = m->width[s - 1], .g_rows = m->width[m->layers],
                                     .a_rows = m->width[0]};
}

int sivei_dln_input_root(const sive_dln *m, double *r)
{
    const size_t h0 = m->width[0], n = (size_t)m->n;
    double *x = malloc((n * h0 + h0 * h0) * sizeof *x), *v = x + n * h0;
    if (!x)
        return 1;
    const double c = 1.0 / sqrt((double)n);
    for (size_t i = 0; i < n * h0; i++)
        x[i] = m->x[i] * c;
    sivei_jacobi_cols(x, n, h0, v); /* X/sqrt(n) = C V^T, C^T C diagonal */
    for (size_t j = 0; j < h0; j++) { /* R = diag(|c_j|) V^T */
        const double nj = sqrt(sivei_col_norm2(x, n, h0, j));
        for (size_t k = 0; k < h0; k++)
            r[j * h0 + k] = nj * v[k * h0 + j];
    }
    free(x);
    return 0;
}

size_t sivei_dln_kron_scratch(const sive_dln *m)
{
    const size_t h = sivei_dln_max_width(m);
    return 2 * h * h;
}

void sivei_dln_kron_roots(const sive_dln *m, const double *r, double *scratch, size_t s,
                          const double *theta, double *g_root, double *a_root)
{
    const size_t hl = m->width[m->layers], h0 = m->width[0], hmax = sivei_dln_max_width(m);
    double *a = scratch, *t = a + hmax * hmax;
    sivei_dln_suffix(m, theta, s, a, t);
    memcpy(g_root, a, hl * m->width[s] * sizeof *g_root);
    sivei_dln_prefix_t(m, theta, s, a, t);
    if (r)
        sivei_gemm(r, 0, a, 0, a_root, h0, h0, m->width[s - 1]);
    else
        memcpy(a_root, a, h0 * m->width[s - 1] * sizeof *a_root);
}
