/* Deep linear network: forward and backward passes in blocks of rows, per-
 * example losses and student training (include/sive/dln.h).
 *
 * A block of R inputs X (R x H0) gives activations A_s = A_{s-1} W_s^T
 * (R x H_s), residuals E = A_L - Y and losses 1/2 ||E_i||^2; backward,
 * D_L = c E, grad W_s += D_s^T A_{s-1}, D_{s-1} = D_s W_s.  The population
 * loss 1/2 ||P - W_T||_F^2 (P = W_L...W_1) is the same computation summed
 * (c = 1) over the H0 unit inputs e_i with targets W_T e_i: its blocks start
 * from A_1 = rows of W_1^T, so the identity is never multiplied. */
#include "dln_impl.h"

#include <blis.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BLOCK 256
#define MAX_BLOCK ((size_t)1 << 16)

struct sive_dln_work {
    size_t layers, width[SIVE_DLN_MAX_LAYERS + 1];
    size_t rows;
    double *mem;
    double *act[SIVE_DLN_MAX_LAYERS + 1]; /* A_0 (gathered X) .. A_L      */
    double *y;                            /* R x HL targets               */
    double *d0, *d1;                      /* R x max H deltas             */
    rntm_t rntm;
};

int sive_dln_work_new(sive_dln_work **out, const sive_dln *m, size_t block_rows,
                      int blis_threads)
{
    static const char fn[] = "sive_dln_work_new";
    if (!out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL out", fn);
    *out = NULL;
    if (!m || block_rows > MAX_BLOCK || blis_threads < 1 || blis_threads > 1024)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: NULL model, block_rows %zu > %zu or blis_threads %d "
                         "not in [1, 1024]", fn, block_rows, MAX_BLOCK, blis_threads);
    const size_t R = block_rows ? block_rows : DEFAULT_BLOCK;
    sive_dln_work *w = calloc(1, sizeof *w);
    size_t total = 0, hmax = 0;
    for (size_t s = 0; s <= m->layers; s++) {
        total += R * m->width[s];
        hmax = m->width[s] > hmax ? m->width[s] : hmax;
    }
    total += R * m->width[m->layers] + 2 * R * hmax;
    if (w)
        w->mem = malloc(total * sizeof *w->mem);
    if (!w || !w->mem) {
        free(w);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory (%zu doubles)", fn,
                         total);
    }
    double *p = w->mem;
    w->layers = m->layers;
    w->rows = R;
    for (size_t s = 0; s <= m->layers; s++) {
        w->width[s] = m->width[s];
        w->act[s] = p;
        p += R * m->width[s];
    }
    w->y = p;
    p += R * m->width[m->layers];
    w->d0 = p;
    w->d1 = p + R * hmax;
    bli_rntm_init(&w->rntm);
    bli_rntm_set_num_threads((dim_t)blis_threads, &w->rntm);
    *out = w;
    return SIVE_OK;
}

void sive_dln_work_free(sive_dln_work *w)
{
    if (!w)
        return;
    free(w->mem);
    free(w);
}

/* C[m x n] (row stride ldc) = alpha A B + beta C, A and B by strides. */
static void gemm(sive_dln_work *w, size_t m, size_t n, size_t k, double alpha,
                 const double *a, size_t rsa, size_t csa, const double *b,
                 size_t rsb, size_t csb, double beta, double *c, size_t ldc)
{
    bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k,
                 &alpha, (double *)a, (inc_t)rsa, (inc_t)csa, (double *)b,
                 (inc_t)rsb, (inc_t)csb, &beta, c, (inc_t)ldc, 1, NULL, &w->rntm);
}

static int check_args(const char *fn, const sive_dln *m, const sive_dln_work *w,
                      const double *theta, const uint64_t *idx, size_t n)
{
    if (!m || !w || !theta)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    if (w->layers != m->layers ||
        memcmp(w->width, m->width, (m->layers + 1) * sizeof w->width[0]))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: workspace made for other widths", fn);
    if (m->n == 0) {
        if (idx || n)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: population mode takes no indices", fn);
        return SIVE_OK;
    }
    if (!idx || n == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: no examples given", fn);
    for (size_t i = 0; i < n; i++)
        if (idx[i] >= m->n)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: index %llu out of range (%llu examples)", fn,
                             (unsigned long long)idx[i], (unsigned long long)m->n);
    return SIVE_OK;
}

