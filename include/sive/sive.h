/*
 * libsive - local learning coefficient probes with the Shift-Invariant
 * Variance Estimator (SIVE).
 *
 * The core API.  A *model* (sive_model) is a plain value the caller fills:
 * its precision, dimension, data-set size and callbacks.  A *probe*
 * (sive_probe) holds options and a progress callback.  A *run*
 * (sive_probe_run) drives one or more tethered Langevin chains around a
 * centre theta* and returns a *result* (sive_result) holding the
 * estimators, diagnostics, per-step traces and the run's status.
 *
 * Conventions (stable ABI, see docs/abi.md):
 *  - Every function that can fail returns an int status: SIVE_OK (0) or a
 *    negative SIVE_E_* code.  Values are pinned forever.  sive_strerror()
 *    gives static text; sive_probe_errmsg() the detail of the last failure
 *    on a probe; sive_last_errmsg() the detail of the last failure in the
 *    calling thread (for functions without a handle).
 *  - Handles are opaque.  Constructors take the out-parameter first and set
 *    it to NULL on every failure path; destructors accept NULL.  The library
 *    never prints, never aborts and keeps no global mutable state (the
 *    per-thread last error excepted).
 *  - Thread safety: a handle may be used by one thread at a time; distinct
 *    handles may be used concurrently.  Result handles are immutable and
 *    may be read from many threads at once.  Static tables (option info,
 *    names) may be read from any thread.
 *  - Structs the caller fills (sive_model) start with a struct_size member:
 *    fields are only appended, and the library reads only the first
 *    struct_size bytes, so a program built against an older header keeps
 *    working.
 *  - No function-like macros, no variadic functions, fixed-width integers.
 */
#ifndef SIVE_SIVE_H
#define SIVE_SIVE_H

#include <stddef.h>
#include <stdint.h>

#include "sive/version.h"

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
/* Version (the macros come from sive/version.h, generated from the   */
/* build's project version)                                           */
/* ------------------------------------------------------------------ */

/** Version of the library actually linked: MAJOR*10000 + MINOR*100 + PATCH. */
SIVE_API uint32_t sive_version_number(void);
/** Version of the library actually linked, e.g. "0.3.0" (static storage). */
SIVE_API const char *sive_version_string(void);

/* ------------------------------------------------------------------ */
/* Status codes                                                       */
/* ------------------------------------------------------------------ */

