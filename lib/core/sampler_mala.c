/* Metropolis-adjusted Langevin (SIVE_OPT_METROPOLIS; docs/theory.md
 * "Metropolis-adjusted step").  With U = t L + ||theta - theta*||^2/(2 h^2)
 * and eta = a/t, the Langevin move
 *   theta' = mu(theta) + sqrt(2 eta) xi,  mu(x) = x - eta grad U(x)
 * is a proposal, accepted with probability min(1, exp(log_alpha)),
 *   log_alpha = U(theta) - U(theta') - |theta - mu(theta')|^2/(4 eta)
 *                                    + |theta' - mu(theta)|^2/(4 eta),
 * so exp(-U) is the chain's stationary law exactly, at any step.  The
 * gradient and loss at an accepted proposal are kept for the next step
 * (the chain then makes no gradient call of its own: one call per step).
 * Each chain adapts its step a (from base_lr) by Robbins-Monro on log a
 * toward an acceptance probability of 0.574 over the first half of the
 * burn-in, then freezes it at the mean of log a over that window's second
 * half: the tail is a time-homogeneous chain with the exact law. */
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_ACCEPT 0.574 /* MALA's optimal rate (Roberts & Rosenthal 1998) */
#define STEP_RANGE 1e4      /* the step stays in [base_lr, base_lr] * RANGE^(-1, 1) */

typedef struct mala_run {
    double *accept, *step; /* per chain of the run's range: tail rate, frozen a */
    int32_t begin, count;
    uint64_t *all;         /* 0 .. n-1: the whole data set (data models) */
} mala_run;

typedef struct mala_work {
    void *prop, *gprop; /* the proposal and its gradient (dim, model dtype) */
    double loss;        /* the exact loss at w->theta, when have           */
    int have;           /* w->grad and loss belong to w->theta             */
    int32_t chain;
    double a, log_a, log_a_sum;
    int64_t n_sum, tries, accepted;
} mala_work;

static int mala_active(const sivei_options *o) { return o->metropolis != 0; }

static int64_t adapt_end(const sivei_options *o)
{
    return (int64_t)floor(o->burn_in * (double)o->steps) / 2;
}

/* The exact loss at theta (and its gradient into grad) from the model's
 * gradient callback on the whole data set. */
static int exact_grad(const sivei_run *run, const mala_run *s, const void *theta,
                      void *grad, double *loss, int32_t c, int32_t worker, int64_t m,
                      uint64_t seed)
{
    const uint64_t n = run->model.n_examples;
    sive_batch gb = {.index = n ? s->all : NULL, .n_groups = 1,
                     .group_size = n ? (size_t)n : (size_t)run->opt.grad_batch,
                     .seed = seed, .chain = c, .worker = worker, .step = m};
    *loss = NAN;
    sivei_clear_error();
    return run->model.grad(theta, run->model.dim, &gb, grad, loss, run->model.user);
}

static int refuse(const sivei_run *run, char *err)
{
    const sivei_options *o = &run->opt;
    if (o->grad_control_variate || o->precondition)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis steps with the exact gradient and an identity "
                         "preconditioner: not with %s",
                         o->precondition ? "precondition" : "grad_control_variate");
    /* no step bias is left to extrapolate, and the run at base_lr/2 would
     * adapt its step to the same place */
    if (o->step_extrapolate)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis has no step bias to extrapolate: not with "
                         "step_extrapolate");
    const uint64_t n = run->model.n_examples;
    if (n && ((uint64_t)o->grad_batch != n || o->replacement))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis needs the exact loss: with a data set, grad_batch = "
                         "n_examples (%llu) and replacement 0 (got grad_batch %lld, "
                         "replacement %lld)",
                         (unsigned long long)n, (long long)o->grad_batch,
                         (long long)o->replacement);
    if (adapt_end(o) < 2)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis adapts its step in the first half of the burn-in: "
                         "floor(burn_in*steps)/2 is below 2");
    return SIVE_OK;
}

static void mala_release(sivei_run *run, void *state)
{
    (void)run;
    mala_run *s = state;
    if (s) {
        free(s->accept);
        free(s->step);
        free(s->all);
    }
    free(s);
}

