/* Layer-block Newton moves (experimental options SIVE_OPT_KRON_EVERY,
 * SIVE_OPT_KRON_STEP; sampler_kron.c, docs/theory.md "Layer-block Newton
 * moves"): a Metropolis-Hastings move of one parameter block (a layer's
 * weights) preconditioned by the model's Kronecker curvature
 * (sive_model.blocks, sive_model.curvature).  The orbit moves' machinery
 * (sampler_orbit.c) schedules it, evaluates the exact loss and gradient at
 * the proposal and accepts it; this file makes the proposal and both
 * proposal densities. */
#ifndef SIVE_KRON_H
#define SIVE_KRON_H

#include "probe_impl.h"

typedef struct sivei_kron sivei_kron; /* per worker: one block's scratch */

/* The law the move targets: exp(-t L - |theta - theta*|^2/(2 h^2)), and
 * the step s in (0, 1]. */
typedef struct sivei_kron_law {
    double t, h, s;
    const double *star;
} sivei_kron_law;

/* 1 when the options ask for layer-block Newton moves. */
SIVE_HIDDEN int sivei_kron_on(const sivei_options *o);
/* The combinations refused (SIVE_E_INVALID_ARG with the reason in err):
 * without metropolis, with orbit_every, a model without blocks or
 * curvature, a float model, blocks outside theta or overlapping. */
SIVE_HIDDEN int sivei_kron_refuse(const sivei_options *o, const sive_model *m, char *err);
/* Scratch for the model's largest block (NULL: out of memory). */
SIVE_HIDDEN sivei_kron *sivei_kron_new(const sive_model *m);
SIVE_HIDDEN void sivei_kron_free(sivei_kron *k);

/* The proposal from theta (its loss gradient grad): a block drawn from
 * b->seed, prop = theta with that block moved; *lq = log q(prop | theta)
 * up to a constant the reverse density shares.  The curvature callback is
 * called with batch b (its return value is returned; 0: success). */
SIVE_HIDDEN int sivei_kron_propose(sivei_kron *k, const sive_model *m, const sivei_kron_law *law,
                                   const sive_batch *b, const double *theta,
                                   const double *grad, double *prop, double *lq);
/* The reverse density log q(theta | prop) (same constant), gprop the loss
 * gradient at prop, the curvature recomputed at prop; the block of the
 * last sivei_kron_propose(). */
SIVE_HIDDEN int sivei_kron_reverse(sivei_kron *k, const sive_model *m, const sivei_kron_law *law,
                                   const sive_batch *b, const double *theta, const double *prop,
                                   const double *gprop, double *lq);
/* The block of the last proposal. */
SIVE_HIDDEN size_t sivei_kron_block(const sivei_kron *k);

#endif
