/* Toy models on the public libsive API (see toy.h). */
#include "toy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double toy_k(int model, const double *th)
{
    return model == 1 ? th[0] * th[0] : th[0] * th[0] * th[1] * th[1];
}

static int toy_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                    double *loss, void *user)
{
    const toy_model_ctx *ctx = user;
    const double *th = theta;
    double *g = grad;
    (void)d;
    (void)b;
    if (ctx->model == 1) {
        g[0] = 2.0 * th[0];
    } else {
        g[0] = 2.0 * th[0] * th[1] * th[1];
        g[1] = 2.0 * th[0] * th[0] * th[1];
    }
    *loss = ctx->l0 + toy_k(ctx->model, th); /* exact gradients: noiseless */
    return 0;
}

static int toy_eval(const void *theta, size_t d, const sive_batch *b,
                    double *group_loss, void *user)
{
    const toy_model_ctx *ctx = user;
    const double *th = theta;
    (void)d;
    double k = toy_k(ctx->model, th);
    sive_rng g;
    sive_rng_seed(&g, b->seed, 0);
    sive_rng_normals(&g, group_loss, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        group_loss[i] = ctx->l0 + k + ctx->sigma * group_loss[i];
    if (ctx->k_trace)
        ctx->k_trace[b->chain][b->step] = k;
    return 0;
}

void toy_model(sive_model *m, toy_model_ctx *ctx)
{
    sive_model_init(m, sizeof *m);
    m->dtype = SIVE_F64;
    m->dim = (size_t)ctx->model;
    m->grad = toy_grad;
    m->group_loss = toy_eval;
    m->user = ctx;
}

void toy_defaults(toy_config *cfg, int model)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->model = model;
    cfg->floor_l0 = 100.0;
    cfg->sigma = 0.002;
    cfg->t = 1e4;
    cfg->h = 2.0;
    cfg->base_lr = 0.05;
    cfg->burn_in = 0.3;
    cfg->steps = 100000;
    cfg->groups = 64;
    cfg->chains = 5;
    cfg->threads = 1;
    cfg->stride = 1;
    cfg->seed = 0;
    cfg->centre[0] = 0.2;
    cfg->centre[1] = 0.2;
}

void toy_report_free(toy_report *rep)
{
    for (int k = 0; k < TOY_EST_COUNT; k++)
        free(rep->per_chain[k]);
    free(rep->nc_std_per_chain);
    free(rep->sive_mcse_per_chain);
    free(rep->health);
    memset(rep, 0, sizeof *rep);
}

static void mean_std(const double *x, int32_t n, double *mean, double *std)
{
    double s = 0.0, q = 0.0;
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (!isnan(x[i])) {
            s += x[i];
            k++;
        }
    *mean = k ? s / k : NAN;
    for (int32_t i = 0; i < n; i++)
        if (!isnan(x[i]))
            q += (x[i] - *mean) * (x[i] - *mean);
    *std = k > 1 ? sqrt(q / (k - 1)) : NAN;
}

/* Oracle per chain: t*mean and t^2*Var of the noiseless K over the tail,
 * with their batch-means standard errors. */
static void oracle(const toy_config *cfg, const double *k, double *mean_out,
                   double *mean_se, double *var_out, double *var_se, double *work)
{
    int64_t start = (int64_t)floor(cfg->burn_in * (double)cfg->steps);
    int64_t first = (start + cfg->stride - 1) / cfg->stride * cfg->stride;
    size_t n = 0;
    double s = 0.0;
    for (int64_t m = first; m < cfg->steps; m += cfg->stride) {
        work[n++] = k[m];
        s += k[m];
    }
    double mu = s / (double)n;
    *mean_out = cfg->t * mu;
    *mean_se = cfg->t * sive_stats_mcse(work, n);
    double q = 0.0;
    for (size_t i = 0; i < n; i++) {
        double dv = work[i] - mu;
        q += dv * dv;
        work[i] = dv * dv * (double)n / (double)(n - 1);
    }
    *var_out = cfg->t * cfg->t * q / (double)(n - 1);
    *var_se = cfg->t * cfg->t * sive_stats_mcse(work, n);
}

static int configure(sive_probe *p, const toy_config *cfg)
{
    int rc;
    if ((rc = sive_probe_set_double(p, SIVE_OPT_T, cfg->t)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_H, cfg->h)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_BASE_LR, cfg->base_lr)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_BURN_IN, cfg->burn_in)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_ANCHOR, cfg->floor_l0)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_STEPS, cfg->steps)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_GROUPS, cfg->groups)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_CHAINS, cfg->chains)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_THREADS, cfg->threads)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, cfg->stride)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_SEED, (int64_t)cfg->seed)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_PRECONDITION, cfg->precondition)) ||
        (rc = sive_probe_set_progress(p, cfg->progress, cfg->progress_user)))
        return rc;
    return SIVE_OK;
}

/* Per-chain traces of the noiseless K, or NULL (out of memory). */
static double **alloc_k_trace(const toy_config *cfg)
{
    double **k = calloc((size_t)cfg->chains, sizeof *k);
    for (int64_t c = 0; k && c < cfg->chains; c++)
        if (!(k[c] = malloc((size_t)cfg->steps * sizeof(double)))) {
            for (int64_t j = 0; j < c; j++)
                free(k[j]);
            free(k);
            return NULL;
        }
    return k;
}

