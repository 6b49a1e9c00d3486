/* Adapter: the reference MLP as a client of the probe's f32 callbacks.
 * Nothing here is privileged: it uses only the public MLP and probe APIs. */
#include "internal.h"
#include "sive/mlp.h"

#include <stdlib.h>

#define MAX_CHAINS 4096
#define MAX_BLIS_THREADS 1024

struct sive_mlp_binding {
    const sive_mlp *m;
    const sive_dataset *data;
    int32_t max_chains;
    int blis_threads;
    /* one workspace per chain, made by the chain's first callback.  Slot c
     * is only touched by the thread running chain c, and a chain runs on
     * one thread from start to end, so no lock is needed. */
    sive_mlp_work **work;
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

static int eval_cb(const float *theta, size_t dim, const sive_batch *batch,
                   double *group_loss, void *user)
{
    sive_mlp_binding *b = user;
    sive_mlp_work *w = NULL;
    int rc = chain_work(b, theta, dim, batch, &w);
    if (rc)
        return rc;
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
    if (b)
        b->work = calloc((size_t)max_chains, sizeof *b->work);
    if (!b || !b->work) {
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
    for (int32_t c = 0; c < b->max_chains; c++)
        sive_mlp_work_free(b->work[c]);
    free(b->work);
    free(b);
}
