/* The locally adaptive step (experimental option auto_step = S >= 1;
 * docs/theory.md "Locally adaptive step"), after autoMALA (Biron-Lattes,
 * Surjanovic, Syed, Campbell and Bouchard-Cote 2024) and AutoStep (Liu et
 * al. 2024).  Each Metropolis move of the sampler (sampler_mala.c) is a
 * Hamiltonian trajectory of n leapfrog moves (n = 1: the Langevin
 * proposal; n uniform in 1 .. 2K-1 with leapfrog = K) whose size is chosen
 * per move among eps_j = eps0 2^j, |j| <= S, from the energy error of the
 * trajectory at the state itself:
 *   draw p ~ N(0, P^-1), (lo, hi) two ordered uniforms, eps0 = sqrt(2a/t)
 *   jittered, n; ell(eps) = H(theta, p) - H(Phi_eps(theta, p)).
 *   select(theta, p): j = 0; if exp(-|ell(eps0)|) < lo halve while it
 *   stays below lo (j the first step above); if > hi double while it
 *   stays above hi (j the last step above); else 0; |j| <= S.
 *   propose (theta', p') = Phi_{eps_j}(theta, p); reject unless
 *   select(theta', -p') = j; accept with min(1, exp(ell(eps_j))).
 * The selection is a function of (theta, p, lo, hi, eps0, n), so the map
 * (theta, p) -> (theta', -p') restricted to {select(theta', -p') = j} is
 * a volume-preserving involution, and the Metropolis test on it keeps
 * exp(-U) N(0, P^-1) (x the auxiliary draws) invariant: detailed balance
 * whatever S and the base step.  |ell| is the same for a trajectory and
 * its reverse, so the reverse selection knows the value at eps_j without
 * computing it: a move whose base step is already in the bracket costs n
 * gradient calls, as a plain Hamiltonian step does.  The base a is the
 * sampler's (adapted in the burn-in on err = log(a_j/a), toward the steps
 * the selection chooses, then frozen). */
#include "sampler_autostep.h"

#include "leapfrog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JITTER 0.2 /* eps0 uniform in sqrt(2a/t) (1 -+ JITTER), as the Hamiltonian step's */
#define SMAX 30    /* the option's bound on S */

/* One chain's tail. */
typedef struct tally {
    int64_t moves, grads, accepted, rev_fail, nonfinite;
    int64_t steps_all, grads_all; /* the whole chain, burn-in included */
    int64_t hist[2 * SMAX + 1];
} tally;

struct sivei_autostep_run {
    int32_t chains;
    tally *t;  /* per chain of the run's range */
    int *done; /* 1: the chain reached its last step */
};

struct sivei_autostep {
    void *tx, *tg, *fx, *fg; /* the trial's and the chosen trajectory's ends (model dtype) */
    double *p0, *tp, *fp;    /* the drawn momentum, the trial's and the chosen end's */
    double fl, floss, fr2;   /* the chosen trajectory: ell, its end's loss and r2 */
    double tloss, tr2;       /* the trial's */
    int64_t calls;           /* gradient calls of this move */
    tally tail;
};

sivei_autostep_run *sivei_autostep_run_new(int32_t chains)
{
    sivei_autostep_run *r = calloc(1, sizeof *r);
    if (r) {
        r->chains = chains;
        r->t = calloc((size_t)(chains > 0 ? chains : 1), sizeof *r->t);
        r->done = calloc((size_t)(chains > 0 ? chains : 1), sizeof *r->done);
    }
    if (r && (!r->t || !r->done)) {
        sivei_autostep_run_free(r);
        return NULL;
    }
    return r;
}

void sivei_autostep_run_free(sivei_autostep_run *r)
{
    if (r) {
        free(r->t);
        free(r->done);
    }
    free(r);
}

void sivei_autostep_free(sivei_autostep *s)
{
    if (s) {
        free(s->tx);
        free(s->tg);
        free(s->fx);
        free(s->fg);
        free(s->p0);
        free(s->tp);
        free(s->fp);
    }
    free(s);
}

