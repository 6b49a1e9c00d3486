/* Control variates (SIVE_OPT_CONTROL_VARIATE; docs/theory.md, "Control
 * variates"), an evaluator module (lib/core/evaluator.h): the per-example
 * losses at theta*, computed once per run, subtracted from a step's
 * per-example losses, and the full-data loss L_n(theta*) added back to
 * Lbar (the offset that turns the mean of D_j = l_j(theta) - l_j(theta*)
 * back into a loss).
 *
 * Up to a table limit (2^24 examples, 128 MiB of doubles) every l_j(theta*)
 * is kept, shared read-only by all chains.  Beyond it nothing is kept: a
 * step evaluates its distinct examples at theta* as well (twice the
 * evaluation cost, memory bounded by the step's draws).  The environment
 * variable SIVE_CV_TABLE_MAX (a count of examples) lowers or raises the
 * limit, so that both paths can be tested on small data sets. */
#include "evaluator.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TABLE_MAX_DEFAULT ((uint64_t)1 << 24)
#define CHUNK_MIN 4096

/* At most 2^32 examples (32 GiB) whatever the environment says, and never
 * so many that 8n bytes would wrap size_t. */
static uint64_t table_max(void)
{
    const uint64_t most = SIZE_MAX / sizeof(double) < ((uint64_t)1 << 32)
                              ? (uint64_t)(SIZE_MAX / sizeof(double))
                              : (uint64_t)1 << 32;
    const char *s = getenv("SIVE_CV_TABLE_MAX");
    if (!s || !*s)
        return TABLE_MAX_DEFAULT;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-')
        return TABLE_MAX_DEFAULT;
    return v < most ? (uint64_t)v : most;
}

size_t sivei_cv_scratch(const sivei_run *run, uint64_t n)
{
    size_t draws = (size_t)run->opt.groups * (size_t)run->opt.eval_batch;
    return (uint64_t)draws < n ? draws : (size_t)n;
}

/* Neumaier's compensated sum: L_n(theta*) over up to 2^62 terms must not
 * depend on how many losses came before (it is added to every Lbar). */
typedef struct ksum {
    double s, c;
} ksum;

static void ksum_add(ksum *k, double x)
{
    double t = k->s + x;
    k->c += fabs(k->s) >= fabs(x) ? (k->s - t) + x : (x - t) + k->s;
    k->s = t;
}

/* The examples a pass at theta* evaluates: positions [0, n) of a model's
 * data, through subset when there is one. */
typedef struct star_src {
    sivei_run *run;
    const sive_model *m;
    const uint64_t *subset;
    const char *who;
} star_src;

/* The losses of positions [i0, i0+k) at theta* into out[0..k-1].  A
 * callback error is recorded as the run's (SIVE_E_CALLBACK, stop set) and
 * returned as its non-zero code; a loss that is not finite is the model's
 * fault at theta* (SIVE_E_INVALID_ARG, in err). */
static int star_chunk(const star_src *s, uint64_t i0, size_t k, uint64_t *idx,
                      double *out, sivei_pcg32 *seeds, char *err)
{
    for (size_t j = 0; j < k; j++)
        idx[j] = s->subset ? s->subset[i0 + j] : i0 + j;
    sive_batch b = {.index = idx, .n_groups = 1, .group_size = k,
                    .seed = sivei_pcg32_next64(seeds), .chain = -1, .worker = 0,
                    .step = -1};
    sivei_clear_error();
    int rc = s->m->loss(s->run->theta_star, s->m->dim, &b, out, s->m->user);
    if (rc) {
        sivei_run_fail(s->run, SIVE_E_CALLBACK, rc,
                       "%sloss callback returned %d at theta* (control variates, "
                       "examples %llu..%llu)", s->who, rc, (unsigned long long)idx[0],
                       (unsigned long long)idx[k - 1]);
        return rc;
    }
    for (size_t j = 0; j < k; j++)
        if (!isfinite(out[j]))
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "%sloss of example %llu at theta* is %g (control variates "
                             "need finite losses at theta*)", s->who,
                             (unsigned long long)idx[j], out[j]);
    return SIVE_OK;
}

/* The pass reports progress as chain -1 (step: examples done of n) at its
 * start and then about every 0.25 s, and stops between two batches when
 * the callback returns non-zero (the run's SIVE_E_CANCELLED). */
static int star_cancelled(sivei_run *run, sivei_clock *clk, uint64_t done, uint64_t n)
{
    if (!run->progress || !sivei_progress_due(clk, (int64_t)done, (int64_t)n))
        return 0;
    int pr = run->progress(-1, (int64_t)done, (int64_t)n, run->progress_user);
    if (pr)
        sivei_run_fail(run, SIVE_E_CANCELLED, 0,
                       "cancelled by the progress callback (code %d) during the pass at "
                       "theta* (control variates, %llu of %llu examples)", pr,
                       (unsigned long long)done, (unsigned long long)n);
    return pr;
}

/* The pass at theta*: every loss into t->star (within the table limit)
 * and their mean into t->base. */
