/* Deep linear network: architecture, teacher, data, exact factorisations
 * and Aoyagi's learning coefficient (include/sive/dln.h). */
#include "dln_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Stream purposes of the model's own draws (distinct from each other). */
enum { PURPOSE_U = 1, PURPOSE_V = 2, PURPOSE_X = 3, PURPOSE_NOISE = 4,
       PURPOSE_FRAME = 16 };

void sivei_dln_frame(double *q, size_t rows, size_t cols, uint64_t seed,
                     uint64_t purpose)
{
    sive_rng g;
    sive_rng_stream(&g, seed, 0, purpose);
    sive_rng_normals(&g, q, rows * cols);
    /* Modified Gram-Schmidt on the columns, twice ("twice is enough"):
     * Gaussian columns are independent with probability 1. */
    for (size_t c = 0; c < cols; c++)
        for (int pass = 0; pass < 2; pass++) {
            for (size_t p = 0; p < c; p++) {
                double dot = 0.0;
                for (size_t i = 0; i < rows; i++)
                    dot += q[i * cols + p] * q[i * cols + c];
                for (size_t i = 0; i < rows; i++)
                    q[i * cols + c] -= dot * q[i * cols + p];
            }
            double nrm = 0.0;
            for (size_t i = 0; i < rows; i++)
                nrm += q[i * cols + c] * q[i * cols + c];
            nrm = 1.0 / sqrt(nrm);
            for (size_t i = 0; i < rows; i++)
                q[i * cols + c] *= nrm;
        }
}

/* Shared by sive_dln_new() and sive_dln_lambda(). */
static int check_sizes(const char *fn, const size_t *widths, size_t layers,
                       size_t rank, size_t *dim)
{
    if (!widths)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL widths", fn);
    if (layers < 1 || layers > SIVE_DLN_MAX_LAYERS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: %zu layers not in [1, %d]",
                         fn, layers, SIVE_DLN_MAX_LAYERS);
    uint64_t d = 0;
    size_t hmin = SIZE_MAX;
    for (size_t s = 0; s <= layers; s++) {
        if (widths[s] < 1 || widths[s] > SIVE_DLN_MAX_WIDTH)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: width H%zu = %zu not in [1, %zu]", fn, s,
                             widths[s], SIVE_DLN_MAX_WIDTH);
        hmin = widths[s] < hmin ? widths[s] : hmin;
        if (s > 0)
            d += (uint64_t)widths[s] * widths[s - 1];
    }
    if (d > SIVE_DLN_MAX_PARAMS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: %llu parameters > 2^32",
                         fn, (unsigned long long)d);
    if (rank > hmin)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: rank %zu above the smallest width %zu", fn, rank, hmin);
    if (dim)
        *dim = (size_t)d;
    return SIVE_OK;
}

/* W_T = U diag(sv) V^T. */
static void make_teacher(sive_dln *m)
{
    const size_t ho = m->width[m->layers], hi = m->width[0], r = m->rank;
    for (size_t o = 0; o < ho; o++)
        for (size_t i = 0; i < hi; i++) {
            double s = 0.0;
            for (size_t k = 0; k < r; k++)
                s += m->u[o * r + k] * m->sv[k] * m->v[i * r + k];
            m->teacher[o * hi + i] = s;
        }
}

int sive_dln_new(sive_dln **out, const size_t *widths, size_t layers,
                 size_t rank, const double *sv, uint64_t seed)
{
    static const char fn[] = "sive_dln_new";
    if (!out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL out", fn);
    *out = NULL;
    size_t dim = 0;
    int rc = check_sizes(fn, widths, layers, rank, &dim);
    if (rc)
        return rc;
    for (size_t k = 0; sv && k < rank; k++)
        if (!(isfinite(sv[k]) && sv[k] > 0.0))
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: singular value %zu (%g) not finite and > 0", fn,
                             k, sv[k]);
    sive_dln *m = calloc(1, sizeof *m);
    if (!m)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    m->layers = layers;
    m->dim = dim;
    m->rank = rank;
    for (size_t s = 0, off = 0; s <= layers; s++) {
        m->width[s] = widths[s];
        if (s > 0) {
            m->offset[s] = off;
            off += widths[s] * widths[s - 1];
        }
    }
    const size_t ho = widths[layers], hi = widths[0];
    m->teacher = malloc(ho * hi * sizeof *m->teacher);
    m->u = malloc((ho * rank + 1) * sizeof *m->u);
    m->v = malloc((hi * rank + 1) * sizeof *m->v);
    m->sv = malloc((rank + 1) * sizeof *m->sv);
    if (!m->teacher || !m->u || !m->v || !m->sv) {
        sive_dln_free(m);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    }
    for (size_t k = 0; k < rank; k++)
        m->sv[k] = sv ? sv[k] : 1.0;
    sivei_dln_frame(m->u, ho, rank, seed, PURPOSE_U);
    sivei_dln_frame(m->v, hi, rank, seed, PURPOSE_V);
    make_teacher(m);
    *out = m;
    return SIVE_OK;
}

