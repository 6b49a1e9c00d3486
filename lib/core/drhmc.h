/* Delayed-rejection Hamiltonian steps (experimental option
 * SIVE_OPT_DELAYED_REJECTION; sampler_drhmc.c, docs/theory.md "Delayed
 * rejection").  The metropolis sampler's Hamiltonian step (leapfrog > 1,
 * sampler_mala.c) calls these hooks; everything else lives here. */
#ifndef SIVE_DRHMC_H
#define SIVE_DRHMC_H

#include "sampler.h"

typedef struct sivei_drhmc sivei_drhmc;         /* per worker */
typedef struct sivei_drhmc_run sivei_drhmc_run; /* per run: per-chain counts */

/* The exact loss and gradient at x into g, *loss (the caller's gradient
 * call, its failure recorded as the run's); non-zero: the chain stops. */
typedef int (*sivei_drhmc_grad)(void *ctx, const void *x, void *g, double *loss);

/* 1 when the options ask for delayed rejection (reduction factor >= 2). */
SIVE_HIDDEN int sivei_drhmc_on(const sivei_options *o);
/* The combinations refused (SIVE_E_INVALID_ARG with the reason in err). */
SIVE_HIDDEN int sivei_drhmc_refuse(const sivei_options *o, char *err);
/* The run's and the worker's state (NULL on failure; off: not called). */
SIVE_HIDDEN sivei_drhmc_run *sivei_drhmc_run_new(int32_t chains);
SIVE_HIDDEN void sivei_drhmc_run_free(sivei_drhmc_run *d);
SIVE_HIDDEN sivei_drhmc *sivei_drhmc_new(const sivei_run *run);
SIVE_HIDDEN void sivei_drhmc_free(sivei_drhmc *d);
/* At a chain's start, theta = theta* (the ghost's buffer copies it). */
SIVE_HIDDEN void sivei_drhmc_chain_start(sivei_drhmc *d, const sivei_run *run,
                                         const void *theta);
/* The buffer (dim) the first stage stores its initial momentum in. */
SIVE_HIDDEN double *sivei_drhmc_p0(sivei_drhmc *d);

/* The first stage's outcome and what a second one needs. */
typedef struct sivei_drhmc_step {
    const sivei_precond *pc; /* the metric P (NULL: I) */
    double eps;              /* the first stage's leapfrog step */
    int64_t K;               /* and its number of moves */
    double loss0, r20;       /* the loss and |theta - theta*|^2 at w->theta */
    double la1;              /* the first stage's log alpha (-inf: rejected) */
    int acc1;                /* 1: the first stage was accepted */
    int tail;                /* 1: count in the tail's statistics */
    int64_t grads1;          /* the first stage's gradient calls */
} sivei_drhmc_step;

/* After the first stage: when it was rejected, the second stage from
 * (w->theta, p0) with step eps/k and k K moves, accepted with the
 * delayed-rejection probability (its ghost first stage run only when the
 * uniform does not already reject).  On acceptance the end point is in
 * *prop, its gradient in *gprop, its loss in *lp and |.-theta*|^2 in *r2p,
 * and *acc = 1.  mom (dim) is scratch.  Returns 1 when the chain must
 * stop (a gradient call failed). */
SIVE_HIDDEN int sivei_drhmc_retry(const sivei_run *run, sivei_work *w, sivei_drhmc *d,
                                  const sivei_drhmc_step *st, sivei_drhmc_grad grad,
                                  void *ctx, sivei_pcg32 *noise, void *prop, void *gprop,
                                  double *mom, double *lp, double *r2p, int *acc);
/* At the chain's last step: its counts into the run's table. */
SIVE_HIDDEN void sivei_drhmc_chain_end(sivei_drhmc_run *r, int32_t slot,
                                       const sivei_drhmc *d);
/* The run's stage acceptances and gradients per step into the health text. */
SIVE_HIDDEN int sivei_drhmc_note(const sivei_run *run, sivei_drhmc_run *r,
                                 sive_result *res);

#endif
