/* Metropolis-adjusted Langevin (SIVE_OPT_METROPOLIS; docs/theory.md
 * "Metropolis-adjusted step").  With U = t L + ||theta - theta*||^2/(2 h^2)
 * and eta(theta) = a(theta)/t, the Langevin move
 *   theta' = mu(theta) + sqrt(2 eta) xi,  mu(x) = x - eta(theta) grad U(x)
 * is a proposal, accepted with probability min(1, exp(log_alpha)),
 *   log_alpha = U(theta) - U(theta') - |theta - mu'(theta')|^2/(4 eta')
 *               + |theta' - mu(theta)|^2/(4 eta) + (d/2) log(eta/eta'),
 * (eta' = eta(theta'), mu' its drift, d the moved parameters) so exp(-U)
 * is the chain's stationary law exactly, whatever the function eta(.).
 * The gradient and loss at an accepted proposal are kept for the next step
 * (the chain then makes no gradient call of its own: one call per step).
 * The step depends on the state through its displacement from theta*:
 * log a(theta) = log a0 + beta (z(theta) - zbar), z the log mean square
 * displacement per parameter.  Each chain adapts a0 (from base_lr) and
 * beta over the burn-in toward an acceptance of 0.574, independent of z,
 * then freezes them: the tail is a time-homogeneous chain with the exact
 * law.
 * With SIVE_OPT_PRECONDITION the proposal is preconditioned by the chain's
 * frozen diagonal P (sampler_precond.c),
 *   theta' = mu_P(theta) + sqrt(2 eta) sqrt(P) xi,
 *   mu_P(x) = x - eta P grad U(x),
 * and its density enters log_alpha in the P^-1 metric,
 *   |theta' - mu_P(theta)|^2_{P^-1} - |theta - mu_P(theta')|^2_{P^-1}
 * over 4 eta (det P is the same both ways and cancels).  P is learnt from
 * the gradients at the chain's states while it runs with P = I for
 * m < precond_end (the first half of the burn-in), then frozen, so the
 * step's frozen values (its means over the burn-in's last quarter) are
 * adapted to the frozen P; both are fixed before the tail.
 * With the experimental leapfrog = K > 1 each step is a Hamiltonian Monte
 * Carlo step instead (hmc_move(): momentum N(0, P^-1), 1 .. 2K-1 leapfrog
 * moves, the same adaptation toward HMC_TARGET with beta = 0; docs/theory.md
 * "Hamiltonian steps"); leapfrog 1 is the Langevin proposal above.  Its
 * moves are sivei_leapfrog() (leapfrog.c), as the auto step's and delayed
 * rejection's.
 * With the experimental auto_step = S >= 1 the size of each move is
 * chosen per move among the base step times 2^j, |j| <= S, reversibly
 * (sampler_autostep.c; docs/theory.md "Locally adaptive step"); the base
 * adapts toward the chosen steps, beta = 0.  With the experimental
 * delayed_rejection = k >= 2 a rejected trajectory gets a second, finer
 * stage instead (sampler_drhmc.c; hooks marked delayed_rejection); the two
 * are not combined.  With the experimental replicas = R >= 2 each chain
 * also holds R - 1 rungs at t/q^k, each a mala_work of its own moved by
 * the same kernel, and swaps neighbours after every step (hooks marked
 * replicas; the ladder and the swaps in sampler_replica.c).  With the
 * experimental orbit_every = k >= 1 the chain's state also makes an orbit
 * move (the model's sive_model.move) after every k-th step (hooks marked
 * orbit; the move in sampler_orbit.c; with experimental kron_every the
 * library's layer-block Newton move, sampler_kron.c).  With experimental
 * precondition_rank = K >= 1 the Langevin proposal and its reverse density
 * use a constant dense low-rank P estimated from the Hessian
 * (sampler_lowrank.c; hooks marked precondition_rank). */
#include "drhmc.h"
#include "leapfrog.h"
#include "lowrank.h"
#include "orbit.h"
#include "replica.h"
#include "sampler.h"
#include "sampler_autostep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_ACCEPT 0.574 /* MALA's optimal rate (Roberts & Rosenthal 1998) */
#define STEP_RANGE 1e4      /* the step stays in [base_lr, base_lr] * RANGE^(-1, 1) */
#define BETA_MIN (-4.0)     /* the exponent of the step's position dependence */
#define BETA_MAX 0.0
#define HMC_TARGET 0.70     /* leapfrog > 1: Hamiltonian steps' acceptance target */
#define HMC_JITTER 0.2      /* and their step size, uniform in eps (1 -+ JITTER) */

typedef struct mala_run {
    double *accept, *step; /* per chain of the run's range: tail rate, frozen a */
    double *beta;          /* per chain: the frozen exponent of a(theta)         */
    int32_t begin, count;
    uint64_t *all;         /* 0 .. n-1: the whole data set (data models) */
    sivei_drhmc_run *dr;   /* delayed_rejection: per-chain counts, else NULL */
    sivei_autostep_run *autostep; /* auto_step: the chains' tallies, else NULL */
    sivei_replica_run *rep; /* replicas: the chains' swap counts, else NULL */
    sivei_orbit_run *orb;   /* orbit: the chains' move tallies, else NULL */
    sivei_lowrank_run *lr;  /* precondition_rank: theta*'s P, else NULL */
} mala_run;

