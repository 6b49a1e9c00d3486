/* The deep linear network and the normal-crossing monomials as probe
 * models (sive.h's sive_model), through the public APIs, except for the
 * gradient at theta* of gradient control variates, summed from per-example
 * pieces cached in the pass at theta* (lib/ref/star_cache.h). */
#include "dln_impl.h"
#include "star_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORKERS 1024

typedef struct dln_model {
    const sive_dln *m;
    uint64_t n; /* m's examples when the model was made (its n_examples) */
    int blis_threads;
    /* one workspace (and gather buffer of the cache) per worker, made by
     * its first callback; slot w is only touched by worker w, whose calls
     * never overlap: no lock. */
    sive_dln_work *work[MAX_WORKERS];
    double *buf[MAX_WORKERS];
    double *mv[MAX_WORKERS]; /* the move's matrices (move_cb, gibbs_cb) */
    double *kr[MAX_WORKERS]; /* the curvature's products (curvature_cb) */
    sive_block blocks[SIVE_DLN_MAX_LAYERS]; /* the layers (sive_model.blocks) */
    double *xroot; /* data mode: R, R^T R = X^T X / n (dln_kron.c), else NULL */
    sivei_star_cache star; /* pieces at theta* (lib/ref/star_cache.h) */
} dln_model;

static int worker_work(dln_model *dm, const void *theta, size_t dim,
                       const sive_batch *batch, sive_dln_work **w)
{
    if (!theta || !batch || dim != sive_dln_dim(dm->m))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "dln model: bad arguments (dim %zu, model %zu)", dim,
                         sive_dln_dim(dm->m));
    if (batch->worker < 0 || batch->worker >= MAX_WORKERS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "dln model: worker %d outside [0, %d)",
                         (int)batch->worker, MAX_WORKERS);
    if (sive_dln_examples(dm->m) != dm->n)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "dln model: the network has %llu examples, %llu when the model was "
                         "made (sive_dln_set_data changed its size or mode: make a new model)",
                         (unsigned long long)sive_dln_examples(dm->m),
                         (unsigned long long)dm->n);
    sive_dln_work **slot = &dm->work[batch->worker];
    if (!*slot) {
        int rc = sive_dln_work_new(slot, dm->m, 0, dm->blis_threads);
        if (rc)
            return rc;
    }
    *w = *slot;
    return SIVE_OK;
}

typedef struct fill_ctx {
    const sive_dln *m;
    sive_dln_work *w;
    const double *theta;
} fill_ctx;

static void fill_rows(void *ctx, const uint64_t *idx, size_t k, void *rows)
{
    const fill_ctx *f = ctx;
    sivei_dln_pieces(f->m, f->w, f->theta, idx, k, rows);
}

/* The gradient from the pieces when theta is their complete theta*;
 * returns 1 when it did, 0 to compute it plainly. */
static int star_grad(dln_model *dm, sive_dln_work *w, const double *theta,
                     const sive_batch *b, double *grad, double *loss)
{
    const size_t n = b->n_groups * b->group_size;
    const double *rows = sivei_star_acquire(&dm->star, dm->m->data_version, theta, b->index, n);
    double **buf = &dm->buf[b->worker];
    if (rows && !*buf)
        *buf = malloc(sivei_dln_work_rows(w) * sivei_dln_piece_width(dm->m) * sizeof **buf);
    if (rows && !*buf)
        sivei_star_release(&dm->star);
    if (!rows || !*buf)
        return 0;
    sivei_dln_pieces_grad(dm->m, w, rows, b->index, n, *buf, grad, loss);
    sivei_star_release(&dm->star);
    return 1;
}

