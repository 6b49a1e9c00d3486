/*
 * libsive - reference models whose learning coefficient is known exactly:
 * deep linear networks (DLN) and normal-crossing monomials.
 *
 * They exist to validate an LLC estimator against ground truth
 * (docs/validation.md, `bench_truth`).  Like the MLP (mlp.h) they are
 * clients of the public callback API in sive.h.
 *
 * Deep linear network.  L layers of widths H0 (inputs) ... HL (outputs),
 * f(x) = W_L ... W_1 x, no biases, d = sum_s H_s*H_{s-1} parameters in one
 * caller-owned double vector theta laid out as
 *
 *     W_1 [H1][H0], W_2 [H2][H1], ..., W_L [HL][H(L-1)]   (row-major)
 *
 * The teacher is W_T = U diag(s_1..s_r) V^T of rank r (0 <= r <= min H_s),
 * U (HL x r) and V (H0 x r) random orthonormal frames drawn from a seed.
 * Per-example loss: l(x, y) = 1/2 ||y - W_L...W_1 x||^2 (sum over the HL
 * outputs: the negative log-likelihood of unit Gaussian noise up to a
 * constant, so t = n*beta has its usual meaning).  Two loss modes:
 *
 *  - population (the default, no data): for x ~ N(0, I_H0) and
 *    y = W_T x + noise_std * N(0, I_HL),
 *        L(theta) = E l = 1/2 ||W_L...W_1 - W_T||_F^2 + HL*noise_std^2/2,
 *    computed exactly with its exact gradient;
 *  - data: n examples (x_j, y_j) of that law drawn once from a seed
 *    (sive_dln_set_data()); the loss is the mean of l over a batch, so
 *    mini-batches, evaluation groups and control variates apply.
 *
 * Learning coefficient (sive_dln_lambda()): Aoyagi, "Consideration on the
 * learning efficiency of multiple-layered neural networks with linear
 * units", Neural Networks 172 (2024) 106132, Theorem 1 (docs/validation.md
 * states it).  It is the RLCT of K = L - L(theta*) at any theta* with
 * W_L...W_1 = W_T, the same in both modes.
 *
 * Objects: sive_dln (architecture, teacher and optional data; immutable
 * after sive_dln_set_data() and sive_dln_set_move(), shareable between
 * threads) and sive_dln_work
 * (scratch for one thread at a time; the compute functions never
 * allocate).
 *
 * Errors: functions return SIVE_OK or a negative SIVE_E_* status (sive.h);
 * sive_last_errmsg() then holds a message for the calling thread.  Output
 * buffers have unspecified contents after a failure.  Nothing prints or
 * aborts.
 */
#ifndef SIVE_DLN_H
#define SIVE_DLN_H

#include "sive.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Largest accepted number of layers L. */
#define SIVE_DLN_MAX_LAYERS 64
/** Largest accepted width H_s. */
#define SIVE_DLN_MAX_WIDTH ((size_t)1 << 20)
/** Largest accepted parameter count d. */
#define SIVE_DLN_MAX_PARAMS ((uint64_t)1 << 32)

typedef struct sive_dln sive_dln;

/**
 * Create a DLN with layers L (1 .. SIVE_DLN_MAX_LAYERS) and widths
 * widths[0 .. L] (each 1 .. SIVE_DLN_MAX_WIDTH), and its teacher of rank
 * `rank` (0 .. min widths) with singular values sv[0 .. rank-1] (each
 * finite and > 0; NULL: all 1) and frames U, V drawn from seed (Gaussian
 * matrices orthonormalised by Gram-Schmidt; PCG32, so the same on every
 * platform).  The model starts in population mode.  *out is NULL on
 * failure; free with sive_dln_free().  Errors: SIVE_E_INVALID_ARG,
 * SIVE_E_NOMEM.
 */
SIVE_API int sive_dln_new(sive_dln **out, const size_t *widths, size_t layers,
                          size_t rank, const double *sv, uint64_t seed);

/** Free a DLN and its data (NULL is a no-op).  Models and workspaces made
 *  from it must not be used afterwards. */
SIVE_API void sive_dln_free(sive_dln *m);

