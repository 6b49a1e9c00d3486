/* Gradient control variates (SIVE_OPT_GRAD_CONTROL_VARIATE; docs/theory.md
 * "Gradient control variates"), SVRG-style: the chain steps with
 *   g = grad l_B(theta) - grad l_B(theta*) + grad L_n(theta*),
 * an unbiased estimate of grad L_n(theta) whose noise is that of
 * grad l_B(theta) - grad l_B(theta*), small while theta stays near theta*.
 * grad L_n(theta*) is one pass over the data before the chains (the run's
 * state); grad l_B(theta*) is the model's gradient callback at theta* on the
 * step's own batch (the worker's scratch). */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN 4096

typedef struct gcv_run {
    void *full; /* grad L_n(theta*), dim values of the model's dtype */
} gcv_run;

static int gcv_active(const sivei_options *o) { return o->grad_control_variate != 0; }

/* acc += k * g (g: dim values of the model's dtype). */
static void accumulate(const sive_model *m, double *acc, const void *g, double k)
{
    for (size_t i = 0; i < m->dim; i++)
        acc[i] += k * (m->dtype == SIVE_F32 ? (double)((const float *)g)[i]
                                            : ((const double *)g)[i]);
}

/* The mean gradient over examples [i0, i0+k) at theta* into g; a callback
 * error or a cancel is recorded in run (non-zero returned). */
static int star_chunk(sivei_run *run, uint64_t i0, size_t k, uint64_t *idx, void *g,
                      sivei_pcg32 *seeds)
{
    for (size_t j = 0; j < k; j++)
        idx[j] = i0 + j;
    sive_batch b = {.index = idx, .n_groups = 1, .group_size = k,
                    .seed = sivei_pcg32_next64(seeds), .chain = -1, .worker = 0,
                    .step = -1};
    double loss = NAN;
    sivei_clear_error();
    int rc = run->model.grad(run->theta_star, run->model.dim, &b, g, &loss, run->model.user);
    if (rc) {
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "gradient callback returned %d at theta* (gradient control "
                       "variates, examples %llu..%llu)", rc, (unsigned long long)i0,
                       (unsigned long long)(i0 + k - 1));
        return rc;
    }
    uint64_t done = i0 + k, n = run->model.n_examples;
    int pr = run->progress ? run->progress(-1, (int64_t)done, (int64_t)n, run->progress_user) : 0;
    if (pr) {
        sivei_run_fail(run, SIVE_E_CANCELLED, 0,
                       "cancelled by the progress callback (code %d) in the gradient pass "
                       "at theta*", pr);
        return pr;
    }
    return 0;
}

/* grad L_n(theta*) = sum over chunks of (k/n) * (mean gradient of the
 * chunk), summed in double in example order, stored in the model's dtype. */
static int full_gradient(sivei_run *run, gcv_run *s, char *err)
{
    const sive_model *m = &run->model;
    const uint64_t n = m->n_examples;
    size_t chunk = (size_t)(run->opt.grad_batch > CHUNK_MIN ? run->opt.grad_batch : CHUNK_MIN);
    if (chunk > n)
        chunk = (size_t)n;
    double *acc = calloc(m->dim, sizeof *acc);
    uint64_t *idx = malloc(chunk * sizeof *idx);
    void *g = calloc(m->dim, sivei_model_el(m));
    int rc = acc && idx && g ? SIVE_OK
                             : sivei_fail(err, SIVE_E_NOMEM, "out of memory for the "
                                          "gradient control variates' pass at theta*");
    sivei_pcg32 seeds;
    sivei_pcg32_stream(&seeds, run->opt.seed, UINT64_MAX, 1);
    for (uint64_t i0 = 0; i0 < n && !rc && !run->status; i0 += chunk) {
        size_t k = (size_t)(n - i0 < chunk ? n - i0 : chunk);
        if (!star_chunk(run, i0, k, idx, g, &seeds))
            accumulate(m, acc, g, (double)k / (double)n);
    }
    for (size_t i = 0; i < m->dim && !rc && !run->status; i++) {
        if (!isfinite(acc[i]))
            rc = sivei_fail(err, SIVE_E_INVALID_ARG,
                            "gradient at theta* is %g in coordinate %zu (gradient control "
                            "variates need a finite gradient at theta*)", acc[i], i);
        else if (m->dtype == SIVE_F32)
            ((float *)s->full)[i] = (float)acc[i];
        else
            ((double *)s->full)[i] = acc[i];
    }
    free(acc);
    free(idx);
    free(g);
    return rc;
}

static void gcv_release(sivei_run *run, void *state)
{
    (void)run;
    gcv_run *s = state;
    if (s)
        free(s->full);
    free(s);
}

static int gcv_prepare(sivei_run *run, void **state, char *err)
{
    if (run->model.n_examples == 0)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "gradient control variates (SIVE_OPT_GRAD_CONTROL_VARIATE) need a "
                         "data set: this model has n_examples 0");
    gcv_run *s = calloc(1, sizeof *s);
    if (s)
        s->full = malloc(run->model.dim * sivei_model_el(&run->model));
    if (!s || !s->full) {
        gcv_release(run, s);
        return sivei_fail(err, SIVE_E_NOMEM,
                         "out of memory for the gradient at theta* (%zu parameters)",
                         run->model.dim);
    }
    int rc = full_gradient(run, s, err);
    if (rc) {
        gcv_release(run, s);
        return rc;
    }
    *state = s;
    return SIVE_OK;
}

/* Per worker: grad l_B(theta*) of the current step. */
static int gcv_work_init(sivei_work *w, void **state)
{
    *state = malloc(w->run->model.dim * sivei_model_el(&w->run->model));
    return *state ? SIVE_OK : SIVE_E_NOMEM;
}

static void gcv_work_release(void *state) { free(state); }

/* Like w->grad, the scratch starts each chain at zero (for callbacks that
 * leave entries unwritten). */
static void gcv_chain_start(sivei_work *w, void *state, int32_t c)
{
    (void)c;
    memset(state, 0, w->run->model.dim * sivei_model_el(&w->run->model));
}

static int gcv_gradient(sivei_run *run, sivei_work *w, void *rs, void *state,
                        const sive_batch *gb)
{
    const gcv_run *s = rs;
    double loss = NAN;
    sivei_clear_error();
    int rc = run->model.grad(run->theta_star, run->model.dim, gb, state, &loss,
                             run->model.user);
    if (rc)
        return rc;
    const size_t d = run->model.dim;
    if (run->model.dtype == SIVE_F32) {
        float *g = w->grad;
        const float *gs = state, *full = s->full;
        for (size_t i = 0; i < d; i++)
            g[i] = (g[i] - gs[i]) + full[i];
    } else {
        double *g = w->grad;
        const double *gs = state, *full = s->full;
        for (size_t i = 0; i < d; i++)
            g[i] = (g[i] - gs[i]) + full[i];
    }
    return 0;
}

const void *sivei_gcv_full_gradient(const sivei_run *run)
{
    for (int k = 0; sivei_sampler_at(k); k++)
        if (sivei_sampler_at(k) == &sivei_sampler_gcv && ((run->sampler_on >> k) & 1u) &&
            run->sampler_state[k])
            return ((const gcv_run *)run->sampler_state[k])->full;
    return NULL;
}

const sivei_sampler sivei_sampler_gcv = {
    .name = "grad_control_variate",
    .active = gcv_active,
    .prepare = gcv_prepare,
    .release = gcv_release,
    .work_init = gcv_work_init,
    .work_release = gcv_work_release,
    .chain_start = gcv_chain_start,
    .gradient = gcv_gradient,
};
