/* Calibration of the Monte Carlo standard error of SIVE (docs/theory.md,
 * "MCSE"): over many independent chains on models whose target is exact,
 * the spread of the per-chain unclipped SIVE must match the MCSE that each
 * chain reports for itself.
 *
 * Models, through the public API only:
 *  - K1 = u^2 (the toy of tools/toy.c: floor 100, evaluation noise 0.002 on
 *    N = 64 groups, t = 1e4, h = 2, centre 0.2), at the paper's step
 *    base_lr 0.05 and at two slow steps (0.002, 0.0005): the chain's
 *    autocorrelation time is ~1/(2 base_lr) steps for u^2;
 *  - a tethered quadratic in 8 dimensions whose four flat directions have
 *    a H + eta/h^2 = 1e-3 (autocorrelation ~1000 steps for x^2, ~2000 for
 *    x) and four curved ones, with noise 0.002 on N = 16 groups.
 *
 * Each case's K chains run as K/g runs of g chains (disjoint chain ranges
 * of one K-chain run: the same chains whatever g; g = 5, the default run,
 * unless SIVE_CALIBRATION_RUN=g, 0 for one run of all K), because a
 * chain's MCSE pools the autocorrelation shape over the chains of its run.
 * For each case it prints the ratio (sample std over chains of SIVE) /
 * (mean per-chain MCSE), the same against the root mean square MCSE (the
 * calibration of the summary MCSE sqrt(sum se^2)/g), and the ratio 0.1's
 * estimator (batch means of floor(sqrt n) on the influence series) gives
 * on the same chains.  docs/theory.md tabulates this output.
 *
 * Optionally (SIVE_CALIBRATION_MLP=<data directory>, ~10 minutes on 2
 * idle cores) the same ratios for the reference MLP at one checkpoint,
 * where no exact target exists: reported, not checked.
 *
 * With K chains the sample std has a relative standard error of about
 * sqrt((kurtosis - 1) / (4 K)), ~11 % at K = 40 for a Gaussian spread and
 * more for the skewed spread of a variance estimate from short chains.
 * The checked bounds are the issue's [0.8, 1.25]; K is set per case so
 * that they lie 3 such standard errors (with the sample kurtosis) from 1,
 * and the test asserts it.  Seeds are fixed and were not chosen to pass.
 * SIVE_CALIBRATION_SCALE=k (an integer) runs k times as many chains (the
 * first ones are the same: chain streams depend on the seed and the chain
 * number only); docs/theory.md quotes k = 1 and k = 5. */
#include <sive/data.h>
#include <sive/mlp.h>
#include <sive/sive.h>

#include "exact_ula.h"

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- models ---- */

#define QD 8

typedef struct cmodel {
    int kind; /* 1: K1, 2: quadratic */
    double l0, sigma;
    double H[QD], g[QD], centre[QD];
} cmodel;

static double cm_k(const cmodel *m, const double *th)
{
    if (m->kind == 1)
        return th[0] * th[0];
    double k = 0.0;
    for (int i = 0; i < QD; i++) {
        double x = th[i] - m->centre[i];
        k += m->g[i] * x + 0.5 * m->H[i] * x * x;
    }
    return k;
}

static int cm_grad(const void *theta, size_t d, const sive_batch *b, void *grad, double *loss,
                   void *user)
{
    const cmodel *m = user;
    const double *th = theta;
    double *g = grad;
    (void)d;
    (void)b;
    if (m->kind == 1)
        g[0] = 2.0 * th[0];
    else
        for (int i = 0; i < QD; i++)
            g[i] = m->g[i] + m->H[i] * (th[i] - m->centre[i]);
    *loss = m->l0 + cm_k(m, th);
    return 0;
}

