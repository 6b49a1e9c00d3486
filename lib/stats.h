/* Series statistics behind the diagnostics (internal). */
#ifndef SIVE_STATS_H
#define SIVE_STATS_H

#include "internal.h"
#include <stddef.h>

/* Two-pass mean and sample variance (ddof 1) of x[0..n-1]. */
SIVE_HIDDEN void sive_mean_var(const double *x, size_t n, double *mean, double *var);
/* Autocorrelation rho[0..maxlag] of x (FFT, O(n log n)); returns status. */
SIVE_HIDDEN int sive_autocorr(const double *x, size_t n, double *rho, size_t maxlag);
/* Geyer initial monotone sequence ESS (see sive_stats_ess). */
SIVE_HIDDEN double sive_ess_geyer(const double *x, size_t n);
/* Batch-means variance of the mean of x (square of the MCSE). */
SIVE_HIDDEN double sive_batch_means_var(const double *x, size_t n);
/* Multi-chain ESS (Vehtari et al. 2021, without rank normalisation) of m
 * chains, chain c is x[c][0..n-1] (equal lengths).  NaN on failure. */
SIVE_HIDDEN double sive_ess_multi(const double *const *x, size_t m, size_t n);
/* Per-chain Geyer ESS (ess_each, may be NULL) and the multi-chain ESS
 * (ess_multi, may be NULL) of m equal-length chains in one go: each chain's
 * autocorrelation is computed once (short lags directly, the rest by FFT,
 * two chains per transform).  SIVE_E_INVALID_ARG on bad or non-finite
 * input, SIVE_E_NOMEM; outputs are NaN then. */
SIVE_HIDDEN int sive_ess_chains(const double *const *x, size_t m, size_t n,
                                double *ess_each, double *ess_multi);
/* Split-Rhat of m chains of length n (each split in halves). */
SIVE_HIDDEN double sive_split_rhat(const double *const *x, size_t m, size_t n);

#endif
