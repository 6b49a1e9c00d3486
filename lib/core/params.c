/* Weight-restricted probes (docs/guide.md, "Refined LLCs"): the subset of
 * theta a chain moves, as ascending index ranges [begin, end).  The probe
 * holds its own copy; a run borrows the probe's for its duration, and the
 * result keeps a copy (merge compares them, result files store them). */
#include "probe_impl.h"

#include <stdlib.h>
#include <string.h>

/* Ascending, non-empty, non-overlapping pairs; their total length in *k. */
static int ranges_ok(const uint64_t *ranges, size_t n, uint64_t *k, char *err)
{
    uint64_t total = 0, prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t b = ranges[2 * i], e = ranges[2 * i + 1];
        if (e <= b)
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "parameter range %zu [%llu, %llu) is empty or reversed", i,
                             (unsigned long long)b, (unsigned long long)e);
        if (i > 0 && b < prev_end)
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "parameter range %zu [%llu, %llu) overlaps or precedes the one "
                             "before it (ranges must be ascending)", i,
                             (unsigned long long)b, (unsigned long long)e);
        total += e - b;
        prev_end = e;
    }
    *k = total;
    return SIVE_OK;
}

int sive_probe_set_params(sive_probe *p, const uint64_t *ranges, size_t n_ranges)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    if (n_ranges > 0 && !ranges)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "sive_probe_set_params: ranges is NULL with n_ranges %zu", n_ranges);
    if (n_ranges > (SIZE_MAX / 2) / sizeof(uint64_t))
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "sive_probe_set_params: %zu ranges is too many", n_ranges);
    uint64_t k;
    int rc = ranges_ok(ranges, n_ranges, &k, p->errmsg);
    if (rc)
        return rc;
    uint64_t *copy = NULL;
    if (n_ranges) {
        copy = malloc(2 * n_ranges * sizeof *copy);
        if (!copy)
            return sivei_fail(p->errmsg, SIVE_E_NOMEM, "out of memory for %zu ranges",
                             n_ranges);
        memcpy(copy, ranges, 2 * n_ranges * sizeof *copy);
    }
    free(p->ranges);
    p->ranges = copy;
    p->n_ranges = n_ranges;
    return SIVE_OK;
}

int sive_probe_set_params_mask(sive_probe *p, const unsigned char *mask, size_t dim)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    if (!mask || dim == 0)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "sive_probe_set_params_mask: mask is NULL or dim is 0");
    size_t n = 0;
    for (size_t i = 0; i < dim; i++)
        n += mask[i] && (i == 0 || !mask[i - 1]);
    if (n == 0)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "sive_probe_set_params_mask: the mask selects no parameter");
    uint64_t *r = malloc(2 * n * sizeof *r);
    if (!r)
        return sivei_fail(p->errmsg, SIVE_E_NOMEM, "out of memory for %zu ranges", n);
    size_t j = 0;
    for (size_t i = 0; i < dim; i++) {
        if (mask[i] && (i == 0 || !mask[i - 1]))
            r[2 * j] = i;
        if (mask[i] && (i + 1 == dim || !mask[i + 1]))
            r[2 * j++ + 1] = i + 1;
    }
    int rc = sive_probe_set_params(p, r, n);
    free(r);
    return rc;
}

int sivei_params_prepare(const sive_probe *p, uint64_t dim, const uint64_t **ranges,
                         size_t *n, uint64_t *k, char *err)
{
    *ranges = p->ranges;
    *n = p->n_ranges;
    *k = dim;
    if (!p->n_ranges)
        return SIVE_OK;
    int rc = ranges_ok(p->ranges, p->n_ranges, k, err);
    if (rc)
        return rc;
    if (p->ranges[2 * p->n_ranges - 1] > dim)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "parameter range [%llu, %llu) ends past the model's dim %llu",
                         (unsigned long long)p->ranges[2 * p->n_ranges - 2],
                         (unsigned long long)p->ranges[2 * p->n_ranges - 1],
                         (unsigned long long)dim);
    return SIVE_OK;
}

int sivei_result_set_params(sive_result *r, const uint64_t *ranges, size_t n, uint64_t k)
{
    free(r->ranges);
    r->ranges = NULL;
    r->n_ranges = 0;
    r->moved = k;
    if (!n)
        return SIVE_OK;
    r->ranges = malloc(2 * n * sizeof *r->ranges);
    if (!r->ranges)
        return SIVE_E_NOMEM;
    memcpy(r->ranges, ranges, 2 * n * sizeof *r->ranges);
    r->n_ranges = n;
    return SIVE_OK;
}

const uint64_t *sive_result_params(const sive_result *r, size_t *n_ranges)
{
    if (n_ranges)
        *n_ranges = r ? r->n_ranges : 0;
    return r ? r->ranges : NULL;
}

uint64_t sive_result_params_dim(const sive_result *r) { return r ? r->moved : 0; }
