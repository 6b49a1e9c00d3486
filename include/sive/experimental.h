/*
 * libsive - the experimental tier.
 *
 * Functions and options here are not part of the stable ABI: a later
 * release may change their arguments, meaning or bounds, or remove them,
 * without a SONAME bump (docs/abi.md, "Experimental tier").  A program
 * opts in by defining SIVE_EXPERIMENTAL before it includes <sive/sive.h>
 * (which then includes this header) or this header:
 *
 *     #define SIVE_EXPERIMENTAL
 *     #include <sive/sive.h>
 *
 * The functions are exported under the version node LIBSIVE_EXPERIMENTAL,
 * so a program that uses one records that node and fails to start, rather
 * than misbehaving, with a library where the function changed node (it
 * became stable: rebuild) or is gone.
 *
 * Experimental options take ids from 1000 up (SIVE_OPT_EXPERIMENTAL_FIRST);
 * sive_option_info_get() lists them with tier SIVE_TIER_EXPERIMENTAL, and
 * their names are defined below as plain constants.  When one becomes
 * stable it keeps its id (its name moves into sive_option; programs and
 * result files that used it keep working).  A new experimental option's
 * default must be the behaviour without it, like every option's.
 *
 * Options of the tier: SIVE_OPT_LEAPFROG (1070), SIVE_OPT_ANNEAL (1075),
 * SIVE_OPT_AUTO_STEP (1076), SIVE_OPT_DELAYED_REJECTION (1080),
 * SIVE_OPT_REPLICAS (1085), SIVE_OPT_REPLICA_RATIO (1086),
 * SIVE_OPT_ORBIT_EVERY (1090), SIVE_OPT_ORBIT_SCALE (1091),
 * SIVE_OPT_PRECONDITION_RANK (1095), SIVE_OPT_PRECONDITION_STIFF (1096),
 * SIVE_OPT_PRECONDITION_UPDATE (1097), SIVE_OPT_KRON_EVERY (1100),
 * SIVE_OPT_KRON_STEP (1101), SIVE_OPT_RADIUS_LOOKAHEAD (1102),
 * SIVE_OPT_RADIUS_CHECK (1103).
 */
#ifndef SIVE_EXPERIMENTAL_H
#define SIVE_EXPERIMENTAL_H

#ifndef SIVE_EXPERIMENTAL
#error "define SIVE_EXPERIMENTAL before including sive/experimental.h (docs/abi.md)"
#endif

#include "sive/sive.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The first option id of the experimental tier. */
#define SIVE_OPT_EXPERIMENTAL_FIRST 1000

/**
 * "leapfrog" (int, 1 .. 1024, default 1): with metropolis = 1, K >= 2 makes
 * every chain step a Hamiltonian Monte Carlo step of 1 .. 2K-1 leapfrog
 * moves, drawn per step (mean K gradient calls; the step size adapted in
 * the burn-in, then frozen; docs/theory.md, "Hamiltonian steps").  1: the
 * Metropolis-adjusted Langevin step, bit for bit.  Refused above 1
 * without metropolis.
 */
#define SIVE_OPT_LEAPFROG ((sive_option)1070)

/**
 * "anneal" (double, default 1): annealed burn-in (hot start), kappa >= 1 (1: off, the
 * chain of earlier releases, bit for bit).  With kappa > 1 the even
 * chains (0, 2, ...) run the first quarter of the burn-in at t/kappa,
 * then t rises geometrically to t over its second quarter; the rest of
 * the burn-in and the tail run at t, so the tail's law is the tethered
 * law at t, and the cost is unchanged (same steps).  The odd chains start
 * cold (at t from theta*, as without the option), and the two groups'
 * lambda-hat and mean tail loss are compared (SIVE_STAT_START_Z, its
 * parts SIVE_STAT_START_Z_LAMBDA and SIVE_STAT_START_Z_MEAN,
 * SIVE_FLAG_START_DEPENDENT).
 * The radius search's pilots (c_h = 0) run every chain hot.  Not with
 * SIVE_OPT_GRAD_NOISE_COMPENSATION, nor with a burn-in of fewer than 4
 * steps (floor(burn_in * steps) < 4: no first quarter to run hot).
 * docs/theory.md, "Annealed burn-in".
 */
#define SIVE_OPT_ANNEAL ((sive_option)1075)

