/* SIVE and the baseline estimators of one chain, on its tail window
 * (definitions: docs/theory.md, "The chain" and "Estimators"). */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

int sivei_chain_estimate(const sive_result *r, sivei_chain_out *c)
{
    size_t n = 0, n2 = 0;
    double *lbar = sivei_tail_copy(r, c, SIVE_TRACE_LBAR, &n);
    double *s2 = sivei_tail_copy(r, c, SIVE_TRACE_S2, &n2);
    if (!lbar || !s2) {
        free(lbar);
        free(s2);
        return SIVE_E_NOMEM;
    }
    const double t = r->opt.t, N = (double)r->opt.groups;
    double mean, var, s2_mean, s2_var, lo = INFINITY;
    sivei_mean_var(lbar, n, &mean, &var);
    sivei_mean_var(s2, n, &s2_mean, &s2_var);
    for (size_t i = 0; i < n; i++)
        lo = lbar[i] < lo ? lbar[i] : lo;

    double *st = c->stat;
    const double corr = t * t * s2_mean / N;
    st[SIVE_STAT_RAW_VARIANCE] = t * t * var;
    st[SIVE_STAT_SIVE_UNCLIPPED] = t * t * var - corr;
    /* fmax(0, NaN) is 0: a NaN estimate must stay NaN, not join the mean */
    st[SIVE_STAT_SIVE] = isnan(st[SIVE_STAT_SIVE_UNCLIPPED]) ? NAN
                         : fmax(0.0, st[SIVE_STAT_SIVE_UNCLIPPED]);
    st[SIVE_STAT_ONLINE_MEAN] = t * (mean - lo);
    st[SIVE_STAT_ANCHORED_MEAN] = isnan(r->opt.anchor) ? NAN : t * (mean - r->opt.anchor);
    st[SIVE_STAT_TAIL_MEAN_LOSS] = mean;
    st[SIVE_STAT_TAIL_MIN_LOSS] = lo;
    st[SIVE_STAT_NOISE_CORRECTION] = corr;
    /* Empirical: the s2 series may be autocorrelated (noise level depends
     * on theta), so batch means rather than the iid chi-square formula. */
    st[SIVE_STAT_NOISE_CORRECTION_STD] = t * t / N * sqrt(sivei_batch_means_var(s2, n));
    st[SIVE_STAT_NOISE_CORRECTION_STD_GAUSS] = corr * sqrt(2.0 / ((double)n * (N - 1.0)));

    /* MCSE and SIVE_ESS pool the chains of the run: diagnostics.c */
    free(s2);
    free(lbar);

    /* Geometry of the chart. */
    const double h = r->h, g0 = c->trace[SIVE_TRACE_GRAD_NORM][0];
    st[SIVE_STAT_H] = h;
    st[SIVE_STAT_TETHER_STEP] = r->eta / (h * h);
    st[SIVE_STAT_GRAD_NORM2_START] = g0 * g0;
    st[SIVE_STAT_SLOPE_PROXY] = t * t * h * h * g0 * g0;
    double dsum = 0.0;
    const int64_t first = sivei_tail_first(&r->opt);
    for (int64_t m = first; m < r->opt.steps; m++)
        dsum += c->trace[SIVE_TRACE_DISP][m];
    st[SIVE_STAT_RMS_DISP_REL_H] = dsum / (double)(r->opt.steps - first) / h;
    st[SIVE_STAT_TAIL_LENGTH] = (double)n;
    st[SIVE_STAT_STEP_CURVATURE] = sivei_step_curvature(r, c);
    st[SIVE_STAT_RHAT] = NAN; /* a multi-chain quantity: summary only */
    return SIVE_OK;
}