static int grad_cb(const void *theta, size_t dim, const sive_batch *batch,
                   void *grad, double *loss, void *user)
{
    dln_model *dm = user;
    sive_dln_work *w = NULL;
    int rc = worker_work(dm, theta, dim, batch, &w);
    if (rc)
        return rc;
    const int pop = sive_dln_examples(dm->m) == 0;
    const int pass = batch->chain == -1 && batch->step == -1;
    if (!pop && !pass && grad && batch->index && star_grad(dm, w, theta, batch, grad, loss))
        return SIVE_OK;
    rc = sive_dln_loss_grad(dm->m, w, theta, pop ? NULL : batch->index,
                            pop ? 0 : batch->n_groups * batch->group_size, grad, loss);
    if (!rc && !pop && pass) {
        fill_ctx f = {dm->m, w, theta};
        sivei_star_fill(&dm->star, dm->m->data_version, theta, batch->index,
                        batch->n_groups * batch->group_size, fill_rows, &f);
    }
    return rc;
}

static int loss_cb(const void *theta, size_t dim, const sive_batch *batch,
                   double *losses, void *user)
{
    dln_model *dm = user;
    sive_dln_work *w = NULL;
    int rc = worker_work(dm, theta, dim, batch, &w);
    if (rc)
        return rc;
    return sive_dln_example_losses(dm->m, w, theta, batch->index, batch->group_size,
                                   losses);
}

/* c (m x n) = a (m x k) b (k x n), row-major; the move's matrices are
 * small (a hidden layer's width), so plain loops. */
static void matmul(const double *a, const double *b, double *c, size_t m, size_t k,
                   size_t n)
{
    for (size_t r = 0; r < m; r++)
        for (size_t j = 0; j < n; j++) {
            double s = 0.0;
            for (size_t q = 0; q < k; q++)
                s += a[r * k + q] * b[q * n + j];
            c[r * n + j] = s;
        }
}

/* exp(e A) of the k x k matrix A into out by scaling and squaring: the
 * Taylor series of B = e A / 2^j to order 16 with |B|_1 <= 1/2, squared j
 * times (relative error near rounding for the moderate e a move uses);
 * t1, t2: k*k scratch each. */
static void expm(const double *a, double e, size_t k, double *out, double *t1, double *t2)
{
    double norm = 0.0;
    for (size_t c = 0; c < k; c++) {
        double col = 0.0;
        for (size_t r = 0; r < k; r++)
            col += fabs(a[r * k + c]);
        norm = fmax(norm, col);
    }
    int j = 0;
    double sc = e;
    while (fabs(sc) * norm > 0.5 && j < 60) {
        sc *= 0.5;
        j++;
    }
    /* out = I + B + B^2/2! + ...; t1 = the current term */
    for (size_t i = 0; i < k * k; i++) {
        out[i] = 0.0;
        t1[i] = 0.0;
    }
    for (size_t i = 0; i < k; i++)
        out[i * k + i] = t1[i * k + i] = 1.0;
    for (int n = 1; n <= 16; n++) {
        matmul(t1, a, t2, k, k, k);
        for (size_t i = 0; i < k * k; i++) {
            t2[i] = t2[i] * sc / n;
            t1[i] = t2[i];
            out[i] += t2[i];
        }
    }
    for (; j > 0; j--) {
        matmul(out, out, t1, k, k, k);
        for (size_t i = 0; i < k * k; i++)
            out[i] = t1[i];
    }
}

/* The orbit move (sive_model.move; dln.h): a hidden layer s drawn
 * uniformly from 1 .. L-1, A (H_s x H_s) with entries N(0, 1/H_s), g =
 * exp(scale A); W_s -> g W_s, W_{s+1} -> W_{s+1} g^-1 with g^-1 =
 * exp(-scale A).  The loss is invariant; -A has A's law, so the reverse
 * proposal's density is the forward one's, and the Jacobian is
 * det(g)^(H_{s-1}) det(g^-1)^(H_{s+1}): log_ratio = scale tr(A)
 * (H_{s-1} - H_{s+1}). */
