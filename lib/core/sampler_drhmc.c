/* Delayed-rejection Hamiltonian steps (experimental option
 * SIVE_OPT_DELAYED_REJECTION = k >= 2; docs/theory.md "Delayed rejection";
 * after Modi, Barnett & Carpenter, "Delayed rejection Hamiltonian Monte
 * Carlo for sampling multiscale distributions", Bayesian Analysis 2024,
 * with the delayed-rejection ratio of Tierney & Mira 1999).
 *
 * The metropolis sampler's Hamiltonian step (leapfrog > 1, hmc_move() in
 * sampler_mala.c) draws the momentum p0, the step eps and the number of
 * moves K, runs K leapfrog moves from z0 = (theta, p0) to z1 and accepts
 * with alpha1(z0) = min(1, pi(z1)/pi(z0)) (pi = exp(-H)).  When that first
 * stage is rejected, a second stage runs k K moves of step eps/k from the
 * same z0 to z2 (the same trajectory length, finer: it follows the stiffer
 * directions that made the first stage's energy error large), and accepts
 * z2 with
 *   alpha2(z0) = min(1, pi(z2) (1 - alpha1(z2')) / (pi(z0) (1 - alpha1(z0)))),
 * z2' = (theta2, -p2), alpha1(z2') the acceptance of the first stage's
 * proposal from z2' (its "ghost" trajectory: K moves of step eps from
 * theta2 with momentum -p2).  For fixed (eps, K) both stages are
 * deterministic involutions (leapfrog then a momentum flip), so this is
 * Tierney & Mira's second-stage probability and the step is reversible
 * with respect to pi; eps and K are drawn independently of the state, so
 * the mixture over them is too.  Since 1 - alpha1(z2') <= 1, a uniform u
 * with log u >= log pi(z2)/pi(z0) - log(1 - alpha1(z0)) rejects whatever
 * the ghost gives: the ghost's K gradient calls are made only otherwise.
 * Every gradient call is counted: the health line reports the calls per
 * step over the tail (first stage, second stage and ghosts).  The step
 * size eps is adapted on the first stage's acceptance as without the
 * option (the second stage is a fallback, not a different tuning). */
#include "drhmc.h"

#include "leapfrog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sivei_drhmc {
    double *p0, *pg;   /* the first stage's initial momentum; the ghost's */
    void *xg, *gg;     /* the ghost's position and gradient (model dtype) */
    int64_t steps, acc1, tries2, acc2, ghosts, grads; /* over the tail */
    int64_t run_steps, run_grads; /* over the whole chain, burn-in included */
};

struct sivei_drhmc_run {
    int32_t count;
    int64_t (*n)[8]; /* per chain: the worker's counts at its last step */
};

int sivei_drhmc_on(const sivei_options *o) { return o->delayed_rejection > 1; }

int sivei_drhmc_refuse(const sivei_options *o, char *err)
{
    if (sivei_drhmc_on(o) && o->leapfrog < 2)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "delayed_rejection %lld: a second stage of Hamiltonian steps; set "
                         "leapfrog >= 2 (and metropolis 1)",
                         (long long)o->delayed_rejection);
    return SIVE_OK;
}

sivei_drhmc_run *sivei_drhmc_run_new(int32_t chains)
{
    sivei_drhmc_run *d = calloc(1, sizeof *d);
    if (d && chains > 0)
        d->n = calloc((size_t)chains, sizeof *d->n);
    if (d && chains > 0 && !d->n) {
        free(d);
        return NULL;
    }
    if (d)
        d->count = chains;
    return d;
}

void sivei_drhmc_run_free(sivei_drhmc_run *d)
{
    if (d)
        free(d->n);
    free(d);
}

sivei_drhmc *sivei_drhmc_new(const sivei_run *run)
{
    const size_t dim = run->model.dim, el = sivei_model_el(&run->model);
    sivei_drhmc *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->p0 = malloc(dim * sizeof *d->p0);
    d->pg = malloc(dim * sizeof *d->pg);
    d->xg = malloc(dim * el);
    d->gg = calloc(dim, el);
    if (!d->p0 || !d->pg || !d->xg || !d->gg) {
        sivei_drhmc_free(d);
        return NULL;
    }
    return d;
}

void sivei_drhmc_free(sivei_drhmc *d)
{
    if (d) {
        free(d->p0);
        free(d->pg);
        free(d->xg);
        free(d->gg);
    }
    free(d);
}

