/* Step bias removed (SIVE_OPT_STEP_EXTRAPOLATE; docs/theory.md, "Step
 * bias"): ULA's stationary law differs from the tethered law by O(a), so
 * lambda(a) = lambda_0 + c a + O(a^2) and 2 lambda(a/2) - lambda(a) =
 * lambda_0 + O(a^2) (Richardson).  Chain c at a and chain c at a/2 draw
 * from the same streams, so their estimates are correlated; the MCSE
 * comes from the paired influence series w = 2 y(a/2) - y(a), whose tail
 * mean is the extrapolated estimate over t^2. */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

typedef struct pair_src {
    const sive_result *coarse, *fine;
    const int32_t *ids;
    double *w, *y;
} pair_src;

static int influence(const sive_result *r, int32_t c, double *y)
{
    size_t n = 0, n2 = 0;
    double *lbar = sivei_tail_copy(r, sivei_chain(r, c), SIVE_TRACE_LBAR, &n);
    double *s2 = sivei_tail_copy(r, sivei_chain(r, c), SIVE_TRACE_S2, &n2);
    int ok = lbar && s2;
    if (ok)
        sivei_sive_influence(lbar, s2, n, (double)r->opt.groups, y);
    free(lbar);
    free(s2);
    return ok;
}

static const double *pair_of(void *ctx, size_t k)
{
    pair_src *s = ctx;
    const size_t n = (size_t)sivei_tail_count(&s->coarse->opt);
    if (!influence(s->fine, s->ids[k], s->w) || !influence(s->coarse, s->ids[k], s->y))
        return NULL;
    for (size_t i = 0; i < n; i++)
        s->w[i] = 2.0 * s->w[i] - s->y[i];
    return s->w;
}

/* Per-chain values, then the summary (mean over the paired chains, MCSE
 * in quadrature) and spread, as the other statistics. */
static void summarise(sive_result *r, const int32_t *ids, size_t k)
{
    double sum = 0.0, q = 0.0, q2 = 0.0;
    for (size_t c = 0; c < k; c++) {
        sum += sivei_chain(r, ids[c])->stat[SIVE_STAT_SIVE_STEP0];
        q += sivei_chain(r, ids[c])->stat[SIVE_STAT_MCSE_STEP0] * sivei_chain(r, ids[c])->stat[SIVE_STAT_MCSE_STEP0];
    }
    const double mean = k ? sum / (double)k : NAN;
    for (size_t c = 0; c < k; c++) {
        double d = sivei_chain(r, ids[c])->stat[SIVE_STAT_SIVE_STEP0] - mean;
        q2 += d * d;
    }
    r->summary[SIVE_STAT_SIVE_STEP0] = mean;
    r->summary[SIVE_STAT_MCSE_STEP0] = k ? sqrt(q) / (double)k : NAN;
    r->spread[SIVE_STAT_SIVE_STEP0] = k >= 2 ? sqrt(q2 / (double)(k - 1)) : NAN;
    r->spread[SIVE_STAT_MCSE_STEP0] = NAN;
}

int sivei_step0(sive_result *r, const sive_result *fine)
{
    const size_t n = (size_t)sivei_tail_count(&r->opt);
    int32_t *ids = malloc((size_t)r->chains * sizeof *ids);
    pair_src src = {r, fine, ids, malloc(n * sizeof(double)), malloc(n * sizeof(double))};
    double *v = malloc((size_t)r->chains * sizeof *v);
    int rc = ids && src.w && src.y && v ? SIVE_OK : SIVE_E_NOMEM;
    size_t k = 0;
    for (int32_t c = r->begin; c < r->end && rc == SIVE_OK; c++)
        if (sivei_chain(r, c)->status == SIVE_CHAIN_OK && sivei_chain(fine, c)->status == SIVE_CHAIN_OK)
            ids[k++] = c;
    if (rc == SIVE_OK && k > 0)
        rc = sivei_var_of_mean_pooled(pair_of, &src, k, n, v, NULL);
    const double t2 = r->opt.t * r->opt.t;
    for (size_t c = 0; c < k && rc == SIVE_OK; c++) {
        double *st = sivei_chain(r, ids[c])->stat;
        st[SIVE_STAT_SIVE_STEP0] = 2.0 * sivei_chain(fine, ids[c])->stat[SIVE_STAT_SIVE_UNCLIPPED] -
                                   st[SIVE_STAT_SIVE_UNCLIPPED];
        st[SIVE_STAT_MCSE_STEP0] = t2 * sqrt(v[c]);
    }
    if (rc == SIVE_OK)
        summarise(r, ids, k);
    free(ids);
    free(src.w);
    free(src.y);
    free(v);
    return rc;
}
