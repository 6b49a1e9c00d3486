/* The health flags of issue 18 and the step extrapolation, against exact
 * targets (docs/theory.md, "Localisation and step", "Step bias"):
 *  - DLAMBDA_DLOG_H on a tethered quadratic against its exact value under
 *    the chain's (Gaussian ULA) law, and radius_bound raised there and
 *    not at a wide radius;
 *  - STEP_CURVATURE on K1 against its exact value, step_bias raised at a
 *    large step and not at a small one;
 *  - imprecise exactly when MCSE > 0.3 |lambda-hat|;
 *  - unstable's climb trigger raised on a chain that sits far above the
 *    loss at theta* (a narrow dip there), and not on the plain quadratic
 *    at the defaults nor on K1 at 4 times the default step;
 *  - unstable's variance-over-mean trigger not raised on a chain that went
 *    downhill past the slope proxy (a closed-form "summit": theta* not
 *    near a minimum), and raised on K1's even blow-up near the ULA step's
 *    stability limit;
 *  - step_extrapolate: the run at base_lr is untouched, SIVE_STEP0 is
 *    2 lambda(a/2) - lambda(a) of the two runs, and (argument "slow") K1's
 *    continuous-law value 0.5 is recovered;
 *  - (argument "slow") HALVES_Z ~ N(0, 1) on 200 stationary K1 chains
 *    (test_stats checks the same on AR(1) series in the unit suite).
 * Tolerances are multiples of standard errors computed from the runs. */
#include "exact_ula.h"
#include "quad.h"

#include <sive/sive.h>

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* K = 1 + x^2 (H = 2) around theta*, with Gaussian evaluation noise sigma
 * (test/quad.h). */

typedef struct setting {
    double centre, h, a, sigma;
    int64_t steps, chains, groups, extrapolate;
    uint64_t seed;
} setting;

static sive_result *run(const setting *s)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0};
    q.sigma = s->sigma;
    sive_model m = quad_fixture_model(&q, 1);
    sive_probe *p = NULL;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, s->h), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, s->a), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, s->steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, s->chains), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, s->groups), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, (int64_t)s->seed), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "step_extrapolate", s->extrapolate ? "1" : "0"),
                     SIVE_OK);
    double th = s->centre;
    ck_assert_int_eq(sive_probe_run(p, &m, &th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    sive_probe_free(p);
    return r;
}

/* Stationary ULA variance of x = theta - theta* for K = x^2 at theta* = 0. */
static double ula_v(double a, double t, double h)
{
    double eta = a / t, rho = 1.0 - 2.0 * a - eta / (h * h);
    return 2.0 * eta / (1.0 - rho * rho);
}

#define T 1e4

START_TEST(radius_slope_exact)
{
    /* t H h^2 = 4: the tether keeps r = 0.8 of the fluctuation (bias 36 %).
     * For x ~ N(0, v), t^2 Cov((K - EK)^2, x^2)/h^2 = 8 t^2 v^3 / h^2. */
    const double h = sqrt(4.0 / (2.0 * T));
    setting s = {0.0, h, 0.01, 1e-5, 100000, 20, 16, 0, 11};
    sive_result *r = run(&s);
    const double v = ula_v(s.a, T, h), exact = 8.0 * T * T * v * v * v / (h * h);
    double est = sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H, SIVE_SUMMARY);
    double se = sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H_SE, SIVE_SUMMARY);
    double lam = sive_result_lambda(r);
    printf("dlambda/dln h at t H h^2 = 4: %.4f +- %.4f (exact %.4f, z %.2f), d ln lambda/d ln h "
           "%.3f; flags 0x%x\n", est, se, exact, (est - exact) / se, est / lam,
           sive_result_flags(r));
    ck_assert_msg(fabs(est - exact) < 4.0 * se, "off by %.2f SE", (est - exact) / se);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_RADIUS_BOUND);
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "radius_bound: "));
    sive_result_free(r);
}
END_TEST

