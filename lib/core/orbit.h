/* Orbit moves (experimental options SIVE_OPT_ORBIT_EVERY,
 * SIVE_OPT_ORBIT_SCALE; sampler_orbit.c, docs/theory.md "Orbit moves"):
 * Metropolis-Hastings moves along the loss's symmetry orbits, proposed by
 * the model (sive_model.move) and accepted on the exact loss, the tether
 * and the move's Jacobian.  The metropolis sampler (sampler_mala.c) calls
 * them after every k-th step of a chain's own state; the proposal, its
 * acceptance, the size's adaptation and the statistics live here.  The
 * layer-block Newton moves (SIVE_OPT_KRON_EVERY; kron.h) run through the
 * same acceptance and statistics with the library's own proposal instead
 * of sive_model.move, and no size to adapt. */
#ifndef SIVE_ORBIT_H
#define SIVE_ORBIT_H

#include "kron.h"
#include "sampler.h"

typedef struct sivei_orbit {       /* per worker (the chain it runs) */
    double log_eps, log_eps_sum;   /* the move's size, and its sum over the
                                      burn-in's last quarter */
    int64_t n_sum, moves, tries, accepted; /* moves: all made; tries,
                                      accepted: the tail's */
    int64_t nonfinite;             /* proposals rejected: theta', its loss or
                                      gradient not finite */
    int64_t badratio;              /* proposals rejected: theta' finite, the
                                      move's log_ratio not (kron: its density
                                      ratio) */
    int frozen;
    sivei_kron *kron;              /* kron_every: the move's scratch, else NULL */
} sivei_orbit;
typedef struct sivei_orbit_run sivei_orbit_run; /* per run: per-chain values */

/* 1 when the options ask for orbit moves or layer-block Newton moves. */
SIVE_HIDDEN int sivei_orbit_on(const sivei_options *o);
/* The combinations refused (SIVE_E_INVALID_ARG with the reason in err):
 * without metropolis, a model without a move callback (kron_every:
 * sivei_kron_refuse()). */
SIVE_HIDDEN int sivei_orbit_refuse(const sivei_options *o, const sive_model *m, char *err);
/* Refused once the run is known: parameter ranges (the move changes every
 * parameter). */
SIVE_HIDDEN int sivei_orbit_refuse_run(const sivei_run *run, char *err);
SIVE_HIDDEN sivei_orbit_run *sivei_orbit_run_new(int32_t chains);
SIVE_HIDDEN void sivei_orbit_run_free(sivei_orbit_run *r);
/* A worker's move state: kron_every's scratch (SIVE_E_NOMEM), released by
 * sivei_orbit_work_release(); nothing for orbit moves. */
SIVE_HIDDEN int sivei_orbit_work_init(sivei_orbit *o, const sivei_run *run);
SIVE_HIDDEN void sivei_orbit_work_release(sivei_orbit *o);
/* A chain's start: the size and tallies reset (the scratch kept). */
SIVE_HIDDEN void sivei_orbit_chain_start(sivei_orbit *o, const sivei_options *opt);

/* The chain state an orbit move reads and, accepted, replaces: theta, its
 * gradient, exact loss and |theta - theta*|^2, and two scratch buffers of
 * the model's dtype (the proposal and its gradient), swapped in on
 * acceptance. */
typedef struct sivei_orbit_state {
    void **theta, **grad, **prop, **gprop;
    double *loss, *r2;
    int32_t chain;
} sivei_orbit_state;
/* The exact loss *lp and gradient g at x (one gradient call; non-zero: a
 * callback failed, already recorded as the run's). */
typedef int (*sivei_orbit_grad)(void *ctx, const void *x, void *g, double *lp);

/* After step m of the chain: an orbit move (or a layer-block Newton move)
 * when (m + 1) is a multiple of orbit_every (kron_every; else nothing).  Returns 1 when the chain must stop (a
 * callback failed). */
SIVE_HIDDEN int sivei_orbit_step(sivei_run *run, sivei_work *w, sivei_orbit *o,
                                 const sivei_orbit_state *st, sivei_orbit_grad f,
                                 void *ctx, sivei_pcg32 *noise, int64_t m);
/* At the chain's last step: its tail acceptance, frozen size and moves into
 * the run's table (slot: the chain's index in the run's range). */
SIVE_HIDDEN void sivei_orbit_chain_end(sivei_orbit_run *r, int32_t slot,
                                       const sivei_orbit *o);
/* The moves' acceptance, size and cost in the health text (NULL: off). */
SIVE_HIDDEN int sivei_orbit_note(const sivei_run *run, sivei_orbit_run *r, sive_result *res);

#endif
