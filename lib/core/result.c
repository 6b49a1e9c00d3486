/* The result handle from creation to free: allocation, the tail window,
 * getters, names of the statistics and traces, and the run's status. */
#include "probe_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t sivei_tail_first(const sivei_options *o)
{
    return (int64_t)floor(o->burn_in * (double)o->steps);
}

int64_t sivei_tail_count(const sivei_options *o)
{
    /* evaluated steps m in [first, steps) with m % stride == 0 */
    const int64_t first = sivei_tail_first(o), k = o->eval_stride;
    if (first >= o->steps)
        return 0;
    int64_t lo = (first + k - 1) / k, hi = (o->steps - 1) / k;
    return hi >= lo ? hi - lo + 1 : 0;
}

double *sivei_tail_copy(const sive_result *r, const sivei_chain_out *c,
                        sive_trace which, size_t *n)
{
    *n = 0;
    int64_t cnt = sivei_tail_count(&r->opt);
    double *x = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *x);
    if (!x)
        return NULL;
    const int64_t k = r->opt.eval_stride;
    const double *tr = c->trace[which];
    size_t j = 0;
    for (int64_t m = (sivei_tail_first(&r->opt) + k - 1) / k * k; m < r->opt.steps; m += k)
        x[j++] = tr[m];
    *n = j;
    return x;
}

uint64_t sivei_fnv1a64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int sivei_chain_traces(sivei_chain_out *ch, int64_t len)
{
    for (int k = 0; k < SIVEI_N_TRACES; k++)
        if (!(ch->trace[k] = malloc((size_t)(len > 0 ? len : 1) * sizeof(double))))
            return SIVE_E_NOMEM;
    return SIVE_OK;
}

sive_result *sivei_result_alloc(const sivei_options *o, double h, double eta,
                                int32_t begin, int32_t end, int traces)
{
    sive_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->opt = *o;
    r->mala_step = r->mala_accept = NAN;
    r->chains = (int32_t)o->chains;
    r->h = h;
    r->eta = eta;
    r->begin = begin;
    r->end = end;
    r->c = calloc((size_t)(end - begin), sizeof *r->c);
    if (!r->c) {
        free(r);
        return NULL;
    }
    for (int32_t c = begin; c < end; c++) {
        sivei_chain_out *ch = sivei_chain(r, c);
        for (int k = 0; k < SIVEI_N_STATS; k++)
            ch->stat[k] = NAN;
        if (traces && sivei_chain_traces(ch, o->steps)) {
            sive_result_free(r);
            return NULL;
        }
    }
    for (int k = 0; k < SIVEI_N_STATS; k++)
        r->summary[k] = r->spread[k] = NAN;
    return r;
}

void sive_result_free(sive_result *r)
{
    if (!r)
        return;
    if (r->c)
        for (int32_t c = r->begin; c < r->end; c++)
            for (int k = 0; k < SIVEI_N_TRACES; k++)
                free(sivei_chain(r, c)->trace[k]);
    free(r->c);
    free(r->health);
    free(r->notes);
    free(r->ranges);
    for (size_t k = 0; k < r->n_views; k++)
        sive_result_free(r->views[k]);
    free(r->views);
    free(r);
}

int sive_result_status(const sive_result *r) { return r ? r->status : SIVE_E_INVALID_ARG; }

const char *sive_result_errmsg(const sive_result *r)
{
    return r ? r->errmsg : "result handle is NULL";
}

int sive_result_callback_code(const sive_result *r) { return r ? r->callback_code : 0; }

int sive_result_option_int(const sive_result *r, sive_option opt, int64_t *value)
{
    if (!r || !value)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_option_int: NULL argument");
    return sivei_options_get(&r->opt, opt, SIVE_TYPE_INT, value, NULL, NULL);
}

int sive_result_option_double(const sive_result *r, sive_option opt, double *value)
{
    if (!r || !value)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_option_double: NULL argument");
    return sivei_options_get(&r->opt, opt, SIVE_TYPE_DOUBLE, NULL, value, NULL);
}

/* ---- names: the keys of every JSON/CSV output ---- */

