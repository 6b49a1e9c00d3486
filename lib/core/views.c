/* Data-refined probes (docs/guide.md "Refined LLCs"): evaluation views.
 * A view is a model description whose loss (or group_loss) measures Lbar
 * on other data, or on a subset of examples, while the chain's gradient
 * stays the run's model's.  The probe keeps copies of the descriptions
 * (their user pointers are the caller's); a run gives every view a result
 * of its own, which shares the run's Langevin path (its DISP, GRAD_NORM
 * and GRAD_LOSS traces and chain statuses are the run's) and has its own
 * LBAR and S2 traces, filled by the evaluator module eval_views.c, so that
 * every estimator and diagnostic applies to it unchanged. */
#include "probe_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VIEWS 64

static void view_free(sivei_view *v) { free(v->subset); }

void sivei_probe_views_free(sive_probe *p)
{
    for (size_t k = 0; k < p->n_views; k++)
        view_free(&p->views[k]);
    free(p->views);
    p->views = NULL;
    p->n_views = 0;
}

int sive_probe_clear_eval_views(sive_probe *p)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    sivei_probe_views_free(p);
    return SIVE_OK;
}

/* The view's description and subset, checked on their own. */
static int view_check(const char *name, const sive_model *m, const uint64_t *subset,
                      size_t n_subset, char *err)
{
    if (!name || !*name || strlen(name) >= SIVEI_VIEW_NAME)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "an evaluation view needs a name of 1 to %d bytes",
                         SIVEI_VIEW_NAME - 1);
    if (!m || !sivei_model_size_ok(m->struct_size))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "evaluation view '%s': the model is NULL or not initialised "
                         "(sive_model_init)", name);
    if (!m->loss && !m->group_loss)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "evaluation view '%s' needs a loss or group_loss callback", name);
    if (m->loss && m->n_examples == 0)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "evaluation view '%s': per-example losses need n_examples > 0", name);
    if (!subset)
        return n_subset ? sivei_fail(err, SIVE_E_INVALID_ARG,
                                    "evaluation view '%s': subset is NULL with %zu entries",
                                    name, n_subset)
                        : SIVE_OK;
    if (!m->loss || n_subset == 0)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "evaluation view '%s': a subset needs per-example losses and at "
                         "least one index", name);
    for (size_t i = 0; i < n_subset; i++)
        if (subset[i] >= m->n_examples || (i && subset[i] <= subset[i - 1]))
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "evaluation view '%s': subset[%zu] = %llu is not below "
                             "n_examples (%llu) or not above the index before it", name, i,
                             (unsigned long long)subset[i],
                             (unsigned long long)m->n_examples);
    return SIVE_OK;
}

int sive_probe_add_eval_view(sive_probe *p, const char *name, const sive_model *view,
                             const uint64_t *subset, size_t n_subset)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    int rc = view_check(name, view, subset, n_subset, p->errmsg);
    if (rc)
        return rc;
    if (p->n_views >= MAX_VIEWS)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "at most %d evaluation views per probe", MAX_VIEWS);
    sivei_view v;
    memset(&v, 0, sizeof v);
    strcpy(v.name, name);
    memcpy(&v.model, view, view->struct_size < sizeof v.model ? view->struct_size
                                                              : sizeof v.model);
    v.n = subset ? n_subset : view->n_examples;
    if (subset && !(v.subset = malloc(n_subset * sizeof *subset)))
        return sivei_fail(p->errmsg, SIVE_E_NOMEM, "out of memory for a view's subset");
    if (subset)
        memcpy(v.subset, subset, n_subset * sizeof *subset);
    sivei_view *grown = realloc(p->views, (p->n_views + 1) * sizeof *grown);
    if (!grown) {
        view_free(&v);
        return sivei_fail(p->errmsg, SIVE_E_NOMEM, "out of memory for a view");
    }
    p->views = grown;
    p->views[p->n_views++] = v;
    return SIVE_OK;
}

int sivei_view_uses_cv(const sivei_run *run, const sivei_view *v)
{
    return run->opt.control_variate && v->model.loss;
}

