/* Series statistics behind the diagnostics: moments, FFT autocorrelation,
 * Geyer ESS, batch means, the variance of a mean of a slowly mixing series,
 * multi-chain ESS and rank-normalised split-Rhat.
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

void sivei_mean_var(const double *x, size_t n, double *mean, double *var)
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
    sivei_mean_var(x, n, &mean, NULL);
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
    sivei_mean_var(x1, n, &m1, NULL);
    if (x2)
        sivei_mean_var(x2, n, &m2, NULL);
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

int sivei_autocorr(const double *x, size_t n, double *rho, size_t maxlag)
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
    sivei_mean_var(x, n, &mean, NULL);
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

double sivei_ess_geyer(const double *x, size_t n)
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
 * The only difference from sivei_ess_geyer is this n/(n-1) factor between
 * the ddof-1 variance in W and the biased one in var_plus; it lowers each
 * rho_t by O(1/n), so the two estimates agree to relative O(lags/(n tau))
 * (and exactly for the same truncation after that rescaling, which
 * test_stats checks). */
/* The state of sivei_ess_chains: the chains, their moments, scratch, and
 * what is settled so far (each chain's ESS, the combined one). */
typedef struct ess_ctx {
    const double *const *x;
    size_t m, n;
    double *acc;            /* sum_c s2_c rho_{t,c}          */
    double *rho, *rho2, *dev, *means, *s2s;
    unsigned char *done;    /* chain's own ESS known          */
    double *ess_each;       /* the caller's, may be NULL      */
    double W, var_plus, draws, combined;
    int multi_done;
    fft_ws w;
} ess_ctx;

/* Pass 1: short lags directly, for every chain and the combination. */
static void ess_short_lags(ess_ctx *e)
{
    const size_t n = e->n, m = e->m;
    int truncated;
    size_t nlag = n < DIRECT_LAGS ? n : DIRECT_LAGS;
    for (size_t c = 0; c < m; c++) {
        if (!(e->s2s[c] > 0.0)) { /* constant chain */
            if (e->ess_each)
                e->ess_each[c] = (double)n;
            e->done[c] = 1;
            continue;
        }
        autocorr_direct(e->x[c], n, e->rho, nlag, e->dev);
        for (size_t t = 0; t < nlag; t++)
            e->acc[t] += e->s2s[c] * e->rho[t];
        double tau = geyer_tau(e->rho, nlag, &truncated);
        if (truncated || nlag == n) {
            if (e->ess_each)
                e->ess_each[c] = ess_from_tau((double)n, tau);
            e->done[c] = 1;
        }
    }
    if (!(e->var_plus > 0.0)) {
        e->combined = e->draws; /* every chain constant and all equal */
        e->multi_done = 1;
    } else {
        for (size_t t = 0; t < nlag; t++)
            e->rho[t] = 1.0 - (e->W - e->acc[t] / (double)m) / e->var_plus;
        double tau = geyer_tau(e->rho, nlag, &truncated);
        if (truncated || nlag == n) {
            e->combined = ess_from_tau(e->draws, tau);
            e->multi_done = 1;
        }
    }
}

/* Chains id[0] (and id[1] when < m) have their full autocorrelations in
 * rs: settle their own ESS and add them to the combination. */
static void ess_take_pair(ess_ctx *e, const size_t ids[2], double *const rs[2])
{
    int truncated;
    for (int k = 0; k < 2 && ids[k] < e->m; k++) {
        size_t id = ids[k];
        if (!e->done[id]) {
            double tau = geyer_tau(rs[k], e->n, &truncated);
            if (e->ess_each)
                e->ess_each[id] = ess_from_tau((double)e->n, tau);
            e->done[id] = 1;
        }
        if (!e->multi_done)
            for (size_t t = 0; t < e->n; t++)
                e->acc[t] += e->s2s[id] * rs[k][t];
    }
}

/* Pass 2: full autocorrelations by FFT, two chains per transform, for
 * whatever the short lags did not settle. */
