/* Annealed burn-in (the experimental option anneal = kappa; docs/theory.md,
 * "Annealed burn-in"): the inverse temperature a chain runs at during the
 * burn-in, and the start test that compares the chains started hot with
 * those started cold at theta* (SIVE_STAT_START_Z,
 * SIVE_FLAG_START_DEPENDENT).  The samplers read the temperature from
 * w->t_step and w->eta_step, which the chain sets before every step. */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>

/* Odd chains start cold, unless every chain runs hot (the pilots). */
int sivei_anneal_cold(const sivei_options *o, int32_t c)
{
    return o->anneal > 1.0 && !o->anneal_all && (c & 1);
}

/* With B = floor(burn_in * M) and q = floor(B/4): t/kappa for m < q, then
 * t kappa^(-(2q - m)/q) (geometric, from t/kappa up to t) for q <= m < 2q,
 * and t from 2q on, i.e. over the burn-in's second half and the tail. */
double sivei_anneal_t(const sivei_options *o, int32_t c, int64_t m)
{
    if (!(o->anneal > 1.0) || sivei_anneal_cold(o, c))
        return o->t;
    const int64_t q = (int64_t)floor(o->burn_in * (double)o->steps) / 4;
    if (m >= 2 * q)
        return o->t;
    const double f = m < q ? 1.0 : (double)(2 * q - m) / (double)q;
    return o->t / pow(o->anneal, f);
}

/* eta = base_lr / t_step: the run's own eta (same bits) at t. */
double sivei_anneal_eta(const sivei_options *o, double run_eta, double t_step)
{
    return t_step == o->t ? run_eta : o->base_lr / t_step;
}

/* The chains' ids of each group: hot [0], cold [1] (finished chains). */
static void groups(const sive_result *r, int32_t *grp[2], int32_t n[2])
{
    n[0] = n[1] = 0;
    for (int32_t c = r->begin; c < r->end; c++)
        if (sivei_chain(r, c)->status == SIVE_CHAIN_OK) {
            const int k = sivei_anneal_cold(&r->opt, c);
            grp[k][n[k]++] = c;
        }
}

/* See probe_impl.h.  For each statistic (lambda-hat, t mean Lbar) and
 * group k: the mean over its chains, and the variance of that mean,
 * sum_c V_c / n_k^2, each chain's V_c with the autocorrelation pooled
 * over the group's own chains (sivei_var_of_mean_pooled), with nu_k
 * degrees of freedom; the difference over the combined standard error is
 * a Welch t, its degrees of freedom Welch-Satterthwaite's. */
int sivei_start_test(const sive_result *r, sivei_start *s)
{
    for (int i = 0; i < 2; i++)
        s->z[i] = s->dof[i] = s->mean[i][0] = s->mean[i][1] = NAN;
    s->zmin = NAN;
    if (!(r->opt.anneal > 1.0) || r->opt.anneal_all)
        return SIVE_OK;
    const size_t range = (size_t)(r->end - r->begin);
    int32_t *ids = malloc(2 * range * sizeof *ids), n[2];
    double *v = malloc(range * sizeof *v);
    int rc = ids && v ? SIVE_OK : SIVE_E_NOMEM;
    int32_t *grp[2] = {ids, ids ? ids + range : NULL};
    if (rc == SIVE_OK)
        groups(r, grp, n);
    const double t = r->opt.t;
    for (int st = 0; st < 2 && rc == SIVE_OK && n[0] && n[1]; st++) {
        const double scale = st ? t : t * t; /* of the series' mean */
        double se2[2], nu[2];
        for (int k = 0; k < 2 && rc == SIVE_OK; k++) {
            rc = sivei_group_var(r, grp[k], (size_t)n[k], st, v, NULL, &nu[k]);
            if (rc != SIVE_OK)
                break; /* v and nu[k] are not set */
            double sum = 0.0, var = 0.0;
            for (int32_t i = 0; i < n[k]; i++) {
                const double *cs = sivei_chain(r, grp[k][i])->stat;
                sum += st ? t * cs[SIVE_STAT_TAIL_MEAN_LOSS] : cs[SIVE_STAT_SIVE_UNCLIPPED];
                var += v[i];
            }
            s->mean[st][k] = sum / n[k];
            se2[k] = scale * scale * var / ((double)n[k] * n[k]);
        }
        if (rc != SIVE_OK)
            break;
        const double se = sqrt(se2[0] + se2[1]);
        s->dof[st] = (se2[0] + se2[1]) * (se2[0] + se2[1]) /
                     (se2[0] * se2[0] / nu[0] + se2[1] * se2[1] / nu[1]);
        if (se > 0.0)
            s->z[st] = sivei_t_as_z((s->mean[st][0] - s->mean[st][1]) / se, s->dof[st]);
    }
    /* the smaller of the two tail probabilities, doubled */
    if (isfinite(s->z[0]) || isfinite(s->z[1])) {
        const int k = !isfinite(s->z[0]) || fabs(s->z[1]) > fabs(s->z[0]);
        const double q = 0.5 * erfc(fabs(s->z[k]) / sqrt(2.0)); /* one tail */
        const double u = sivei_normal_upper(2.0 * q);
        s->zmin = u > 0.0 ? copysign(u, s->z[k]) : 0.0;
    }
    free(ids);
    free(v);
    return rc;
}

