/* Annealed burn-in (the experimental option anneal = kappa; docs/theory.md,
 * "Annealed burn-in"): the inverse temperature a chain runs at during the
 * burn-in, and the start test that compares the chains started hot with
 * those started cold at theta* (SIVE_STAT_START_Z,
 * SIVE_FLAG_START_DEPENDENT).  The samplers read the temperature from
 * w->t_step and w->eta_step, which the chain sets before every step. */
#include "probe_impl.h"

#include <math.h>

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

/* The z of the start test over r's finished chains, NaN without the option
 * or without a finished chain of each kind; the hot and the cold chains'
 * mean lambda-hat into mean[0], mean[1]. */
double sivei_start_z(const sive_result *r, double mean[2])
{
    double sum[2] = {0.0, 0.0}, q[2] = {0.0, 0.0};
    int n[2] = {0, 0};
    mean[0] = mean[1] = NAN;
    if (!(r->opt.anneal > 1.0) || r->opt.anneal_all)
        return NAN;
    for (int32_t c = r->begin; c < r->end; c++) {
        const sivei_chain_out *ch = sivei_chain(r, c);
        if (ch->status != SIVE_CHAIN_OK)
            continue;
        const int k = sivei_anneal_cold(&r->opt, c);
        sum[k] += ch->stat[SIVE_STAT_SIVE_UNCLIPPED];
        q[k] += ch->stat[SIVE_STAT_MCSE] * ch->stat[SIVE_STAT_MCSE];
        n[k]++;
    }
    if (!n[0] || !n[1])
        return NAN;
    mean[0] = sum[0] / n[0];
    mean[1] = sum[1] / n[1];
    const double se2 = q[0] / ((double)n[0] * n[0]) + q[1] / ((double)n[1] * n[1]);
    return (mean[0] - mean[1]) / sqrt(se2);
}
