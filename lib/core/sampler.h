/* The sampler seam (docs/theory.md "Samplers"): how a chain turns the
 * model's mini-batch gradient at theta_m into theta_{m+1}.  A sampler is a
 * module (lib/core/sampler_*.c) exporting one sivei_sampler; lib/core/sampler.c
 * lists them (the registration) and composes the ones a run's options
 * select:
 *  - every selected module's `gradient` hook, in registration order,
 *    rewrites the batch gradient in w->grad (e.g. gradient control
 *    variates add grad L_n(theta*) - grad l_B(theta*));
 *  - the last selected module with a `step` hook moves the chain (plain
 *    SGLD is the first module and always selected).
 * Modules keep their state in the run's and the worker's slot of their
 * registration index, never in the chain's code. */
#ifndef SIVE_SAMPLER_H
#define SIVE_SAMPLER_H

#include "probe_impl.h"

typedef struct sivei_sampler {
    const char *name;
    /* 1 when the options select the module (NULL: always). */
    int (*active)(const sivei_options *o);
    /* Before the chains, with theta* and the radius known.  *state is the
     * run's slot.  A callback error is recorded in run (sivei_run_fail)
     * and SIVE_OK returned; another failure is returned with its message
     * in err.  NULL: nothing to prepare. */
    int (*prepare)(sivei_run *run, void **state, char *err);
    void (*release)(sivei_run *run, void *state);
    /* Per-worker scratch in *state (SIVE_E_NOMEM on failure). */
    int (*work_init)(sivei_work *w, void **state);
    void (*work_release)(void *state);
    /* At the start of chain c (e.g. to reset what a chain learns). */
    void (*chain_start)(sivei_work *w, void *state, int32_t c);
    /* w->grad holds the model's gradient at w->theta on batch gb: make it
     * this sampler's estimate of grad L_n (rs, ws: the run's and the
     * worker's state).  Returns a callback's non-zero code (the chain then
     * stops as after any callback error). */
    int (*gradient)(sivei_run *run, sivei_work *w, void *rs, void *ws,
                    const sive_batch *gb);
    /* theta_m -> theta_{m+1} in w->theta (noise: the chain's Langevin
     * stream); the trace norms ||g|| and ||theta - theta*||/sqrt(d) of
     * theta_m into *gnorm, *disp.  Returns non-zero when the chain
     * diverged. */
    int (*step)(sivei_run *run, sivei_work *w, void *rs, void *ws, sivei_pcg32 *noise,
                int64_t m, double *gnorm, double *disp);
    /* Only for the stepper: 1 when w->grad already holds the gradient of
     * the exact loss at w->theta (computed by the step at the proposal it
     * accepted, or kept from the state it stayed at), with that loss in
     * *loss; the chain then makes no gradient call for step m.  NULL:
     * never. */
    int (*cached)(sivei_work *w, void *ws, double *loss);
    /* After the chains are summarised, before release: append what the
     * module measured to res's health text (sivei_health_append; SIVE_OK
     * or SIVE_E_NOMEM).  NULL: nothing to say. */
    int (*note)(sivei_run *run, void *state, sive_result *res);
} sivei_sampler;

/* The modules (one line each in sampler.c's registry). */
extern SIVE_HIDDEN const sivei_sampler sivei_sampler_sgld;
extern SIVE_HIDDEN const sivei_sampler sivei_sampler_gcv;
extern SIVE_HIDDEN const sivei_sampler sivei_sampler_gcv_noise;

extern SIVE_HIDDEN const sivei_sampler sivei_sampler_precond;
extern SIVE_HIDDEN const sivei_sampler sivei_sampler_mala;

/* Plain SGLD's step (sampler_sgld.c), for modules that step plainly at
 * times (the preconditioner while it estimates), and the chunk of
 * Langevin normals of the model's dtype it draws. */
SIVE_HIDDEN int sivei_sgld_step(sivei_run *run, sivei_work *w, void *rs, void *ws,
                                sivei_pcg32 *noise, int64_t m, double *gnorm,
                                double *disp);
/* The same step with the Langevin normals taken from given (dim values of
 * the model's dtype, moved coordinates read) instead of the stream when
 * given is not NULL, and the normal of coordinate i multiplied by
 * scale[i] when scale is not NULL (both NULL: sivei_sgld_step's bits). */
SIVE_HIDDEN int sivei_sgld_step_ex(sivei_run *run, sivei_work *w, sivei_pcg32 *noise,
                                   const double *scale, const void *given, double *gnorm,
                                   double *disp);
/* SIVE_OPT_METROPOLIS' refusals of options and model (sampler_mala.c):
 * SIVE_OK, or SIVE_E_INVALID_ARG with the reason in err.  The exact loss
 * at theta* is checked by the sampler's prepare (and by defaults.c). */
SIVE_HIDDEN int sivei_mala_refuse(const sivei_options *o, const sive_model *model,
                                  char *err);
/* The exact call at theta* (defaults.c): model m's gradient callback at
 * theta on the whole data set (all = 0 .. n-1; NULL for an analytic model,
 * whose group size is grad_batch), chain -1, worker 0, step -1, batch seed
 * seed, into grad (dim, model dtype) and *loss (NaN unless the callback
 * stores one); the callback's return value.  The defaults' exactness check
 * makes it twice (seeds 0 and another), the Metropolis sampler's check
 * once (seed 0) unless the defaults made it in the same sive_probe_run()
 * (sivei_run.star_exact). */
