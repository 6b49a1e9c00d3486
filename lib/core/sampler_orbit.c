/* Orbit moves (experimental options SIVE_OPT_ORBIT_EVERY = k >= 1,
 * SIVE_OPT_ORBIT_SCALE; docs/theory.md "Orbit moves").
 *
 * A model whose loss is invariant under a group acting on theta (a deep
 * linear network: W_s -> g W_s, W_{s+1} -> W_{s+1} g^-1; a ReLU network:
 * per-neuron positive rescaling) supplies sive_model.move, which proposes
 * theta' = T_g(theta) and returns the log of |det dT_g/dtheta| times the
 * reverse over the forward proposal density (or draws part of theta from
 * its exact conditional, sive_move_info giving it t, h and theta*: the deep
 * linear network's Gibbs layer move, whose ratio is then 1 to rounding).  The library accepts theta'
 * with probability min(1, exp(log_alpha)),
 *   log_alpha = -t (L(theta') - L(theta))
 *               - (|theta' - theta*|^2 - |theta - theta*|^2) / (2 h^2)
 *               + log_ratio,
 * the Metropolis-Hastings ratio of the tethered law at t for a
 * deterministic map with a random g (Green 1995): the law is kept exactly
 * whether or not L is invariant (an exact symmetry only makes the loss term
 * vanish to rounding).  The loss is the exact loss at theta', from one
 * gradient call, whose gradient the chain keeps when the move is accepted.
 * The tether is not invariant, so the moves travel the flat directions the
 * loss leaves to the tether in one step instead of a slow diffusion.  The
 * move's size eps (the scale passed to the callback) adapts in the burn-in
 * toward an acceptance of TARGET by Robbins-Monro on log eps and is frozen
 * at its mean over the burn-in's last quarter: the tail's kernel is
 * time-homogeneous, and each of its pieces (the Langevin step, the orbit
 * move) keeps the tethered law.  A proposal whose theta', loss or gradient is
 * not finite is rejected (log_alpha = -inf) and counted: the chain's law is
 * then the tethered law restricted to where the gradient is finite, as the
 * Langevin proposals' (whose acceptance reads the gradient) already is, and
 * the chain goes on instead of diverging at its next step.  A finite theta'
 * with a non-finite log_ratio (NaN or +-inf; -inf may be meant as "no
 * reverse move") is rejected without the gradient call and counted apart,
 * so that a broken move callback shows on the health line and not only in
 * its acceptance.
 *
 * With kron_every the proposal is the library's layer-block Newton move
 * (sampler_kron.c) instead of the model's: its log_ratio is log q(theta |
 * theta') - log q(theta' | theta), whose reverse part needs the gradient
 * at theta' and so is added after the gradient call; its step s is fixed
 * (kron_step), nothing adapts. */
#include "orbit.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TARGET 0.4     /* the moves' acceptance target (a random-walk move) */
#define EPS_MIN 1e-8   /* log eps stays in [log EPS_MIN, log EPS_MAX] */
#define EPS_MAX 100.0

struct sivei_orbit_run {
    int32_t count;
    double *accept, *eps; /* per chain: the tail's acceptance, the frozen size */
    int64_t *moves;       /* per chain: the moves (gradient calls) made */
    int64_t *nonfinite;   /* per chain: the proposals rejected as not finite */
    int64_t *badratio;    /* per chain: those rejected for a non-finite log_ratio */
};

int sivei_orbit_on(const sivei_options *o) { return o->orbit_every > 0 || sivei_kron_on(o); }

/* The moves' period and the option that set it. */
static int64_t every(const sivei_options *o)
{
    return sivei_kron_on(o) ? o->kron_every : o->orbit_every;
}

static const char *every_name(const sivei_options *o)
{
    return sivei_kron_on(o) ? "kron_every" : "orbit_every";
}