/* Load block rows [b0, b0+R) into A_1 (population: rows of W_1^T, targets
 * columns of W_T) or A_0 and the targets (data: gathered examples), then
 * run the forward pass, leaving the residuals E in A_L. */
static void forward(const sive_dln *m, sive_dln_work *w, const double *theta,
                    const uint64_t *idx, size_t b0, size_t R)
{
    const size_t L = m->layers, hi = m->width[0], ho = m->width[L];
    size_t first = 1;
    if (m->n == 0) {
        const double *w1 = theta + m->offset[1];
        for (size_t i = 0; i < R; i++) {
            for (size_t h = 0; h < m->width[1]; h++)
                w->act[1][i * m->width[1] + h] = w1[h * hi + b0 + i];
            for (size_t o = 0; o < ho; o++)
                w->y[i * ho + o] = m->teacher[o * hi + b0 + i];
        }
        first = 2;
    } else {
        for (size_t i = 0; i < R; i++) {
            memcpy(w->act[0] + i * hi, m->x + idx[b0 + i] * hi, hi * sizeof(double));
            memcpy(w->y + i * ho, m->y + idx[b0 + i] * ho, ho * sizeof(double));
        }
    }
    for (size_t s = first; s <= L; s++)
        gemm(w, R, m->width[s], m->width[s - 1], 1.0, w->act[s - 1],
             m->width[s - 1], 1, theta + m->offset[s], 1, m->width[s - 1], 0.0,
             w->act[s], m->width[s]);
    /* residuals in place of A_L */
    for (size_t k = 0; k < R * ho; k++)
        w->act[L][k] -= w->y[k];
}

/* Backward pass of block [b0, b0+R): grad += c * d(sum of its losses). */
static void backward(const sive_dln *m, sive_dln_work *w, const double *theta,
                     size_t b0, size_t R, double c, double *grad)
{
    const size_t L = m->layers;
    double *d = w->d0, *dn = w->d1;
    for (size_t k = 0; k < R * m->width[L]; k++)
        d[k] = c * w->act[L][k];
    for (size_t s = L; s >= 1; s--) {
        const size_t ho = m->width[s], hi = m->width[s - 1];
        double *g = grad + m->offset[s];
        if (s == 1 && m->n == 0) { /* A_0 = unit rows b0 .. b0+R-1 */
            for (size_t i = 0; i < R; i++)
                for (size_t h = 0; h < ho; h++)
                    g[h * hi + b0 + i] += d[i * ho + h];
            break;
        }
        gemm(w, ho, hi, R, 1.0, d, 1, ho, w->act[s - 1], hi, 1, 1.0, g, hi);
        if (s == 1)
            break;
        gemm(w, R, hi, ho, 1.0, d, ho, 1, theta + m->offset[s], hi, 1, 0.0, dn, hi);
        double *t = d;
        d = dn;
        dn = t;
    }
}

/* Sum of the block's losses 1/2 ||E_i||^2 (also stored when out). */
static double block_losses(const sive_dln *m, const sive_dln_work *w, size_t R,
                           double *out)
{
    const size_t ho = m->width[m->layers];
    double sum = 0.0;
    for (size_t i = 0; i < R; i++) {
        const double *e = w->act[m->layers] + i * ho;
        double s = 0.0;
        for (size_t o = 0; o < ho; o++)
            s += e[o] * e[o];
        if (out)
            out[i] = 0.5 * s;
        sum += 0.5 * s;
    }
    return sum;
}

