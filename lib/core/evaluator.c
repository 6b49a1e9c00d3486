/* The evaluator registry and the composition of the modules a run selects
 * (lib/core/evaluator.h).  Adding an evaluator: its file, one line below, one
 * source in lib/core/meson.build. */
#include "evaluator.h"

#include <string.h>

static const sivei_evaluator *const registry[] = {
    &sivei_eval_raw, /* first: always on, the model's losses as they are */
    &sivei_eval_cv,
    &sivei_eval_views,
};

#define N_EVALUATORS ((int)(sizeof registry / sizeof registry[0]))
_Static_assert(sizeof registry / sizeof registry[0] <= SIVEI_MAX_EVALUATORS,
               "raise SIVEI_MAX_EVALUATORS");

const sivei_evaluator *sivei_evaluator_at(int k)
{
    return k >= 0 && k < N_EVALUATORS ? registry[k] : NULL;
}

static int is_on(const sivei_run *run, int k)
{
    return (run->evaluator_on >> k) & 1u;
}

int sivei_evaluators_prepare(sivei_run *run, char *err)
{
    run->evaluator_on = 0;
    run->evaluator_base = 0;
    memset(run->evaluator_state, 0, sizeof run->evaluator_state);
    for (int k = 0; k < N_EVALUATORS; k++) {
        const sivei_evaluator *e = registry[k];
        if (e->active && !e->active(run))
            continue;
        run->evaluator_on |= 1u << k;
        if (e->evaluate)
            run->evaluator_base = k;
    }
    for (int k = 0; k < N_EVALUATORS; k++) {
        if (!is_on(run, k) || !registry[k]->prepare)
            continue;
        int rc = registry[k]->prepare(run, &run->evaluator_state[k], err);
        if (rc || run->status) {
            /* no chain will evaluate: the modules prepared so far go, the
             * raw evaluation stays (workers still allocate their scratch) */
            sivei_evaluators_release(run);
            run->evaluator_on = 1u;
            run->evaluator_base = 0;
            return rc;
        }
    }
    return SIVE_OK;
}

void sivei_evaluators_release(sivei_run *run)
{
    for (int k = 0; k < N_EVALUATORS; k++) {
        if (is_on(run, k) && registry[k]->release)
            registry[k]->release(run, run->evaluator_state[k]);
        run->evaluator_state[k] = NULL;
    }
}

int sivei_evaluators_work_init(sivei_work *w)
{
    for (int k = 0; k < N_EVALUATORS; k++) {
        w->evaluator_state[k] = NULL;
        if (is_on(w->run, k) && registry[k]->work_init &&
            registry[k]->work_init(w, w->run->evaluator_state[k],
                                   &w->evaluator_state[k]) != SIVE_OK)
            return SIVE_E_NOMEM;
    }
    return SIVE_OK;
}

void sivei_evaluators_work_release(sivei_work *w)
{
    for (int k = 0; k < N_EVALUATORS; k++) {
        if (w->evaluator_state[k] && registry[k]->work_release)
            registry[k]->work_release(w->evaluator_state[k]);
        w->evaluator_state[k] = NULL;
    }
}

int sivei_evaluate(sivei_run *run, sivei_work *w, sivei_pcg32 *rng, const void *theta,
                   int32_t c, int64_t m)
{
    return registry[run->evaluator_base]->evaluate(run, w, rng, theta, c, m);
}

int sivei_evaluators_examples(sivei_run *run, sivei_work *w, const sive_batch *eb)
{
    for (int k = 0; k < N_EVALUATORS; k++) {
        if (!is_on(run, k) || !registry[k]->examples)
            continue;
        int rc = registry[k]->examples(run, w, run->evaluator_state[k],
                                       w->evaluator_state[k], eb);
        if (rc)
            return rc;
    }
    return 0;
}

void sivei_evaluators_offset(const sivei_run *run, double *lbar)
{
    for (int k = 0; k < N_EVALUATORS; k++)
        if (is_on(run, k) && registry[k]->offset)
            *lbar += registry[k]->offset(run, run->evaluator_state[k]);
}

void sivei_evaluators_chain_start(sivei_work *w, int32_t c)
{
    for (int k = 0; k < N_EVALUATORS; k++)
        if (is_on(w->run, k) && registry[k]->chain_start)
            registry[k]->chain_start(w, w->run->evaluator_state[k], w->evaluator_state[k], c);
}

int sivei_evaluators_observe(sivei_run *run, sivei_work *w, const void *theta, int32_t c,
                             int64_t m)
{
    for (int k = 0; k < N_EVALUATORS; k++) {
        if (!is_on(run, k) || !registry[k]->observe)
            continue;
        int rc = registry[k]->observe(run, w, run->evaluator_state[k], w->evaluator_state[k],
                                      theta, c, m);
        if (rc)
            return rc;
    }
    return 0;
}