enum {
    SIVE_OK = 0,
    SIVE_E_INVALID_ARG = -1, /**< NULL pointer, out-of-range value, bad size  */
    SIVE_E_NOMEM = -2,       /**< allocation failed                           */
    SIVE_E_STATE = -3,       /**< call not valid now                          */
    SIVE_E_CALLBACK = -4,    /**< a user callback returned non-zero           */
    SIVE_E_DIVERGED = -5,    /**< every chain produced a non-finite value     */
    SIVE_E_CANCELLED = -6,   /**< the progress callback asked to stop         */
    SIVE_E_IO = -7,          /**< file could not be opened, read or written   */
    SIVE_E_FORMAT = -8,      /**< file is malformed, truncated or corrupted   */
    SIVE_E_THREAD = -9,      /**< reserved: no function returns it since 0.2
                                  (a run whose worker threads cannot start
                                  runs its chains on the calling thread)    */
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

/**
 * Set the calling thread's last-error message (msg NULL clears it).  Meant
 * for model callbacks: a callback that returns non-zero may first call
 * this, and the run's error message then carries the text, e.g.
 * "evaluation callback returned -1 at chain 0 step 3: index 9000 out of
 * range".  The library clears the message before every callback call, so a
 * stale message is never picked up.  At most 511 bytes are kept.  The
 * reference stack (libsive-ref) reports its errors through this too, so
 * sive_last_errmsg() is the one place to read them.  Thread-safe.
 */
SIVE_API void sive_set_errmsg(const char *msg);

/**
 * Free memory that the library allocated for the caller with malloc (for
 * example sive_result_note()'s string, sive_result_to_bytes()'s buffer or
 * sive_checkpoint_load()'s parameters).  NULL is a no-op.  Thread-safe.
 * Declared here since 0.3 (mlp.h before; mlp.h includes this header).
 */
SIVE_API void sive_free(void *ptr);

/* ------------------------------------------------------------------ */
/* The model                                                          */
/* ------------------------------------------------------------------ */

/** Precision of a model's parameters. */
typedef enum sive_dtype {
    SIVE_DTYPE_UNKNOWN = 0, /**< no precision: sive_result_dtype(NULL); never
                                 a model's (sive_probe_run() refuses it) */
    SIVE_F32 = 1, /**< float  (IEEE binary32) */
    SIVE_F64 = 2  /**< double (IEEE binary64) */
} sive_dtype;

/**
 * The examples a callback must use.
 *
 * Gradient call: index holds group_size = B_grad indices in
 * [0, n_examples), n_groups is 1.  Per-example loss call: index holds
 * group_size distinct indices in ascending order, n_groups is 1.  Group
 * call: index holds n_groups*group_size indices, group-major (group i is
 * index[i*group_size ... (i+1)*group_size-1]).
 *
 * For a model with n_examples 0 (analytic models) index is NULL and seed is
 * the only input: a fresh 64-bit value from an independent stream for the
 * callback's own randomness (for example a toy model's evaluation noise).
 * seed is set in every call.
 *
 * worker is the number of the run's worker thread making the call,
 * 0 .. threads-1 (threads = min(SIVE_OPT_THREADS, SIVE_OPT_CHAINS)).  Two
 * calls with the same worker never overlap in time, so a model can keep
 * one scratch buffer per worker without locks.  Results must not depend on
 * it.
 */
typedef struct sive_batch {
    const uint64_t *index; /**< NULL when the model has no data set        */
    size_t n_groups;       /**< N for group calls, 1 otherwise              */
    size_t group_size;     /**< B_eval, B_grad, or the distinct count       */
    uint64_t seed;         /**< fresh per call, reproducible from the seed  */
    int32_t chain;         /**< chain number, 0 .. chains-1; -1 in calls at
                                theta* before the chains (the pass of
                                SIVE_OPT_CONTROL_VARIATE, the exact-loss
                                check of SIVE_OPT_METROPOLIS and of its
                                default, -1)                              */
    int32_t worker;        /**< worker thread, 0 .. threads-1               */
    int64_t step;          /**< Langevin step m, 0 .. M-1; -1 at theta*     */
} sive_batch;

/**
 * Gradient callback.  theta and grad point to dim values of the model's
 * dtype (float or double).  Write the gradient of the mean loss over the
 * batch at theta into grad (entries left unwritten keep the previous
 * step's values, zero at a chain's start).  Optionally store that mean
 * loss in *loss (pre-set to NaN; only traced).  Return 0, or non-zero to
 * stop the run (status SIVE_E_CALLBACK; the value is kept, see
 * sive_result_callback_code(); see sive_set_errmsg() for a message).
 * theta is read-only and valid only during the call.  With more than one
 * worker thread the callback runs concurrently for different chains and
 * must be thread-safe.
 */
typedef int (*sive_grad_fn)(const void *theta, size_t dim,
                            const sive_batch *batch, void *grad, double *loss,
                            void *user);
/**
 * Per-example loss callback: losses[i] = the loss of example
 * batch->index[i] at theta, i = 0 .. batch->group_size-1 (the indices are
 * distinct and ascending).  The library draws the N*B_eval evaluation
 * indices, calls this once per evaluated step on the distinct ones, and
 * forms the N group means itself.  Needs n_examples > 0.  Same return and
 * threading rules as the gradient callback.
 */
typedef int (*sive_loss_fn)(const void *theta, size_t dim,
                            const sive_batch *batch, double *losses,
                            void *user);
/**
 * Per-group loss callback (for models whose evaluation noise is not a mean
 * over examples, e.g. the analytic toys): write the mean loss of each of
 * the batch->n_groups groups at theta into group_loss[0 .. n_groups-1].
 * Same return and threading rules as the gradient callback.
 */
typedef int (*sive_group_fn)(const void *theta, size_t dim,
                             const sive_batch *batch, double *group_loss,
                             void *user);

/**
 * What the library tells a move callback (sive_move_fn): the chain's
 * tethered law at this step and the move's size and key.  Built by the
 * library for the duration of one call (read it, keep no pointer).
 * Fields are appended only; read one only when struct_size covers it.
 */
typedef struct sive_move_info {
    uint32_t struct_size;   /**< sizeof(sive_move_info) of the library      */
    size_t dim;             /**< number of parameters (the model's dim)     */
    double scale;           /**< the move's size (> 0), adapted, see below  */
    double t;               /**< inverse temperature of this step (annealing
                                 included): the law's -t L(theta) term      */
    double h;               /**< tether radius: -|theta - theta*|^2/(2 h^2) */
    const void *theta_star; /**< the tether's centre theta* (dim values of
                                 the model's dtype)                          */
    const sive_batch *batch;/**< key and identity of the call, see below    */
} sive_move_info;

/**
 * Move callback (optional, 0.3; sive_model.move): a proposal that the
 * experimental orbit moves (SIVE_OPT_ORBIT_EVERY, sive/experimental.h;
 * docs/theory.md "Orbit moves") accept or reject on the exact tethered
 * law, e.g. along a (near) symmetry of the loss, or an exact draw from a
 * conditional of that law.  From theta (info->dim values of the model's
 * dtype) write a proposed theta' into theta_out (dim values, never
 * aliasing theta) and into *log_ratio the log of |det d theta'/d theta|
 * times the density of the reverse proposal (theta' -> theta) over that of
 * this one: for a move theta' = T_g(theta) with g drawn from a law
 * symmetric between g and g^-1 (T_g^-1 = T_{g^-1}), just
 * log |det dT_g/dtheta|; for a draw from a conditional q(x | rest) of the
 * law, log q(x_old | rest) - log q(x_new | rest).  info->scale (> 0) is
 * the size of the move (e.g. g = exp(scale A)), adapted by the library
 * toward an acceptance rate (a move that does not use it may ignore it);
 * info->t, info->h and info->theta_star describe the law the chain
 * samples.  info->batch->seed is the only randomness to use (a 64-bit key
 * from the chain's own stream, so results are reproducible and do not
 * depend on threads); batch->index is NULL, batch->chain, worker and step
 * are set as for the gradient callback (worker: per-thread scratch
 * without locks).  The library accepts theta' with probability
 * min(1, exp(-t (L(theta') - L(theta)) - (|theta' - theta*|^2 -
 * |theta - theta*|^2)/(2 h^2) + *log_ratio)) using the exact loss, so the
 * chain's law stays exact even when the move is only approximately a
 * symmetry or conditional (it is then merely accepted less often).  A
 * proposal whose theta', loss or gradient is not finite is rejected and
 * counted in the run's health text, and so is one whose *log_ratio is NaN
 * or +-infinity (counted apart, without a gradient call; -infinity is a
 * valid way to reject, but shows there too); the chain goes on.  Return
 * 0, or non-zero to stop the run (as the gradient callback).  Same
 * threading rules.  (Changed before any release: 0.3's first drafts passed
 * theta, dim, scale and batch as separate parameters and no t, h, theta*.)
 */
typedef int (*sive_move_fn)(const sive_move_info *info, const void *theta,
                            void *theta_out, double *log_ratio, void *user);

/**
 * One parameter block of a model (sive_model.blocks; experimental, read
 * only by SIVE_OPT_KRON_EVERY, sive/experimental.h): a rows x cols matrix
 * W stored row-major at theta[offset + i * cols + j], e.g. a layer's
 * weights (rows: its outputs, cols: its inputs), and the row counts of the
 * square-root factors its curvature callback writes (sive_curvature_fn).
 * Blocks must not overlap and must lie inside theta.
 */
typedef struct sive_block {
    size_t offset;   /**< first parameter of the block in theta            */
    size_t rows;     /**< W's rows (the output side), >= 1                 */
    size_t cols;     /**< W's columns (the input side), >= 1               */
    size_t g_rows;   /**< rows of the output-side root F_G (>= 1)          */
    size_t a_rows;   /**< rows of the input-side root F_A (>= 1)           */
} sive_block;

/**
 * What the library tells a curvature callback (sive_curvature_fn).  Built
 * for the duration of one call (keep no pointer); fields are appended
 * only, read one only when struct_size covers it.
 */
typedef struct sive_curvature_info {
    uint32_t struct_size;    /**< sizeof(sive_curvature_info) of the library */
    size_t dim;              /**< number of parameters (the model's dim)     */
    size_t block;            /**< the block, an index into sive_model.blocks */
    const sive_batch *batch; /**< identity of the call: index NULL, chain,
                                  worker and step as for the gradient
                                  callback (worker: per-thread scratch)      */
} sive_curvature_info;

/**
 * Curvature callback (optional, 0.3; sive_model.curvature; experimental:
 * read only by SIVE_OPT_KRON_EVERY): Kronecker square-root factors of the
 * mean loss's curvature in one block at theta, in the Gauss-Newton /
 * K-FAC form
 *     d^2 L / dW dW  ~  G (x) A,   G = F_G^T F_G,   A = F_A^T F_A,
 * i.e. the second-order change of L for a change D of the block's W is
 * about |F_G D F_A^T|_F^2 / 2 (G rows x rows from the layers above, A
 * cols x cols from the layers below).  Write F_G (b.g_rows x b.rows,
 * row-major, b = sive_model.blocks[info->block]) into g_root and F_A
 * (b.a_rows x b.cols) into a_root, in double whatever the model's dtype.
 * Square roots, not G and A: the library diagonalises them by one-sided
 * Jacobi on the roots, so G's and A's eigenvalues come without a squared
 * condition number.  The factors only shape a proposal: the library's
 * Metropolis-Hastings ratio keeps the law exact whatever they are (wrong
 * factors only lower the acceptance); exact ones (a loss quadratic in the
 * block given the rest, like a deep linear network's) make the move an
 * exact draw.  They may depend on the whole theta, the block included.
 * theta (info->dim values of the model's dtype) is read-only and valid
 * only during the call.  Return 0, or non-zero to stop the run (as the
 * gradient callback).  Same threading rules.
 */
typedef int (*sive_curvature_fn)(const sive_curvature_info *info, const void *theta,
                                 double *g_root, double *a_root, void *user);

/**
 * A model, described by value.  Fill it after sive_model_init() (which
 * zeroes it and sets struct_size), then pass it to sive_probe_run().
 *
 * Required: dtype, dim, grad, and one of loss / group_loss (loss is used
 * when both are set).  user is passed back to every callback verbatim.
 * The run reads the description at its start and keeps no pointer to it
 * after it returns: the model may be changed or destroyed between runs.
 *
 * destroy (optional) releases user; it is called only by
 * sive_model_destroy(), never by a run, so whoever made the model (a
 * constructor such as sive_mlp_model()) decides when its state goes away.
 */
typedef struct sive_model {
    uint32_t struct_size;     /**< sizeof(sive_model), set by sive_model_init */
    sive_dtype dtype;         /**< SIVE_F32 or SIVE_F64                        */
    size_t dim;               /**< number of parameters, 1 .. 2^40             */
    uint64_t n_examples;      /**< data-set size n; 0 = analytic (no data)     */
    sive_grad_fn grad;        /**< mean-loss gradient on a batch               */
    sive_loss_fn loss;        /**< per-example losses, or NULL                 */
    sive_group_fn group_loss; /**< per-group mean losses, or NULL              */
    void *user;               /**< passed to every callback                    */
    void (*destroy)(void *user); /**< optional, see sive_model_destroy()       */
    /** Optional (0.3; 0 = none): a hash of everything that defines the
     *  model's loss besides theta: its architecture and the content of its
     *  data set (sive_mlp_model() sets it from sive_dataset_hash(),
     *  sive_dln_model() from the network's teacher and examples).  A
     *  result keeps it, and sive_result_merge() refuses parts whose
     *  identities differ, so parts probed on different data sets of the
     *  same size no longer merge.  Read only when struct_size covers it. */
    uint64_t identity;
    /** Optional (0.3; NULL = none): a proposal along the loss's symmetry
     *  orbits (sive_move_fn), used only when SIVE_OPT_ORBIT_EVERY asks for
     *  orbit moves (sive_dln_model() sets it).  Read only when struct_size
     *  covers it. */
    sive_move_fn move;
    /** Optional (0.3, experimental; 0 / NULL = none): the parameter blocks
     *  (n_blocks entries at blocks, owned by the caller and read during a
     *  run only, so they must outlive it) and their Kronecker curvature
     *  (sive_curvature_fn), used only when SIVE_OPT_KRON_EVERY asks for
     *  layer-block Newton moves (sive_dln_model() sets them).  Read only
     *  when struct_size covers them. */
    size_t n_blocks;
    const sive_block *blocks;
    sive_curvature_fn curvature;
} sive_model;

/**
 * Zero *m and set m->struct_size = struct_size (pass sizeof(sive_model)).
 * SIVE_E_INVALID_ARG when m is NULL or struct_size is not a size a
 * sive_model can have: the 0.2 layout (the fields up to destroy), this
 * header's sizeof, or a newer header's (a multiple of 8 up to 1024 bytes).
 * sive_probe_run() applies the same rule, so an uninitialised model is
 * refused unless its garbage happens to be one of those ~120 values:
 * always call sive_model_init().
 */
SIVE_API int sive_model_init(sive_model *m, size_t struct_size);

/**
 * Release a model: calls m->destroy(m->user) when destroy is set, then
 * zeroes every field but struct_size.  NULL and already-destroyed models
 * are no-ops.  Not while a run uses the model.
 */
SIVE_API void sive_model_destroy(sive_model *m);

/* ------------------------------------------------------------------ */
/* Options                                                            */
/* ------------------------------------------------------------------ */

/**
 * Options: parameters as data.  sive_option_info() gives each option's
 * name, type, bounds, default and a one-line description; the tables of
 * the CLI and of the language bindings are built from it.  Values are
 * pinned; new options are appended.  Values from 1000 up are given to
 * experimental options (sive/experimental.h, docs/abi.md "Experimental
 * tier"): their names are declared only under SIVE_EXPERIMENTAL, the
 * table lists them with tier SIVE_TIER_EXPERIMENTAL, and they keep their
 * value when they become stable.
 */
typedef enum sive_option {
    SIVE_OPT_T = 1,           /**< double: inverse temperature t = n*beta     */
    SIVE_OPT_BASE_LR = 2,     /**< double: base step a = eta*t                */
    SIVE_OPT_H = 3,           /**< double: absolute localisation radius h     */
    /** double: adaptive radius factor c_h, h = c_h*||theta*||/sqrt(d)
     *  (default 1; but while neither h nor c_h is set, SIVE_OPT_METROPOLIS'
     *  default -1 runs c_h = 0 on a model with the exact loss: see
     *  there).  Setting c_h or h fixes the radius mode (and makes that
     *  default run ULA); sive_probe_reset() forgets it.  0 (text "auto")
     *  chooses h from the loss instead: short
     *  pilot runs on common random numbers at h = 1/sqrt(t), 2/sqrt(t), ...
     *  until d ln lambda-hat / d ln h, or the paired change of lambda-hat
     *  from one h to the next, says a larger h no longer moves it; works at
     *  theta* = 0; the run then uses that h (SIVE_STAT_H) and its health
     *  text names it and the pilots' cost.  The pilots report progress as
     *  runs of their own (chains 0-3, total = their steps) and can be
     *  cancelled; a callback error or cancel there is the returned
     *  result's status.  docs/theory.md, "Radius from the loss". */
    SIVE_OPT_C_H = 4,
    SIVE_OPT_STEPS = 5,       /**< int: Langevin steps M                      */
    SIVE_OPT_BURN_IN = 6,     /**< double: burn-in fraction alpha             */
    SIVE_OPT_GROUPS = 7,      /**< int: evaluation groups N                   */
    SIVE_OPT_EVAL_BATCH = 8,  /**< int: evaluation batch size B_eval          */
    SIVE_OPT_GRAD_BATCH = 9,  /**< int: gradient batch size B_grad            */
    /* 10 was SIVE_OPT_DATA_SIZE in 0.1: the data-set size is now the
     * model's n_examples.  The value is not reused. */
    SIVE_OPT_CHAINS = 11,     /**< int: independent chains                    */
    SIVE_OPT_THREADS = 12,    /**< int: worker threads                        */
    SIVE_OPT_SEED = 13,       /**< int: seed                                  */
    SIVE_OPT_REPLACEMENT = 14,/**< int: 1 with replacement, 0 without         */
    SIVE_OPT_EVAL_STRIDE = 15,/**< int: evaluate every k-th step              */
    SIVE_OPT_ANCHOR = 16,     /**< double: anchor for the anchored mean       */
    /** int: first chain this run computes (default 0).  A run computes the
     *  chains [chain_begin, chain_end) of a SIVE_OPT_CHAINS-chain probe;
     *  chain c draws from the streams of (seed, c) whichever run computes
     *  it, so results of disjoint ranges merge (sive_result_merge()) into
     *  the whole run's result bit for bit.  Needs chain_begin < end. */
    SIVE_OPT_CHAIN_BEGIN = 17,
    /** int: one past the last chain this run computes; 0 (the default)
     *  means SIVE_OPT_CHAINS.  Must not exceed SIVE_OPT_CHAINS. */
    SIVE_OPT_CHAIN_END = 18,
    /** int: 1 evaluates differences D_j = loss_j(theta) - loss_j(theta*)
     *  and reports Lbar = mean D + L_n(theta*) (control variates, default
     *  0).  The same target (E[Lbar | theta] = L_n(theta) exactly); the
     *  evaluation noise, hence the noise correction and its uncertainty,
     *  shrink as the chain stays near theta*.  Needs a per-example model
     *  (sive_model.loss); with group_loss only the run refuses
     *  (SIVE_E_INVALID_ARG).  Before the chains start the run calls the
     *  loss callback at theta* on every example (chain = -1, step = -1,
     *  worker 0, ascending index batches of at most max(N*B_eval, 4096))
     *  and keeps the n losses in double (8n bytes per run, shared by its
     *  chains; a sweep holds one per value it runs at once); above 2^24
     *  examples it keeps none and evaluates each step's distinct examples
     *  at theta* as well (twice the evaluation cost, no table).  A callback
     *  error in that pass is the run's SIVE_E_CALLBACK (result status, code
     *  kept, no chain run); a loss that is not finite at theta* is
     *  SIVE_E_INVALID_ARG.  The pass reports progress as chain -1 (step:
     *  examples done, total: n) at its start and about every 0.25 s, and a
     *  non-zero return cancels it between two batches (the run's
     *  SIVE_E_CANCELLED, no chain run).  docs/theory.md,
     *  "Control variates". */
    SIVE_OPT_CONTROL_VARIATE = 19,
    /** int: 1 also runs every chain at base_lr/2 (the same seed, chain
     *  range and steps; twice the work) and reports the estimate
     *  extrapolated to a step of 0, 2 lambda(a/2) - lambda(a) (Richardson:
     *  the step bias of ULA is linear in a to first order), as
     *  SIVE_STAT_SIVE_STEP0 with its MCSE SIVE_STAT_MCSE_STEP0 (default 0:
     *  it doubles the cost and about doubles the MCSE).  Every other
     *  statistic, trace and flag is the run's at base_lr, as without the
     *  option.  docs/theory.md, "Step bias". */
    SIVE_OPT_STEP_EXTRAPOLATE = 20,
    /** int: 1 steps with gradient control variates (SVRG-style, default
     *  0): g = grad l_B(theta) - grad l_B(theta*) + grad L_n(theta*), an
     *  unbiased estimate of grad L_n(theta) whose noise shrinks with
     *  ||theta - theta*||, so a small B_grad samples close to the
     *  full-batch law exp(-t L_n - tether).  A different chain (not the
     *  0.2 path).  Needs a data set (n_examples > 0; otherwise the run
     *  refuses, SIVE_E_INVALID_ARG).  Before the chains the run calls the
     *  gradient callback at theta* on every example (chain = -1, step =
     *  -1, worker 0, ascending index batches of max(B_grad, 4096)) and
     *  keeps grad L_n(theta*); that pass calls the progress callback with
     *  chain -1 and step/total = examples done/n, and may be cancelled.
     *  Then every step calls the gradient callback twice, at theta_m and
     *  at theta* on the same batch (same index, seed, chain, step): twice
     *  the gradient cost.  A callback error in the pass is the run's
     *  SIVE_E_CALLBACK (no chain run); a gradient at theta* that is not
     *  finite is SIVE_E_INVALID_ARG.  docs/theory.md, "Gradient control
     *  variates". */
    SIVE_OPT_GRAD_CONTROL_VARIATE = 21,
    /** int: 1 steps with a frozen diagonal preconditioner P (RMSProp-style,
     *  default 0): theta' = theta - P (a g + (eta/h^2)(theta - theta*)) +
     *  sqrt(P) sqrt(2 eta) xi.  Each chain estimates
     *  P_i = min(10, c / r_i), r_i the RMS of its gradient's coordinate
     *  i over the first half of its burn-in (plain steps) and
     *  c = sum_k r_k^2 / sum_k r_k (the g^2-weighted mean of P is 1),
     *  then freezes it: a constant P leaves the stationary law the
     *  tethered posterior (no drift correction; docs/theory.md,
     *  "Frozen preconditioner").  Needs floor(burn_in*M) >= 2.  With
     *  SIVE_OPT_METROPOLIS, P preconditions the Metropolis proposal
     *  instead (see there).  A different chain (not the 0.2 path). */
    SIVE_OPT_PRECONDITION = 22,
    /** int: -1 (default; text "auto"): the run chooses, from the model
     *  and the other options, at its start: when neither SIVE_OPT_H nor
     *  SIVE_OPT_C_H was set and the loss is exact (the sampler's
     *  requirements below hold: none of the options it refuses, and the
     *  gradient callback, called twice at theta* before the chains --
     *  chain -1, step -1, worker 0, the whole data set, seeds 0 and
     *  another -- stores the same finite loss and gradient both times),
     *  the run uses 1 with c_h = 0 (the radius
     *  from the loss); otherwise 0 with the radius as set (default c_h =
     *  1): the 0.2 path.  The probe keeps -1 (sive_probe_get_int); the
     *  result holds the value that ran, 0 or 1, and with it c_h
     *  (sive_result_option_int/_double, and its file), and when the
     *  default chose 1 the run's health text says so in a line
     *  "defaults: ..." with the reason (a run left on the 0.2 path has
     *  0.2's health text).  When this default chose 1, the experimental
     *  kron_every and radius_lookahead (sive/experimental.h), left at
     *  their own default -1 ("auto"), become 1 (where the model supplies
     *  blocks and curvature the sampler takes) and 8; in every other case
     *  0 (the result holds the values that ran).  docs/guide.md,
     *  "Defaults".
     *  0: plain (ULA) steps.
     *  1 makes every step a Metropolis-adjusted Langevin (MALA)
     *  step: the Langevin move is a proposal, accepted with
     *  the Metropolis-Hastings probability against
     *  U = t L + ||theta - theta*||^2/(2 h^2), so the chain's law is the
     *  tethered law exactly, with no step bias.  Each chain's step is a
     *  function of its distance from theta* (smaller farther out, where
     *  the loss is stiffer), adapted over the whole burn-in (from
     *  base_lr) toward an acceptance rate of 0.574, then frozen at its
     *  means over the burn-in's last quarter.  Needs the
     *  exact loss: the gradient callback must store the mean loss in
     *  *loss, and a model with data must use the whole data set for each
     *  gradient (grad_batch = n_examples, replacement 0); otherwise the
     *  run refuses (SIVE_E_INVALID_ARG).  With SIVE_OPT_PRECONDITION
     *  the proposal is preconditioned by each chain's frozen P (learnt
     *  with P = I over the first half of the burn-in, then frozen; the
     *  step keeps adapting under it until the burn-in ends) and accepted
     *  with its density in the P^-1 metric: still exact.  Under
     *  SIVE_OPT_C_H = 0 the radius search's pilots run at one fixed
     *  step.  Not with SIVE_OPT_GRAD_CONTROL_VARIATE or
     *  SIVE_OPT_STEP_EXTRAPOLATE (no step bias is left).  One
     *  gradient call per step (at the proposal).  A different chain (not
     *  the 0.2 path).  docs/theory.md, "Metropolis-adjusted step". */
    SIVE_OPT_METROPOLIS = 23,
    /** int K: 0 (default) off; K >= 2, with SIVE_OPT_GRAD_CONTROL_VARIATE,
     *  compensates the gradient noise: each step also calls the gradient
     *  callback at theta_m and at theta* on K-1 of K equal sub-batches of
     *  its batch (contiguous slices of the index array, same seed, chain,
     *  step), estimates the variance C_i of the step's gradient in each
     *  coordinate from the K sub-batch gradients, and injects Langevin
     *  noise of variance max(0, 2 eta - a^2 C_i) instead of 2 eta, so the
     *  total noise per step stays 2 eta in expectation (the full-batch
     *  law's).  Where a^2 C_i > 2 eta it cannot compensate: the chain then
     *  runs hotter there (docs/theory.md, "Gradient noise
     *  compensation").  Needs grad_control_variate 1, K <= B_grad, B_grad
     *  divisible by K, and no preconditioner (otherwise the run refuses,
     *  SIVE_E_INVALID_ARG).  About (K-1)/K more gradient work per step.  A
     *  different chain (not the 0.2 path). */
    SIVE_OPT_GRAD_NOISE_COMPENSATION = 24,
    /** int: 1 makes SIVE_OPT_GRAD_NOISE_COMPENSATION subtract the whole
     *  covariance the K sub-batches estimate (rank K-1), not only its
     *  diagonal: the injected noise is sqrt(2 eta) (I - X)^(1/2) xi with
     *  X = a^2 C / (2 eta), eigenvalues of X above 1 clipped to 1 (no
     *  noise in that direction).  Costs O(d K^2 + K^3) per step.  Default
     *  0 (the diagonal); ignored without compensation.  docs/theory.md,
     *  "Gradient noise compensation". */
    SIVE_OPT_GRAD_NOISE_FULL = 25,
    /** int: 1 also runs every chain at twice the gradient batch (2 B_grad;
     *  the same seed, chain range, steps and other options, so chain c
     *  draws the same Langevin noise in both runs; twice the gradient work
     *  and more) and reports the estimate extrapolated to the full-batch
     *  chain (Richardson in the gradient noise, which heats the chain to
     *  first order in proportion to 1/B_grad, or to 1/B_grad - 1/n without
     *  replacement): w lambda(2B) - (w - 1) lambda(B), w = 2 with
     *  replacement and 2 - 2B/n without, as SIVE_STAT_SIVE_FULL_BATCH with
     *  its MCSE SIVE_STAT_MCSE_FULL_BATCH (default 0).  Every other
     *  statistic, trace and flag is the run's at B_grad, as without the
     *  option.  Needs a data set (n_examples > 0), and 2 B_grad <=
     *  n_examples without replacement; not with SIVE_OPT_METROPOLIS
     *  (otherwise the run refuses, SIVE_E_INVALID_ARG).  docs/theory.md,
     *  "Gradient batch bias". */
    SIVE_OPT_GRAD_EXTRAPOLATE = 26
} sive_option;

/** Whether an option is part of the stable ABI (docs/abi.md). */
typedef enum sive_option_tier {
    SIVE_TIER_STABLE = 0,      /**< pinned: meaning, bounds and default kept */
    SIVE_TIER_EXPERIMENTAL = 1 /**< may change or go in any release          */
} sive_option_tier;

/** Type of an option's value. */
typedef enum sive_option_type {
    SIVE_TYPE_INT = 1,   /**< int64_t, set with sive_probe_set_int()        */
    SIVE_TYPE_DOUBLE = 2 /**< double, set with sive_probe_set_double()      */
} sive_option_type;

/**
 * Everything the library knows about one option (static storage, never
 * modified).  Bounds are inclusive unless *_open is 1.  For int options
 * the int_* members hold the exact bounds and default, for double options
 * the double ones; the other pair is 0.  Members are only appended.
 */
typedef struct sive_option_info {
    sive_option id;
    const char *name;        /**< stable machine name, e.g. "steps"         */
    sive_option_type type;
    int lo_open, hi_open;    /**< 1 when the bound itself is excluded        */
    int64_t int_lo, int_hi, int_default;
    double double_lo, double_hi, double_default; /**< NaN: no default     */
    const char *doc;         /**< one line: meaning and default              */
    sive_option_tier tier;   /**< stable or experimental (since 0.3)         */
} sive_option_info;

/**
 * Information about an option, or NULL for an unknown value.  To list all
 * options, call sive_option_at(i) for i = 0, 1, ... until it returns NULL.
 */
SIVE_API const sive_option_info *sive_option_info_get(sive_option opt);
/** The i-th option in the table (i from 0), or NULL past the end. */
SIVE_API const sive_option_info *sive_option_at(size_t i);
/**
 * Find an option by its machine name (e.g. "base_lr").  Stores it in *out
 * and returns SIVE_OK, or SIVE_E_INVALID_ARG (unknown name or NULL
 * argument; message in sive_last_errmsg()).
 */
SIVE_API int sive_option_by_name(const char *name, sive_option *out);

/* ------------------------------------------------------------------ */
/* Probe handle                                                       */
/* ------------------------------------------------------------------ */

typedef struct sive_probe sive_probe;

/**
 * Progress callback: called from the thread running the chain at step 0,
 * then at least every ~0.25 s of wall time or every 1/1000 of the run,
 * whichever comes first, and after the last step (step == total).  Return
 * non-zero to cancel the run (status SIVE_E_CANCELLED).  Must be
 * thread-safe when more than one worker thread is used.  chain is -1
 * during the pass at theta* of SIVE_OPT_CONTROL_VARIATE (step and total
 * count examples there).  The library checks between callbacks: a cancel
 * takes effect after the model callback running at the time returns (a
 * single callback on a huge batch is not interrupted).
 */
typedef int (*sive_progress_fn)(int32_t chain, int64_t step, int64_t total,
                                void *user);

/**
 * Create a probe with every option at its default (the paper's
 * deep-network operating point; the sampler and radius chosen per model
 * by SIVE_OPT_METROPOLIS' default).  *out is NULL on failure.  Errors:
 * SIVE_E_INVALID_ARG (out NULL), SIVE_E_NOMEM.
 */
SIVE_API int sive_probe_new(sive_probe **out);
/** Free a probe (NULL is a no-op). */
SIVE_API void sive_probe_free(sive_probe *p);
/** Set every option back to its default (the progress callback stays;
 *  the parameter subset and the evaluation views are cleared; a radius set
 *  is forgotten, so SIVE_OPT_METROPOLIS' default chooses again, and so is
 *  a radius taken with sive_probe_set_radius_from()). */
SIVE_API int sive_probe_reset(sive_probe *p);

/**
 * Set an int-typed option.  SIVE_E_INVALID_ARG on NULL, unknown option,
 * wrong type or out-of-range value (bounds compared as integers; the probe
 * is then unchanged and sive_probe_errmsg() says why).
 */
SIVE_API int sive_probe_set_int(sive_probe *p, sive_option opt, int64_t value);
/** Set a double-typed option (see sive_probe_set_int).  Setting SIVE_OPT_H
 *  selects the absolute radius, SIVE_OPT_C_H the adaptive one (c_h = 0:
 *  the radius from the loss); either counts as a radius set for
 *  SIVE_OPT_METROPOLIS' default; NaN clears SIVE_OPT_ANCHOR. */
SIVE_API int sive_probe_set_double(sive_probe *p, sive_option opt,
                                   double value);
/** Read an int-typed option into *value (as set: SIVE_OPT_METROPOLIS
 *  reads -1 until set; what a run chose is its result's). */
SIVE_API int sive_probe_get_int(const sive_probe *p, sive_option opt,
                                int64_t *value);
/** Read a double-typed option into *value (NaN for the radius mode not in
 *  use, and for an unset anchor; c_h reads 1 while no radius is set, even
 *  where SIVE_OPT_METROPOLIS' default will run c_h = 0). */
SIVE_API int sive_probe_get_double(const sive_probe *p, sive_option opt,
                                   double *value);
/**
 * Set an option from text, by name: the generic path for command lines and
 * configuration files.  One grammar for every numeric type, the same in
 * every locale (a host's setlocale() changes nothing): an optional sign,
 * decimal digits, for doubles an optional '.' with digits on either side
 * or both ("5", "5.", ".5", "0.5"; at least one digit) and an optional
 * exponent (e or E, optional sign, digits); no whitespace, no
 * hex, no "inf", nothing after the number.  Int options take the digits
 * only ("1e4" and "10.0" are refused rather than rounded); double options
 * a finite value that does not over- or underflow ("nan", any case, for
 * the anchor only; "auto", any case, for c_h (c_h = 0), and metropolis,
 * kron_every and radius_lookahead (-1)).  The seed, a uint64_t, takes
 * every 64-bit value as text: -2^63 .. 2^64 - 1, a negative one being the
 * bits of 2^64 + seed as with sive_probe_set_int(), which reads a seed above
 * 2^63 - 1 back negative.  value ends at its first NUL: a binding passes text
 * with an embedded NUL ("10\0junk") as an error itself.  Errors as
 * sive_probe_set_int().
 */
SIVE_API int sive_probe_set_text(sive_probe *p, const char *name,
                                 const char *value);

/**
 * Restrict the chains to a subset of the parameters (a weight-restricted
 * probe, docs/guide.md "Refined LLCs"): only theta[i] for i in the ranges
 * move, every other parameter stays at theta*.  ranges holds n_ranges
 * pairs (begin, end), i.e. 2*n_ranges values, each the half-open index
 * range [begin, end), ascending and not overlapping.  n_ranges 0 (ranges
 * may then be NULL) moves all of theta again; so does sive_probe_reset().
 * The ranges are copied (ranges may be freed after the call).
 *
 * The model still returns the full gradient; the chain reads only the
 * moved entries, and a step costs the gradient plus O(k) for the k moved
 * parameters (no copy of theta per step).  k replaces d wherever the
 * probe uses the dimension: the adaptive radius c_h*||theta*_S||/sqrt(k)
 * (S the moved parameters), the DISP trace ||theta - theta*_S||/sqrt(k),
 * and d lambda/d ln h.  Ranges that cover all of theta give the
 * unrestricted run's traces bit for bit (the Langevin noise is drawn for
 * the moved parameters in order; SIVE_OPT_PRECONDITION estimates and
 * applies its P over the moved parameters).  Checked against the model's
 * dim at sive_probe_run() (SIVE_E_INVALID_ARG when a range ends past it).
 * Not thread-safe on the same probe.
 *
 * Errors: SIVE_E_INVALID_ARG (p NULL; ranges NULL with n_ranges > 0; an
 * empty, reversed, unordered or overlapping range: the probe is then
 * unchanged and sive_probe_errmsg() says why), SIVE_E_NOMEM.
 */
SIVE_API int sive_probe_set_params(sive_probe *p, const uint64_t *ranges,
                                   size_t n_ranges);
/**
 * The same as a mask of dim bytes: theta[i] moves when mask[i] != 0
 * (converted to ranges; the mask is not kept).  SIVE_E_INVALID_ARG when
 * mask is NULL, dim is 0 or no byte is set; SIVE_E_NOMEM.
 */
SIVE_API int sive_probe_set_params_mask(sive_probe *p, const unsigned char *mask,
                                        size_t dim);

/**
 * Add an evaluation view (a data-refined probe, docs/guide.md "Refined
 * LLCs"): the chains still follow the run's model (its gradient, its
 * evaluation), and at every evaluated step the view's loss is evaluated
 * too, at the same theta, on N groups of B_eval examples drawn from the
 * view's own streams.  The run's result then holds one result per view
 * (sive_result_view()) with its own Lbar and s2 traces and every
 * statistic computed from them (SIVE, its MCSE, ESS, health): one
 * Langevin path, K refined estimates.  The run's own result is bit for
 * bit what it is without views.
 *
 * view describes the other data as a model does: dtype and dim equal to
 * the run's model's (checked at sive_probe_run()), and a loss callback
 * with its n_examples (another data set, e.g. sive_mlp_model() on a test
 * set) or a group_loss callback (an analytic target); its grad is not
 * used.  The description is copied; view->user is passed to its callbacks
 * and must stay valid while runs use the probe (the same threading rules
 * as a model's callbacks).  subset, when not NULL, restricts the view to
 * n_subset of its examples (strictly ascending indices below
 * view->n_examples, e.g. one class of the training set; copied; needs a
 * loss callback).  name (1 to 63 bytes, copied) names the view in results
 * and tools.  With SIVE_OPT_CONTROL_VARIATE on, a view with a loss
 * callback gets control variates of its own (a pass at theta* over its
 * examples before the chains, with the run's memory rules), a group_loss
 * view stays raw; the view's result says which
 * (sive_result_option_int(view, SIVE_OPT_CONTROL_VARIATE)).  A loss not
 * finite at theta* in that pass fails the run as the run's own does
 * (SIVE_E_INVALID_ARG, naming the view).  sive_result_save() keeps the views, sive_result_merge() merges
 * them view by view (parts must have the same views).
 *
 * Errors: SIVE_E_INVALID_ARG (p or view NULL, a bad name, no loss, a
 * subset out of range or not ascending, more than 64 views; the probe is
 * then unchanged), SIVE_E_NOMEM.  Not thread-safe on the same probe.
 */
SIVE_API int sive_probe_add_eval_view(sive_probe *p, const char *name, const sive_model *view,
                                      const uint64_t *subset, size_t n_subset);
/** Remove every evaluation view (SIVE_E_INVALID_ARG when p is NULL). */
SIVE_API int sive_probe_clear_eval_views(sive_probe *p);

/** Register (or clear, with fn NULL) the progress callback. */
SIVE_API int sive_probe_set_progress(sive_probe *p, sive_progress_fn fn,
                                     void *user);

/** Detail of the last failure on this handle ("" if none; never NULL).
 *  Owned by the handle, valid until its next call. */
SIVE_API const char *sive_probe_errmsg(const sive_probe *p);

/* ------------------------------------------------------------------ */
/* Running                                                            */
/* ------------------------------------------------------------------ */

typedef struct sive_result sive_result;

/**
 * Run the probe on model m from theta_star (m->dim values of m->dtype,
 * only read, never modified).  The options are copied at the start: the
 * probe may be changed or freed after the call returns, and the same probe
 * can run again (each run gives an independent result).
 *
 * The outcome is unambiguous:
 *  - SIVE_OK: *out is a result (free it with sive_result_free()).  How the
 *    run ended is sive_result_status(*out): SIVE_OK (at least one chain
 *    finished; see the health flags), SIVE_E_DIVERGED (every chain
 *    diverged), SIVE_E_CALLBACK (a callback returned non-zero; all chains
 *    stopped) or SIVE_E_CANCELLED (the progress callback asked to stop);
 *    sive_result_errmsg() explains every non-OK status.  Chains that
 *    finished are summarised in every case.
 *  - any other status: *out is NULL, no chain ran, and sive_probe_errmsg()
 *    says why: SIVE_E_INVALID_ARG (NULL pointer; bad model description:
 *    struct_size, dtype, dim, missing callbacks, per-example losses without
 *    a data set; non-finite theta*; zero adaptive radius; a tail window
 *    with fewer than 4 evaluated steps; B > n_examples without
 *    replacement; control variates with a group-only model or a loss that
 *    is not finite at theta*, the run's or an evaluation view's, found by
 *    the pass at theta* or, beyond the table limit, by a step's
 *    recomputation (then chains may have run); gradient control variates without a data
 *    set or with a gradient that is not finite at theta*), SIVE_E_NOMEM.
 */
SIVE_API int sive_probe_run(sive_probe *p, const sive_model *m,
                            const void *theta_star, sive_result **out);

/**
 * Take the radius h that an earlier run chose from the loss (c_h = auto,
 * or the defaults on an exact loss) instead of searching again: for the
 * parts of a split run (SIVE_OPT_CHAIN_BEGIN/_END), which would otherwise
 * each repeat the search's pilot runs and, with SIVE_OPT_METROPOLIS, its
 * full-length check of all chains (docs/scale.md, "Parts and the radius
 * from the loss").  r is the earlier run's result (a whole run, a part,
 * a merged or a loaded one) and is only read; the probe keeps what it
 * needs, so r may be freed afterwards.  Until reset (r NULL, or
 * sive_probe_reset()), every sive_probe_run() of p runs its chains at r's
 * h with no search, and its health text has r's "radius: " line (the
 * search's, so the parts' lines are the whole run's and
 * sive_result_merge() keeps it); its numbers are those of a run that
 * searched and chose the same h, bit for bit.  Such a run is refused
 * (SIVE_E_INVALID_ARG, at sive_probe_run()) unless its radius comes from
 * the loss and its options (threads and the chain range excepted), model
 * (dtype, dim, n_examples, identity), theta* and moved parameters
 * (sive_probe_set_params()) are r's.  Not thread-safe on the same probe;
 * r may be read by others meanwhile.  Errors:
 * SIVE_E_INVALID_ARG (p NULL; r's radius was not chosen from the loss, or
 * its run did not complete), SIVE_E_NOMEM; the probe is then unchanged (a
 * radius taken before is kept).
 */
SIVE_API int sive_probe_set_radius_from(sive_probe *p, const sive_result *r);

/* ------------------------------------------------------------------ */
/* Results                                                            */
/* ------------------------------------------------------------------ */

/** Free a result (NULL is a no-op). */
SIVE_API void sive_result_free(sive_result *r);

/** How the run ended (see sive_probe_run); SIVE_E_INVALID_ARG if r is NULL. */
SIVE_API int sive_result_status(const sive_result *r);
/** Why the run ended as it did ("" for SIVE_OK; never NULL; owned by r). */
SIVE_API const char *sive_result_errmsg(const sive_result *r);
/** The non-zero value of the callback that stopped the run (0 if none). */
SIVE_API int sive_result_callback_code(const sive_result *r);

/** Pass as chain to a getter to ask for the summary over finished chains. */
#define SIVE_SUMMARY (-1)

/**
 * Per-chain statistics.  Those of the loss (Lbar, s2) are computed on the
 * tail window T: the evaluated steps m >= floor(alpha*M).  Lbar_m is the
 * mean of the N group losses at step m, s2_m their sample variance (ddof
 * 1).  RMS_DISP_REL_H and STEP_CURVATURE, from the displacement and the
 * gradient known at every step, average every tail step m >=
 * floor(alpha*M), evaluated or not (the same steps as T unless
 * eval_stride > 1).  See docs/theory.md.  Values are pinned; new statistics are appended;
 * sive_stat_name() returns NULL past the last one.
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
    /** Monte Carlo std error of SIVE unclipped.  The autocorrelation time
     *  of its series is pooled over the run's finished chains, so a chain's
     *  MCSE depends on the other chains of its run (a part of a split run
     *  pools its own; sive_result_merge() recomputes over all). */
    SIVE_STAT_MCSE = 10,
    SIVE_STAT_ESS = 11,           /**< tail ESS of Lbar (summary: multi-chain)   */
    SIVE_STAT_RHAT = 12,          /**< split-Rhat of Lbar (summary only)         */
    SIVE_STAT_H = 13,             /**< localisation radius h used                */
    SIVE_STAT_TETHER_STEP = 14,   /**< eta / h^2                                 */
    SIVE_STAT_GRAD_NORM2_START = 15, /**< ||g_0||^2, gradient batch at theta*   */
    SIVE_STAT_SLOPE_PROXY = 16,   /**< t^2 h^2 ||g_0||^2                         */
    /** mean (||theta-theta*||/sqrt d) / h over every tail step m >=
     *  floor(alpha*M) (not only T's evaluated ones) */
    SIVE_STAT_RMS_DISP_REL_H = 17,
    SIVE_STAT_TAIL_LENGTH = 18,   /**< |T|, evaluated steps in the tail          */
    SIVE_STAT_SIVE_ESS = 19,      /**< ESS of the SIVE estimator's per-step
                                       influence series (what its MCSE uses;
                                       pooled like it)                        */
    /** Signed z of the halves test behind SIVE_FLAG_NONSTATIONARY: (mean of
     *  the first half of the Lbar tail - mean of the last half) over the
     *  standard error of that difference (the MCSE estimator, pooled over
     *  the run's chains); ~ N(0, 1) on a stationary tail.  Summary: mean
     *  over chains. */
    SIVE_STAT_HALVES_Z = 20,
    /** d lambda / d ln h: how the estimate moves with the radius, from the
     *  chain itself: t^2 Cov_T(y, ||theta - theta*||^2 / h^2), y the SIVE
     *  influence series (exact for the tethered law; docs/theory.md,
     *  "Localisation").  Near 0 when the radius does not cut the
     *  fluctuations; SIVE_FLAG_RADIUS_BOUND compares it with lambda-hat. */
    SIVE_STAT_DLAMBDA_DLOG_H = 21,
    /** Its Monte Carlo standard error (pooled like the MCSE; summary in
     *  quadrature, sqrt(sum se_c^2)/K). */
    SIVE_STAT_DLAMBDA_DLOG_H_SE = 22,
    /** a t mean ||g_m||^2 over every tail step m >= floor(alpha*M) (not
     *  only T's evaluated ones): step times curvature
     *  (= a E[tr Hess L] for the exact law; for a quadratic direction of
     *  curvature H it adds aH/(1 - aH/2)); over 2 lambda-hat it is the
     *  share of lambda-hat due to the finite step (SIVE_FLAG_STEP_BIAS). */
    SIVE_STAT_STEP_CURVATURE = 23,
    /** With SIVE_OPT_STEP_EXTRAPOLATE: the unclipped SIVE extrapolated to
     *  a step of 0, 2 lambda(a/2) - lambda(a), from this chain and its
     *  paired chain at base_lr/2; NaN otherwise (and after
     *  sive_result_load() or sive_result_merge(), which keep only the
     *  chains at base_lr). */
    SIVE_STAT_SIVE_STEP0 = 24,
    /** Its Monte Carlo standard error, from the paired influence series
     *  2 y(a/2) - y(a) (pooled like the MCSE; summary in quadrature). */
    SIVE_STAT_MCSE_STEP0 = 25,
    /** With SIVE_OPT_GRAD_EXTRAPOLATE: the unclipped SIVE extrapolated to
     *  the full-batch chain, w lambda(2B) - (w - 1) lambda(B), from this
     *  chain and its paired chain at 2 B_grad; NaN otherwise (and after
     *  sive_result_load() or sive_result_merge()). */
    SIVE_STAT_SIVE_FULL_BATCH = 26,
    /** Its Monte Carlo standard error, from the paired influence series
     *  w y(2B) - (w - 1) y(B) (pooled like the MCSE; summary in
     *  quadrature). */
    SIVE_STAT_MCSE_FULL_BATCH = 27,
    /** With SIVE_OPT_GRAD_NOISE_COMPENSATION: the share of the estimated
     *  gradient noise X = a^2 C / (2 eta) the compensation could not
     *  remove because it exceeds the injected noise (the clipped part of
     *  tr X: sum max(0, x - 1) over the coordinates, or over X's
     *  eigenvalues with SIVE_OPT_GRAD_NOISE_FULL), over tr X, both summed
     *  over the tail steps; 0 when nothing clipped, NaN without
     *  compensation (and after sive_result_load() or sive_result_merge()).
     *  Above 0.05 the health text says so. */
    SIVE_STAT_GRAD_NOISE_CLIPPED = 28,
    /** With the experimental option anneal > 1 (sive/experimental.h) and
     *  at least one chain of each kind: the signed z of the start test.
     *  Two Welch tests of hot- minus cold-started chains, of the unclipped
     *  SIVE and of t times the tail mean loss, each group's standard error
     *  from its own chains (autocorrelation pooled over the group), t
     *  mapped to the normal deviate of its tail probability at the
     *  Welch-Satterthwaite degrees of freedom; the two combined by
     *  Bonferroni (the smaller tail probability doubled, as a normal
     *  deviate with that test's sign).  |z| > 3 raises
     *  SIVE_FLAG_START_DEPENDENT, in at most 0.27 % of runs whose chains
     *  sample one law (docs/theory.md, "Annealed burn-in").  Summary only;
     *  NaN otherwise. */
    SIVE_STAT_START_Z = 29,
    /** The start test's two parts (SIVE_STAT_START_Z combines them): the
     *  signed z of the Welch test of hot- minus cold-started chains'
     *  unclipped SIVE (START_Z_LAMBDA) and of t times their tail mean loss
     *  (START_Z_MEAN), each before the Bonferroni combination.  Summary
     *  only; NaN without anneal > 1 or a chain of each kind.  Recomputed
     *  from the traces, so they survive sive_result_load() and merges. */
    SIVE_STAT_START_Z_LAMBDA = 30,
    SIVE_STAT_START_Z_MEAN = 31,
    /** With the experimental option auto_step > 0 (sive/experimental.h):
     *  the tail's gradient calls per step (every trajectory of the step
     *  selection and of its reverse check counted; a plain Hamiltonian
     *  step of the same leapfrog costs its moves alone), per chain and
     *  their mean.  NaN otherwise, and, measured while the chains step,
     *  after sive_result_load() or sive_result_merge(). */
    SIVE_STAT_AUTO_STEP_GRADS = 32,
    /** With auto_step > 0: the share of the tail's moves whose chosen step
     *  is not the base step (halved or doubled at least once, j != 0; the
     *  health text gives each j's share), per chain and their mean.  NaN
     *  otherwise, and after sive_result_load() or sive_result_merge(). */
    SIVE_STAT_AUTO_STEP_RESCALED = 33
} sive_stat;