static int cm_eval(const void *theta, size_t d, const sive_batch *b, double *group_loss,
                   void *user)
{
    const cmodel *m = user;
    (void)d;
    double k = cm_k(m, theta);
    sive_rng r;
    sive_rng_seed(&r, b->seed, 0);
    sive_rng_normals(&r, group_loss, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        group_loss[i] = m->l0 + k + m->sigma * group_loss[i];
    return 0;
}

/* ---- exact ULA targets (docs/theory.md, "Exact targets") ---- */

/* The exact target t^2 Var_q(K), and in *expect the expectation of the
 * unclipped SIVE of a stationary tail of n steps:
 *   E = t^2 n/(n-1) (Var K - Var(mean_T K))
 * (E[s2/N] is the evaluation noise's variance exactly, and the noise's
 * own share of the sample variance cancels with it).  The difference is
 * the estimator's O(tau/n) bias, which the MCSE does not contain. */
static double exact_target(const cmodel *m, double t, double a, double n, double *expect)
{
    const double eta = a / t;
    double var = 0.0, var_mean = 0.0, vm;
    if (m->kind == 1) { /* K1 = (x + 0.2)^2 with the tether at x = 0 */
        var = exact_ula_coord_var(a, eta, 2.0, 2.0, 0.4, 1.0, n, &var_mean);
    } else {
        for (int i = 0; i < QD; i++) {
            var += exact_ula_coord_var(a, eta, 0.5, m->H[i], m->g[i], 0.5 * m->H[i], n, &vm);
            var_mean += vm;
        }
    }
    *expect = t * t * n / (n - 1.0) * (var - var_mean);
    return t * t * var;
}

/* ---- one case ---- */

typedef struct calib_case {
    const char *name;
    int kind;
    double base_lr;
    int64_t steps, chains;
    uint64_t seed;
} calib_case;

typedef struct calib_out {
    double exact, expect, mean, sd, kurt;
    double mean_mcse, rms_mcse, old_mean_mcse, mean_sive_ess;
    uint32_t flags;
} calib_out;

/* The names of the raised health flags, space-separated, on stdout. */
static void print_flags(uint32_t flags)
{
    printf(" | flags:");
    for (uint32_t bit = 1; bit; bit <<= 1)
        if (flags & bit)
            printf(" %s", sive_flag_name(bit));
}

/* Chains multiplier from SIVE_CALIBRATION_SCALE (1 when unset or bad). */
static int64_t chain_scale(void)
{
    const char *s = getenv("SIVE_CALIBRATION_SCALE");
    long k = s ? strtol(s, NULL, 10) : 1;
    return k >= 1 && k <= 100 ? (int64_t)k : 1;
}

/* The case's model, centre theta and settings t, h, N. */
static void init_model(const calib_case *cc, cmodel *m, double *theta, double *t, double *h,
                       int64_t *groups)
{
    memset(m, 0, sizeof *m);
    m->kind = cc->kind;
    m->sigma = 0.002;
    if (cc->kind == 1) {
        m->l0 = 100.0;
        *t = 1e4;
        *h = 2.0;
        *groups = 64;
        theta[0] = 0.2;
    } else {
        /* four flat directions: a H + eta/h^2 = 8e-4 + 2e-4 = 1e-3 */
        const double H[QD] = {0.016, 0.016, 0.016, 0.016, 0.5, 1.0, 2.0, 4.0};
        const double g[QD] = {0.01, -0.005, 0.0, 0.002, 0.02, 0.0, -0.01, 0.03};
        m->l0 = 5.0;
        *t = 1000.0;
        *h = 0.5;
        *groups = 16;
        for (int i = 0; i < QD; i++) {
            m->H[i] = H[i];
            m->g[i] = g[i];
            m->centre[i] = theta[i] = 0.1 * (i - 3);
        }
    }
}

static void setup(const calib_case *cc, cmodel *m, sive_probe *p, double *theta, double *t)
{
    double h;
    int64_t groups;
    init_model(cc, m, theta, t, &h, &groups);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, *t), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, h), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, cc->base_lr), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.3), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, cc->steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, groups), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, cc->chains * chain_scale()),
                     SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, (int64_t)cc->seed), SIVE_OK);
}

/* The previous MCSE (batch means of floor(sqrt n) on the influence series
 * y_m = (Lbar_m - mean)^2 n/(n-1) - s2_m/N, times t^2), from the traces. */