static int move_cb(const sive_move_info *info, const void *theta, void *theta_out,
                   double *log_ratio, void *user)
{
    dln_model *dm = user;
    const sive_dln *m = dm->m;
    sive_dln_work *w = NULL;
    const size_t dim = info->dim;
    const double scale = info->scale;
    const sive_batch *batch = info->batch;
    int rc = worker_work(dm, theta, dim, batch, &w);
    if (rc)
        return rc;
    const double *th = theta;
    double *out = theta_out;
    memcpy(out, th, dim * sizeof *out);
    *log_ratio = 0.0;
    if (m->layers < 2)
        return SIVE_OK; /* no hidden layer: no symmetry */
    sive_rng g;
    sive_rng_seed(&g, batch->seed, 0x6f72626974ULL /* "orbit" */);
    const size_t s = 1 + (size_t)sive_rng_below(&g, m->layers - 1);
    const size_t k = m->width[s], hin = m->width[s - 1], hout = m->width[s + 1];
    double **buf = &dm->mv[batch->worker];
    if (!*buf) {
        size_t hmax = 0;
        for (size_t i = 1; i < m->layers; i++)
            hmax = m->width[i] > hmax ? m->width[i] : hmax;
        *buf = malloc(5 * hmax * hmax * sizeof **buf);
        if (!*buf)
            return sivei_fail(NULL, SIVE_E_NOMEM, "dln model: out of memory for the move");
    }
    double *a = *buf, *gm = a + k * k, *gi = gm + k * k, *t1 = gi + k * k, *t2 = t1 + k * k;
    sive_rng_normals(&g, a, k * k);
    double tr = 0.0;
    for (size_t i = 0; i < k * k; i++)
        a[i] /= sqrt((double)k);
    for (size_t i = 0; i < k; i++)
        tr += a[i * k + i];
    expm(a, scale, k, gm, t1, t2);
    expm(a, -scale, k, gi, t1, t2);
    /* W_s (k x hin) at offset[s]; W_{s+1} (hout x k) at offset[s+1] */
    const double *ws = th + m->offset[s], *wn = th + m->offset[s + 1];
    double *os = out + m->offset[s], *on = out + m->offset[s + 1];
    matmul(gm, ws, os, k, k, hin);
    matmul(wn, gi, on, hout, k, k);
    *log_ratio = scale * tr * ((double)hin - (double)hout);
    return SIVE_OK;
}

/* The checks of worker_work() and the worker's scratch of n doubles in
 * slots[worker] (allocated at its first use) into *buf. */
static int worker_scratch(dln_model *dm, const void *theta, size_t dim, const sive_batch *b,
                          double **slots, size_t n, double **buf)
{
    sive_dln_work *w = NULL;
    int rc = worker_work(dm, theta, dim, b, &w);
    if (rc)
        return rc;
    double **slot = &slots[b->worker];
    if (!*slot && !(*slot = malloc(n * sizeof **slot)))
        return sivei_fail(NULL, SIVE_E_NOMEM, "dln model: out of memory for the move");
    *buf = *slot;
    return SIVE_OK;
}

/* The Gibbs layer move (sive_dln_set_move(); lib/ref/dln_gibbs.c). */
static int gibbs_cb(const sive_move_info *info, const void *theta, void *theta_out,
                    double *log_ratio, void *user)
{
    dln_model *dm = user;
    double *buf = NULL;
    int rc = worker_scratch(dm, theta, info->dim, info->batch, dm->mv,
                            sivei_dln_gibbs_scratch(dm->m), &buf);
    if (rc)
        return rc;
    if (!info->theta_star || !(info->t >= 0.0) || !(info->h > 0.0))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "dln model: Gibbs move without t, h, theta*");
    sivei_dln_gibbs(dm->m, buf, info, theta, theta_out, log_ratio);
    return SIVE_OK;
}

/* The exact Kronecker roots of a layer's Gauss-Newton curvature
 * (sive_model.curvature; lib/ref/dln_kron.c). */
