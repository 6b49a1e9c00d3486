/* The constant low-rank dense preconditioner of the Metropolis-adjusted
 * step (experimental options SIVE_OPT_PRECONDITION_RANK, _STIFF, _UPDATE;
 * sampler_lowrank.c, docs/theory.md "Low-rank dense preconditioner").  The
 * metropolis sampler (sampler_mala.c) calls the proposal and its reverse
 * density from here when the option is on; the eigen-estimate, P and the
 * tallies live here. */
#ifndef SIVE_LOWRANK_H
#define SIVE_LOWRANK_H

#include "sampler.h"

typedef struct sivei_lowrank sivei_lowrank;         /* per worker: the chain's P */
typedef struct sivei_lowrank_run sivei_lowrank_run; /* per run: theta*'s P, tallies */

/* What the proposal's acceptance needs (sampler_mala.c's sums): |g|^2,
 * |theta - theta*|^2, |theta' - mu(theta)|^2 in the P^-1 metric, and
 * |theta' - theta*|^2, over the moved parameters. */
typedef struct sivei_prop_sums {
    double g2, r2, fwd, r2p;
} sivei_prop_sums;

/* The gradient of the exact loss at x into g, the loss into *loss (the
 * callback's return value). */
typedef int (*sivei_lowrank_grad)(void *ctx, const void *x, void *g, double *loss);

/* 1 when the options ask for it (precondition_rank >= 1). */
SIVE_HIDDEN int sivei_lowrank_on(const sivei_options *o);
/* The combinations refused (SIVE_E_INVALID_ARG with the reason in err). */
SIVE_HIDDEN int sivei_lowrank_refuse(const sivei_options *o, char *err);
/* The run's state into *out: the estimate at theta* from the exact
 * gradient (all: the whole data set, or NULL), for chains count.
 * SIVE_E_NOMEM, or SIVE_OK with *out NULL and the callback's non-zero
 * code in *cb when a gradient call failed (the caller records it). */
SIVE_HIDDEN int sivei_lowrank_run_new(const sivei_run *run, const uint64_t *all, int32_t chains,
                                      sivei_lowrank_run **out, int *cb);
SIVE_HIDDEN void sivei_lowrank_run_free(sivei_lowrank_run *r);
SIVE_HIDDEN sivei_lowrank *sivei_lowrank_new(const sivei_run *run);
SIVE_HIDDEN void sivei_lowrank_free(sivei_lowrank *x);
/* A chain starts with theta*'s P. */
SIVE_HIDDEN void sivei_lowrank_chain_start(sivei_lowrank *x, const sivei_lowrank_run *r);
/* precondition_update: the estimate again at theta (the chain's state),
 * its gradient calls through f; non-zero: the callback's code. */
SIVE_HIDDEN int sivei_lowrank_update(const sivei_run *run, sivei_lowrank *x, const void *theta,
                                     sivei_lowrank_grad f, void *ctx, sivei_pcg32 *rng);
/* The proposal theta' = theta - eta P grad U + sqrt(2 eta) P^(1/2) xi into
 * prop (eta = a/t; the normals drawn from noise chunk by chunk into
 * w->noise as the plain proposal draws them). */
SIVE_HIDDEN sivei_prop_sums sivei_lowrank_propose(const sivei_run *run, sivei_lowrank *x,
                                                  sivei_work *w, void *prop,
                                                  sivei_pcg32 *noise, double a, double t);
/* The reverse move's |theta - mu_P(theta')|^2 in the P^-1 metric (step ab
 * at theta', gradient gprop) into *bwd, |theta' - theta*|^2 into *r2p. */
SIVE_HIDDEN void sivei_lowrank_back(const sivei_run *run, sivei_lowrank *x, const void *theta,
                                    const void *prop, const void *gprop, double ab, double t,
                                    double *r2p, double *bwd);
/* At the chain's last step: its rank and calls into the run's table. */
SIVE_HIDDEN void sivei_lowrank_chain_end(sivei_lowrank_run *r, int32_t slot,
                                         const sivei_lowrank *x);
/* The estimate(s), the rank and the gradient calls, in the health text. */
SIVE_HIDDEN int sivei_lowrank_note(const sivei_run *run, sivei_lowrank_run *r,
                                   sive_result *res);

#endif