typedef struct mala_work {
    void *prop, *gprop; /* the proposal and its gradient (dim, model dtype) */
    double *mom;        /* leapfrog > 1: the momentum (dim), else NULL       */
    double loss;        /* the exact loss at w->theta, when have           */
    int have;           /* w->grad and loss belong to w->theta             */
    int32_t chain;
    sivei_precond *pc; /* the chain's preconditioner; NULL: P = I */
    double log_a, log_a_sum; /* log of the step at z = zbar */
    int64_t n_sum, tries, accepted;
    /* the step's position dependence: log a(theta) = log_a + beta
     * (z(theta) - zbar), z = log(2 base_lr/t + r2/moved) (disp_z) */
    double r2;               /* |theta - theta*|^2 of the state, when have */
    double beta, zbar, vz;   /* the exponent, z's running mean and variance */
    double beta_sum, zbar_sum;
    sivei_drhmc *dr; /* delayed_rejection (sampler_drhmc.c), else NULL */
    sivei_autostep *as; /* auto_step: its buffers, else NULL */
    double as_err;      /* auto_step: the last move's log(a_chosen/a) */
    /* replicas: rung 0 (the chain's, whose state is w->theta, w->grad)
     * holds rungs 1 .. R-1 in rungs[k-1] and the swaps' state in rep; a
     * rung k >= 1 holds its state and gradient in theta, grad */
    int rung, nr; /* nr: the rungs allocated in rungs (R - 1) */
    struct mala_work **rungs;
    sivei_replica *rep;
    void *theta, *grad;
    sivei_orbit orb; /* orbit: the chain's moves (rung 0 only) */
    sivei_lowrank *lr; /* precondition_rank: the chain's P, else NULL */
} mala_work;

/* leapfrog > 1 without metropolis comes here to be refused */
static int mala_active(const sivei_options *o)
{
    return o->metropolis != 0 || o->leapfrog > 1 || sivei_drhmc_on(o) || o->auto_step > 0 ||
           sivei_replica_on(o) || sivei_orbit_on(o) || sivei_lowrank_on(o);
}

/* Hamiltonian steps (leapfrog > 1, or the auto step's trajectories): no
 * position dependence */
static int hamiltonian(const sivei_options *o) { return o->leapfrog > 1 || o->auto_step > 0; }

static int64_t burn_end(const sivei_options *o)
{
    return (int64_t)floor(o->burn_in * (double)o->steps);
}

/* The step adapts over the whole burn-in (later, relaxed states count). */
static int64_t adapt_end(const sivei_options *o) { return burn_end(o); }

/* The preconditioner is learnt in m < precond_end, frozen from there on:
 * half-way through the step's adaptation, so the step's frozen values
 * (averaged over the burn-in's last quarter) are adapted to the frozen P. */
static int64_t precond_end(const sivei_options *o) { return adapt_end(o) / 2; }

/* The exact loss at theta (and its gradient into grad) from the model's
 * gradient callback on the whole data set. */
static int exact_grad(const sivei_run *run, const mala_run *s, const void *theta,
                      void *grad, double *loss, int32_t c, int32_t worker, int64_t m,
                      uint64_t seed)
{
    const uint64_t n = run->model.n_examples;
    sive_batch gb = {.index = n ? s->all : NULL, .n_groups = 1,
                     .group_size = n ? (size_t)n : (size_t)run->opt.grad_batch,
                     .seed = seed, .chain = c, .worker = worker, .step = m};
    *loss = NAN;
    sivei_clear_error();
    return run->model.grad(theta, run->model.dim, &gb, grad, loss, run->model.user);
}

/* The options and model the sampler refuses (sampler.h); also what the
 * default SIVE_OPT_METROPOLIS = -1 checks (defaults.c). */
int sivei_mala_refuse(const sivei_options *o, const sive_model *model, char *err)
{
    if (o->leapfrog > 1 && !o->metropolis)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "leapfrog %lld: Hamiltonian steps are Metropolis-adjusted: set "
                         "metropolis 1",
                         (long long)o->leapfrog);
    if (sivei_drhmc_refuse(o, err) || sivei_replica_refuse(o, err) ||
        sivei_orbit_refuse(o, model, err) || sivei_lowrank_refuse(o, err))
        return SIVE_E_INVALID_ARG;
    if (o->auto_step > 0 && !o->metropolis)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "auto_step %lld: the locally adaptive step is a Metropolis move: set "
                         "metropolis 1",
                         (long long)o->auto_step);
    if (o->auto_step > 0 && sivei_drhmc_on(o))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "auto_step %lld with delayed_rejection %lld: two different ways of "
                         "shrinking a rejected step; set one of them",
                         (long long)o->auto_step, (long long)o->delayed_rejection);
    if (o->grad_control_variate)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis steps with the exact gradient: not with "
                         "grad_control_variate");
    /* no step bias is left to extrapolate, and the run at base_lr/2 would
     * adapt its step to the same place */
    if (o->step_extrapolate)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis has no step bias to extrapolate: not with "
                         "step_extrapolate");
    const uint64_t n = model->n_examples;
    if (n && ((uint64_t)o->grad_batch != n || o->replacement))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis needs the exact loss: with a data set, grad_batch = "
                         "n_examples (%llu) and replacement 0 (got grad_batch %lld, "
                         "replacement %lld)",
                         (unsigned long long)n, (long long)o->grad_batch,
                         (long long)o->replacement);
    if (adapt_end(o) < 2)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis adapts its step in the burn-in: floor(burn_in*steps) "
                         "is below 2");
    return SIVE_OK;
}

static void mala_release(sivei_run *run, void *state)
{
    (void)run;
    mala_run *s = state;
    if (s) {
        free(s->accept);
        free(s->step);
        free(s->beta);
        free(s->all);
        sivei_drhmc_run_free(s->dr);
        sivei_autostep_run_free(s->autostep);
        sivei_replica_run_free(s->rep);
        sivei_orbit_run_free(s->orb);
        sivei_lowrank_run_free(s->lr);
    }
    free(s);
}