/* Checks, the run's tables, and the loss at theta* (which must be given). */
static int mala_prepare(sivei_run *run, void **state, char *err)
{
    int rc = refuse(run, err);
    if (rc)
        return rc;
    const uint64_t n = run->model.n_examples;
    const size_t el = sivei_model_el(&run->model);
    mala_run *s = calloc(1, sizeof *s);
    void *g = malloc(run->model.dim * el);
    *state = s;
    if (s) {
        s->begin = run->r->begin;
        s->count = run->r->end - run->r->begin;
        s->accept = malloc((size_t)s->count * sizeof *s->accept);
        s->step = malloc((size_t)s->count * sizeof *s->step);
        s->all = n ? malloc((size_t)n * sizeof *s->all) : NULL;
    }
    if (!s || !g || !s->accept || !s->step || (n && !s->all)) {
        free(g);
        return sivei_fail(err, SIVE_E_NOMEM, "out of memory for the metropolis sampler");
    }
    for (uint64_t i = 0; i < n; i++)
        s->all[i] = i;
    for (int32_t i = 0; i < s->count; i++)
        s->accept[i] = s->step[i] = NAN;
    memset(g, 0, run->model.dim * el);
    double loss;
    rc = exact_grad(run, s, run->theta_star, g, &loss, -1, 0, -1, 0);
    free(g);
    if (rc) {
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "gradient callback returned %d at theta* (metropolis' check)", rc);
        return SIVE_OK;
    }
    if (!isfinite(loss))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis needs the exact loss: the gradient callback stored no "
                         "finite loss in *loss at theta*");
    return SIVE_OK;
}

static void mala_work_release(void *state)
{
    mala_work *s = state;
    if (s) {
        free(s->prop);
        free(s->gprop);
    }
    free(s);
}

static int mala_work_init(sivei_work *w, void **state)
{
    const sivei_run *run = w->run;
    const size_t el = sivei_model_el(&run->model);
    mala_work *s = calloc(1, sizeof *s);
    if (s) {
        s->prop = malloc(run->model.dim * el);
        s->gprop = calloc(run->model.dim, el);
    }
    *state = s;
    return s && s->prop && s->gprop ? SIVE_OK : SIVE_E_NOMEM;
}

/* w->theta is theta* here: the proposal buffer starts as its copy, so the
 * parameters the chain does not move hold theta*'s values in both. */
static void mala_chain_start(sivei_work *w, void *state, int32_t c)
{
    mala_work *s = state;
    const sivei_run *run = w->run;
    const size_t el = sivei_model_el(&run->model);
    memcpy(s->prop, w->theta, run->model.dim * el);
    s->have = 0;
    s->chain = c;
    s->a = run->opt.mala_step > 0.0 ? run->opt.mala_step : run->opt.base_lr;
    s->log_a = log(s->a);
    s->log_a_sum = 0.0;
    s->n_sum = s->tries = s->accepted = 0;
}

static int mala_cached(sivei_work *w, void *ws, double *loss)
{
    (void)w;
    const mala_work *s = ws;
    if (s->have)
        *loss = s->loss;
    return s->have;
}

/* Sums over the moved parameters that the proposal and its acceptance
 * need: |g|^2, |theta - theta*|^2, |theta' - mu(theta)|^2. */
typedef struct sums {
    double g2, r2, fwd;
} sums;

/* theta' = mu(theta) + sqrt(2 eta) xi into s->prop. */
static sums propose(const sivei_run *run, sivei_work *w, mala_work *s, sivei_pcg32 *noise)
{
    const int f32 = run->model.dtype == SIVE_F32;
    const double a = s->a, eta = a / run->opt.t, kt = eta / (run->h * run->h);
    const double kn = sqrt(2.0 * eta);
    sums q = {0.0, 0.0, 0.0};
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i0 = b; i0 < e; i0 += SIVEI_NOISE_CHUNK) {
            size_t nb = e - i0 < SIVEI_NOISE_CHUNK ? e - i0 : SIVEI_NOISE_CHUNK;
            sivei_sampler_normals(run, noise, w->noise, nb);
            for (size_t j = 0; j < nb; j++) {
                size_t i = i0 + j;
                double th = sivei_sampler_val(run, w->theta, i);
                double x = th - sivei_sampler_val(run, run->theta_star, i);
                double g = sivei_sampler_val(run, w->grad, i);
                double xi = sivei_sampler_val(run, w->noise, j);
                double mu = th - a * g - kt * x, p = mu + kn * xi;
                if (f32)
                    ((float *)s->prop)[i] = (float)p;
                else
                    ((double *)s->prop)[i] = p;
                p = sivei_sampler_val(run, s->prop, i) - mu; /* as stored */
                q.g2 += g * g;
                q.r2 += x * x;
                q.fwd += p * p;
            }
        }
    }
    return q;
}

/* log_alpha of the proposal in s->prop (gradient s->gprop, loss lp), or
 * -inf when the loss or the gradient there is not finite. */
static double log_alpha(const sivei_run *run, const sivei_work *w, const mala_work *s,
                        const sums *q, double lp)
{
    const double a = s->a, t = run->opt.t, eta = a / t, kt = eta / (run->h * run->h);
    double r2p = 0.0, bwd = 0.0;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i = b; i < e; i++) {
            double p = sivei_sampler_val(run, s->prop, i);
            double x = p - sivei_sampler_val(run, run->theta_star, i);
            double mu = p - a * sivei_sampler_val(run, s->gprop, i) - kt * x;
            double back = sivei_sampler_val(run, w->theta, i) - mu;
            r2p += x * x;
            bwd += back * back;
        }
    }
    double la = -t * (lp - s->loss) - (r2p - q->r2) / (2.0 * run->h * run->h) +
                (q->fwd - bwd) / (4.0 * eta);
    return isfinite(lp) && isfinite(la) ? la : -INFINITY;
}

