/*
 * libsive - local learning coefficient probes with the Shift-Invariant
 * Variance Estimator (SIVE).
 *
 * The core API: a probe handle (options + callbacks), a run that drives one
 * or more tethered Langevin chains around a centre theta*, and a result handle
 * holding the estimators, diagnostics and per-step traces.
 *
 * Conventions (stable ABI):
 *  - Every function that can fail returns an int status: SIVE_OK (0) or a
 *    negative SIVE_E_* code.  Values are pinned forever.  sive_strerror()
 *    gives static text; sive_probe_errmsg() the detail of the last failure on
 *    a handle; sive_last_errmsg() the detail of the last failure in the
 *    calling thread (for functions without a handle).
 *  - Handles are opaque.  Constructors take the out-parameter first;
 *    destructors accept NULL.  The library never prints, never aborts and
 *    keeps no global mutable state (the per-thread last error excepted).
 *  - Thread safety: a handle may be used by one thread at a time; distinct
 *    handles may be used concurrently.  Result handles are immutable and may
 *    be read from many threads at once.
 *  - No function-like macros, no variadic functions, fixed-width integers.
 */
#ifndef SIVE_SIVE_H
#define SIVE_SIVE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(SIVE_BUILDING_LIBRARY)
#define SIVE_API __declspec(dllexport)
#elif defined(__GNUC__) && defined(SIVE_BUILDING_LIBRARY)
#define SIVE_API __attribute__((visibility("default")))
#else
#define SIVE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Version                                                            */
/* ------------------------------------------------------------------ */

#define SIVE_VERSION_MAJOR 0
#define SIVE_VERSION_MINOR 1
#define SIVE_VERSION_PATCH 0
/* MAJOR*10000 + MINOR*100 + PATCH */
#define SIVE_VERSION_NUMBER 100
#define SIVE_VERSION_STRING "0.1.0"

/** Version of the library actually linked: MAJOR*10000 + MINOR*100 + PATCH. */
SIVE_API uint32_t sive_version_number(void);
/** Version of the library actually linked, e.g. "0.1.0" (static storage). */
SIVE_API const char *sive_version_string(void);

/* ------------------------------------------------------------------ */
/* Status codes                                                       */
/* ------------------------------------------------------------------ */

enum {
    SIVE_OK = 0,
    SIVE_E_INVALID_ARG = -1, /**< NULL pointer, out-of-range value, bad size  */
    SIVE_E_NOMEM = -2,       /**< allocation failed                           */
    SIVE_E_STATE = -3,       /**< call not valid now (e.g. no callbacks set)  */
    SIVE_E_CALLBACK = -4,    /**< a user callback returned non-zero           */
    SIVE_E_DIVERGED = -5,    /**< every chain produced a non-finite value     */
    SIVE_E_CANCELLED = -6,   /**< the progress callback asked to stop         */
    SIVE_E_IO = -7,          /**< file could not be opened, read or written   */
    SIVE_E_FORMAT = -8,      /**< file is malformed, truncated or corrupted   */
    SIVE_E_THREAD = -9,      /**< a worker thread could not be started        */
    SIVE_E_UNSUPPORTED = -10 /**< feature not compiled in (e.g. gzip)         */
};

/** Static, human-readable text for a status code (never NULL). */
SIVE_API const char *sive_strerror(int status);

/**
 * Detail of the last failure of a function called from this thread
 * (thread-local storage).  Never NULL; "" when nothing failed yet.  Valid
 * until the next libsive call in this thread.
 */
SIVE_API const char *sive_last_errmsg(void);

/* ------------------------------------------------------------------ */
/* Callbacks                                                          */
/* ------------------------------------------------------------------ */

/**
 * The examples a callback must use.  Indices are drawn by the library in
 * [0, data size).  For an evaluation call, index holds n_groups*group_size
 * entries, group-major: group i is index[i*group_size ... (i+1)*group_size-1].
 * For a gradient call n_groups is 1.  When the data-set size is 0 (analytic
 * models) index is NULL and seed is the only input: a fresh 64-bit value from
 * an independent stream for the callback's own randomness (for example the
 * evaluation noise of a toy model).  seed is set in every call.
 */