/** Stable machine name of a statistic ("sive", "mcse", ...), used as the
 *  JSON/CSV key by every tool; NULL for an unknown value. */
SIVE_API const char *sive_stat_name(sive_stat stat);

/** How a statistic's summary (SIVE_SUMMARY) combines the chains. */
typedef enum sive_stat_pool {
    /** The mean over the chains that finished; sive_result_stat_std() is
     *  their spread. */
    SIVE_POOL_MEAN = 0,
    /** A standard error: the standard error of the mean over K chains,
     *  sqrt(sum se_c^2)/K. */
    SIVE_POOL_QUADRATURE = 1,
    /** Computed from every chain's series together (the multi-chain ESS);
     *  each chain also has its own value. */
    SIVE_POOL_ALL_CHAINS = 2,
    /** Exists only as a summary (split-Rhat): per-chain values are NaN. */
    SIVE_POOL_SUMMARY_ONLY = 3
} sive_stat_pool;

/**
 * Everything the library knows about one statistic (static storage, never
 * modified; members are only appended).  The CLI and the bindings write
 * each statistic from this table: `scalar` 1 means the summary is written
 * as one number (a standard error, ESS, Rhat, or a correction whose spread
 * over chains is not reported), 0 as {mean, std} over chains.
 */
typedef struct sive_stat_info {
    sive_stat id;
    const char *name;    /**< sive_stat_name(id)                         */
    sive_stat_pool pool; /**< how the summary combines the chains        */
    int scalar;          /**< 1: tools write the summary alone           */
    const char *doc;     /**< one line: what it measures                 */
} sive_stat_info;

