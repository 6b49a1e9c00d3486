/* Evaluation views as an evaluator module (lib/core/evaluator.h; views.c has
 * the API and the views' results).  At every evaluated step, after the
 * run's own evaluation, each view draws its N groups of B_eval examples
 * from its own streams (so that adding a view leaves the run's draws, path
 * and traces bit for bit), evaluates them with its loss at the same theta
 * (each distinct draw once; through its subset when it has one) and
 * stores Lbar and s2 in its result's traces.  With control variates
 * (SIVE_OPT_CONTROL_VARIATE), a view with per-example losses gets its own:
 * one pass at theta* over the view's examples before the chains, a table
 * of l_j(theta*) by position (recomputed per step beyond the table limit,
 * as for the run; control_variate.c), subtracted from the view's losses,
 * its mean L'(theta*) added back to the view's Lbar. */
#include "evaluator.h"
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct view_work {
    sivei_pcg32 rng[2];  /* evaluation indices, callback seeds     */
    uint64_t *idx;       /* N * B_eval draws, positions in [0, n)   */
    uint64_t *mapped;    /* distinct draws through the subset       */
    uint32_t *perm;      /* n entries without replacement, or NULL  */
    double *group_loss;  /* N                                       */
    double *at_star;     /* control variates without a table        */
    sivei_dedup dedup;   /* per-example views                       */
} view_work;

/* The run's state with control variates: per view its table (star NULL
 * and base 0 for a view without; on says which have one) and the prefix
 * of its messages. */
typedef struct views_run {
    size_t n;
    struct {
        sivei_cv_table t;
        int on;
        char who[SIVEI_VIEW_NAME + 24];
    } v[];
} views_run;

/* A worker's scratch: one view_work per view. */
typedef struct views_work {
    size_t n;
    view_work v[];
} views_work;

static int views_active(const sivei_run *run) { return run->n_views > 0; }

static void views_release(sivei_run *run, void *state)
{
    (void)run;
    views_run *s = state;
    for (size_t k = 0; s && k < s->n; k++)
        free(s->v[k].t.star);
    free(s);
}

/* With control variates: the pass at theta* of every per-example view
 * (the batch seeds from purpose 2 + k of the theta* streams: 0 is the
 * run's pass, 1 the gradient control variates'). */
static int views_prepare(sivei_run *run, void **state, char *err)
{
    if (!run->opt.control_variate)
        return SIVE_OK;
    views_run *s = calloc(1, sizeof *s + run->n_views * sizeof s->v[0]);
    if (!s)
        return sivei_fail(err, SIVE_E_NOMEM, "out of memory for the views' control variates");
    *state = s;
    s->n = run->n_views;
    for (size_t k = 0; k < run->n_views; k++) {
        const sivei_view *v = &run->views[k];
        snprintf(s->v[k].who, sizeof s->v[k].who, "evaluation view '%s': ", v->name);
        if (!sivei_view_uses_cv(run, v))
            continue;
        int rc = sivei_cv_table_build(run, &v->model, v->subset, v->n, 2 + (uint64_t)k,
                                      s->v[k].who, &s->v[k].t, err);
        if (rc || run->status)
            return rc; /* the registry releases *state */
        s->v[k].on = 1;
    }
    return SIVE_OK;
}

static void views_work_release(void *state)
{
    views_work *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].idx);
        free(s->v[i].mapped);
        free(s->v[i].perm);
        free(s->v[i].group_loss);
        free(s->v[i].at_star);
        sivei_dedup_release(&s->v[i].dedup);
    }
    free(s);
}

static int views_work_init(sivei_work *w, void *rs, void **state)
{
    const views_run *cv = rs;
    const sivei_run *run = w->run;
    const size_t N = (size_t)run->opt.groups, draws = N * (size_t)run->opt.eval_batch;
    views_work *s = calloc(1, sizeof *s + run->n_views * sizeof s->v[0]);
    *state = s;
    if (!s)
        return SIVE_E_NOMEM;
    s->n = run->n_views;
    for (size_t k = 0; k < run->n_views; k++) {
        const sivei_view *v = &run->views[k];
        view_work *x = &s->v[k];
        /* An analytic view without examples draws no indices (its
         * group_loss sees b->index NULL), so it needs no N * B_eval of them:
         * idx is only read when v->n (views_observe; view_evaluate, for
         * per-example losses, which need examples). */
        int ok = (!v->n || (x->idx = malloc(draws * sizeof *x->idx))) &&
                 (x->group_loss = malloc(N * sizeof *x->group_loss));
        if (ok && v->model.loss)
            ok = sivei_dedup_init(&x->dedup, v->n, draws) == SIVE_OK;
        if (ok && v->subset)
            ok = (x->mapped = malloc(draws * sizeof *x->mapped)) != NULL;
        if (ok && !run->opt.replacement && v->n)
            ok = (x->perm = malloc((size_t)v->n * sizeof *x->perm)) != NULL;
        if (ok && cv && cv->v[k].on && !cv->v[k].t.star)
            ok = (x->at_star = malloc(sivei_cv_scratch(run, v->n) * sizeof(double))) != NULL;
        if (!ok)
            return SIVE_E_NOMEM; /* the caller releases *state */
    }
    return SIVE_OK;
}