/* Checks, the run's tables, and the loss at theta* (which must be given). */
static int mala_prepare(sivei_run *run, void **state, char *err)
{
    int rc = sivei_mala_refuse(&run->opt, &run->model, err);
    if (!rc)
        rc = sivei_orbit_refuse_run(run, err);
    if (rc)
        return rc;
    const uint64_t n = run->model.n_examples;
    const size_t el = sivei_model_el(&run->model);
    mala_run *s = calloc(1, sizeof *s);
    void *g = malloc(run->model.dim * el);
    *state = s;
    if (s) {
        s->begin = run->r->begin;
        s->count = run->r->end - run->r->begin;
        s->accept = malloc((size_t)s->count * sizeof *s->accept);
        s->step = malloc((size_t)s->count * sizeof *s->step);
        s->beta = malloc((size_t)s->count * sizeof *s->beta);
        s->all = n ? malloc((size_t)n * sizeof *s->all) : NULL;
        s->dr = sivei_drhmc_on(&run->opt) ? sivei_drhmc_run_new(s->count) : NULL;
        if (run->opt.auto_step > 0)
            s->autostep = sivei_autostep_run_new(s->count);
        if (sivei_replica_on(&run->opt))
            s->rep = sivei_replica_run_new(&run->opt, s->count);
        if (sivei_orbit_on(&run->opt))
            s->orb = sivei_orbit_run_new(s->count);
    }
    if (!s || !g || !s->accept || !s->step || !s->beta || (n && !s->all) ||
        (sivei_drhmc_on(&run->opt) && !s->dr) || (run->opt.auto_step > 0 && !s->autostep) ||
        (sivei_replica_on(&run->opt) && !s->rep) || (sivei_orbit_on(&run->opt) && !s->orb)) {
        free(g);
        return sivei_fail(err, SIVE_E_NOMEM, "out of memory for the metropolis sampler");
    }
    for (uint64_t i = 0; i < n; i++)
        s->all[i] = i;
    for (int32_t i = 0; i < s->count; i++)
        s->accept[i] = s->step[i] = s->beta[i] = NAN;
    memset(g, 0, run->model.dim * el);
    double loss = 0.0; /* star_exact: the defaults' calls stored a finite one */
    if (!run->star_exact)
        rc = sivei_grad_at_star(&run->model, run->opt.grad_batch, s->all, run->theta_star, 0, g,
                                &loss);
    free(g);
    if (rc) {
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "gradient callback returned %d at theta* (metropolis' check)", rc);
        return SIVE_OK;
    }
    if (!isfinite(loss))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "metropolis needs the exact loss: the gradient callback stored no "
                         "finite loss in *loss at theta*");
    if (sivei_lowrank_on(&run->opt)) { /* the estimate at theta* (sampler_lowrank.c) */
        int cb = 0;
        if (sivei_lowrank_run_new(run, s->all, s->count, &s->lr, &cb))
            return sivei_fail(err, SIVE_E_NOMEM, "out of memory for precondition_rank");
        if (cb)
            sivei_run_fail(run, SIVE_E_CALLBACK, cb,
                           "gradient callback returned %d near theta* (precondition_rank's "
                           "Hessian estimate)",
                           cb);
    }
    return SIVE_OK;
}

static void mala_work_release(void *state)
{
    mala_work *s = state;
    if (s) {
        free(s->prop);
        free(s->gprop);
        free(s->mom);
        free(s->theta);
        free(s->grad);
        sivei_drhmc_free(s->dr);
        sivei_autostep_free(s->as);
        sivei_replica_free(s->rep);
        sivei_lowrank_free(s->lr);
        sivei_orbit_work_release(&s->orb);
        for (int k = 0; s->rungs && k < s->nr; k++)
            mala_work_release(s->rungs[k]);
        free(s->rungs);
    }
    free(s);
}

/* One rung's buffers (rung 0: the chain's own; NULL on failure). */
static mala_work *work_new(const sivei_run *run, int rung)
{
    const size_t el = sivei_model_el(&run->model), d = run->model.dim;
    mala_work *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->rung = rung;
    s->prop = malloc(d * el);
    s->gprop = calloc(d, el);
    if (hamiltonian(&run->opt))
        s->mom = malloc(d * sizeof *s->mom);
    if (sivei_drhmc_on(&run->opt))
        s->dr = sivei_drhmc_new(run);
    if (run->opt.auto_step > 0)
        s->as = sivei_autostep_new(run);
    if (rung) {
        s->theta = malloc(d * el);
        s->grad = calloc(d, el);
    }
    if (sivei_lowrank_on(&run->opt))
        s->lr = sivei_lowrank_new(run);
    const int orb = rung || sivei_orbit_work_init(&s->orb, run) == SIVE_OK; /* rung 0 only */
    if (orb && s->prop && s->gprop && (s->mom || !hamiltonian(&run->opt)) &&
        (s->lr || !sivei_lowrank_on(&run->opt)) &&
        (s->dr || !sivei_drhmc_on(&run->opt)) && (s->as || !run->opt.auto_step) &&
        (!rung || (s->theta && s->grad)))
        return s;
    mala_work_release(s);
    return NULL;
}

static int mala_work_init(sivei_work *w, void **state)
{
    const sivei_run *run = w->run;
    mala_work *s = work_new(run, 0);
    *state = s;
    if (!s || !sivei_replica_on(&run->opt))
        return s ? SIVE_OK : SIVE_E_NOMEM;
    const int R = (int)run->opt.replicas;
    s->rep = sivei_replica_new(&run->opt);
    s->rungs = calloc((size_t)R - 1, sizeof *s->rungs);
    if (!s->rep || !s->rungs)
        return SIVE_E_NOMEM; /* released by the caller */
    s->nr = R - 1;
    for (int k = 1; k < R; k++)
        if (!(s->rungs[k - 1] = work_new(run, k)))
            return SIVE_E_NOMEM;
    return SIVE_OK;
}

/* w->theta is theta* here: the proposal buffer starts as its copy, so the
 * parameters the chain does not move hold theta*'s values in both. */
