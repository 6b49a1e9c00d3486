/* Series statistics behind the diagnostics: moments, FFT autocorrelation,
 * Geyer ESS, batch means, multi-chain ESS and split-Rhat.
 *
 * Conventions shared by every function here: no global state (all scratch
 * memory is allocated per call), NaN for undefined results, and the
 * autocovariance estimator is the usual biased one,
 *   c_k = (1/n) sum_{t=0}^{n-1-k} (x_t - xbar)(x_{t+k} - xbar),
 * whose sequence is positive semi-definite (Geyer's estimator relies on it). */
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static int all_finite(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

static int is_constant(const double *x, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (x[i] != x[0])
            return 0;
    return 1;
}

void sive_mean_var(const double *x, size_t n, double *mean, double *var)
{
    double m = NAN, v = NAN;
    if (x && n > 0) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++)
            s += x[i];
        m = s / (double)n;
        if (n > 1) {
            /* Second pass on deviations; the (sum d)^2 / n term removes most
             * of the rounding error left in the mean (Chan, Golub & LeVeque's
             * corrected two-pass algorithm). */
            double sd = 0.0, sd2 = 0.0;
            for (size_t i = 0; i < n; i++) {
                double d = x[i] - m;
                sd += d;
                sd2 += d * d;
            }
            v = (sd2 - sd * sd / (double)n) / (double)(n - 1);
            if (v < 0.0)
                v = 0.0;
        }
    }
    if (mean)
        *mean = m;
    if (var)
        *var = v;
}

/* ------------------------------------------------------------------ */
/* Radix-2 complex FFT and autocorrelation                            */
/* ------------------------------------------------------------------ */

/* Scratch for transforms of length len (a power of two): real and
 * imaginary parts and the len/2 twiddles exp(-2 pi i k / len). */
typedef struct fft_ws {
    size_t len;
    double *re, *im, *cw, *sw;
} fft_ws;

static void fft_ws_free(fft_ws *w)
{
    free(w->re);
    w->re = w->im = w->cw = w->sw = NULL;
    w->len = 0;
}

/* Workspace for autocorrelations of series of length n: zero padding to
 * len >= 2n makes the circular correlation equal the linear one. */
static int fft_ws_init(fft_ws *w, size_t n)
{
    w->re = w->im = w->cw = w->sw = NULL;
    w->len = 0;
    if (n == 0 || n > SIZE_MAX / 16 / sizeof(double))
        return SIVE_E_NOMEM;
    size_t len = 2;
    while (len < 2 * n)
        len <<= 1;
    /* One block: re, im (len each), cos, sin (len/2 each). */
    double *block = malloc(3 * len * sizeof *block);
    if (!block)
        return SIVE_E_NOMEM;
    w->len = len;
    w->re = block;
    w->im = block + len;
    w->cw = block + 2 * len;
    w->sw = w->cw + len / 2;
    /* Direct evaluation of each twiddle (no recurrence) keeps the
     * transform's error at O(eps log len). */
    const double two_pi = 6.283185307179586476925286766559;
    for (size_t k = 0; k < len / 2; k++) {
        double a = two_pi * (double)k / (double)len;
        w->cw[k] = cos(a);
        w->sw[k] = -sin(a);
    }
    return SIVE_OK;
}

/* In-place forward transform X_j = sum_t x_t exp(-2 pi i j t / len). */
static void fft_forward(fft_ws *w)
{
    size_t len = w->len;
    double *re = w->re, *im = w->im;
    /* Bit-reversal permutation. */
    for (size_t i = 1, j = 0; i < len; i++) {
        size_t bit = len >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j |= bit;
        if (i < j) {
            double t = re[i];
            re[i] = re[j];
            re[j] = t;
            t = im[i];
            im[i] = im[j];
            im[j] = t;
        }
    }
    /* Iterative Cooley-Tukey butterflies. */
    for (size_t half = 1; half < len; half <<= 1) {
        size_t step = len / (2 * half);
        for (size_t start = 0; start < len; start += 2 * half) {
            for (size_t j = 0; j < half; j++) {
                double c = w->cw[j * step], s = w->sw[j * step];
                size_t p = start + j, q = p + half;
                double tr = re[q] * c - im[q] * s;
                double ti = re[q] * s + im[q] * c;
                re[q] = re[p] - tr;
                im[q] = im[p] - ti;
                re[p] += tr;
                im[p] += ti;
            }
        }
    }
}