static int ess_fft(ess_ctx *e)
{
    const size_t n = e->n, m = e->m;
    if (fft_ws_init(&e->w, n))
        return SIVE_E_NOMEM;
    memset(e->acc, 0, n * sizeof *e->acc);
    size_t pend = m; /* a chain waiting for its partner */
    for (size_t c = 0; c <= m; c++) {
        if (c < m && !(e->s2s[c] > 0.0 && (!e->multi_done || !e->done[c])))
            continue; /* this chain needs no transform */
        if (c < m && pend == m) {
            pend = c;
            continue;
        }
        if (pend == m)
            continue; /* end, nothing pending */
        size_t c2 = c;    /* c == m: the last chain goes alone */
        autocorr_pair(&e->w, e->x[pend], c2 < m ? e->x[c2] : NULL, n, e->rho, e->rho2);
        const size_t ids[2] = {pend, c2};
        double *const rs[2] = {e->rho, e->rho2};
        ess_take_pair(e, ids, rs);
        pend = m;
    }
    if (!e->multi_done) {
        int truncated;
        for (size_t t = 0; t < n; t++)
            e->rho[t] = 1.0 - (e->W - e->acc[t] / (double)m) / e->var_plus;
        e->combined = ess_from_tau(e->draws, geyer_tau(e->rho, n, &truncated));
    }
    return SIVE_OK;
}

int sivei_ess_chains(const double *const *x, size_t m, size_t n, double *ess_each,
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
    ess_ctx e = {.x = x, .m = m, .n = n, .ess_each = ess_each, .combined = NAN,
                 .w = {0, NULL, NULL, NULL, NULL}};
    e.acc = calloc(n, sizeof *e.acc);
    e.rho = malloc(n * sizeof *e.rho);
    e.rho2 = malloc(n * sizeof *e.rho2);
    e.dev = malloc(n * sizeof *e.dev);
    e.means = malloc(m * sizeof *e.means);
    e.s2s = malloc(m * sizeof *e.s2s);
    e.done = calloc(m, 1);
    if (!e.acc || !e.rho || !e.rho2 || !e.dev || !e.means || !e.s2s || !e.done)
        goto out;

    double wsum = 0.0;
    for (size_t c = 0; c < m; c++) {
        sivei_mean_var(x[c], n, &e.means[c], &e.s2s[c]);
        wsum += e.s2s[c];
    }
    e.W = wsum / (double)m;
    double b_over_n = 0.0;
    if (m > 1)
        sivei_mean_var(e.means, m, NULL, &b_over_n);
    e.var_plus = (double)(n - 1) / (double)n * e.W + b_over_n;
    e.draws = (double)m * (double)n;
    ess_short_lags(&e);
    int need = !e.multi_done;
    for (size_t c = 0; c < m && !need; c++)
        need = !e.done[c];
    if (need && ess_fft(&e))
        goto out;
    if (ess_multi)
        *ess_multi = e.combined;
    rc = SIVE_OK;

out:
    fft_ws_free(&e.w);
    free(e.acc);
    free(e.rho);
    free(e.rho2);
    free(e.dev);
    free(e.means);
    free(e.s2s);
    free(e.done);
    return rc;
}

double sivei_ess_multi(const double *const *x, size_t m, size_t n)
{
    double ess;
    sivei_ess_chains(x, m, n, NULL, &ess);
    return ess;
}

/* ------------------------------------------------------------------ */
/* Batch means                                                        */
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
double sivei_batch_means_var(const double *x, size_t n)
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
    sivei_mean_var(bm, a, NULL, &var);
    free(bm);
    return var / (double)a;
}

/* ------------------------------------------------------------------ */
/* Variance of a mean for slowly mixing, noisy series                 */
/* ------------------------------------------------------------------ */

/* Sokal's (1997) automatic window: the smallest W with W >= SOKAL_C tau(W),
 * tau(W) = 1 + 2 sum_{k=1..W} rho_k; 5 is his and emcee's choice. */
#define SOKAL_C 5.0

/* Sokal's window on the moving averages z of width b (rho[0..wmax]):
 * the averaging alone gives z a triangular autocorrelation of width b and
 * tau_z = b (white x), so the window covers that and SOKAL_C times what x
 * adds: the smallest W >= b with W >= b + SOKAL_C (tau(W) - b).  Returns
 * tau(W) and stores W in *w (at most wmax, where the search gives up: the
 * series is too short to bound its autocorrelation). */
static double sokal_tau(const double *rho, size_t wmax, size_t b, size_t *w)
{
    double tau = 1.0, bd = (double)b;
    size_t k = 0;
    while (k < wmax) {
        k++;
        tau += 2.0 * rho[k];
        if (k >= b && (double)k >= bd + SOKAL_C * (tau - bd))
            break;
    }
    *w = k;
    return tau;
}

