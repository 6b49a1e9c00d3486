/* Replica exchange (parallel tempering in t; experimental options
 * SIVE_OPT_REPLICAS, SIVE_OPT_REPLICA_RATIO; sampler_replica.c,
 * docs/theory.md "Replica exchange").  The metropolis sampler
 * (sampler_mala.c) holds the rungs' states and moves them; the ladder, the
 * swaps and their statistics live here. */
#ifndef SIVE_REPLICA_H
#define SIVE_REPLICA_H

#include "sampler.h"

typedef struct sivei_replica sivei_replica;         /* per worker */
typedef struct sivei_replica_run sivei_replica_run; /* per run: per-chain counts */

/* 1 when the options ask for replica exchange (R >= 2). */
SIVE_HIDDEN int sivei_replica_on(const sivei_options *o);
/* The combinations refused (SIVE_E_INVALID_ARG with the reason in err). */
SIVE_HIDDEN int sivei_replica_refuse(const sivei_options *o, char *err);
/* Rung k's t at a step whose chain is at t0: t0 / q^k. */
SIVE_HIDDEN double sivei_replica_t(const sivei_options *o, double t0, int k);
/* The run's and the worker's state (NULL on failure; off: not called). */
SIVE_HIDDEN sivei_replica_run *sivei_replica_run_new(const sivei_options *o, int32_t chains);
SIVE_HIDDEN void sivei_replica_run_free(sivei_replica_run *r);
SIVE_HIDDEN sivei_replica *sivei_replica_new(const sivei_options *o);
SIVE_HIDDEN void sivei_replica_free(sivei_replica *x);
SIVE_HIDDEN void sivei_replica_chain_start(sivei_replica *x);

/* Exchange the states (position, gradient, loss, ...) of rungs k and k+1. */
typedef void (*sivei_replica_exchange)(void *ctx, int k);
/* Step m's swaps, the rungs' exact losses in loss[0 .. R-1] at t0 (the
 * chain's t at this step): the pairs (k, k+1) with k = m mod 2, 4, ...
 * (deterministic even-odd), each accepted with probability
 * min(1, exp((t_k - t_{k+1}) (L_k - L_{k+1}))) (a uniform from noise). */
SIVE_HIDDEN void sivei_replica_swap(const sivei_run *run, sivei_replica *x, int64_t m,
                                    double t0, const double *loss, sivei_pcg32 *noise,
                                    sivei_replica_exchange exchange, void *ctx);
/* At the chain's last step: its swap counts and the rungs' own tail
 * acceptances (acc[0 .. R-1]) and the logs of their frozen steps
 * (acc[R .. 2R-1]) into the run's table. */
SIVE_HIDDEN void sivei_replica_chain_end(sivei_replica_run *r, int32_t slot,
                                         const sivei_replica *x, const double *acc);
/* The ladder, the swap and move acceptances and the cost, in the health text. */
SIVE_HIDDEN int sivei_replica_note(const sivei_run *run, sivei_replica_run *r,
                                   sive_result *res);

#endif
