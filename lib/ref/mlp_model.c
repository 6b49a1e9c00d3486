/* The reference MLP as a probe model (sive.h's sive_model): gradient and
 * per-example losses on a training set.  Nothing here is privileged: it
 * uses the public MLP and model APIs, and hidden calls that set a
 * workspace's BLIS thread count and let its gradient choose it per block.
 *
 * Several BLIS threads per chain help only while every thread has a core:
 * each product ends in a barrier, so when another process takes a core
 * the whole product waits for the thread that shares it (and OpenMP's
 * spinning workers hold the core the descheduled one needs).  On 2 busy
 * cores, 1 chain x 2 BLIS threads ran 12-27x slower than with one
 * thread (docs/performance.md, section 11).  So with blis_threads > 1
 * every worker times the blocks of its gradient calls, per row, with one
 * BLIS thread and (when the load average leaves the cores) with
 * blis_threads, keeps the faster for all its calls, and re-tries the
 * other now and then since the load changes (lib/ref/thread_adapt.c: the
 * tries cost at most 2 %).  Results do not depend
 * on the BLIS thread count.  SIVE_BLIS_ADAPT=0 in the environment keeps
 * blis_threads throughout. */
#include "internal.h"
#include "mlp_impl.h"
#include "star_cache.h"
#include "thread_adapt.h"

#include <stdlib.h>
#include <string.h>

/* Worker numbers are below SIVE_OPT_THREADS' upper bound. */
#define MAX_WORKERS 1024
#define MAX_BLIS_THREADS 1024

/* A worker's workspace (made by its first callback) and its choice of
 * BLIS thread count. */
typedef struct slot {
    sive_mlp_work *w;
    sivei_adapt a;
    float *buf; /* gather buffer of the cache at theta*, made on first use */
} slot;

typedef struct mlp_model {
    sive_mlp *m; /* own copy of the architecture */
    const sive_dataset *data;
    int blis_threads;
    int adapt; /* time and choose the BLIS thread count (SIVE_BLIS_ADAPT) */
    /* slot w is only touched by worker w, whose calls never overlap: no
     * lock. */
    slot *slots[MAX_WORKERS];
    sivei_star_cache star; /* pieces at theta* (lib/ref/star_cache.h) */
} mlp_model;

static int worker_slot(mlp_model *mm, const void *theta, size_t dim,
                       const sive_batch *batch, slot **out)
{
    if (!theta || !batch || dim != sive_mlp_dim(mm->m) || !batch->index)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "mlp model: bad arguments (dim %zu, model %zu)", dim,
                         sive_mlp_dim(mm->m));
    if (batch->worker < 0 || batch->worker >= MAX_WORKERS)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "mlp model: worker %d outside [0, %d)",
                         (int)batch->worker, MAX_WORKERS);
    slot **sp = &mm->slots[batch->worker];
    if (!*sp) {
        slot *s = calloc(1, sizeof *s);
        if (!s)
            return sivei_fail(NULL, SIVE_E_NOMEM, "mlp model: out of memory");
        int rc = sive_mlp_work_new(&s->w, mm->m, 0, mm->blis_threads);
        if (rc) {
            free(s);
            return rc;
        }
        if (mm->adapt) {
            s->a.threads = mm->blis_threads;
            s->a.busy = sivei_adapt_load_busy;
            sivei_mlp_work_set_adapt(s->w, &s->a);
        }
        *sp = s;
    }
    *out = *sp;
    return SIVE_OK;
}

/* Gradient calls choose the BLIS thread count by timing, block by block
 * (thread_adapt.c, inside sive_mlp_loss_grad); loss calls, several times
 * larger, follow their choice: the two scale alike with threads
 * (docs/performance.md, section 2), and a try of the slower setting on a
 * gradient block costs a sixteenth as much.  Before both settings are
 * timed, loss calls take one thread, the safe one. */