typedef struct sive_batch {
    const uint64_t *index; /**< NULL when the data-set size is 0            */
    size_t n_groups;       /**< N for evaluation calls, 1 for gradient calls */
    size_t group_size;     /**< B_eval or B_grad                             */
    uint64_t seed;         /**< fresh per call, reproducible from the seed   */
    int32_t chain;         /**< chain number, 0 .. chains-1                  */
    int32_t reserved;      /**< 0                                            */
    int64_t step;          /**< Langevin step m, 0 .. M-1                    */
} sive_batch;

/**
 * Gradient callback (float32 parameters).  Write the gradient of the mean
 * loss over the batch at theta into grad[0..dim-1] (entries left unwritten
 * keep the previous step's values, zero at a chain's start).  Optionally store that
 * mean loss in *loss (it is pre-set to NaN and only traced; leaving it NaN is
 * fine).  Return 0, or non-zero to abort the run (SIVE_E_CALLBACK; the value
 * is kept, see sive_probe_callback_code()).  theta is read-only and valid
 * only during the call.  With more than one thread the callback is called
 * concurrently for different chains and must be thread-safe.
 */
typedef int (*sive_grad_f32_fn)(const float *theta, size_t dim,
                                const sive_batch *batch, float *grad,
                                double *loss, void *user);
/**
 * Evaluation callback (float32 parameters).  Write the mean loss of each of
 * the batch->n_groups groups at theta into group_loss[0..n_groups-1].  One
 * call covers all groups so that a model can evaluate them in one pass.
 * Same return and threading rules as the gradient callback.
 */
typedef int (*sive_eval_f32_fn)(const float *theta, size_t dim,
                                const sive_batch *batch, double *group_loss,
                                void *user);
/** Gradient callback, float64 parameters (see sive_grad_f32_fn). */
typedef int (*sive_grad_f64_fn)(const double *theta, size_t dim,
                                const sive_batch *batch, double *grad,
                                double *loss, void *user);
/** Evaluation callback, float64 parameters (see sive_eval_f32_fn). */
typedef int (*sive_eval_f64_fn)(const double *theta, size_t dim,
                                const sive_batch *batch, double *group_loss,
                                void *user);
/**
 * Progress callback: called from the thread running the chain, at step 0,
 * about every 1/1000 of the run, and after the last step (step == total).
 * Return non-zero to cancel the run (SIVE_E_CANCELLED).  Must be thread-safe
 * when more than one thread is used.
 */
typedef int (*sive_progress_fn)(int32_t chain, int64_t step, int64_t total,
                                void *user);

/* ------------------------------------------------------------------ */
/* Probe handle and options                                           */
/* ------------------------------------------------------------------ */

typedef struct sive_probe sive_probe;

/**
 * Options.  Each has a type: "double" options are set with
 * sive_probe_set_double(), "int" options with sive_probe_set_int(); using the
 * wrong setter is SIVE_E_INVALID_ARG.  Defaults are the paper's deep-network
 * operating point.  Bounds are checked by the setter; constraints between
 * options (for example B_eval <= data size without replacement) are checked
 * by the run.
 */