/** Number of parameters d = sum_s H_s*H_{s-1}; 0 if m is NULL. */
SIVE_API size_t sive_dln_dim(const sive_dln *m);
/** Number of layers L; 0 if m is NULL. */
SIVE_API size_t sive_dln_layers(const sive_dln *m);
/** Width H_s, s = 0 .. L; 0 if m is NULL or s > L. */
SIVE_API size_t sive_dln_width(const sive_dln *m, size_t s);
/** Rank r of the teacher; 0 if m is NULL. */
SIVE_API size_t sive_dln_rank(const sive_dln *m);
/** Examples n of the data set; 0 in population mode or if m is NULL. */
SIVE_API uint64_t sive_dln_examples(const sive_dln *m);

/**
 * Copy the teacher W_T (HL x H0, row-major) into w[0 .. HL*H0-1].
 * Errors: SIVE_E_INVALID_ARG (NULL).
 */
SIVE_API int sive_dln_teacher(const sive_dln *m, double *w);

/**
 * Switch to data mode with n (1 .. 2^32) examples x_j ~ N(0, I),
 * y_j = W_T x_j + noise_std * eps_j (noise_std finite, >= 0), drawn from
 * seed; n = 0 returns to population mode (noise_std is kept for the
 * population loss's constant).  Holds n*(H0+HL) doubles.  Not while a
 * workspace or model of m is in use by another thread.  Errors:
 * SIVE_E_INVALID_ARG, SIVE_E_NOMEM (m unchanged).
 */
SIVE_API int sive_dln_set_data(sive_dln *m, uint64_t n, double noise_std,
                               uint64_t seed);

/** The move a model of the network supplies (sive_dln_model(),
 *  sive_model.move, for the experimental SIVE_OPT_ORBIT_EVERY). */
typedef enum sive_dln_move {
    /** A random element of GL(H_s) along the loss's symmetry orbit
     *  (the default; both modes). */
    SIVE_DLN_MOVE_ORBIT = 0,
    /** An exact Gibbs draw of one layer given the others (population mode
     *  only; 0.3). */
    SIVE_DLN_MOVE_GIBBS = 1
} sive_dln_move;

/**
 * Choose the move that models made by sive_dln_model() from now on supply
 * (0.3; models made before keep theirs).  SIVE_DLN_MOVE_ORBIT (the
 * default) is the GL orbit move described at sive_dln_model().
 * SIVE_DLN_MOVE_GIBBS, population mode only (sive_dln_model() refuses it
 * in data mode: the data loss is quadratic in a layer too, but this move
 * uses the population form): a layer s drawn uniformly from 1 .. L by the
 * move's key and redrawn exactly from its conditional under the chain's
 * tethered law exp(-t L - |theta - theta*|^2/(2 h^2)) given the other
 * layers (t, h and theta* from sive_move_info), a Gaussian that one-sided
 * Jacobi on the partial products W_L...W_{s+1} and W_{s-1}...W_1
 * diagonalises; log_ratio = log q(W_s old | rest) - log q(W_s new | rest),
 * so the library's acceptance is 1 up to rounding (docs/theory.md "Orbit
 * moves").  It ignores the move's scale (the size the library adapts and
 * reports is then meaningless).  Costs O(L H^3) per move for H the largest
 * width plus the library's one gradient call; 12 H^2 doubles per worker,
 * allocated at the first move.  Not while a model of m is being made by
 * another thread.  Errors: SIVE_E_INVALID_ARG (NULL m, unknown move).
 */
SIVE_API int sive_dln_set_move(sive_dln *m, sive_dln_move move);

/**
 * A parameter vector with W_L...W_1 = W_T exactly (to rounding):
 * W_1 = c_1 Q_1 S^{1/L} V^T, W_s = c_s Q_s S^{1/L} Q_{s-1}^T,
 * W_L = c_L U S^{1/L} Q_{L-1}^T, the Q_s (H_s x r) random orthonormal
 * frames drawn from seed.  With scales NULL (all c_s = 1) it is balanced:
 * W_{s+1}^T W_{s+1} = W_s W_s^T.  scales[0 .. L-1] (finite, > 0, product
 * 1 within 1e-9) give a rescaled factorisation of the same product.  With
 * rank 0 theta is all zeros.  theta holds sive_dln_dim(m) values.
 * Errors: SIVE_E_INVALID_ARG.
 */