static void swap(void **x, void **y)
{
    void *t = *x;
    *x = *y;
    *y = t;
}

/* Robbins-Monro on log a toward TARGET_ACCEPT in m < adapt_end; frozen
 * at the mean log a of the window's second half. */
static void adapt(const sivei_run *run, mala_work *s, int64_t m, double la)
{
    const int64_t end = adapt_end(&run->opt);
    if (m >= end || run->opt.mala_step > 0.0) /* a step given: not adapted */
        return;
    const double p = la >= 0.0 ? 1.0 : exp(la), lo = log(run->opt.base_lr);
    s->log_a += 0.5 * pow(1.0 + (double)m / 20.0, -0.6) * (p - TARGET_ACCEPT);
    s->log_a = fmin(fmax(s->log_a, lo - log(STEP_RANGE)), lo + log(STEP_RANGE));
    if (m >= end / 2) {
        s->log_a_sum += s->log_a;
        s->n_sum++;
    }
    s->a = m + 1 == end ? exp(s->log_a_sum / (double)s->n_sum) : exp(s->log_a);
}

static int mala_step(sivei_run *run, sivei_work *w, void *rs, void *ws, sivei_pcg32 *noise,
                     int64_t m, double *gnorm, double *disp)
{
    mala_run *r = rs;
    mala_work *s = ws;
    sivei_chain_out *out = sivei_chain(run->r, s->chain);
    if (!s->have) { /* the chain's own call at theta_0 */
        s->loss = out->trace[SIVE_TRACE_GRAD_LOSS][m];
        s->have = 1;
    }
    sums q = propose(run, w, s, noise);
    *gnorm = sqrt(q.g2);
    *disp = sqrt(q.r2 * (1.0 / (double)run->moved));
    if (!isfinite(s->loss) || !isfinite(q.g2))
        return 1;
    double lp;
    int rc = exact_grad(run, r, s->prop, s->gprop, &lp, s->chain, w->worker, m,
                        sivei_pcg32_next64(noise));
    if (rc) {
        out->status = SIVE_CHAIN_CALLBACK;
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "gradient callback returned %d at chain %d step %lld (proposal)", rc,
                       (int)s->chain, (long long)m);
        return 1;
    }
    const double la = log_alpha(run, w, s, &q, lp);
    const double u = (double)(sivei_pcg32_next64(noise) >> 11) * 0x1p-53;
    const int acc = log(u) < la;
    if (acc) {
        swap(&w->theta, &s->prop);
        swap(&w->grad, &s->gprop);
        s->loss = lp;
    }
    adapt(run, s, m, la);
    if (m >= (int64_t)floor(run->opt.burn_in * (double)run->opt.steps)) {
        s->tries++;
        s->accepted += acc;
    }
    if (m + 1 == run->opt.steps) {
        r->accept[s->chain - r->begin] = (double)s->accepted / (double)s->tries;
        r->step[s->chain - r->begin] = s->a;
    }
    return 0;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The tail's acceptance rate and the frozen steps, over the chains that
 * finished, into the health text. */
static int mala_note(sivei_run *run, void *state, sive_result *res)
{
    (void)run;
    mala_run *s = state;
    double acc = 0.0;
    int32_t k = 0;
    for (int32_t i = 0; i < s->count; i++)
        if (isfinite(s->accept[i])) {
            acc += s->accept[i];
            s->step[k++] = s->step[i];
        }
    if (k == 0)
        return SIVE_OK;
    qsort(s->step, (size_t)k, sizeof *s->step, cmp);
    res->mala_step = s->step[k / 2];
    res->mala_accept = acc / k;
    char line[256];
    snprintf(line, sizeof line,
             "metropolis: tail acceptance %.3f (mean over %d chains); steps adapted in the "
             "burn-in: median a = %.4g (%.4g .. %.4g; base_lr %g)\n",
             acc / k, (int)k, s->step[k / 2], s->step[0], s->step[k - 1],
             run->opt.base_lr);
    return sivei_health_append(res, line);
}

const sivei_sampler sivei_sampler_mala = {
    .name = "metropolis",
    .active = mala_active,
    .prepare = mala_prepare,
    .release = mala_release,
    .work_init = mala_work_init,
    .work_release = mala_work_release,
    .chain_start = mala_chain_start,
    .step = mala_step,
    .cached = mala_cached,
    .note = mala_note,
};