typedef enum sive_option {
    /** double: inverse temperature t = n*beta. (0, 1e12], default 1e4.    */
    SIVE_OPT_T = 1,
    /** double: base step a = eta*t, so eta = a/t. (0, 1], default 0.05.   */
    SIVE_OPT_BASE_LR = 2,
    /** double: absolute localisation radius h. (0, 1e12]. Setting it
     * selects absolute mode.                                             */
    SIVE_OPT_H = 3,
    /** double: adaptive radius h = c_h*||theta*||_2/sqrt(d). (0, 1e12],
     * default 1.0 (adaptive mode is the default). Setting it selects
     * adaptive mode.                                                     */
    SIVE_OPT_C_H = 4,
    /** int: Langevin steps M. [2, 2^40], default 100000.                  */
    SIVE_OPT_STEPS = 5,
    /** double: burn-in fraction alpha; the tail is m >= floor(alpha*M).
     * [0, 1), default 0.3.                                               */
    SIVE_OPT_BURN_IN = 6,
    /** int: evaluation groups N per evaluated step. [2, 2^20], default 512 */
    SIVE_OPT_GROUPS = 7,
    /** int: evaluation batch size B_eval. [1, 2^24], default 64.          */
    SIVE_OPT_EVAL_BATCH = 8,
    /** int: gradient batch size B_grad. [1, 2^24], default 1024.          */
    SIVE_OPT_GRAD_BATCH = 9,
    /** int: data-set size n; indices are drawn in [0, n). 0 = no data set
     * (analytic model: index is NULL). [0, 2^62], default 0.             */
    SIVE_OPT_DATA_SIZE = 10,
    /** int: independent chains. [1, 4096], default 5.                     */
    SIVE_OPT_CHAINS = 11,
    /** int: worker threads running chains in parallel. [1, 1024],
     * default 1.  Results do not depend on it.                           */
    SIVE_OPT_THREADS = 12,
    /** int: seed (any 64-bit value, given as int64_t). default 0.         */
    SIVE_OPT_SEED = 13,
    /** int: 1 = indices drawn uniformly with replacement (default), 0 =
     * without replacement within each batch (needs B <= data size).      */
    SIVE_OPT_REPLACEMENT = 14,
    /** int: evaluate every k-th step (m % k == 0). [1, 2^20], default 1.  */
    SIVE_OPT_EVAL_STRIDE = 15,
    /** double: mean anchor L_anchor for the anchored mean estimator; any
     * finite value, or NaN to clear (default: none).                     */
    SIVE_OPT_ANCHOR = 16
} sive_option;

/**
 * Create a probe for a model with dim parameters.  *out is set to NULL on
 * failure.  Errors: SIVE_E_INVALID_ARG (out NULL, dim 0 or > 2^40),
 * SIVE_E_NOMEM.
 */
SIVE_API int sive_probe_new(sive_probe **out, size_t dim);
/** Free a probe (NULL is a no-op). */
SIVE_API void sive_probe_free(sive_probe *p);
/** Number of parameters the probe was created for (0 if p is NULL). */
SIVE_API size_t sive_probe_dim(const sive_probe *p);

/** Set a double-typed option.  SIVE_E_INVALID_ARG on NULL, wrong type,
 *  unknown option or out-of-range value (the probe is then unchanged). */
SIVE_API int sive_probe_set_double(sive_probe *p, sive_option opt,
                                   double value);
/** Set an int-typed option (see sive_probe_set_double). */
SIVE_API int sive_probe_set_int(sive_probe *p, sive_option opt,
                                int64_t value);
/** Read a double-typed option into *value. */
SIVE_API int sive_probe_get_double(const sive_probe *p, sive_option opt,
                                   double *value);
/** Read an int-typed option into *value. */
SIVE_API int sive_probe_get_int(const sive_probe *p, sive_option opt,
                                int64_t *value);

/**
 * Register float32 callbacks (user is passed back verbatim and is not
 * owned).  Replaces any earlier registration, float64 included.  Both NULL
 * clears the registration (a later run fails with SIVE_E_STATE); exactly one
 * NULL is SIVE_E_INVALID_ARG.
 */
SIVE_API int sive_probe_set_callbacks_f32(sive_probe *p, sive_grad_f32_fn grad,
                                          sive_eval_f32_fn eval, void *user);
/** Register (or, with both NULL, clear) float64 callbacks (see
 *  sive_probe_set_callbacks_f32). */
SIVE_API int sive_probe_set_callbacks_f64(sive_probe *p, sive_grad_f64_fn grad,
                                          sive_eval_f64_fn eval, void *user);
/** Register (or clear, with fn NULL) the progress callback. */
SIVE_API int sive_probe_set_progress(sive_probe *p, sive_progress_fn fn,
                                     void *user);

/** Detail of the last failure on this handle ("" if none; never NULL).
 *  Owned by the handle, valid until its next call. */