SIVE_API int sive_dln_factorisation(const sive_dln *m, const double *scales,
                                    uint64_t seed, double *theta);

/**
 * Aoyagi's learning coefficient lambda and multiplicity of the DLN with
 * widths[0 .. layers] and a true product of rank `rank` (at most the
 * smallest width).  With M_s = H_s - r, sigma is the set of the l+1
 * indices of smallest M (1 <= l <= L) with max_sigma M < min_{not sigma} M,
 * sum_sigma M >= l max_sigma M and sum_sigma M < l min_{not sigma} M; with
 * S = sum_sigma M, a = S - (ceil(S/l) - 1) l,
 *   lambda = (-r^2 + r(H0+HL))/2 + a(l-a)/(4l) - l(l-1)/4 (S/l)^2
 *            + 1/2 sum_{i<j in sigma} M_i M_j,   m = a(l-a) + 1.
 * L = 1 gives d/2; L = 2 the reduced-rank regression values of Aoyagi and
 * Watanabe (2005).  Either output may be NULL.  Errors: SIVE_E_INVALID_ARG
 * (bad sizes as in sive_dln_new()).  Thread-safe.
 */
SIVE_API int sive_dln_lambda(const size_t *widths, size_t layers, size_t rank,
                             double *lambda, int64_t *multiplicity);

/* ------------------------------------------------------------------ */
/* Computing                                                          */
/* ------------------------------------------------------------------ */

typedef struct sive_dln_work sive_dln_work;

/**
 * Scratch for m's shape: block_rows examples at a time (0: 256; at most
 * 2^16) and blis_threads (1 .. 1024) BLIS threads per product.  Valid for
 * any DLN of the same widths.  *out is NULL on failure.  Errors:
 * SIVE_E_INVALID_ARG, SIVE_E_NOMEM.
 */
SIVE_API int sive_dln_work_new(sive_dln_work **out, const sive_dln *m,
                               size_t block_rows, int blis_threads);
/** Free a workspace (NULL is a no-op). */
SIVE_API void sive_dln_work_free(sive_dln_work *w);

/**
 * Loss and gradient.  Population mode: idx must be NULL and n 0, and
 * *loss receives L(theta) (exact), grad its gradient.  Data mode: the mean
 * loss over examples idx[0 .. n-1] (n >= 1, indices below the data size,
 * repeats allowed) and its gradient.  grad (d values, layout of theta, not
 * aliasing it) or loss may be NULL; with grad NULL only the forward pass
 * runs.  w is used by one thread at a time; m and theta may be shared.
 * Errors: SIVE_E_INVALID_ARG (NULL, shape mismatch, index out of range,
 * idx/n not matching the mode).
 */
SIVE_API int sive_dln_loss_grad(const sive_dln *m, sive_dln_work *w,
                                const double *theta, const uint64_t *idx,
                                size_t n, double *grad, double *loss);

/**
 * Per-example losses of data mode: losses[i] = l(x_j, y_j) at theta for
 * j = idx[i], i < n.  Errors as sive_dln_loss_grad() (also: population
 * mode).
 */
SIVE_API int sive_dln_example_losses(const sive_dln *m, sive_dln_work *w,
                                     const double *theta, const uint64_t *idx,
                                     size_t n, double *losses);

/**
 * Train a student in place: `steps` steps theta -= lr * grad, the gradient
 * of the mean loss over `batch` indices drawn uniformly with replacement
 * from (seed, step) in data mode, the exact population gradient in
 * population mode (batch ignored).  *loss (may be NULL) receives the loss
 * after the last step (the full-data mean in data mode).  Errors:
 * SIVE_E_INVALID_ARG (also lr not finite and > 0, batch 0 in data mode),
 * SIVE_E_DIVERGED (a non-finite loss; theta is the state that gave it).
 */
SIVE_API int sive_dln_train(const sive_dln *m, sive_dln_work *w, double *theta,
                            double lr, uint64_t steps, size_t batch,
                            uint64_t seed, double *loss);

