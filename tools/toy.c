/* Toy models on the public libsive API (see toy.h). */
#include "toy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct toy_ctx {
    int model;
    double l0, sigma;
    double **k_trace; /* per chain: noiseless K(theta_m) at evaluated steps */
} toy_ctx;

static double toy_k(int model, const double *th)
{
    return model == 1 ? th[0] * th[0] : th[0] * th[0] * th[1] * th[1];
}

static int toy_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                    double *loss, void *user)
{
    const toy_ctx *ctx = user;
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
    const toy_ctx *ctx = user;
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

int toy_run(const toy_config *cfg, toy_report *rep, char *err, size_t errlen)
{
    memset(rep, 0, sizeof *rep);
    if (cfg->model != 1 && cfg->model != 2) {
        snprintf(err, errlen, "unknown toy model %d (use 1 or 2)", cfg->model);
        return SIVE_E_INVALID_ARG;
    }
    size_t dim = (size_t)cfg->model;
    int32_t K = (int32_t)cfg->chains;
    toy_ctx ctx = {.model = cfg->model, .l0 = cfg->floor_l0, .sigma = cfg->sigma};
    sive_probe *p = NULL;
    sive_result *r = NULL;
    double *work = NULL;
    sive_model model;
    sive_model_init(&model, sizeof model);
    model.dtype = SIVE_F64;
    model.dim = dim;
    model.grad = toy_grad;
    model.group_loss = toy_eval;
    model.user = &ctx;
    int rc = sive_probe_new(&p);
    if (rc)
        goto fail_noprobe;
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
        (rc = sive_probe_set_progress(p, cfg->progress, cfg->progress_user)))
        goto fail;

    ctx.k_trace = calloc((size_t)K, sizeof *ctx.k_trace);
    if (!ctx.k_trace) {
        rc = SIVE_E_NOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (int32_t c = 0; c < K; c++) {
        ctx.k_trace[c] = malloc((size_t)cfg->steps * sizeof(double));
        if (!ctx.k_trace[c]) {
            rc = SIVE_E_NOMEM;
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    }
    if ((rc = sive_probe_run(p, &model, cfg->centre, &r)))
        goto fail;
    rc = sive_result_status(r);

    work = malloc((size_t)cfg->steps * sizeof(double));
    for (int k = 0; k < TOY_EST_COUNT; k++)
        rep->per_chain[k] = malloc((size_t)K * sizeof(double));
    rep->nc_std_per_chain = malloc((size_t)K * sizeof(double));
    rep->sive_mcse_per_chain = malloc((size_t)K * sizeof(double));
    int alloc_ok = work && rep->nc_std_per_chain && rep->sive_mcse_per_chain;
    for (int k = 0; k < TOY_EST_COUNT; k++)
        alloc_ok = alloc_ok && rep->per_chain[k];
    if (!alloc_ok) {
        rc = SIVE_E_NOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rep->chains = K;
    rep->chains_ok = sive_result_chains_ok(r);
    double q_mean = 0.0, q_var = 0.0;
    for (int32_t c = 0; c < K; c++) {
        int ok = sive_result_chain_status(r, c, NULL) == SIVE_CHAIN_OK;
        double om = NAN, ose = NAN, ov = NAN, ovse = NAN;
        if (ok) {
            oracle(cfg, ctx.k_trace[c], &om, &ose, &ov, &ovse, work);
            q_mean += ose * ose;
            q_var += ovse * ovse;
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
    for (int k = 0; k < TOY_EST_COUNT; k++)
        mean_std(rep->per_chain[k], K, &rep->mean[k], &rep->std[k]);
    int32_t ok_n = rep->chains_ok > 0 ? rep->chains_ok : 1;
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
    if (!rep->health) {
        rc = SIVE_E_NOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (rc)
        snprintf(err, errlen, "%s", sive_result_errmsg(r));
    goto out;

fail:
    snprintf(err, errlen, "%s", sive_probe_errmsg(p));
    goto out;
fail_noprobe:
    snprintf(err, errlen, "%s", sive_last_errmsg());
out:
    if (rc && rc != SIVE_E_DIVERGED)
        toy_report_free(rep);
    if (ctx.k_trace)
        for (int32_t c = 0; c < K; c++)
            free(ctx.k_trace[c]);
    free(ctx.k_trace);
    free(work);
    sive_result_free(r);
    sive_probe_free(p);
    return rc;
}
