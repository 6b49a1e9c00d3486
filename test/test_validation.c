/* Validation against exact targets (docs/theory.md, "Exact targets used by
 * the tests"): K1's ULA formulas, the Gaussian ULA law of a tethered
 * quadratic with slopes and flat directions, the noise correction and its
 * reported uncertainty.  Tolerances are multiples of Monte Carlo standard
 * errors computed from the runs. */
#include "toy.h"

#include <sive/sive.h>

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exact ULA stationary law of one coordinate x' = rho x - a g + sqrt(2 eta) xi
 * with rho = 1 - a H - eta/h^2: N(mu, v). */
static void ar1_law(double a, double eta, double h, double H, double g, double *mu, double *v)
{
    double rho = 1.0 - a * H - eta / (h * h);
    *mu = -a * g / (1.0 - rho);
    *v = 2.0 * eta / (1.0 - rho * rho);
}

/* E and Var of b x + c x^2 for x ~ N(mu, v). */
static void quad_moments(double b, double c, double mu, double v, double *e, double *var)
{
    *e = b * mu + c * (mu * mu + v);
    *var = (b + 2.0 * c * mu) * (b + 2.0 * c * mu) * v + 2.0 * c * c * v * v;
}

static void check_k1(double a, int precondition)
{
    toy_config cfg;
    toy_defaults(&cfg, 1);
    cfg.base_lr = a;
    cfg.precondition = precondition;
    cfg.chains = 8;
    cfg.threads = 2;
    cfg.seed = 2024;
    toy_report rep;
    char err[512];
    ck_assert_int_eq(toy_run(&cfg, &rep, err, sizeof err), SIVE_OK);
    ck_assert_int_eq(rep.chains_ok, 8);

    /* Exact tethered law (centre 0.2 pulls the mean off 0 by O(eta/h^2)). */
    double eta = a / cfg.t, mu, v, e, var;
    /* K1 = u^2 with u = x + 0.2 and the tether at x = 0: drift 2u = 2x + 0.4 */
    ar1_law(a, eta, cfg.h, 2.0, 0.4, &mu, &v);
    quad_moments(0.4, 1.0, mu, v, &e, &var);
    double exact_mean = cfg.t * (e + 0.04), exact_var = cfg.t * cfg.t * var;
    /* ...which is the paper's Appendix B formula to 1e-4 */
    ck_assert(fabs(exact_mean - 1.0 / (2.0 * (1.0 - a))) < 1e-4);
    ck_assert(fabs(exact_var - 1.0 / (2.0 * (1.0 - a) * (1.0 - a))) < 1e-4);

    double z_mean = (rep.mean[TOY_ORACLE] - exact_mean) / rep.oracle_mcse;
    double z_sive = (rep.mean[TOY_SIVE_UNCLIPPED] - exact_var) / rep.sive_mcse;
    double nc_theory = cfg.t * cfg.t * cfg.sigma * cfg.sigma / (double)cfg.groups;
    double z_nc = (rep.noise_correction - nc_theory) / rep.noise_correction_std;
    double raw_minus_sive = rep.mean[TOY_RAW] - rep.mean[TOY_SIVE_UNCLIPPED];
    printf("K1 a=%.2f%s: oracle %.4f (exact %.4f, z %.2f)  SIVE %.4f (exact %.4f, z %.2f)  "
           "raw-SIVE %.4f (t^2 s^2/N %.4f, z %.2f)\n",
           a, precondition ? " preconditioned" : "", rep.mean[TOY_ORACLE], exact_mean, z_mean, rep.mean[TOY_SIVE_UNCLIPPED], exact_var,
           z_sive, raw_minus_sive, nc_theory, z_nc);
    ck_assert_msg(fabs(z_mean) < 3.0, "oracle mean off by %.2f MCSE", z_mean);
    ck_assert_msg(fabs(z_sive) < 3.0, "SIVE off by %.2f MCSE", z_sive);
    ck_assert_msg(fabs(z_nc) < 3.0, "noise correction off by %.2f std", z_nc);
    ck_assert(fabs(raw_minus_sive - rep.noise_correction) < 1e-9 * nc_theory);
    toy_report_free(&rep);
}

