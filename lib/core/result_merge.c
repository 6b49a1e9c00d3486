/* Results of disjoint chain ranges merged into the whole run's result.
 *
 * A chain's values depend only on the options and on (seed, chain), so
 * copying each part's chains into one result and summarising them with
 * the code a whole run uses gives the whole run's numbers bit for bit.
 * What has to be checked is that the parts really are pieces of one run. */
#include "probe_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0; /* NaN == NaN, -0 != +0 */
}

/* The name of the first option (threads and the chain range excepted,
 * they do not change any chain) on which a and b differ, or NULL.  Read
 * through the option table, so an option added later is compared too. */
static const char *option_mismatch(const sivei_options *a, const sivei_options *b)
{
    if (a->h_absolute != b->h_absolute)
        return "radius mode";
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        if (in->id == SIVE_OPT_THREADS || in->id == SIVE_OPT_CHAIN_BEGIN ||
            in->id == SIVE_OPT_CHAIN_END)
            continue;
        int64_t ia = 0, ib = 0;
        double da = 0.0, db = 0.0;
        sivei_options_get(a, in->id, in->type, &ia, &da, NULL);
        sivei_options_get(b, in->id, in->type, &ib, &db, NULL);
        if (ia != ib || !same_double(da, db))
            return in->name;
    }
    return NULL;
}

/* Part i fits part 0: same configuration, model and theta*, and a status
 * the other parts can complete. */
static int check_part(const sive_result *ref, const sive_result *p, size_t i)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_result_merge: part %zu is NULL", i);
    if (p->status != SIVE_OK && p->status != SIVE_E_DIVERGED)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu (chains %d..%d) did not complete (%s: %s); rerun it",
                         i, (int)p->begin, (int)p->end - 1, sive_strerror(p->status),
                         p->errmsg);
    for (int32_t c = p->begin; c < p->end; c++) {
        sive_chain_status st = sivei_chain(p, c)->status;
        if (st == SIVE_CHAIN_CALLBACK || st == SIVE_CHAIN_ABORTED)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "part %zu: chain %d was stopped (%s) although the part says "
                             "it completed; rerun it", i, (int)c,
                             sive_chain_status_string(st));
    }
    const char *what = option_mismatch(&ref->opt, &p->opt);
    if (what)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu differs from part 0 in option '%s': not parts of one probe",
                         i, what);
    if (ref->dtype != p->dtype)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu probed a model of another dtype (%s; part 0: %s)", i,
                         p->dtype == SIVE_F32 ? "f32" : "f64",
                         ref->dtype == SIVE_F32 ? "f32" : "f64");
    if (ref->dim != p->dim || ref->n_examples != p->n_examples)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu probed a different model (dim %llu, n %llu; part 0: "
                         "dim %llu, n %llu)", i, (unsigned long long)p->dim,
                         (unsigned long long)p->n_examples, (unsigned long long)ref->dim,
                         (unsigned long long)ref->n_examples);
    if (ref->identity != p->identity)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu probed another model or data set (identity %016llx, part "
                         "0: %016llx; 0 = none recorded)", i,
                         (unsigned long long)p->identity, (unsigned long long)ref->identity);
    if (ref->theta_hash != p->theta_hash)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu was probed at a different theta* (hash %016llx, part 0: "
                         "%016llx)", i, (unsigned long long)p->theta_hash,
                         (unsigned long long)ref->theta_hash);
    if (!same_double(ref->h, p->h) || !same_double(ref->eta, p->eta))
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "part %zu used radius h = %.17g, part 0 h = %.17g", i, p->h, ref->h);
    return SIVE_OK;
}

/* Every chain in exactly one part; owner[c] = its part. */
static int check_cover(const sive_result *const *parts, size_t n, int32_t K, size_t *owner)
{
    for (int32_t c = 0; c < K; c++)
        owner[c] = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        for (int32_t c = parts[i]->begin; c < parts[i]->end; c++) {
            if (owner[c] != SIZE_MAX)
                return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                                 "chain %d is in part %zu and in part %zu: the ranges "
                                 "overlap", (int)c, owner[c], i);
            owner[c] = i;
        }
    for (int32_t c = 0; c < K; c++)
        if (owner[c] == SIZE_MAX)
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                             "chain %d of %d is in no part: a part is missing", (int)c, (int)K);
    return SIVE_OK;
}

static int copy_chain(sivei_chain_out *dst, const sivei_chain_out *src)
{
    dst->status = src->status;
    dst->stop_step = src->stop_step;
    dst->steps_run = src->steps_run;
    if (sivei_chain_traces(dst, src->steps_run))
        return SIVE_E_NOMEM;
    for (int k = 0; k < SIVEI_N_TRACES; k++)
        if (src->steps_run > 0)
            memcpy(dst->trace[k], src->trace[k], (size_t)src->steps_run * sizeof(double));
    return SIVE_OK;
}

int sive_result_merge(sive_result **out, const sive_result *const *parts, size_t n)
{
    if (out)
        *out = NULL;
    if (!out || !parts || n == 0 || !parts[0])
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_result_merge: NULL argument or no parts");
    const sive_result *ref = parts[0];
    int rc = SIVE_OK;
    for (size_t i = 0; i < n && !rc; i++)
        rc = check_part(ref, parts[i], i);
    if (rc)
        return rc;
    size_t *owner = malloc((size_t)ref->chains * sizeof *owner);
    if (!owner)
        return sivei_fail(NULL, SIVE_E_NOMEM, "sive_result_merge: out of memory");
    rc = check_cover(parts, n, ref->chains, owner);
    sivei_options o = ref->opt;
    o.chain_begin = o.chain_end = 0; /* the whole run's (default) range */
    sive_result *r = rc ? NULL : sivei_result_alloc(&o, ref->h, ref->eta, 0, ref->chains, 0);
    int oom = !rc && !r;
    for (int32_t c = 0; !rc && !oom && c < ref->chains; c++)
        oom = copy_chain(sivei_chain(r, c), sivei_chain(parts[owner[c]], c)) != SIVE_OK;
    if (oom)
        rc = sivei_fail(NULL, SIVE_E_NOMEM, "sive_result_merge: out of memory for the traces");
    free(owner);
    if (rc) {
        sive_result_free(r);
        return rc;
    }
    r->dtype = ref->dtype;
    r->dim = ref->dim;
    r->n_examples = ref->n_examples;
    r->theta_hash = ref->theta_hash;
    r->identity = ref->identity;
    if ((rc = sivei_result_summarise(r))) {
        sive_result_free(r);
        return sivei_fail(NULL, rc, "sive_result_merge: out of memory while summarising");
    }
    sivei_result_conclude(r, SIVE_OK, 0, "");
    *out = r;
    sivei_clear_error();
    return SIVE_OK;
}