int sivei_views_prepare(const sive_probe *p, sivei_run *run, char *err)
{
    run->views = p->views;
    run->n_views = p->n_views;
    sive_result *r = run->r;
    for (size_t k = 0; k < p->n_views; k++) {
        const sivei_view *v = &p->views[k];
        if (v->model.dtype != run->model.dtype || v->model.dim != run->model.dim)
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "evaluation view '%s' has dtype %d and dim %zu, the model %d "
                             "and %zu", v->name, (int)v->model.dtype, v->model.dim,
                             (int)run->model.dtype, run->model.dim);
        if (!run->opt.replacement && v->n > ((uint64_t)1 << 32))
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "evaluation view '%s': sampling without replacement keeps "
                             "32-bit permutations; %llu examples is above 2^32", v->name,
                             (unsigned long long)v->n);
        /* a view with examples draws groups*eval_batch indices per step,
         * as the run's model does (probe.c): the same limit, even when the
         * run's model is analytic and so was not checked */
        if (v->n && (uint64_t)run->opt.groups * (uint64_t)run->opt.eval_batch >
                        ((uint64_t)1 << 31))
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "evaluation view '%s' has examples: groups*eval_batch = %lld "
                             "indices per step is above 2^31", v->name,
                             (long long)(run->opt.groups * run->opt.eval_batch));
        /* an analytic view (n 0) draws no indices, as an analytic model */
        if (!run->opt.replacement && v->n && v->n < (uint64_t)run->opt.eval_batch)
            return sivei_fail(err, SIVE_E_INVALID_ARG,
                             "evaluation view '%s' has %llu examples, fewer than eval_batch "
                             "(%lld) drawn without replacement", v->name,
                             (unsigned long long)v->n, (long long)run->opt.eval_batch);
    }
    if (!p->n_views)
        return SIVE_OK;
    if (!(r->views = calloc(p->n_views, sizeof *r->views)))
        return sivei_fail(err, SIVE_E_NOMEM, "out of memory for the views' results");
    r->n_views = p->n_views;
    for (size_t k = 0; k < p->n_views; k++) {
        sive_result *vr = sivei_result_alloc(&r->opt, r->h, r->eta, r->begin, r->end, 1);
        if (!(r->views[k] = vr))
            return sivei_fail(err, SIVE_E_NOMEM, "out of memory for the views' traces");
        strcpy(vr->name, p->views[k].name);
        vr->n_examples = p->views[k].n;
        vr->opt.control_variate = sivei_view_uses_cv(run, &p->views[k]);
        for (int32_t c = r->begin; c < r->end; c++)
            for (int64_t m = 0; m < r->opt.steps; m++)
                sivei_chain(vr, c)->trace[SIVE_TRACE_LBAR][m] =
                    sivei_chain(vr, c)->trace[SIVE_TRACE_S2][m] = NAN;
    }
    return SIVE_OK;
}

int sivei_views_finish(sive_result *r)
{
    static const int path[] = {SIVE_TRACE_GRAD_LOSS, SIVE_TRACE_GRAD_NORM, SIVE_TRACE_DISP};
    for (size_t k = 0; k < r->n_views; k++) {
        sive_result *vr = r->views[k];
        vr->dtype = r->dtype; /* the run's model and theta*: what merge checks */
        vr->dim = r->dim;
        vr->theta_hash = r->theta_hash;
        if (sivei_result_set_params(vr, r->ranges, r->n_ranges, r->moved))
            return SIVE_E_NOMEM;
        for (int32_t c = r->begin; c < r->end; c++) {
            const sivei_chain_out *a = sivei_chain(r, c);
            sivei_chain_out *b = sivei_chain(vr, c);
            b->status = a->status;
            b->stop_step = a->stop_step;
            b->steps_run = a->steps_run;
            for (size_t j = 0; j < sizeof path / sizeof path[0]; j++)
                memcpy(b->trace[path[j]], a->trace[path[j]],
                       (size_t)a->steps_run * sizeof(double));
        }
        int rc = sivei_result_summarise(vr);
        if (rc)
            return rc;
        sivei_result_conclude(vr, r->status, r->callback_code, r->errmsg);
    }
    return SIVE_OK;
}

size_t sive_result_views(const sive_result *r) { return r ? r->n_views : 0; }

const sive_result *sive_result_view(const sive_result *r, size_t k)
{
    return r && k < r->n_views ? r->views[k] : NULL;
}

const char *sive_result_view_name(const sive_result *r, size_t k)
{
    return r && k < r->n_views ? r->views[k]->name : NULL;
}