START_TEST(radius_quiet_when_wide)
{
    /* t H h^2 = 400: d ln lambda / d ln h = 4 (1 - r) = 0.01, the bias
     * 0.5 %.  The flag would need the estimate 0.09 above its expectation:
     * the test checks that this is more than 3.1 SE (false-alarm chance
     * below 1e-3), then that it is silent. */
    const double h = sqrt(400.0 / (2.0 * T));
    setting s = {0.0, h, 0.01, 1e-5, 100000, 20, 16, 0, 12};
    sive_result *r = run(&s);
    double lam = sive_result_lambda(r);
    double se = sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H_SE, SIVE_SUMMARY) / lam;
    double e = sive_result_stat(r, SIVE_STAT_DLAMBDA_DLOG_H, SIVE_SUMMARY) / lam;
    printf("d ln lambda/d ln h at t H h^2 = 400: %.4f +- %.4f; flags 0x%x\n", e, se,
           sive_result_flags(r));
    ck_assert_msg((0.1 - 0.0099) / se > 3.1, "se %.3g too large for the check", se);
    ck_assert(!(sive_result_flags(r) & SIVE_FLAG_RADIUS_BOUND));
    sive_result_free(r);
}
END_TEST

START_TEST(step_curvature_k1)
{
    /* a t E[g^2] = 4 a t v_ULA; its share of lambda-hat at a = 0.2 is
     * ~0.3 (exact ULA bias 56 %), at a = 0.0125 ~0.025 (2.5 %) */
    const double as[2] = {0.2, 0.0125};
    for (int k = 0; k < 2; k++) {
        setting s = {0.0, 2.0, as[k], 1e-5, 50000, 10, 16, 0, 13};
        sive_result *r = run(&s);
        double exact = 4.0 * s.a * T * ula_v(s.a, T, s.h);
        double est = sive_result_stat(r, SIVE_STAT_STEP_CURVATURE, SIVE_SUMMARY);
        double se = sive_result_stat_std(r, SIVE_STAT_STEP_CURVATURE) / sqrt(10.0);
        double share = est / (2.0 * sive_result_lambda(r));
        printf("K1 a = %g: step curvature %.4f +- %.4f (exact %.4f), share %.3f; flags 0x%x\n",
               s.a, est, se, exact, share, sive_result_flags(r));
        ck_assert_msg(fabs(est - exact) < 4.0 * se, "off by %.2f SE", (est - exact) / se);
        ck_assert_int_eq(!!(sive_result_flags(r) & SIVE_FLAG_STEP_BIAS), k == 0);
        /* t (mean - L(theta*)) = t v_ULA = sqrt(1 + ULA bias) d/2 = 1.25 d/2
         * at a = 0.2 (d = 1): under the climb trigger's 1.5 (1 + share) d/2
         * = 1.95 d/2 */
        ck_assert(!(sive_result_flags(r) & SIVE_FLAG_UNSTABLE));
        sive_result_free(r);
    }
}
END_TEST

/* K = 1 + x^2 with a dip of depth w and width eps at theta* = 0:
 * L = 1 + |x|^2 + w (1 - exp(-|x|^2 / eps^2)).  At t w = 40 d/2 and eps
 * far below the step's noise sqrt(2 a / t) the chain steps out of the dip
 * at once (its Gibbs weight, ~ (eps sqrt(t))^d e^(t w), is ~1e-3 at d =
 * 4) and fluctuates evenly at w above L(theta*): t (mean - L(theta*)) ~
 * t w + d/2, no spikes. */
typedef struct dip {
    quad_fixture q;
    double w, eps;
} dip;

static double dip_loss(const dip *p, const double *th, size_t d, double *f)
{
    double s = 0.0;
    for (size_t i = 0; i < d; i++)
        s += th[i] * th[i];
    *f = exp(-s / (p->eps * p->eps));
    return quad_fixture_loss(&p->q, th, d) + p->w * (1.0 - *f);
}

static int dip_grad(const void *theta, size_t d, const sive_batch *b, void *grad, double *loss,
                    void *user)
{
    const dip *p = user;
    const double *th = theta;
    double *g = grad, f;
    (void)b;
    *loss = dip_loss(p, th, d, &f);
    for (size_t i = 0; i < d; i++)
        g[i] = p->q.k * th[i] + 2.0 * p->w * f * th[i] / (p->eps * p->eps);
    return 0;
}