/* z[j] = mean of x[j .. j+b-1], j = 0 .. n-b: running sums of deviations
 * from the mean, so the rounding error stays far below the fluctuations. */
static void moving_average(const double *x, size_t n, size_t b, double mean, double *z)
{
    double s = 0.0;
    for (size_t t = 0; t < b; t++)
        s += x[t] - mean;
    for (size_t j = 0; j + b <= n; j++) {
        z[j] = mean + s / (double)b;
        if (j + b < n)
            s += (x[j + b] - mean) - (x[j] - mean);
    }
}

/* Pooled autocovariance sums of the moving averages of k series:
 * acc[j] = sum_c sum_{t<m-j} (z_ct - mu)(z_c,t+j - mu), j <= wmax, about
 * the grand mean mu of all z.  Each chain's sums about its own mean come
 * from the FFT (stable); the shift to mu adds, with d = z - zbar_c and
 * delta = zbar_c - mu, delta (sum_{t<m-j} d_t + sum_{t>=j} d_t) +
 * (m-j) delta^2 (prefix sums of d). */
typedef struct pool_ws {
    size_t n, b, m, wmax;
    fft_ws fft;
    double *z, *rho, *pre, *acc;
} pool_ws;

static void pool_ws_free(pool_ws *p)
{
    fft_ws_free(&p->fft);
    free(p->z);
    free(p->rho);
    free(p->pre);
    free(p->acc);
}

static int pool_ws_init(pool_ws *p, size_t n)
{
    p->n = n;
    p->b = isqrt(n);
    p->m = n - p->b + 1;
    p->wmax = (p->m - 1) / 4;
    p->z = malloc(p->m * sizeof *p->z);
    p->rho = malloc((p->wmax + 1) * sizeof *p->rho);
    p->pre = malloc((p->m + 1) * sizeof *p->pre);
    p->acc = calloc(p->wmax + 1, sizeof *p->acc);
    int rc = fft_ws_init(&p->fft, p->m);
    if (rc == SIVE_OK && !(p->z && p->rho && p->pre && p->acc))
        rc = SIVE_E_NOMEM;
    if (rc)
        pool_ws_free(p);
    return rc;
}

/* Moving averages of x (mean xbar) into p->z; returns their mean. */
static double pool_z(pool_ws *p, const double *x, double xbar)
{
    moving_average(x, p->n, p->b, xbar, p->z);
    return sum4(p->z, p->m) / (double)p->m;
}

/* Adds the sums of one chain's z (mean zbar) about mu into p->acc. */
static void pool_add(pool_ws *p, double zbar, double mu)
{
    const size_t m = p->m;
    double vz;
    sivei_mean_var(p->z, m, NULL, &vz);
    double ss = vz * (double)(m - 1), delta = zbar - mu;
    autocorr_ws(&p->fft, p->z, m, p->rho, p->wmax);
    p->pre[0] = 0.0;
    for (size_t t = 0; t < m; t++)
        p->pre[t + 1] = p->pre[t] + (p->z[t] - zbar);
    for (size_t j = 0; j <= p->wmax; j++) {
        double ends = p->pre[m - j] + (p->pre[m] - p->pre[j]);
        p->acc[j] += p->rho[j] * ss + delta * ends + (double)(m - j) * delta * delta;
    }
}

/* The pooled spectral density at 0 of k series from p->acc: Sokal's window
 * on the pooled autocorrelation, and the centring correction for the k m
 * values behind the grand mean (see sivei_var_of_mean_pooled). */
static double pool_sigma2(const pool_ws *p, size_t k, size_t *w_out)
{
    *w_out = 0;
    if (!(p->acc[0] > 0.0))
        return 0.0; /* every z constant and equal */
    for (size_t j = 0; j <= p->wmax; j++)
        p->rho[j] = p->acc[j] / p->acc[0];
    size_t w = 0;
    double tau = sokal_tau(p->rho, p->wmax, p->b, &w);
    *w_out = w;
    double km = (double)k * (double)p->m, c0 = p->acc[0] / km;
    return c0 * tau / (1.0 - (2.0 * (double)w + 1.0) / km);
}