int sive_dln_loss_grad(const sive_dln *m, sive_dln_work *w, const double *theta,
                       const uint64_t *idx, size_t n, double *grad, double *loss)
{
    int rc = check_args("sive_dln_loss_grad", m, w, theta, idx, n);
    if (rc)
        return rc;
    const int pop = m->n == 0;
    const size_t rows = pop ? m->width[0] : n;
    const double c = pop ? 1.0 : 1.0 / (double)n;
    if (grad)
        memset(grad, 0, m->dim * sizeof *grad);
    double sum = 0.0;
    for (size_t b0 = 0; b0 < rows; b0 += w->rows) {
        const size_t R = rows - b0 < w->rows ? rows - b0 : w->rows;
        forward(m, w, theta, idx, b0, R);
        sum += block_losses(m, w, R, NULL);
        if (grad)
            backward(m, w, theta, b0, R, c, grad);
    }
    if (loss)
        *loss = pop ? sum + 0.5 * (double)m->width[m->layers] * m->noise_std *
                                m->noise_std
                    : sum * c;
    return SIVE_OK;
}

int sive_dln_example_losses(const sive_dln *m, sive_dln_work *w,
                            const double *theta, const uint64_t *idx, size_t n,
                            double *losses)
{
    static const char fn[] = "sive_dln_example_losses";
    if (m && m->n == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: population mode has no "
                         "examples", fn);
    int rc = check_args(fn, m, w, theta, idx, n);
    if (rc)
        return rc;
    if (!losses)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL losses", fn);
    for (size_t b0 = 0; b0 < n; b0 += w->rows) {
        const size_t R = n - b0 < w->rows ? n - b0 : w->rows;
        forward(m, w, theta, idx, b0, R);
        block_losses(m, w, R, losses + b0);
    }
    return SIVE_OK;
}

/* Mean loss over the whole data set (data mode), in blocks of indices. */
static int full_loss(const sive_dln *m, sive_dln_work *w, const double *theta,
                     double *loss)
{
    uint64_t ids[DEFAULT_BLOCK];
    double sum = 0.0;
    for (uint64_t j0 = 0; j0 < m->n; j0 += DEFAULT_BLOCK) {
        size_t k = m->n - j0 < DEFAULT_BLOCK ? (size_t)(m->n - j0) : DEFAULT_BLOCK;
        for (size_t i = 0; i < k; i++)
            ids[i] = j0 + i;
        double l = 0.0;
        int rc = sive_dln_loss_grad(m, w, theta, ids, k, NULL, &l);
        if (rc)
            return rc;
        sum += l * (double)k;
    }
    *loss = sum / (double)m->n;
    return SIVE_OK;
}

int sive_dln_train(const sive_dln *m, sive_dln_work *w, double *theta, double lr,
                   uint64_t steps, size_t batch, uint64_t seed, double *loss)
{
    static const char fn[] = "sive_dln_train";
    if (!m || !w || !theta || !(isfinite(lr) && lr > 0.0) || (m->n && batch == 0))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: NULL argument, lr %g not > 0 or batch 0", fn, lr);
    const int pop = m->n == 0;
    double *grad = malloc(m->dim * sizeof *grad);
    uint64_t *ids = pop ? NULL : malloc(batch * sizeof *ids);
    if (!grad || (!pop && !ids)) {
        free(grad);
        free(ids);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    }
    int rc = SIVE_OK;
    for (uint64_t k = 0; k < steps && rc == SIVE_OK; k++) {
        sive_rng g;
        sive_rng_stream(&g, seed, k, 5);
        for (size_t i = 0; !pop && i < batch; i++)
            ids[i] = sive_rng_below(&g, m->n);
        double l = NAN;
        rc = sive_dln_loss_grad(m, w, theta, ids, pop ? 0 : batch, grad, &l);
        if (rc == SIVE_OK && !isfinite(l))
            rc = sivei_fail(NULL, SIVE_E_DIVERGED, "%s: loss not finite at step %llu",
                           fn, (unsigned long long)k);
        for (size_t i = 0; rc == SIVE_OK && i < m->dim; i++)
            theta[i] -= lr * grad[i];
    }
    free(grad);
    free(ids);
    if (rc == SIVE_OK && loss)
        rc = pop ? sive_dln_loss_grad(m, w, theta, NULL, 0, NULL, loss)
                 : full_loss(m, w, theta, loss);
    return rc;
}