/* rho[0..maxlag] of x[0..n-1] with the workspace of fft_ws_init(n). */
static void autocorr_ws(fft_ws *w, const double *x, size_t n, double *rho,
                        size_t maxlag)
{
    double mean;
    sive_mean_var(x, n, &mean, NULL);
    size_t len = w->len;
    for (size_t t = 0; t < n; t++) {
        w->re[t] = x[t] - mean;
        w->im[t] = 0.0;
    }
    for (size_t t = n; t < len; t++)
        w->re[t] = w->im[t] = 0.0;
    fft_forward(w);
    /* The power spectrum is real and even, so a second forward transform
     * equals the inverse one up to the factor 1/len. */
    for (size_t j = 0; j < len; j++) {
        w->re[j] = w->re[j] * w->re[j] + w->im[j] * w->im[j];
        w->im[j] = 0.0;
    }
    fft_forward(w);
    /* re[k] / len = sum_t d_t d_{t+k} (times len from the transform pair). */
    double var0 = w->re[0];
    size_t top = maxlag < n ? maxlag : n - 1;
    if (var0 > 0.0) {
        for (size_t k = 0; k <= top; k++)
            rho[k] = w->re[k] / var0;
        rho[0] = 1.0;
    } else if (var0 == 0.0) {
        /* Constant series: no correlation is defined; report the one of an
         * uncorrelated series so that weighted sums stay finite. */
        rho[0] = 1.0;
        for (size_t k = 1; k <= top; k++)
            rho[k] = 0.0;
    } else {
        for (size_t k = 0; k <= top; k++) /* non-finite input */
            rho[k] = NAN;
    }
    /* Lags >= n have empty sums. */
    for (size_t k = top + 1; k <= maxlag; k++)
        rho[k] = 0.0;
}

int sive_autocorr(const double *x, size_t n, double *rho, size_t maxlag)
{
    if (!x || !rho || n == 0)
        return SIVE_E_INVALID_ARG;
    fft_ws w;
    int rc = fft_ws_init(&w, n);
    if (rc)
        return rc;
    autocorr_ws(&w, x, n, rho, maxlag);
    fft_ws_free(&w);
    return SIVE_OK;
}

/* ------------------------------------------------------------------ */
/* Effective sample size                                              */
/* ------------------------------------------------------------------ */

/* Geyer's (1992) initial monotone sequence estimate of the integrated
 * autocorrelation time from rho[0..nlag-1]: pair sums
 * G_k = rho_2k + rho_2k+1 are kept up to (excluding) the first one that is
 * not positive, each clipped to the previous one (monotone), and
 * tau = -1 + 2 sum G_k. */
static double geyer_tau(const double *rho, size_t nlag)
{
    double sum = 0.0, prev = INFINITY;
    for (size_t k = 0; 2 * k + 1 < nlag; k++) {
        double g = rho[2 * k] + rho[2 * k + 1];
        if (!(g > 0.0))
            break;
        if (g > prev)
            g = prev;
        sum += g;
        prev = g;
    }
    return -1.0 + 2.0 * sum;
}

/* ESS = draws / tau, capped at the number of draws.  Stan instead caps at
 * draws * log10(draws), which lets antithetic chains (tau < 1) report more
 * than their length; here the ESS is a warning device (low-ESS flag, the
 * standard errors come from batch means), so the conservative cap is
 * preferred: it also keeps tau <= 0 (possible when rho_1 < -1/2) from
 * giving a negative or infinite ESS. */
static double ess_from_tau(double draws, double tau)
{
    return tau > 1.0 ? draws / tau : draws;
}

