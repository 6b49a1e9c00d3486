/* The locally adaptive step of the Metropolis sampler (experimental option
 * auto_step, sampler_autostep.c; docs/theory.md "Locally adaptive step").
 * The Metropolis sampler (sampler_mala.c) owns the chain, the base step
 * and its adaptation; a move with auto_step > 0 comes here. */
#ifndef SIVE_SAMPLER_AUTOSTEP_H
#define SIVE_SAMPLER_AUTOSTEP_H

#include "sampler.h"

typedef struct sivei_autostep sivei_autostep;         /* per worker */
typedef struct sivei_autostep_run sivei_autostep_run; /* per run    */

/* What the Metropolis sampler lends one move. */
typedef struct sivei_autostep_call {
    /* The exact loss at x into *loss and its gradient into g (model dtype,
     * dim); non-zero: a callback failure, recorded by the caller (the
     * chain then stops). */
    int (*grad)(void *ctx, const void *x, void *g, double *loss);
    void *ctx;
    const sivei_precond *pc; /* the frozen preconditioner, or NULL: P = I */
    double a;                /* the base step (eta t) */
    double loss;             /* the exact loss at w->theta */
    sivei_autostep_run *tally;
    int32_t slot;            /* the chain's index in the run's range */
} sivei_autostep_call;

typedef struct sivei_autostep_out {
    double la;   /* log alpha of the move (-inf: rejected outright) */
    int acc;     /* 1: accepted (w->theta, w->grad hold the new state) */
    double loss; /* accepted: the exact loss at the new state */
    double r2;   /* accepted: its |theta - theta*|^2 */
    double err;  /* the base step's adaptation signal, log(a_chosen/a) */
} sivei_autostep_out;

SIVE_HIDDEN sivei_autostep_run *sivei_autostep_run_new(int32_t chains);
SIVE_HIDDEN void sivei_autostep_run_free(sivei_autostep_run *r);
SIVE_HIDDEN sivei_autostep *sivei_autostep_new(const sivei_run *run);
SIVE_HIDDEN void sivei_autostep_free(sivei_autostep *s);
/* At the chain's start (w->theta is theta*). */
SIVE_HIDDEN void sivei_autostep_chain_start(sivei_autostep *s, const sivei_work *w);
/* One Metropolis move with the locally chosen step at chain step m; the
 * trace norms of the state into *gnorm, *disp.  Returns 1 when the chain
 * must stop (a callback failed, or the state's loss or gradient is not
 * finite). */
SIVE_HIDDEN int sivei_autostep_move(const sivei_run *run, sivei_work *w, sivei_autostep *s,
                                    sivei_pcg32 *noise, const sivei_autostep_call *c,
                                    int64_t m, double *gnorm, double *disp,
                                    sivei_autostep_out *out);
/* The tail's gradient calls per step, the chosen steps and the reverse
 * check's rejections, into the health text, and per finished chain into
 * SIVE_STAT_AUTO_STEP_GRADS and SIVE_STAT_AUTO_STEP_RESCALED (with their
 * summaries). */
SIVE_HIDDEN int sivei_autostep_note(const sivei_run *run, const sivei_autostep_run *r,
                                    sive_result *res);

#endif
