/* The evaluator seam (docs/architecture.md, "Where to add"): how a chain
 * turns theta_m into the N group losses whose mean and variance are the
 * traces Lbar_m and s2_m.  An evaluator is a module (lib/core/eval_*.c,
 * lib/core/control_variate.c) exporting one sivei_evaluator;
 * lib/core/evaluator.c lists them (the registration) and composes the ones
 * a run's options select:
 *  - the last selected module with an `evaluate` hook draws the step's
 *    evaluation batches and fills w->group_loss (raw evaluation is the
 *    first module and always selected);
 *  - with a per-example model, every selected module's `examples` hook, in
 *    registration order, rewrites the losses of the step's distinct draws
 *    (w->dedup.loss) before they are grouped (e.g. control variates
 *    subtract l_j(theta*));
 *  - every selected module's `offset` is added to Lbar_m afterwards (what
 *    the rewrite took from the mean, so that E[Lbar | theta] = L_n(theta));
 *  - every selected module's `observe` hook then measures what else it
 *    measures at theta_m (the evaluation views: their own Lbar and s2).
 * Modules keep their state in the run's and the worker's slot of their
 * registration index, never in the chain's code. */
#ifndef SIVE_EVALUATOR_H
#define SIVE_EVALUATOR_H

#include "probe_impl.h"

typedef struct sivei_evaluator {
    const char *name;
    /* 1 when the run (its options, its evaluation views) selects the
     * module (NULL: always). */
    int (*active)(const sivei_run *run);
    /* Before the chains, with theta* known.  *state is the run's slot.  A
     * callback error or a cancel is recorded in run (sivei_run_fail) and
     * SIVE_OK returned; another failure is returned with its message in
     * err.  NULL: nothing to prepare. */
    int (*prepare)(sivei_run *run, void **state, char *err);
    void (*release)(sivei_run *run, void *state);
    /* Per-worker scratch in *state (rs: the run's state); SIVE_E_NOMEM
     * on failure. */
    int (*work_init)(sivei_work *w, void *rs, void **state);
    void (*work_release)(void *state);
    /* The evaluation of step m at theta (rng: the chain's streams) into
     * w->group_loss.  Returns 0 or a callback's non-zero code. */
    int (*evaluate)(sivei_run *run, sivei_work *w, sivei_pcg32 *rng, const void *theta,
                    int32_t c, int64_t m);
    /* w->dedup.loss[0..eb->group_size-1] holds the losses of the distinct
     * examples eb->index at theta: rewrite them.  Returns a callback's
     * non-zero code. */
    int (*examples)(sivei_run *run, sivei_work *w, void *rs, void *ws,
                    const sive_batch *eb);
    /* Added to every Lbar_m (NULL: nothing). */
    double (*offset)(const sivei_run *run, const void *rs);
    /* At the start of chain c (e.g. to seed the module's streams). */
    void (*chain_start)(sivei_work *w, void *rs, void *ws, int32_t c);
    /* After the step's evaluation at theta (an evaluated step m of chain
     * c): further measurements into the module's own traces (evaluation
     * views).  Returns a callback's non-zero code. */
    int (*observe)(sivei_run *run, sivei_work *w, void *rs, void *ws, const void *theta,
                   int32_t c, int64_t m);
} sivei_evaluator;

/* The modules (one line each in evaluator.c's registry). */
extern SIVE_HIDDEN const sivei_evaluator sivei_eval_raw;
extern SIVE_HIDDEN const sivei_evaluator sivei_eval_cv;
extern SIVE_HIDDEN const sivei_evaluator sivei_eval_views;

/* control_variate.c: l_j(theta*) of a model's examples, shared by the
 * run's control variates and the evaluation views' (eval_views.c). */
typedef struct sivei_cv_table {
    double *star; /* l_j(theta*) by position, or NULL beyond the table limit */
    double base;  /* their mean, L(theta*): the offset added to Lbar        */
} sivei_cv_table;
/* One pass at theta* over positions [0, n) of m's examples (through
 * subset when not NULL; the batch seeds from stream `stream` of purpose
 * UINT64_MAX), into t.  who prefixes the messages ("" for the run).  A
 * callback error or a cancel is recorded in run and SIVE_OK returned
 * (run->status says so); a non-finite loss is SIVE_E_INVALID_ARG, out of
 * memory SIVE_E_NOMEM, each with its message in err. */
SIVE_HIDDEN int sivei_cv_table_build(sivei_run *run, const sive_model *m,
                                     const uint64_t *subset, uint64_t n, uint64_t stream,
                                     const char *who, sivei_cv_table *t, char *err);
/* loss[i] -= l(theta*) for the eb->group_size distinct examples of eb
 * (their positions pos[i] in the table); without a table they are
 * evaluated at theta* into at_star (sivei_cv_scratch(run, n) doubles).
 * Returns 0 or the callback's non-zero code; a non-finite loss at theta*
 * fails the run (SIVE_E_INVALID_ARG, the message the table's pass gives)
 * and returns 1. */
SIVE_HIDDEN int sivei_cv_subtract(sivei_run *run, const sive_model *m,
                                  const sivei_cv_table *t, const sive_batch *eb,
                                  const uint64_t *pos, double *at_star, double *loss,
                                  const char *who);
/* The doubles a step's recomputation at theta* needs for n examples. */
SIVE_HIDDEN size_t sivei_cv_scratch(const sivei_run *run, uint64_t n);

/* The registry (evaluator.c): module k's hooks and state live in slot k. */
SIVE_HIDDEN const sivei_evaluator *sivei_evaluator_at(int k);

#endif
