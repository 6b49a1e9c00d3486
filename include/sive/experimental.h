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
 * SIVE_OPT_REPLICAS (1085), SIVE_OPT_REPLICA_RATIO (1086).
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