/* See stats.h.  sigma2 = sum_j gamma_j, the spectral density at 0 shared
 * by the k series, estimated in three steps:
 *  1. moving averages z of width b = floor(sqrt n) (m = n - b + 1 values
 *     per series): a filter whose weights sum to 1 keeps the spectral
 *     density at 0, so sigma2(z) = sigma2(x), while it averages white
 *     noise down by b; on a series whose slow correlation carries a few %
 *     of its variance (the SIVE influence series under evaluation noise)
 *     the autocorrelation of x drowns in noise after a few lags, that of
 *     z does not;
 *  2. the autocovariances of all z about their grand mean, summed over
 *     the series (k times the information on the shape of the
 *     autocorrelation), and tau_z by Sokal's window, W <= (m-1)/4;
 *  3. the autocovariances about the estimated grand mean are each low by
 *     about its variance sigma2/(k m), so the window's sum c0 tau_z is
 *     low by (2W+1) sigma2/(k m): sigma2 = c0 tau_z / (1 - (2W+1)/(k m))
 *     (at most a factor 2 for k = 1, by the bound on W).
 * Series c gets tau = sigma2 / mean_c(s2_c) applied to its own variance,
 * s2_c tau / n, at least the iid value s2_c / n. */
int sivei_var_of_mean_pooled(sivei_series_fn get, void *ctx, size_t k, size_t n,
                             double *out, double *tau_out)
{
    return sivei_var_of_mean_pooled_dof(get, ctx, k, n, out, tau_out, NULL);
}

int sivei_var_of_mean_pooled_dof(sivei_series_fn get, void *ctx, size_t k, size_t n,
                                 double *out, double *tau_out, double *dof_out)
{
    for (size_t c = 0; c < k; c++)
        out[c] = NAN;
    if (tau_out)
        *tau_out = NAN;
    if (dof_out)
        *dof_out = NAN;
    if (!get || k == 0 || n < 4)
        return SIVE_OK;
    double *xbar = malloc(2 * k * sizeof *xbar); /* then the means of z */
    pool_ws p;
    int rc = xbar ? pool_ws_init(&p, n) : SIVE_E_NOMEM;
    if (rc) {
        free(xbar);
        return rc;
    }
    double *zbar = xbar + k;
    /* pass 1: means, variances (in out) and the grand mean of z */
    double vsum = 0.0, zsum = 0.0;
    for (size_t c = 0; c < k && rc == SIVE_OK; c++) {
        const double *x = get(ctx, c);
        if (!x)
            rc = SIVE_E_NOMEM;
        else if (!all_finite(x, n))
            rc = SIVE_E_INVALID_ARG;
        else {
            sivei_mean_var(x, n, &xbar[c], &out[c]);
            zbar[c] = pool_z(&p, x, xbar[c]);
            vsum += out[c];
            zsum += zbar[c];
        }
    }
    /* pass 2: the pooled autocovariances of z about the grand mean */
    const double mu = zsum / (double)k;
    for (size_t c = 0; c < k && rc == SIVE_OK && vsum > 0.0; c++) {
        const double *x = get(ctx, c);
        if (!x)
            rc = SIVE_E_NOMEM;
        else {
            moving_average(x, n, p.b, xbar[c], p.z);
            pool_add(&p, zbar[c], mu);
        }
    }
    double tau = NAN;
    if (rc == SIVE_OK)
    {
        size_t w = 0;
        tau = vsum > 0.0 ? pool_sigma2(&p, k, &w) / (vsum / (double)k) : 1.0;
        /* a lag window of 2W + 1 lags over k m values: the spectral
         * estimate's variance 2 (2W + 1)/(k m) of its square, chi^2 with
         * k m/(2W + 1) degrees of freedom */
        if (dof_out)
            *dof_out = (double)k * (double)p.m / (2.0 * (double)w + 1.0);
    }
    for (size_t c = 0; c < k; c++)
        out[c] = rc ? NAN : fmax(out[c] * tau, out[c]) / (double)n;
    if (tau_out)
        *tau_out = tau;
    pool_ws_free(&p);
    free(xbar);
    return rc == SIVE_E_INVALID_ARG ? SIVE_OK : rc;
}

