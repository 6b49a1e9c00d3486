/* Series statistics behind the diagnostics (internal). */
#ifndef SIVE_STATS_H
#define SIVE_STATS_H

#include "internal.h"
#include <stddef.h>

/* Two-pass mean and sample variance (ddof 1) of x[0..n-1]. */
SIVE_HIDDEN void sivei_mean_var(const double *x, size_t n, double *mean, double *var);
/* Autocorrelation rho[0..maxlag] of x (FFT, O(n log n)); returns status. */
SIVE_HIDDEN int sivei_autocorr(const double *x, size_t n, double *rho, size_t maxlag);
/* Geyer initial monotone sequence ESS (see sive_stats_ess). */
SIVE_HIDDEN double sivei_ess_geyer(const double *x, size_t n);
/* Batch-means variance of the mean of x (square of the MCSE). */
SIVE_HIDDEN double sivei_batch_means_var(const double *x, size_t n);
/* Variance of the mean of x[0..n-1] for a series whose autocorrelation
 * may be slow and buried in white noise (the SIVE influence series):
 * Sokal's adaptive window on the moving averages of width floor(sqrt n),
 * corrected for the estimated mean (definition in stats.c and
 * docs/theory.md); at least the iid value s^2/n.  *out is NaN for
 * n < 4 or non-finite input, 0 for a constant series.  Returns SIVE_OK
 * or SIVE_E_NOMEM.  The k = 1 case of sivei_var_of_mean_pooled. */
SIVE_HIDDEN int sivei_var_of_mean(const double *x, size_t n, double *out);
/* Series c (0 <= c < k) of n values, in memory the source owns until the
 * next call; NULL when it cannot produce it (out of memory). */
typedef const double *(*sivei_series_fn)(void *ctx, size_t c);
/* The same for k series of n values that share one stationary law (the
 * chains of a run): the shape of the autocorrelation, tau, is estimated
 * from all of them (autocovariances about their grand mean), and series c
 * gets out[c] = max(s2_c tau, s2_c) / n, s2_c its own variance (ddof 1).
 * get is called twice per series, in order.  *tau_out (may be NULL)
 * receives tau.  Outputs are NaN for n < 4 or when a series is not
 * finite; SIVE_E_NOMEM when memory or a series is missing. */
SIVE_HIDDEN int sivei_var_of_mean_pooled(sivei_series_fn get, void *ctx, size_t k, size_t n,
                                         double *out, double *tau_out);
/* The same, and *dof_out (may be NULL) the degrees of freedom of the
 * pooled estimate: k m/(2W + 1) for the window W over the k series' m
 * moving averages (docs/theory.md, "Annealed burn-in"). */
SIVE_HIDDEN int sivei_var_of_mean_pooled_dof(sivei_series_fn get, void *ctx, size_t k,
                                             size_t n, double *out, double *tau_out,
                                             double *dof_out);
/* The normal deviate with the tail probability of Student's t with nu
 * degrees of freedom at t (the same sign; t itself for nu = infinity or
 * NaN). */
SIVE_HIDDEN double sivei_t_as_z(double t, double nu);
/* The normal deviate z >= 0 whose upper tail probability is q (0 for
 * q >= 1/2; 37 below 1e-300). */
SIVE_HIDDEN double sivei_normal_upper(double q);
/* Signed z of the halves test of k series of n values (the tails of a
 * run's chains): z[c] = (mean of the first floor(n/2) values - mean of
 * the last floor(n/2)) / sqrt(V1_c + V2_c), each V the variance of a
 * half's mean by sivei_var_of_mean_pooled, the first halves of all k
 * series pooled together and the last halves together (each group about
 * its own grand mean, so a drift that all series share does not widen
 * the error it is compared with).  Under stationarity z is ~ N(0, 1).
 * z[c] is 0 for equal constant halves, +-inf for unequal ones, NaN for
 * n < 8 or non-finite input.  Returns SIVE_OK or SIVE_E_NOMEM. */
SIVE_HIDDEN int sivei_halves_z(const double *const *x, size_t k, size_t n, double *z);
/* The influence series of the unclipped SIVE over t^2 (docs/theory.md,
 * "MCSE"): y[i] = (lbar[i] - mean lbar)^2 n/(n-1) - s2[i]/N, whose mean
 * is the estimate.  y may be lbar. */
SIVE_HIDDEN void sivei_sive_influence(const double *lbar, const double *s2, size_t n, double N,
                                      double *y);
/* Multi-chain ESS (Vehtari et al. 2021, without rank normalisation) of m
 * chains, chain c is x[c][0..n-1] (equal lengths).  NaN on failure. */
SIVE_HIDDEN double sivei_ess_multi(const double *const *x, size_t m, size_t n);
/* Per-chain Geyer ESS (ess_each, may be NULL) and the multi-chain ESS
 * (ess_multi, may be NULL) of m equal-length chains in one go: each chain's
 * autocorrelation is computed once (short lags directly, the rest by FFT,
 * two chains per transform).  SIVE_E_INVALID_ARG on bad or non-finite
 * input, SIVE_E_NOMEM; outputs are NaN then. */
SIVE_HIDDEN int sivei_ess_chains(const double *const *x, size_t m, size_t n,
                                double *ess_each, double *ess_multi);
/* Rank-normalised split-Rhat (Vehtari et al. 2021) of m chains of length
 * n: the larger of the bulk and the folded Rhat of the 2m half chains.
 * NaN on bad or non-finite input or no memory. */
SIVE_HIDDEN double sivei_split_rhat(const double *const *x, size_t m, size_t n);
/* Classic split-Rhat (BDA3) on the raw values, the building block. */
SIVE_HIDDEN double sivei_split_rhat_basic(const double *const *x, size_t m, size_t n);
/* Normal scores z[i] = Phi^-1((r_i - 3/8)/(s + 1/4)) of x[0..s-1], r_i the
 * average rank of x[i] (ties share it).  SIVE_E_INVALID_ARG, SIVE_E_NOMEM. */
SIVE_HIDDEN int sivei_rank_normalise(const double *x, size_t s, double *z);

#endif
