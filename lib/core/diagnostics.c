/* Summaries over chains: per-chain estimators, per-chain and multi-chain
 * ESS, means and spreads, pooled standard errors, split-Rhat.  The health
 * flags are health.c's. */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

/* The Lbar tails of the finished chains (borrowed from the traces at
 * stride 1, copied otherwise), their estimators, and the worst
 * tail-halves z.  Returns the number of finished chains, or -1 (NOMEM). */
typedef struct tails {
    double **x;
    size_t n;
    int borrowed;
    double worst_z;
    int32_t worst_chain;
} tails;

/* The SIVE influence series of chains ids[] of r, one at a time. */
typedef struct influence_src {
    const sive_result *r;
    const int32_t *ids;
    double *y;
} influence_src;

static const double *influence_of(void *ctx, size_t k)
{
    influence_src *s = ctx;
    const sivei_chain_out *ch = sivei_chain(s->r, s->ids[k]);
    size_t n = 0, n2 = 0;
    double *lbar = sivei_tail_copy(s->r, ch, SIVE_TRACE_LBAR, &n);
    double *s2 = sivei_tail_copy(s->r, ch, SIVE_TRACE_S2, &n2);
    const double *y = NULL;
    if (lbar && s2) {
        sivei_sive_influence(lbar, s2, n, (double)s->r->opt.groups, s->y);
        y = s->y;
    }
    free(lbar);
    free(s2);
    return y;
}

/* MCSE and SIVE_ESS of chains ids[0..k-1] of r (docs/theory.md, "MCSE"):
 * lambda-hat is t^2 times the tail mean of the influence series, whose
 * autocorrelation time is estimated from all k chains at once (they
 * share the target; a short tail alone gives a noisy one). */
static int influence_mcse(const sive_result *r, const int32_t *ids, size_t k)
{
    const size_t n = (size_t)sivei_tail_count(&r->opt);
    influence_src src = {r, ids, malloc(n * sizeof(double))};
    double *v = malloc(k * sizeof *v), tau = NAN;
    int rc = src.y && v ? SIVE_OK : SIVE_E_NOMEM;
    if (rc == SIVE_OK)
        rc = sivei_var_of_mean_pooled(influence_of, &src, k, n, v, &tau);
    const double t2 = r->opt.t * r->opt.t;
    for (size_t c = 0; c < k && rc == SIVE_OK; c++) {
        double *st = sivei_chain(r, ids[c])->stat;
        st[SIVE_STAT_MCSE] = t2 * sqrt(v[c]);
        /* the ESS of y consistent with it: Var_T(y) / Var(mean y) */
        st[SIVE_STAT_SIVE_ESS] = v[c] > 0.0 ? (double)n / fmax(tau, 1.0)
                                 : v[c] == 0.0 ? (double)n : NAN;
    }
    free(src.y);
    free(v);
    return rc;
}

/* The Lbar tails of chains ids[] of r, one at a time. */
static const double *lbar_of(void *ctx, size_t k)
{
    influence_src *s = ctx;
    const sivei_chain_out *ch = sivei_chain(s->r, s->ids[k]);
    size_t n = 0;
    double *x = sivei_tail_copy(s->r, ch, SIVE_TRACE_LBAR, &n);
    if (!x)
        return NULL;
    for (size_t i = 0; i < n; i++)
        s->y[i] = x[i];
    free(x);
    return s->y;
}

/* The variance of the tail mean of series `lbar` (0: SIVE's influence
 * series, 1: Lbar) of each of chains ids[0..k-1] of r, its
 * autocorrelation pooled over those k chains alone (v[c]), the pooled tau
 * and the estimate's degrees of freedom (each may be NULL). */