static int dip_group(const void *theta, size_t d, const sive_batch *b, double *gl, void *user)
{
    const dip *p = user;
    double f;
    quad_noisy_groups(b, dip_loss(p, theta, d, &f), p->q.sigma, gl);
    return 0;
}

static sive_result *dip_run(dip *p, size_t d)
{
    sive_model m = quad_fixture_model(&p->q, d);
    m.grad = dip_grad;
    m.group_loss = dip_group;
    m.user = p;
    sive_probe *pr = NULL;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_new(&pr), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(pr, SIVE_OPT_H, 2.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_STEPS, 20000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_CHAINS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_SEED, 15), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_THREADS, 2), SIVE_OK);
    double th[4] = {0};
    ck_assert_int_eq(sive_probe_run(pr, &m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    sive_probe_free(pr);
    return r;
}

START_TEST(unstable_on_climb)
{
    const double ws[2] = {0.0, 40.0 * 2.0 / T};
    for (int k = 0; k < 2; k++) {
        dip p = {{.k = 2.0, .l0 = 1.0, .sigma = 1e-5}, ws[k], 1e-5};
        sive_result *r = dip_run(&p, 4);
        const char *health = sive_result_health(r);
        printf("dip of depth t w = %g: lambda-hat %.4g, flags 0x%x\n%s", T * p.w,
               sive_result_lambda(r), sive_result_flags(r), health);
        ck_assert_int_eq(!!(sive_result_flags(r) & SIVE_FLAG_UNSTABLE), k == 1);
        if (k == 1) {
            ck_assert_ptr_nonnull(strstr(health, "unstable: chain "));
            ck_assert_ptr_nonnull(strstr(health, "climbed to a loss level far above"));
            ck_assert_ptr_nonnull(strstr(health, "lower base_lr"));
        }
        sive_result_free(r);
    }
}
END_TEST

/* unstable's variance-over-mean trigger is skipped on a chain that went
 * downhill past the slope proxy, t (mean - Lbar_0) + t^2 h^2 ||g_0||^2 <= 0
 * (theta* not near a minimum): on the "summit"
 *   L = l0 + b sum x_i - (c/2) |x|^2   (x = theta - theta*, theta* = 0)
 * with t c h^2 = 1/2 (the tethered law exp(-t L - |x|^2/(2h^2)) is
 * Gaussian: precision P = 1/h^2 - t c, mean mu = -t b/P per coordinate),
 *   t (E L - l0) = t d (b mu - (c/2)(mu^2 + 1/P)) = -1.25 d,
 *   slope proxy t^2 h^2 d b^2 = 0.25 d (t b h = 1/2),
 *   lambda = t^2 d ((b - c mu)^2 / P + c^2 / (2 P^2)) = 2.5 d,
 * so the mean estimator plus the slope proxy is -d while lambda-hat is
 * 2.5 d: without the guard lambda-hat - 3 (-d) = 5.5 d, many standard
 * errors, would raise unstable (nothing else does: the chain descends, no
 * spikes).  The exact sampler (metropolis 1) makes lambda-hat the closed
 * form above.  The counterpart uphill: K1 (L = 1 + x^2) under ULA at
 * base_lr 0.95 (a k = 1.9, near the step's stability limit) blows up
 * evenly above theta*, t k s^2 ~ 2/(2 - a k) = 20 times the law's
 * spread: lambda-hat ~ 20 times the mean estimator, and the trigger
 * fires (as on the suite's L2 10-20-10 r3 in test_truth). */
typedef struct summit {
    quad_fixture q; /* l0, and sigma the evaluation noise */
    double b, c;
} summit;

static double summit_loss(const summit *p, const double *th, size_t d)
{
    double s = 0.0, l = 0.0;
    for (size_t i = 0; i < d; i++) {
        l += th[i];
        s += th[i] * th[i];
    }
    return p->q.l0 + p->b * l - 0.5 * p->c * s;
}

static int summit_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                       double *loss, void *user)
{
    const summit *p = user;
    const double *th = theta;
    double *g = grad;
    (void)b;
    *loss = summit_loss(p, th, d);
    for (size_t i = 0; i < d; i++)
        g[i] = p->b - p->c * th[i];
    return 0;
}