/**
 * Information about a statistic, or NULL for an unknown value.  To list
 * all statistics, call sive_stat_at(i) for i = 0, 1, ... until it returns
 * NULL (row i describes statistic i).  Thread-safe; no error message.
 */
SIVE_API const sive_stat_info *sive_stat_info_get(sive_stat stat);
/** The i-th statistic in the table (i from 0), or NULL past the end. */
SIVE_API const sive_stat_info *sive_stat_at(size_t i);

/**
 * A statistic for one chain (0 .. chains-1) or, with SIVE_SUMMARY, the mean
 * over the chains that finished (for ESS: the multi-chain ESS; for RHAT: the
 * split-Rhat, which exists only as a summary; for MCSE and the noise
 * correction's std: the standard error of the mean over chains,
 * sqrt(sum se_c^2)/K).  NaN when r is NULL, stat or chain is out of range,
 * the chain diverged, or the value is undefined (anchored mean without
 * anchor).  A chain stopped early by a callback error or a cancel
 * (SIVE_CHAIN_CALLBACK, SIVE_CHAIN_ABORTED) has its own statistics from the
 * steps it ran (tail: the last 1 - alpha of them; NaN when that tail holds
 * fewer than 4 evaluated steps), which never enter the summaries.
 */
SIVE_API double sive_result_stat(const sive_result *r, sive_stat stat,
                                 int32_t chain);