int sivei_orbit_refuse(const sivei_options *o, const sive_model *m, char *err)
{
    if (sivei_kron_on(o))
        return sivei_kron_refuse(o, m, err);
    if (!sivei_orbit_on(o))
        return SIVE_OK;
    if (!o->metropolis)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "orbit_every %lld: orbit moves are accepted on the exact loss: set "
                         "metropolis 1",
                         (long long)o->orbit_every);
    if (m->struct_size < offsetof(sive_model, move) + sizeof m->move)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "orbit_every %lld: the model supplies no move: its struct_size %u "
                         "predates sive_model.move (0.3; a program or binding of an older "
                         "sive.h); set orbit_every 0, or give a model with a move "
                         "(sive_model_init(&m, sizeof m) of a 0.3 header)",
                         (long long)o->orbit_every, (unsigned)m->struct_size);
    if (!m->move)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "orbit_every %lld: the model supplies no move (sive_model.move); "
                         "set it, or orbit_every 0",
                         (long long)o->orbit_every);
    return SIVE_OK;
}

int sivei_orbit_refuse_run(const sivei_run *run, char *err)
{
    if (sivei_orbit_on(&run->opt) && run->moved != run->model.dim)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "%s %lld: the moves change parameters the chains do not move: "
                         "not with parameter ranges (%llu of %zu moved)",
                         every_name(&run->opt), (long long)every(&run->opt),
                         (unsigned long long)run->moved,
                         run->model.dim);
    return SIVE_OK;
}