SIVE_HIDDEN int sivei_grad_at_star(const sive_model *m, int64_t grad_batch,
                                   const uint64_t *all, const void *theta, uint64_t seed,
                                   void *grad, double *loss);
/* grad L_n(theta*) of the gradient control variates (model dtype, dim
 * values), NULL when they are off (sampler_gcv.c). */
SIVE_HIDDEN const void *sivei_gcv_full_gradient(const sivei_run *run);
/* The frozen diagonal preconditioner one chain learns (sampler_precond.c):
 * sum of g_i^2 over the gradients observed, then, once frozen, P_i and
 * sqrt(P_i) (dim each).  Its own step observes the first half of the
 * burn-in; a stepper that owns the step (metropolis) takes the worker's
 * estimate with sivei_precond_of (NULL when precondition is off; reset at
 * each chain start) and observes and freezes it on its own schedule. */
typedef struct sivei_precond {
    double *v, *p, *sp;
    int64_t seen; /* gradients summed into v */
    int frozen;
} sivei_precond;
SIVE_HIDDEN sivei_precond *sivei_precond_of(const sivei_work *w);
SIVE_HIDDEN void sivei_precond_observe(const sivei_run *run, sivei_precond *s,
                                       const void *grad);
SIVE_HIDDEN void sivei_precond_freeze(const sivei_run *run, sivei_precond *s);
SIVE_HIDDEN void sivei_sampler_normals(const sivei_run *run, sivei_pcg32 *g, void *out,
                                       size_t n);

/* The preconditioned drift of one coordinate, theta_i - P_i (a g_i + kt x_i)
 * with x = theta - theta*, kt = eta/h^2 (the step a = eta t, g the gradient
 * at theta): the precondition step's update before its noise
 * sqrt(P_i) sqrt(2 eta) xi_i, and the mean of metropolis's proposal with P.
 * P_i = 1 is not the plain step's bits (that step rounds theta - a g - kt x). */
static inline double sivei_precond_drift(double th, double x, double g, double p,
                                         double a, double kt)
{
    return th - p * (a * g + kt * x);
}

/* The size of one element of the model's dtype. */
static inline size_t sivei_model_el(const sive_model *m)
{
    return m->dtype == SIVE_F32 ? sizeof(float) : sizeof(double);
}

/* Element i of a vector of the model's dtype, in double. */
static inline double sivei_sampler_val(const sivei_run *run, const void *x, size_t i)
{
    return run->model.dtype == SIVE_F32 ? (double)((const float *)x)[i]
                                        : ((const double *)x)[i];
}

/* |theta - theta*|^2 over the moved parameters (the run's ranges, or all
 * of theta), in coordinate order. */
static inline double sivei_dist2(const sivei_run *run, const void *theta)
{
    double r2 = 0.0;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i = b; i < e; i++) {
            double x = sivei_sampler_val(run, theta, i) - sivei_sampler_val(run, run->theta_star, i);
            r2 += x * x;
        }
    }
    return r2;
}

/* The chunks of a step's moved parameters (the run's ranges, or all of
 * theta), in coordinate order, SIVEI_NOISE_CHUNK at most:
 *   sivei_chunks it = sivei_chunks_start(run);
 *   while (sivei_chunks_next(&it, noise, w->noise)) ... it.i0, it.nb ...
 * Each call draws the chunk's Langevin normals into out (the model's
 * dtype), so every sampler that steps through it draws the same stream;
 * out NULL draws nothing (the caller brings its own normals). */
typedef struct sivei_chunks {
    const sivei_run *run;
    size_t k, e;   /* current range and its end */
    size_t i0, nb; /* the chunk: coordinates i0 .. i0 + nb - 1 */
} sivei_chunks;

static inline sivei_chunks sivei_chunks_start(const sivei_run *run)
{
    sivei_chunks it = {run, 0, 0, 0, 0};
    sivei_range_at(run, 0, &it.i0, &it.e);
    return it;
}

static inline int sivei_chunks_next(sivei_chunks *it, sivei_pcg32 *noise, void *out)
{
    it->i0 += it->nb;
    while (it->i0 >= it->e) {
        if (++it->k >= sivei_range_count(it->run))
            return 0;
        sivei_range_at(it->run, it->k, &it->i0, &it->e);
    }
    it->nb = it->e - it->i0 < SIVEI_NOISE_CHUNK ? it->e - it->i0 : SIVEI_NOISE_CHUNK;
    if (out)
        sivei_sampler_normals(it->run, noise, out, it->nb);
    return 1;
}

/* Eigen-decomposition of the symmetric K x K matrix a (destroyed) by
 * cyclic Jacobi rotations: eigenvalues into ev, eigenvectors into the
 * columns of w (column j at w[j K ...]) (sampler_gcv_noise.c; also the
 * low-rank preconditioner's Ritz problem, sampler_lowrank.c). */
SIVE_HIDDEN void sivei_jacobi(double *a, size_t K, double *w, double *ev);

/* The registry (sampler.c): module k's hooks and state live in slot k. */
SIVE_HIDDEN const sivei_sampler *sivei_sampler_at(int k);

#endif