void sive_dln_free(sive_dln *m)
{
    if (!m)
        return;
    free(m->teacher);
    free(m->u);
    free(m->v);
    free(m->sv);
    free(m->x);
    free(m->y);
    free(m);
}

size_t sive_dln_dim(const sive_dln *m) { return m ? m->dim : 0; }
size_t sive_dln_layers(const sive_dln *m) { return m ? m->layers : 0; }
size_t sive_dln_rank(const sive_dln *m) { return m ? m->rank : 0; }
uint64_t sive_dln_examples(const sive_dln *m) { return m ? m->n : 0; }

size_t sive_dln_width(const sive_dln *m, size_t s)
{
    return m && s <= m->layers ? m->width[s] : 0;
}

int sive_dln_teacher(const sive_dln *m, double *w)
{
    if (!m || !w)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_dln_teacher: NULL argument");
    memcpy(w, m->teacher, m->width[m->layers] * m->width[0] * sizeof *w);
    return SIVE_OK;
}

int sive_dln_set_move(sive_dln *m, sive_dln_move move)
{
    if (!m)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_dln_set_move: m is NULL");
    if (move != SIVE_DLN_MOVE_ORBIT && move != SIVE_DLN_MOVE_GIBBS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_dln_set_move: unknown move %d (SIVE_DLN_MOVE_ORBIT = 0 or "
                         "SIVE_DLN_MOVE_GIBBS = 1)", (int)move);
    m->move = move;
    return SIVE_OK;
}

int sive_dln_set_data(sive_dln *m, uint64_t n, double noise_std, uint64_t seed)
{
    static const char fn[] = "sive_dln_set_data";
    if (!m)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL model", fn);
    if (!(isfinite(noise_std) && noise_std >= 0.0) || n > ((uint64_t)1 << 32))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: n %llu or noise_std %g out of range", fn,
                         (unsigned long long)n, noise_std);
    const size_t hi = m->width[0], ho = m->width[m->layers];
    double *x = NULL, *y = NULL;
    if (n > 0) {
        if (n > SIZE_MAX / sizeof(double) / (hi + ho))
            return sivei_fail(NULL, SIVE_E_NOMEM, "%s: data too large", fn);
        x = malloc((size_t)n * hi * sizeof *x);
        y = malloc((size_t)n * ho * sizeof *y);
        if (!x || !y) {
            free(x);
            free(y);
            return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory (%llu examples)",
                             fn, (unsigned long long)n);
        }
        sive_rng gx, ge;
        sive_rng_stream(&gx, seed, 0, PURPOSE_X);
        sive_rng_stream(&ge, seed, 0, PURPOSE_NOISE);
        sive_rng_normals(&gx, x, (size_t)n * hi);
        sive_rng_normals(&ge, y, (size_t)n * ho);
        for (size_t j = 0; j < n; j++)
            for (size_t o = 0; o < ho; o++) {
                const double *row = m->teacher + o * hi, *xj = x + j * hi;
                double s = 0.0;
                for (size_t i = 0; i < hi; i++)
                    s += row[i] * xj[i];
                y[j * ho + o] = s + noise_std * y[j * ho + o];
            }
    }
    free(m->x);
    free(m->y);
    m->x = x;
    m->y = y;
    m->n = n;
    m->noise_std = noise_std;
    m->data_version++;
    return SIVE_OK;
}