/** Sample standard deviation (ddof 1) of a per-chain statistic over the
 *  chains that finished; NaN with fewer than 2. */
SIVE_API double sive_result_stat_std(const sive_result *r, sive_stat stat);

/**
 * Convenience: the SIVE estimate lambda-hat, the mean over finished chains
 * of each chain's clipped estimate max(0, lambda_c) (SIVE_STAT_SIVE,
 * SIVE_SUMMARY).  When no chain is clipped (no SIVE_FLAG_NEGATIVE_SIVE) it
 * equals the mean of the unclipped estimates (SIVE_STAT_SIVE_UNCLIPPED,
 * SIVE_SUMMARY) bit for bit, and sive_result_mcse() is its standard
 * error.  With a clipped chain it lies above that mean, and the MCSE
 * belongs to the unclipped mean: report SIVE_STAT_SIVE_UNCLIPPED with it.
 * NaN when a finished chain's estimate is NaN.
 */
SIVE_API double sive_result_lambda(const sive_result *r);
/** Convenience: standard deviation of lambda-hat over chains. */
SIVE_API double sive_result_lambda_std(const sive_result *r);
/** Convenience: MCSE of the mean of the chains' unclipped SIVE estimates
 *  (SIVE_STAT_SIVE_UNCLIPPED); see sive_result_lambda() for when that is
 *  lambda-hat's. */
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
/**
 * The parameter ranges the chains moved (sive_probe_set_params): *n_ranges
 * (begin, end) pairs, owned by r and valid until sive_result_free(); NULL
 * and 0 when they moved all of theta (or r is NULL).  n_ranges may be
 * NULL.  Kept by sive_result_save() and sive_result_merge().
 */
