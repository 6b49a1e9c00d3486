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
#include <string.h>

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

/* Sum of x[0..n-1] with four partial sums: the adds are independent, so
 * the loop runs at throughput instead of one add latency per element (the
 * chain calls this on N group losses at every step). */
static double sum4(const double *x, size_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i];
        s1 += x[i + 1];
        s2 += x[i + 2];
        s3 += x[i + 3];
    }
    for (; i < n; i++)
        s0 += x[i];
    return (s0 + s1) + (s2 + s3);
}

void sive_mean_var(const double *x, size_t n, double *mean, double *var)
{
    double m = NAN, v = NAN;
    if (x && n > 0) {
        m = sum4(x, n) / (double)n;
        if (n > 1) {
            /* Second pass on deviations; the (sum d)^2 / n term removes most
             * of the rounding error left in the mean (Chan, Golub & LeVeque's
             * corrected two-pass algorithm). */
            double d0 = 0.0, d1 = 0.0, q0 = 0.0, q1 = 0.0;
            size_t i = 0;
            for (; i + 2 <= n; i += 2) {
                double a = x[i] - m, b = x[i + 1] - m;
                d0 += a;
                d1 += b;
                q0 += a * a;
                q1 += b * b;
            }
            if (i < n) {
                double a = x[i] - m;
                d0 += a;
                q0 += a * a;
            }
            double sd = d0 + d1, sd2 = q0 + q1;
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

/* Full autocorrelations rho1, rho2 [0..n-1] of two real series with one
 * pair of transforms: z = d1 + i d2, and since each power spectrum is real
 * and even, FFT(P1 + i P2) = FFT(P1) + i FFT(P2) with both parts real.
 * x2 may be NULL (then rho2 is not written).  Series must be finite and
 * not constant. */
static void autocorr_pair(fft_ws *w, const double *x1, const double *x2, size_t n,
                          double *rho1, double *rho2)
{
    double m1, m2 = 0.0;
    sive_mean_var(x1, n, &m1, NULL);
    if (x2)
        sive_mean_var(x2, n, &m2, NULL);
    size_t len = w->len;
    double *re = w->re, *im = w->im;
    for (size_t t = 0; t < n; t++) {
        re[t] = x1[t] - m1;
        im[t] = x2 ? x2[t] - m2 : 0.0;
    }
    for (size_t t = n; t < len; t++)
        re[t] = im[t] = 0.0;
    fft_forward(w);
    /* X1_k = (Z_k + conj Z_{-k})/2, X2_k = (Z_k - conj Z_{-k})/(2i). */
    for (size_t k = 0; k <= len / 2; k++) {
        size_t j = (len - k) & (len - 1);
        double ar = re[k], ai = im[k], br = re[j], bi = im[j];
        double p1 = 0.25 * ((ar + br) * (ar + br) + (ai - bi) * (ai - bi));
        double p2 = 0.25 * ((ai + bi) * (ai + bi) + (ar - br) * (ar - br));
        re[k] = re[j] = p1;
        im[k] = im[j] = p2;
    }
    fft_forward(w);
    double c1 = re[0], c2 = im[0];
    for (size_t k = 0; k < n; k++) {
        rho1[k] = re[k] / c1;
        if (x2)
            rho2[k] = im[k] / c2;
    }
    rho1[0] = 1.0;
    if (x2)
        rho2[0] = 1.0;
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
static double geyer_tau(const double *rho, size_t nlag, int *truncated)
{
    double sum = 0.0, prev = INFINITY;
    *truncated = 0;
    for (size_t k = 0; 2 * k + 1 < nlag; k++) {
        double g = rho[2 * k] + rho[2 * k + 1];
        if (!(g > 0.0)) {
            *truncated = 1;
            break;
        }
        if (g > prev)
            g = prev;
        sum += g;
        prev = g;
    }
    return -1.0 + 2.0 * sum;
}

/* Lags computed directly before falling back to the FFT: Geyer's sequence
 * of a well-mixing chain stops after a few dozen lags, and O(n * lags) then
 * costs far less than two length-2n transforms. */
#define DIRECT_LAGS 128

/* rho[0..nlag-1] by direct sums (same biased estimator as the FFT path).
 * Returns 0 when the series is constant or not finite (caller falls back). */
static int autocorr_direct(const double *x, size_t n, double *rho, size_t nlag, double *dev)
{
    double mean;
    sive_mean_var(x, n, &mean, NULL);
    for (size_t t = 0; t < n; t++)
        dev[t] = x[t] - mean;
    for (size_t k = 0; k < nlag; k++) {
        const double *a = dev, *b = dev + k;
        size_t len = n - k, t = 0;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (; t + 4 <= len; t += 4) {
            s0 += a[t] * b[t];
            s1 += a[t + 1] * b[t + 1];
            s2 += a[t + 2] * b[t + 2];
            s3 += a[t + 3] * b[t + 3];
        }
        for (; t < len; t++)
            s0 += a[t] * b[t];
        rho[k] = (s0 + s1) + (s2 + s3);
    }
    if (!(rho[0] > 0.0) || !isfinite(rho[0]))
        return 0;
    double c0 = rho[0];
    for (size_t k = 0; k < nlag; k++)
        rho[k] /= c0;
    rho[0] = 1.0;
    return 1;
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
    double *rho = malloc(n * sizeof *rho), *dev = malloc(n * sizeof *dev);
    if (!rho || !dev) {
        free(rho);
        free(dev);
        *out = NAN;
        return SIVE_E_NOMEM;
    }
    size_t nlag = n < DIRECT_LAGS ? n : DIRECT_LAGS;
    int truncated = 0;
    double tau = NAN;
    if (autocorr_direct(x, n, rho, nlag, dev))
        tau = geyer_tau(rho, nlag, &truncated);
    int rc = SIVE_OK;
    if (!truncated && nlag < n) {
        fft_ws w;
        rc = fft_ws_init(&w, n);
        if (rc == SIVE_OK) {
            autocorr_ws(&w, x, n, rho, n - 1);
            fft_ws_free(&w);
            tau = geyer_tau(rho, n, &truncated);
        }
    }
    *out = rc ? NAN : ess_from_tau((double)n, tau);
    free(rho);
    free(dev);
    return rc;
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
int sive_ess_chains(const double *const *x, size_t m, size_t n, double *ess_each,
                    double *ess_multi)
{
    if (ess_multi)
        *ess_multi = NAN;
    if (ess_each)
        for (size_t c = 0; c < m; c++)
            ess_each[c] = NAN;
    if (!x || m == 0 || n < 4 || m > SIZE_MAX / n)
        return SIVE_E_INVALID_ARG;
    for (size_t c = 0; c < m; c++)
        if (!x[c] || !all_finite(x[c], n))
            return SIVE_E_INVALID_ARG;

    int rc = SIVE_E_NOMEM;
    double *acc = calloc(n, sizeof *acc);  /* sum_c s2_c rho_{t,c} */
    double *rho = malloc(n * sizeof *rho), *rho2 = malloc(n * sizeof *rho2);
    double *dev = malloc(n * sizeof *dev);
    double *means = malloc(m * sizeof *means), *s2s = malloc(m * sizeof *s2s);
    unsigned char *done = calloc(m, 1); /* chain's own ESS known */
    fft_ws w = {0, NULL, NULL, NULL, NULL};
    if (!acc || !rho || !rho2 || !dev || !means || !s2s || !done)
        goto out;

    double wsum = 0.0;
    for (size_t c = 0; c < m; c++) {
        sive_mean_var(x[c], n, &means[c], &s2s[c]);
        wsum += s2s[c];
    }
    double W = wsum / (double)m;
    double b_over_n = 0.0;
    if (m > 1)
        sive_mean_var(means, m, NULL, &b_over_n);
    double var_plus = (double)(n - 1) / (double)n * W + b_over_n;
    double draws = (double)m * (double)n;
    int truncated;

    /* Pass 1: short lags directly, for every chain and the combination. */
    size_t nlag = n < DIRECT_LAGS ? n : DIRECT_LAGS;
    for (size_t c = 0; c < m; c++) {
        if (!(s2s[c] > 0.0)) { /* constant chain */
            if (ess_each)
                ess_each[c] = (double)n;
            done[c] = 1;
            continue;
        }
        autocorr_direct(x[c], n, rho, nlag, dev);
        for (size_t t = 0; t < nlag; t++)
            acc[t] += s2s[c] * rho[t];
        double tau = geyer_tau(rho, nlag, &truncated);
        if (truncated || nlag == n) {
            if (ess_each)
                ess_each[c] = ess_from_tau((double)n, tau);
            done[c] = 1;
        }
    }
    double combined = NAN;
    int multi_done = 0;
    if (!(var_plus > 0.0)) {
        combined = draws; /* every chain constant and all equal */
        multi_done = 1;
    } else {
        for (size_t t = 0; t < nlag; t++)
            rho[t] = 1.0 - (W - acc[t] / (double)m) / var_plus;
        double tau = geyer_tau(rho, nlag, &truncated);
        if (truncated || nlag == n) {
            combined = ess_from_tau(draws, tau);
            multi_done = 1;
        }
    }

    /* Pass 2: full autocorrelations by FFT, two chains per transform, for
     * whatever the short lags did not settle. */
    int need = !multi_done;
    for (size_t c = 0; c < m && !need; c++)
        need = !done[c];
    if (need) {
        if (fft_ws_init(&w, n))
            goto out;
        memset(acc, 0, n * sizeof *acc);
        size_t pend = m; /* a chain waiting for its partner */
        for (size_t c = 0; c <= m; c++) {
            if (c < m && !(s2s[c] > 0.0 && (!multi_done || !done[c])))
                continue; /* this chain needs no transform */
            if (c < m && pend == m) {
                pend = c;
                continue;
            }
            if (pend == m)
                continue; /* end, nothing pending */
            size_t c2 = c;    /* c == m: the last chain goes alone */
            autocorr_pair(&w, x[pend], c2 < m ? x[c2] : NULL, n, rho, rho2);
            const size_t ids[2] = {pend, c2};
            double *const rs[2] = {rho, rho2};
            for (int k = 0; k < 2 && ids[k] < m; k++) {
                size_t id = ids[k];
                if (!done[id]) {
                    double tau = geyer_tau(rs[k], n, &truncated);
                    if (ess_each)
                        ess_each[id] = ess_from_tau((double)n, tau);
                    done[id] = 1;
                }
                if (!multi_done)
                    for (size_t t = 0; t < n; t++)
                        acc[t] += s2s[id] * rs[k][t];
            }
            pend = m;
        }
        if (!multi_done) {
            for (size_t t = 0; t < n; t++)
                rho[t] = 1.0 - (W - acc[t] / (double)m) / var_plus;
            combined = ess_from_tau(draws, geyer_tau(rho, n, &truncated));
        }
    }
    if (ess_multi)
        *ess_multi = combined;
    rc = SIVE_OK;

out:
    fft_ws_free(&w);
    free(acc);
    free(rho);
    free(rho2);
    free(dev);
    free(means);
    free(s2s);
    free(done);
    return rc;
}

double sive_ess_multi(const double *const *x, size_t m, size_t n)
{
    double ess;
    sive_ess_chains(x, m, n, NULL, &ess);
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