static void work_start(sivei_work *w, mala_work *s, int32_t c)
{
    const sivei_run *run = w->run;
    const size_t el = sivei_model_el(&run->model);
    memcpy(s->prop, w->theta, run->model.dim * el);
    if (s->rung) /* replicas: every rung starts at theta* */
        memcpy(s->theta, w->theta, run->model.dim * el);
    s->have = 0;
    s->chain = c;
    s->pc = sivei_precond_of(w); /* reset by its own chain_start, before this */
    /* a given step (the radius search's pilots): fixed, beta stays 0 */
    s->log_a = log(run->opt.mala_step > 0.0 ? run->opt.mala_step : run->opt.base_lr);
    s->log_a_sum = 0.0;
    s->n_sum = s->tries = s->accepted = 0;
    s->r2 = s->beta = s->zbar = s->vz = s->beta_sum = s->zbar_sum = 0.0;
    if (s->dr)
        sivei_drhmc_chain_start(s->dr, run, w->theta);
    if (s->as)
        sivei_autostep_chain_start(s->as, w);
    sivei_orbit_chain_start(&s->orb, &run->opt);
}

static void mala_chain_start(sivei_work *w, void *state, int32_t c)
{
    mala_work *s = state;
    work_start(w, s, c);
    if (!s->rep)
        return;
    sivei_replica_chain_start(s->rep);
    for (int k = 1; k < (int)w->run->opt.replicas; k++)
        work_start(w, s->rungs[k - 1], c);
}

static int mala_cached(sivei_work *w, void *ws, double *loss)
{
    (void)w;
    const mala_work *s = ws;
    if (s->have)
        *loss = s->loss;
    return s->have;
}

/* Sums over the moved parameters that the proposal and its acceptance
 * need: |g|^2, |theta - theta*|^2, |theta' - mu(theta)|^2. */
typedef sivei_prop_sums sums; /* lowrank.h: g2, r2, fwd, r2p = |theta' - theta*|^2 */

/* mu(x)_i = x_i - P_i (a g_i + kt (x_i - theta*_i)) with g = grad L(x), i.e.
 * x - eta P grad U(x); pc NULL: P = I, with the plain chain's operations
 * (and bits). */
static inline double drift(double th, double x, double g, double a, double kt,
                           const sivei_precond *pc, size_t i)
{
    return pc ? sivei_precond_drift(th, x, g, pc->p[i], a, kt) : th - a * g - kt * x;
}

/* The proposal's noise factor sqrt(P_i), and P_i, whose inverse weighs
 * coordinate i in the proposal density's metric. */
static inline double noise_factor(const sivei_precond *pc, size_t i)
{
    return pc ? pc->sp[i] : 1.0;
}

static inline double metric(const sivei_precond *pc, size_t i) { return pc ? pc->p[i] : 1.0; }

/* The preconditioner of step m: none while the chain learns it from the
 * gradients at its states (m < precond_end), then frozen; NULL without
 * the option. */
static const sivei_precond *precond_at(const sivei_run *run, const sivei_work *w,
                                       mala_work *s, int64_t m)
{
    sivei_precond *pc = s->pc;
    if (!pc || pc->frozen)
        return pc;
    if (m < precond_end(&run->opt)) {
        sivei_precond_observe(run, pc, w->grad);
        return NULL;
    }
    sivei_precond_freeze(run, pc);
    return pc;
}

/* theta' = mu(theta) + sqrt(2 eta) sqrt(P) xi into s->prop, with eta = a/t
 * (a the step at theta, step_at(); t the chain's at this step, w->t_step:
 * below run->opt.t only in an annealed burn-in, where the proposal and its
 * acceptance target the law at that t). */
static sums propose(const sivei_run *run, sivei_work *w, mala_work *s,
                    const sivei_precond *pc, sivei_pcg32 *noise, double a)
{
    const int f32 = run->model.dtype == SIVE_F32;
    const double eta = a / w->t_step, kt = eta / (run->h * run->h);
    const double kn = sqrt(2.0 * eta);
    if (s->lr) /* precondition_rank: the dense low-rank P (sampler_lowrank.c) */
        return sivei_lowrank_propose(run, s->lr, w, s->prop, noise, a, w->t_step);
    sums q = {0.0, 0.0, 0.0, 0.0};
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i0 = b; i0 < e; i0 += SIVEI_NOISE_CHUNK) {
            size_t nb = e - i0 < SIVEI_NOISE_CHUNK ? e - i0 : SIVEI_NOISE_CHUNK;
            sivei_sampler_normals(run, noise, w->noise, nb);
            for (size_t j = 0; j < nb; j++) {
                size_t i = i0 + j;
                double th = sivei_sampler_val(run, w->theta, i);
                double x = th - sivei_sampler_val(run, run->theta_star, i);
                double g = sivei_sampler_val(run, w->grad, i);
                double xi = sivei_sampler_val(run, w->noise, j);
                double mu = drift(th, x, g, a, kt, pc, i);
                double p = mu + noise_factor(pc, i) * kn * xi;
                if (f32)
                    ((float *)s->prop)[i] = (float)p;
                else
                    ((double *)s->prop)[i] = p;
                p = sivei_sampler_val(run, s->prop, i); /* as stored */
                const double xp = p - sivei_sampler_val(run, run->theta_star, i);
                q.r2p += xp * xp;
                p -= mu;
                q.g2 += g * g;
                q.r2 += x * x;
                q.fwd += p * p / metric(pc, i);
            }
        }
    }
    return q;
}

/* log_alpha of the proposal in s->prop (gradient s->gprop, loss lp), made
 * with step a at theta; ab is the step at the proposal (the reverse move's),
 * or -inf when the loss or the gradient there is not finite. */