START_TEST(k1_base_lr_005) { check_k1(0.05, 0); }
END_TEST

START_TEST(k1_base_lr_010) { check_k1(0.10, 0); }
END_TEST

/* The frozen preconditioner (SIVE_OPT_PRECONDITION) in one dimension is
 * P = mean r / r = 1: the same law, reached through its own estimation
 * window, freeze and update (docs/theory.md, "Frozen preconditioner"). */
START_TEST(k1_preconditioned) { check_k1(0.05, 1); }
END_TEST

/* ---- tethered quadratic in 12 dimensions ---- */
#define QD 12
typedef struct qmodel {
    double H[QD], g[QD], centre[QD], l0, sigma;
} qmodel;

static double qk(const qmodel *q, const double *th)
{
    double k = 0.0;
    for (int i = 0; i < QD; i++) {
        double x = th[i] - q->centre[i];
        k += q->g[i] * x + 0.5 * q->H[i] * x * x;
    }
    return k;
}

static int q_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                  double *loss, void *user)
{
    const qmodel *q = user;
    const double *th = theta;
    double *g = grad;
    (void)d;
    (void)b;
    for (int i = 0; i < QD; i++)
        g[i] = q->g[i] + q->H[i] * (th[i] - q->centre[i]);
    *loss = q->l0 + qk(q, th);
    return 0;
}

static int q_eval(const void *theta, size_t d, const sive_batch *b, double *gl,
                  void *user)
{
    const qmodel *q = user;
    const double *th = theta;
    (void)d;
    double k = qk(q, th);
    sive_rng r;
    sive_rng_seed(&r, b->seed, 0);
    sive_rng_normals(&r, gl, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = q->l0 + k + q->sigma * gl[i];
    return 0;
}

START_TEST(quadratic_exact_ula)
{
    /* Curvatures with three flat directions, slopes on flat and curved ones. */
    qmodel q = {.l0 = 5.0, .sigma = 0.002};
    const double H[QD] = {0.0, 0.0, 0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 1.0, 2.0, 3.0, 4.0};
    const double g[QD] = {0.01, -0.005, 0.0, 0.02, 0.0, -0.01, 0.03, 0.0, 0.05, -0.02, 0.0, 0.01};
    for (int i = 0; i < QD; i++) {
        q.H[i] = H[i];
        q.g[i] = g[i];
        q.centre[i] = 0.1 * (i - 6);
    }
    const double t = 1000.0, a = 0.05, h = 0.1, eta = a / t;
    const int64_t N = 16, K = 4;
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    m.dtype = SIVE_F64;
    m.dim = QD;
    m.grad = q_grad;
    m.group_loss = q_eval;
    m.user = &q;
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, t), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, a), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, h), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, q.l0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, N), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, K), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 11), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, q.centre, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);

    double e_sum = 0.0, v_sum = 0.0;
    for (int i = 0; i < QD; i++) {
        double mu, v, e, var;
        ar1_law(a, eta, h, H[i], g[i], &mu, &v);
        quad_moments(g[i], 0.5 * H[i], mu, v, &e, &var);
        e_sum += e;
        v_sum += var;
    }
    double exact_mean = t * e_sum, exact_var = t * t * v_sum;

    /* Pooled MCSE of the anchored mean from each chain's Lbar tail. */
    double q2 = 0.0;
    for (int32_t c = 0; c < K; c++) {
        size_t n;
        const double *lb = sive_result_trace(r, SIVE_TRACE_LBAR, c, &n);
        double se = t * sive_stats_mcse(lb + 30000, n - 30000);
        q2 += se * se;
    }
    double mean_se = sqrt(q2) / K;
    double est_mean = sive_result_stat(r, SIVE_STAT_ANCHORED_MEAN, SIVE_SUMMARY);
    double est_var = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    double z_mean = (est_mean - exact_mean) / mean_se;
    double z_var = (est_var - exact_var) / sive_result_mcse(r);
    printf("quadratic d=%d: anchored mean %.4f (exact %.4f, z %.2f)  SIVE %.4f (exact %.4f, z %.2f)\n",
           QD, est_mean, exact_mean, z_mean, est_var, exact_var, z_var);
    ck_assert_msg(fabs(z_mean) < 3.0, "anchored mean off by %.2f MCSE", z_mean);
    ck_assert_msg(fabs(z_var) < 3.0, "SIVE off by %.2f MCSE", z_var);
    /* the slope makes the online mean useless but the chain must be healthy */
    ck_assert(!(sive_result_flags(r) & (SIVE_FLAG_DIVERGED | SIVE_FLAG_HIGH_RHAT)));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* The reported std of the noise correction C matches the spread of C over
 * independent chains (C = raw - unclipped SIVE). */