static int star_pass(const star_src *s, uint64_t n, uint64_t stream, sivei_cv_table *t,
                     char *err)
{
    sivei_run *run = s->run;
    uint64_t draws = (uint64_t)run->opt.groups * (uint64_t)run->opt.eval_batch;
    size_t chunk = (size_t)(draws > CHUNK_MIN ? draws : CHUNK_MIN);
    if (chunk > n)
        chunk = (size_t)n;
    double *table = n <= table_max() ? malloc((size_t)n * sizeof *table) : NULL;
    uint64_t *idx = malloc(chunk * sizeof *idx);
    double *tmp = table ? NULL : malloc(chunk * sizeof *tmp);
    if (!idx || (n <= table_max() && !table) || (!table && !tmp)) {
        free(table);
        free(idx);
        free(tmp);
        return sivei_fail(err, SIVE_E_NOMEM,
                         "%sout of memory for the control variates' losses at theta* "
                         "(%llu examples)", s->who, (unsigned long long)n);
    }
    sivei_pcg32 seeds;
    sivei_pcg32_stream(&seeds, run->opt.seed, UINT64_MAX, stream);
    ksum sum = {0.0, 0.0};
    sivei_clock clk = {0};
    int rc = SIVE_OK;
    for (uint64_t i0 = 0; i0 < n && !rc; i0 += chunk) {
        size_t k = (size_t)(n - i0 < chunk ? n - i0 : chunk);
        double *out = table ? table + i0 : tmp;
        if ((rc = star_cancelled(run, &clk, i0, n)))
            break;
        rc = star_chunk(s, i0, k, idx, out, &seeds, err);
        for (size_t j = 0; j < k && !rc; j++)
            ksum_add(&sum, out[j]);
    }
    free(idx);
    free(tmp);
    if (rc) {
        free(table);
        return rc;
    }
    t->star = table;
    t->base = (sum.s + sum.c) / (double)n;
    return SIVE_OK;
}

int sivei_cv_table_build(sivei_run *run, const sive_model *m, const uint64_t *subset,
                         uint64_t n, uint64_t stream, const char *who, sivei_cv_table *t,
                         char *err)
{
    const star_src s = {run, m, subset, who};
    t->star = NULL;
    t->base = 0.0;
    int rc = star_pass(&s, n, stream, t, err);
    /* a callback error or a cancel: recorded in run, the chains will not
     * start */
    return rc && (run->status == SIVE_E_CALLBACK || run->status == SIVE_E_CANCELLED)
               ? SIVE_OK
               : rc;
}

int sivei_cv_subtract(sivei_run *run, const sive_model *m, const sivei_cv_table *t,
                      const sive_batch *eb, const uint64_t *pos, double *at_star,
                      double *loss, const char *who)
{
    const size_t u = eb->group_size;
    if (t->star) {
        for (size_t i = 0; i < u; i++)
            loss[i] -= t->star[pos[i]];
        return 0;
    }
    int rc = m->loss(run->theta_star, m->dim, eb, at_star, m->user);
    if (rc)
        return rc;
    for (size_t i = 0; i < u; i++) {
        if (!isfinite(at_star[i])) {
            /* the table path's message, not a diverged chain */
            sivei_run_fail(run, SIVE_E_INVALID_ARG, 0,
                           "%sloss of example %llu at theta* is %g (control variates "
                           "need finite losses at theta*)", who,
                           (unsigned long long)eb->index[i], at_star[i]);
            return 1;
        }
        loss[i] -= at_star[i];
    }
    return 0;
}

static int cv_active(const sivei_run *run) { return run->opt.control_variate != 0; }

static int cv_prepare(sivei_run *run, void **state, char *err)
{
    if (!run->model.loss)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "control variates (SIVE_OPT_CONTROL_VARIATE) need per-example "
                         "losses: this model has only a group_loss callback");
    sivei_cv_table *cv = malloc(sizeof *cv);
    if (!cv)
        return sivei_fail(err, SIVE_E_NOMEM, "out of memory for the control variates");
    int rc = sivei_cv_table_build(run, &run->model, NULL, run->model.n_examples, 0, "", cv,
                                  err);
    if (rc || run->status) {
        free(cv);
        return rc;
    }
    *state = cv;
    return SIVE_OK;
}

static void cv_release(sivei_run *run, void *state)
{
    (void)run;
    sivei_cv_table *cv = state;
    if (cv)
        free(cv->star);
    free(cv);
}

/* Without a table: l_j(theta*) of a step's distinct draws. */
static int cv_work_init(sivei_work *w, void *rs, void **state)
{
    const sivei_cv_table *cv = rs;
    const sivei_run *run = w->run;
    *state = NULL;
    if (!cv || cv->star)
        return SIVE_OK;
    *state = malloc(sivei_cv_scratch(run, run->model.n_examples) * sizeof(double));
    return *state ? SIVE_OK : SIVE_E_NOMEM;
}

static int cv_examples(sivei_run *run, sivei_work *w, void *rs, void *ws,
                       const sive_batch *eb)
{
    return sivei_cv_subtract(run, &run->model, rs, eb, w->dedup.uniq, ws, w->dedup.loss,
                             "");
}

static double cv_offset(const sivei_run *run, const void *rs)
{
    (void)run;
    return ((const sivei_cv_table *)rs)->base;
}

const sivei_evaluator sivei_eval_cv = {
    .name = "control_variate",
    .active = cv_active,
    .prepare = cv_prepare,
    .release = cv_release,
    .work_init = cv_work_init,
    .work_release = free,
    .examples = cv_examples,
    .offset = cv_offset,
};