/* Single-chain ESS with a status, shared by the internal and public entry
 * points.  Preconditions (x, n >= 4, finite) are checked by the callers. */
static int ess_geyer_status(const double *x, size_t n, double *out)
{
    if (is_constant(x, n)) {
        *out = (double)n;
        return SIVE_OK;
    }
    double *rho = malloc(n * sizeof *rho);
    fft_ws w;
    int rc = rho ? fft_ws_init(&w, n) : SIVE_E_NOMEM;
    if (rc) {
        free(rho);
        *out = NAN;
        return rc;
    }
    autocorr_ws(&w, x, n, rho, n - 1);
    fft_ws_free(&w);
    *out = ess_from_tau((double)n, geyer_tau(rho, n));
    free(rho);
    return SIVE_OK;
}

double sive_ess_geyer(const double *x, size_t n)
{
    if (!x || n < 4 || !all_finite(x, n))
        return NAN;
    double ess;
    ess_geyer_status(x, n, &ess);
    return ess;
}

/* Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), Sec. 3.2, without
 * rank normalisation: with chain variances s2_c (ddof 1), W = mean s2_c,
 * B/n = variance (ddof 1) of the chain means and
 * var_plus = (n-1)/n W + B/n, the combined autocorrelation is
 *   rho_t = 1 - (W - mean_c(s2_c rho_{t,c})) / var_plus,
 * truncated and made monotone as in Geyer's estimator; ESS = m n / tau.
 *
 * m == 1: B is taken as 0 (the formula's 0/0), so var_plus = (n-1)/n s2
 * and rho_t = (n rho_t,c - 1) / (n - 1) = rho_t,c - (1 - rho_t,c)/(n-1).
 * The only difference from sive_ess_geyer is this n/(n-1) factor between
 * the ddof-1 variance in W and the biased one in var_plus; it lowers each
 * rho_t by O(1/n), so the two estimates agree to relative O(lags/(n tau))
 * (and exactly for the same truncation after that rescaling, which
 * test_stats checks). */
double sive_ess_multi(const double *const *x, size_t m, size_t n)
{
    if (!x || m == 0 || n < 4 || m > SIZE_MAX / n)
        return NAN;
    for (size_t c = 0; c < m; c++)
        if (!x[c] || !all_finite(x[c], n))
            return NAN;

    double *acc = calloc(n, sizeof *acc);  /* sum_c s2_c rho_{t,c} */
    double *rho = malloc(n * sizeof *rho);
    double *means = malloc(m * sizeof *means);
    fft_ws w = {0, NULL, NULL, NULL, NULL};
    double ess = NAN;
    if (!acc || !rho || !means || fft_ws_init(&w, n))
        goto done;

    double wsum = 0.0;
    for (size_t c = 0; c < m; c++) {
        double s2;
        sive_mean_var(x[c], n, &means[c], &s2);
        wsum += s2;
        if (s2 > 0.0) {
            autocorr_ws(&w, x[c], n, rho, n - 1);
            for (size_t t = 0; t < n; t++)
                acc[t] += s2 * rho[t];
        }
    }
    double W = wsum / (double)m;
    double b_over_n = 0.0;
    if (m > 1)
        sive_mean_var(means, m, NULL, &b_over_n);
    double var_plus = (double)(n - 1) / (double)n * W + b_over_n;
    double draws = (double)m * (double)n;
    if (!(var_plus > 0.0)) {
        ess = draws; /* every chain constant and all equal */
        goto done;
    }
    for (size_t t = 0; t < n; t++)
        rho[t] = 1.0 - (W - acc[t] / (double)m) / var_plus;
    ess = ess_from_tau(draws, geyer_tau(rho, n));

done:
    fft_ws_free(&w);
    free(acc);
    free(rho);
    free(means);
    return ess;
}

/* ------------------------------------------------------------------ */
/* Batch means and split-Rhat                                         */
/* ------------------------------------------------------------------ */