int sivei_group_var(const sive_result *r, const int32_t *ids, size_t k, int lbar, double *v,
                    double *tau, double *dof)
{
    const size_t n = (size_t)sivei_tail_count(&r->opt);
    influence_src src = {r, ids, malloc(n * sizeof(double))};
    int rc = src.y ? SIVE_OK : SIVE_E_NOMEM;
    if (rc == SIVE_OK)
        rc = sivei_var_of_mean_pooled_dof(lbar ? lbar_of : influence_of, &src, k, n, v, tau,
                                          dof);
    free(src.y);
    return rc;
}

/* A chain stopped by a callback error or a cancel keeps estimates from the
 * steps it ran (its tail: the last 1 - alpha of them), outside the
 * summaries: the estimators see a view of the result with fewer steps. */
static int estimate_partial(const sive_result *r, sivei_chain_out *ch)
{
    sive_result view = *r; /* shallow: the same traces */
    view.opt.steps = ch->steps_run;
    if (sivei_tail_count(&view.opt) < 4)
        return SIVE_OK;
    const int32_t id = r->begin + (int32_t)(ch - r->c);
    if (sivei_chain_estimate(&view, ch) || influence_mcse(&view, &id, 1))
        return SIVE_E_NOMEM;
    size_t n = 0;
    double *x = sivei_tail_copy(&view, ch, SIVE_TRACE_LBAR, &n);
    if (!x)
        return SIVE_E_NOMEM;
    ch->stat[SIVE_STAT_ESS] = sivei_ess_geyer(x, n);
    free(x);
    return SIVE_OK;
}

static int32_t collect(sive_result *r, tails *t, int32_t *ids)
{
    const int64_t first = sivei_tail_first(&r->opt);
    int32_t ok = 0;
    t->borrowed = r->opt.eval_stride == 1;
    t->worst_z = 0.0;
    t->worst_chain = -1;
    for (int32_t c = r->begin; c < r->end; c++) {
        sivei_chain_out *ch = sivei_chain(r, c);
        if (ch->status == SIVE_CHAIN_ABORTED || ch->status == SIVE_CHAIN_CALLBACK) {
            if (estimate_partial(r, ch))
                return -1;
            continue;
        }
        if (ch->status != SIVE_CHAIN_OK)
            continue;
        if (sivei_chain_estimate(r, ch))
            return -1;
        ids[ok] = c;
        /* borrowing keeps the peak memory of long runs at the traces */
        if (t->borrowed) {
            t->n = (size_t)(r->opt.steps - first);
            t->x[ok] = ch->trace[SIVE_TRACE_LBAR] + first;
        } else if (!(t->x[ok] = sivei_tail_copy(r, ch, SIVE_TRACE_LBAR, &t->n))) {
            return -1;
        }
        ok++;
    }
    return ok;
}

/* The signed halves z of every finished chain (HALVES_Z) and the worst
 * |z| (docs/theory.md, "Health flags"). */
static int halves(sive_result *r, tails *t, const int32_t *ids, int32_t ok)
{
    double *z = malloc((size_t)ok * sizeof *z);
    if (!z)
        return SIVE_E_NOMEM;
    int rc = sivei_halves_z((const double *const *)t->x, (size_t)ok, t->n, z);
    for (int32_t k = 0; k < ok && rc == SIVE_OK; k++) {
        sivei_chain(r, ids[k])->stat[SIVE_STAT_HALVES_Z] = z[k];
        if (!isnan(z[k]) && (t->worst_chain < 0 || fabs(z[k]) > t->worst_z)) {
            t->worst_z = fabs(z[k]);
            t->worst_chain = ids[k];
        }
    }
    free(z);
    return rc;
}

/* Per-chain ESS into the chains' stats; returns the multi-chain ESS. */
static int ess(sive_result *r, const tails *t, int32_t ok, double *multi)
{
    *multi = NAN;
    double *each = malloc((size_t)ok * sizeof *each);
    if (!each)
        return SIVE_E_NOMEM;
    int rc = sivei_ess_chains((const double *const *)t->x, (size_t)ok, t->n, each, multi);
    if (rc == SIVE_E_INVALID_ARG)
        rc = SIVE_OK; /* non-finite tail: ESS stays NaN */
    for (int32_t c = r->begin, k = 0; c < r->end; c++)
        if (sivei_chain(r, c)->status == SIVE_CHAIN_OK)
            sivei_chain(r, c)->stat[SIVE_STAT_ESS] = each[k++];
    free(each);
    return rc;
}