SIVE_API const uint64_t *sive_result_params(const sive_result *r, size_t *n_ranges);
/** The number k of parameters the chains moved: the model's dim for an
 *  unrestricted probe (0 if r is NULL). */
SIVE_API uint64_t sive_result_params_dim(const sive_result *r);
/**
 * The precision of the model the run probed: SIVE_F32 or SIVE_F64 (the
 * model's sive_model.dtype), for a result of sive_probe_run() or
 * sive_probe_sweep(), of sive_result_load() or sive_result_from_bytes()
 * (every result format version, 1 from libsive 0.2.0 on, stores it, and a
 * file with any other value is SIVE_E_FORMAT: it is read, never guessed),
 * of sive_result_merge() (which refuses parts of different precisions) and
 * for a view (sive_result_view(): the run's).  SIVE_DTYPE_UNKNOWN if r is
 * NULL.  Thread safety: like every result getter (r is only read).
 */
SIVE_API sive_dtype sive_result_dtype(const sive_result *r);
/** The number of evaluation views of the run (sive_probe_add_eval_view();
 *  0 if r is NULL). */
SIVE_API size_t sive_result_views(const sive_result *r);
/**
 * View k's result (k < sive_result_views(r), else NULL): a result like
 * the run's, read with the same getters (owned by r, valid until
 * sive_result_free(r); not to be freed, saved or merged on its own: r is).  Its LBAR and S2
 * traces are the view's; its other traces, chain statuses and options are
 * the run's; sive_result_status() is the run's.
 */
SIVE_API const sive_result *sive_result_view(const sive_result *r, size_t k);
/** View k's name (owned by r), or NULL. */
SIVE_API const char *sive_result_view_name(const sive_result *r, size_t k);
/**
 * The option values the run used (the copy frozen at its start, with
 * SIVE_OPT_METROPOLIS' default resolved: 0 or 1, never -1, and c_h = 0
 * when that default chose the radius from the loss).
 * SIVE_E_INVALID_ARG for NULL arguments, an unknown option or the wrong
 * type.  The radius actually used is sive_result_stat(r, SIVE_STAT_H, ...).
 */
SIVE_API int sive_result_option_int(const sive_result *r, sive_option opt,
                                    int64_t *value);
/** Double-typed counterpart of sive_result_option_int(). */
SIVE_API int sive_result_option_double(const sive_result *r, sive_option opt,
                                       double *value);

/** How a chain ended. */
typedef enum sive_chain_status {
    SIVE_CHAIN_OK = 0,        /**< ran all M steps                            */
    SIVE_CHAIN_DIVERGED = 1,  /**< non-finite loss, gradient or parameter      */
    SIVE_CHAIN_CALLBACK = 2,  /**< its callback returned non-zero              */
    SIVE_CHAIN_ABORTED = 3,   /**< stopped: another chain failed or cancelled  */
    SIVE_CHAIN_NOT_RUN = 4,   /**< outside this run's chain range (no traces)  */
    SIVE_CHAIN_INVALID = -1   /**< r NULL or chain out of range                */
} sive_chain_status;

/** Status of a chain; *step (may be NULL) receives the step at which it
 *  diverged or stopped (M for a finished chain). */
SIVE_API sive_chain_status sive_result_chain_status(const sive_result *r,
                                                    int32_t chain,
                                                    int64_t *step);
/** Stable machine name of a chain status ("ok", "diverged", "callback",
 *  "aborted", "not_run", "invalid"); NULL for an unknown value. */
SIVE_API const char *sive_chain_status_string(sive_chain_status status);

/** Per-step traces.  Each has one entry per step actually run (M for a
 *  finished chain); LBAR and S2 are NaN at steps that were not evaluated
 *  (eval stride > 1); GRAD_LOSS is NaN when the callback did not report it.
 *  Values are pinned; sive_trace_name() returns NULL past the last one. */
typedef enum sive_trace {
    SIVE_TRACE_LBAR = 0,      /**< Lbar_m: mean of the N group losses          */
    SIVE_TRACE_S2 = 1,        /**< s2_m: their sample variance (ddof 1)        */
    SIVE_TRACE_GRAD_LOSS = 2, /**< loss reported by the gradient callback      */
    SIVE_TRACE_GRAD_NORM = 3, /**< ||g_m||_2                                   */
    SIVE_TRACE_DISP = 4       /**< ||theta_m - theta*||_2 / sqrt(d)            */
} sive_trace;

/** Stable machine name of a trace ("lbar", "s2", "grad_loss", "grad_norm",
 *  "disp"); NULL for an unknown value. */
SIVE_API const char *sive_trace_name(sive_trace which);