static double old_mcse(const sive_result *r, int32_t c, double t, double N)
{
    size_t len;
    const double *lb = sive_result_trace(r, SIVE_TRACE_LBAR, c, &len);
    const double *s2 = sive_result_trace(r, SIVE_TRACE_S2, c, &len);
    size_t first = (size_t)floor(0.3 * (double)len), n = len - first;
    double mean = 0.0;
    for (size_t i = first; i < len; i++)
        mean += lb[i] / (double)n;
    double *y = malloc(n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    for (size_t i = 0; i < n; i++) {
        double d = lb[first + i] - mean;
        y[i] = d * d * (double)n / (double)(n - 1) - s2[first + i] / N;
    }
    double se = t * t * sive_stats_mcse(y, n);
    free(y);
    return se;
}

/* Chains per run: SIVE_CALIBRATION_RUN=g (0: all the case's chains in one
 * run), default 5, the default run's.  Each chain's MCSE pools the
 * autocorrelation of the chains of its run. */
static int64_t run_chains(int64_t K)
{
    const char *s = getenv("SIVE_CALIBRATION_RUN");
    long g = s ? strtol(s, NULL, 10) : 5;
    return g == 0 ? K : g >= 1 && g <= K && K % g == 0 ? (int64_t)g : 5;
}

/* One part of the case's run: chains [begin, begin + g). */
static sive_result *run_part(const calib_case *cc, int64_t begin, int64_t g)
{
    cmodel m;
    double theta[QD], t;
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    setup(cc, &m, p, theta, &t);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, begin), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, begin + g), SIVE_OK);
    sive_model model;
    sive_model_init(&model, sizeof model);
    model.dtype = SIVE_F64;
    model.dim = cc->kind == 1 ? 1 : QD;
    model.grad = cm_grad;
    model.group_loss = cm_eval;
    model.user = &m;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &model, theta, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    ck_assert_int_eq(sive_result_chains_ok(r), g);
    sive_probe_free(p);
    return r;
}

/* Sample mean, std (ddof 1) and kurtosis (m4 / m2^2) of x[0..K-1]. */
static void moments(const double *x, int64_t K, double *mean, double *sd, double *kurt)
{
    double s = 0.0, m2 = 0.0, m4 = 0.0;
    for (int64_t c = 0; c < K; c++)
        s += x[c];
    *mean = s / (double)K;
    for (int64_t c = 0; c < K; c++) {
        double d = (x[c] - *mean) * (x[c] - *mean);
        m2 += d / (double)K;
        m4 += d * d / (double)K;
    }
    *sd = sqrt(m2 * (double)K / (double)(K - 1));
    *kurt = m4 / (m2 * m2);
}

/* The case's K chains, run as K / g runs of g chains (disjoint chain
 * ranges of one K-chain run: the same chains whatever g). */
static void run_case(const calib_case *cc, int64_t g, calib_out *o)
{
    const int64_t K = cc->chains * chain_scale();
    cmodel m;
    double theta[QD], t, h;
    int64_t groups;
    init_model(cc, &m, theta, &t, &h, &groups);
    const double N = (double)groups;
    double *lam = malloc((size_t)K * sizeof *lam);
    ck_assert_ptr_nonnull(lam);
    double se = 0.0, se2 = 0.0, old = 0.0, ess = 0.0;
    for (int64_t j = 0; j < K / g; j++) {
        sive_result *r = run_part(cc, j * g, g);
        double rms = 0.0, ess_run = 0.0;
        for (int32_t c = (int32_t)(j * g); c < (int32_t)((j + 1) * g); c++) {
            lam[c] = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c);
            double mc = sive_result_stat(r, SIVE_STAT_MCSE, c);
            se += mc;
            se2 += mc * mc;
            rms += mc * mc / (double)g;
            old += old_mcse(r, c, t, N);
            ess_run += sive_result_stat(r, SIVE_STAT_SIVE_ESS, c) / (double)g;
        }
        ess += ess_run * (double)g;
        /* the summary is the mean over chains and the summary MCSE is
         * sqrt(sum se^2)/g: both follow from the per-chain values */
        ck_assert(fabs(sive_result_stat(r, SIVE_STAT_SIVE_ESS, SIVE_SUMMARY) - ess_run) <=
                  1e-9 * ess_run);
        ck_assert(fabs(sive_result_mcse(r) - sqrt(rms / (double)g)) <= 1e-12 * sqrt(rms));
        o->flags |= sive_result_flags(r);
        sive_result_free(r);
    }
    moments(lam, K, &o->mean, &o->sd, &o->kurt);
    free(lam);
    const double n = (double)(cc->steps - (int64_t)floor(0.3 * (double)cc->steps));
    o->exact = exact_target(&m, t, cc->base_lr, n, &o->expect);
    o->mean_mcse = se / K;
    o->rms_mcse = sqrt(se2 / K);
    o->old_mean_mcse = old / K;
    o->mean_sive_ess = ess / K;
}