static int summit_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                        void *user)
{
    const summit *p = user;
    quad_noisy_groups(b, summit_loss(p, theta, d), p->q.sigma, gl);
    return 0;
}

START_TEST(unstable_var_mean_not_downhill)
{
    enum { D = 4 };
    const double h = 0.01, c = 0.5 / (T * h * h), b = 0.5 / (T * h);
    summit p = {{.l0 = 1.0, .sigma = 1e-6}, b, c};
    sive_model m = quad_fixture_model(&p.q, D);
    m.grad = summit_grad;
    m.group_loss = summit_group;
    m.user = &p;
    sive_probe *pr = NULL;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_new(&pr), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(pr, SIVE_OPT_H, h), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(pr, "metropolis", "1"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_STEPS, 20000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_CHAINS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_SEED, 21), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(pr, SIVE_OPT_THREADS, 2), SIVE_OK);
    double th[D] = {0};
    ck_assert_int_eq(sive_probe_run(pr, &m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double prec = 1.0 / (h * h) - T * c, mu = -T * b / prec;
    const double want = T * T * D * ((b - c * mu) * (b - c * mu) / prec + c * c / (2 * prec * prec));
    const double mean_est = T * (sive_result_stat(r, SIVE_STAT_TAIL_MEAN_LOSS, SIVE_SUMMARY) - 1.0),
                 slope = sive_result_stat(r, SIVE_STAT_SLOPE_PROXY, SIVE_SUMMARY);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r);
    const char *health = sive_result_health(r);
    printf("summit (downhill): lambda-hat %.4g +- %.3g (closed form %.4g), t (mean - L0) %.4g "
           "(closed form %.4g) + slope proxy %.4g (%.4g), flags 0x%x\n%s", lam, se, want,
           mean_est, T * D * (b * mu - 0.5 * c * (mu * mu + 1.0 / prec)), slope,
           T * T * h * h * D * b * b, sive_result_flags(r), health);
    /* the model is what it claims: lambda-hat the closed form, the chain
     * well below L(theta*) past the slope proxy */
    ck_assert_msg(fabs(lam - want) < 4.0 * se, "lambda-hat %g, closed form %g", lam, want);
    ck_assert_double_eq_tol(slope, T * T * h * h * D * b * b, 1e-9);
    ck_assert_msg(mean_est + slope < -0.5 * D, "%g + %g", mean_est, slope);
    /* and not flagged: lambda-hat is 2.5 times |mean + slope| */
    ck_assert_msg(!(sive_result_flags(r) & SIVE_FLAG_UNSTABLE), "%s", health);
    ck_assert_ptr_null(strstr(health, "excursions the mean loss does not follow"));
    sive_result_free(r);
    sive_probe_free(pr);
    /* uphill, the trigger fires: K1 under ULA near its stability limit */
    setting k1 = {.centre = 0.0, .h = 2.0, .a = 0.95, .sigma = 1e-5, .steps = 20000,
                  .chains = 4, .groups = 16, .seed = 5};
    r = run(&k1);
    health = sive_result_health(r);
    printf("K1 at base_lr 0.95 (uphill): lambda-hat %.4g, flags 0x%x\n%s",
           sive_result_lambda(r), sive_result_flags(r), health);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_UNSTABLE);
    ck_assert_ptr_nonnull(strstr(health, "excursions the mean loss does not follow"));
    sive_result_free(r);
}
END_TEST

START_TEST(imprecise_by_definition)
{
    const int64_t steps[2] = {40, 50000};
    for (int k = 0; k < 2; k++) {
        setting s = {0.0, 2.0, 0.0125, 1e-3, steps[k], 2, 16, 0, 14};
        sive_result *r = run(&s);
        double lam = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
        int want = sive_result_mcse(r) > 0.3 * fabs(lam);
        printf("steps %lld: lambda %.4g mcse %.3g -> imprecise %d\n", (long long)steps[k], lam,
               sive_result_mcse(r), want);
        ck_assert_int_eq(want, k == 0); /* the case is what it is meant to be */
        ck_assert_int_eq(!!(sive_result_flags(r) & SIVE_FLAG_IMPRECISE), want);
        sive_result_free(r);
    }
}
END_TEST