SIVE_API const char *sive_probe_errmsg(const sive_probe *p);
/** The non-zero value returned by the callback that aborted the last run
 *  (0 if none). */
SIVE_API int sive_probe_callback_code(const sive_probe *p);

/* ------------------------------------------------------------------ */
/* Running                                                            */
/* ------------------------------------------------------------------ */

typedef struct sive_result sive_result;

/**
 * Run the probe from theta_star (dim values, only read, never modified) with
 * the float32 callbacks.  The same probe can be run again (options persist;
 * each run gives an independent result handle).
 *
 * On return *out is NULL when the run could not start (SIVE_E_INVALID_ARG:
 * NULL pointer, non-finite theta*, zero adaptive radius, tail window with
 * fewer than 4 evaluated steps, B > data size without replacement;
 * SIVE_E_STATE: float32 callbacks not registered; SIVE_E_NOMEM;
 * SIVE_E_THREAD).  Otherwise *out is a result the caller frees with
 * sive_result_free(), and the status is:
 *   SIVE_OK          at least one chain finished (others may have diverged:
 *                    see sive_result_chain_status() and the health flags);
 *   SIVE_E_DIVERGED  every chain diverged;
 *   SIVE_E_CALLBACK  a callback returned non-zero (all chains stopped);
 *   SIVE_E_CANCELLED the progress callback asked to stop.
 * Summaries over chains use the chains that finished; they are NaN when none
 * did.  The probe's error message explains every non-OK status.
 */
SIVE_API int sive_probe_run_f32(sive_probe *p, const float *theta_star,
                                sive_result **out);
/** Run with the float64 callbacks (see sive_probe_run_f32). */
SIVE_API int sive_probe_run_f64(sive_probe *p, const double *theta_star,
                                sive_result **out);

/* ------------------------------------------------------------------ */
/* Results                                                            */
/* ------------------------------------------------------------------ */

/** Free a result (NULL is a no-op). */
SIVE_API void sive_result_free(sive_result *r);

/** Pass as chain to a getter to ask for the summary over healthy chains. */
#define SIVE_SUMMARY (-1)

/**
 * Per-chain statistics.  All are computed on the tail window T: the
 * evaluated steps m >= floor(alpha*M).  Lbar_m is the mean of the N group
 * losses at step m, s2_m their sample variance (ddof 1).  See docs/theory.md.
 */
typedef enum sive_stat {
    SIVE_STAT_SIVE = 0,           /**< max(0, t^2 (Var_T Lbar - mean_T s2 / N)) */
    SIVE_STAT_SIVE_UNCLIPPED = 1, /**< t^2 (Var_T Lbar - mean_T s2 / N)          */
    SIVE_STAT_RAW_VARIANCE = 2,   /**< t^2 Var_T Lbar                            */
    SIVE_STAT_ONLINE_MEAN = 3,    /**< t (mean_T Lbar - min_T Lbar)  ("naive")   */
    SIVE_STAT_ANCHORED_MEAN = 4,  /**< t (mean_T Lbar - L_anchor), NaN w/o anchor*/
    SIVE_STAT_TAIL_MEAN_LOSS = 5, /**< mean_T Lbar                               */
    SIVE_STAT_TAIL_MIN_LOSS = 6,  /**< min_T Lbar                                */
    SIVE_STAT_NOISE_CORRECTION = 7,     /**< C = t^2 mean_T s2 / N               */
    SIVE_STAT_NOISE_CORRECTION_STD = 8, /**< std of C (batch means on s2)        */
    SIVE_STAT_NOISE_CORRECTION_STD_GAUSS = 9, /**< C sqrt(2/(|T|(N-1)))         */
    SIVE_STAT_MCSE = 10,          /**< Monte Carlo std error of SIVE unclipped   */
    SIVE_STAT_ESS = 11,           /**< tail ESS of Lbar (summary: multi-chain)   */
    SIVE_STAT_RHAT = 12,          /**< split-Rhat of Lbar (summary only)         */
    SIVE_STAT_H = 13,             /**< localisation radius h used                */
    SIVE_STAT_TETHER_STEP = 14,   /**< eta / h^2                                 */
    SIVE_STAT_GRAD_NORM2_START = 15, /**< ||g_0||^2, gradient batch at theta*   */
    SIVE_STAT_SLOPE_PROXY = 16,   /**< t^2 h^2 ||g_0||^2                         */
    SIVE_STAT_RMS_DISP_REL_H = 17,/* mean_T (||theta-theta*||/sqrt d) / h      */
    SIVE_STAT_TAIL_LENGTH = 18,   /**< |T|, evaluated steps in the tail          */
    SIVE_STAT_COUNT_ = 19
} sive_stat;