void sivei_drhmc_chain_start(sivei_drhmc *d, const sivei_run *run, const void *theta)
{
    /* the ghost's buffer holds theta's values where the chain does not move */
    memcpy(d->xg, theta, run->model.dim * sivei_model_el(&run->model));
    d->steps = d->acc1 = d->tries2 = d->acc2 = d->ghosts = d->grads = 0;
    d->run_steps = d->run_grads = 0;
}

double *sivei_drhmc_p0(sivei_drhmc *d) { return d->p0; }

static double uniform01(sivei_pcg32 *noise)
{
    return (double)(sivei_pcg32_next64(noise) >> 11) * 0x1p-53;
}

int sivei_drhmc_retry(const sivei_run *run, sivei_work *w, sivei_drhmc *d,
                      const sivei_drhmc_step *st, sivei_drhmc_grad grad, void *ctx,
                      sivei_pcg32 *noise, void *prop, void *gprop, double *mom, double *lp,
                      double *r2p, int *acc)
{
    const double a1 = st->la1 >= 0.0 ? 1.0 : exp(st->la1);
    int64_t calls = st->grads1;
    int rc = 0;
    *acc = st->acc1;
    if (!st->acc1 && a1 < 1.0) {
        const int64_t k = run->opt.delayed_rejection;
        const double t = w->t_step;
        sivei_leapfrog_end e2;
        d->tries2 += st->tail;
        rc = sivei_leapfrog(run, t, st->pc, grad, ctx, w->theta, w->grad, d->p0, 1.0,
                            st->eps / (double)k, k * st->K, mom, prop, gprop, &calls, &e2) != 0;
        const double lu = log(uniform01(noise));
        /* log of pi(z2) / (pi(z0) (1 - alpha1(z0))): an upper bound of log alpha2 */
        const double bound =
            rc ? -INFINITY
               : sivei_leapfrog_log_ratio(run, t, st->loss0, st->r20, e2.kin0, &e2) -
                     log1p(-a1);
        if (lu < bound) { /* the ghost decides */
            sivei_leapfrog_end eg;
            d->ghosts += st->tail;
            rc = sivei_leapfrog(run, t, st->pc, grad, ctx, prop, gprop, mom, -1.0, st->eps,
                                st->K, d->pg, d->xg, d->gg, &calls, &eg) != 0;
            if (!rc) {
                const double lag = sivei_leapfrog_log_ratio(run, t, e2.lp, e2.r2, e2.kin, &eg);
                const double ag = lag >= 0.0 ? 1.0 : exp(lag);
                *acc = ag < 1.0 && lu < bound + log1p(-ag);
            }
        }
        if (*acc) {
            *lp = e2.lp;
            *r2p = e2.r2;
            d->acc2 += st->tail;
        }
    }
    d->run_steps++;
    d->run_grads += calls;
    if (st->tail) {
        d->steps++;
        d->acc1 += st->acc1;
        d->grads += calls;
    }
    return rc;
}

void sivei_drhmc_chain_end(sivei_drhmc_run *r, int32_t slot, const sivei_drhmc *d)
{
    if (slot < 0 || slot >= r->count)
        return;
    int64_t *n = r->n[slot];
    n[0] = d->steps;
    n[1] = d->acc1;
    n[2] = d->tries2;
    n[3] = d->acc2;
    n[4] = d->ghosts;
    n[5] = d->grads;
    n[6] = d->run_steps;
    n[7] = d->run_grads;
}

int sivei_drhmc_note(const sivei_run *run, sivei_drhmc_run *r, sive_result *res)
{
    int64_t s[8] = {0};
    for (int32_t c = 0; c < r->count; c++)
        for (int j = 0; j < 8; j++)
            s[j] += r->n[c][j];
    if (s[0] == 0)
        return SIVE_OK;
    char line[512];
    snprintf(line, sizeof line,
             "delayed rejection %lld: over the tail's %lld steps, first stage accepted %.3f; "
             "second stage (step eps/%lld, %lld x the moves) tried on %.3f of the steps, "
             "accepted %.3f of those (ghost trajectories on %.3f of them); overall "
             "acceptance %.3f; %.2f gradient calls per step (%.2f over the whole run, "
             "burn-in included: %lld calls)\n",
             (long long)run->opt.delayed_rejection, (long long)s[0],
             (double)s[1] / (double)s[0], (long long)run->opt.delayed_rejection,
             (long long)run->opt.delayed_rejection, (double)s[2] / (double)s[0],
             s[2] ? (double)s[3] / (double)s[2] : 0.0,
             s[2] ? (double)s[4] / (double)s[2] : 0.0, (double)(s[1] + s[3]) / (double)s[0],
             (double)s[5] / (double)s[0], (double)s[7] / (double)s[6], (long long)s[7]);
    return sivei_health_append(res, line);
}
