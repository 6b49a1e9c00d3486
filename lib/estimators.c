/* SIVE and the baseline estimators of one chain, on its tail window
 * (DESIGN.md §2; definitions in docs/theory.md). */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

double *sive_tail_copy(const sive_result *r, const sive_chain_out *c,
                       sive_trace which, size_t *n)
{
    *n = 0;
    int64_t cnt = sive_tail_count(r->steps, r->tail_start, r->stride);
    double *x = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *x);
    if (!x)
        return NULL;
    const double *tr = c->trace[which];
    int64_t m = (r->tail_start + r->stride - 1) / r->stride * r->stride;
    size_t k = 0;
    for (; m < r->steps; m += r->stride)
        x[k++] = tr[m];
    *n = k;
    return x;
}

int sive_chain_estimate(const sive_result *r, sive_chain_out *c)
{
    size_t n = 0, n2 = 0;
    double *lbar = sive_tail_copy(r, c, SIVE_TRACE_LBAR, &n);
    double *s2 = sive_tail_copy(r, c, SIVE_TRACE_S2, &n2);
    if (!lbar || !s2) {
        free(lbar);
        free(s2);
        return SIVE_E_NOMEM;
    }
    const double t = r->t, N = (double)r->groups;
    double mean, var, s2_mean, s2_var, lo = INFINITY;
    sive_mean_var(lbar, n, &mean, &var);
    sive_mean_var(s2, n, &s2_mean, &s2_var);
    for (size_t i = 0; i < n; i++)
        lo = lbar[i] < lo ? lbar[i] : lo;

    double *st = c->stat;
    const double corr = t * t * s2_mean / N;
    st[SIVE_STAT_RAW_VARIANCE] = t * t * var;
    st[SIVE_STAT_SIVE_UNCLIPPED] = t * t * var - corr;
    st[SIVE_STAT_SIVE] = fmax(0.0, st[SIVE_STAT_SIVE_UNCLIPPED]);
    st[SIVE_STAT_ONLINE_MEAN] = t * (mean - lo);
    st[SIVE_STAT_ANCHORED_MEAN] = isnan(r->anchor) ? NAN : t * (mean - r->anchor);
    st[SIVE_STAT_TAIL_MEAN_LOSS] = mean;
    st[SIVE_STAT_TAIL_MIN_LOSS] = lo;
    st[SIVE_STAT_NOISE_CORRECTION] = corr;
    /* Empirical: the s2 series may be autocorrelated (noise level depends
     * on theta), so batch means rather than the iid chi-square formula. */
    st[SIVE_STAT_NOISE_CORRECTION_STD] = t * t / N * sqrt(sive_batch_means_var(s2, n));
    st[SIVE_STAT_NOISE_CORRECTION_STD_GAUSS] = corr * sqrt(2.0 / ((double)n * (N - 1.0)));

    /* MCSE of the unclipped SIVE by the delta method: the estimator is the
     * tail mean of y_m = (Lbar_m - mean)^2 n/(n-1) - s2_m/N (times t^2), so
     * its standard error is that of a mean, estimated by batch means. */
    double *y = lbar; /* reuse: Lbar is not needed after this point */
    const double scale = (double)n / ((double)n - 1.0);
    for (size_t i = 0; i < n; i++) {
        double dv = lbar[i] - mean;
        y[i] = dv * dv * scale - s2[i] / N;
    }
    st[SIVE_STAT_MCSE] = t * t * sqrt(sive_batch_means_var(y, n));
    free(s2);
    free(lbar);

    /* Geometry of the chart. */
    const double h = r->h, g0 = c->trace[SIVE_TRACE_GRAD_NORM][0];
    st[SIVE_STAT_H] = h;
    st[SIVE_STAT_TETHER_STEP] = r->eta / (h * h);
    st[SIVE_STAT_GRAD_NORM2_START] = g0 * g0;
    st[SIVE_STAT_SLOPE_PROXY] = t * t * h * h * g0 * g0;
    double dsum = 0.0;
    for (int64_t m = r->tail_start; m < r->steps; m++)
        dsum += c->trace[SIVE_TRACE_DISP][m];
    st[SIVE_STAT_RMS_DISP_REL_H] = dsum / (double)(r->steps - r->tail_start) / h;
    st[SIVE_STAT_TAIL_LENGTH] = (double)n;
    st[SIVE_STAT_RHAT] = NAN; /* a multi-chain quantity: summary only */
    return SIVE_OK;
}
