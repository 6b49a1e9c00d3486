/* Distinct indices of a step's evaluation draws, so that a per-example
 * model evaluates each drawn example once.  Two ways, same output (the
 * distinct indices ascending, and each draw's rank among them):
 *  - a slot map with one entry per example, marked and scanned: linear,
 *    used when the data set is not much larger than the draws;
 *  - sorting (index, position) pairs: for data sets too large to scan. */
#include "probe_impl.h"

#include <stdlib.h>
#include <string.h>

#define NO_SLOT UINT32_MAX
/* A slot map of 4 bytes per example (at most 256 MiB per worker) when the
 * scan over the data set costs at most ~16 passes over the draws. */
#define SLOT_MAX_N ((uint64_t)1 << 26)
#define SLOT_MAX_RATIO 16

int sivei_dedup_init(sivei_dedup *d, uint64_t n, size_t draws)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    size_t cap = (uint64_t)draws < n ? draws : (size_t)n;
    if (n <= SLOT_MAX_N && n <= (uint64_t)SLOT_MAX_RATIO * draws) {
        d->slot = malloc((size_t)n * sizeof *d->slot);
        if (d->slot)
            memset(d->slot, 0xff, (size_t)n * sizeof *d->slot);
    } else {
        d->pairs = malloc(draws * 2 * sizeof *d->pairs);
    }
    d->uniq = malloc(cap * sizeof *d->uniq);
    d->which = malloc(draws * sizeof *d->which);
    d->loss = malloc(cap * sizeof *d->loss);
    if ((!d->slot && !d->pairs) || !d->uniq || !d->which || !d->loss) {
        sivei_dedup_release(d);
        return SIVE_E_NOMEM;
    }
    return SIVE_OK;
}

void sivei_dedup_release(sivei_dedup *d)
{
    free(d->slot);
    free(d->pairs);
    free(d->uniq);
    free(d->which);
    free(d->loss);
    memset(d, 0, sizeof *d);
}

static size_t by_slots(sivei_dedup *d, const uint64_t *idx, size_t draws)
{
    uint32_t *slot = d->slot;
    for (size_t p = 0; p < draws; p++)
        slot[idx[p]] = 0;
    /* walking the data set forwards numbers the examples in ascending
     * order, which the model's gather then follows */
    size_t u = 0;
    for (uint64_t e = 0; e < d->n; e++)
        if (slot[e] != NO_SLOT) {
            slot[e] = (uint32_t)u;
            d->uniq[u++] = e;
        }
    for (size_t p = 0; p < draws; p++)
        d->which[p] = slot[idx[p]];
    for (size_t i = 0; i < u; i++)
        slot[d->uniq[i]] = NO_SLOT;
    return u;
}

static int cmp_pair(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

static size_t by_sorting(sivei_dedup *d, const uint64_t *idx, size_t draws)
{
    uint64_t *pr = d->pairs;
    for (size_t p = 0; p < draws; p++) {
        pr[2 * p] = idx[p];
        pr[2 * p + 1] = p;
    }
    qsort(pr, draws, 2 * sizeof *pr, cmp_pair);
    size_t u = 0;
    for (size_t k = 0; k < draws; k++) {
        if (k == 0 || pr[2 * k] != pr[2 * k - 2])
            d->uniq[u++] = pr[2 * k];
        d->which[pr[2 * k + 1]] = (uint32_t)(u - 1);
    }
    return u;
}

size_t sivei_dedup_run(sivei_dedup *d, const uint64_t *idx, size_t draws)
{
    return d->slot ? by_slots(d, idx, draws) : by_sorting(d, idx, draws);
}