static double log_alpha(const sivei_run *run, const sivei_work *w, const mala_work *s,
                        const sivei_precond *pc, const sums *q, double lp, double a,
                        double ab)
{
    const double t = w->t_step, eta = ab / t, kt = eta / (run->h * run->h);
    double r2p = 0.0, bwd = 0.0;
    if (s->lr) /* precondition_rank */
        sivei_lowrank_back(run, s->lr, w->theta, s->prop, s->gprop, ab, t, &r2p, &bwd);
    for (size_t k = 0; !s->lr && k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i = b; i < e; i++) {
            double p = sivei_sampler_val(run, s->prop, i);
            double x = p - sivei_sampler_val(run, run->theta_star, i);
            double mu = drift(p, x, sivei_sampler_val(run, s->gprop, i), ab, kt, pc, i);
            double back = sivei_sampler_val(run, w->theta, i) - mu;
            r2p += x * x;
            bwd += back * back / metric(pc, i);
        }
    }
    double la = -t * (lp - s->loss) - (r2p - q->r2) / (2.0 * run->h * run->h);
    if (ab == a)
        la += (q->fwd - bwd) / (4.0 * eta);
    else /* the Gaussians' variances differ: their normalisations too */
        la += q->fwd / (4.0 * a / t) - bwd / (4.0 * eta) +
              0.5 * (double)run->moved * log(a / ab);
    return isfinite(lp) && isfinite(la) ? la : -INFINITY;
}

static void swap(void **x, void **y)
{
    void *t = *x;
    *x = *y;
    *y = t;
}

/* z(theta) = log(2 base_lr/t + |theta - theta*|^2/moved): the log of the
 * state's mean square displacement per moved parameter, floored at the
 * variance of one step's noise at base_lr (finite at theta*). */
static double disp_z(const sivei_run *run, double r2)
{
    return log(2.0 * run->opt.base_lr / run->opt.t + r2 / (double)run->moved);
}

/* The step at a state at squared distance r2 from theta*: a(theta) =
 * exp(log_a + beta (z - zbar)), kept within base_lr * STEP_RANGE^(-1, 1).
 * After the burn-in a fixed function of the state. */
static double step_at(const sivei_run *run, const mala_work *s, double r2)
{
    const double lo = log(run->opt.base_lr);
    double la = s->log_a + s->beta * (disp_z(run, r2) - s->zbar);
    return exp(fmin(fmax(la, lo - log(STEP_RANGE)), lo + log(STEP_RANGE)));
}

/* The adaptation, in m < adapt_end (the whole burn-in): Robbins-Monro on
 * log a toward TARGET_ACCEPT, and a stochastic regression of log a on z
 * (the proposal was made at z): beta moves until the acceptance does not
 * depend on z (beta < 0: the step shrinks where the chain is far from
 * theta* and the loss stiffer).  zbar and vz are z's running mean and
 * variance.  At the end all three are frozen at their means over the
 * burn-in's last quarter: the tail's step is a fixed function of the
 * state. */
static void adapt(const sivei_run *run, mala_work *s, int64_t m, double la, double z)
{
    const int64_t end = adapt_end(&run->opt);
    if (m >= end || run->opt.mala_step > 0.0) /* a step given: not adapted */
        return;
    const double p = la >= 0.0 ? 1.0 : exp(la), lo = log(run->opt.base_lr);
    const int ham = hamiltonian(&run->opt);
    /* the auto step: toward the steps its moves choose */
    const double gain = 0.5 * pow(1.0 + (double)m / 20.0, -0.6),
                 e = s->as ? s->as_err : p - (ham ? HMC_TARGET : TARGET_ACCEPT);
    const double rho = fmax(1.0 / (double)(m + 1), 1e-3), dz = z - s->zbar;
    s->log_a += gain * e;
    s->log_a = fmin(fmax(s->log_a, lo - log(STEP_RANGE)), lo + log(STEP_RANGE));
    s->zbar += rho * dz;
    s->vz += rho * (dz * dz - s->vz);
    if (!ham) { /* a Hamiltonian step must not depend on the state: beta 0 */
        s->beta += gain * e * dz / fmax(s->vz, 1e-2);
        s->beta = fmin(fmax(s->beta, BETA_MIN), BETA_MAX);
    }
    if (m >= end - (end + 3) / 4) {
        s->log_a_sum += s->log_a;
        s->beta_sum += s->beta;
        s->zbar_sum += s->zbar;
        s->n_sum++;
    }
    if (m + 1 == end) {
        s->log_a = s->log_a_sum / (double)s->n_sum;
        s->beta = s->beta_sum / (double)s->n_sum;
        s->zbar = s->zbar_sum / (double)s->n_sum;
    }
}

static int mala_tally(sivei_run *run, mala_run *r, mala_work *s, int64_t m, double la,
                      double z, int acc);

/* The gradient call at a proposal, its failure recorded as the run's. */
static int call_at(sivei_run *run, sivei_work *w, mala_run *r, mala_work *s,
                   sivei_chain_out *out, sivei_pcg32 *noise, int64_t m, double *lp)
{
    int rc = exact_grad(run, r, s->prop, s->gprop, lp, s->chain, w->worker, m,
                        sivei_pcg32_next64(noise));
    if (rc) {
        out->status = SIVE_CHAIN_CALLBACK;
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "gradient callback returned %d at chain %d step %lld (proposal)", rc,
                       (int)s->chain, (long long)m);
    }
    return rc;
}

/* The Hamiltonian step's gradient calls (its leapfrog trajectory and
 * delayed_rejection's, sampler_drhmc.c): call_at at x. */
typedef struct dr_ctx {
    sivei_run *run;
    sivei_work *w;
    mala_run *r;
    mala_work *s;
    sivei_chain_out *out;
    sivei_pcg32 *noise;
    int64_t m;
} dr_ctx;

static int hmc_grad(void *ctx, const void *x, void *g, double *lp)
{
    dr_ctx *c = ctx;
    void *prop = c->s->prop, *gprop = c->s->gprop;
    c->s->prop = (void *)x;
    c->s->gprop = g;
    int rc = call_at(c->run, c->w, c->r, c->s, c->out, c->noise, c->m, lp);
    c->s->prop = prop;
    c->s->gprop = gprop;
    return rc;
}

