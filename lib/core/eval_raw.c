/* Raw evaluation (the first evaluator, always selected; lib/core/evaluator.h):
 * the step's N evaluation batches drawn from the chain's evaluation
 * stream and handed to the model, per group, or per example with each
 * distinct draw evaluated once (dedup.c) and grouped here.  Bit for bit
 * the 0.2 evaluation. */
#include "evaluator.h"

/* Per-example model: each distinct draw evaluated once, the modules'
 * `examples` hooks (control variates: D_j = l_j - l_j(theta*)), then the
 * group means summed in draw order (the same sums as evaluating every
 * draw). */
static int evaluate_examples(sivei_run *run, sivei_work *w, sive_batch *b,
                             const void *theta)
{
    const size_t N = b->n_groups, B = b->group_size, draws = N * B;
    sivei_dedup *d = &w->dedup;
    size_t u = sivei_dedup_run(d, w->eval_idx, draws);
    sive_batch eb = *b;
    eb.index = d->uniq;
    eb.n_groups = 1;
    eb.group_size = u;
    int rc = run->model.loss(theta, run->model.dim, &eb, d->loss, run->model.user);
    if (!rc)
        rc = sivei_evaluators_examples(run, w, &eb);
    if (rc)
        return rc;
    for (size_t g = 0; g < N; g++) {
        const uint32_t *wh = d->which + g * B;
        double acc = 0.0;
        for (size_t j = 0; j < B; j++)
            acc += d->loss[wh[j]];
        w->group_loss[g] = acc / (double)B;
    }
    return 0;
}

static int raw_evaluate(sivei_run *run, sivei_work *w, sivei_pcg32 *rng,
                        const void *theta, int32_t c, int64_t m)
{
    const sivei_options *o = &run->opt;
    const uint64_t n = run->model.n_examples;
    const size_t N = (size_t)o->groups, B = (size_t)o->eval_batch;
    if (n)
        sivei_draw_indices(&rng[SIVEI_STREAM_EVAL_IDX], w->eval_idx, N * B, B, n,
                           w->perm_eval);
    sive_batch b = {.index = n ? w->eval_idx : NULL, .n_groups = N,
                    .group_size = B, .chain = c, .worker = w->worker, .step = m};
    b.seed = sivei_pcg32_next64(&rng[SIVEI_STREAM_EVAL_CB]);
    sivei_clear_error();
    if (run->model.loss)
        return evaluate_examples(run, w, &b, theta);
    return run->model.group_loss(theta, run->model.dim, &b, w->group_loss,
                                 run->model.user);
}

const sivei_evaluator sivei_eval_raw = {
    .name = "raw",
    .evaluate = raw_evaluate,
};
