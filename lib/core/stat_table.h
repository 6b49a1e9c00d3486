/* The statistics, once: id, machine name, how the summary pools the chains,
 * whether the tools show the summary alone, and a one-line doc.  Read by
 * sive_stat_info_get()/sive_stat_name() (result.c), the pooling of the
 * summaries (diagnostics.c), the CLI and the bindings (through the public
 * table).  A new statistic: append it to enum sive_stat, then one row here;
 * the count and the order are checked at compile time (result.c).
 * Columns: X(id, name, pool, scalar, doc), pool without the SIVE_POOL_
 * prefix; scalar 1 = written as one number, not {mean, std} over chains. */
#ifndef SIVE_STAT_TABLE_H
#define SIVE_STAT_TABLE_H

#define SIVEI_STATS(X)                                                          \
    X(SIVE_STAT_SIVE, "sive", MEAN, 0,                                          \
      "SIVE: max(0, t^2 (Var_T Lbar - mean_T s2 / N)), the LLC estimate")      \
    X(SIVE_STAT_SIVE_UNCLIPPED, "sive_unclipped", MEAN, 0,                      \
      "SIVE before clipping at 0: t^2 (Var_T Lbar - mean_T s2 / N)")           \
    X(SIVE_STAT_RAW_VARIANCE, "raw_variance", MEAN, 0,                          \
      "t^2 Var_T Lbar, without the noise correction")                          \
    X(SIVE_STAT_ONLINE_MEAN, "online_mean", MEAN, 0,                            \
      "t (mean_T Lbar - min_T Lbar), the naive online estimator")              \
    X(SIVE_STAT_ANCHORED_MEAN, "anchored_mean", MEAN, 0,                        \
      "t (mean_T Lbar - L_anchor); NaN without an anchor loss")                \
    X(SIVE_STAT_TAIL_MEAN_LOSS, "tail_mean_loss", MEAN, 0,                      \
      "mean of Lbar over the tail window")                                     \
    X(SIVE_STAT_TAIL_MIN_LOSS, "tail_min_loss", MEAN, 0,                        \
      "minimum of Lbar over the tail window")                                  \
    X(SIVE_STAT_NOISE_CORRECTION, "noise_correction", MEAN, 1,                  \
      "evaluation-noise correction C = t^2 mean_T s2 / N")                     \
    X(SIVE_STAT_NOISE_CORRECTION_STD, "noise_correction_std", QUADRATURE, 1,    \
      "standard error of C (batch means on s2)")                               \
    X(SIVE_STAT_NOISE_CORRECTION_STD_GAUSS, "noise_correction_std_gauss",       \
      QUADRATURE, 1, "standard error of C for Gaussian noise, C sqrt(2/(|T|(N-1)))") \
    X(SIVE_STAT_MCSE, "mcse", QUADRATURE, 1,                                    \
      "Monte Carlo standard error of SIVE (autocorrelation pooled over chains)") \
    X(SIVE_STAT_ESS, "ess", ALL_CHAINS, 1,                                      \
      "effective sample size of the Lbar tail (summary: multi-chain ESS)")     \
    X(SIVE_STAT_RHAT, "rhat", SUMMARY_ONLY, 1,                                  \
      "split-Rhat of Lbar over the chains")                                    \
    X(SIVE_STAT_H, "h", MEAN, 0, "localisation radius h used")                 \
    X(SIVE_STAT_TETHER_STEP, "tether_step", MEAN, 0, "tether step eta / h^2") \
    X(SIVE_STAT_GRAD_NORM2_START, "grad_norm2_start", MEAN, 0,                  \
      "||g_0||^2, the gradient batch's squared norm at theta*")                \
    X(SIVE_STAT_SLOPE_PROXY, "slope_proxy", MEAN, 0,                            \
      "t^2 h^2 ||g_0||^2: how far the centre is from a minimum")               \
    X(SIVE_STAT_RMS_DISP_REL_H, "rms_disp_rel_h", MEAN, 0,                      \
      "mean_T of the RMS displacement ||theta - theta*|| / sqrt(d), over h")    \
    X(SIVE_STAT_TAIL_LENGTH, "tail_length", MEAN, 0,                            \
      "|T|, the evaluated steps in the tail window")                           \
    X(SIVE_STAT_SIVE_ESS, "sive_ess", MEAN, 1,                                  \
      "ESS of SIVE's per-step influence series (what its MCSE uses)")          \
    X(SIVE_STAT_HALVES_Z, "halves_z", MEAN, 0,                                  \
      "signed z of the halves test behind the nonstationary flag")             \
    X(SIVE_STAT_DLAMBDA_DLOG_H, "dlambda_dlog_h", MEAN, 0,                      \
      "d lambda / d ln h from the chain itself (radius_bound flag)")           \
    X(SIVE_STAT_DLAMBDA_DLOG_H_SE, "dlambda_dlog_h_se", QUADRATURE, 0,          \
      "Monte Carlo standard error of dlambda_dlog_h")                          \
    X(SIVE_STAT_STEP_CURVATURE, "step_curvature", MEAN, 0,                      \
      "a t mean_T ||g||^2: step times curvature (step_bias flag)")             \
    X(SIVE_STAT_SIVE_STEP0, "sive_step0", MEAN, 0,                              \
      "SIVE extrapolated to step 0 (step_extrapolate; NaN otherwise)")         \
    X(SIVE_STAT_MCSE_STEP0, "mcse_step0", QUADRATURE, 0,                        \
      "Monte Carlo standard error of sive_step0")                              \
    X(SIVE_STAT_SIVE_FULL_BATCH, "sive_full_batch", MEAN, 0,                    \
      "SIVE extrapolated to the full gradient batch (grad_extrapolate; NaN otherwise)") \
    X(SIVE_STAT_MCSE_FULL_BATCH, "mcse_full_batch", QUADRATURE, 0,              \
      "Monte Carlo standard error of sive_full_batch")                         \
    X(SIVE_STAT_GRAD_NOISE_CLIPPED, "grad_noise_clipped", MEAN, 0,              \
      "share of the gradient noise a^2 C/(2 eta) the compensation clipped (NaN without it)") \
    X(SIVE_STAT_START_Z, "start_z", SUMMARY_ONLY, 1,                            \
      "z of hot- minus cold-started chains' lambda-hat and mean loss, Welch tests combined "  \
      "(anneal > 1; start_dependent flag)")                                   \
    X(SIVE_STAT_START_Z_LAMBDA, "start_z_lambda", SUMMARY_ONLY, 1,              \
      "the start test's z of hot- minus cold-started chains' lambda-hat (anneal > 1)") \
    X(SIVE_STAT_START_Z_MEAN, "start_z_mean", SUMMARY_ONLY, 1,                  \
      "the start test's z of hot- minus cold-started chains' t mean tail loss (anneal > 1)") \
    X(SIVE_STAT_AUTO_STEP_GRADS, "auto_step_grads", MEAN, 0,                    \
      "gradient calls per tail step of the locally adaptive step (auto_step; NaN after a load)") \
    X(SIVE_STAT_AUTO_STEP_RESCALED, "auto_step_rescaled", MEAN, 0,              \
      "share of the tail's auto_step moves whose step was halved or doubled (NaN after a load)")

/* The number of statistics, counted from the rows. */
#define SIVEI_STAT_COUNT_ROW(id, name, pool, scalar, doc) +1
#define SIVEI_N_STATS (0 SIVEI_STATS(SIVEI_STAT_COUNT_ROW))

#endif