START_TEST(extrapolate_pairs_runs)
{
    setting s = {0.2, 2.0, 0.05, 2e-4, 20000, 3, 16, 0, 15};
    sive_result *plain = run(&s);
    s.extrapolate = 1;
    sive_result *ex = run(&s);
    s.extrapolate = 0;
    s.a /= 2.0;
    sive_result *fine = run(&s);
    /* the run at base_lr is untouched */
    for (int st = 0; st < SIVE_STAT_SIVE_STEP0; st++)
        for (int32_t c = -1; c < 3; c++) {
            double x = sive_result_stat(plain, (sive_stat)st, c);
            double y = sive_result_stat(ex, (sive_stat)st, c);
            ck_assert_msg(memcmp(&x, &y, sizeof x) == 0, "stat %s chain %d",
                          sive_stat_name((sive_stat)st), (int)c);
        }
    ck_assert_uint_eq(sive_result_flags(plain), sive_result_flags(ex));
    ck_assert_str_eq(sive_result_health(plain), sive_result_health(ex));
    ck_assert(isnan(sive_result_stat(plain, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY)));
    double sum = 0.0, q = 0.0;
    for (int32_t c = 0; c < 3; c++) {
        double want = 2.0 * sive_result_stat(fine, SIVE_STAT_SIVE_UNCLIPPED, c) -
                      sive_result_stat(plain, SIVE_STAT_SIVE_UNCLIPPED, c);
        double got = sive_result_stat(ex, SIVE_STAT_SIVE_STEP0, c);
        double se = sive_result_stat(ex, SIVE_STAT_MCSE_STEP0, c);
        ck_assert(got == want);
        ck_assert(isfinite(se) && se > 0.0);
        sum += got;
        q += se * se;
    }
    ck_assert(fabs(sive_result_stat(ex, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY) - sum / 3) <
              1e-12 * fabs(sum));
    ck_assert(fabs(sive_result_stat(ex, SIVE_STAT_MCSE_STEP0, SIVE_SUMMARY) - sqrt(q) / 3) <
              1e-12 * sqrt(q));
    int64_t v = -1;
    ck_assert_int_eq(sive_result_option_int(ex, SIVE_OPT_STEP_EXTRAPOLATE, &v), SIVE_OK);
    ck_assert_int_eq(v, 1);
    sive_option o;
    ck_assert_int_eq(sive_option_by_name("step_extrapolate", &o), SIVE_OK);
    ck_assert_int_eq(o, SIVE_OPT_STEP_EXTRAPOLATE);
    ck_assert_int_eq(sive_option_info_get(o)->int_default, 0);
    sive_result_free(plain);
    sive_result_free(ex);
    sive_result_free(fine);
}
END_TEST

/* 0.2's halves z of chain c: batch means (sive_stats_mcse) on each half. */
static double halves_z_02(const sive_result *r, int32_t c)
{
    size_t len = 0;
    const double *x = sive_result_trace(r, SIVE_TRACE_LBAR, c, &len);
    size_t first = (size_t)(0.3 * (double)len), n = len - first, h = n / 2;
    double m1 = 0.0, m2 = 0.0;
    for (size_t i = 0; i < h; i++) {
        m1 += x[first + i] / (double)h;
        m2 += x[first + n - h + i] / (double)h;
    }
    double s1 = sive_stats_mcse(x + first, h), s2 = sive_stats_mcse(x + first + n - h, h);
    return (m1 - m2) / sqrt(s1 * s1 + s2 * s2);
}

