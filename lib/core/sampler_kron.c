/* Layer-block Newton moves (kron.h; docs/theory.md "Layer-block Newton
 * moves").
 *
 * For block W (rows x cols) the model gives square-root factors F_G, F_A
 * of its curvature G (x) A (G = F_G^T F_G, A = F_A^T F_A).  One-sided
 * Jacobi (lib/numerics/linalg.c) gives orthogonal V, U with F_G V and
 * F_A U of orthogonal columns, |columns|^2 = g_i, a_j, G's and A's
 * eigenvalues.  In X = V^T W U the metric
 *     M = t (G (x) A) + I/h^2
 * is diagonal, m_ij = t g_i a_j + 1/h^2: the tether's isotropic term stays
 * exact.  With U(theta) = t L + |theta - theta*|^2/(2 h^2) the proposal is
 *     X' = X - s M^-1 grad_X U + sqrt(s (2 - s)) M^-1/2 xi,
 * a Gaussian q(X' | theta) of mean X - s M^-1 grad U and covariance
 * s (2 - s) M^-1.  When U is quadratic in the block with Hessian M this is
 * the autoregressive move X' - mu = (1 - s)(X - mu) + sqrt(s(2-s))
 * M^-1/2 xi around U's minimum mu, which keeps N(mu, M^-1) exactly (s = 1:
 * an independent draw).  The reverse density q(theta | theta') is
 * evaluated under M and the gradient at theta' (the curvature called again
 * there: it may depend on the block itself), so log q(theta | theta') -
 * log q(theta' | theta) makes the orbit machinery's Metropolis-Hastings
 * ratio exact for any factors.  The rotations are orthogonal, so both
 * densities are evaluated in their own eigen-coordinates without a
 * Jacobian, and the constants (2 pi, s (2 - s)) cancel. */
#include "kron.h"
#include "linalg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sivei_kron {
    size_t block;                /* the last proposal's block */
    double *fg, *fa, *v, *u;     /* the roots, then their eigenbases */
    double *g, *a;               /* eigenvalues of G (rows), A (cols) */
    double *gx, *d, *tmp, *z;    /* block-sized: gradient, step, scratch, draws */
};

int sivei_kron_on(const sivei_options *o) { return o->kron_every > 0; }

/* Block k lies inside theta and overlaps none of blocks 0 .. k-1. */
static int block_bad(const sive_model *m, size_t k)
{
    const sive_block *b = &m->blocks[k];
    if (!b->rows || !b->cols || !b->g_rows || !b->a_rows || b->rows > m->dim ||
        b->cols > m->dim / b->rows || b->offset > m->dim - b->rows * b->cols ||
        b->g_rows > (1u << 20) || b->a_rows > (1u << 20))
        return 1;
    for (size_t j = 0; j < k; j++) {
        const sive_block *c = &m->blocks[j];
        if (b->offset < c->offset + c->rows * c->cols && c->offset < b->offset + b->rows * b->cols)
            return 1;
    }
    return 0;
}

int sivei_kron_refuse(const sivei_options *o, const sive_model *m, char *err)
{
    if (!sivei_kron_on(o))
        return SIVE_OK;
    const long long k = (long long)o->kron_every;
    if (!o->metropolis)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "kron_every %lld: layer-block Newton moves are accepted on the exact "
                         "loss: set metropolis 1", k);
    if (o->orbit_every > 0)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "kron_every %lld with orbit_every %lld: one move of the chain's state "
                         "at a time; set one of them", k, (long long)o->orbit_every);
    if (!m->curvature || !m->n_blocks || !m->blocks)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "kron_every %lld: the model supplies no parameter blocks and "
                         "Kronecker curvature (sive_model.n_blocks, blocks, curvature)", k);
    if (m->dtype != SIVE_F64)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "kron_every %lld: layer-block Newton moves need a double model", k);
    for (size_t j = 0; j < m->n_blocks; j++)
        if (block_bad(m, j))
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "kron_every %lld: block %zu (offset %zu, %zu x %zu, roots of %zu "
                             "and %zu rows) is empty, outside theta (dim %zu) or overlaps an "
                             "earlier block", k, j, m->blocks[j].offset, m->blocks[j].rows,
                             m->blocks[j].cols, m->blocks[j].g_rows, m->blocks[j].a_rows, m->dim);
    return SIVE_OK;
}

void sivei_kron_free(sivei_kron *k)
{
    if (k) {
        free(k->fg), free(k->fa), free(k->v), free(k->u), free(k->g), free(k->a);
        free(k->gx), free(k->d), free(k->tmp), free(k->z);
    }
    free(k);
}

sivei_kron *sivei_kron_new(const sive_model *m)
{
    size_t fg = 1, fa = 1, r = 1, c = 1, rc = 1;
    for (size_t j = 0; j < m->n_blocks; j++) {
        const sive_block *b = &m->blocks[j];
        fg = b->g_rows * b->rows > fg ? b->g_rows * b->rows : fg;
        fa = b->a_rows * b->cols > fa ? b->a_rows * b->cols : fa;
        r = b->rows > r ? b->rows : r;
        c = b->cols > c ? b->cols : c;
        rc = b->rows * b->cols > rc ? b->rows * b->cols : rc;
    }
    sivei_kron *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->fg = malloc(fg * sizeof *k->fg);
    k->fa = malloc(fa * sizeof *k->fa);
    k->v = malloc(r * r * sizeof *k->v);
    k->u = malloc(c * c * sizeof *k->u);
    k->g = malloc(r * sizeof *k->g);
    k->a = malloc(c * sizeof *k->a);
    k->gx = malloc(rc * sizeof *k->gx);
    k->d = malloc(rc * sizeof *k->d);
    k->tmp = malloc(rc * sizeof *k->tmp);
    k->z = malloc(rc * sizeof *k->z);
    if (k->fg && k->fa && k->v && k->u && k->g && k->a && k->gx && k->d && k->tmp && k->z)
        return k;
    sivei_kron_free(k);
    return NULL;
}