static void use_threads(const mlp_model *mm, slot *s, int set)
{
    sivei_mlp_work_set_blis_threads(s->w, set ? mm->blis_threads : 1);
}

typedef struct fill_ctx {
    const mlp_model *mm;
    sive_mlp_work *w;
    const float *theta;
} fill_ctx;

static void fill_rows(void *ctx, const uint64_t *idx, size_t k, void *rows)
{
    const fill_ctx *f = ctx;
    sivei_mlp_pieces(f->mm->m, f->w, f->theta, f->mm->data, idx, k, rows);
}

/* The gradient from the pieces when theta is their complete theta*
 * (gradient control variates); 1 when it did, 0 to compute it plainly. */
static int star_grad(mlp_model *mm, slot *s, const float *theta, const sive_batch *b,
                     float *grad, double *loss, int *rc)
{
    const size_t n = b->n_groups * b->group_size;
    const float *rows = sivei_star_acquire(&mm->star, 0, theta, b->index, n); /* data fixed */
    if (rows && !s->buf)
        s->buf = malloc(sivei_mlp_work_rows(s->w) * sivei_mlp_piece_width(mm->m) *
                        sizeof *s->buf);
    if (rows && !s->buf)
        sivei_star_release(&mm->star);
    if (!rows || !s->buf)
        return 0;
    *rc = sivei_mlp_pieces_grad(mm->m, s->w, rows, mm->data, b->index, n, s->buf, grad,
                                loss);
    sivei_star_release(&mm->star);
    return 1;
}

static int grad_cb(const void *theta, size_t dim, const sive_batch *batch,
                   void *grad, double *loss, void *user)
{
    mlp_model *mm = user;
    slot *s = NULL;
    int rc = worker_slot(mm, theta, dim, batch, &s);
    if (rc)
        return rc;
    size_t rows = batch->n_groups * batch->group_size;
    const int pass = batch->chain == -1 && batch->step == -1;
    if (!pass && grad && star_grad(mm, s, theta, batch, grad, loss, &rc))
        return rc;
    rc = sive_mlp_loss_grad(mm->m, s->w, theta, mm->data, batch->index, rows, grad, loss);
    if (rc == SIVE_OK && pass) {
        fill_ctx f = {mm, s->w, theta};
        sivei_star_fill(&mm->star, 0, theta, batch->index, rows, fill_rows, &f);
    }
    return rc;
}

static int loss_cb(const void *theta, size_t dim, const sive_batch *batch,
                   double *losses, void *user)
{
    mlp_model *mm = user;
    slot *s = NULL;
    int rc = worker_slot(mm, theta, dim, batch, &s);
    if (rc)
        return rc;
    if (mm->adapt)
        use_threads(mm, s, s->a.seen[0] && s->a.seen[1] ? s->a.cur : 0);
    return sive_mlp_example_losses(mm->m, s->w, theta, mm->data, batch->index,
                                   batch->group_size, losses);
}

static void destroy_cb(void *user)
{
    mlp_model *mm = user;
    if (!mm)
        return;
    for (int i = 0; i < MAX_WORKERS; i++)
        if (mm->slots[i]) {
            sive_mlp_work_free(mm->slots[i]->w);
            free(mm->slots[i]->buf);
            free(mm->slots[i]);
        }
    sivei_star_free(&mm->star);
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
    if (sivei_star_init(&mm->star, sive_mlp_dim(m) * sizeof(float), sive_dataset_count(train),
                        sivei_mlp_piece_width(m) * sizeof(float))) {
        sive_mlp_free(mm->m);
        free(mm);
        return sivei_fail(NULL, SIVE_E_NOMEM, "%s: no lock for the cache", fn);
    }
    mm->data = train;
    mm->blis_threads = blis_threads;
    const char *env = getenv("SIVE_BLIS_ADAPT");
    mm->adapt = blis_threads > 1 && !(env && strcmp(env, "0") == 0);
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