static double uniform(sivei_pcg32 *noise)
{
    return (double)(sivei_pcg32_next64(noise) >> 11) * 0x1p-53;
}

/* One Hamiltonian step (leapfrog = K > 1; docs/theory.md "Hamiltonian
 * steps"): momentum p ~ N(0, P^-1) (P the frozen preconditioner, or I),
 * K leapfrog moves of size eps = sqrt(2 a/t) (1 + JITTER u), u uniform in
 * [-1, 1], K uniform in 1 .. 2 leapfrog - 1 (a trajectory of fixed length
 * returns to its start in a direction whose period it matches: random
 * lengths break that), on H = U(theta) + p'Pp/2,
 *   p -= eps/2 grad U;  theta += eps P p;  p -= eps/2 grad U,
 * then the end point accepted with probability min(1, exp(H - H')).  K = 1
 * is the Langevin proposal (eps^2/2 = eta); each move costs one gradient
 * call, the state's own gradient is reused.  A trajectory through a point
 * whose loss is not finite is rejected there (U = +inf), which is the same
 * event for the trajectory and its reverse.  U and eps use the chain's t at
 * this step, w->t_step (below run->opt.t only in an annealed burn-in: the
 * hot chains' trajectories run on U at t/kappa, while a adapts as in any
 * burn-in and freezes over its last quarter, at t).  *la is log alpha,
 * *acc 1 when accepted; returns 1 when the chain must stop. */
static int hmc_move(sivei_run *run, sivei_work *w, mala_run *r, mala_work *s,
                    const sivei_precond *pc, sivei_pcg32 *noise, int64_t m, double a,
                    double *gnorm, double *disp, double *la, int *acc)
{
    sivei_chain_out *out = sivei_chain(run->r, s->chain);
    const double t = w->t_step;
    const double eps = sqrt(2.0 * a / t) * (1.0 + HMC_JITTER * (2.0 * uniform(noise) - 1.0));
    /* the number of moves, uniform in 1 .. 2 leapfrog - 1 (mean leapfrog) */
    const int64_t K = 1 + (int64_t)(uniform(noise) * (double)(2 * run->opt.leapfrog - 1));
    double g2 = 0.0, r2 = 0.0;
    double *p0 = s->dr ? sivei_drhmc_p0(s->dr) : NULL; /* delayed_rejection */
    sivei_chunks it = sivei_chunks_start(run);
    while (sivei_chunks_next(&it, noise, w->noise))
        for (size_t j = 0; j < it.nb; j++) {
            const size_t i = it.i0 + j;
            const double x = sivei_sampler_val(run, w->theta, i) -
                             sivei_sampler_val(run, run->theta_star, i);
            const double g = sivei_sampler_val(run, w->grad, i);
            const double p = sivei_sampler_val(run, w->noise, j) / noise_factor(pc, i);
            if (p0)
                p0[i] = p;
            g2 += g * g;
            r2 += x * x;
            s->mom[i] = p;
        }
    *gnorm = sqrt(g2);
    *disp = sqrt(r2 * (1.0 / (double)run->moved));
    *la = -INFINITY;
    *acc = 0;
    if (!isfinite(s->loss) || !isfinite(g2))
        return 1;
    sivei_leapfrog_end e;
    dr_ctx c = {run, w, r, s, out, noise, m};
    if (sivei_leapfrog(run, t, pc, hmc_grad, &c, w->theta, w->grad, s->mom, 1.0, eps, K,
                       s->mom, s->prop, s->gprop, NULL, &e))
        return 1;
    double lp = e.lp, r2p = e.r2;
    *la = sivei_leapfrog_log_ratio(run, t, s->loss, e.r20, e.kin0, &e);
    *acc = log(uniform(noise)) < *la;
    if (s->dr) { /* a rejected trajectory: the second stage (sampler_drhmc.c) */
        const sivei_drhmc_step st = {pc, eps, K, s->loss, r2, *la, *acc,
                                     m >= burn_end(&run->opt), K};
        if (sivei_drhmc_retry(run, w, s->dr, &st, hmc_grad, &c, noise, s->prop, s->gprop,
                              s->mom, &lp, &r2p, acc))
            return 1;
    }
    if (*acc) {
        swap(&w->theta, &s->prop);
        swap(&w->grad, &s->gprop);
        s->loss = lp;
        s->r2 = r2p;
    }
    return 0;
}

/* The auto step's gradient calls (sampler_autostep.c), their failure
 * recorded as the run's. */
typedef struct auto_ctx {
    sivei_run *run;
    sivei_work *w;
    mala_run *r;
    mala_work *s;
    sivei_pcg32 *noise;
    int64_t m;
    const char *what; /* the calls' purpose, in the failure's message */
} auto_ctx;

static int auto_grad(void *ctx, const void *x, void *g, double *lp)
{
    auto_ctx *c = ctx;
    int rc = exact_grad(c->run, c->r, x, g, lp, c->s->chain, c->w->worker, c->m,
                        sivei_pcg32_next64(c->noise));
    if (rc) {
        sivei_chain(c->run->r, c->s->chain)->status = SIVE_CHAIN_CALLBACK;
        sivei_run_fail(c->run, SIVE_E_CALLBACK, rc,
                       "gradient callback returned %d at chain %d step %lld (%s)", rc,
                       (int)c->s->chain, (long long)c->m, c->what);
    }
    return rc;
}

