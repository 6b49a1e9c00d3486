/* Adapter: the reference MLP as a client of the probe's f32 callbacks.
 * Nothing here is privileged: it uses only the public MLP and probe APIs. */
#include "internal.h"
#include "mlp_internal.h"
#include "sive/mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHAINS 4096
#define MAX_BLIS_THREADS 1024
/* Evaluation through distinct examples needs a slot per example of the
 * data set: up to 2^26 (256 MiB per chain) */
#define DEDUP_MAX_COUNT ((size_t)1 << 26)

struct sive_mlp_binding {
    const sive_mlp *m;
    const sive_dataset *data;
    int32_t max_chains;
    int blis_threads;
    /* one workspace per chain, made by the chain's first callback.  Slot c
     * is only touched by the thread running chain c, and a chain runs on
     * one thread from start to end, so no lock is needed. */
    sive_mlp_work **work;
    /* per chain, evaluation through distinct examples (lib/mlp_internal.h);
     * made by the chain's first evaluation, grown only when a later run
     * asks for more draws per step */
    sive_mlp_dedup *dedup;
};

/* The workspace of the batch's chain, created on first use. */
static int chain_work(sive_mlp_binding *b, const float *theta, size_t dim,
                      const sive_batch *batch, sive_mlp_work **w)
{
    if (!theta || !batch || dim != sive_mlp_dim(b->m) || !batch->index)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "mlp callback: bad arguments (dim %zu, model %zu)",
                         dim, sive_mlp_dim(b->m));
    if (batch->chain < 0 || batch->chain >= b->max_chains)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "mlp callback: chain %d but the binding was made for "
                         "%d chains", (int)batch->chain, (int)b->max_chains);
    sive_mlp_work **slot = &b->work[batch->chain];
    if (!*slot) {
        int rc = sive_mlp_work_new(slot, b->m, 0, b->blis_threads);
        if (rc)
            return rc;
    }
    *w = *slot;
    return SIVE_OK;
}

static int grad_cb(const float *theta, size_t dim, const sive_batch *batch,
                   float *grad, double *loss, void *user)
{
    sive_mlp_binding *b = user;
    sive_mlp_work *w = NULL;
    int rc = chain_work(b, theta, dim, batch, &w);
    if (rc)
        return rc;
    size_t n = batch->n_groups * batch->group_size;
    return sive_mlp_loss_grad(b->m, w, theta, b->data, batch->index, n, grad,
                              loss);
}

static void dedup_release(sive_mlp_dedup *dd)
{
    free(dd->slot);
    free(dd->uniq);
    free(dd->loss);
    memset(dd, 0, sizeof *dd);
}

/* Whether n draws with replacement from count examples repeat enough for
 * the evaluation through distinct examples to pay: expected distinct
 * fraction count (1 - exp(-n/count)) / n below 0.9, i.e. n > ~0.21 count
 * (the probe's 32 768 draws from the bundled 8000 images: 0.24). */
static int dedup_pays(size_t n, size_t count)
{
    if (count == 0 || count > DEDUP_MAX_COUNT)
        return 0;
    double x = (double)n / (double)count;
    return (1.0 - exp(-x)) / x < 0.9;
}

/* The chain's dedup scratch with room for n draws, or NULL to evaluate
 * every draw (not worth it, or out of memory: the plain path is exact
 * too). */
static sive_mlp_dedup *chain_dedup(sive_mlp_binding *b, int32_t chain, size_t n)
{
    const size_t count = sive_dataset_count(b->data);
    if (!dedup_pays(n, count))
        return NULL;
    sive_mlp_dedup *dd = &b->dedup[chain];
    size_t need = n < count ? n : count;
    if (dd->slot && dd->cap >= need)
        return dd;
    if (!dd->slot) {
        dd->slot = malloc(count * sizeof *dd->slot);
        if (!dd->slot)
            return NULL;
        memset(dd->slot, 0xff, count * sizeof *dd->slot); /* NO_SLOT */
        dd->count = count;
    }
    uint64_t *u = realloc(dd->uniq, need * sizeof *u);
    if (u)
        dd->uniq = u;
    double *l = realloc(dd->loss, need * sizeof *l);
    if (l)
        dd->loss = l;
    if (!u || !l) {
        dedup_release(dd);
        return NULL;
    }
    dd->cap = need;
    return dd;
}

