/* Unit tests for lib/numerics/stats.c and the public sive_stats_* helpers.
 *
 * The statistical checks use AR(1) series x_{k+1} = phi x_k + e_k,
 * e_k ~ N(0, 1), started in the stationary law, whose autocorrelation
 * rho_k = phi^k and integrated autocorrelation time
 * tau = (1 + phi) / (1 - phi) are known exactly.  Tolerances come from the
 * sampling variability measured by small Monte Carlo runs inside the tests
 * (5 standard errors) plus, where an estimator has a known finite-sample
 * bias, an allowance derived from its definition (explained at each use). */
#include "rng.h"
#include "stats.h"

#include "check_run.h"

#include <check.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define Z5 5.0

/* Stationary AR(1) of length n from stream (seed, chain, 7). */
static void ar1(double *x, size_t n, double phi, uint64_t seed, uint64_t chain)
{
    sivei_pcg32 g;
    sivei_pcg32_stream(&g, seed, chain, 7u);
    sivei_pcg32_normals(&g, x, n);
    x[0] /= sqrt(1.0 - phi * phi);
    for (size_t k = 1; k < n; k++)
        x[k] += phi * x[k - 1];
}

static double *alloc_series(size_t n)
{
    double *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    return x;
}

/* Mean and standard deviation (ddof 1) of v[0..r-1], for MC summaries. */
static void summary(const double *v, size_t r, double *mean, double *sd)
{
    double var;
    sivei_mean_var(v, r, mean, &var);
    *sd = sqrt(var);
}

/* ------------------------------------------------------------------ */
/* Moments                                                            */
/* ------------------------------------------------------------------ */

START_TEST(test_mean_var_small)
{
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    double m, v;
    sivei_mean_var(x, 8, &m, &v);
    ck_assert_double_eq_tol(m, 5.0, 1e-15);
    ck_assert_double_eq_tol(v, 32.0 / 7.0, 1e-14);
    /* A large offset must not cost precision (two-pass). */
    double y[8];
    for (int i = 0; i < 8; i++)
        y[i] = 1e9 + x[i];
    sivei_mean_var(y, 8, &m, &v);
    ck_assert_double_eq_tol(m, 1e9 + 5.0, 1e-6);
    ck_assert_double_eq_tol(v, 32.0 / 7.0, 1e-6);
    /* Outputs are optional; n = 1 has no ddof-1 variance, n = 0 nothing. */
    sivei_mean_var(x, 8, NULL, &v);
    sivei_mean_var(x, 8, &m, NULL);
    sivei_mean_var(x, 1, &m, &v);
    ck_assert_double_eq(m, 2.0);
    ck_assert(isnan(v));
    sivei_mean_var(x, 0, &m, &v);
    ck_assert(isnan(m) && isnan(v));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Autocorrelation                                                    */
/* ------------------------------------------------------------------ */

/* Direct O(n * maxlag) biased autocorrelation, the definition itself. */
static void autocorr_direct(const double *x, size_t n, double *rho,
                            size_t maxlag)
{
    double m = 0.0;
    for (size_t t = 0; t < n; t++)
        m += x[t];
    m /= (double)n;
    double c0 = 0.0;
    for (size_t t = 0; t < n; t++)
        c0 += (x[t] - m) * (x[t] - m);
    for (size_t k = 0; k <= maxlag; k++) {
        double c = 0.0;
        for (size_t t = 0; t + k < n; t++)
            c += (x[t] - m) * (x[t + k] - m);
        rho[k] = c / c0;
    }
}

START_TEST(test_autocorr_matches_direct)
{
    const size_t sizes[] = {2, 3, 5, 7, 64, 1000, 1023, 1024, 1025, 4099};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s], maxlag = n + 3; /* lags >= n must be 0 */
        double *x = alloc_series(n);
        double *a = alloc_series(maxlag + 1), *b = alloc_series(maxlag + 1);
        ar1(x, n, 0.7, 1u, s);
        for (size_t t = 0; t < n; t++)
            x[t] += 100.0; /* a mean far from 0 */
        ck_assert_int_eq(sivei_autocorr(x, n, a, maxlag), SIVE_OK);
        autocorr_direct(x, n, b, n - 1);
        for (size_t k = 0; k <= maxlag; k++) {
            double want = k < n ? b[k] : 0.0;
            ck_assert_msg(fabs(a[k] - want) < 1e-10, "n %zu lag %zu: %g vs %g",
                          n, k, a[k], want);
        }
        ck_assert(a[0] == 1.0);
        free(x);
        free(a);
        free(b);
    }
}
END_TEST