sivei_autostep *sivei_autostep_new(const sivei_run *run)
{
    const size_t n = run->model.dim, el = sivei_model_el(&run->model);
    sivei_autostep *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->tx = malloc(n * el);
    s->fx = malloc(n * el);
    s->tg = calloc(n, el);
    s->fg = calloc(n, el);
    s->p0 = malloc(n * sizeof *s->p0);
    s->tp = malloc(n * sizeof *s->tp);
    s->fp = malloc(n * sizeof *s->fp);
    if (!s->tx || !s->fx || !s->tg || !s->fg || !s->p0 || !s->tp || !s->fp) {
        sivei_autostep_free(s);
        return NULL;
    }
    return s;
}

/* The position buffers start as theta*'s copies: the parameters the chain
 * does not move keep theta*'s values in every buffer. */
void sivei_autostep_chain_start(sivei_autostep *s, const sivei_work *w)
{
    const size_t bytes = w->run->model.dim * sivei_model_el(&w->run->model);
    memcpy(s->tx, w->theta, bytes);
    memcpy(s->fx, w->theta, bytes);
    memset(&s->tail, 0, sizeof s->tail);
}

static double unif(sivei_pcg32 *noise)
{
    return (double)(sivei_pcg32_next64(noise) >> 11) * 0x1p-53;
}

static void swapp(void **x, void **y)
{
    void *t = *x;
    *x = *y;
    *y = t;
}

static void swapd(double **x, double **y)
{
    double *t = *x;
    *x = *y;
    *y = t;
}

/* The leapfrog trajectory (leapfrog.c) of n moves of size eps from (x,
 * momentum sign * p; gradient g, loss loss) into the trial buffers.
 * Returns ell = H(start) - H(end), -inf when a loss on the way is not
 * finite; *rc the callback's failure. */
static double trajectory(const sivei_run *run, const sivei_work *w, sivei_autostep *s,
                         const sivei_autostep_call *c, const void *x, const void *g,
                         double loss, const double *p, double sign, double eps, int64_t n,
                         int *rc)
{
    sivei_leapfrog_end e;
    *rc = sivei_leapfrog(run, w->t_step, c->pc, c->grad, c->ctx, x, g, p, sign, eps, n, s->tp,
                         s->tx, s->tg, &s->calls, &e);
    if (*rc)
        return -INFINITY;
    s->tloss = e.lp;
    s->tr2 = e.r2;
    return sivei_leapfrog_log_ratio(run, w->t_step, loss, e.r20, e.kin0, &e);
}

/* The selection's direction at |ell| = al: -1 halve (exp(-al) < lo), +1
 * double (exp(-al) > hi), 0 keep. */
static int direction(double al, double llo, double lhi)
{
    return al > -llo ? -1 : al < -lhi ? 1 : 0;
}

/* The trial becomes the chosen trajectory. */
static void keep(sivei_autostep *s, double ell)
{
    swapp(&s->tx, &s->fx);
    swapp(&s->tg, &s->fg);
    swapd(&s->tp, &s->fp);
    s->fl = ell;
    s->floss = s->tloss;
    s->fr2 = s->tr2;
}

/* The forward selection from (w->theta, p0): its j, with the chosen
 * trajectory's end in the f buffers. */
static int select_fwd(const sivei_run *run, const sivei_work *w, sivei_autostep *s,
                      const sivei_autostep_call *c, double eps0, int64_t n, double llo,
                      double lhi, int S, int *j, int *rc)
{
    double ell = trajectory(run, w, s, c, w->theta, w->grad, c->loss, s->p0, 1.0, eps0, n, rc);
    if (*rc)
        return 1;
    keep(s, ell);
    const int dir = direction(fabs(ell), llo, lhi);
    *j = 0;
    while (dir != 0 && abs(*j + dir) <= S) {
        const int k = *j + dir;
        ell = trajectory(run, w, s, c, w->theta, w->grad, c->loss, s->p0, 1.0, ldexp(eps0, k),
                         n, rc);
        if (*rc)
            return 1;
        const int d = direction(fabs(ell), llo, lhi);
        if (dir > 0 && d != 1)
            return 0; /* eps_k no longer easy: j = k - 1, kept */
        keep(s, ell);
        *j = k;
        if (dir < 0 && d != -1)
            return 0; /* eps_k no longer hard: j = k */
    }
    return 0; /* in the bracket at eps0, or at the bound S */
}

