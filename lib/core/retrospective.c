/* The retrospective LLC estimator of the paper's Section 4.2 (sive.h,
 * sive_retrospective; docs/theory.md): chain c of a checkpoint's probe
 * against the anchor of chain c, its minimum tail loss at the final
 * checkpoint of the trajectory.  Chain c of every checkpoint draws the same
 * random streams, so the chains pair across checkpoints.  Moved from the
 * CLI (`sive trajectory`) with the arithmetic unchanged. */
#include "internal.h"
#include "sive/sive.h"

#include <math.h>

/* 1 when chain c of r finished (its statistics are the chain's). */
static int chain_ok(const sive_result *r, size_t c)
{
    return sive_result_chain_status(r, (int32_t)c, NULL) == SIVE_CHAIN_OK;
}

/* r, an array and n = r's chain count, or SIVE_E_INVALID_ARG. */
static int check_result(const char *fn, const sive_result *r, const void *a, const void *b,
                        size_t n)
{
    if (!r || !a || !b)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: NULL argument", fn);
    if (n != (size_t)sive_result_chains(r))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "%s: %zu entries, the result has %d chains",
                          fn, n, (int)sive_result_chains(r));
    return SIVE_OK;
}

int sive_retrospective_anchor(const sive_result *final, double *anchor, size_t n)
{
    int rc = check_result("sive_retrospective_anchor", final, anchor, anchor, n);
    if (rc)
        return rc;
    for (size_t c = 0; c < n; c++)
        anchor[c] = chain_ok(final, c) ? sive_result_stat(final, SIVE_STAT_TAIL_MIN_LOSS,
                                                          (int32_t)c)
                                       : NAN;
    return SIVE_OK;
}

int sive_retrospective_values(double t, const double *tail_mean, const double *anchor,
                              size_t n, double *lambda)
{
    if (!tail_mean || !anchor || !lambda)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_retrospective_values: NULL argument");
    if (!(t > 0) || !isfinite(t))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                          "sive_retrospective_values: t = %g is not a positive number", t);
    for (size_t c = 0; c < n; c++)
        lambda[c] = t * (tail_mean[c] - anchor[c]);
    return SIVE_OK;
}

int sive_retrospective(const sive_result *r, const double *anchor, size_t n, double *lambda)
{
    int rc = check_result("sive_retrospective", r, anchor, lambda, n);
    if (rc)
        return rc;
    double t = NAN;
    if ((rc = sive_result_option_double(r, SIVE_OPT_T, &t)))
        return rc;
    for (size_t c = 0; c < n; c++) /* the tail means, then the estimator in place */
        lambda[c] = chain_ok(r, c) ? sive_result_stat(r, SIVE_STAT_TAIL_MEAN_LOSS, (int32_t)c)
                                   : NAN;
    return sive_retrospective_values(t, lambda, anchor, n, lambda);
}