sivei_orbit_run *sivei_orbit_run_new(int32_t chains)
{
    sivei_orbit_run *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    const size_t n = chains > 0 ? (size_t)chains : 1;
    r->count = chains;
    r->accept = malloc(n * sizeof *r->accept);
    r->eps = malloc(n * sizeof *r->eps);
    r->moves = calloc(n, sizeof *r->moves);
    r->nonfinite = calloc(n, sizeof *r->nonfinite);
    r->badratio = calloc(n, sizeof *r->badratio);
    if (!r->accept || !r->eps || !r->moves || !r->nonfinite || !r->badratio) {
        sivei_orbit_run_free(r);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        r->accept[i] = r->eps[i] = NAN;
    return r;
}

void sivei_orbit_run_free(sivei_orbit_run *r)
{
    if (r) {
        free(r->accept);
        free(r->eps);
        free(r->moves);
        free(r->nonfinite);
        free(r->badratio);
    }
    free(r);
}

int sivei_orbit_work_init(sivei_orbit *o, const sivei_run *run)
{
    *o = (sivei_orbit){0};
    if (sivei_kron_on(&run->opt) && !(o->kron = sivei_kron_new(&run->model)))
        return SIVE_E_NOMEM;
    return SIVE_OK;
}

void sivei_orbit_work_release(sivei_orbit *o)
{
    sivei_kron_free(o->kron);
    o->kron = NULL;
}

void sivei_orbit_chain_start(sivei_orbit *o, const sivei_options *opt)
{
    *o = (sivei_orbit){.log_eps = log(opt->orbit_scale), .kron = o->kron};
}

/* 1 when every element of the gradient g is finite. */
static int finite_grad(const sivei_run *run, const void *g)
{
    for (size_t i = 0; i < run->model.dim; i++)
        if (!isfinite(sivei_sampler_val(run, g, i)))
            return 0;
    return 1;
}

static void swap(void **x, void **y)
{
    void *t = *x;
    *x = *y;
    *y = t;
}

/* Robbins-Monro on log eps toward TARGET over the burn-in (the j-th move's
 * gain 0.5 (1 + j/20)^-0.6), frozen at its mean over the last quarter. */
static void adapt(const sivei_run *run, sivei_orbit *o, int64_t m, double la)
{
    const int64_t end = (int64_t)floor(run->opt.burn_in * (double)run->opt.steps);
    if (m >= end) {
        if (!o->frozen && o->n_sum)
            o->log_eps = o->log_eps_sum / (double)o->n_sum;
        o->frozen = 1;
        return;
    }
    const double p = la >= 0.0 ? 1.0 : exp(la);
    o->log_eps += 0.5 * pow(1.0 + (double)o->moves / 20.0, -0.6) * (p - TARGET);
    o->log_eps = fmin(fmax(o->log_eps, log(EPS_MIN)), log(EPS_MAX));
    if (m >= end - (end + 3) / 4) {
        o->log_eps_sum += o->log_eps;
        o->n_sum++;
    }
}

/* A callback failed at step m: recorded as the run's. */
static int callback_failed(sivei_run *run, const sivei_orbit_state *st, int rc, int64_t m,
                           const char *what)
{
    sivei_chain(run->r, st->chain)->status = SIVE_CHAIN_CALLBACK;
    sivei_run_fail(run, SIVE_E_CALLBACK, rc, "%s returned %d at chain %d step %lld", what, rc,
                   (int)st->chain, (long long)m);
    return 1;
}

/* The proposal into *st->prop and its log_ratio (kron: the forward part
 * -log q(theta' | theta) only). */
static int propose(sivei_run *run, sivei_work *w, sivei_orbit *o, const sivei_orbit_state *st,
                   const sive_batch *b, int64_t m, double *lr)
{
    if (o->kron) {
        const sivei_kron_law law = {w->t_step, run->h, run->opt.kron_step, run->theta_star};
        double lq = NAN;
        int rc = sivei_kron_propose(o->kron, &run->model, &law, b, *st->theta, *st->grad,
                                    *st->prop, &lq);
        *lr = -lq;
        return rc ? callback_failed(run, st, rc, m,
                                    "curvature callback (layer-block Newton move)")
                  : 0;
    }
    const sive_move_info info = {.struct_size = sizeof info, .dim = run->model.dim,
                                 .scale = exp(o->log_eps), .t = w->t_step, .h = run->h,
                                 .theta_star = run->theta_star, .batch = b};
    sivei_clear_error();
    int rc = run->model.move(&info, *st->theta, *st->prop, lr, run->model.user);
    return rc ? callback_failed(run, st, rc, m, "move callback (orbit move)") : 0;
}

/* kron: log q(theta | theta') added to *lr once the gradient at theta' is
 * known. */
static int reverse(sivei_run *run, sivei_work *w, sivei_orbit *o, const sivei_orbit_state *st,
                   const sive_batch *b, int64_t m, double *lr)
{
    const sivei_kron_law law = {w->t_step, run->h, run->opt.kron_step, run->theta_star};
    double lq = NAN;
    int rc = sivei_kron_reverse(o->kron, &run->model, &law, b, *st->theta, *st->prop,
                                *st->gprop, &lq);
    *lr += lq;
    return rc ? callback_failed(run, st, rc, m, "curvature callback (layer-block Newton move)")
              : 0;
}

int sivei_orbit_step(sivei_run *run, sivei_work *w, sivei_orbit *o,
                     const sivei_orbit_state *st, sivei_orbit_grad f, void *ctx,
                     sivei_pcg32 *noise, int64_t m)
{
    if ((m + 1) % every(&run->opt))
        return 0;
    const int64_t end = (int64_t)floor(run->opt.burn_in * (double)run->opt.steps);
    if (m >= end && !o->frozen && !o->kron)
        adapt(run, o, m, 0.0); /* freeze before the tail's first move */
    const sive_batch b = {.index = NULL, .n_groups = 1, .group_size = 0,
                          .seed = sivei_pcg32_next64(noise), .chain = st->chain,
                          .worker = w->worker, .step = m};
    double lr = NAN, lp = NAN;
    if (propose(run, w, o, st, &b, m, &lr))
        return 1;
    double la = -INFINITY;
    const double r2p = sivei_dist2(run, *st->prop);
    if (isfinite(lr) && isfinite(r2p)) {
        if (f(ctx, *st->prop, *st->gprop, &lp))
            return 1;
        o->moves++;
        if (o->kron && isfinite(lp) && reverse(run, w, o, st, &b, m, &lr))
            return 1;
        la = -w->t_step * (lp - *st->loss) - (r2p - *st->r2) / (2.0 * run->h * run->h) + lr;
        const int bad = !isfinite(lp) || !finite_grad(run, *st->gprop);
        o->nonfinite += bad;
        o->badratio += !bad && !isfinite(lr); /* kron: its reverse density */
        if (bad || !isfinite(la))
            la = -INFINITY;
    } else if (!isfinite(r2p))
        o->nonfinite++;
    else
        o->badratio++; /* not a valid ratio: rejected, without a gradient call */
    const int acc = log(sivei_pcg32_uniform(noise)) < la;
    if (acc) {
        swap(st->theta, st->prop);
        swap(st->grad, st->gprop);
        *st->loss = lp;
        *st->r2 = r2p;
    }
    if (m >= end) {
        o->tries++;
        o->accepted += acc;
    } else if (!o->kron)
        adapt(run, o, m, la);
    return 0;
}

void sivei_orbit_chain_end(sivei_orbit_run *r, int32_t slot, const sivei_orbit *o)
{
    r->accept[slot] = o->tries ? (double)o->accepted / (double)o->tries : NAN;
    r->eps[slot] = exp(o->log_eps);
    r->moves[slot] = o->moves;
    r->nonfinite[slot] = o->nonfinite;
    r->badratio[slot] = o->badratio;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int sivei_orbit_note(const sivei_run *run, sivei_orbit_run *r, sive_result *res)
{
    if (!r)
        return SIVE_OK;
    double acc = 0.0, moves = 0.0, nonfinite = 0.0, badratio = 0.0;
    int32_t k = 0, kt = 0; /* kt: the chains that tried a move in the tail */
    for (int32_t i = 0; i < r->count; i++)
        if (isfinite(r->eps[i])) {
            if (isfinite(r->accept[i]))
                acc += r->accept[i], kt++;
            moves += (double)r->moves[i];
            nonfinite += (double)r->nonfinite[i];
            badratio += (double)r->badratio[i];
            r->eps[k++] = r->eps[i];
        }
    if (!k)
        return SIVE_OK;
    qsort(r->eps, (size_t)k, sizeof *r->eps, cmp);
    char tail[96];
    if (kt) /* kron: 1 to rounding is the exact-factor reading, so 6 digits */
        snprintf(tail, sizeof tail, "tail acceptance %.*f (mean over %d chains)",
                 sivei_kron_on(&run->opt) ? 6 : 3, acc / kt, (int)kt);
    else /* orbit_every longer than the tail: an acceptance of 0 would lie */
        snprintf(tail, sizeof tail, "no move in the tail");
    char bad[208] = ""; /* only when there were any: the line stays as it was */
    if (nonfinite > 0.0)
        snprintf(bad, sizeof bad, "; %.0f proposals with a non-finite loss or gradient rejected",
                 nonfinite);
    if (badratio > 0.0) /* a broken callback (or curvature) shows here, not only in the rate */
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad),
                 "; %.0f proposals with a non-finite %s rejected", badratio,
                 sivei_kron_on(&run->opt) ? "proposal density ratio"
                                          : "log_ratio (the move callback's)");
    char line[600];
    if (sivei_kron_on(&run->opt)) {
        snprintf(line, sizeof line,
                 "layer-block Newton moves (the model's Kronecker curvature) (kron_every "
                 "%lld, kron_step %g): %s; %.0f moves = %.0f extra gradient calls (%.3g per "
                 "step) and %.0f curvature calls%s\n",
                 (long long)run->opt.kron_every, run->opt.kron_step, tail, moves, moves,
                 moves / ((double)k * (double)run->opt.steps), 2.0 * moves, bad);
        return sivei_health_append(res, line);
    }
    snprintf(line, sizeof line,
             "orbit moves (the model's sive_model.move) (orbit_every %lld): %s, size adapted "
             "in the burn-in toward %.2f: median %.4g (%.4g .. %.4g); %.0f moves = %.0f extra "
             "gradient calls (%.3g per step)%s\n",
             (long long)run->opt.orbit_every, tail, TARGET, r->eps[k / 2], r->eps[0],
             r->eps[k - 1], moves, moves, moves / ((double)k * (double)run->opt.steps), bad);
    return sivei_health_append(res, line);
}