/**
 * "auto_step" (int, 0 .. 30, default 0): with metropolis = 1, S >= 1 makes
 * every move a Hamiltonian trajectory (leapfrog K: 1 .. 2K-1 moves; K = 1:
 * the Langevin proposal) whose step is chosen per move among the adapted
 * base step times 2^j, |j| <= S: halved while the trajectory's energy
 * error is above a random bracket, doubled while below it, and the move
 * rejected unless the same selection from its end (momentum negated)
 * chooses the same j, so the chain keeps the tethered law exactly (after
 * autoMALA and AutoStep).  Each trial step costs a trajectory's gradient
 * calls; the health text gives the tail's calls per step and the chosen
 * j, SIVE_STAT_AUTO_STEP_GRADS and SIVE_STAT_AUTO_STEP_RESCALED the calls
 * per step and the share of moves halved or doubled per chain.  The base step adapts in the burn-in toward the chosen steps, then
 * is frozen.  0: off (the sampler without it, bit for bit).  Refused
 * without metropolis, and with SIVE_OPT_DELAYED_REJECTION (two ways of
 * shrinking a rejected step).  docs/theory.md, "Locally adaptive step".
 */
#define SIVE_OPT_AUTO_STEP ((sive_option)1076)

/**
 * "delayed_rejection" (int, 0 .. 64, default 0): k >= 2 gives the Hamiltonian
 * steps (leapfrog >= 2) a second stage: when a trajectory is rejected,
 * another one runs from the same state and momentum with step eps/k and k
 * times the leapfrog moves, accepted with the delayed-rejection
 * (Tierney-Mira) probability, which runs the first stage's "ghost"
 * trajectory from its end point when the uniform does not already reject
 * (up to (k + 1) K more gradient calls on a rejected step; the health text
 * reports the calls per step).  0 and 1: off, bit for bit the sampler
 * without it.  Refused without leapfrog >= 2 and metropolis, and with
 * SIVE_OPT_AUTO_STEP.  Composes with anneal and precondition.
 * docs/theory.md, "Delayed rejection".
 */
#define SIVE_OPT_DELAYED_REJECTION ((sive_option)1080)

/**
 * "replicas" (int, 1 .. 64, default 1): with metropolis = 1, R >= 2 runs
 * replica exchange (parallel tempering in t) inside every chain: besides
 * the chain at t (rung 0), R - 1 replicas at t_k = t / q^k (k = 1 .. R-1,
 * q = SIVE_OPT_REPLICA_RATIO; only the likelihood is tempered, the tether
 * is the same), each moved by the Metropolis-adjusted step with its own
 * step adapted in the burn-in, then neighbours k, k+1 swap states with
 * probability min(1, exp((t_k - t_{k+1}) (L_k - L_{k+1}))), even pairs on
 * even steps and odd pairs on odd steps (deterministic even-odd).  Rung 0
 * alone is measured, and its law is the tethered law at t exactly.  R
 * gradient calls per step; the health text gives each pair's swap
 * acceptance.  1: off, bit for bit.  Refused without metropolis, and with
 * auto_step or delayed_rejection.  docs/theory.md, "Replica exchange".
 */
#define SIVE_OPT_REPLICAS ((sive_option)1085)

/**
 * "replica_ratio" (double, (1, 10^6], default 1.5): q, the ratio of t
 * between neighbouring replicas (SIVE_OPT_REPLICAS); the hottest is at
 * t / q^(R-1).  Only read when replicas >= 2.  With q near 1 a swap's
 * acceptance is about 2 Phi(-(q - 1) sqrt(lambda/2)) (Phi the normal
 * distribution function; 0.4 at q = 1 + 1.2/sqrt(lambda)): choose q so
 * that the health text's swap acceptances are about 0.3-0.6.
 */
#define SIVE_OPT_REPLICA_RATIO ((sive_option)1086)

/**
 * "orbit_every" (int, 0 .. 2^20, default 0): with metropolis = 1 and a
 * model that supplies sive_model.move (sive_dln_model() does), k >= 1
 * adds an orbit move after every k-th step of each chain: the model
 * proposes theta' on (or near) theta's orbit under a symmetry of the loss
 * (for a deep linear network W_s -> g W_s, W_{s+1} -> W_{s+1} g^-1), and
 * the library accepts it with the Metropolis-Hastings ratio of the
 * tethered law at t (exact loss, tether and the move's Jacobian), so the
 * law stays exact.  One gradient call per move (the exact loss and the
 * gradient at theta'), so 1 + 1/k per step in all.  The move's size is
 * adapted in the burn-in toward an acceptance of 0.4, then frozen; the
 * health text gives the moves' tail acceptance and size.  0: off, bit for
 * bit.  Refused without metropolis, without sive_model.move, and with
 * parameter ranges (the move changes every parameter).  docs/theory.md,
 * "Orbit moves".
 */
#define SIVE_OPT_ORBIT_EVERY ((sive_option)1090)

/**
 * "orbit_scale" (double, (0, 100], default 0.1): the orbit moves' initial
 * size (the scale passed to sive_model.move, e.g. g = exp(scale A) with A
 * a standard Gaussian matrix), adapted in the burn-in from there.  Only
 * read when orbit_every >= 1.
 */
#define SIVE_OPT_ORBIT_SCALE ((sive_option)1091)