START_TEST(halves_z_stationary_quadratic)
{
    /* K1 at its minimum with a slow step (u^2 has tau ~ 125 steps): after
     * a burn-in of 12 000 steps (~100 tau) the tail is stationary to any
     * precision, so HALVES_Z should be ~ N(0, 1).  200 chains in runs of 5
     * (the default): mean within 3/sqrt(200) of 0, sd within 3 of its
     * relative standard errors (1/sqrt(400) = 5 %) of 1, widened below by
     * the MCSE's conservative lean: [0.82, 1.15]. */
    enum { RUNS = 40, K = 5 };
    double z[RUNS * K], old[RUNS * K];
    for (int run_i = 0; run_i < RUNS; run_i++) {
        setting s = {0.0, 2.0, 0.001, 1e-5, 40000, K, 2, 0, 100 + (uint64_t)run_i};
        sive_result *r = run(&s);
        for (int32_t c = 0; c < K; c++) {
            z[K * run_i + c] = sive_result_stat(r, SIVE_STAT_HALVES_Z, c);
            old[K * run_i + c] = halves_z_02(r, c);
        }
        sive_result_free(r);
    }
    double m = 0.0, q = 0.0, mo = 0.0, qo = 0.0;
    for (int i = 0; i < RUNS * K; i++) {
        m += z[i] / (RUNS * K);
        mo += old[i] / (RUNS * K);
    }
    for (int i = 0; i < RUNS * K; i++) {
        q += (z[i] - m) * (z[i] - m) / (RUNS * K - 1);
        qo += (old[i] - mo) * (old[i] - mo) / (RUNS * K - 1);
    }
    printf("halves z on 200 stationary K1 chains (a = 0.001): mean %.3f sd %.3f; 0.2's "
           "batch means: sd %.3f\n", m, sqrt(q), sqrt(qo));
    ck_assert_msg(fabs(m) < 3.0 / sqrt(200.0), "mean %g", m);
    ck_assert_msg(sqrt(q) > 0.82 && sqrt(q) < 1.15, "sd %g", sqrt(q));
    ck_assert_msg(sqrt(qo) > 1.3, "0.2's sd %g: the case does not show the old error", sqrt(qo));
}
END_TEST

/* E[SIVE_UNCLIPPED] of K1 (theta* = 0.2: K = 0.04 + 0.4 x + x^2) on a
 * tail of n steps under the exact tethered ULA law (docs/theory.md). */
static double k1_expected(double a, double h, double n)
{
    double vm, var = exact_ula_coord_var(a, a / T, h, 2.0, 0.4, 1.0, n, &vm);
    return T * T * n / (n - 1.0) * (var - vm);
}

START_TEST(extrapolate_k1_slow)
{
    /* K1's continuous-law value t^2 Var = 0.5 (ULA at a = 0.05: 0.554).
     * Noise-free evaluation (sigma tiny) so that the check is on the
     * step, not on the correction.  RUNS runs of 10 chains (different
     * seeds; traces of one run at a time in memory), combined as one
     * average: the mean of the runs' means, MCSE in quadrature. */
    enum { RUNS = 12, K = 10 };
    const double n = 0.7 * 100000.0;
    double est = 0.0, q = 0.0, lam = 0.0, x[RUNS * K];
    for (int i = 0; i < RUNS; i++) {
        setting s = {0.2, 2.0, 0.05, 1e-6, 100000, K, 2, 1, 1000 + (uint64_t)i};
        sive_result *r = run(&s);
        double se = sive_result_stat(r, SIVE_STAT_MCSE_STEP0, SIVE_SUMMARY);
        est += sive_result_stat(r, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY) / RUNS;
        lam += sive_result_lambda(r) / RUNS;
        q += se * se / (RUNS * RUNS);
        for (int32_t c = 0; c < K; c++)
            x[K * i + c] = sive_result_stat(r, SIVE_STAT_SIVE_STEP0, c);
        sive_result_free(r);
    }
    double m = 0.0, v = 0.0;
    for (int i = 0; i < RUNS * K; i++)
        m += x[i] / (RUNS * K);
    for (int i = 0; i < RUNS * K; i++)
        v += (x[i] - m) * (x[i] - m) / (RUNS * K - 1);
    const double se = sqrt(q), spread = sqrt(v / (RUNS * K));
    const double richardson = 2.0 * k1_expected(0.025, 2.0, n) - k1_expected(0.05, 2.0, n);
    printf("K1 a = 0.05, %d chains x 100000 steps: lambda(a) %.5f (ULA %.5f); step 0: %.5f +- "
           "%.5f (spread/sqrt K %.5f), Richardson's expectation %.5f; against the continuous "
           "0.5: %+.2f %% +- %.2f %%\n", RUNS * K, lam, k1_expected(0.05, 2.0, n), est, se,
           spread, richardson, 100.0 * (est / 0.5 - 1.0), 100.0 * se / 0.5);
    /* the method's O(a^2) residual is within 1 % ... */
    ck_assert(fabs(richardson / 0.5 - 1.0) < 0.01);
    /* ... and the estimate is unbiased for it: within 4 MCSE, with an
     * MCSE below 0.8 % of 0.5 (so a bias of 3 % or more would fail; the
     * 1 % of issue 18 rests on the exact residual above, and
     * docs/theory.md records a longer run) */
    ck_assert_msg(fabs(est - richardson) < 4.0 * se, "off by %.2f MCSE", (est - richardson) / se);
    ck_assert_msg(se < 0.008 * 0.5, "MCSE %.4g", se);
    /* the MCSE describes the spread over chains (within ~3 times the
     * spread's own ~7 % standard error, and the estimator's lean) */
    ck_assert_msg(se / spread > 0.8 && se / spread < 1.4, "se/spread %.3f", se / spread);
}
END_TEST