/* 1 when the selection from (theta', -p') (the f buffers) chooses j too;
 * |ell| at eps_j is the chosen trajectory's (its reverse), and the other
 * steps are computed until the answer is known. */
static int select_rev(const sivei_run *run, const sivei_work *w, sivei_autostep *s,
                      const sivei_autostep_call *c, double eps0, int64_t n, double llo,
                      double lhi, int S, int j, int *rc)
{
#define ELL(k)                                                                            \
    ((k) == j ? fabs(s->fl)                                                               \
              : fabs(trajectory(run, w, s, c, s->fx, s->fg, s->floss, s->fp, -1.0,        \
                                ldexp(eps0, (k)), n, rc)))
    double al = ELL(0);
    if (*rc)
        return 0;
    const int dir = direction(al, llo, lhi);
    if (dir == 0)
        return j == 0;
    if ((dir > 0 && j < 0) || (dir < 0 && j >= 0))
        return 0;
    int k = 0;
    while (abs(k + dir) <= S) {
        if (dir > 0 && k > j)
            return 0; /* it will choose k or above */
        k += dir;
        al = ELL(k);
        if (*rc)
            return 0;
        const int d = direction(al, llo, lhi);
        if (dir > 0 && d != 1)
            return k - 1 == j;
        if (dir < 0 && d != -1)
            return k == j;
    }
    return k == j;
#undef ELL
}

int sivei_autostep_move(const sivei_run *run, sivei_work *w, sivei_autostep *s,
                        sivei_pcg32 *noise, const sivei_autostep_call *c, int64_t m,
                        double *gnorm, double *disp, sivei_autostep_out *out)
{
    const int S = (int)run->opt.auto_step;
    const double t = w->t_step;
    out->la = -INFINITY;
    out->acc = 0;
    out->err = 0.0;
    double g2 = 0.0, r2 = 0.0;
    sivei_chunks it = sivei_chunks_start(run);
    while (sivei_chunks_next(&it, noise, w->noise))
        for (size_t jj = 0; jj < it.nb; jj++) {
            const size_t i = it.i0 + jj;
            const double x =
                sivei_sampler_val(run, w->theta, i) - sivei_sampler_val(run, run->theta_star, i);
            const double g = sivei_sampler_val(run, w->grad, i);
            s->p0[i] = sivei_sampler_val(run, w->noise, jj) / (c->pc ? c->pc->sp[i] : 1.0);
            g2 += g * g;
            r2 += x * x;
        }
    *gnorm = sqrt(g2);
    *disp = sqrt(r2 * (1.0 / (double)run->moved));
    if (!isfinite(c->loss) || !isfinite(g2))
        return 1;
    /* the auxiliary draws: the bracket, the base step's jitter, n */
    double u1 = unif(noise), u2 = unif(noise);
    const double llo = log(fmin(u1, u2)), lhi = log(fmax(u1, u2));
    const double eps0 = sqrt(2.0 * c->a / t) * (1.0 + JITTER * (2.0 * unif(noise) - 1.0));
    const int64_t n = 1 + (int64_t)(unif(noise) * (double)(2 * run->opt.leapfrog - 1));
    s->calls = 0;
    int j = 0, rc = 0;
    if (select_fwd(run, w, s, c, eps0, n, llo, lhi, S, &j, &rc))
        return 1;
    out->err = log(4.0) * (double)j; /* log a_j - log a (a ~ eps^2) */
    int same = 0, finite = isfinite(s->fl);
    if (finite) {
        same = select_rev(run, w, s, c, eps0, n, llo, lhi, S, j, &rc);
        if (rc)
            return 1;
    }
    if (same) {
        out->la = s->fl;
        out->acc = log(unif(noise)) < s->fl;
    }
    if (out->acc) {
        swapp(&w->theta, &s->fx);
        swapp(&w->grad, &s->fg);
        out->loss = s->floss;
        out->r2 = s->fr2;
    }
    s->tail.steps_all++;
    s->tail.grads_all += s->calls;
    if (m >= (int64_t)floor(run->opt.burn_in * (double)run->opt.steps)) {
        tally *tl = &s->tail;
        tl->moves++;
        tl->grads += s->calls;
        tl->accepted += out->acc;
        tl->rev_fail += finite && !same;
        tl->nonfinite += !finite;
        tl->hist[j + SMAX]++;
    }
    if (m + 1 == run->opt.steps && c->tally && c->slot >= 0 && c->slot < c->tally->chains) {
        c->tally->t[c->slot] = s->tail;
        c->tally->done[c->slot] = 1;
    }
    return 0;
}