static const calib_case cases[] = {
    {"K1 base_lr 0.05", 1, 0.05, 100000, 120, 301},
    {"K1 base_lr 0.002", 1, 0.002, 100000, 240, 302},
    {"K1 base_lr 0.0005", 1, 0.0005, 20000, 400, 303},
    {"quadratic, flat dirs", 2, 0.05, 20000, 160, 304},
    {"quadratic, flat dirs", 2, 0.05, 100000, 160, 305},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* The bounds on std / MCSE (issue 11). */
#define RATIO_LO 0.8
#define RATIO_HI 1.25

START_TEST(mcse_matches_spread)
{
    const calib_case *cc = &cases[_i];
    const int64_t K = cc->chains * chain_scale(), g = run_chains(K);
    calib_out o = {0};
    run_case(cc, g, &o);
    const double ratio = o.sd / o.mean_mcse, ratio_rms = o.sd / o.rms_mcse;
    const double ratio_old = o.sd / o.old_mean_mcse;
    const double z = (o.mean - o.expect) / (o.sd / sqrt((double)K));
    /* relative standard error of the sample std of K draws */
    const double rel = sqrt((o.kurt - 1.0) / (4.0 * (double)K));
    printf("%-21s M %6lld K %3lld | SIVE %.4f (exact %.4f; at this n %.4f, z %+.2f) std %.4f "
           "(+-%.1f%%, kurtosis %.1f) | runs of %lld: std/mean(MCSE) %.3f  std/rms(MCSE) %.3f "
           "| 0.1: %.3f | SIVE ESS %.0f",
           cc->name, (long long)cc->steps, (long long)K, o.mean, o.exact, o.expect, z, o.sd,
           100.0 * rel, o.kurt, (long long)g, ratio, ratio_rms, ratio_old, o.mean_sive_ess);
    print_flags(o.flags);
    printf("\n");
    fflush(stdout);
    /* The average over chains agrees with the exact expectation at this
     * tail length (the bias against the n = infinity target is printed). */
    ck_assert_msg(fabs(z) < 4.0, "%s: SIVE %g vs %g expected at this n (z %g)", cc->name, o.mean,
                  o.expect, z);
    /* Enough chains that a calibrated MCSE lies within the bounds with a
     * margin of 3 standard errors of the std (a check that can fail). */
    ck_assert_msg(3.0 * rel < log(RATIO_HI) && 3.0 * rel < -log(RATIO_LO),
                  "%s: too few chains: the std is uncertain by %.1f %%", cc->name, 100.0 * rel);
    ck_assert_msg(ratio > RATIO_LO && ratio < RATIO_HI, "%s: std / mean MCSE = %.3f (runs of "
                  "%lld)", cc->name, ratio, (long long)g);
    ck_assert_msg(ratio_rms > RATIO_LO && ratio_rms < RATIO_HI, "%s: std / rms MCSE = %.3f "
                  "(runs of %lld)", cc->name, ratio_rms, (long long)g);
}
END_TEST


/* Mean of the second half of a chain's L-bar tail minus that of the first. */
static double halves_drift(const sive_result *r, int32_t c)
{
    size_t len;
    const double *lb = sive_result_trace(r, SIVE_TRACE_LBAR, c, &len);
    size_t first = (size_t)floor(0.3 * (double)len), h = (len - first) / 2;
    double m1 = 0.0, m2 = 0.0;
    for (size_t i = 0; i < h; i++) {
        m1 += lb[first + i] / (double)h;
        m2 += lb[len - h + i] / (double)h;
    }
    return m2 - m1;
}

/* The MLP 784-16-16-10 (initialisation seed 5) after 10 epochs of SGD
 * (lr 0.05, batch 64, seed 5) on the bundled training digits, probed at
 * the default options but M = 4000, N = 64, B_eval = 64, 40 chains. */
START_TEST(mlp_report)
{
    sive_dataset *train = NULL, *test = NULL;
    int rc = sive_dataset_open_dir(getenv("SIVE_CALIBRATION_MLP"), &train, &test);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    sive_mlp *m = NULL;
    ck_assert_int_eq(sive_mlp_new(&m, 784, 16, 16, 10), SIVE_OK);
    float *theta = malloc(sive_mlp_dim(m) * sizeof *theta);
    ck_assert_ptr_nonnull(theta);
    ck_assert_int_eq(sive_mlp_init_params(m, theta, 5), SIVE_OK);
    sive_mlp_work *w = NULL;
    ck_assert_int_eq(sive_mlp_work_new(&w, m, 0, 1), SIVE_OK);
    for (uint64_t e = 0; e < 10; e++)
        ck_assert_int_eq(sive_mlp_train_epoch(m, w, theta, train, 0.05f, 64, 5, e, NULL), SIVE_OK);
    sive_mlp_work_free(w);

    const int32_t K = 40;
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 4000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 64), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 64), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, K), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 31), SIVE_OK);
    sive_model model;
    ck_assert_int_eq(sive_model_init(&model, sizeof model), SIVE_OK);
    ck_assert_int_eq(sive_mlp_model(&model, m, train, 1), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &model, theta, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_chains_ok(r), K);
    double s = 0.0, q = 0.0, se = 0.0, se2 = 0.0, old = 0.0, ess = 0.0, drift = 0.0;
    int down = 0;
    for (int32_t c = 0; c < K; c++) {
        double e = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c);
        double mc = sive_result_stat(r, SIVE_STAT_MCSE, c);
        s += e;
        q += e * e;
        se += mc;
        se2 += mc * mc;
        old += old_mcse(r, c, 1e4, 64.0);
        ess += sive_result_stat(r, SIVE_STAT_SIVE_ESS, c);
        double d = halves_drift(r, c);
        down += d < 0.0;
        drift += d / K;
    }
    double mean = s / K, sd = sqrt((q - K * mean * mean) / (K - 1));
    printf("MLP 784-16-16-10, 10 epochs  M %6d K %3d | SIVE %.1f std %.1f | std/mean(MCSE) %.3f  "
           "std/rms(MCSE) %.3f | before: %.3f | SIVE ESS %.0f | tail ESS of Lbar %.0f, "
           "split-Rhat %.3f, C %.1f | mean loss falls from the first to the second tail half "
           "on %d of %d chains (mean change %+.5f)",
           4000, K, mean, sd, sd / (se / K), sd / sqrt(se2 / K), sd / (old / K), ess / K,
           sive_result_ess(r), sive_result_rhat(r), sive_result_noise_correction(r), down, K,
           drift);
    print_flags(sive_result_flags(r));
    printf("\n");
    sive_result_free(r);
    sive_model_destroy(&model);
    sive_probe_free(p);
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    sive_dataset_free(test);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calibration");
    TCase *tc = tcase_create("mcse");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, mcse_matches_spread, 0, N_CASES);
    suite_add_tcase(s, tc);
    if (getenv("SIVE_CALIBRATION_MLP")) {
        TCase *tm = tcase_create("mlp");
        tcase_set_timeout(tm, 3600);
        tcase_add_test(tm, mlp_report);
        suite_add_tcase(s, tm);
    }
    return check_run(s);
}