/**
 * "precondition_rank" (int, 0 .. 64, default 0): with metropolis = 1,
 * K >= 1 preconditions the Metropolis-adjusted Langevin proposal with a
 * constant dense low-rank matrix P = I + sum_i (s_i - 1) v_i v_i': the top
 * K + 1 eigenpairs (mu_i, v_i) of the loss's Hessian at theta* (or at
 * each chain's state: SIVE_OPT_PRECONDITION_UPDATE) are
 * estimated from Hessian-vector products (central differences of the
 * gradient callback, randomized block subspace iteration), and each
 * direction whose curvature c_i = t |mu_i| + 1/h^2 exceeds tau c_ref
 * (c_ref that of the (K+1)-th, tau = SIVE_OPT_PRECONDITION_STIFF) is
 * shrunk to tau c_ref: s_i = tau c_ref / c_i.  The step then adapts to the
 * flatter directions.  P is constant in the tail, the proposal's density
 * enters the acceptance in the P^-1 metric: the law stays exact.  The
 * estimate's gradient calls are in the health text.  0: off, bit for bit.
 * Refused without metropolis, and with precondition, leapfrog > 1,
 * auto_step, delayed_rejection or replicas.  docs/theory.md, "Low-rank
 * dense preconditioner".
 */
#define SIVE_OPT_PRECONDITION_RANK ((sive_option)1095)

/**
 * "precondition_stiff" (double, [1, 10^12], default 1): tau, the
 * threshold of SIVE_OPT_PRECONDITION_RANK: directions stiffer than tau
 * times the reference curvature are shrunk to it.  Only read when
 * precondition_rank >= 1.
 */
#define SIVE_OPT_PRECONDITION_STIFF ((sive_option)1096)

/**
 * "precondition_update" (int, 0 .. 1, default 0): with
 * precondition_rank >= 1, 1 estimates the eigenpairs not at theta* but
 * once per chain, at the chain's state at the end of the burn-in's first
 * half (P = I before; the estimate's gradient calls per chain); P is then
 * constant to the end, so the tail's law is exact.  The reference
 * curvature is then that of the chain's surroundings, where theta*'s
 * Hessian sees only the stiff directions (and is 0 at theta* = 0 of a
 * network without biases).
 */
#define SIVE_OPT_PRECONDITION_UPDATE ((sive_option)1097)

/**
 * "kron_every" (int, -1 .. 2^20, default -1 "auto"): with metropolis = 1 and a
 * model that supplies parameter blocks and their Kronecker curvature
 * (sive_model.n_blocks, blocks, curvature; sive_dln_model() does), k >= 1
 * adds a layer-block Newton move after every k-th step of each chain: one
 * block W, drawn uniformly from the chain's stream, is proposed as
 *   W' = W - s M^-1 grad U(W) + sqrt(s (2 - s)) M^-1/2 xi,
 *   U = t L + |theta - theta*|^2/(2 h^2),  M = t (G (x) A) + I/h^2,
 * with G (x) A the model's curvature at theta (diagonalised exactly from
 * the eigenbases of its square-root factors, so the tether's I/h^2 stays
 * exact), s = SIVE_OPT_KRON_STEP and xi standard Gaussian; accepted with
 * the Metropolis-Hastings ratio of the tethered law at t on the exact
 * loss, with the reverse density under the curvature recomputed at
 * theta', so the law stays exact whatever the factors.  With s = 1 and a
 * block whose conditional is Gaussian with that precision (a deep linear
 * network's layer, exact factors) the move is an exact draw from it
 * (acceptance 1 to rounding).  One gradient call and two curvature calls
 * per move; the health text gives the moves' tail acceptance.  0: off, bit
 * for bit.  Refused without metropolis, without blocks or curvature, for
 * blocks outside theta or overlapping, for a float model, with parameter
 * ranges, and with orbit_every (one move of the chain's state at a time).
 * -1 (default, text "auto"): 1 when the run's step is the
 * Metropolis-adjusted one -- SIVE_OPT_METROPOLIS' own default chose the
 * exact path (metropolis, h and c_h unset, the loss exact), or metropolis
 * = 1 was set, with or without h or c_h (the move is exact in law: it
 * only mixes better) -- and the sampler takes the move (blocks and
 * curvature, double, no parameter ranges, orbit_every 0, no other option
 * it is refused with); else 0 (with metropolis = 0, set or resolved).  The
 * probe keeps -1; the result (and its file) holds the value that ran, and
 * the health line "defaults: ..." names it.  A run that sets metropolis =
 * 1 and wants the plain Metropolis-adjusted step sets kron_every = 0.
 * docs/theory.md, "Layer-block Newton moves"; docs/validation.md, "Mixing
 * moves and the look-ahead radius together".
 */