void sivei_sive_influence(const double *lbar, const double *s2, size_t n, double N, double *y)
{
    double mean;
    sivei_mean_var(lbar, n, &mean, NULL);
    const double scale = (double)n / ((double)n - 1.0);
    for (size_t i = 0; i < n; i++) {
        double dv = lbar[i] - mean;
        y[i] = dv * dv * scale - s2[i] / N;
    }
}

static const double *one_series(void *ctx, size_t c)
{
    (void)c;
    return ctx;
}

int sivei_var_of_mean(const double *x, size_t n, double *out)
{
    *out = NAN;
    if (!x)
        return SIVE_OK;
    return sivei_var_of_mean_pooled(one_series, (void *)(uintptr_t)x, 1, n, out, NULL);
}

/* ------------------------------------------------------------------ */
/* Split-Rhat, rank-normalised                                        */
/* ------------------------------------------------------------------ */

/* Rhat of k sequences of h draws each (BDA3 Sec. 11.4, no further split):
 * W = mean of their variances (ddof 1), B/h = variance (ddof 1) of their
 * means, var_plus = (h-1)/h W + B/h, Rhat = sqrt(var_plus / W).  All
 * sequences constant: 1 if they agree (nothing disagrees), +inf if not. */
static double rhat_seqs(const double *const *s, size_t k, size_t h, double *means)
{
    double wsum = 0.0;
    for (size_t j = 0; j < k; j++) {
        double v;
        sivei_mean_var(s[j], h, &means[j], &v);
        wsum += v;
    }
    double W = wsum / (double)k, b_over_h;
    sivei_mean_var(means, k, NULL, &b_over_h);
    if (!(W > 0.0))
        return b_over_h > 0.0 ? INFINITY : 1.0;
    double var_plus = (double)(h - 1) / (double)h * W + b_over_h;
    return sqrt(var_plus / W);
}

/* Checks shared by the split-Rhat entry points. */
static int rhat_input_ok(const double *const *x, size_t m, size_t n)
{
    if (!x || m == 0 || n < 4 || m > SIZE_MAX / 2 / n)
        return 0;
    for (size_t c = 0; c < m; c++)
        if (!x[c] || !all_finite(x[c], n))
            return 0;
    return 1;
}

double sivei_split_rhat_basic(const double *const *x, size_t m, size_t n)
{
    if (!rhat_input_ok(x, m, n))
        return NAN;
    size_t h = n / 2, k = 2 * m;
    const double **s = malloc(k * sizeof *s);
    double *means = malloc(k * sizeof *means);
    double r = NAN;
    if (s && means) {
        for (size_t c = 0; c < m; c++) {
            s[2 * c] = x[c];
            s[2 * c + 1] = x[c] + (n - h);
        }
        r = rhat_seqs(s, k, h, means);
    }
    free(s);
    free(means);
    return r;
}

/* Standard normal quantile: Acklam's rational approximation (relative
 * error < 1.2e-9) and one Halley step on erfc, which brings it to a few
 * ulp.  0 < p < 1. */
static double normal_quantile(double p)
{
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                -2.759285104469687e+02, 1.383577518672690e+02,
                                -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                -1.556989798598866e+02, 6.680131188771972e+01,
                                -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                -2.400758277161838e+00, -2.549732539343734e+00,
                                4.374664141464968e+00, 2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01,
                                2.445134137142996e+00, 3.754408661907416e+00};
    const double lo = 0.02425;
    double x;
    if (p < lo || p > 1.0 - lo) {
        double q = sqrt(-2.0 * log(p < lo ? p : 1.0 - p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
        if (p > 1.0 - lo)
            x = -x;
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    }
    const double sqrt2 = 1.41421356237309504880, sqrt2pi = 2.50662827463100050242;
    double e = 0.5 * erfc(-x / sqrt2) - p;
    double u = e * sqrt2pi * exp(0.5 * x * x);
    return x - u / (1.0 + 0.5 * x * u);
}

/* The continued fraction of the regularised incomplete beta function
 * I_x(a, b) (Lentz's method), for x < (a + 1)/(a + b + 2). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / (fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 300; m++) {
        for (int odd = 0; odd < 2; odd++) {
            const double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                                   : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1.0 + num * d;
            d = 1.0 / (fabs(d) < tiny ? tiny : d);
            c = 1.0 + num / c;
            c = fabs(c) < tiny ? tiny : c;
            h *= d * c;
            if (odd && fabs(d * c - 1.0) < 1e-15)
                return h;
        }
    }
    return h;
}

/* I_x(a, b), 0 <= x <= 1. */
static double beta_inc(double a, double b, double x)
{
    if (x <= 0.0 || x >= 1.0)
        return x <= 0.0 ? 0.0 : 1.0;
    const double lf = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0))
        return exp(lf) * beta_cf(a, b, x) / a;
    return 1.0 - exp(lf) * beta_cf(b, a, 1.0 - x) / b;
}