static int curvature_cb(const sive_curvature_info *info, const void *theta, double *g_root,
                        double *a_root, void *user)
{
    dln_model *dm = user;
    double *buf = NULL;
    int rc = worker_scratch(dm, theta, info->dim, info->batch, dm->kr,
                            sivei_dln_kron_scratch(dm->m), &buf);
    if (rc)
        return rc;
    if (info->block >= dm->m->layers)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "dln model: block %zu of %zu layers",
                         info->block, dm->m->layers);
    sivei_dln_kron_roots(dm->m, dm->xroot, buf, info->block + 1, theta, g_root, a_root);
    return SIVE_OK;
}

/* Population mode: the exact loss, the same for every group. */
static int group_cb(const void *theta, size_t dim, const sive_batch *batch,
                    double *group_loss, void *user)
{
    dln_model *dm = user;
    sive_dln_work *w = NULL;
    int rc = worker_work(dm, theta, dim, batch, &w);
    double l = 0.0;
    if (rc || (rc = sive_dln_loss_grad(dm->m, w, theta, NULL, 0, NULL, &l)))
        return rc;
    for (size_t g = 0; g < batch->n_groups; g++)
        group_loss[g] = l;
    return SIVE_OK;
}

static void destroy_cb(void *user)
{
    dln_model *dm = user;
    if (!dm)
        return;
    for (int i = 0; i < MAX_WORKERS; i++) {
        sive_dln_work_free(dm->work[i]);
        free(dm->buf[i]);
        free(dm->mv[i]);
        free(dm->kr[i]);
    }
    free(dm->xroot);
    sivei_star_free(&dm->star);
    free(dm);
}

static int check_out(const char *fn, const sive_model *out)
{
    if (!out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    /* the sizes sive_model_init() accepts: a model made on garbage could
     * not be released (sive_model_destroy() ignores it) */
    if (!sivei_model_size_ok(out->struct_size))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: call sive_model_init(out, sizeof *out) first", fn);
    return SIVE_OK;
}

/* The model's identity: everything its loss depends on besides theta, the
 * widths, the teacher (its rank, singular values and frames), noise_std
 * (the population loss's constant) and, in data mode, the examples. */
static uint64_t dln_identity(const sive_dln *m)
{
    const size_t L = m->layers, h0 = m->width[0], hl = m->width[L];
    uint64_t head[SIVE_DLN_MAX_LAYERS + 3];
    head[0] = L;
    for (size_t s = 0; s <= L; s++)
        head[1 + s] = m->width[s];
    head[L + 2] = m->n;
    uint64_t h = sivei_hash_words(0xcbf29ce484222325ull, head, (L + 3) * sizeof head[0]);
    h = sivei_hash_words(h, &m->noise_std, sizeof m->noise_std);
    h = sivei_hash_words(h, m->teacher, hl * h0 * sizeof(double));
    if (m->n) {
        h = sivei_hash_words(h, m->x, (size_t)m->n * h0 * sizeof(double));
        h = sivei_hash_words(h, m->y, (size_t)m->n * hl * sizeof(double));
    }
    return h ? h : 1; /* 0 means "no identity" in sive_model */
}

int sive_dln_model(sive_model *out, const sive_dln *m, int blis_threads)
{
    static const char fn[] = "sive_dln_model";
    int rc = check_out(fn, out);
    if (rc)
        return rc;
    if (!m || blis_threads < 1 || blis_threads > 1024)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: NULL model or blis_threads %d not in [1, 1024]", fn,
                         blis_threads);
    const int pop = sive_dln_examples(m) == 0;
    if (m->move == SIVE_DLN_MOVE_GIBBS && !pop)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: the Gibbs layer move (sive_dln_set_move) needs population mode",
                         fn);
    dln_model *dm = calloc(1, sizeof *dm);
    if (!dm)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    if (sivei_star_init(&dm->star, sive_dln_dim(m) * sizeof(double), sive_dln_examples(m),
                        sivei_dln_piece_width(m) * sizeof(double))) {
        free(dm);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: no lock for the cache", fn);
    }
    const size_t h0 = m->width[0];
    if (!pop && (!(dm->xroot = malloc(h0 * h0 * sizeof *dm->xroot)) ||
                 sivei_dln_input_root(m, dm->xroot))) {
        destroy_cb(dm);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    }
    dm->m = m;
    dm->n = sive_dln_examples(m);
    dm->blis_threads = blis_threads;
    out->dtype = SIVE_F64;
    out->dim = sive_dln_dim(m);
    out->n_examples = sive_dln_examples(m);
    out->grad = grad_cb;
    out->loss = pop ? NULL : loss_cb;
    out->group_loss = pop ? group_cb : NULL;
    out->user = dm;
    out->destroy = destroy_cb;
    if (out->struct_size >= offsetof(sive_model, move) + sizeof out->move)
        out->move = m->move == SIVE_DLN_MOVE_GIBBS ? gibbs_cb : move_cb;
    if (out->struct_size >= offsetof(sive_model, identity) + sizeof out->identity)
        out->identity = dln_identity(m);
    if (out->struct_size >= offsetof(sive_model, curvature) + sizeof out->curvature) {
        sivei_dln_blocks(m, dm->blocks);
        out->n_blocks = m->layers;
        out->blocks = dm->blocks;
        out->curvature = curvature_cb;
    }
    return SIVE_OK;
}

