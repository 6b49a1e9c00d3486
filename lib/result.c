/* Result handle: getters and destructor. */
#include "probe_impl.h"

#include <math.h>
#include <stdlib.h>

void sive_result_free(sive_result *r)
{
    if (!r)
        return;
    if (r->c)
        for (int32_t c = 0; c < r->chains; c++)
            for (int k = 0; k < SIVE_TRACE_COUNT_; k++)
                free(r->c[c].trace[k]);
    free(r->c);
    free(r->health);
    free(r);
}

double sive_result_stat(const sive_result *r, sive_stat stat, int32_t chain)
{
    if (!r || (int)stat < 0 || (int)stat >= SIVE_STAT_COUNT_)
        return NAN;
    if (chain == SIVE_SUMMARY)
        return r->summary[stat];
    if (chain < 0 || chain >= r->chains || r->c[chain].status != SIVE_CHAIN_OK)
        return NAN;
    return r->c[chain].stat[stat];
}

double sive_result_stat_std(const sive_result *r, sive_stat stat)
{
    if (!r || (int)stat < 0 || (int)stat >= SIVE_STAT_COUNT_)
        return NAN;
    return r->spread[stat];
}

double sive_result_lambda(const sive_result *r)
{
    return sive_result_stat(r, SIVE_STAT_SIVE, SIVE_SUMMARY);
}
double sive_result_lambda_std(const sive_result *r)
{
    return sive_result_stat_std(r, SIVE_STAT_SIVE);
}
double sive_result_mcse(const sive_result *r)
{
    return sive_result_stat(r, SIVE_STAT_MCSE, SIVE_SUMMARY);
}
double sive_result_ess(const sive_result *r)
{
    return sive_result_stat(r, SIVE_STAT_ESS, SIVE_SUMMARY);
}
double sive_result_rhat(const sive_result *r)
{
    return sive_result_stat(r, SIVE_STAT_RHAT, SIVE_SUMMARY);
}
double sive_result_noise_correction(const sive_result *r)
{
    return sive_result_stat(r, SIVE_STAT_NOISE_CORRECTION, SIVE_SUMMARY);
}
double sive_result_noise_correction_std(const sive_result *r)
{
    return sive_result_stat(r, SIVE_STAT_NOISE_CORRECTION_STD, SIVE_SUMMARY);
}

int32_t sive_result_chains(const sive_result *r) { return r ? r->chains : 0; }
int32_t sive_result_chains_ok(const sive_result *r) { return r ? r->chains_ok : 0; }
int64_t sive_result_steps(const sive_result *r) { return r ? r->steps : 0; }
int64_t sive_result_eval_stride(const sive_result *r) { return r ? r->stride : 0; }

sive_chain_status sive_result_chain_status(const sive_result *r, int32_t chain,
                                           int64_t *step)
{
    if (!r || chain < 0 || chain >= r->chains)
        return SIVE_CHAIN_INVALID;
    if (step)
        *step = r->c[chain].stop_step;
    return r->c[chain].status;
}

const double *sive_result_trace(const sive_result *r, sive_trace which,
                                int32_t chain, size_t *len)
{
    if (len)
        *len = 0;
    if (!r || !len || (int)which < 0 || (int)which >= SIVE_TRACE_COUNT_ ||
        chain < 0 || chain >= r->chains)
        return NULL;
    *len = (size_t)r->c[chain].steps_run;
    return r->c[chain].trace[which];
}

uint32_t sive_result_flags(const sive_result *r) { return r ? r->flags : 0; }

const char *sive_result_health(const sive_result *r)
{
    return r && r->health ? r->health : "";
}