/* One move with the locally chosen step (auto_step > 0). */
static int auto_move(sivei_run *run, sivei_work *w, mala_run *r, mala_work *s,
                     const sivei_precond *pc, sivei_pcg32 *noise, int64_t m, double a,
                     double *gnorm, double *disp, double *la, int *acc)
{
    auto_ctx ctx = {run, w, r, s, noise, m, "auto_step trajectory"};
    sivei_autostep_call c = {auto_grad, &ctx, pc, a, s->loss, r->autostep, s->chain - r->begin};
    sivei_autostep_out o;
    if (sivei_autostep_move(run, w, s->as, noise, &c, m, gnorm, disp, &o))
        return 1;
    *la = o.la;
    *acc = o.acc;
    s->as_err = o.err;
    if (o.acc) {
        s->loss = o.loss;
        s->r2 = o.r2;
    }
    return 0;
}

/* One move of state s (w->theta, w->grad; at w->t_step) with the kernel
 * the options select: the Langevin proposal, a Hamiltonian trajectory or
 * the auto step, then its tally. */
static int move(sivei_run *run, sivei_work *w, mala_run *r, mala_work *s,
                const sivei_precond *pc, sivei_pcg32 *noise, int64_t m, double *gnorm,
                double *disp)
{
    sivei_chain_out *out = sivei_chain(run->r, s->chain);
    const double a = step_at(run, s, s->r2), z = disp_z(run, s->r2);
    double la;
    int acc;
    if (s->as) {
        if (auto_move(run, w, r, s, pc, noise, m, a, gnorm, disp, &la, &acc))
            return 1;
        return mala_tally(run, r, s, m, la, z, acc);
    }
    if (hamiltonian(&run->opt)) {
        if (hmc_move(run, w, r, s, pc, noise, m, a, gnorm, disp, &la, &acc))
            return 1;
        return mala_tally(run, r, s, m, la, z, acc);
    }
    sums q = propose(run, w, s, pc, noise, a);
    *gnorm = sqrt(q.g2);
    *disp = sqrt(q.r2 * (1.0 / (double)run->moved));
    if (!isfinite(s->loss) || !isfinite(q.g2))
        return 1;
    double lp;
    if (call_at(run, w, r, s, out, noise, m, &lp))
        return 1;
    la = log_alpha(run, w, s, pc, &q, lp, a, step_at(run, s, q.r2p));
    acc = log(uniform(noise)) < la;
    if (acc) {
        swap(&w->theta, &s->prop);
        swap(&w->grad, &s->gprop);
        s->loss = lp;
        s->r2 = q.r2p;
    }
    return mala_tally(run, r, s, m, la, z, acc);
}

/* replicas: rung k's state (k = 0: the chain's, in w). */
typedef struct rung_ref {
    void **theta, **grad;
    mala_work *s;
} rung_ref;

static rung_ref rung_at(sivei_work *w, mala_work *s0, int k)
{
    mala_work *s = k ? s0->rungs[k - 1] : s0;
    return (rung_ref){k ? &s->theta : &w->theta, k ? &s->grad : &w->grad, s};
}

typedef struct swap_ctx {
    sivei_work *w;
    mala_work *s;
} swap_ctx;

/* replicas: rungs k and k + 1 exchange their states (the steps stay). */
static void exchange(void *ctx, int k)
{
    swap_ctx *c = ctx;
    rung_ref a = rung_at(c->w, c->s, k), b = rung_at(c->w, c->s, k + 1);
    swap(a.theta, b.theta);
    swap(a.grad, b.grad);
    const double l = a.s->loss, r2 = a.s->r2;
    a.s->loss = b.s->loss;
    a.s->r2 = b.s->r2;
    b.s->loss = l;
    b.s->r2 = r2;
}

/* replicas, after rung 0's move: rungs 1 .. R-1 moved at t/q^k (their
 * state swapped into w for the move; trace norms discarded), then the
 * swaps; at the last step the rungs' tallies into the run's table. */
static int replica_step(sivei_run *run, sivei_work *w, mala_run *r, mala_work *s0,
                        const sivei_precond *pc, sivei_pcg32 *noise, int64_t m)
{
    const int R = (int)run->opt.replicas;
    const double t0 = w->t_step;
    double loss[64], acc[128], gn, dp; /* acc: the rungs' acceptances, then log a */
    int rc = 0;
    loss[0] = s0->loss;
    for (int k = 1; k < R && !rc; k++) {
        rung_ref q = rung_at(w, s0, k);
        w->t_step = sivei_replica_t(&run->opt, t0, k);
        swap(&w->theta, q.theta);
        swap(&w->grad, q.grad);
        rc = move(run, w, r, q.s, pc, noise, m, &gn, &dp);
        swap(&w->theta, q.theta);
        swap(&w->grad, q.grad);
        loss[k] = q.s->loss;
    }
    w->t_step = t0;
    if (rc)
        return 1;
    swap_ctx c = {w, s0};
    sivei_replica_swap(run, s0->rep, m, t0, loss, noise, exchange, &c);
    if (m + 1 == run->opt.steps) {
        for (int k = 0; k < R; k++) {
            const mala_work *q = rung_at(w, s0, k).s;
            acc[k] = q->tries ? (double)q->accepted / (double)q->tries : NAN;
            acc[R + k] = q->log_a;
        }
        sivei_replica_chain_end(r->rep, s0->chain - r->begin, s0->rep, acc);
    }
    return 0;
}

