/* The sampler registry and the composition of the modules a run selects
 * (lib/core/sampler.h).  Adding a sampler: its file, one line below, one
 * source in lib/core/meson.build. */
#include "sampler.h"

#include <string.h>

static const sivei_sampler *const registry[] = {
    &sivei_sampler_sgld, /* first: always on, the plain update */
    &sivei_sampler_gcv,
    &sivei_sampler_gcv_noise, /* reads the gcv module's state: after it */
    &sivei_sampler_precond,
    &sivei_sampler_mala, /* last: it owns the step and refuses the others */
};

#define N_SAMPLERS ((int)(sizeof registry / sizeof registry[0]))
_Static_assert(sizeof registry / sizeof registry[0] <= SIVEI_MAX_SAMPLERS,
               "raise SIVEI_MAX_SAMPLERS");

const sivei_sampler *sivei_sampler_at(int k)
{
    return k >= 0 && k < N_SAMPLERS ? registry[k] : NULL;
}

static int is_on(const sivei_run *run, int k)
{
    return (run->sampler_on >> k) & 1u;
}

int sivei_samplers_prepare(sivei_run *run, char *err)
{
    run->sampler_on = 0;
    run->sampler_stepper = 0;
    memset(run->sampler_state, 0, sizeof run->sampler_state);
    for (int k = 0; k < N_SAMPLERS; k++) {
        const sivei_sampler *s = registry[k];
        if (s->active && !s->active(&run->opt))
            continue;
        run->sampler_on |= 1u << k;
        if (s->step)
            run->sampler_stepper = k;
    }
    if (run->status) { /* failed before (control variates at theta*) */
        run->sampler_on = 1u;
        run->sampler_stepper = 0;
        return SIVE_OK;
    }
    for (int k = 0; k < N_SAMPLERS; k++) {
        if (!is_on(run, k) || !registry[k]->prepare)
            continue;
        int rc = registry[k]->prepare(run, &run->sampler_state[k], err);
        if (rc || run->status) { /* no chain will step: plain SGLD only */
            sivei_samplers_release(run);
            run->sampler_on = 1u;
            run->sampler_stepper = 0;
            return rc;
        }
    }
    return SIVE_OK;
}

int sivei_samplers_note(sivei_run *run)
{
    for (int k = 0; k < N_SAMPLERS; k++) {
        if (!is_on(run, k) || !registry[k]->note)
            continue;
        int rc = registry[k]->note(run, run->sampler_state[k], run->r);
        if (rc)
            return rc;
    }
    return SIVE_OK;
}

void sivei_samplers_release(sivei_run *run)
{
    for (int k = 0; k < N_SAMPLERS; k++) {
        if (is_on(run, k) && registry[k]->release)
            registry[k]->release(run, run->sampler_state[k]);
        run->sampler_state[k] = NULL;
    }
}

int sivei_samplers_work_init(sivei_work *w)
{
    for (int k = 0; k < N_SAMPLERS; k++) {
        w->sampler_state[k] = NULL;
        if (is_on(w->run, k) && registry[k]->work_init &&
            registry[k]->work_init(w, &w->sampler_state[k]) != SIVE_OK)
            return SIVE_E_NOMEM;
    }
    return SIVE_OK;
}

void sivei_samplers_work_release(sivei_work *w)
{
    for (int k = 0; k < N_SAMPLERS; k++) {
        if (w->sampler_state[k] && registry[k]->work_release)
            registry[k]->work_release(w->sampler_state[k]);
        w->sampler_state[k] = NULL;
    }
}

void sivei_samplers_chain_start(sivei_work *w, int32_t c)
{
    for (int k = 0; k < N_SAMPLERS; k++)
        if (is_on(w->run, k) && registry[k]->chain_start)
            registry[k]->chain_start(w, w->sampler_state[k], c);
}

int sivei_samplers_gradient(sivei_run *run, sivei_work *w, const sive_batch *gb)
{
    for (int k = 0; k < N_SAMPLERS; k++) {
        if (!is_on(run, k) || !registry[k]->gradient)
            continue;
        int rc = registry[k]->gradient(run, w, run->sampler_state[k], w->sampler_state[k], gb);
        if (rc)
            return rc;
    }
    return 0;
}

int sivei_samplers_cached(sivei_run *run, sivei_work *w, double *loss)
{
    const int k = run->sampler_stepper;
    return registry[k]->cached ? registry[k]->cached(w, w->sampler_state[k], loss) : 0;
}

int sivei_samplers_step(sivei_run *run, sivei_work *w, sivei_pcg32 *noise, int64_t m,
                        double *gnorm, double *disp)
{
    const int k = run->sampler_stepper;
    return registry[k]->step(run, w, run->sampler_state[k], w->sampler_state[k], noise, m,
                             gnorm, disp);
}