static size_t isqrt(size_t n)
{
    size_t b = (size_t)sqrt((double)n);
    while (b > 0 && b > n / b)
        b--;
    while ((b + 1) <= n / (b + 1))
        b++;
    return b;
}

/* Non-overlapping batches of b = floor(sqrt n) draws, a = floor(n / b) of
 * them.  The n - a b leftover draws are dropped at the START: the series
 * is a tail window after burn-in, and its early end is the least
 * stationary part.  Var(mean) ~ Var(batch means) / a.  The square-root
 * batch size is the usual consistent choice (Flegal & Jones 2010); it is
 * biased low when the autocorrelation time is not small against sqrt n. */
double sive_batch_means_var(const double *x, size_t n)
{
    if (!x || n < 4)
        return NAN;
    size_t b = isqrt(n), a = n / b, skip = n - a * b;
    double *bm = malloc(a * sizeof *bm);
    if (!bm)
        return NAN;
    const double *p = x + skip;
    for (size_t j = 0; j < a; j++, p += b) {
        double s = 0.0;
        for (size_t t = 0; t < b; t++)
            s += p[t];
        bm[j] = s / (double)b;
    }
    double var;
    sive_mean_var(bm, a, NULL, &var);
    free(bm);
    return var / (double)a;
}

/* Classic split-Rhat (Gelman et al., BDA3 Sec. 11.4): every chain is split
 * into a first and a last half of h = floor(n/2) draws (the middle draw of
 * an odd-length chain is dropped), then with the 2m halves' variances
 * (ddof 1) W = mean, B/h = variance (ddof 1) of their means,
 * var_plus = (h-1)/h W + B/h and Rhat = sqrt(var_plus / W).
 * All halves constant: 1 if they agree (nothing disagrees), +inf if not. */
double sive_split_rhat(const double *const *x, size_t m, size_t n)
{
    if (!x || m == 0 || n < 4 || m > SIZE_MAX / 2)
        return NAN;
    for (size_t c = 0; c < m; c++)
        if (!x[c] || !all_finite(x[c], n))
            return NAN;
    size_t h = n / 2, k = 2 * m;
    double *means = malloc(k * sizeof *means);
    if (!means)
        return NAN;
    double wsum = 0.0;
    for (size_t c = 0; c < m; c++) {
        double v;
        sive_mean_var(x[c], h, &means[2 * c], &v);
        wsum += v;
        sive_mean_var(x[c] + (n - h), h, &means[2 * c + 1], &v);
        wsum += v;
    }
    double W = wsum / (double)k, b_over_h;
    sive_mean_var(means, k, NULL, &b_over_h);
    free(means);
    if (!(W > 0.0))
        return b_over_h > 0.0 ? INFINITY : 1.0;
    double var_plus = (double)(h - 1) / (double)h * W + b_over_h;
    return sqrt(var_plus / W);
}

/* ------------------------------------------------------------------ */
/* Public wrappers: NaN plus a thread-local message on bad input.     */
/* ------------------------------------------------------------------ */

static int check_series(const char *fn, const double *x, size_t n)
{
    if (!x)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "%s: x is NULL", fn);
    if (n < 4)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: n = %zu, need at least 4 values", fn, n);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return sive_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: x[%zu] is not finite", fn, i);
    return SIVE_OK;
}

double sive_stats_ess(const double *x, size_t n)
{
    if (check_series("sive_stats_ess", x, n))
        return NAN;
    double ess;
    if (ess_geyer_status(x, n, &ess))
        sive_fail(NULL, SIVE_E_NOMEM,
                  "sive_stats_ess: no memory for %zu values", n);
    return ess;
}

double sive_stats_mcse(const double *x, size_t n)
{
    if (check_series("sive_stats_mcse", x, n))
        return NAN;
    double v = sive_batch_means_var(x, n);
    if (isnan(v))
        sive_fail(NULL, SIVE_E_NOMEM,
                  "sive_stats_mcse: no memory for %zu values", n);
    return sqrt(v);
}