START_TEST(noise_correction_std_calibrated)
{
    toy_config cfg;
    toy_defaults(&cfg, 1);
    cfg.chains = 40;
    cfg.steps = 20000;
    cfg.threads = 2;
    cfg.seed = 99;
    toy_report rep;
    char err[512];
    ck_assert_int_eq(toy_run(&cfg, &rep, err, sizeof err), SIVE_OK);
    double m = 0.0, s = 0.0, rep_std = 0.0;
    for (int c = 0; c < 40; c++) {
        double diff = rep.per_chain[TOY_RAW][c] - rep.per_chain[TOY_SIVE_UNCLIPPED][c];
        m += diff;
        rep_std += rep.nc_std_per_chain[c];
    }
    m /= 40.0;
    rep_std /= 40.0;
    for (int c = 0; c < 40; c++) {
        double diff = rep.per_chain[TOY_RAW][c] - rep.per_chain[TOY_SIVE_UNCLIPPED][c];
        s += (diff - m) * (diff - m);
    }
    s = sqrt(s / 39.0);
    double gauss = rep.noise_correction * sqrt(2.0 / (14000.0 * 63.0));
    printf("noise correction over 40 chains: spread %.5f, reported %.5f (ratio %.3f), Gaussian theory %.5f\n",
           s, rep_std, s / rep_std, gauss);
    ck_assert_msg(s / rep_std > 0.7 && s / rep_std < 1.4, "ratio %.3f", s / rep_std);
    toy_report_free(&rep);
}
END_TEST

/* K2 (singular): no closed form under ULA, but on the same trajectory SIVE
 * must match the noiseless variance t^2 Var[K] (the oracle variance) and
 * raw - SIVE must match t^2 sigma^2 / N. */
START_TEST(k2_paired_with_oracle)
{
    toy_config cfg;
    toy_defaults(&cfg, 2);
    cfg.threads = 2;
    cfg.seed = 7;
    toy_report rep;
    char err[512];
    ck_assert_int_eq(toy_run(&cfg, &rep, err, sizeof err), SIVE_OK);
    double diff = rep.mean[TOY_SIVE_UNCLIPPED] - rep.mean[TOY_ORACLE_VAR];
    double nc_theory = cfg.t * cfg.t * cfg.sigma * cfg.sigma / (double)cfg.groups;
    printf("K2: SIVE %.4f  oracle variance %.4f  diff %.4f (MCSE %.4f)  oracle mean %.4f  naive %.3f  raw %.3f\n",
           rep.mean[TOY_SIVE_UNCLIPPED], rep.mean[TOY_ORACLE_VAR], diff, rep.sive_mcse,
           rep.mean[TOY_ORACLE], rep.mean[TOY_NAIVE], rep.mean[TOY_RAW]);
    ck_assert_msg(fabs(diff) < 3.0 * rep.sive_mcse, "paired diff %.4f vs MCSE %.4f", diff,
                  rep.sive_mcse);
    ck_assert(fabs(rep.noise_correction - nc_theory) < 3.0 * rep.noise_correction_std);
    toy_report_free(&rep);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("validation");
    TCase *tc = tcase_create("analytic");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, k1_base_lr_005);
    tcase_add_test(tc, k1_base_lr_010);
    tcase_add_test(tc, k1_preconditioned);
    tcase_add_test(tc, quadratic_exact_ula);
    tcase_add_test(tc, noise_correction_std_calibrated);
    tcase_add_test(tc, k2_paired_with_oracle);
    suite_add_tcase(s, tc);
    return check_run(s);
}