double sivei_normal_upper(double q)
{
    if (!(q < 0.5))
        return 0.0;
    return q > 1e-300 ? -normal_quantile(q) : 37.0;
}

double sivei_t_as_z(double t, double nu)
{
    if (!isfinite(t) || !(nu > 0.0) || isinf(nu))
        return t;
    /* the upper tail P(T > |t|) = I_{nu/(nu + t^2)}(nu/2, 1/2) / 2 */
    const double q = 0.5 * beta_inc(0.5 * nu, 0.5, nu / (nu + t * t));
    return copysign(sivei_normal_upper(q), t);
}

/* Unsigned key with the order of the doubles (-0 and +0 equal). */
static uint64_t order_key(double v)
{
    uint64_t u;
    v = v == 0.0 ? 0.0 : v;
    memcpy(&u, &v, sizeof u);
    return u >> 63 ? ~u : u | (UINT64_C(1) << 63);
}

enum { RADIX_BITS = 8, RADIX_BINS = 1 << RADIX_BITS };

/* One stable counting-sort pass of (k0, i0) on the digit at shift into
 * (k1, i1); returns 0 without moving anything when every key has the same
 * digit there.  count has RADIX_BINS entries. */
static int radix_pass(const uint64_t *k0, const uint32_t *i0, uint64_t *k1, uint32_t *i1,
                      size_t s, int shift, size_t *count)
{
    memset(count, 0, RADIX_BINS * sizeof *count);
    for (size_t i = 0; i < s; i++)
        count[(k0[i] >> shift) & (RADIX_BINS - 1)]++;
    if (count[(k0[0] >> shift) & (RADIX_BINS - 1)] == s)
        return 0;
    for (size_t d = 0, pos = 0; d < RADIX_BINS; d++) {
        size_t c = count[d];
        count[d] = pos;
        pos += c;
    }
    for (size_t i = 0; i < s; i++) {
        size_t at = count[(k0[i] >> shift) & (RADIX_BINS - 1)]++;
        k1[at] = k0[i];
        i1[at] = i0[i];
    }
    return 1;
}

/* order[0..s-1]: the positions of x in ascending order of value, by an LSD
 * radix sort on the bytes of order_key (8 passes at most, O(s); qsort
 * takes seconds on the millions of draws of a long run).
 * 1 <= s <= UINT32_MAX. */
static int argsort(const double *x, size_t s, uint32_t *order)
{
    uint64_t *key = malloc(2 * s * sizeof *key);
    uint32_t *tmp = malloc(s * sizeof *tmp);
    size_t *count = malloc(RADIX_BINS * sizeof *count);
    int rc = key && tmp && count ? SIVE_OK : SIVE_E_NOMEM;
    if (rc == SIVE_OK) {
        uint64_t *k[2] = {key, key + s};
        uint32_t *ix[2] = {order, tmp};
        int cur = 0;
        for (size_t i = 0; i < s; i++) {
            k[0][i] = order_key(x[i]);
            order[i] = (uint32_t)i;
        }
        for (int shift = 0; shift < 64; shift += RADIX_BITS)
            if (radix_pass(k[cur], ix[cur], k[!cur], ix[!cur], s, shift, count))
                cur = !cur;
        if (cur)
            memcpy(order, tmp, s * sizeof *order);
    }
    free(key);
    free(tmp);
    free(count);
    return rc;
}

/* Normal scores of x[0..s-1] (see sivei_rank_normalise) into z, and the
 * median of x into *median when it is not NULL. */