#define STAT_ROW(id_, name_, pool_, scalar_, doc_)                              \
    {.id = id_, .name = name_, .pool = SIVE_POOL_##pool_, .scalar = scalar_, .doc = doc_},
static const sive_stat_info stat_table[] = {SIVEI_STATS(STAT_ROW)};

/* Row i describes statistic i: a missing, repeated or misplaced row fails
 * the build (a new enumerator without a row has no name: test_probe). */
#define STAT_POS(id_, name_, pool_, scalar_, doc_) STAT_POS_##id_,
enum { SIVEI_STATS(STAT_POS) STAT_ROWS };
#define STAT_IN_ORDER(id_, name_, pool_, scalar_, doc_)                         \
    _Static_assert((int)STAT_POS_##id_ == (int)id_, #id_ " out of order in stat_table.h");
SIVEI_STATS(STAT_IN_ORDER)
_Static_assert(STAT_ROWS == SIVEI_N_STATS, "SIVEI_N_STATS counts the rows");

static const char *const trace_names[SIVEI_N_TRACES] = {
    [SIVE_TRACE_LBAR] = "lbar", [SIVE_TRACE_S2] = "s2",
    [SIVE_TRACE_GRAD_LOSS] = "grad_loss", [SIVE_TRACE_GRAD_NORM] = "grad_norm",
    [SIVE_TRACE_DISP] = "disp",
};

const sive_stat_info *sive_stat_at(size_t i)
{
    return i < (size_t)SIVEI_N_STATS ? &stat_table[i] : NULL;
}

const sive_stat_info *sive_stat_info_get(sive_stat stat)
{
    return (int)stat >= 0 ? sive_stat_at((size_t)stat) : NULL;
}

const char *sive_stat_name(sive_stat stat)
{
    const sive_stat_info *in = sive_stat_info_get(stat);
    return in ? in->name : NULL;
}

const char *sive_trace_name(sive_trace which)
{
    return (int)which >= 0 && (int)which < SIVEI_N_TRACES ? trace_names[which] : NULL;
}

const char *sive_chain_status_string(sive_chain_status status)
{
    switch (status) {
    case SIVE_CHAIN_OK: return "ok";
    case SIVE_CHAIN_DIVERGED: return "diverged";
    case SIVE_CHAIN_CALLBACK: return "callback";
    case SIVE_CHAIN_ABORTED: return "aborted";
    case SIVE_CHAIN_NOT_RUN: return "not_run";
    case SIVE_CHAIN_INVALID: return "invalid";
    }
    return NULL;
}

/* ---- statistics and traces ---- */

double sive_result_stat(const sive_result *r, sive_stat stat, int32_t chain)
{
    if (!r || (int)stat < 0 || (int)stat >= SIVEI_N_STATS)
        return NAN;
    if (chain == SIVE_SUMMARY)
        return r->summary[stat];
    if (chain < r->begin || chain >= r->end)
        return NAN;
    return sivei_chain(r, chain)->stat[stat]; /* NaN unless estimated */
}

double sive_result_stat_std(const sive_result *r, sive_stat stat)
{
    if (!r || (int)stat < 0 || (int)stat >= SIVEI_N_STATS)
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
int64_t sive_result_steps(const sive_result *r) { return r ? r->opt.steps : 0; }
int64_t sive_result_eval_stride(const sive_result *r) { return r ? r->opt.eval_stride : 0; }
sive_dtype sive_result_dtype(const sive_result *r)
{
    return r ? (sive_dtype)r->dtype : SIVE_DTYPE_UNKNOWN;
}

sive_chain_status sive_result_chain_status(const sive_result *r, int32_t chain,
                                           int64_t *step)
{
    if (!r || chain < 0 || chain >= r->chains)
        return SIVE_CHAIN_INVALID;
    if (chain < r->begin || chain >= r->end) {
        if (step)
            *step = 0;
        return SIVE_CHAIN_NOT_RUN;
    }
    if (step)
        *step = sivei_chain(r, chain)->stop_step;
    return sivei_chain(r, chain)->status;
}

const double *sive_result_trace(const sive_result *r, sive_trace which,
                                int32_t chain, size_t *len)
{
    if (len)
        *len = 0;
    if (!r || !len || (int)which < 0 || (int)which >= SIVEI_N_TRACES ||
        chain < 0 || chain >= r->chains)
        return NULL;
    if (chain < r->begin || chain >= r->end)
        return NULL; /* NOT_RUN: no trace */
    *len = (size_t)sivei_chain(r, chain)->steps_run;
    return sivei_chain(r, chain)->trace[which];
}

uint32_t sive_result_flags(const sive_result *r) { return r ? r->flags : 0; }

const char *sive_result_health(const sive_result *r)
{
    return r && r->health ? r->health : "";
}

int sive_result_chain_range(const sive_result *r, int32_t *begin, int32_t *end)
{
    if (!r || !begin || !end)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_chain_range: NULL argument");
    *begin = r->begin;
    *end = r->end;
    return SIVE_OK;
}

void sivei_result_conclude(sive_result *r, int status, int cb_code, const char *msg)
{
    r->status = status;
    r->callback_code = cb_code;
    snprintf(r->errmsg, sizeof r->errmsg, "%s", msg);
    if (r->status == SIVE_OK && r->chains_ok == 0) {
        /* the first chain of the range: chain 0 for a whole run */
        r->status = SIVE_E_DIVERGED;
        snprintf(r->errmsg, sizeof r->errmsg,
                 "all %d chains diverged (chain %d at step %lld); lower base_lr or t, "
                 "or check the model for NaN",
                 (int)(r->end - r->begin), (int)r->begin,
                 (long long)sivei_chain(r, r->begin)->stop_step);
    }
}