/* The three triggers of unstable at once, on a scripted Lbar series (the
 * loss reads the step, not theta; the gradient is 0): 0 at theta*, a level
 * of 5e4 in the tail (a climb, d = 1), 200 excursions of 1e6 and 10 spikes
 * of 3e6 among the 10000 tail steps (the top 0.1 % carry ~ 30 % of the
 * variance; the variance far above the mean estimator).  Every line
 * stays whole: the three together are longer than one formatted line
 * (1023 bytes). */
static int flat_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                     double *loss, void *user)
{
    (void)theta, (void)b, (void)user;
    memset(grad, 0, d * sizeof(double));
    *loss = 0.0;
    return 0;
}

static int scripted_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                          void *user)
{
    (void)theta, (void)d, (void)user;
    const int64_t m = b->step;
    const double l = m == 0 ? 0.0 : m % 1000 == 0 ? 300.0 : m % 50 == 25 ? 100.0 : 5.0;
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = 1e4 * l;
    return 0;
}

START_TEST(unstable_lines_whole)
{
    static quad_fixture q = {.k = 2.0};
    sive_model m = quad_fixture_model(&q, 1);
    m.grad = flat_grad;
    m.group_loss = scripted_group;
    sive_probe *p = NULL;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1.23457), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, 0.0123457), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 20000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    double th = 0.0;
    ck_assert_int_eq(sive_probe_run(p, &m, &th, &r), SIVE_OK);
    const char *health = sive_result_health(r);
    printf("scripted spikes, climb and variance over mean: flags 0x%x\n%s",
           sive_result_flags(r), health);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_UNSTABLE);
    ck_assert_ptr_nonnull(strstr(health, "is made by spikes"));
    ck_assert_ptr_nonnull(strstr(health, "the chain climbed"));
    /* the last of the three lines, to its end */
    ck_assert_ptr_nonnull(strstr(health, "excursions the mean loss does not follow; lower "
                                         "base_lr (now 0.0123457), or h or c_h (h = 1.235)\n"));
    ck_assert(health[strlen(health) - 1] == '\n');
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

int main(int argc, char **argv)
{
    Suite *s = suite_create("flags");
    TCase *tc = tcase_create("flags");
    tcase_set_timeout(tc, 600);
    if (argc > 1 && strcmp(argv[1], "slow") == 0) {
        tcase_add_test(tc, extrapolate_k1_slow);
        tcase_add_test(tc, halves_z_stationary_quadratic);
    } else {
        tcase_add_test(tc, radius_slope_exact);
        tcase_add_test(tc, radius_quiet_when_wide);
        tcase_add_test(tc, step_curvature_k1);
        tcase_add_test(tc, imprecise_by_definition);
        tcase_add_test(tc, unstable_on_climb);
        tcase_add_test(tc, unstable_var_mean_not_downhill);
        tcase_add_test(tc, extrapolate_pairs_runs);
        tcase_add_test(tc, unstable_lines_whole);
    }
    suite_add_tcase(s, tc);
    return check_run(s);
}