static int check_scales(const char *fn, const double *scales, size_t layers)
{
    if (!scales)
        return SIVE_OK;
    double prod = 1.0;
    for (size_t s = 0; s < layers; s++) {
        if (!(isfinite(scales[s]) && scales[s] > 0.0))
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: scale %zu (%g) not finite and > 0", fn, s, scales[s]);
        prod *= scales[s];
    }
    if (fabs(prod - 1.0) > 1e-9)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: the scales multiply to %.12g, not 1", fn, prod);
    return SIVE_OK;
}

int sive_dln_factorisation(const sive_dln *m, const double *scales,
                           uint64_t seed, double *theta)
{
    static const char fn[] = "sive_dln_factorisation";
    if (!m || !theta)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    int rc = check_scales(fn, scales, m->layers);
    if (rc)
        return rc;
    const size_t L = m->layers, r = m->rank;
    size_t hmax = 0;
    for (size_t s = 0; s <= L; s++)
        hmax = m->width[s] > hmax ? m->width[s] : hmax;
    /* Two frames: the input side of layer s (Q_{s-1}, or V) and its
     * output side (Q_s, or U). */
    double *in = malloc((hmax * r + 1) * sizeof *in);
    double *outf = malloc((hmax * r + 1) * sizeof *outf);
    if (!in || !outf) {
        free(in);
        free(outf);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    }
    memcpy(in, m->v, m->width[0] * r * sizeof *in);
    for (size_t s = 1; s <= L; s++) {
        const size_t ho = m->width[s], hi = m->width[s - 1];
        if (s == L)
            memcpy(outf, m->u, ho * r * sizeof *outf);
        else
            sivei_dln_frame(outf, ho, r, seed, PURPOSE_FRAME + s);
        const double c = scales ? scales[s - 1] : 1.0;
        double *w = theta + m->offset[s];
        for (size_t o = 0; o < ho; o++)
            for (size_t i = 0; i < hi; i++) {
                double acc = 0.0;
                for (size_t k = 0; k < r; k++)
                    acc += outf[o * r + k] * pow(m->sv[k], 1.0 / (double)L) *
                           in[i * r + k];
                w[o * hi + i] = c * acc;
            }
        double *tmp = in;
        in = outf;
        outf = tmp;
    }
    free(in);
    free(outf);
    return SIVE_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int sive_dln_lambda(const size_t *widths, size_t layers, size_t rank,
                    double *lambda, int64_t *multiplicity)
{
    static const char fn[] = "sive_dln_lambda";
    int rc = check_sizes(fn, widths, layers, rank, NULL);
    if (rc)
        return rc;
    int64_t M[SIVE_DLN_MAX_LAYERS + 1];
    const int64_t r = (int64_t)rank, L = (int64_t)layers;
    for (int64_t s = 0; s <= L; s++)
        M[s] = (int64_t)widths[s] - r;
    qsort(M, (size_t)L + 1, sizeof M[0], cmp_i64);
    /* sigma = the l+1 smallest M; Aoyagi's conditions select l. */
    for (int64_t l = 1; l <= L; l++) {
        int64_t S = 0, Q = 0;
        for (int64_t i = 0; i <= l; i++) {
            S += M[i];
            Q += M[i] * M[i];
        }
        const int64_t top = M[l];
        const int has_rest = l < L;
        if (has_rest && !(top < M[l + 1]))
            continue;
        if (S < l * top || (has_rest && !(S < l * M[l + 1])))
            continue;
        const int64_t mbar = S > 0 ? (S + l - 1) / l : 0;
        const int64_t a = S - (mbar - 1) * l;
        /* 4 l lambda = 2 l r (H0 + HL - r) + a (l - a) + S^2 - l Q, the
         * statement with sum_{i<j} M_i M_j = (S^2 - Q)/2, in integers. */
        const int64_t num = 2 * l * r * ((int64_t)widths[0] + (int64_t)widths[layers] - r) +
                            a * (l - a) + S * S - l * Q;
        if (lambda)
            *lambda = (double)num / (double)(4 * l);
        if (multiplicity)
            *multiplicity = a * (l - a) + 1;
        return SIVE_OK;
    }
    return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: no index set satisfies "
                     "Aoyagi's conditions (cannot happen for valid sizes)", fn);
}
