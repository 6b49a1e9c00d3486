/* Diagnostics of the localisation and of the step (docs/theory.md,
 * "Localisation and step"): d lambda / d ln h from the chain's own
 * covariance of the SIVE influence series with ||theta - theta*||^2, and
 * the step-curvature product a t mean ||g||^2.  Read by health.c's
 * radius_bound and step_bias flags. */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

/* The influence series of t^2 Cov_T(y, R/h^2), R = ||theta - theta*||^2 =
 * d disp^2, of chains ids[] of r, one at a time: its mean is the
 * estimate (the sample covariance, ddof 1). */
typedef struct sens_src {
    const sive_result *r;
    const int32_t *ids;
    double *w;
    int failed;
} sens_src;

static const double *sens_of(void *ctx, size_t k)
{
    sens_src *s = ctx;
    const sive_result *r = s->r;
    const sivei_chain_out *ch = sivei_chain(r, s->ids[k]);
    size_t n = 0, n2 = 0, n3 = 0;
    double *lbar = sivei_tail_copy(r, ch, SIVE_TRACE_LBAR, &n);
    double *s2 = sivei_tail_copy(r, ch, SIVE_TRACE_S2, &n2);
    double *disp = sivei_tail_copy(r, ch, SIVE_TRACE_DISP, &n3);
    const double *out = NULL;
    if (lbar && s2 && disp && n > 1) {
        const double scale = (double)r->moved / (r->h * r->h), t2 = r->opt.t * r->opt.t;
        sivei_sive_influence(lbar, s2, n, (double)r->opt.groups, s->w);
        double ym, rm;
        for (size_t i = 0; i < n; i++)
            disp[i] = scale * disp[i] * disp[i];
        sivei_mean_var(s->w, n, &ym, NULL);
        sivei_mean_var(disp, n, &rm, NULL);
        const double f = t2 * (double)n / (double)(n - 1);
        for (size_t i = 0; i < n; i++)
            s->w[i] = f * (s->w[i] - ym) * (disp[i] - rm);
        out = s->w;
    }
    free(lbar);
    free(s2);
    free(disp);
    return out;
}

int sivei_radius_sensitivity(sive_result *r, const int32_t *ids, size_t k)
{
    const size_t n = (size_t)sivei_tail_count(&r->opt);
    sens_src src = {r, ids, malloc(n * sizeof(double)), 0};
    double *v = malloc(k * sizeof *v);
    int rc = src.w && v ? SIVE_OK : SIVE_E_NOMEM;
    if (rc == SIVE_OK)
        rc = sivei_var_of_mean_pooled(sens_of, &src, k, n, v, NULL);
    for (size_t c = 0; c < k && rc == SIVE_OK; c++) {
        const double *w = sens_of(&src, c);
        if (!w) {
            rc = SIVE_E_NOMEM;
            break;
        }
        double mean;
        sivei_mean_var(w, n, &mean, NULL);
        sivei_chain(r, ids[c])->stat[SIVE_STAT_DLAMBDA_DLOG_H] = mean;
        sivei_chain(r, ids[c])->stat[SIVE_STAT_DLAMBDA_DLOG_H_SE] = sqrt(v[c]);
    }
    free(src.w);
    free(v);
    return rc;
}

double sivei_step_curvature(const sive_result *r, const sivei_chain_out *c)
{
    const int64_t first = sivei_tail_first(&r->opt);
    const double *g = c->trace[SIVE_TRACE_GRAD_NORM];
    double s = 0.0;
    for (int64_t m = first; m < r->opt.steps; m++)
        s += g[m] * g[m];
    return r->opt.base_lr * r->opt.t * s / (double)(r->opt.steps - first);
}

static int cmp_desc(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

double sivei_spike_share(const sive_result *r, const sivei_chain_out *c, sive_trace which,
                         int sq, double frac)
{
    size_t n = 0;
    double *x = sivei_tail_copy(r, c, which, &n);
    if (!x)
        return -1.0;
    double share = NAN;
    if (n >= 16) {
        double mean;
        if (sq)
            for (size_t i = 0; i < n; i++)
                x[i] *= x[i];
        sivei_mean_var(x, n, &mean, NULL);
        double total = 0.0;
        for (size_t i = 0; i < n; i++) {
            x[i] = (x[i] - mean) * (x[i] - mean);
            total += x[i];
        }
        size_t k = (size_t)(frac * (double)n);
        k = k < 1 ? 1 : k;
        qsort(x, n, sizeof *x, cmp_desc);
        double top = 0.0;
        for (size_t i = 0; i < k; i++)
            top += x[i];
        share = total > 0.0 ? top / total : 0.0;
    }
    free(x);
    return share;
}

double sivei_disp_growth(const sive_result *r, const sivei_chain_out *c)
{
    /* the evaluated tail steps (sivei_tail_copy's), read in place: no
     * allocation, so no failure for health.c's chart flag to misread */
    const int64_t k = r->opt.eval_stride;
    const int64_t m0 = (sivei_tail_first(&r->opt) + k - 1) / k * k;
    const size_t n = m0 < r->opt.steps ? (size_t)((r->opt.steps - 1 - m0) / k + 1) : 0;
    const double *tr = c->trace[SIVE_TRACE_DISP];
    const size_t q = n / 4;
    if (q < 4)
        return NAN;
    double first = 0.0, last = 0.0;
    for (size_t i = 0; i < q; i++) {
        first += tr[m0 + (int64_t)i * k];
        last += tr[m0 + (int64_t)(n - q + i) * k];
    }
    return first > 0.0 ? last / first : NAN;
}
