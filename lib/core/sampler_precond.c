/* Frozen diagonal preconditioner (SIVE_OPT_PRECONDITION; docs/theory.md
 * "Frozen preconditioner"), RMSProp-style.  Over the first half of its
 * burn-in, m < floor(alpha M)/2, a chain steps plainly and accumulates
 * r_i^2 = mean of g_i^2; then it freezes
 *   P_i = min(P_MAX, c / r_i),  c = sum_k r_k^2 / sum_k r_k
 * (P = 1 if sum r is 0 or not finite; see freeze()) and steps with
 *   theta' = theta - P (a g + k_t (theta - theta*)) + sqrt(P) k_n xi.
 * A constant P keeps exp(-t L_n - tether) stationary for the continuous
 * dynamics, so no drift correction is needed; the second half of the
 * burn-in lets the chain settle under P.  Each chain learns its own P
 * (chains stay independent: results merge bit for bit). */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define P_MAX 10.0

typedef sivei_precond precond_work;

static int precond_active(const sivei_options *o) { return o->precondition != 0; }

/* Plain steps until m_freeze, the preconditioner's estimation window. */
static int64_t freeze_step(const sivei_options *o)
{
    return (int64_t)floor(o->burn_in * (double)o->steps) / 2;
}

static int precond_prepare(sivei_run *run, void **state, char *err)
{
    (void)state;
    if (freeze_step(&run->opt) < 1)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "the preconditioner (SIVE_OPT_PRECONDITION) is estimated in the "
                         "first half of the burn-in: floor(burn_in*steps) = %lld is below 2",
                         (long long)floor(run->opt.burn_in * (double)run->opt.steps));
    return SIVE_OK;
}

static void precond_work_release(void *state)
{
    precond_work *s = state;
    if (s) {
        free(s->v);
        free(s->p);
        free(s->sp);
    }
    free(s);
}

static int precond_work_init(sivei_work *w, void **state)
{
    const size_t d = w->run->model.dim;
    precond_work *s = calloc(1, sizeof *s);
    if (s) {
        s->v = malloc(d * sizeof *s->v);
        s->p = malloc(d * sizeof *s->p);
        s->sp = malloc(d * sizeof *s->sp);
    }
    *state = s;
    return s && s->v && s->p && s->sp ? SIVE_OK : SIVE_E_NOMEM;
}

static void precond_chain_start(sivei_work *w, void *state, int32_t c)
{
    (void)c;
    precond_work *s = state;
    memset(s->v, 0, w->run->model.dim * sizeof *s->v);
    s->seen = 0;
    s->frozen = 0;
}

void sivei_precond_observe(const sivei_run *run, sivei_precond *s, const void *grad)
{
    for (size_t i = 0; i < run->model.dim; i++) {
        double g = sivei_sampler_val(run, grad, i);
        s->v[i] += g * g;
    }
    s->seen++;
}

/* P from the root mean squared gradients r_i of the moved parameters, in
 * coordinate order: P_i = c / max(r_i, c / P_MAX) with c = sum r^2 / sum r,
 * so that the g^2-weighted mean of P, sum P_i r_i^2 / sum r_i^2, is 1 (less
 * where clipped): the step along the gradient, and the total mini-batch
 * heating a t tr(P Sigma)/(2B), stay the plain chain's, and coordinates that
 * see no gradient (dead inputs, dead units) do not shrink the others' P.
 * P = 1 when sum r is 0 or not finite. */
void sivei_precond_freeze(const sivei_run *run, sivei_precond *s)
{
    double sr = 0.0, sr2 = 0.0;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i = b; i < e; i++) {
            double v = s->v[i] / (double)s->seen;
            sr += sqrt(v);
            sr2 += v;
        }
    }
    const double c = sr2 / sr;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i = b; i < e; i++) {
            double r = sqrt(s->v[i] / (double)s->seen);
            double p = sr > 0.0 && isfinite(c) ? c / fmax(r, c / P_MAX) : 1.0;
            s->p[i] = p;
            s->sp[i] = sqrt(p);
        }
    }
    s->frozen = 1;
}

static int precond_update(sivei_run *run, sivei_work *w, const precond_work *s,
                          sivei_pcg32 *noise, double *gnorm, double *disp)
{
    const int f32 = run->model.dtype == SIVE_F32;
    const double a = run->opt.base_lr, kt = w->eta_step / (run->h * run->h);
    const double kn = sqrt(2.0 * w->eta_step);
    double gsum = 0.0, dsum = 0.0;
    int bad = 0;
    sivei_chunks it = sivei_chunks_start(run);
    while (sivei_chunks_next(&it, noise, w->noise)) {
        for (size_t j = 0; j < it.nb; j++) {
            size_t i = it.i0 + j;
            double th = sivei_sampler_val(run, w->theta, i);
            double x = th - sivei_sampler_val(run, run->theta_star, i);
            double g = sivei_sampler_val(run, w->grad, i);
            double xi = sivei_sampler_val(run, w->noise, j);
            double nt = sivei_precond_drift(th, x, g, s->p[i], a, kt) + s->sp[i] * kn * xi;
            gsum += g * g;
            dsum += x * x;
            if (f32)
                ((float *)w->theta)[i] = (float)nt;
            else
                ((double *)w->theta)[i] = nt;
            bad |= !isfinite(nt);
        }
    }
    *gnorm = sqrt(gsum);
    *disp = sqrt(dsum * (1.0 / (double)run->moved));
    return !isfinite(gsum) || bad;
}

static int precond_step(sivei_run *run, sivei_work *w, void *rs, void *ws,
                        sivei_pcg32 *noise, int64_t m, double *gnorm, double *disp)
{
    precond_work *s = ws;
    if (!s->frozen && m < freeze_step(&run->opt)) {
        sivei_precond_observe(run, s, w->grad);
        return sivei_sgld_step(run, w, rs, NULL, noise, m, gnorm, disp);
    }
    if (!s->frozen)
        sivei_precond_freeze(run, s);
    return precond_update(run, w, s, noise, gnorm, disp);
}

const sivei_sampler sivei_sampler_precond = {
    .name = "precondition",
    .active = precond_active,
    .prepare = precond_prepare,
    .work_init = precond_work_init,
    .work_release = precond_work_release,
    .chain_start = precond_chain_start,
    .step = precond_step,
};

sivei_precond *sivei_precond_of(const sivei_work *w)
{
    for (int k = 0; sivei_sampler_at(k); k++)
        if (sivei_sampler_at(k) == &sivei_sampler_precond && ((w->run->sampler_on >> k) & 1u))
            return w->sampler_state[k];
    return NULL;
}
