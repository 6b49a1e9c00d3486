/* Control variates (SIVE_OPT_CONTROL_VARIATE; docs/theory.md, "Control
 * variates"): the per-example losses at theta*, computed once per run, and
 * the full-data loss L_n(theta*) that turns the mean of the differences
 * D_j = l_j(theta) - l_j(theta*) back into a loss.
 *
 * Up to a table limit (2^24 examples, 128 MiB of doubles) every l_j(theta*)
 * is kept, shared read-only by all chains.  Beyond it nothing is kept: a
 * step evaluates its distinct examples at theta* as well (twice the
 * evaluation cost, memory bounded by the step's draws).  The environment
 * variable SIVE_CV_TABLE_MAX (a count of examples) lowers or raises the
 * limit, so that both paths can be tested on small data sets. */
#include "probe_impl.h"

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

/* The losses of examples [i0, i0+k) at theta* into out[0..k-1].  A
 * callback error is recorded as the run's (SIVE_E_CALLBACK, stop set) and
 * returned as its non-zero code; a loss that is not finite is the model's
 * fault at theta* (SIVE_E_INVALID_ARG, in err). */
static int star_chunk(sivei_run *run, uint64_t i0, size_t k, uint64_t *idx,
                      double *out, sivei_pcg32 *seeds, char *err)
{
    for (size_t j = 0; j < k; j++)
        idx[j] = i0 + j;
    sive_batch b = {.index = idx, .n_groups = 1, .group_size = k,
                    .seed = sivei_pcg32_next64(seeds), .chain = -1, .worker = 0,
                    .step = -1};
    sivei_clear_error();
    int rc = run->model.loss(run->theta_star, run->model.dim, &b, out, run->model.user);
    if (rc) {
        sivei_run_fail(run, SIVE_E_CALLBACK, rc,
                       "loss callback returned %d at theta* (control variates, "
                       "examples %llu..%llu)", rc, (unsigned long long)i0,
                       (unsigned long long)(i0 + k - 1));
        return rc;
    }
    for (size_t j = 0; j < k; j++)
        if (!isfinite(out[j]))
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "loss of example %llu at theta* is %g (control variates "
                             "need finite losses at theta*)",
                             (unsigned long long)(i0 + j), out[j]);
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

int sivei_cv_prepare(sivei_run *run, char *err)
{
    if (!run->opt.control_variate)
        return SIVE_OK;
    if (!run->model.loss)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "control variates (SIVE_OPT_CONTROL_VARIATE) need per-example "
                         "losses: this model has only a group_loss callback");
    const uint64_t n = run->model.n_examples;
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
                         "out of memory for the control variates' losses at theta* "
                         "(%llu examples)", (unsigned long long)n);
    }
    sivei_pcg32 seeds;
    sivei_pcg32_stream(&seeds, run->opt.seed, UINT64_MAX, 0);
    ksum sum = {0.0, 0.0};
    sivei_clock clk = {0};
    int rc = SIVE_OK;
    for (uint64_t i0 = 0; i0 < n && !rc; i0 += chunk) {
        size_t k = (size_t)(n - i0 < chunk ? n - i0 : chunk);
        double *out = table ? table + i0 : tmp;
        if ((rc = star_cancelled(run, &clk, i0, n)))
            break;
        rc = star_chunk(run, i0, k, idx, out, &seeds, err);
        for (size_t j = 0; j < k && !rc; j++)
            ksum_add(&sum, out[j]);
    }
    free(idx);
    free(tmp);
    if (rc) {
        free(table);
        /* a callback error or a cancel: recorded in run, the chains will
         * not start */
        return run->status == SIVE_E_CALLBACK || run->status == SIVE_E_CANCELLED ? SIVE_OK
                                                                                 : rc;
    }
    run->cv_star = table;
    run->cv_base = (sum.s + sum.c) / (double)n;
    return SIVE_OK;
}

void sivei_cv_release(sivei_run *run)
{
    free(run->cv_star);
    run->cv_star = NULL;
}

int sivei_cv_subtract(sivei_run *run, sivei_work *w, const sive_batch *eb)
{
    sivei_dedup *d = &w->dedup;
    const size_t u = eb->group_size;
    if (run->cv_star) {
        for (size_t i = 0; i < u; i++)
            d->loss[i] -= run->cv_star[d->uniq[i]];
        return 0;
    }
    int rc = run->model.loss(run->theta_star, run->model.dim, eb, w->cv_loss,
                             run->model.user);
    if (rc)
        return rc;
    for (size_t i = 0; i < u; i++)
        d->loss[i] -= w->cv_loss[i];
    return 0;
}