/* The streams of view k in chain c: purposes after the chain's own. */
static void views_chain_start(sivei_work *w, void *rs, void *ws, int32_t c)
{
    (void)rs;
    view_work *vw = ((views_work *)ws)->v;
    const sivei_run *run = w->run;
    for (size_t k = 0; k < run->n_views; k++) {
        for (int j = 0; j < 2; j++)
            sivei_pcg32_stream(&vw[k].rng[j], run->opt.seed, (uint64_t)c,
                               SIVEI_STREAM_COUNT + 2 * (uint64_t)k + (uint64_t)j);
        if (vw[k].perm)
            for (uint64_t i = 0; i < run->views[k].n; i++)
                vw[k].perm[i] = (uint32_t)i;
    }
}

/* View v's N group losses at theta into x->group_loss (less l_j(theta*)
 * when cv has the view's table). */
static int view_evaluate(sivei_run *run, const sivei_view *v, view_work *x, sive_batch *b,
                         const void *theta, const views_run *cv, size_t k)
{
    if (!v->model.loss)
        return v->model.group_loss(theta, run->model.dim, b, x->group_loss, v->model.user);
    const size_t N = b->n_groups, B = b->group_size;
    sivei_dedup *d = &x->dedup;
    size_t u = sivei_dedup_run(d, x->idx, N * B);
    sive_batch eb = *b;
    eb.index = d->uniq;
    if (v->subset) { /* ascending positions -> ascending indices */
        for (size_t i = 0; i < u; i++)
            x->mapped[i] = v->subset[d->uniq[i]];
        eb.index = x->mapped;
    }
    eb.n_groups = 1;
    eb.group_size = u;
    int rc = v->model.loss(theta, run->model.dim, &eb, d->loss, v->model.user);
    if (!rc && cv && cv->v[k].on)
        rc = sivei_cv_subtract(run, &v->model, &cv->v[k].t, &eb, d->uniq, x->at_star, d->loss,
                               cv->v[k].who);
    if (rc)
        return rc;
    for (size_t g = 0; g < N; g++) {
        double acc = 0.0;
        for (size_t j = 0; j < B; j++)
            acc += d->loss[d->which[g * B + j]];
        x->group_loss[g] = acc / (double)B;
    }
    return 0;
}

static int views_observe(sivei_run *run, sivei_work *w, void *rs, void *ws,
                         const void *theta, int32_t c, int64_t m)
{
    const views_run *cv = rs;
    view_work *vw = ((views_work *)ws)->v;
    const size_t N = (size_t)run->opt.groups, B = (size_t)run->opt.eval_batch;
    for (size_t k = 0; k < run->n_views; k++) {
        const sivei_view *v = &run->views[k];
        view_work *x = &vw[k];
        if (v->n)
            sivei_draw_indices(&x->rng[0], x->idx, N * B, B, v->n, x->perm);
        sive_batch b = {.index = v->n ? x->idx : NULL, .n_groups = N, .group_size = B,
                        .chain = c, .worker = w->worker, .step = m};
        b.seed = sivei_pcg32_next64(&x->rng[1]);
        sivei_clear_error();
        int rc = view_evaluate(run, v, x, &b, theta, cv, k);
        if (rc)
            return rc;
        sivei_chain_out *out = sivei_chain(run->r->views[k], c);
        sivei_mean_var(x->group_loss, N, &out->trace[SIVE_TRACE_LBAR][m],
                       &out->trace[SIVE_TRACE_S2][m]);
        if (cv && cv->v[k].on) /* E[Lbar | theta] = L'(theta) */
            out->trace[SIVE_TRACE_LBAR][m] += cv->v[k].t.base;
    }
    return 0;
}

const sivei_evaluator sivei_eval_views = {
    .name = "views",
    .active = views_active,
    .prepare = views_prepare,
    .release = views_release,
    .work_init = views_work_init,
    .work_release = views_work_release,
    .chain_start = views_chain_start,
    .observe = views_observe,
};