/**
 * A statistic for one chain (0 .. chains-1) or, with SIVE_SUMMARY, the mean
 * over the chains that finished (for ESS: the multi-chain ESS; for RHAT: the
 * split-Rhat, which exists only as a summary and needs >= 1 finished chain;
 * for MCSE: the standard error of the mean over chains,
 * sqrt(sum MCSE_c^2)/K).  NaN when r is NULL, stat or chain is out of range,
 * the chain did not finish, or the value is undefined (anchored mean without
 * anchor).
 */
SIVE_API double sive_result_stat(const sive_result *r, sive_stat stat,
                                 int32_t chain);
/** Sample standard deviation (ddof 1) of a per-chain statistic over the
 *  chains that finished; NaN with fewer than 2. */
SIVE_API double sive_result_stat_std(const sive_result *r, sive_stat stat);

/** Convenience: the SIVE estimate lambda-hat averaged over chains. */
SIVE_API double sive_result_lambda(const sive_result *r);
/** Convenience: standard deviation of lambda-hat over chains. */
SIVE_API double sive_result_lambda_std(const sive_result *r);
/** Convenience: MCSE of the averaged (unclipped) SIVE estimate. */
SIVE_API double sive_result_mcse(const sive_result *r);
/** Convenience: multi-chain tail ESS of Lbar. */
SIVE_API double sive_result_ess(const sive_result *r);
/** Convenience: split-Rhat of Lbar over the finished chains. */
SIVE_API double sive_result_rhat(const sive_result *r);
/** Convenience: noise correction C averaged over chains. */
SIVE_API double sive_result_noise_correction(const sive_result *r);
/** Convenience: std of the averaged noise correction,
 *  sqrt(sum std_c^2)/K over finished chains. */
SIVE_API double sive_result_noise_correction_std(const sive_result *r);

/** Number of chains run (0 if r is NULL). */
SIVE_API int32_t sive_result_chains(const sive_result *r);
/** Number of chains that finished without divergence or abort. */
SIVE_API int32_t sive_result_chains_ok(const sive_result *r);
/** Steps M of the run (0 if r is NULL). */
SIVE_API int64_t sive_result_steps(const sive_result *r);
/** Evaluation stride k of the run (0 if r is NULL). */
SIVE_API int64_t sive_result_eval_stride(const sive_result *r);

/** How a chain ended. */
typedef enum sive_chain_status {
    SIVE_CHAIN_OK = 0,        /**< ran all M steps                            */
    SIVE_CHAIN_DIVERGED = 1,  /**< non-finite loss, gradient or parameter      */
    SIVE_CHAIN_CALLBACK = 2,  /**< its callback returned non-zero              */
    SIVE_CHAIN_ABORTED = 3,   /**< stopped: another chain failed or cancelled  */
    SIVE_CHAIN_INVALID = -1   /**< r NULL or chain out of range                */
} sive_chain_status;

/** Status of a chain; *step (may be NULL) receives the step at which it
 *  diverged or stopped (M for a finished chain). */
SIVE_API sive_chain_status sive_result_chain_status(const sive_result *r,
                                                    int32_t chain,
                                                    int64_t *step);

/** Per-step traces.  Each has one entry per step actually run (M for a
 *  finished chain); LBAR and S2 are NaN at steps that were not evaluated
 *  (eval stride > 1); GRAD_LOSS is NaN when the callback did not report it. */
