/* The halves test behind SIVE_FLAG_NONSTATIONARY (docs/theory.md,
 * "Health flags"): the difference of the means of a tail's two halves
 * against the standard error of the calibrated, pooled estimator of the
 * MCSE (0.1 and 0.2 used batch means of floor(sqrt n), too small on slow
 * chains: the statistic had a spread of ~2.5 on stationary chains). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

typedef struct halves_src {
    const double *const *x;
    size_t off;
} halves_src;

static const double *half_of(void *ctx, size_t c)
{
    const halves_src *s = ctx;
    return s->x[c] + s->off;
}

int sivei_halves_z(const double *const *x, size_t k, size_t n, double *z)
{
    const size_t h = n / 2;
    for (size_t c = 0; c < k; c++)
        z[c] = NAN;
    if (h < 4 || k == 0)
        return SIVE_OK;
    double *v = malloc(2 * k * sizeof *v);
    if (!v)
        return SIVE_E_NOMEM;
    halves_src first = {x, 0}, last = {x, n - h};
    int rc = sivei_var_of_mean_pooled(half_of, &first, k, h, v, NULL);
    if (rc == SIVE_OK)
        rc = sivei_var_of_mean_pooled(half_of, &last, k, h, v + k, NULL);
    for (size_t c = 0; c < k && rc == SIVE_OK; c++) {
        double m1, m2;
        sivei_mean_var(x[c], h, &m1, NULL);
        sivei_mean_var(x[c] + (n - h), h, &m2, NULL);
        double se = sqrt(v[c] + v[k + c]);
        if (se > 0.0)
            z[c] = (m1 - m2) / se;
        else if (se == 0.0)
            z[c] = m1 == m2 ? 0.0 : copysign(INFINITY, m1 - m2);
    }
    free(v);
    return rc;
}