/**
 * Describe m as a probe model (sive.h's sive_model; *out prepared by
 * sive_model_init()), dtype SIVE_F64, dim d.  Population mode: n_examples
 * 0, the gradient callback gives the exact gradient and the group callback
 * the exact loss for every group (no evaluation noise, correction 0).
 * Data mode: n_examples n, mini-batch gradients and per-example losses, so
 * grouping, deduplication and control variates apply.  m is borrowed:
 * it must outlive the model and keep its number of examples (hence its
 * mode; the callbacks refuse, SIVE_E_INVALID_ARG, once
 * sive_dln_set_data() changed it), while new data of the same size may be
 * drawn between runs.  When out's struct_size covers it, identity is a
 * hash of the widths, the teacher, noise_std and, in data mode, the
 * examples as they are at this call (one pass over them), so that
 * sive_result_merge() refuses parts probed on different data; after
 * sive_dln_set_data() draws new data, make the model anew for results
 * that will be merged.  Each worker thread gets its
 * own workspace (worker numbers below 1024).  When out's struct_size
 * covers sive_model.move (0.3) it also sets the orbit move of the
 * experimental SIVE_OPT_ORBIT_EVERY: a hidden layer s drawn uniformly
 * from 1 .. L-1, g = exp(scale A) with A an H_s x H_s matrix of N(0, 1/H_s)
 * entries drawn from the key, W_s -> g W_s, W_{s+1} -> W_{s+1} g^-1
 * (g^-1 = exp(-scale A)), which leaves the loss unchanged (to rounding),
 * with log_ratio = scale tr(A) (H_{s-1} - H_{s+1}), the log of the map's
 * |det| (-A has A's law, so the proposal is symmetric); with L = 1 the
 * move returns theta unchanged.  It needs 5 H^2 doubles per worker (H
 * the widest hidden layer), allocated at the first move.  After
 * sive_dln_set_move(m, SIVE_DLN_MOVE_GIBBS) the move is the exact Gibbs
 * layer draw instead (population mode only: SIVE_E_INVALID_ARG in data
 * mode).  When struct_size covers sive_model.curvature (0.3) it also
 * sets the blocks and the Kronecker curvature of the experimental
 * SIVE_OPT_KRON_EVERY: one block per layer (W_s, H_s x H_{s-1}, block
 * s - 1; the array lives in the model's state), and the exact
 * Gauss-Newton roots F_G = W_L ... W_{s+1} (H_L rows), F_A = (W_{s-1} ...
 * W_1)^T (population) or R (W_{s-1} ... W_1)^T with R^T R = X^T X / n the
 * examples' input second moment (data mode; R computed here, H_0 rows),
 * so the loss's Hessian in W_s is exactly F_G^T F_G (x) F_A^T F_A and the
 * library's move with kron_step 1 is an exact layer draw in both modes
 * (2 H^2 doubles per worker, allocated at the first call).  Release with
 * sive_model_destroy().  Errors: SIVE_E_INVALID_ARG (NULL, out not
 * initialised, bad blis_threads), SIVE_E_NOMEM.
 */
SIVE_API int sive_dln_model(sive_model *out, const sive_dln *m,
                            int blis_threads);

/* ------------------------------------------------------------------ */
/* Normal-crossing monomials                                          */
/* ------------------------------------------------------------------ */

/**
 * The analytic model K(w) = sum_i w_i^(2 k_i), i < d, k_i = k[i] in
 * 1 .. 64, as a probe model (dtype SIVE_F64, no data, every group gets
 * the exact K: no evaluation noise).  Its learning coefficient at 0 is
 * sive_monomial_lambda() = sum_i 1/(2 k_i), multiplicity 1.  The exponents
 * are copied.  Release with sive_model_destroy().  Errors:
 * SIVE_E_INVALID_ARG, SIVE_E_NOMEM.
 */
SIVE_API int sive_monomial_model(sive_model *out, const uint32_t *k, size_t d);

/** sum_i 1/(2 k[i]); NaN if k is NULL, d is 0 or some k[i] is 0. */
SIVE_API double sive_monomial_lambda(const uint32_t *k, size_t d);

#ifdef __cplusplus
}
#endif

#endif /* SIVE_DLN_H */
