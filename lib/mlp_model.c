/* The reference MLP as a probe model (sive.h's sive_model): gradient and
 * per-example losses on a training set.  Nothing here is privileged: it
 * uses only the public MLP and model APIs. */
#include "internal.h"
#include "sive/mlp.h"

#include <stdlib.h>
#include <string.h>

/* Worker numbers are below SIVE_OPT_THREADS' upper bound. */
#define MAX_WORKERS 1024
#define MAX_BLIS_THREADS 1024

typedef struct mlp_model {
    sive_mlp *m; /* own copy of the architecture */
    const sive_dataset *data;
    int blis_threads;
    /* one workspace per worker, made by its first callback.  Slot w is
     * only touched by worker w, whose calls never overlap: no lock. */
    sive_mlp_work *work[MAX_WORKERS];
} mlp_model;

static int worker_work(mlp_model *mm, const void *theta, size_t dim,
                       const sive_batch *batch, sive_mlp_work **w)
{
    if (!theta || !batch || dim != sive_mlp_dim(mm->m) || !batch->index)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "mlp model: bad arguments (dim %zu, model %zu)", dim,
                         sive_mlp_dim(mm->m));
    if (batch->worker < 0 || batch->worker >= MAX_WORKERS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "mlp model: worker %d outside [0, %d)",
                         (int)batch->worker, MAX_WORKERS);
    sive_mlp_work **slot = &mm->work[batch->worker];
    if (!*slot) {
        int rc = sive_mlp_work_new(slot, mm->m, 0, mm->blis_threads);
        if (rc)
            return rc;
    }
    *w = *slot;
    return SIVE_OK;
}

static int grad_cb(const void *theta, size_t dim, const sive_batch *batch,
                   void *grad, double *loss, void *user)
{
    mlp_model *mm = user;
    sive_mlp_work *w = NULL;
    int rc = worker_work(mm, theta, dim, batch, &w);
    if (rc)
        return rc;
    return sive_mlp_loss_grad(mm->m, w, theta, mm->data, batch->index,
                              batch->n_groups * batch->group_size, grad, loss);
}

static int loss_cb(const void *theta, size_t dim, const sive_batch *batch,
                   double *losses, void *user)
{
    mlp_model *mm = user;
    sive_mlp_work *w = NULL;
    int rc = worker_work(mm, theta, dim, batch, &w);
    if (rc)
        return rc;
    return sive_mlp_example_losses(mm->m, w, theta, mm->data, batch->index,
                                   batch->group_size, losses);
}

static void destroy_cb(void *user)
{
    mlp_model *mm = user;
    if (!mm)
        return;
    for (int i = 0; i < MAX_WORKERS; i++)
        sive_mlp_work_free(mm->work[i]);
    sive_mlp_free(mm->m);
    free(mm);
}

/* The data set fits the network: shape, size and every label. */
static int check_data(const sive_mlp *m, const sive_dataset *train)
{
    static const char fn[] = "sive_mlp_model";
    size_t in, classes;
    sive_mlp_sizes(m, &in, NULL, NULL, &classes);
    const size_t n = sive_dataset_count(train);
    if (sive_dataset_rows(train) * sive_dataset_cols(train) != in || n == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: data set of %zu examples of %zux%zu values does "
                         "not fit a model with %zu inputs", fn, n,
                         sive_dataset_rows(train), sive_dataset_cols(train), in);
    if (sive_dataset_classes(train) > classes)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: data set has labels up to %zu, model has %zu classes",
                         fn, sive_dataset_classes(train) - 1, classes);
    return SIVE_OK;
}

/* The model's identity: the layer sizes and the data set's content (the
 * loss of an MLP at theta depends on nothing else). */
static uint64_t mlp_identity(const sive_mlp *m, const sive_dataset *train)
{
    size_t sz[4];
    sive_mlp_sizes(m, &sz[0], &sz[1], &sz[2], &sz[3]);
    uint64_t h = sive_dataset_hash(train);
    for (int i = 0; i < 4; i++)
        h = (h ^ (uint64_t)sz[i]) * 0x100000001b3ull;
    return h ? h : 1;
}

int sive_mlp_model(sive_model *out, const sive_mlp *m, const sive_dataset *train,
                   int blis_threads)
{
    static const char fn[] = "sive_mlp_model";
    if (!out || !m || !train)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    if (!sivei_model_size_ok(out->struct_size))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: call sive_model_init(out, sizeof *out) first", fn);
    if (blis_threads < 1 || blis_threads > MAX_BLIS_THREADS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: blis_threads %d not in [1, %d]",
                         fn, blis_threads, MAX_BLIS_THREADS);
    int rc = check_data(m, train);
    if (rc)
        return rc;
    mlp_model *mm = calloc(1, sizeof *mm);
    if (!mm)
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: out of memory", fn);
    size_t in, h1, h2, classes;
    sive_mlp_sizes(m, &in, &h1, &h2, &classes);
    if ((rc = sive_mlp_new(&mm->m, in, h1, h2, classes))) {
        free(mm);
        return rc;
    }
    mm->data = train;
    mm->blis_threads = blis_threads;
    out->dtype = SIVE_F32;
    out->dim = sive_mlp_dim(m);
    out->n_examples = sive_dataset_count(train);
    out->grad = grad_cb;
    out->loss = loss_cb;
    out->group_loss = NULL;
    out->user = mm;
    out->destroy = destroy_cb;
    if (out->struct_size >= offsetof(sive_model, identity) + sizeof out->identity)
        out->identity = mlp_identity(m, train);
    return SIVE_OK;
}
