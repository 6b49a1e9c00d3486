/* The deep linear network and the normal-crossing monomials as probe
 * models (sive.h's sive_model), through the public APIs only. */
#include "dln_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORKERS 1024
/* Largest cache of per-example pieces at theta* (bytes); above it the
 * gradient at theta* is computed like any other. */
#define STAR_CACHE_MAX ((size_t)1 << 30)

/* The gradient control variates' pieces at theta* (SIVE_OPT_GRAD_
 * CONTROL_VARIATE; docs/performance.md): the library's pass at theta*
 * (chain and step -1) calls the gradient on every example once; the model
 * keeps each example's activations and deltas there, and later gradient
 * calls at exactly that theta (bitwise) on a batch sum the cached pieces:
 * one product per layer instead of a forward and a backward pass.  The
 * pass writes under the write lock (a pass at another theta* starts over),
 * the chains read under the read lock. */
typedef struct star_cache {
    pthread_rwlock_t lock;
    double *theta; /* the theta* of the pieces, d values, or NULL */
    double *rows;  /* n x piece width                             */
    uint8_t *have; /* rows filled                                 */
    uint64_t filled;
    int off;       /* too large for STAR_CACHE_MAX, or out of memory */
} star_cache;

typedef struct dln_model {
    const sive_dln *m;
    int blis_threads;
    /* one workspace (and gather buffer of the cache) per worker, made by
     * its first callback; slot w is only touched by worker w, whose calls
     * never overlap: no lock. */
    sive_dln_work *work[MAX_WORKERS];
    double *buf[MAX_WORKERS];
    star_cache star;
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
    sive_dln_work **slot = &dm->work[batch->worker];
    if (!*slot) {
        int rc = sive_dln_work_new(slot, dm->m, 0, dm->blis_threads);
        if (rc)
            return rc;
    }
    *w = *slot;
    return SIVE_OK;
}

/* In the pass at theta*: start the cache over at a new theta*, then fill
 * the batch's rows (memory permitting). */
static void star_fill(dln_model *dm, sive_dln_work *w, const double *theta,
                      const sive_batch *b)
{
    star_cache *c = &dm->star;
    const sive_dln *m = dm->m;
    const size_t d = sive_dln_dim(m), P = sivei_dln_piece_width(m);
    const uint64_t n = sive_dln_examples(m);
    const size_t n_b = b->n_groups * b->group_size;
    pthread_rwlock_wrlock(&c->lock);
    if (!c->off && !c->theta) {
        if (n > STAR_CACHE_MAX / sizeof(double) / P) {
            c->off = 1;
        } else {
            c->theta = malloc(d * sizeof *c->theta);
            c->rows = malloc((size_t)n * P * sizeof *c->rows);
            c->have = malloc((size_t)n);
            c->off = !c->theta || !c->rows || !c->have;
            c->filled = UINT64_MAX; /* no theta* yet */
        }
    }
    if (!c->off) {
        if (c->filled == UINT64_MAX || memcmp(c->theta, theta, d * sizeof *theta)) {
            memcpy(c->theta, theta, d * sizeof *theta);
            memset(c->have, 0, (size_t)n);
            c->filled = 0;
        }
        if (c->filled < n) {
            sivei_dln_pieces(m, w, theta, b->index, n_b, c->rows);
            for (size_t i = 0; i < n_b; i++)
                if (!c->have[b->index[i]]) {
                    c->have[b->index[i]] = 1;
                    c->filled++;
                }
        }
    }
    pthread_rwlock_unlock(&c->lock);
}

/* The gradient from the cache when theta is its complete theta*; returns
 * 1 when it did, 0 to compute it plainly (or on no memory for the
 * worker's buffer). */
static int star_grad(dln_model *dm, sive_dln_work *w, const double *theta,
                     const sive_batch *b, double *grad, double *loss)
{
    star_cache *c = &dm->star;
    const sive_dln *m = dm->m;
    const size_t d = sive_dln_dim(m), n = b->n_groups * b->group_size;
    double **buf = &dm->buf[b->worker];
    int done = 0;
    pthread_rwlock_rdlock(&c->lock);
    int ok = !c->off && c->theta && c->filled == sive_dln_examples(m) && n > 0 &&
             !memcmp(c->theta, theta, d * sizeof *theta);
    for (size_t i = 0; ok && i < n; i++) /* else the plain path says which */
        ok = b->index[i] < c->filled; /* = n */
    if (ok) {
        if (!*buf)
            *buf = malloc(sivei_dln_work_rows(w) * sivei_dln_piece_width(m) * sizeof **buf);
        if (*buf) {
            sivei_dln_pieces_grad(m, w, c->rows, b->index, n, *buf, grad, loss);
            done = 1;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return done;
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
    if (!rc && !pop && pass)
        star_fill(dm, w, theta, batch);
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
    }
    pthread_rwlock_destroy(&dm->star.lock);
    free(dm->star.theta);
    free(dm->star.rows);
    free(dm->star.have);
    free(dm);
}

static int check_out(const char *fn, const sive_model *out)
{
    if (!out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    if (out->struct_size < offsetof(sive_model, destroy) + sizeof out->destroy)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: call sive_model_init(out, sizeof *out) first", fn);
    return SIVE_OK;
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
    dln_model *dm = calloc(1, sizeof *dm);
    if (!dm)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    if (pthread_rwlock_init(&dm->star.lock, NULL)) {
        free(dm);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: no lock for the cache", fn);
    }
    dm->m = m;
    dm->blis_threads = blis_threads;
    const int pop = sive_dln_examples(m) == 0;
    out->dtype = SIVE_F64;
    out->dim = sive_dln_dim(m);
    out->n_examples = sive_dln_examples(m);
    out->grad = grad_cb;
    out->loss = pop ? NULL : loss_cb;
    out->group_loss = pop ? group_cb : NULL;
    out->user = dm;
    out->destroy = destroy_cb;
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
