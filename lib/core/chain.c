/* The tethered Langevin chain (docs/theory.md) for float32 and float64
 * parameters: index sampling, the evaluation of a step (per-group, or
 * per-example with the grouping done here), worker scratch.  The update
 * is the sampler's (lib/core/sampler.h). */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Fill idx[0..total-1] with batches of `batch` indices in [0, n).  With
 * perm == NULL: uniform with replacement.  Otherwise each batch holds
 * distinct indices: a partial Fisher-Yates shuffle of the persistent
 * permutation perm (any permutation is a valid starting point, so it is
 * never reset between batches).  The gradient and the evaluation draws
 * each have their own permutation as well as their own stream, so that
 * neither depends on how many draws the other made. */
static void draw_indices(sivei_pcg32 *g, uint64_t *idx, size_t total,
                              size_t batch, uint64_t n, uint32_t *perm)
{
    if (!perm) {
        for (size_t j = 0; j < total; j++)
            idx[j] = sivei_pcg32_below(g, n);
        return;
    }
    for (size_t b0 = 0; b0 < total; b0 += batch) {
        for (size_t j = 0; j < batch; j++) {
            uint64_t k = j + sivei_pcg32_below(g, n - j);
            uint32_t tmp = perm[j];
            perm[j] = perm[k];
            perm[k] = tmp;
            idx[b0 + j] = perm[j];
        }
    }
}

static size_t dtype_size(sive_dtype t)
{
    return t == SIVE_F32 ? sizeof(float) : sizeof(double);
}

int sivei_work_init(sivei_work *w, sivei_run *run, int32_t worker)
{
    const sivei_options *o = &run->opt;
    const sive_model *m = &run->model;
    size_t el = dtype_size(m->dtype);
    size_t draws = (size_t)o->groups * (size_t)o->eval_batch;
    memset(w, 0, sizeof *w);
    w->run = run;
    w->worker = worker;
    w->theta = malloc(m->dim * el);
    w->grad = malloc(m->dim * el);
    w->noise = malloc((m->dim < SIVEI_NOISE_CHUNK ? m->dim : SIVEI_NOISE_CHUNK) * el);
    w->group_loss = malloc((size_t)o->groups * sizeof(double));
    int ok = w->theta && w->grad && w->noise && w->group_loss;
    if (ok && m->n_examples > 0) {
        w->eval_idx = malloc(draws * sizeof(uint64_t));
        w->grad_idx = malloc((size_t)o->grad_batch * sizeof(uint64_t));
        ok = w->eval_idx && w->grad_idx;
        if (ok && !o->replacement) {
            /* n <= 2^32 (checked by the run): every index fits 32 bits */
            w->perm_grad = malloc((size_t)m->n_examples * sizeof(uint32_t));
            w->perm_eval = malloc((size_t)m->n_examples * sizeof(uint32_t));
            ok = w->perm_grad && w->perm_eval;
        }
        if (ok && m->loss)
            ok = sivei_dedup_init(&w->dedup, m->n_examples, draws) == SIVE_OK;
        if (ok && o->control_variate && !run->cv_star) {
            size_t cap = (uint64_t)draws < m->n_examples ? draws : (size_t)m->n_examples;
            w->cv_loss = malloc(cap * sizeof *w->cv_loss);
            ok = w->cv_loss != NULL;
        }
    }
    if (!ok || sivei_samplers_work_init(w) != SIVE_OK) {
        sivei_work_release(w);
        return SIVE_E_NOMEM;
    }
    return SIVE_OK;
}

void sivei_work_release(sivei_work *w)
{
    free(w->theta);
    free(w->grad);
    free(w->noise);
    free(w->group_loss);
    free(w->eval_idx);
    free(w->grad_idx);
    free(w->perm_grad);
    free(w->perm_eval);
    sivei_dedup_release(&w->dedup);
    free(w->cv_loss);
    sivei_samplers_work_release(w);
    w->theta = w->grad = w->noise = NULL;
    w->group_loss = w->cv_loss = NULL;
    w->eval_idx = w->grad_idx = NULL;
    w->perm_grad = w->perm_eval = NULL;
}