size_t sivei_kron_block(const sivei_kron *k) { return k->block; }

/* The curvature of block k->block at theta, diagonalised: k->v, k->u the
 * eigenbases, k->g, k->a the eigenvalues. */
static int factor(sivei_kron *k, const sive_model *m, const sive_batch *b, const double *theta)
{
    const sive_block *bl = &m->blocks[k->block];
    const sive_curvature_info info = {.struct_size = sizeof info, .dim = m->dim,
                                      .block = k->block, .batch = b};
    sivei_clear_error();
    int rc = m->curvature(&info, theta, k->fg, k->fa, m->user);
    if (rc)
        return rc;
    sivei_jacobi_cols(k->fg, bl->g_rows, bl->rows, k->v);
    sivei_jacobi_cols(k->fa, bl->a_rows, bl->cols, k->u);
    for (size_t i = 0; i < bl->rows; i++)
        k->g[i] = sivei_col_norm2(k->fg, bl->g_rows, bl->rows, i);
    for (size_t j = 0; j < bl->cols; j++)
        k->a[j] = sivei_col_norm2(k->fa, bl->a_rows, bl->cols, j);
    return 0;
}

/* out = V^T w U (rows x cols), w row-major rows x cols. */
static void to_eig(sivei_kron *k, const sive_block *bl, const double *w, double *out)
{
    sivei_gemm(w, 0, k->u, 0, k->tmp, bl->rows, bl->cols, bl->cols);
    sivei_gemm(k->v, 1, k->tmp, 0, out, bl->rows, bl->rows, bl->cols);
}

/* k->gx = grad_X U = V^T (t grad L + (theta - theta*)/h^2) U on the block. */
static void grad_eig(sivei_kron *k, const sive_block *bl, const sivei_kron_law *law,
                     const double *theta, const double *grad)
{
    const size_t n = bl->rows * bl->cols, o = bl->offset;
    const double ih2 = 1.0 / (law->h * law->h);
    for (size_t i = 0; i < n; i++)
        k->d[i] = law->t * grad[o + i] + (theta[o + i] - law->star[o + i]) * ih2;
    to_eig(k, bl, k->d, k->gx);
}

static double metric(const sivei_kron *k, const sivei_kron_law *law, size_t i, size_t j)
{
    return law->t * k->g[i] * k->a[j] + 1.0 / (law->h * law->h);
}

int sivei_kron_propose(sivei_kron *k, const sive_model *m, const sivei_kron_law *law,
                       const sive_batch *b, const double *theta, const double *grad,
                       double *prop, double *lq)
{
    sive_rng g;
    sive_rng_seed(&g, b->seed, 0x6b726f6eULL /* "kron" */);
    k->block = (size_t)sive_rng_below(&g, m->n_blocks);
    const sive_block *bl = &m->blocks[k->block];
    const size_t r = bl->rows, c = bl->cols, o = bl->offset;
    int rc = factor(k, m, b, theta);
    if (rc)
        return rc;
    grad_eig(k, bl, law, theta, grad);
    sive_rng_normals(&g, k->z, r * c);
    const double s = law->s, sd = sqrt(s * (2.0 - s));
    double l = 0.0;
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++) {
            const size_t q = i * c + j;
            const double mij = metric(k, law, i, j);
            k->d[q] = -s * k->gx[q] / mij + sd * k->z[q] / sqrt(mij); /* X' - X */
            l += 0.5 * (log(mij) - k->z[q] * k->z[q]);
        }
    /* All of theta, though one block moves: prop is also the Langevin
     * step's proposal buffer (sampler_mala.c), rewritten at every step, so
     * it cannot stay equal to theta between moves; writing the block into
     * theta itself would hand the callbacks the chain's own buffer changed
     * under the same pointer.  The copy is ~0.1 % of a move (d = 15 000). */
    memcpy(prop, theta, m->dim * sizeof *prop);
    sivei_gemm(k->v, 0, k->d, 0, k->tmp, r, r, c); /* W' - W = V (X' - X) U^T */
    sivei_gemm(k->tmp, 0, k->u, 1, k->z, r, c, c);
    for (size_t q = 0; q < r * c; q++)
        prop[o + q] = theta[o + q] + k->z[q];
    *lq = l;
    return 0;
}

int sivei_kron_reverse(sivei_kron *k, const sive_model *m, const sivei_kron_law *law,
                       const sive_batch *b, const double *theta, const double *prop,
                       const double *gprop, double *lq)
{
    const sive_block *bl = &m->blocks[k->block];
    const size_t r = bl->rows, c = bl->cols, o = bl->offset;
    int rc = factor(k, m, b, prop);
    if (rc)
        return rc;
    grad_eig(k, bl, law, prop, gprop);
    for (size_t q = 0; q < r * c; q++)
        k->z[q] = theta[o + q] - prop[o + q];
    to_eig(k, bl, k->z, k->d); /* X - X' in the eigenbasis at theta' */
    const double s = law->s, var = s * (2.0 - s);
    double l = 0.0;
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++) {
            const size_t q = i * c + j;
            const double mij = metric(k, law, i, j), e = k->d[q] + s * k->gx[q] / mij;
            l += 0.5 * (log(mij) - mij * e * e / var);
        }
    *lq = l;
    return 0;
}
