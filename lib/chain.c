/* The tethered Langevin chain (DESIGN.md §2) for float32 and float64
 * parameters: index sampling, the evaluation of a step (per-group, or
 * per-example with the grouping done here), the update, worker scratch. */
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

/* The Langevin update theta' = theta - a g - k_t (theta - theta*) + k_n xi,
 * element by element exactly as the scalar expression (no contraction:
 * ISO C mode), with the squared norms of g and theta - theta* summed in
 * double over four interleaved partial sums (so they differ from a
 * sequential sum by reassociation only).  Returns non-zero when some new
 * value is not finite (x * 0 is NaN exactly for non-finite x). */
#if defined(__GNUC__)
typedef float v4f_ __attribute__((vector_size(16)));
typedef double v2d_ __attribute__((vector_size(16)));
typedef float v2f_ __attribute__((vector_size(8)));
#define SIVE_CHAIN_VECTOR 1
#else
#define SIVE_CHAIN_VECTOR 0
#endif

static int langevin_update_f32(float *restrict theta, const float *restrict star,
                               const float *restrict g, const float *restrict xi,
                               size_t d, float a, float kt, float kn,
                               double *gsum_out, double *dsum_out)
{
    size_t i = 0;
    double gsum = 0.0, dsum = 0.0;
    float bad = 0.0f;
#if SIVE_CHAIN_VECTOR
    v2d_ gs0 = {0, 0}, gs1 = {0, 0}, ds0 = {0, 0}, ds1 = {0, 0};
    v4f_ vbad = {0, 0, 0, 0};
    for (; i + 4 <= d; i += 4) {
        v4f_ th, st, gg, nz;
        memcpy(&th, theta + i, sizeof th);
        memcpy(&st, star + i, sizeof st);
        memcpy(&gg, g + i, sizeof gg);
        memcpy(&nz, xi + i, sizeof nz);
        v4f_ x = th - st;
        v4f_ nt = th - a * gg - kt * x + kn * nz;
        memcpy(theta + i, &nt, sizeof nt);
        vbad += nt * 0.0f;
        v2d_ g0 = __builtin_convertvector(((v2f_){gg[0], gg[1]}), v2d_);
        v2d_ g1 = __builtin_convertvector(((v2f_){gg[2], gg[3]}), v2d_);
        v2d_ x0 = __builtin_convertvector(((v2f_){x[0], x[1]}), v2d_);
        v2d_ x1 = __builtin_convertvector(((v2f_){x[2], x[3]}), v2d_);
        gs0 += g0 * g0;
        gs1 += g1 * g1;
        ds0 += x0 * x0;
        ds1 += x1 * x1;
    }
    gsum = (gs0[0] + gs0[1]) + (gs1[0] + gs1[1]);
    dsum = (ds0[0] + ds0[1]) + (ds1[0] + ds1[1]);
    bad = (vbad[0] + vbad[1]) + (vbad[2] + vbad[3]);
#endif
    for (; i < d; i++) {
        float x = theta[i] - star[i];
        float gi = g[i];
        float nt = theta[i] - a * gi - kt * x + kn * xi[i];
        gsum += (double)gi * gi;
        dsum += (double)x * x;
        bad += nt * 0.0f;
        theta[i] = nt;
    }
    *gsum_out = gsum;
    *dsum_out = dsum;
    return bad != 0.0f || isnan(bad);
}

static int langevin_update_f64(double *restrict theta, const double *restrict star,
                               const double *restrict g, const double *restrict xi,
                               size_t d, double a, double kt, double kn,
                               double *gsum_out, double *dsum_out)
{
    size_t i = 0;
    double gsum = 0.0, dsum = 0.0, bad = 0.0;
#if SIVE_CHAIN_VECTOR
    v2d_ gs0 = {0, 0}, gs1 = {0, 0}, ds0 = {0, 0}, ds1 = {0, 0}, vbad = {0, 0};
    for (; i + 4 <= d; i += 4) {
        v2d_ th0, th1, st0, st1, g0, g1, n0, n1;
        memcpy(&th0, theta + i, sizeof th0);
        memcpy(&th1, theta + i + 2, sizeof th1);
        memcpy(&st0, star + i, sizeof st0);
        memcpy(&st1, star + i + 2, sizeof st1);
        memcpy(&g0, g + i, sizeof g0);
        memcpy(&g1, g + i + 2, sizeof g1);
        memcpy(&n0, xi + i, sizeof n0);
        memcpy(&n1, xi + i + 2, sizeof n1);
        v2d_ x0 = th0 - st0, x1 = th1 - st1;
        v2d_ nt0 = th0 - a * g0 - kt * x0 + kn * n0;
        v2d_ nt1 = th1 - a * g1 - kt * x1 + kn * n1;
        memcpy(theta + i, &nt0, sizeof nt0);
        memcpy(theta + i + 2, &nt1, sizeof nt1);
        vbad += nt0 * 0.0 + nt1 * 0.0;
        gs0 += g0 * g0;
        gs1 += g1 * g1;
        ds0 += x0 * x0;
        ds1 += x1 * x1;
    }
    gsum = (gs0[0] + gs0[1]) + (gs1[0] + gs1[1]);
    dsum = (ds0[0] + ds0[1]) + (ds1[0] + ds1[1]);
    bad = vbad[0] + vbad[1];
#endif
    for (; i < d; i++) {
        double x = theta[i] - star[i];
        double gi = g[i];
        double nt = theta[i] - a * gi - kt * x + kn * xi[i];
        gsum += gi * gi;
        dsum += x * x;
        bad += nt * 0.0;
        theta[i] = nt;
    }
    *gsum_out = gsum;
    *dsum_out = dsum;
    return bad != 0.0 || isnan(bad);
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
    if (!ok) {
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
#define NORMALS sivei_pcg32_normals_f32
#include "chain_impl.h"
#undef REAL
#undef SFX
#undef NORMALS

#define REAL double
#define SFX f64
#define NORMALS sivei_pcg32_normals
#include "chain_impl.h"
#undef REAL
#undef SFX
#undef NORMALS