static int alloc_report(toy_report *rep, int32_t K)
{
    int ok = 1;
    for (int k = 0; k < TOY_EST_COUNT; k++)
        ok = (rep->per_chain[k] = malloc((size_t)K * sizeof(double))) && ok;
    rep->nc_std_per_chain = malloc((size_t)K * sizeof(double));
    rep->sive_mcse_per_chain = malloc((size_t)K * sizeof(double));
    return ok && rep->nc_std_per_chain && rep->sive_mcse_per_chain ? SIVE_OK : SIVE_E_NOMEM;
}

/* Per-chain estimates and oracles; returns the squared oracle SEs summed. */
static void fill_chains(const toy_config *cfg, const sive_result *r, double **k_trace,
                        toy_report *rep, double *work, double *q_mean, double *q_var)
{
    *q_mean = *q_var = 0.0;
    for (int32_t c = 0; c < rep->chains; c++) {
        double om = NAN, ose = NAN, ov = NAN, ovse = NAN;
        if (sive_result_chain_status(r, c, NULL) == SIVE_CHAIN_OK) {
            oracle(cfg, k_trace[c], &om, &ose, &ov, &ovse, work);
            *q_mean += ose * ose;
            *q_var += ovse * ovse;
        }
        rep->per_chain[TOY_ORACLE][c] = om;
        rep->per_chain[TOY_ORACLE_VAR][c] = ov;
        rep->per_chain[TOY_NAIVE][c] = sive_result_stat(r, SIVE_STAT_ONLINE_MEAN, c);
        rep->per_chain[TOY_RAW][c] = sive_result_stat(r, SIVE_STAT_RAW_VARIANCE, c);
        rep->per_chain[TOY_SIVE][c] = sive_result_stat(r, SIVE_STAT_SIVE, c);
        rep->per_chain[TOY_SIVE_UNCLIPPED][c] = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c);
        rep->per_chain[TOY_NOISE_CORRECTION][c] = sive_result_stat(r, SIVE_STAT_NOISE_CORRECTION, c);
        rep->nc_std_per_chain[c] = sive_result_stat(r, SIVE_STAT_NOISE_CORRECTION_STD, c);
        rep->sive_mcse_per_chain[c] = sive_result_stat(r, SIVE_STAT_MCSE, c);
    }
}

/* The report from a result (chains that did not finish are NaN). */
static int fill_report(const toy_config *cfg, const sive_result *r, double **k_trace,
                       toy_report *rep)
{
    const int32_t K = (int32_t)cfg->chains;
    double *work = malloc((size_t)cfg->steps * sizeof(double));
    if (!work || alloc_report(rep, K)) {
        free(work);
        return SIVE_E_NOMEM;
    }
    rep->chains = K;
    rep->chains_ok = sive_result_chains_ok(r);
    double q_mean, q_var;
    fill_chains(cfg, r, k_trace, rep, work, &q_mean, &q_var);
    free(work);
    for (int k = 0; k < TOY_EST_COUNT; k++)
        mean_std(rep->per_chain[k], K, &rep->mean[k], &rep->std[k]);
    /* standard errors of the mean over the finished chains: none, NaN */
    const double ok_n = rep->chains_ok > 0 ? (double)rep->chains_ok : NAN;
    rep->oracle_mcse = sqrt(q_mean) / ok_n;
    rep->oracle_var_mcse = sqrt(q_var) / ok_n;
    rep->sive_mcse = sive_result_mcse(r);
    rep->ess = sive_result_ess(r);
    rep->sive_ess = sive_result_stat(r, SIVE_STAT_SIVE_ESS, SIVE_SUMMARY);
    rep->noise_correction = sive_result_noise_correction(r);
    rep->noise_correction_std = sive_result_noise_correction_std(r);
    rep->rhat = sive_result_rhat(r);
    rep->flags = sive_result_flags(r);
    rep->health = strdup(sive_result_health(r));
    return rep->health ? SIVE_OK : SIVE_E_NOMEM;
}

static void free_k_trace(double **k, int64_t chains)
{
    for (int64_t c = 0; k && c < chains; c++)
        free(k[c]);
    free(k);
}

int toy_run(const toy_config *cfg, toy_report *rep, char *err, size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    if (cfg->model != 1 && cfg->model != 2) {
        snprintf(err, errlen, "unknown toy model %d (use 1 or 2)", cfg->model);
        return SIVE_E_INVALID_ARG;
    }
    toy_model_ctx ctx = {.model = cfg->model, .l0 = cfg->floor_l0, .sigma = cfg->sigma};
    sive_model model;
    toy_model(&model, &ctx);
    sive_probe *p = NULL;
    sive_result *r = NULL;
    int rc = sive_probe_new(&p);
    if (rc) {
        snprintf(err, errlen, "%s", sive_last_errmsg());
        return rc;
    }
    if (!(ctx.k_trace = alloc_k_trace(cfg))) {
        rc = SIVE_E_NOMEM;
        snprintf(err, errlen, "out of memory");
    } else if ((rc = configure(p, cfg)) || (rc = sive_probe_run(p, &model, cfg->centre, &r))) {
        snprintf(err, errlen, "%s", sive_probe_errmsg(p));
    } else if ((rc = fill_report(cfg, r, ctx.k_trace, rep))) {
        snprintf(err, errlen, "out of memory");
    } else if ((rc = sive_result_status(r))) {
        snprintf(err, errlen, "%s", sive_result_errmsg(r));
    }
    if (rc && rc != SIVE_E_DIVERGED)
        toy_report_free(rep); /* a diverged run keeps the chains that finished */
    free_k_trace(ctx.k_trace, cfg->chains);
    sive_result_free(r);
    sive_probe_free(p);
    return rc;
}
