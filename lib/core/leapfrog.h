/* The leapfrog integrator of the Metropolis sampler's Hamiltonian steps
 * (leapfrog.c; docs/theory.md "Hamiltonian steps"): one copy for the plain
 * Hamiltonian step (hmc_move() in sampler_mala.c), the locally adaptive
 * step's trajectories (sampler_autostep.c) and delayed rejection's second
 * stage and ghost (sampler_drhmc.c). */
#ifndef SIVE_LEAPFROG_H
#define SIVE_LEAPFROG_H

#include "sampler.h"

#include <math.h>

/* The exact loss at x into *loss and its gradient into g (model dtype);
 * non-zero: a callback failure, recorded by the caller. */
typedef int (*sivei_leapfrog_grad)(void *ctx, const void *x, void *g, double *loss);

/* A trajectory's two ends. */
typedef struct sivei_leapfrog_end {
    double lp;        /* the end's loss; not finite: the trajectory stopped there */
    double kin0, r20; /* the start's p'Pp/2 and |x0 - theta*|^2 */
    double kin, r2;   /* the end's (complete only when lp is finite) */
} sivei_leapfrog_end;

/* K >= 1 leapfrog moves of step eps on H = t L + |x - theta*|^2/(2h^2) +
 * p'Pp/2 (P the preconditioner pc, NULL: I) over the run's moved ranges,
 *   p -= eps/2 grad U;  x += eps P p;  p -= eps/2 grad U,
 * from (x0, sign pin) with x0's gradient g0: the end point into x, its
 * gradient into g, its momentum into p (pin may be p: read before it is
 * written), each gradient call counted in *calls (may be NULL).  x and x0
 * hold theta*'s values where the chain does not move (only the moved
 * ranges are written).  A trajectory through a point whose loss is not
 * finite stops there (end->lp not finite: U = +inf, rejected).  Returns
 * the callback's non-zero on failure (the trajectory then stops), 0
 * otherwise. */
SIVE_HIDDEN int sivei_leapfrog(const sivei_run *run, double t, const sivei_precond *pc,
                               sivei_leapfrog_grad grad, void *ctx, const void *x0,
                               const void *g0, const double *pin, double sign, double eps,
                               int64_t K, double *p, void *x, void *g, int64_t *calls,
                               sivei_leapfrog_end *end);

/* log pi(end)/pi(start) = H(start) - H(end) for the start's loss0, r20 and
 * kin0 (pi = exp(-H) at the chain's t); -inf when not finite. */
static inline double sivei_leapfrog_log_ratio(const sivei_run *run, double t, double loss0,
                                              double r20, double kin0,
                                              const sivei_leapfrog_end *e)
{
    const double ih2 = 1.0 / (run->h * run->h);
    const double l = -t * (e->lp - loss0) - (e->r2 - r20) * (0.5 * ih2) - (e->kin - kin0);
    return isfinite(e->lp) && isfinite(l) ? l : -INFINITY;
}

#endif