static int rank_scores(const double *x, size_t s, double *z, double *median)
{
    if (s > UINT32_MAX)
        return SIVE_E_NOMEM;
    uint32_t *order = malloc(s * sizeof *order);
    if (!order)
        return SIVE_E_NOMEM;
    int rc = argsort(x, s, order);
    for (size_t lo = 0, hi; rc == SIVE_OK && lo < s; lo = hi) {
        /* ties x[order[lo .. hi-1]] share the average rank (lo+hi+1)/2 */
        for (hi = lo + 1; hi < s && x[order[hi]] == x[order[lo]]; hi++)
            ;
        double rank = 0.5 * ((double)lo + (double)hi + 1.0);
        double score = normal_quantile((rank - 0.375) / ((double)s + 0.25));
        for (size_t j = lo; j < hi; j++)
            z[order[j]] = score;
    }
    if (rc == SIVE_OK && median)
        *median = s % 2 ? x[order[s / 2]] : 0.5 * (x[order[s / 2 - 1]] + x[order[s / 2]]);
    free(order);
    return rc;
}

int sivei_rank_normalise(const double *x, size_t s, double *z)
{
    if (!x || !z || s == 0)
        return SIVE_E_INVALID_ARG;
    return rank_scores(x, s, z, NULL);
}

/* Rank-normalise u[0..k*h-1] (k sequences of h) into z, then Rhat;
 * the median of u into *median when not NULL. */
static int rank_rhat(const double *u, size_t k, size_t h, double *z, const double **seq,
                     double *means, double *median, double *out)
{
    int rc = rank_scores(u, k * h, z, median);
    if (rc)
        return rc;
    for (size_t j = 0; j < k; j++)
        seq[j] = z + j * h;
    *out = rhat_seqs(seq, k, h, means);
    return SIVE_OK;
}

/* Vehtari, Gelman, Simpson, Carpenter & Buerkner (2021), Sec. 4.1: every
 * chain is split into a first and a last half of h = floor(n/2) draws,
 * the 2m halves' draws are pooled and replaced by their normal scores
 * Phi^-1((r - 3/8)/(S + 1/4)) (r the average rank among all S = 2mh),
 * and Rhat is computed on those ("bulk"); the same on the folded draws
 * |u - median(u)| ("tail" or "folded", which sees a chain whose spread
 * differs); the result is the larger. */
double sivei_split_rhat(const double *const *x, size_t m, size_t n)
{
    if (!rhat_input_ok(x, m, n))
        return NAN;
    size_t h = n / 2, k = 2 * m, s = k * h;
    double *u = malloc(s * sizeof *u), *z = malloc(s * sizeof *z);
    double *means = malloc(k * sizeof *means);
    const double **seq = malloc(k * sizeof *seq);
    double bulk = NAN, folded = NAN, med = NAN;
    if (u && z && means && seq) {
        for (size_t c = 0; c < m; c++) {
            memcpy(u + 2 * c * h, x[c], h * sizeof *u);
            memcpy(u + (2 * c + 1) * h, x[c] + (n - h), h * sizeof *u);
        }
        if (rank_rhat(u, k, h, z, seq, means, &med, &bulk) == SIVE_OK) {
            for (size_t i = 0; i < s; i++)
                u[i] = fabs(u[i] - med);
            rank_rhat(u, k, h, z, seq, means, NULL, &folded);
        }
    }
    free(u);
    free(z);
    free(means);
    free(seq);
    return isnan(bulk) || isnan(folded) ? NAN : fmax(bulk, folded);
}

/* ------------------------------------------------------------------ */
/* Public wrappers: NaN plus a thread-local message on bad input.     */
/* ------------------------------------------------------------------ */

static int check_series(const char *fn, const double *x, size_t n)
{
    if (!x)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: x is NULL", fn);
    if (n < 4)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "%s: n = %zu, need at least 4 values", fn, n);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "%s: x[%zu] is not finite", fn, i);
    return SIVE_OK;
}

double sive_stats_ess(const double *x, size_t n)
{
    if (check_series("sive_stats_ess", x, n))
        return NAN;
    double ess;
    if (ess_geyer_status(x, n, &ess))
        sivei_fail(NULL, SIVE_E_NOMEM,
                  "sive_stats_ess: no memory for %zu values", n);
    return ess;
}

double sive_stats_mcse(const double *x, size_t n)
{
    if (check_series("sive_stats_mcse", x, n))
        return NAN;
    double v = sivei_batch_means_var(x, n);
    if (isnan(v))
        sivei_fail(NULL, SIVE_E_NOMEM,
                  "sive_stats_mcse: no memory for %zu values", n);
    return sqrt(v);
}
