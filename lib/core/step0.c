/* Richardson extrapolation of a run r against a second run of the same
 * chains with one knob changed (other), w lambda(other) + (1 - w) lambda(r):
 *  - the step bias (SIVE_OPT_STEP_EXTRAPOLATE; docs/theory.md, "Step
 *    bias"): ULA's stationary law differs from the tethered law by O(a),
 *    so lambda(a) = lambda_0 + c a + O(a^2) and, other at a/2 and w = 2,
 *    2 lambda(a/2) - lambda(a) = lambda_0 + O(a^2);
 *  - the gradient batch's heating (SIVE_OPT_GRAD_EXTRAPOLATE;
 *    docs/theory.md, "Gradient batch bias"): other at 2 B_grad, linear
 *    in 1/B (or 1/B - 1/n without replacement).
 * Chain c in both runs draws from the same streams, so their estimates
 * are correlated; the MCSE comes from the paired influence series
 * w y(other) + (1 - w) y(r), whose tail mean is the extrapolated
 * estimate over t^2. */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

typedef struct pair_src {
    const sive_result *coarse, *fine; /* r and other */
    const int32_t *ids;
    double *w, *y, weight;
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
        s->w[i] = s->weight * s->w[i] + (1.0 - s->weight) * s->y[i];
    return s->w;
}

/* Per-chain values, then the summary (mean over the paired chains, MCSE
 * in quadrature) and spread, as the other statistics. */
static void summarise(sive_result *r, const int32_t *ids, size_t k, int est, int mcse)
{
    double sum = 0.0, q = 0.0, q2 = 0.0;
    for (size_t c = 0; c < k; c++) {
        sum += sivei_chain(r, ids[c])->stat[est];
        q += sivei_chain(r, ids[c])->stat[mcse] * sivei_chain(r, ids[c])->stat[mcse];
    }
    const double mean = k ? sum / (double)k : NAN;
    for (size_t c = 0; c < k; c++) {
        double d = sivei_chain(r, ids[c])->stat[est] - mean;
        q2 += d * d;
    }
    r->summary[est] = mean;
    r->summary[mcse] = k ? sqrt(q) / (double)k : NAN;
    r->spread[est] = k >= 2 ? sqrt(q2 / (double)(k - 1)) : NAN;
    r->spread[mcse] = NAN;
}

int sivei_richardson(sive_result *r, const sive_result *fine, double weight, int est,
                     int mcse)
{
    const size_t n = (size_t)sivei_tail_count(&r->opt);
    int32_t *ids = malloc((size_t)r->chains * sizeof *ids);
    pair_src src = {r, fine, ids, malloc(n * sizeof(double)), malloc(n * sizeof(double)),
                    weight};
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
        st[est] = weight * sivei_chain(fine, ids[c])->stat[SIVE_STAT_SIVE_UNCLIPPED] +
                  (1.0 - weight) * st[SIVE_STAT_SIVE_UNCLIPPED];
        st[mcse] = t2 * sqrt(v[c]);
    }
    if (rc == SIVE_OK)
        summarise(r, ids, k, est, mcse);
    free(ids);
    free(src.w);
    free(src.y);
    free(v);
    return rc;
}