START_TEST(test_autocorr_edge_cases)
{
    double rho[4];
    const double c[3] = {2.0, 2.0, 2.0};
    ck_assert_int_eq(sivei_autocorr(c, 3, rho, 3), SIVE_OK);
    ck_assert(rho[0] == 1.0 && rho[1] == 0.0 && rho[2] == 0.0 && rho[3] == 0.0);
    const double one = 5.0;
    ck_assert_int_eq(sivei_autocorr(&one, 1, rho, 0), SIVE_OK);
    ck_assert(rho[0] == 1.0);
    ck_assert_int_eq(sivei_autocorr(NULL, 3, rho, 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sivei_autocorr(c, 0, rho, 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sivei_autocorr(c, 3, NULL, 1), SIVE_E_INVALID_ARG);
    const double bad[3] = {1.0, NAN, 2.0};
    ck_assert_int_eq(sivei_autocorr(bad, 3, rho, 2), SIVE_OK);
    ck_assert(isnan(rho[1]));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Single-chain ESS                                                   */
/* ------------------------------------------------------------------ */

START_TEST(test_ess_ar1)
{
    /* phi = 0.9: tau = 19, so ESS ~ n / 19.  R = 50 independent series of
     * n = 1e5 give the sampling spread of q = ESS tau / n in the test
     * itself (Bartlett's formula predicts sd(q) ~ sqrt(2 (2L + 1) / n),
     * about 4 % for the L ~ 40 lags Geyer keeps here).  The mean of q must
     * lie within 5 standard errors of 1, plus an allowance of 0.03 for the
     * estimator's bias: truncation drops the lags beyond the point where
     * rho_k = 0.9^k reaches the noise level sqrt(tau / n) ~ 0.014, i.e. a
     * tail 2 sum_{k > L} rho_k ~ 2 * 0.014 / 0.1 = 0.28 of tau = 19
     * (1.5 %), and the biased autocovariance and the estimated mean lower
     * each rho_k by O(k / n + tau / n) (< 0.1 %). */
    enum { R = 50 };
    const size_t n = 100000;
    const double phi = 0.9, tau = (1 + phi) / (1 - phi);
    double q[R];
    double *x = alloc_series(n);
    for (size_t r = 0; r < R; r++) {
        ar1(x, n, phi, 100u, r);
        q[r] = sivei_ess_geyer(x, n) * tau / (double)n;
        ck_assert(q[r] > 0.5 && q[r] < 2.0);
    }
    double mean, sd;
    summary(q, R, &mean, &sd);
    ck_assert_msg(fabs(mean - 1.0) < Z5 * sd / sqrt(R) + 0.03,
                  "mean ESS tau / n = %g (sd %g over %d series)", mean, sd, R);
    /* The spread agrees with the Bartlett scale (not 10x larger). */
    ck_assert_msg(sd < 0.1, "sd of ESS tau / n = %g", sd);
    free(x);
}
END_TEST

START_TEST(test_ess_iid)
{
    /* iid: tau = 1.  Geyer keeps only a few pairs, so tau-hat has sd about
     * sqrt(2 (2L + 1) / n) ~ 3 % at n = 1e4 (L ~ 2).  q = ESS / n =
     * min(1, 1 / tau-hat) is biased low by up to about one such sd: the cap
     * clips the upper half of the fluctuations (E|Z| = 0.8 sd) and keeping
     * pairs only while positive pushes tau-hat up.  So the mean of q over R
     * series must exceed 1 - sd - 5 sd / sqrt(R), sd measured here.  Each
     * series only gets a sanity bound (the law of tau-hat is skewed). */
    enum { R = 20 };
    const size_t n = 10000;
    double q[R];
    double *x = alloc_series(n);
    for (size_t r = 0; r < R; r++) {
        sivei_pcg32 g;
        sivei_pcg32_stream(&g, 200u, r, 0u);
        sivei_pcg32_normals(&g, x, n);
        q[r] = sivei_ess_geyer(x, n) / (double)n;
        ck_assert_msg(q[r] > 0.7 && q[r] <= 1.0, "ESS / n = %g", q[r]);
    }
    double mean, sd;
    summary(q, R, &mean, &sd);
    ck_assert_msg(sd < 0.1, "sd of ESS / n = %g", sd);
    ck_assert_msg(mean > 1.0 - sd - Z5 * sd / sqrt(R), "mean ESS / n = %g",
                  mean);
    free(x);
}
END_TEST

START_TEST(test_ess_special_inputs)
{
    double x[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_double_eq(sivei_ess_geyer(x, 8), 8.0);
    ck_assert(isnan(sivei_ess_geyer(x, 3)));
    ck_assert(isnan(sivei_ess_geyer(NULL, 8)));
    x[3] = INFINITY;
    ck_assert(isnan(sivei_ess_geyer(x, 8)));
    /* Alternating series: tau-hat < 1 (even negative); capped at n. */
    for (int i = 0; i < 8; i++)
        x[i] = i % 2 ? 1.0 : -1.0;
    ck_assert_double_eq(sivei_ess_geyer(x, 8), 8.0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Batch means and MCSE                                               */
/* ------------------------------------------------------------------ */

START_TEST(test_batch_means_by_hand)
{
    /* n = 10: b = 3, a = 3, the first value is dropped; batch means 2, 5, 8
     * have variance 9, so Var(mean) = 9 / 3 = 3. */
    const double x[10] = {100, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    ck_assert_double_eq_tol(sivei_batch_means_var(x, 10), 3.0, 1e-14);
    /* n = 4: b = 2, a = 2: means 0 and 1, variance 1/2, over 2. */
    const double y[4] = {0, 0, 1, 1};
    ck_assert_double_eq_tol(sivei_batch_means_var(y, 4), 0.25, 1e-15);
    ck_assert(isnan(sivei_batch_means_var(y, 3)));
    ck_assert(isnan(sivei_batch_means_var(NULL, 4)));
}
END_TEST

/* Exact expectation of the batch-means variance estimator for a stationary
 * AR(1) (innovation variance 1), from the covariances of the batch means:
 * E[s_B^2] = g(0) - 2 / (a (a - 1)) sum_{h=1}^{a-1} (a - h) g(h). */
static double bm_expectation_ar1(double phi, size_t n)
{
    double s2 = 1.0 / (1.0 - phi * phi);
    size_t b = (size_t)floor(sqrt((double)n)), a = n / b;
    double *gb = malloc(a * sizeof *gb);
    ck_assert_ptr_nonnull(gb);
    for (size_t h = 0; h < a; h++) {
        double s = 0.0;
        for (long k = -(long)b + 1; k <= (long)b - 1; k++) {
            long lag = (long)(h * b) + k;
            s += (double)((long)b - labs(k)) * pow(phi, (double)labs(lag));
        }
        gb[h] = s2 * s / ((double)b * (double)b);
    }
    double e = gb[0], c = 0.0;
    for (size_t h = 1; h < a; h++)
        c += (double)(a - h) * gb[h];
    e -= 2.0 * c / ((double)a * (double)(a - 1));
    free(gb);
    return e / (double)a;
}

START_TEST(test_mcse_ar1)
{
    /* Var(mean) of a stationary AR(1) -> sigma_x^2 tau / n.  The batch-means
     * estimator with b = sqrt(n) is biased low by about
     * 2 sum_k k rho_k / (tau b) (batches too short to hold all the
     * correlation), which bm_expectation_ar1() gives exactly; the MC mean
     * over R series must match that expectation within 5 standard errors,
     * and the MCSE must match sqrt(sigma_x^2 tau / n) within that bias plus
     * the same 5 standard errors. */
    enum { R = 50 };
    const size_t n = 100000;
    const double phi = 0.9, tau = (1 + phi) / (1 - phi);
    const double s2 = 1.0 / (1.0 - phi * phi);
    const double target = s2 * tau / (double)n;
    const double expect = bm_expectation_ar1(phi, n);
    double v[R], se[R];
    double *x = alloc_series(n);
    for (size_t r = 0; r < R; r++) {
        ar1(x, n, phi, 300u, r);
        v[r] = sivei_batch_means_var(x, n);
        se[r] = sive_stats_mcse(x, n);
        ck_assert_double_eq_tol(se[r], sqrt(v[r]), 1e-15);
    }
    double mv, sv, ms, ss;
    summary(v, R, &mv, &sv);
    summary(se, R, &ms, &ss);
    double bias = 1.0 - expect / target; /* ~ 3 % at n = 1e5 */
    ck_assert(bias > 0.0 && bias < 0.05);
    ck_assert_msg(fabs(mv - expect) < Z5 * sv / sqrt(R),
                  "E bm var %g vs exact %g", mv, expect);
    ck_assert_msg(fabs(ms / sqrt(target) - 1.0) <
                      bias + Z5 * ss / sqrt(R) / sqrt(target),
                  "mean MCSE %g vs sqrt(sigma^2 tau / n) = %g", ms,
                  sqrt(target));
    free(x);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Variance of a mean for slow, noisy series (the SIVE MCSE)          */
/* ------------------------------------------------------------------ */

/* Sokal's window on autocovariances c[0..wmax] of moving averages of
 * width b: the smallest W >= b with W >= b + 5 (tau(W) - b),
 * tau(W) = 1 + 2 sum_{k<=W} c_k/c_0, W <= wmax; returns tau(W). */
static double window_ref(const double *c, size_t wmax, size_t b, size_t *w)
{
    double tau = 1.0;
    *w = 0;
    while (*w < wmax) {
        ++*w;
        tau += 2.0 * c[*w] / c[0];
        if (*w >= b && (double)*w >= (double)b + 5.0 * (tau - (double)b))
            break;
    }
    return tau;
}

/* The definition of sivei_var_of_mean written out directly (O(n W)):
 * moving averages of width b = floor(sqrt n), their biased
 * autocovariances c_k, the window W (the smallest W >= b with
 * W >= b + 5 (tau(W) - b), tau(W) = 1 + 2 sum_{k<=W} c_k/c_0, W <= (m-1)/4),
 * sigma2 = c_0 tau / (1 - (2W+1)/m), at least the ddof-1 variance of x. */
static double var_of_mean_ref(const double *x, size_t n)
{
    double mean = 0.0, var = 0.0;
    for (size_t t = 0; t < n; t++)
        mean += x[t] / (double)n;
    for (size_t t = 0; t < n; t++)
        var += (x[t] - mean) * (x[t] - mean) / (double)(n - 1);
    if (!(var > 0.0))
        return 0.0;
    size_t b = 1;
    while ((b + 1) * (b + 1) <= n)
        b++;
    size_t m = n - b + 1, wmax = (m - 1) / 4;
    double *z = alloc_series(m), zbar = 0.0;
    for (size_t j = 0; j < m; j++) {
        double s = 0.0;
        for (size_t t = j; t < j + b; t++)
            s += x[t];
        z[j] = s / (double)b;
        zbar += z[j] / (double)m;
    }
    double *c = alloc_series(wmax + 1);
    for (size_t k = 0; k <= wmax; k++) {
        c[k] = 0.0;
        for (size_t t = 0; t + k < m; t++)
            c[k] += (z[t] - zbar) * (z[t + k] - zbar) / (double)m;
    }
    free(z);
    size_t w;
    double tau = window_ref(c, wmax, b, &w);
    double sigma2 = c[0] * tau / (1.0 - (2.0 * (double)w + 1.0) / (double)m);
    free(c);
    return fmax(sigma2, var) / (double)n;
}

START_TEST(test_var_of_mean_definition)
{
    /* The FFT path equals the definition, on white, fast and slow series
     * (the slow ones reach the window bound (m-1)/4), short and long. */
    const double phis[] = {0.0, 0.5, 0.9, 0.99, 0.999};
    const size_t sizes[] = {4, 5, 17, 500, 3000};
    for (size_t i = 0; i < sizeof phis / sizeof phis[0]; i++)
        for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
            size_t n = sizes[j];
            double *x = alloc_series(n), got;
            ar1(x, n, phis[i], 1000u + i, j);
            for (size_t t = 0; t < n; t++)
                x[t] += 50.0; /* a mean far from 0 */
            ck_assert_int_eq(sivei_var_of_mean(x, n, &got), SIVE_OK);
            double want = var_of_mean_ref(x, n);
            ck_assert_msg(fabs(got - want) <= 1e-9 * want, "phi %g n %zu: %.15g vs %.15g",
                          phis[i], n, got, want);
            free(x);
        }
}
END_TEST

START_TEST(test_var_of_mean_special_inputs)
{
    double x[8] = {1, 1, 1, 1, 1, 1, 1, 1}, v;
    ck_assert_int_eq(sivei_var_of_mean(x, 8, &v), SIVE_OK);
    ck_assert_double_eq(v, 0.0);
    ck_assert_int_eq(sivei_var_of_mean(x, 3, &v), SIVE_OK);
    ck_assert(isnan(v));
    ck_assert_int_eq(sivei_var_of_mean(NULL, 8, &v), SIVE_OK);
    ck_assert(isnan(v));
    x[5] = NAN;
    ck_assert_int_eq(sivei_var_of_mean(x, 8, &v), SIVE_OK);
    ck_assert(isnan(v));
    /* Alternating series: the window finds tau < 1; the result is the iid
     * value s^2/n, never less. */
    for (int i = 0; i < 8; i++)
        x[i] = i % 2 ? 1.0 : -1.0;
    ck_assert_int_eq(sivei_var_of_mean(x, 8, &v), SIVE_OK);
    ck_assert_double_eq_tol(v, 8.0 / 7.0 / 8.0, 1e-15);
}
END_TEST

/* Mean over R series of q = Vhat / V, V = (sigma2_inf + w s2) / n the
 * asymptotic variance of the mean of a stationary AR(1) (innovation
 * variance 1, stationary variance s2 = 1/(1 - phi^2),
 * sigma2_inf = 1/(1 - phi)^2) plus white noise of variance w s2; and the
 * same for batch means with b = sqrt(n). */
static void var_of_mean_mc(double phi, double w, size_t n, size_t R, uint64_t seed,
                           double *mean, double *sd, double *bm_mean)
{
    double *x = alloc_series(n), *e = alloc_series(n), q[64], bm = 0.0;
    const double s2 = 1.0 / (1.0 - phi * phi);
    const double V = (1.0 / ((1.0 - phi) * (1.0 - phi)) + w * s2) / (double)n;
    ck_assert(R <= 64);
    for (size_t r = 0; r < R; r++) {
        ar1(x, n, phi, seed, r);
        sivei_pcg32 g;
        sivei_pcg32_stream(&g, seed, r, 8u);
        sivei_pcg32_normals(&g, e, n);
        for (size_t t = 0; t < n; t++)
            x[t] += sqrt(w * s2) * e[t];
        double v;
        ck_assert_int_eq(sivei_var_of_mean(x, n, &v), SIVE_OK);
        q[r] = v / V;
        bm += sivei_batch_means_var(x, n) / V / (double)R;
    }
    summary(q, R, mean, sd);
    *bm_mean = bm;
    free(x);
    free(e);
}

START_TEST(test_var_of_mean_ar1)
{
    /* Two series, R = 50 each, n = 1e5: an AR(1) with phi = 0.9 (tau 19),
     * and the case the estimator is for: a slow AR(1) (phi = 0.995, tau
     * 399) under white noise 30 times its variance, so that its
     * autocorrelation is ~3 % at lag 1 and the slow part still makes 93 %
     * of sigma2_inf (the SIVE influence series under evaluation noise looks
     * like this).  The mean of Vhat / V must lie within 5 standard errors
     * of 1, plus 0.10 above: the estimate is conservative by design (the
     * floor at the iid value clips the lower tail when tau ~ 1, the window
     * extends past noise dips), by 4-7 % measured here.  Batch means with
     * b = sqrt(n) = 316 < tau miss half of the slow series' variance. */
    double mean, sd, bm;
    var_of_mean_mc(0.9, 0.0, 100000, 50, 1100u, &mean, &sd, &bm);
    printf("var_of_mean AR(1) phi 0.9: E[Vhat/V] %.3f (sd %.3f), batch means %.3f\n", mean, sd, bm);
    ck_assert_msg(mean > 1.0 - Z5 * sd / sqrt(50.0) && mean < 1.10 + Z5 * sd / sqrt(50.0),
                  "phi 0.9: E[Vhat / V] = %g (sd %g)", mean, sd);
    var_of_mean_mc(0.995, 30.0, 100000, 50, 1200u, &mean, &sd, &bm);
    printf("var_of_mean AR(1) phi 0.995 + 30x white noise: E[Vhat/V] %.3f (sd %.3f), "
           "batch means %.3f\n", mean, sd, bm);
    ck_assert_msg(mean > 1.0 - Z5 * sd / sqrt(50.0) && mean < 1.10 + Z5 * sd / sqrt(50.0),
                  "slow + noise: E[Vhat / V] = %g (sd %g)", mean, sd);
    ck_assert_msg(bm < 0.7, "batch means %g", bm);
}
END_TEST

/* The pooled estimator written out directly: k series of n values, the
 * moving averages z of each, their autocovariances about the grand mean
 * of all z summed over the series, the window as above on that sum, the
 * centring correction for k m values, tau = sigma2 / mean of the
 * variances, out[c] = max(s2_c tau, s2_c) / n. */
static void pooled_ref(double *const *x, size_t k, size_t n, double *out)
{
    size_t b = 1;
    while ((b + 1) * (b + 1) <= n)
        b++;
    size_t m = n - b + 1, wmax = (m - 1) / 4;
    double *z = alloc_series(k * m), *var = alloc_series(k), mu = 0.0, vbar = 0.0;
    for (size_t c = 0; c < k; c++) {
        double mean = 0.0;
        for (size_t t = 0; t < n; t++)
            mean += x[c][t] / (double)n;
        var[c] = 0.0;
        for (size_t t = 0; t < n; t++)
            var[c] += (x[c][t] - mean) * (x[c][t] - mean) / (double)(n - 1);
        vbar += var[c] / (double)k;
        for (size_t j = 0; j < m; j++) {
            double s = 0.0;
            for (size_t t = j; t < j + b; t++)
                s += x[c][t];
            z[c * m + j] = s / (double)b;
            mu += z[c * m + j] / (double)(k * m);
        }
    }
    double *cv = alloc_series(wmax + 1);
    for (size_t j = 0; j <= wmax; j++) {
        cv[j] = 0.0;
        for (size_t c = 0; c < k; c++)
            for (size_t t = 0; t + j < m; t++)
                cv[j] += (z[c * m + t] - mu) * (z[c * m + t + j] - mu) / (double)(k * m);
    }
    size_t w;
    double tau = window_ref(cv, wmax, b, &w);
    double sigma2 = cv[0] * tau / (1.0 - (2.0 * (double)w + 1.0) / (double)(k * m));
    for (size_t c = 0; c < k; c++)
        out[c] = fmax(var[c] * sigma2 / vbar, var[c]) / (double)n;
    free(z);
    free(var);
    free(cv);
}

/* The series of a test: x[c], or NULL for c == fail_at. */
typedef struct series_src {
    double *const *x;
    size_t fail_at;
} series_src;

static const double *series_of(void *ctx, size_t c)
{
    const series_src *s = ctx;
    return c == s->fail_at ? NULL : s->x[c];
}

START_TEST(test_var_of_mean_pooled_definition)
{
    /* k AR(1) series with means far from 0 and apart from each other
     * (the grand mean is not any series' own), fast and slow, short and
     * long; k = 1 is sivei_var_of_mean. */
    const double phis[] = {0.0, 0.9, 0.999};
    const size_t sizes[] = {4, 17, 3000}, ks[] = {1, 2, 5};
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++)
            for (size_t q = 0; q < 3; q++) {
                size_t n = sizes[j], k = ks[q];
                double *x[5], got[5], want[5], tau, one;
                for (size_t c = 0; c < k; c++) {
                    x[c] = alloc_series(n);
                    ar1(x[c], n, phis[i], 2000u + i, 10 * j + c);
                    for (size_t t = 0; t < n; t++)
                        x[c][t] += 50.0 + 0.1 * (double)c;
                }
                series_src src = {x, SIZE_MAX};
                ck_assert_int_eq(sivei_var_of_mean_pooled(series_of, &src, k, n, got, &tau),
                                 SIVE_OK);
                pooled_ref(x, k, n, want);
                for (size_t c = 0; c < k; c++)
                    ck_assert_msg(fabs(got[c] - want[c]) <= 1e-9 * want[c],
                                  "phi %g n %zu k %zu chain %zu: %.15g vs %.15g", phis[i], n,
                                  k, c, got[c], want[c]);
                if (k == 1) {
                    ck_assert_int_eq(sivei_var_of_mean(x[0], n, &one), SIVE_OK);
                    ck_assert(fabs(one - got[0]) <= 1e-12 * one);
                }
                for (size_t c = 0; c < k; c++)
                    free(x[c]);
            }
}
END_TEST

START_TEST(test_var_of_mean_pooled_special_inputs)
{
    double a[8] = {1, 2, 3, 4, 5, 6, 7, 9}, b[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    double *x[2] = {a, b}, out[2], tau;
    series_src src = {x, SIZE_MAX};
    /* a constant series gets 0, the other at least its iid value */
    ck_assert_int_eq(sivei_var_of_mean_pooled(series_of, &src, 2, 8, out, &tau), SIVE_OK);
    ck_assert_double_eq(out[1], 0.0);
    ck_assert(out[0] >= 6.0 / 8.0 && isfinite(tau));
    /* too short, a series missing (no memory), a non-finite value */
    ck_assert_int_eq(sivei_var_of_mean_pooled(series_of, &src, 2, 3, out, &tau), SIVE_OK);
    ck_assert(isnan(out[0]) && isnan(out[1]) && isnan(tau));
    src.fail_at = 1;
    ck_assert_int_eq(sivei_var_of_mean_pooled(series_of, &src, 2, 8, out, NULL), SIVE_E_NOMEM);
    ck_assert(isnan(out[0]) && isnan(out[1]));
    src.fail_at = SIZE_MAX;
    b[3] = INFINITY;
    ck_assert_int_eq(sivei_var_of_mean_pooled(series_of, &src, 2, 8, out, &tau), SIVE_OK);
    ck_assert(isnan(out[0]) && isnan(out[1]) && isnan(tau));
}
END_TEST

/* Var of the mean of n values of a^2 + white noise, a a stationary AR(1)
 * (innovation variance 1, s2 = 1/(1 - phi^2)), the noise of variance
 * w Var(a^2), exactly: Var(a^2) = 2 s2^2, Corr(a_0^2, a_k^2) = phi^2k. */
static double sq_ar1_var_mean(double phi, double w, size_t n)
{
    const double s2 = 1.0 / (1.0 - phi * phi), r = phi * phi, nn = (double)n;
    double s = r / (1.0 - r) - r * (1.0 - pow(r, nn)) / (nn * (1.0 - r) * (1.0 - r));
    return 2.0 * s2 * s2 * (1.0 + 2.0 * s + w) / nn;
}

/* Over R series a^2 + noise (as above), the exact standard error of the
 * mean over the mean reported one, each series alone (k = 1) or pooled
 * in runs of k. */
static double pooled_se_ratio(size_t k, size_t R, size_t n, double phi, double w)
{
    double *x[400], *e = alloc_series(n), se = 0.0, out[400];
    const double s2 = 1.0 / (1.0 - phi * phi);
    ck_assert(R <= 400 && R % k == 0);
    for (size_t r = 0; r < R; r++) {
        x[r] = alloc_series(n);
        ar1(x[r], n, phi, 3100u, r);
        sivei_pcg32 g;
        sivei_pcg32_stream(&g, 3100u, r, 8u);
        sivei_pcg32_normals(&g, e, n);
        for (size_t t = 0; t < n; t++)
            x[r][t] = x[r][t] * x[r][t] + sqrt(w * 2.0 * s2 * s2) * e[t];
    }
    for (size_t r = 0; r < R; r += k) {
        series_src src = {x + r, SIZE_MAX};
        ck_assert_int_eq(sivei_var_of_mean_pooled(series_of, &src, k, n, out + r, NULL),
                         SIVE_OK);
    }
    for (size_t r = 0; r < R; r++) {
        se += sqrt(out[r]) / (double)R;
        free(x[r]);
    }
    free(e);
    return sqrt(sq_ar1_var_mean(phi, w, n)) / se;
}

START_TEST(test_var_of_mean_pooled_short)
{
    /* The short-tail SIVE influence series in miniature: the square of a
     * slow AR(1) (phi 0.995; a^2 has tau ~200) under white noise 5 times
     * its variance, n = 1400 = 7 tau.  Each series alone reports a
     * standard error that is on average well below the exact one (its
     * window rests on ~7 independent stretches, and large errors go with
     * windows that are too short); runs of 5 pool the shape of the
     * autocorrelation and must land in the calibration bounds of
     * docs/theory.md, [0.8, 1.25].  400 series: the mean of standard
     * errors that vary by ~40 % is known to ~2 %. */
    double alone = pooled_se_ratio(1, 400, 1400, 0.995, 5.0);
    double pooled = pooled_se_ratio(5, 400, 1400, 0.995, 5.0);
    printf("var_of_mean_pooled, AR(1)^2 + 5x noise, n = 7 tau: exact se / mean se: "
           "alone %.3f, runs of 5 %.3f\n", alone, pooled);
    ck_assert_msg(pooled > 0.8 && pooled < 1.25, "runs of 5: %.3f", pooled);
    ck_assert_msg(pooled < alone - 0.05, "pooling must help: %.3f vs %.3f alone", pooled, alone);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Multi-chain ESS                                                    */
/* ------------------------------------------------------------------ */

/* Geyer initial monotone sum written out again, for the m = 1 check. */
static double ref_geyer_tau(const double *rho, size_t n)
{
    double sum = 0.0, prev = INFINITY;
    for (size_t k = 0; 2 * k + 1 < n; k++) {
        double g = fmin(rho[2 * k] + rho[2 * k + 1], prev);
        if (!(rho[2 * k] + rho[2 * k + 1] > 0.0))
            break;
        sum += g;
        prev = g;
    }
    return 2.0 * sum - 1.0;
}

START_TEST(test_ess_multi_one_chain)
{
    /* m = 1: rho_t = (n rho_t,c - 1)/(n - 1) exactly (see stats.c). */
    const size_t n = 20000;
    double *x = alloc_series(n), *rho = alloc_series(n);
    ar1(x, n, 0.9, 400u, 0u);
    ck_assert_int_eq(sivei_autocorr(x, n, rho, n - 1), SIVE_OK);
    for (size_t t = 0; t < n; t++)
        rho[t] = ((double)n * rho[t] - 1.0) / (double)(n - 1);
    double want = (double)n / ref_geyer_tau(rho, n);
    const double *chains[1] = {x};
    double got = sivei_ess_multi(chains, 1, n);
    ck_assert_msg(fabs(got / want - 1.0) < 1e-9, "%g vs %g", got, want);
    /* ... which is close to the single-chain estimate: each rho_t drops by
     * (1 - rho_t)/(n - 1), so tau-hat drops by ~ 2 * 2L / n ~ 0.008 (L ~ 40
     * lags kept), i.e. 0.04 % of tau = 19; the truncation point may move
     * by one pair (a pair near the cut is ~ 0.05, 0.3 % of tau). */
    double single = sivei_ess_geyer(x, n);
    ck_assert_msg(fabs(got / single - 1.0) < 0.01, "%g vs %g", got, single);
    free(x);
    free(rho);
}
END_TEST

START_TEST(test_ess_multi_iid)
{
    /* 4 iid chains: ESS ~ 4n.  Same reasoning as test_ess_iid, with the
     * combined autocorrelation pooling 4 chains: sd of tau-hat ~ 1.5 % and a
     * cap bias of about as much, so 1 - 0.015 - 5 * 0.012 = 0.925. */
    enum { M = 4 };
    const size_t n = 10000;
    double *x[M];
    for (size_t c = 0; c < M; c++) {
        sivei_pcg32 g;
        x[c] = alloc_series(n);
        sivei_pcg32_stream(&g, 500u, c, 0u);
        sivei_pcg32_normals(&g, x[c], n);
    }
    double ess = sivei_ess_multi((const double *const *)x, M, n);
    ck_assert_msg(ess > 0.925 * M * n && ess <= (double)(M * n), "ESS %g", ess);
    for (size_t c = 0; c < M; c++)
        free(x[c]);
}
END_TEST

START_TEST(test_ess_chains_matches_single)
{
    /* Each chain's ESS from the shared pass equals the single-chain
     * estimator, whether Geyer's sequence stops within the direct lags
     * (phi = 0.5) or needs the FFT (phi = 0.995, tau ~ 400), with an odd
     * number of chains so that one transform holds a lone chain. */
    const double phis[2] = {0.5, 0.995};
    for (int k = 0; k < 2; k++) {
        enum { M = 3 };
        const size_t n = 20000;
        double *x[M];
        double each[M], multi;
        for (size_t c = 0; c < M; c++) {
            x[c] = alloc_series(n);
            ar1(x[c], n, phis[k], 900u + (uint64_t)k, c);
        }
        ck_assert_int_eq(sivei_ess_chains((const double *const *)x, M, n, each, &multi), SIVE_OK);
        for (size_t c = 0; c < M; c++) {
            double single = sivei_ess_geyer(x[c], n);
            ck_assert_msg(fabs(each[c] - single) <= 1e-9 * single, "phi %g chain %zu: %.12g vs %.12g",
                          phis[k], c, each[c], single);
        }
        ck_assert_msg(fabs(multi - sivei_ess_multi((const double *const *)x, M, n)) <= 1e-9 * multi,
                      "multi");
        for (size_t c = 0; c < M; c++)
            free(x[c]);
    }
}
END_TEST

START_TEST(test_ess_multi_ar1_and_shift)
{
    /* 4 AR(1) chains, phi = 0.9: ESS ~ 4 n / 19; the pooled estimate has
     * half the single-chain sd (~2 %, see test_ess_ar1) and the same
     * truncation bias allowance (3 %): |q - 1| < 5 * 0.02 + 0.03. */
    enum { M = 4 };
    const size_t n = 100000;
    const double phi = 0.9, tau = (1 + phi) / (1 - phi);
    double *x[M];
    for (size_t c = 0; c < M; c++) {
        x[c] = alloc_series(n);
        ar1(x[c], n, phi, 600u, c);
    }
    const double *const *cx = (const double *const *)x;
    double q = sivei_ess_multi(cx, M, n) * tau / (double)(M * n);
    ck_assert_msg(fabs(q - 1.0) < 0.13, "ESS tau / (m n) = %g", q);
    /* Chains that disagree: between-chain variance enters var_plus and the
     * combined autocorrelation stays high, so the ESS collapses. */
    double sx = 1.0 / sqrt(1.0 - phi * phi);
    for (size_t t = 0; t < n; t++)
        x[0][t] += 3.0 * sx;
    double shifted = sivei_ess_multi(cx, M, n);
    ck_assert_msg(shifted < 0.2 * q * M * n / tau, "shifted ESS %g", shifted);
    for (size_t c = 0; c < M; c++)
        free(x[c]);
}
END_TEST

START_TEST(test_ess_multi_special_inputs)
{
    double a[6] = {1, 1, 1, 1, 1, 1}, b[6] = {1, 1, 1, 1, 1, 1};
    const double *ab[2] = {a, b};
    ck_assert_double_eq(sivei_ess_multi(ab, 2, 6), 12.0);
    ck_assert(isnan(sivei_ess_multi(ab, 2, 3)));
    ck_assert(isnan(sivei_ess_multi(ab, 0, 6)));
    ck_assert(isnan(sivei_ess_multi(NULL, 2, 6)));
    const double *an[2] = {a, NULL};
    ck_assert(isnan(sivei_ess_multi(an, 2, 6)));
    b[2] = NAN;
    ck_assert(isnan(sivei_ess_multi(ab, 2, 6)));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Split-Rhat                                                         */
/* ------------------------------------------------------------------ */

/* Phi^-1(p) by bisection on Phi(z) = erfc(-z/sqrt 2)/2: slow, independent
 * of the library's rational approximation. */
static double normal_quantile_ref(double p)
{
    double lo = -40.0, hi = 40.0;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (0.5 * erfc(-mid / sqrt(2.0)) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* BDA3 Rhat of k sequences of h draws, written out again. */
static double classic_rhat_ref(const double *const *s, size_t k, size_t h)
{
    double mean_of_means = 0.0, W = 0.0, means[16];
    for (size_t j = 0; j < k; j++) {
        double m, v;
        sivei_mean_var(s[j], h, &m, &v);
        means[j] = m;
        mean_of_means += m / (double)k;
        W += v / (double)k;
    }
    double B = 0.0;
    for (size_t j = 0; j < k; j++)
        B += (means[j] - mean_of_means) * (means[j] - mean_of_means) / (double)(k - 1);
    return sqrt(((double)(h - 1) / (double)h * W + B) / W);
}

START_TEST(test_split_rhat_by_hand)
{
    /* The classic building block.  n = 5 (middle dropped): halves [1,2]
     * [3,4] [2,4] [6,8]; means 1.5, 3.5, 3, 7; variances .5, .5, 2, 2 ->
     * W = 1.25; variance of the means 16.25/3; h = 2:
     * var_plus = W/2 + 16.25/3; Rhat = sqrt(var_plus / W). */
    double a[5] = {1, 2, 99, 3, 4}, b[5] = {2, 4, -7, 6, 8};
    const double *ab[2] = {a, b};
    double want = sqrt((1.25 / 2 + 16.25 / 3) / 1.25);
    ck_assert_double_eq_tol(sivei_split_rhat_basic(ab, 2, 5), want, 1e-14);
    a[2] = 1e6; /* the middle value plays no part */
    ck_assert_double_eq_tol(sivei_split_rhat_basic(ab, 2, 5), want, 1e-14);
    /* Rank-normalised: the 8 pooled draws 1 2 3 4 2 4 6 8 have average
     * ranks 1 2.5 4 5.5 2.5 5.5 7 8, so the bulk Rhat is the classic one
     * on their normal scores; the middle value plays no part either. */
    const double r[8] = {1, 2.5, 4, 5.5, 2.5, 5.5, 7, 8};
    double zs[8];
    for (int i = 0; i < 8; i++)
        zs[i] = normal_quantile_ref((r[i] - 0.375) / 8.25);
    const double *zh[4] = {zs, zs + 2, zs + 4, zs + 6};
    double bulk = classic_rhat_ref(zh, 4, 2);
    double got = sivei_split_rhat(ab, 2, 5);
    ck_assert_msg(got >= bulk - 1e-12, "rank Rhat %.15g < bulk %.15g", got, bulk);
    a[2] = -1e6;
    ck_assert_double_eq(sivei_split_rhat(ab, 2, 5), got);
    for (int f = 0; f < 2; f++) {
        double (*rh)(const double *const *, size_t, size_t) =
            f ? sivei_split_rhat : sivei_split_rhat_basic;
        ck_assert(isnan(rh(ab, 2, 3)));
        ck_assert(isnan(rh(ab, 0, 5)));
        ck_assert(isnan(rh(NULL, 2, 5)));
        /* Constant halves: agreeing -> 1, disagreeing -> +inf. */
        double c[4] = {3, 3, 3, 3}, d[4] = {3, 3, 3, 3};
        const double *cd[2] = {c, d};
        ck_assert_double_eq(rh(cd, 2, 4), 1.0);
        d[0] = d[1] = 4;
        ck_assert(isinf(rh(cd, 2, 4)));
        d[1] = NAN;
        ck_assert(isnan(rh(cd, 2, 4)));
    }
}
END_TEST

START_TEST(test_rank_normalise)
{
    /* Ties share the average rank; scores are Phi^-1((r - 3/8)/(s + 1/4)). */
    const double x[5] = {3.0, -1.0, 2.0, 2.0, 10.0};
    const double r[5] = {4, 1, 2.5, 2.5, 5};
    double z[5];
    ck_assert_int_eq(sivei_rank_normalise(x, 5, z), SIVE_OK);
    for (int i = 0; i < 5; i++) {
        double p = (r[i] - 0.375) / 5.25;
        ck_assert_msg(fabs(z[i] - normal_quantile_ref(p)) < 1e-13, "z[%d] = %.17g", i, z[i]);
    }
    ck_assert(z[2] == z[3]);
    /* Phi(z) = p to a few ulp over the whole range, tails included
     * (s = 1e5: p from 6e-6 to 1 - 6e-6). */
    const size_t s = 100000;
    double *u = alloc_series(s), *zz = alloc_series(s);
    for (size_t i = 0; i < s; i++)
        u[i] = (double)((i * 7919) % s); /* a permutation of 0 .. s-1 */
    ck_assert_int_eq(sivei_rank_normalise(u, s, zz), SIVE_OK);
    double worst = 0.0;
    for (size_t i = 0; i < s; i++) {
        double p = (u[i] + 1.0 - 0.375) / ((double)s + 0.25);
        double q = p < 0.5 ? 0.5 * erfc(-zz[i] / sqrt(2.0))
                           : 1.0 - 0.5 * erfc(zz[i] / sqrt(2.0));
        double rel = fabs(q - p) / fmin(p, 1.0 - p);
        worst = rel > worst ? rel : worst;
    }
    ck_assert_msg(worst < 1e-12, "worst relative error of Phi(z) %g", worst);
    /* Known quantiles. */
    double k2[2] = {0.0, 1.0}, kz[2];
    ck_assert_int_eq(sivei_rank_normalise(k2, 2, kz), SIVE_OK);
    ck_assert_double_eq_tol(kz[1], -kz[0], 1e-15);
    ck_assert_double_eq_tol(normal_quantile_ref(0.975), 1.959963984540054, 1e-13);
    ck_assert(sivei_rank_normalise(NULL, 2, kz) == SIVE_E_INVALID_ARG);
    ck_assert(sivei_rank_normalise(k2, 0, kz) == SIVE_E_INVALID_ARG);
    free(u);
    free(zz);
}
END_TEST

START_TEST(test_split_rhat_ar1)
{
    /* Identical laws: Rhat^2 - 1 ~ B/(h W) - 1/h, and B/(h W) ~ tau/h times
     * a chi-square(7)/7, i.e. about 4e-4 at h = 5e4, tau = 19: Rhat < 1.01
     * holds with a wide margin.  Shifting one chain's mean by 2 sd makes
     * the variance of the 8 half means about 0.86 sd^2: Rhat ~ 1.36. */
    enum { M = 4 };
    const size_t n = 100000;
    const double phi = 0.9;
    double *x[M];
    for (size_t c = 0; c < M; c++) {
        x[c] = alloc_series(n);
        ar1(x[c], n, phi, 700u, c);
    }
    const double *const *cx = (const double *const *)x;
    double r = sivei_split_rhat(cx, M, n);
    ck_assert_msg(r > 0.99 && r < 1.01, "Rhat %g", r);
    /* One chain alone: its two halves agree too. */
    r = sivei_split_rhat(cx, 1, n);
    ck_assert_msg(r > 0.99 && r < 1.01, "Rhat (1 chain) %g", r);
    double sx = 1.0 / sqrt(1.0 - phi * phi);
    for (size_t t = 0; t < n; t++)
        x[1][t] += 2.0 * sx;
    r = sivei_split_rhat(cx, M, n);
    ck_assert_msg(r > 1.1, "shifted Rhat %g", r);
    for (size_t c = 0; c < M; c++)
        free(x[c]);
}
END_TEST

START_TEST(test_split_rhat_rank)
{
    /* Identical laws -> ~1 (bulk and folded alike: the normal scores of
     * draws from one law are one law).  A chain with twice the spread and
     * the same centre leaves the chain means alone, so the bulk and the
     * classic Rhat stay ~1, but its folded draws |x - median| are larger:
     * their normal scores have a mean ~0.5 above the others', which gives
     * a folded Rhat of ~1.07, above the 1.05 of SIVE_FLAG_HIGH_RHAT.  A shifted
     * chain is seen by both.  Invariance: a strictly increasing affine map
     * of every draw changes no rank, hence no score and no Rhat.  (With
     * n = 1e5 and tau = 19 the sampling spread of these Rhat is ~1e-3.) */
    enum { M = 4 };
    const size_t n = 100000;
    const double phi = 0.9, sx = 1.0 / sqrt(1.0 - phi * phi);
    double *x[M];
    for (size_t c = 0; c < M; c++) {
        x[c] = alloc_series(n);
        ar1(x[c], n, phi, 710u, c);
    }
    const double *const *cx = (const double *const *)x;
    double same = sivei_split_rhat(cx, M, n);
    ck_assert_msg(same > 0.99 && same < 1.01, "identical chains: Rhat %g", same);

    for (size_t t = 0; t < n; t++)
        x[2][t] *= 2.0;
    double scaled = sivei_split_rhat(cx, M, n), classic = sivei_split_rhat_basic(cx, M, n);
    ck_assert_msg(classic < 1.01, "classic Rhat sees the scale: %g", classic);
    ck_assert_msg(scaled > 1.05, "folded Rhat misses the scale: %g", scaled);

    for (size_t c = 0; c < M; c++)
        for (size_t t = 0; t < n; t++)
            x[c][t] = 3.0 * x[c][t] - 7.0;
    /* Exact up to the few draws nearest the median, whose distances
     * |x - median| rounding may order the other way (2 of 4e5 here): they
     * hold the lowest folded ranks, where adjacent normal scores differ by
     * ~0.3, so a swap moves a half's mean score by ~1e-5 and Rhat by ~1e-7. */
    ck_assert_double_eq_tol(sivei_split_rhat(cx, M, n), scaled, 1e-6);

    for (size_t t = 0; t < n; t++)
        x[0][t] += 3.0 * 2.0 * sx; /* 2 sd on the transformed scale */
    double shifted = sivei_split_rhat(cx, M, n);
    ck_assert_msg(shifted > 1.1, "shifted Rhat %g", shifted);
    printf("rank split-Rhat: identical %.4f, one chain x2 spread %.4f (classic %.4f), "
           "shifted %.4f\n", same, scaled, classic, shifted);
    for (size_t c = 0; c < M; c++)
        free(x[c]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Public wrappers                                                    */
/* ------------------------------------------------------------------ */

START_TEST(test_public_wrappers)
{
    const size_t n = 20000;
    double *x = alloc_series(n);
    ar1(x, n, 0.5, 800u, 0u);
    ck_assert_double_eq(sive_stats_ess(x, n), sivei_ess_geyer(x, n));
    ck_assert_double_eq(sive_stats_mcse(x, n),
                        sqrt(sivei_batch_means_var(x, n)));

    ck_assert(isnan(sive_stats_ess(NULL, n)));
    ck_assert(strstr(sive_last_errmsg(), "NULL") != NULL);
    ck_assert(isnan(sive_stats_ess(x, 3)));
    ck_assert(strstr(sive_last_errmsg(), "n = 3") != NULL);
    ck_assert(isnan(sive_stats_mcse(NULL, n)));
    ck_assert(isnan(sive_stats_mcse(x, 2)));
    x[17] = NAN;
    ck_assert(isnan(sive_stats_ess(x, n)));
    ck_assert(strstr(sive_last_errmsg(), "x[17]") != NULL);
    ck_assert(isnan(sive_stats_mcse(x, n)));

    for (size_t t = 0; t < n; t++)
        x[t] = 0.25;
    ck_assert_double_eq(sive_stats_ess(x, n), (double)n);
    ck_assert_double_eq(sive_stats_mcse(x, n), 0.0);
    free(x);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Halves test (SIVE_FLAG_NONSTATIONARY)                              */
/* ------------------------------------------------------------------ */

/* 0.2's halves z: batch means of floor(sqrt h) on each half. */
static double halves_z_batch_means(const double *x, size_t n)
{
    size_t h = n / 2;
    double m1, m2;
    sivei_mean_var(x, h, &m1, NULL);
    sivei_mean_var(x + (n - h), h, &m2, NULL);
    return (m1 - m2) / sqrt(sivei_batch_means_var(x, h) + sivei_batch_means_var(x + (n - h), h));
}

/* The signed z of R runs of K stationary AR(1) chains (started in their
 * stationary law): mean and sd over the R*K values, and 0.2's sd. */
static void halves_mc(double phi, size_t n, int runs, double *mean, double *sd, double *sd_old)
{
    enum { K = 5 };
    double *x[K], z[K];
    double *all = alloc_series((size_t)runs * K), *old = alloc_series((size_t)runs * K);
    for (int c = 0; c < K; c++)
        x[c] = alloc_series(n);
    for (int r = 0; r < runs; r++) {
        for (int c = 0; c < K; c++) {
            ar1(x[c], n, phi, 4000u, (uint64_t)(K * r + c));
            old[K * r + c] = halves_z_batch_means(x[c], n);
        }
        ck_assert_int_eq(sivei_halves_z((const double *const *)x, K, n, z), SIVE_OK);
        memcpy(all + K * r, z, sizeof z);
    }
    double m_old;
    summary(all, (size_t)runs * K, mean, sd);
    summary(old, (size_t)runs * K, &m_old, sd_old);
    for (int c = 0; c < K; c++)
        free(x[c]);
    free(all);
    free(old);
}

START_TEST(test_halves_z_stationary)
{
    /* On stationary chains the signed halves z is ~ N(0, 1): over 1000
     * values the mean is within 3 standard errors (3/sqrt(1000) = 0.095)
     * of 0 and the sd within 3 of its relative standard errors
     * (1/sqrt(2000) = 2.2 %) of 1, widened below by the estimator's known
     * conservative lean (E[Vhat]/V = 1.02-1.03 on long AR(1) series,
     * test_var_of_mean_ar1): sd in [0.90, 1.07].  phi = 0.99 (tau = 199),
     * halves of 50 tau, runs of 5 chains as by default. */
    double mean, sd, sd_old;
    halves_mc(0.99, 20000, 200, &mean, &sd, &sd_old);
    printf("halves z, AR(1) phi 0.99, n 20000 (halves of 50 tau), 1000 chains: mean %.3f, "
           "sd %.3f (0.2's batch means: sd %.3f)\n", mean, sd, sd_old);
    ck_assert_msg(fabs(mean) < 3.0 / sqrt(1000.0), "mean %g", mean);
    ck_assert_msg(sd > 0.90 && sd < 1.07, "sd %g", sd);
    ck_assert_msg(sd_old > 1.5, "0.2's sd %g: the case no longer shows the miscalibration", sd_old);
    /* shorter halves (10 tau): printed, the MCSE's own calibration there
     * is docs/theory.md's table */
    halves_mc(0.99, 4000, 200, &mean, &sd, &sd_old);
    printf("halves z, AR(1) phi 0.99, n 4000 (halves of 10 tau), 1000 chains: mean %.3f, "
           "sd %.3f (0.2's batch means: sd %.3f)\n", mean, sd, sd_old);
}
END_TEST

START_TEST(test_halves_z_special_inputs)
{
    double a[16], b[16], z[2];
    const double *x[2] = {a, b};
    for (int i = 0; i < 16; i++) {
        a[i] = 3.0;
        b[i] = i < 8 ? 1.0 : 2.0;
    }
    ck_assert_int_eq(sivei_halves_z(x, 2, 16, z), SIVE_OK);
    ck_assert_double_eq(z[0], 0.0);
    ck_assert(isinf(z[1]) && z[1] < 0.0);
    ck_assert_int_eq(sivei_halves_z(x, 2, 7, z), SIVE_OK); /* halves of 3 */
    ck_assert(isnan(z[0]) && isnan(z[1]));
    a[3] = NAN;
    ck_assert_int_eq(sivei_halves_z(x, 2, 16, z), SIVE_OK);
    ck_assert(isnan(z[0]));
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *basic = tcase_create("basic");
    tcase_add_test(basic, test_mean_var_small);
    tcase_add_test(basic, test_autocorr_matches_direct);
    tcase_add_test(basic, test_autocorr_edge_cases);
    tcase_add_test(basic, test_batch_means_by_hand);
    tcase_add_test(basic, test_ess_special_inputs);
    tcase_add_test(basic, test_ess_multi_special_inputs);
    tcase_add_test(basic, test_split_rhat_by_hand);
    tcase_add_test(basic, test_rank_normalise);
    tcase_add_test(basic, test_var_of_mean_definition);
    tcase_add_test(basic, test_var_of_mean_special_inputs);
    tcase_add_test(basic, test_var_of_mean_pooled_definition);
    tcase_add_test(basic, test_var_of_mean_pooled_special_inputs);
    tcase_add_test(basic, test_public_wrappers);
    tcase_add_test(basic, test_halves_z_special_inputs);
    suite_add_tcase(s, basic);

    TCase *mc = tcase_create("monte_carlo");
    tcase_add_test(mc, test_ess_ar1);
    tcase_add_test(mc, test_ess_iid);
    tcase_add_test(mc, test_mcse_ar1);
    tcase_add_test(mc, test_ess_multi_one_chain);
    tcase_add_test(mc, test_ess_multi_iid);
    tcase_add_test(mc, test_ess_chains_matches_single);
    tcase_add_test(mc, test_ess_multi_ar1_and_shift);
    tcase_add_test(mc, test_split_rhat_ar1);
    tcase_add_test(mc, test_split_rhat_rank);
    tcase_add_test(mc, test_var_of_mean_ar1);
    tcase_add_test(mc, test_var_of_mean_pooled_short);
    tcase_add_test(mc, test_halves_z_stationary);
    suite_add_tcase(s, mc);
    return s;
}

int main(void)
{
    return check_run(stats_suite());
}