static int eval_cb(const float *theta, size_t dim, const sive_batch *batch,
                   double *group_loss, void *user)
{
    sive_mlp_binding *b = user;
    sive_mlp_work *w = NULL;
    int rc = chain_work(b, theta, dim, batch, &w);
    if (rc)
        return rc;
    sive_mlp_dedup *dd =
        batch->group_size && batch->n_groups <= SIZE_MAX / batch->group_size
            ? chain_dedup(b, batch->chain, batch->n_groups * batch->group_size)
            : NULL;
    if (dd)
        return sive_mlp_group_losses_unique(b->m, w, theta, b->data,
                                            batch->index, batch->n_groups,
                                            batch->group_size, group_loss, dd);
    return sive_mlp_group_losses(b->m, w, theta, b->data, batch->index,
                                 batch->n_groups, batch->group_size,
                                 group_loss);
}

int sive_mlp_probe_bind(sive_mlp_binding **out, sive_probe *p,
                        const sive_mlp *m, const sive_dataset *train,
                        int32_t max_chains, int blis_threads)
{
    static const char fn[] = "sive_mlp_probe_bind";
    if (!out)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "%s: out is NULL", fn);
    *out = NULL;
    if (!p || !m || !train)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    if (sive_probe_dim(p) != sive_mlp_dim(m))
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: probe has dimension %zu, model %zu parameters",
                         fn, sive_probe_dim(p), sive_mlp_dim(m));
    size_t in, classes;
    sive_mlp_sizes(m, &in, NULL, NULL, &classes);
    const size_t n = sive_dataset_count(train);
    if (sive_dataset_rows(train) * sive_dataset_cols(train) != in || n == 0)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: data set of %zu examples of %zux%zu values does "
                         "not fit a model with %zu inputs", fn, n,
                         sive_dataset_rows(train), sive_dataset_cols(train), in);
    /* check labels once here rather than failing in the middle of a run */
    if (sive_dataset_classes(train) > classes)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: data set has labels up to %zu, model has %zu "
                         "classes", fn, sive_dataset_classes(train) - 1,
                         classes);
    if (max_chains == 0) {
        int64_t c = 0;
        int rc = sive_probe_get_int(p, SIVE_OPT_CHAINS, &c);
        if (rc)
            return rc;
        max_chains = (int32_t)(c > MAX_CHAINS ? MAX_CHAINS + 1 : c);
    }
    if (max_chains < 1 || max_chains > MAX_CHAINS)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: max_chains %d not in [1, %d]", fn,
                         (int)max_chains, MAX_CHAINS);
    if (blis_threads < 1 || blis_threads > MAX_BLIS_THREADS)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: blis_threads %d not in [1, %d]", fn, blis_threads,
                         MAX_BLIS_THREADS);
    sive_mlp_binding *b = calloc(1, sizeof *b);
    if (b) {
        b->work = calloc((size_t)max_chains, sizeof *b->work);
        b->dedup = calloc((size_t)max_chains, sizeof *b->dedup);
    }
    if (!b || !b->work || !b->dedup) {
        if (b) {
            free(b->work);
            free(b->dedup);
        }
        free(b);
        return sive_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    }
    b->m = m;
    b->data = train;
    b->max_chains = max_chains;
    b->blis_threads = blis_threads;
    /* the data size can only be set when it fits the probe's bounds; on
     * failure the probe keeps its earlier callbacks */
    int rc = sive_probe_set_int(p, SIVE_OPT_DATA_SIZE, (int64_t)n);
    if (!rc)
        rc = sive_probe_set_callbacks_f32(p, grad_cb, eval_cb, b);
    if (rc) {
        sive_mlp_binding_free(b);
        return sive_fail(NULL, rc, "%s: the probe refused the binding: %s", fn,
                         sive_probe_errmsg(p));
    }
    *out = b;
    return SIVE_OK;
}

void sive_mlp_binding_free(sive_mlp_binding *b)
{
    if (!b)
        return;
    for (int32_t c = 0; c < b->max_chains; c++) {
        sive_mlp_work_free(b->work[c]);
        dedup_release(&b->dedup[c]);
    }
    free(b->work);
    free(b->dedup);
    free(b);
}