/**
 * Borrow a trace of one chain.  Returns a pointer owned by r (valid until
 * sive_result_free) and stores its length in *len; NULL (and *len = 0) for
 * invalid arguments.  len may not be NULL.
 */
SIVE_API const double *sive_result_trace(const sive_result *r, sive_trace which,
                                         int32_t chain, size_t *len);

/** Health flags (bit mask).  Bits are pinned; new ones are appended. */
enum {
    SIVE_FLAG_DIVERGED = 1u << 0,       /**< some chain diverged               */
    SIVE_FLAG_NEGATIVE_SIVE = 1u << 1,  /**< unclipped SIVE < 0 on some chain  */
    SIVE_FLAG_NONSTATIONARY = 1u << 2,  /**< tail halves disagree (|z| > 4)    */
    SIVE_FLAG_LOW_ESS = 1u << 3,        /**< a chain's tail ESS < 100          */
    SIVE_FLAG_HIGH_RHAT = 1u << 4,      /**< split-Rhat > 1.05                 */
    SIVE_FLAG_NOISY_CORRECTION = 1u << 5,/**< std of C > |lambda-hat|          */
    SIVE_FLAG_ABORTED = 1u << 6,        /**< run stopped early                 */
    SIVE_FLAG_DOMINANT_CORRECTION = 1u << 7, /**< C > 10 |lambda-hat|: lambda-hat
                                             is a small difference of large
                                             numbers                          */
    SIVE_FLAG_CHART = 1u << 8,          /**< a chain's tail displacement from
                                             theta* is > 3 h (it left its
                                             chart) or < 0.01 h and still
                                             growing (it barely moves)        */
    SIVE_FLAG_IMPRECISE = 1u << 9,      /**< summary MCSE > 0.3 |lambda-hat|:
                                             run longer or more chains        */
    SIVE_FLAG_RADIUS_BOUND = 1u << 10,  /**< the radius cuts the fluctuations:
                                             d ln lambda / d ln h > 0.1, more
                                             than 2 standard errors above 0,
                                             on a stationary tail (raise h or
                                             c_h)                             */
    SIVE_FLAG_STEP_BIAS = 1u << 11,     /**< the step is large for the loss's
                                             curvature: STEP_CURVATURE >
                                             0.1 lambda-hat, i.e. the finite
                                             step adds > 5 % to lambda-hat;
                                             near the stability limit it
                                             grows without bound (lower
                                             base_lr, raise grad_batch, or
                                             SIVE_OPT_STEP_EXTRAPOLATE)       */
    SIVE_FLAG_UNSTABLE = 1u << 12,      /**< a few spikes make the variance:
                                             on some chain the largest 0.1 %
                                             of the tail's squared loss
                                             deviations carry > 20 % of it
                                             (the step near its stability
                                             limit; lower base_lr, or h); or
                                             a climb: t (mean tail loss -
                                             loss at theta*) > 1.5 (1 + step
                                             share) d/2 on some chain; or
                                             lambda-hat > 3 (1 + step share)
                                             (t (mean - loss at theta*) +
                                             slope proxy), by 4 SE, where
                                             that sum is positive         */
    SIVE_FLAG_START_DEPENDENT = 1u << 13 /**< with the experimental option
                                             anneal > 1: the chains started
                                             hot (annealed burn-in) and the
                                             odd chains started cold at
                                             theta* disagree in lambda-hat
                                             or mean tail loss, |z| > 3
                                             (SIVE_STAT_START_Z): a slow
                                             mode the cold chains have not
                                             relaxed (raise steps, or
                                             anneal)                        */
};

/** The health flags raised for this result (0 = nothing to report). */
SIVE_API uint32_t sive_result_flags(const sive_result *r);
/** Plain-language description of one flag bit (static; "" if unknown). */
SIVE_API const char *sive_flag_string(uint32_t flag);
/** Stable machine name of one flag bit ("diverged", "negative_sive",
 *  "nonstationary", "low_ess", "high_rhat", "noisy_correction", "aborted",
 *  "dominant_correction", "chart", "imprecise", "radius_bound",
 *  "step_bias", "unstable", "start_dependent"); NULL if unknown. */
SIVE_API const char *sive_flag_name(uint32_t flag);
/** All raised flags explained, one line each with the numbers behind them
 *  ("" when healthy).  Owned by r. */
SIVE_API const char *sive_result_health(const sive_result *r);

/* ------------------------------------------------------------------ */
/* Sweeps: one option over a list of values (calibration)             */
/* ------------------------------------------------------------------ */

/**
 * Run probe p on model m from theta_star once per value of one option:
 * run i uses a copy of p's options with opt set to values[i] (the copy is
 * made here; p itself is not changed, except for its error message).  No
 * statistics of its own: out[i] is the result sive_probe_run() gives for
 * that setting, read it with the sive_result_* getters.
 *
 * Common random numbers: every value runs with p's seed, so the chains of
 * different values share their Langevin noise and batch draws, and the
 * differences between values are not chain noise.  The seed itself cannot
 * be swept.  Int-typed options take integral values (e.g. 64.0 for
 * SIVE_OPT_GROUPS).  Setting SIVE_OPT_H or SIVE_OPT_C_H selects that radius
 * mode for the runs, as sive_probe_set_double() does.
 *
 * parallel >= 1 is the number of values run at the same time: slot 0 on
 * the calling thread, slots 1 .. parallel-1 on their own threads (each run
 * still uses SIVE_OPT_THREADS workers for its chains).  Parallel runs never
 * share a worker number: slot s sees batch->worker offset by s * w (in
 * the model's callbacks and in its evaluation views'), w =
 * min(threads, chains) (the largest swept value when the sweep is over
 * threads or chains), so a model that keeps per-worker scratch must accept
 * worker numbers up to parallel * w - 1 (the bundled MLP model accepts
 * 1024, and its per-worker workspaces then are never shared: one
 * sive_mlp_model() serves all the slots).  The model's callbacks must be thread-safe when parallel > 1, as
 * for threads > 1; the progress callback of p is used by every run and is
 * then called from several threads at once.  Results do not depend on
 * parallel.
 *
 * out points to an array of n result pointers, filled by the call.
 *  - SIVE_OK: every out[i] is a result (its status may still be DIVERGED
 *    or CALLBACK, see sive_probe_run()); the caller frees each with
 *    sive_result_free().
 *  - SIVE_E_CANCELLED: the progress callback stopped a run; no further
 *    value is started, every out[i] is NULL (results already made are
 *    freed) and sive_probe_errmsg(p) names the value.
 *  - any other status: every out[i] is NULL (results already made are
 *    freed) and sive_probe_errmsg(p) names the value that failed:
 *    SIVE_E_INVALID_ARG (NULL argument, n == 0, parallel < 1, unknown
 *    option, the seed, a value out of the option's bounds or not integral
 *    for an int option -- checked for every value before anything runs --
 *    or a run refused the model or theta*), SIVE_E_NOMEM.
 * Thread safety: p is used by the call (one thread at a time, as for
 * sive_probe_run()); m is only read.
 */
SIVE_API int sive_probe_sweep(sive_probe *p, const sive_model *m,
                              const void *theta_star, sive_option opt,
                              const double *values, size_t n,
                              int32_t parallel, sive_result **out);

/* ------------------------------------------------------------------ */
/* Partial runs: merging and result files                             */
/* ------------------------------------------------------------------ */

/**
 * The chain range [*begin, *end) a result computed (the whole run: 0 and
 * sive_result_chains(r)).  Chains outside it have status
 * SIVE_CHAIN_NOT_RUN.  SIVE_E_INVALID_ARG for NULL arguments.
 * Thread safety: like every result getter.
 */
SIVE_API int sive_result_chain_range(const sive_result *r, int32_t *begin,
                                     int32_t *end);

/**
 * Merge results of disjoint chain ranges of one probe into the result the
 * whole run would have given: the same per-chain values, traces,
 * summaries, ESS, R-hat, flags, health text and status, bit for bit, but
 * for the run notes that summarise a part's own chains.  The run notes are
 * the lines a run adds to its health text after the flags' lines
 * ("metropolis: ...", "delayed rejection ...", "replicas R: ...",
 * "orbit moves ...", "low-rank preconditioner ...", "auto_step ...",
 * "grad_noise_compensation: ...", "defaults: ...", "radius: ..."): a line every part has verbatim (the defaults', the
 * radius search's) is kept once, as the whole run has it; a line that
 * differs (a sampler's acceptance over the part's chains) is kept once per
 * part, by first chain, as "key (chains a..b): rest", key being the
 * line's text before its first ": " (a key that already ends in such a
 * tag keeps it alone; docs/scale.md, "Run notes").
 *
 * parts[0 .. n-1] (n >= 1, any order) must have equal options (the chain
 * range and the thread count excepted), radius, model dtype, dim,
 * n_examples and identity, theta* hash and moved parameters
 * (sive_probe_set_params()), must each have ended with SIVE_OK or
 * SIVE_E_DIVERGED (a part stopped by a callback or a cancel cannot be
 * completed by the others), and their ranges must cover 0 .. chains-1
 * exactly once.  The merged result reports the range [0, chains) and the
 * threads of parts[0].
 *
 * Ownership: the parts are only read (and stay owned by the caller); *out
 * is a new result to free with sive_result_free().  *out is NULL on every
 * failure.  Thread safety: parts may be read concurrently by others.
 * Errors (message in sive_last_errmsg()): SIVE_E_INVALID_ARG (NULL, n 0,
 * mismatched configuration or theta*, overlapping or missing chains, a
 * part that failed), SIVE_E_NOMEM.
 */
SIVE_API int sive_result_merge(sive_result **out,
                               const sive_result *const *parts, size_t n);

/**
 * Save a result to path: options, radius, model dtype/dim/n_examples,
 * theta* hash, chain range, status and message, and per chain its status,
 * stop step and traces (statistics are recomputed on load, so they cannot
 * disagree with the traces; so is the health text's flags' part, and the
 * run's notes after it are stored: a loaded result's health text is the
 * run's, byte for byte; at most 256 MiB of them, which only a merge of
 * about a million parts exceeds).  note (may be NULL) is an opaque text of the
 * caller's, at most 1 MiB, kept verbatim (e.g. the CLI's checkpoint
 * metadata).  The format is versioned and checksummed (docs/scale.md) and
 * the file is written atomically: a temporary beside path, fsynced, then
 * renamed; on failure path is untouched.  Thread safety: r may be read by
 * others meanwhile.  Errors (sive_last_errmsg()): SIVE_E_INVALID_ARG,
 * SIVE_E_IO, SIVE_E_NOMEM.
 */