/* SIVE_STAT_AUTO_STEP_GRADS and _RESCALED of each finished chain (its
 * tail's gradient calls per step, its share of moves with j != 0) and
 * their means over them. */
static void autostep_stats(const sivei_autostep_run *r, sive_result *res)
{
    for (int32_t c = res->begin; c < res->end; c++) {
        sivei_chain_out *ch = sivei_chain(res, c);
        const int32_t k = c - res->begin;
        if (ch->status != SIVE_CHAIN_OK || k >= r->chains || !r->done[k] || !r->t[k].moves)
            continue;
        const tally *x = &r->t[k];
        const double mv = (double)x->moves;
        ch->stat[SIVE_STAT_AUTO_STEP_GRADS] = (double)x->grads / mv;
        ch->stat[SIVE_STAT_AUTO_STEP_RESCALED] = (double)(x->moves - x->hist[SMAX]) / mv;
    }
    sivei_result_pool_mean(res, SIVE_STAT_AUTO_STEP_GRADS);
    sivei_result_pool_mean(res, SIVE_STAT_AUTO_STEP_RESCALED);
}

int sivei_autostep_note(const sivei_run *run, const sivei_autostep_run *r, sive_result *res)
{
    if (!r)
        return SIVE_OK;
    autostep_stats(r, res);
    tally all;
    memset(&all, 0, sizeof all);
    int chains = 0;
    for (int32_t c = 0; c < r->chains; c++) {
        if (!r->done[c])
            continue;
        chains++;
        const tally *x = &r->t[c];
        all.moves += x->moves;
        all.grads += x->grads;
        all.accepted += x->accepted;
        all.rev_fail += x->rev_fail;
        all.nonfinite += x->nonfinite;
        all.steps_all += x->steps_all;
        all.grads_all += x->grads_all;
        for (int k = 0; k < 2 * SMAX + 1; k++)
            all.hist[k] += x->hist[k];
    }
    if (!chains || !all.moves)
        return SIVE_OK;
    const int S = (int)run->opt.auto_step;
    const double mv = (double)all.moves;
    char line[1024];
    int len = snprintf(line, sizeof line,
                       "auto_step %d: tail gradient calls per step %.3g (mean over %d chains; "
                       "%.3g over the whole chain), acceptance %.3f, reverse check rejected "
                       "%.3f, non-finite %.3f; chosen step eps0*2^j, j:",
                       S, (double)all.grads / mv, chains,
                       (double)all.grads_all / (double)all.steps_all, (double)all.accepted / mv,
                       (double)all.rev_fail / mv, (double)all.nonfinite / mv);
    for (int k = -S; k <= S && len < (int)sizeof line - 32; k++)
        if (all.hist[k + SMAX])
            len += snprintf(line + len, sizeof line - (size_t)len, " %+d %.3f", k,
                            (double)all.hist[k + SMAX] / mv);
    snprintf(line + len, sizeof line - (size_t)len, "\n");
    return sivei_health_append(res, line);
}