/* The start test's variants (development): hot minus cold over the
 * combined standard error, for lambda-hat (z[0..2]) and t times the tail
 * mean loss (z[3..5]), the chains' variances of the mean from the
 * autocorrelation pooled over all chains (0, 5), over each group's chains
 * (1, 3) or each chain's own (2, 4).  mean[0]: lambda-hat, mean[1]: t mean
 * Lbar, of the hot [0] and cold [1] groups. */
int sivei_start_variants(const sive_result *r, double z[SIVEI_START_VARIANTS],
                         double mean[2][2])
{
    for (int i = 0; i < SIVEI_START_VARIANTS; i++)
        z[i] = NAN;
    mean[0][0] = mean[0][1] = mean[1][0] = mean[1][1] = NAN;
    if (!(r->opt.anneal > 1.0) || r->opt.anneal_all)
        return SIVE_OK;
    const int32_t range = r->end - r->begin;
    int32_t *ids = malloc(3 * (size_t)range * sizeof *ids);
    double *v = malloc((size_t)range * sizeof *v);
    if (!ids || !v) {
        free(ids);
        free(v);
        return SIVE_E_NOMEM;
    }
    int32_t *grp[2] = {ids + range, ids + 2 * range}, n[2] = {0, 0}, all = 0;
    for (int32_t c = r->begin; c < r->end; c++) {
        if (sivei_chain(r, c)->status != SIVE_CHAIN_OK)
            continue;
        const int k = sivei_anneal_cold(&r->opt, c);
        grp[k][n[k]++] = c;
        ids[all++] = c;
    }
    int rc = SIVE_OK;
    const double t = r->opt.t;
    if (n[0] && n[1]) {
        for (int s = 0; s < 2; s++) { /* 0: lambda-hat, 1: Lbar */
            const double scale = s ? t : t * t;
            for (int k = 0; k < 2; k++) {
                double sum = 0.0;
                for (int32_t i = 0; i < n[k]; i++) {
                    const double *st = sivei_chain(r, grp[k][i])->stat;
                    sum += s ? t * st[SIVE_STAT_TAIL_MEAN_LOSS] : st[SIVE_STAT_SIVE_UNCLIPPED];
                }
                mean[s][k] = sum / n[k];
            }
            const double diff = mean[s][0] - mean[s][1];
            for (int pool = 0; pool < 3 && rc == SIVE_OK; pool++) {
                double se2 = 0.0;
                if (pool == 0) { /* all chains */
                    rc = sivei_group_var(r, ids, (size_t)all, s, v, NULL, NULL);
                    for (int32_t i = 0; i < all; i++) {
                        const int k = sivei_anneal_cold(&r->opt, ids[i]);
                        se2 += v[i] / ((double)n[k] * n[k]);
                    }
                } else {
                    for (int k = 0; k < 2 && rc == SIVE_OK; k++)
                        for (int32_t i = 0; i < n[k] && rc == SIVE_OK; i++) {
                            if (pool == 1 && i == 0)
                                rc = sivei_group_var(r, grp[k], (size_t)n[k], s, v, NULL, NULL);
                            else if (pool == 2)
                                rc = sivei_group_var(r, grp[k] + i, 1, s, v + i, NULL, NULL);
                            se2 += v[i] / ((double)n[k] * n[k]);
                        }
                }
                const int slot = s == 0 ? pool : (pool == 0 ? 5 : 2 + pool);
                z[slot] = diff / (scale * sqrt(se2));
            }
        }
    }
    sivei_start st; /* 6, 7: the test itself */
    if (rc == SIVE_OK && (rc = sivei_start_test(r, &st)) == SIVE_OK) {
        z[6] = st.z[0];
        z[7] = st.z[1];
    }
    free(ids);
    free(v);
    return rc;
}