/* Mean and spread over finished chains; standard errors of an average
 * over chains (SIVE_POOL_QUADRATURE in stat_table.h) combine in
 * quadrature.  The SIVE_POOL_ALL_CHAINS and _SUMMARY_ONLY summaries are
 * set by sivei_result_summarise(). */
static void pool_one(sive_result *r, int s, int32_t ok)
{
    double sum = 0.0, sum2 = 0.0;
    for (int32_t c = r->begin; c < r->end; c++)
        if (sivei_chain(r, c)->status == SIVE_CHAIN_OK)
            sum += sivei_chain(r, c)->stat[s];
    double mean = ok ? sum / ok : NAN;
    for (int32_t c = r->begin; c < r->end; c++)
        if (sivei_chain(r, c)->status == SIVE_CHAIN_OK) {
            double dv = sivei_chain(r, c)->stat[s] - mean;
            sum2 += dv * dv;
        }
    r->summary[s] = mean;
    r->spread[s] = ok >= 2 ? sqrt(sum2 / (ok - 1)) : NAN;
}

void sivei_result_pool_mean(sive_result *r, int s)
{
    int32_t ok = 0;
    for (int32_t c = r->begin; c < r->end; c++)
        ok += sivei_chain(r, c)->status == SIVE_CHAIN_OK;
    pool_one(r, s, ok);
}

static void pool(sive_result *r, int32_t ok)
{
    for (int s = 0; s < SIVEI_N_STATS; s++)
        pool_one(r, s, ok);
    if (ok == 0)
        return;
    for (int s = 0; s < SIVEI_N_STATS; s++) {
        if (sive_stat_at((size_t)s)->pool != SIVE_POOL_QUADRATURE)
            continue;
        double q = 0.0;
        for (int32_t c = r->begin; c < r->end; c++)
            if (sivei_chain(r, c)->status == SIVE_CHAIN_OK)
                q += sivei_chain(r, c)->stat[s] * sivei_chain(r, c)->stat[s];
        r->summary[s] = sqrt(q) / ok;
    }
}

int sivei_result_summarise(sive_result *r)
{
    const size_t range = (size_t)(r->end - r->begin);
    tails t = {.x = calloc(range, sizeof(double *))};
    int32_t *ids = malloc(range * sizeof *ids);
    int32_t ok = t.x && ids ? collect(r, &t, ids) : -1;
    int rc = ok < 0 ? SIVE_E_NOMEM : SIVE_OK;
    if (rc == SIVE_OK && ok > 0)
        rc = influence_mcse(r, ids, (size_t)ok);
    if (rc == SIVE_OK && ok > 0)
        rc = sivei_radius_sensitivity(r, ids, (size_t)ok);
    if (rc == SIVE_OK && ok > 0)
        rc = halves(r, &t, ids, ok);
    free(ids);
    double ess_multi = NAN;
    if (rc == SIVE_OK) {
        r->chains_ok = ok;
        if (ok > 0)
            rc = ess(r, &t, ok, &ess_multi);
    }
    if (rc == SIVE_OK) {
        pool(r, ok);
        if (ok > 0) {
            r->summary[SIVE_STAT_ESS] = ess_multi;
            r->summary[SIVE_STAT_RHAT] =
                sivei_split_rhat((const double *const *)t.x, (size_t)ok, t.n);
        }
    }
    if (!t.borrowed && t.x)
        for (size_t c = 0; c < range; c++)
            free(t.x[c]);
    free(t.x);
    return rc ? rc : sivei_result_health(r, t.worst_z, t.worst_chain);
}
