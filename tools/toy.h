/* Analytic toy models K1 = u^2 and K2 = u^2 v^2 with a hidden floor L0 and
 * Gaussian evaluation noise, probed through the public API only (the paper's
 * Table 1 and appendix sweeps).  Used by the `sive toy` command and tests. */
#ifndef SIVE_TOOLS_TOY_H
#define SIVE_TOOLS_TOY_H

#include <sive/sive.h>

enum { TOY_ORACLE, TOY_NAIVE, TOY_RAW, TOY_SIVE, TOY_SIVE_UNCLIPPED,
       TOY_ORACLE_VAR, TOY_NOISE_CORRECTION, TOY_EST_COUNT };

typedef struct toy_config {
    int model;             /* 1: K1(u) = u^2, 2: K2(u,v) = u^2 v^2      */
    double floor_l0;       /* hidden floor L0 (100)                    */
    double sigma;          /* evaluation noise std (0.002)             */
    double t, h, base_lr, burn_in;
    int64_t steps, groups, chains, threads, stride;
    uint64_t seed;
    int64_t precondition;  /* SIVE_OPT_PRECONDITION (0)                 */
    double centre[2];      /* theta* (0.2, 0.2)                        */
    sive_progress_fn progress; /* optional, passed to the probe        */
    void *progress_user;
} toy_config;

typedef struct toy_report {
    int32_t chains, chains_ok;
    /* per chain (length chains) and across-chain mean / std (ddof 1) */
    double *per_chain[TOY_EST_COUNT];
    double mean[TOY_EST_COUNT], std[TOY_EST_COUNT];
    /* pooled standard errors of the chain averages (sqrt(sum se^2)/K) */
    double oracle_mcse, oracle_var_mcse, sive_mcse;
    double ess, sive_ess, noise_correction, noise_correction_std, rhat;
    double *nc_std_per_chain;   /* reported std of C, per chain */
    double *sive_mcse_per_chain;
    uint32_t flags;
    char *health;               /* sive_result_health() text, "" if none */
} toy_report;

/* K1 (model 1) or K2 (model 2) with hidden floor l0 and Gaussian
 * evaluation noise sigma per group, as an analytic probe model (float64,
 * no data set).  k_trace (optional, NULL) receives per chain the noiseless
 * K at every evaluated step (chains x steps).  ctx must outlive the runs. */
typedef struct toy_model_ctx {
    int model;
    double l0, sigma;
    double **k_trace;
} toy_model_ctx;
void toy_model(sive_model *m, toy_model_ctx *ctx);

/* The paper's toy operating point for model 1 or 2. */
void toy_defaults(toy_config *cfg, int model);
/* Run the probe; fills rep (free with toy_report_free).  Returns a libsive
 * status; err receives a message on failure. */
int toy_run(const toy_config *cfg, toy_report *rep, char *err, size_t errlen);
void toy_report_free(toy_report *rep);

#endif