static int mala_step(sivei_run *run, sivei_work *w, void *rs, void *ws, sivei_pcg32 *noise,
                     int64_t m, double *gnorm, double *disp)
{
    mala_run *r = rs;
    mala_work *s = ws;
    sivei_chain_out *out = sivei_chain(run->r, s->chain);
    if (!s->have) { /* the chain's own call at theta_0 */
        s->loss = out->trace[SIVE_TRACE_GRAD_LOSS][m];
        s->have = 1;
        s->r2 = sivei_dist2(run, w->theta);
        if (s->lr)
            sivei_lowrank_chain_start(s->lr, r->lr);
    }
    if (s->lr && run->opt.precondition_update && m == precond_end(&run->opt)) {
        /* precondition_update: the estimate at the chain's state */
        auto_ctx c = {run, w, r, s, noise, m, "precondition_rank's Hessian estimate"};
        if (sivei_lowrank_update(run, s->lr, w->theta, auto_grad, &c, noise))
            return 1;
    }
    const sivei_precond *pc = precond_at(run, w, s, m);
    for (int k = 0; k < s->nr; k++) /* replicas: theta*'s gradient, before rung 0 moves */
        if (!s->rungs[k]->have) {
            mala_work *q = s->rungs[k];
            memcpy(q->grad, w->grad, run->model.dim * sivei_model_el(&run->model));
            q->loss = s->loss;
            q->r2 = s->r2;
            q->have = 1;
        }
    if (move(run, w, r, s, pc, noise, m, gnorm, disp))
        return 1;
    if (r->orb) { /* orbit: after every k-th step, before the replicas' swaps */
        dr_ctx c = {run, w, r, s, out, noise, m};
        const sivei_orbit_state st = {&w->theta, &w->grad, &s->prop, &s->gprop,
                                      &s->loss, &s->r2, s->chain};
        if (sivei_orbit_step(run, w, &s->orb, &st, hmc_grad, &c, noise, m))
            return 1;
        if (m + 1 == run->opt.steps)
            sivei_orbit_chain_end(r->orb, s->chain - r->begin, &s->orb);
    }
    return s->rep ? replica_step(run, w, r, s, pc, noise, m) : 0;
}

/* After a move: the adaptation, the tail's acceptance count, and the
 * chain's frozen values at its last step. */
static int mala_tally(sivei_run *run, mala_run *r, mala_work *s, int64_t m, double la,
                      double z, int acc)
{
    adapt(run, s, m, la, z);
    if (m >= burn_end(&run->opt)) {
        s->tries++;
        s->accepted += acc;
    }
    if (m + 1 == run->opt.steps && !s->rung) {
        r->accept[s->chain - r->begin] = (double)s->accepted / (double)s->tries;
        r->step[s->chain - r->begin] = exp(s->log_a);
        r->beta[s->chain - r->begin] = s->beta;
        if (s->dr)
            sivei_drhmc_chain_end(r->dr, s->chain - r->begin, s->dr);
        if (s->lr)
            sivei_lowrank_chain_end(r->lr, s->chain - r->begin, s->lr);
    }
    return 0;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The tail's acceptance rate and the frozen steps, over the chains that
 * finished, into the health text. */
static int mala_note(sivei_run *run, void *state, sive_result *res)
{
    mala_run *s = state;
    double acc = 0.0;
    int32_t k = 0;
    for (int32_t i = 0; i < s->count; i++)
        if (isfinite(s->accept[i])) {
            acc += s->accept[i];
            s->step[k] = s->step[i];
            s->beta[k++] = s->beta[i];
        }
    if (k == 0)
        return SIVE_OK;
    qsort(s->step, (size_t)k, sizeof *s->step, cmp);
    qsort(s->beta, (size_t)k, sizeof *s->beta, cmp);
    res->mala_step = s->step[k / 2];
    res->mala_accept = acc / k;
    char line[1024];
    int len = snprintf(line, sizeof line,
                       "metropolis: tail acceptance %.3f (mean over %d chains); steps adapted "
                       "in the burn-in: median a = %.4g (%.4g .. %.4g; base_lr %g)",
                       acc / k, (int)k, s->step[k / 2], s->step[0], s->step[k - 1],
                       run->opt.base_lr);
    len += snprintf(line + len, sizeof line - (size_t)len,
                    " at the typical displacement, times (r/r_typ)^(2 beta): median beta "
                    "%.3g (%.3g .. %.3g)",
                    s->beta[k / 2], s->beta[0], s->beta[k - 1]);
    if (run->opt.precondition)
        len += snprintf(line + len, sizeof line - (size_t)len,
                        "; preconditioned (each chain's P learnt in steps < %lld)",
                        (long long)precond_end(&run->opt));
    if (run->opt.auto_step > 0) /* adapt(): toward the chosen steps */
        len += snprintf(line + len, sizeof line - (size_t)len,
                        "; every trial step a trajectory of 1 .. %lld leapfrog moves (mean "
                        "%lld), size sqrt(2a/t) jittered by +-%.0f %% times 2^j, a adapted "
                        "toward the chosen steps (the auto_step line gives the gradient calls "
                        "per step)",
                        (long long)(2 * run->opt.leapfrog - 1), (long long)run->opt.leapfrog,
                        100.0 * HMC_JITTER);
    else if (hamiltonian(&run->opt))
        len += snprintf(line + len, sizeof line - (size_t)len,
                        "; Hamiltonian steps: 1 .. %lld leapfrog moves (gradients) per step, "
                        "mean %lld, size sqrt(2a/t) jittered by +-%.0f %%, acceptance target "
                        "%.2f",
                        (long long)(2 * run->opt.leapfrog - 1), (long long)run->opt.leapfrog, 100.0 * HMC_JITTER, HMC_TARGET);
    snprintf(line + len, sizeof line - (size_t)len, "\n");
    int rc = sivei_health_append(res, line);
    if (!rc && s->dr)
        rc = sivei_drhmc_note(run, s->dr, res);
    if (!rc && s->rep)
        rc = sivei_replica_note(run, s->rep, res);
    if (!rc)
        rc = sivei_orbit_note(run, s->orb, res);
    if (!rc && s->lr)
        rc = sivei_lowrank_note(run, s->lr, res);
    return rc ? rc : sivei_autostep_note(run, s->autostep, res);
}

const sivei_sampler sivei_sampler_mala = {
    .name = "metropolis",
    .active = mala_active,
    .prepare = mala_prepare,
    .release = mala_release,
    .work_init = mala_work_init,
    .work_release = mala_work_release,
    .chain_start = mala_chain_start,
    .step = mala_step,
    .cached = mala_cached,
    .note = mala_note,
};