#define SIVE_OPT_KRON_EVERY ((sive_option)1100)

/**
 * "kron_step" (double, (0, 1], default 1): s, the step of the layer-block
 * Newton move (SIVE_OPT_KRON_EVERY): 1 jumps to the block's Gaussian
 * approximation's centre and draws from it; s < 1 keeps a share of the
 * old block (an autoregressive move that leaves the same Gaussian
 * invariant), for factors or losses far from that approximation.  Only
 * read when kron_every >= 1.
 */
#define SIVE_OPT_KRON_STEP ((sive_option)1101)

/**
 * "radius_lookahead" (int, -1 .. 8, default -1 "auto"): with metropolis and the
 * radius from the loss (c_h = 0), K >= 1 changes what ends the search
 * (docs/theory.md "Radius from the loss", *Looking past a plateau*): a
 * flat chord starts a plateau, which the search keeps only after K more
 * doublings of h leave lambda-hat within it; a significant rise beyond it
 * resumes the search, a fall, a lost chain or a collapse of the fixed
 * step's acceptance ends it, and the chosen h is the plateau's largest
 * level before any of these; when the levels run out after a rise with
 * no other plateau, the largest level reached (before a fall, if one
 * came).  0: one pilot past the plateau (the
 * rule before).  No effect when h or c_h is set.  -1 (default, text "auto"): 8
 * when SIVE_OPT_METROPOLIS' own default chose the exact path with c_h =
 * auto, else 0; the probe keeps -1, the result holds the value that ran.
 */
#define SIVE_OPT_RADIUS_LOOKAHEAD ((sive_option)1102)

/**
 * "radius_check" (int, -1 .. 1, default -1 "auto"): 1, after a run at a
 * fixed radius (h, or c_h other than auto), runs short pilots on common
 * random numbers (the radius search's: a fifth of the steps, at least
 * 5000, at most 4 chains, their own runs) at the run's h, 2h and 4h
 * (docs/theory.md "Radius from the loss", *Checking a radius that was
 * set*).  When lambda-hat at a larger radius exceeds the run's radius's
 * by more than 4 % and 2 standard errors of the paired change,
 * SIVE_FLAG_RADIUS_BOUND is raised with a health line "radius_check:
 * radius_bound: ..." saying at which radius and by how much; otherwise a
 * line says what the pilots read.  The run's chains, hence lambda-hat and
 * every statistic, are unchanged; only the flags, the health text and
 * the cost (the pilots' chain steps, which the line gives) change.  The
 * line is a run note: a saved and loaded or merged result raises the
 * flag again from it.  No effect with c_h = auto (the radius search
 * looks past its plateau itself).  0: off.  -1 (default, text "auto"): 1
 * where the resolved SIVE_OPT_METROPOLIS is 1 and h or c_h (not auto) was
 * set on the probe, else 0 (so off on ULA runs, e.g. any mini-batch
 * model's); the probe keeps -1, the result holds the value that ran.
 */
#define SIVE_OPT_RADIUS_CHECK ((sive_option)1103)

/**
 * One option as a result file records it (experimental: the shape may
 * change).  For a file of format 4 or 5 these are its records as stored, ids
 * this library does not know included; for formats 1-3, which store the
 * options by position, one per option of this library's table.
 */
typedef struct sive_option_record {
    int32_t id;             /**< option id (sive_option), perhaps unknown here  */
    sive_option_type type;  /**< SIVE_TYPE_INT or SIVE_TYPE_DOUBLE              */
    int ignorable;          /**< 1: the writer's default (docs/abi.md; for
                                 metropolis, whose default -1 a run resolves,
                                 0: the sampler of a library without it)  */
    int known;              /**< 1: sive_option_info_get(id) is not NULL        */
    int64_t int_value;      /**< the value of an int option (0 otherwise)       */
    double double_value;    /**< the value of a double option (0 otherwise)     */
} sive_option_record;

/**
 * The options recorded in the result-file bytes [bytes, bytes + len),
 * without loading the result: for a file this library refuses because of
 * an option it does not know, this says which option and value.  Checks
 * the frame only (magic, version, length, checksum) and the shape of the
 * records (ascending ids, int or double, known flags); the other fields are
 * not read.  Stores the number of records in *n and the first min(cap, *n)
 * of them in out[] (out may be NULL when cap is 0: ask for the count
 * first).  bytes is only read.  Thread-safe.  Errors (sive_last_errmsg()):
 * SIVE_E_INVALID_ARG (n NULL, out NULL with cap > 0, bytes NULL with
 * len > 0), SIVE_E_FORMAT (not a result file, damaged, or malformed
 * records).
 */
SIVE_API int sive_result_bytes_options(const void *bytes, size_t len,
                                       sive_option_record *out, size_t cap,
                                       size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* SIVE_EXPERIMENTAL_H */