typedef enum sive_trace {
    SIVE_TRACE_LBAR = 0,      /**< Lbar_m: mean of the N group losses          */
    SIVE_TRACE_S2 = 1,        /**< s2_m: their sample variance (ddof 1)        */
    SIVE_TRACE_GRAD_LOSS = 2, /**< loss reported by the gradient callback      */
    SIVE_TRACE_GRAD_NORM = 3, /**< ||g_m||_2                                   */
    SIVE_TRACE_DISP = 4,      /**< ||theta_m - theta*||_2 / sqrt(d)            */
    SIVE_TRACE_COUNT_ = 5
} sive_trace;

/**
 * Borrow a trace of one chain.  Returns a pointer owned by r (valid until
 * sive_result_free) and stores its length in *len; NULL (and *len = 0) for
 * invalid arguments.  len may not be NULL.
 */
SIVE_API const double *sive_result_trace(const sive_result *r, sive_trace which,
                                         int32_t chain, size_t *len);

/** Health flags (bit mask). */
enum {
    SIVE_FLAG_DIVERGED = 1u << 0,       /**< some chain diverged               */
    SIVE_FLAG_NEGATIVE_SIVE = 1u << 1,  /**< unclipped SIVE < 0 on some chain  */
    SIVE_FLAG_NONSTATIONARY = 1u << 2,  /**< tail halves disagree (|z| > 4)    */
    SIVE_FLAG_LOW_ESS = 1u << 3,        /**< a chain's tail ESS < 100          */
    SIVE_FLAG_HIGH_RHAT = 1u << 4,      /**< split-Rhat > 1.05                 */
    SIVE_FLAG_NOISY_CORRECTION = 1u << 5,/* std of C > |lambda-hat|          */
    SIVE_FLAG_ABORTED = 1u << 6         /**< run stopped early                 */
};

/** The health flags raised for this result (0 = nothing to report). */
SIVE_API uint32_t sive_result_flags(const sive_result *r);
/** Plain-language description of one flag bit (static; "" if unknown). */
SIVE_API const char *sive_flag_string(uint32_t flag);
/** All raised flags explained, one line each with the numbers behind them
 *  ("" when healthy).  Owned by r. */
SIVE_API const char *sive_result_health(const sive_result *r);

/* ------------------------------------------------------------------ */
/* Random numbers for callbacks                                       */
/* ------------------------------------------------------------------ */

/**
 * The library's PCG32 generator (O'Neill's XSH-RR 64/32), for callbacks that
 * need their own randomness from sive_batch.seed (e.g. the evaluation noise
 * of an analytic model).  A plain value type: copy it freely, one per
 * thread; the fields are public only so that it can live on the stack.
 */
typedef struct sive_rng {
    uint64_t state;
    uint64_t inc;
} sive_rng;

/** Seed g from (seed, stream); distinct streams are independent. */
SIVE_API void sive_rng_seed(sive_rng *g, uint64_t seed, uint64_t stream);
/** Next 32 uniformly random bits. */
SIVE_API uint32_t sive_rng_next(sive_rng *g);
/** Uniform double in [0, 1). */
SIVE_API double sive_rng_uniform(sive_rng *g);
/** Standard normal variates (ziggurat) into out[0..n-1]. */
SIVE_API void sive_rng_normals(sive_rng *g, double *out, size_t n);

/* ------------------------------------------------------------------ */
/* Statistics helpers (the ones the result uses, for callers' own     */
/* series, e.g. an oracle loss they track themselves)                 */
/* ------------------------------------------------------------------ */

/** Effective sample size of x[0..n-1] by Geyer's initial monotone sequence
 *  estimator.  NaN if x is NULL, n < 4, or x is not finite; n if constant. */
SIVE_API double sive_stats_ess(const double *x, size_t n);
/** Monte Carlo standard error of the mean of x by non-overlapping batch
 *  means (batch size floor(sqrt n)).  NaN if n < 4 or x is NULL. */
SIVE_API double sive_stats_mcse(const double *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* SIVE_SIVE_H */