SIVE_API int sive_result_save(const sive_result *r, const char *path,
                              const char *note);

/**
 * Load a result written by sive_result_save().  *out receives a new result
 * (free with sive_result_free()); note (may be NULL) receives the saved
 * note as a new NUL-terminated string to free with sive_free() (an empty
 * string when none was saved).  Both are NULL on failure.  Reads format
 * versions 1 (libsive 0.2.0) to 5 (formats 1-4 hold no run notes: their
 * health text is the flags' lines only).  A damaged, truncated or foreign file
 * is SIVE_E_FORMAT, never a wrong result.
 * Errors (sive_last_errmsg()): SIVE_E_INVALID_ARG, SIVE_E_IO,
 * SIVE_E_FORMAT, SIVE_E_NOMEM.  Thread safe (no shared state).
 */
SIVE_API int sive_result_load(const char *path, sive_result **out,
                              char **note);

/**
 * The bytes sive_result_save() would write, in memory (for a message
 * between processes, a database, a socket).  *bytes receives a new buffer
 * of *len bytes (free with sive_free()); both are NULL/0 on failure.  note
 * as in sive_result_save().  Thread-safe: r is only read.  Errors
 * (sive_last_errmsg()): SIVE_E_INVALID_ARG (NULL argument, note above
 * 1 MiB), SIVE_E_NOMEM.
 */
SIVE_API int sive_result_to_bytes(const sive_result *r, const char *note,
                                  void **bytes, size_t *len);

/**
 * A result from len bytes written by sive_result_to_bytes() or read from a
 * result file: the same checks as sive_result_load() (whole-buffer length
 * and checksum first, then every field), so damaged or foreign bytes are
 * SIVE_E_FORMAT, never a wrong result (0 bytes too: bytes may then be NULL,
 * as an empty file).  bytes is only read and may be freed afterwards.
 * *out and note as in sive_result_load().  Thread-safe.
 * Errors (sive_last_errmsg()): SIVE_E_INVALID_ARG, SIVE_E_FORMAT,
 * SIVE_E_NOMEM.
 */
SIVE_API int sive_result_from_bytes(const void *bytes, size_t len,
                                    sive_result **out, char **note);

/* ------------------------------------------------------------------ */
/* The retrospective estimator (docs/theory.md)                       */
/* ------------------------------------------------------------------ */

/**
 * The retrospective LLC estimator of a training trajectory (the paper's
 * Section 4.2): chain c of the probe at checkpoint k gives
 *   t (mean_T Lbar_c(k) - L*_c),  L*_c = min_T Lbar_c at the FINAL checkpoint,
 * so it is known only once the final checkpoint was probed.  Probe every
 * checkpoint with the same options (seed included): chain c then draws the
 * same random streams everywhere and the chains pair by index.  A chain
 * that did not finish (in r or in the final result) gives NaN.
 *
 * sive_retrospective_anchor() writes the n = sive_result_chains(final)
 * anchors L*_c (SIVE_STAT_TAIL_MIN_LOSS of each finished chain, NaN for
 * the others).  Errors: SIVE_E_INVALID_ARG (NULL argument, n not the
 * result's chain count).  Thread-safe: final is only read.
 */
SIVE_API int sive_retrospective_anchor(const sive_result *final,
                                       double *anchor, size_t n);

/**
 * The retrospective lambda-hat of each of the n = sive_result_chains(r)
 * chains of r against anchor (from sive_retrospective_anchor() of the
 * final checkpoint's result), with r's t: lambda[c] =
 * sive_retrospective_values() of r's SIVE_STAT_TAIL_MEAN_LOSS (NaN for a
 * chain that did not finish).  Errors: SIVE_E_INVALID_ARG (NULL argument,
 * n not the result's chain count).  Thread-safe: r is only read.
 */
SIVE_API int sive_retrospective(const sive_result *r, const double *anchor,
                                size_t n, double *lambda);

/**
 * The same estimator on numbers, for a caller that keeps only each
 * checkpoint's per-chain tail mean loss (SIVE_STAT_TAIL_MEAN_LOSS) rather
 * than its result (a trajectory of large results): lambda[c] =
 * t (tail_mean[c] - anchor[c]) for c < n, NaN in, NaN out.  lambda may
 * alias tail_mean.  Errors: SIVE_E_INVALID_ARG (NULL argument, t not a
 * positive finite number).  Thread-safe.
 */
SIVE_API int sive_retrospective_values(double t, const double *tail_mean,
                                       const double *anchor, size_t n,
                                       double *lambda);

/* ------------------------------------------------------------------ */
/* Calibration rules (docs/calibration.md)                            */
/* ------------------------------------------------------------------ */

/**
 * One swept value's numbers, the input of sive_calibrate() (NaN where
 * unknown).  A plain value type; fill it by hand or with
 * sive_calib_row_from_result().  Its layout is part of the LIBSIVE_0.3 ABI.
 */
typedef struct sive_calib_row {
    double value;        /**< the swept option's value                      */
    double lambda;       /**< lambda-hat, mean over chains                  */
    double se;           /**< its standard error                            */
    double ess, rhat;    /**< multi-chain ESS of L-bar, split-R-hat         */
    double nc, nc_std;   /**< noise correction C and its std                */
    int ok;              /**< 1: a chain finished and none diverged/aborted */
    const double *chain; /**< per-chain lambda-hat (NaN: failed), or NULL;
                              borrowed: must outlive the sive_calibrate call */
    size_t chains;       /**< entries of chain                              */
} sive_calib_row;

/** The three plateau rules (docs/calibration.md). */
typedef enum sive_calib_rule {
    SIVE_CALIB_RULE_H = 0,      /**< h or c_h: the onset of the plateau      */
    SIVE_CALIB_RULE_STEP = 1,   /**< base_lr: the stable range              */
    SIVE_CALIB_RULE_GROUPS = 2  /**< groups (N): the noise correction settles */
} sive_calib_rule;

/** Default tolerances of sive_calibrate() (tol <= 0 or NaN selects them). */
#define SIVE_CALIB_H_TOL 0.10   /**< h rule: lambda-hat within 10 %          */
#define SIVE_CALIB_NC_FRAC 0.10 /**< groups rule: nc_std below 10 % of lambda */

/** What a rule found.  Its layout is part of the LIBSIVE_0.3 ABI. */
typedef struct sive_calib_verdict {
    int found;        /**< 1: a recommendation (rows[pick].value)         */
    int noisy;        /**< 1: the errors are too large to decide          */
    size_t pick;      /**< the recommended row, when found                */
    size_t lo, hi;    /**< the plateau / stable range, rows lo..hi        */
    char reason[512]; /**< why (or why not), one sentence                 */
    char hint[256];   /**< what to try when nothing was found ("" if found) */
} sive_calib_verdict;

/**
 * The rule that calibrates opt: SIVE_OPT_H and SIVE_OPT_C_H the h rule,
 * SIVE_OPT_BASE_LR the step rule, SIVE_OPT_GROUPS the groups rule.
 * Errors: SIVE_E_INVALID_ARG (NULL rule, or an option without a rule).
 * Thread-safe.
 */
SIVE_API int sive_calib_rule_of(sive_option opt, sive_calib_rule *rule);

/**
 * The row of a sweep's value from its result r: lambda-hat and its SE (the
 * std over chains / sqrt(chains_ok) with >= 2 finished chains, else the
 * pooled MCSE), ESS, R-hat, the noise correction and its std, and ok.  With
 * chain non-NULL (room for cap >= sive_result_chains(r) doubles, the
 * caller's) each chain's lambda-hat goes there (NaN for a chain that did
 * not finish) and row->chain points to it, so that the h rule pairs the
 * chains across values; with chain NULL the row is unpaired.  Thread-safe:
 * r is only read.  Errors: SIVE_E_INVALID_ARG (NULL r or row, cap too
 * small).
 */
SIVE_API int sive_calib_row_from_result(const sive_result *r, double value,
                                        double *chain, size_t cap,
                                        sive_calib_row *row);

/**
 * Apply rule to the n >= 1 rows of a sweep, sorted by value ascending, into
 * *v (cleared first).  Pure: the same rows give the same verdict, bit for
 * bit and word for word.  tol is the h rule's tolerance (default
 * SIVE_CALIB_H_TOL) or the groups rule's fraction (default
 * SIVE_CALIB_NC_FRAC); the step rule ignores it; tol <= 0 or NaN selects
 * the default.
 *  - h: the smallest value i from which lambda-hat agrees with every larger
 *    value j within tol |lambda_j| with 95 % confidence:
 *    |lambda_i - lambda_j| + z se_ij <= tol |lambda_j|, se_ij paired over
 *    the chains when both rows carry >= 2 finished chains (common random
 *    numbers), else sqrt(se_i^2 + se_j^2); z the Student-t 97.5 % quantile
 *    with pairs - 1 degrees of freedom, at least 2.  An equivalence test:
 *    too few chains give "no plateau", never an early one.
 *  - step: rows with R-hat <= 1.05, ESS >= 100, ok, and se <= 3x the
 *    smallest such se; the longest run (>= 2) of adjacent such rows in
 *    which lambda-hat changes by less than 2 combined SE per doubling of the
 *    value; the pick is its row with the smallest se.  A sweep whose median
 *    se / |lambda| exceeds 0.5 is noisy: no decision.
 *  - groups: the smallest N whose nc_std < tol |lambda| and stays so for
 *    every larger N.
 * Thread-safe (rows are only read).  Errors: SIVE_E_INVALID_ARG (NULL
 * rows or v, n = 0, an unknown rule, values not sorted or NaN); a verdict
 * that finds nothing is not an error (v->found = 0, v->reason, v->hint).
 */
SIVE_API int sive_calibrate(sive_calib_rule rule, const sive_calib_row *rows,
                            size_t n, double tol, sive_calib_verdict *v);

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
/**
 * Seed g with the stream the library derives for (seed, chain, purpose):
 * the three are mixed so that no two triples share a stream (the chains'
 * own streams are derived this way).  The reference stack (libsive-ref)
 * draws its initialisations, shuffles and data from such streams.
 */
SIVE_API void sive_rng_stream(sive_rng *g, uint64_t seed, uint64_t chain,
                              uint64_t purpose);
/** Uniform integer in [0, bound) without modulo bias; bound 0 or 1 gives 0
 *  and consumes no draw. */
SIVE_API uint64_t sive_rng_below(sive_rng *g, uint64_t bound);

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

/* The experimental tier, for programs that opt in (docs/abi.md). */
#ifdef SIVE_EXPERIMENTAL
#include "sive/experimental.h"
#endif

#endif /* SIVE_SIVE_H */