/* Per-example model: each distinct draw evaluated once, then the group
 * means summed in draw order (the same sums as evaluating every draw).
 * With control variates the group means are of D_j = l_j - l_j(theta*);
 * the caller adds L_n(theta*) to their mean. */
static int evaluate_examples(sivei_run *run, sivei_work *w, sive_batch *b,
                             const void *theta)
{
    const size_t N = b->n_groups, B = b->group_size, draws = N * B;
    sivei_dedup *d = &w->dedup;
    size_t u = sivei_dedup_run(d, w->eval_idx, draws);
    sive_batch eb = *b;
    eb.index = d->uniq;
    eb.n_groups = 1;
    eb.group_size = u;
    int rc = run->model.loss(theta, run->model.dim, &eb, d->loss, run->model.user);
    if (!rc && run->opt.control_variate)
        rc = sivei_cv_subtract(run, w, &eb);
    if (rc)
        return rc;
    for (size_t g = 0; g < N; g++) {
        const uint32_t *wh = d->which + g * B;
        double acc = 0.0;
        for (size_t j = 0; j < B; j++)
            acc += d->loss[wh[j]];
        w->group_loss[g] = acc / (double)B;
    }
    return 0;
}

int sivei_evaluate(sivei_run *run, sivei_work *w, sivei_pcg32 *rng,
                   const void *theta, int32_t c, int64_t m)
{
    const sivei_options *o = &run->opt;
    const uint64_t n = run->model.n_examples;
    const size_t N = (size_t)o->groups, B = (size_t)o->eval_batch;
    if (n)
        draw_indices(&rng[SIVEI_STREAM_EVAL_IDX], w->eval_idx, N * B, B, n, w->perm_eval);
    sive_batch b = {.index = n ? w->eval_idx : NULL, .n_groups = N,
                    .group_size = B, .chain = c, .worker = w->worker, .step = m};
    b.seed = sivei_pcg32_next64(&rng[SIVEI_STREAM_EVAL_CB]);
    sivei_clear_error();
    if (run->model.loss)
        return evaluate_examples(run, w, &b, theta);
    return run->model.group_loss(theta, run->model.dim, &b, w->group_loss,
                                 run->model.user);
}

/* Gradient batch indices for step m (no-op without data). */
static void draw_grad_indices(sivei_run *run, sivei_work *w, sivei_pcg32 *rng)
{
    const uint64_t n = run->model.n_examples;
    const size_t B = (size_t)run->opt.grad_batch;
    if (n)
        draw_indices(&rng[SIVEI_STREAM_GRAD_IDX], w->grad_idx, B, B, n, w->perm_grad);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Progress is reported every `every` steps and at least every 0.25 s, so
 * that a cancel takes effect quickly on slow steps.  The clock is read
 * about every 20 ms of work (the stride adapts to the step's cost), so
 * fast steps do not pay for it. */
int sivei_progress_due(sivei_clock *k, int64_t m, int64_t every)
{
    if (m % every == 0 || m >= k->next_check) {
        double t = now_seconds();
        int64_t dm = m - k->check_step;
        double dt = t - k->check_time;
        int64_t stride = dt > 0.0 ? (int64_t)(0.02 * (double)dm / dt) : every;
        k->next_check = m + (stride < 1 ? 1 : stride > every ? every : stride);
        k->check_step = m;
        k->check_time = t;
        if (m % every == 0 || t - k->last_report >= 0.25) {
            k->last_report = t;
            return 1;
        }
    }
    return 0;
}

#define REAL float
#define SFX f32
#include "chain_impl.h"
#undef REAL
#undef SFX

#define REAL double
#define SFX f64
#include "chain_impl.h"
#undef REAL
#undef SFX