/* ------------------------------------------------------------------ */
/* Normal-crossing monomials K(w) = sum_i w_i^(2 k_i)                 */
/* ------------------------------------------------------------------ */

#define MAX_EXPONENT 64

typedef struct monomial {
    size_t d;
    uint32_t k[];
} monomial;

static double mono_k(const monomial *mo, const double *w, double *grad)
{
    double sum = 0.0;
    for (size_t i = 0; i < mo->d; i++) {
        const double p = pow(w[i], 2.0 * mo->k[i] - 1.0); /* odd power: sign kept */
        sum += p * w[i];
        if (grad)
            grad[i] = 2.0 * mo->k[i] * p;
    }
    return sum;
}

static int mono_grad(const void *theta, size_t dim, const sive_batch *batch,
                     void *grad, double *loss, void *user)
{
    monomial *mo = user;
    (void)batch;
    if (!theta || !grad || dim != mo->d)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "monomial model: bad arguments");
    *loss = mono_k(mo, theta, grad);
    return SIVE_OK;
}

static int mono_group(const void *theta, size_t dim, const sive_batch *batch,
                      double *group_loss, void *user)
{
    monomial *mo = user;
    if (!theta || !batch || dim != mo->d)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "monomial model: bad arguments");
    const double k = mono_k(mo, theta, NULL);
    for (size_t g = 0; g < batch->n_groups; g++)
        group_loss[g] = k;
    return SIVE_OK;
}

int sive_monomial_model(sive_model *out, const uint32_t *k, size_t d)
{
    static const char fn[] = "sive_monomial_model";
    int rc = check_out(fn, out);
    if (rc)
        return rc;
    if (!isfinite(sive_monomial_lambda(k, d)) || d > ((size_t)1 << 32))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: NULL exponents, d = %zu or an exponent 0", fn, d);
    for (size_t i = 0; i < d; i++)
        if (k[i] > MAX_EXPONENT)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: exponent k[%zu] = %u > %d",
                             fn, i, (unsigned)k[i], MAX_EXPONENT);
    monomial *mo = malloc(sizeof *mo + d * sizeof mo->k[0]);
    if (!mo)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    mo->d = d;
    memcpy(mo->k, k, d * sizeof k[0]);
    out->dtype = SIVE_F64;
    out->dim = d;
    out->n_examples = 0;
    out->grad = mono_grad;
    out->loss = NULL;
    out->group_loss = mono_group;
    out->user = mo;
    out->destroy = free;
    return SIVE_OK;
}

double sive_monomial_lambda(const uint32_t *k, size_t d)
{
    if (!k || d == 0)
        return NAN;
    double s = 0.0;
    for (size_t i = 0; i < d; i++) {
        if (k[i] == 0)
            return NAN;
        s += 1.0 / (2.0 * k[i]);
    }
    return s;
}
