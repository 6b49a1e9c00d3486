/* Probe handle (options + progress) and the run: validation of the model
 * and of theta*, the frozen copies, and the scheduling of chains on worker
 * threads. */
#include "probe_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIM ((size_t)1 << 40)
#define MAX_EXAMPLES ((uint64_t)1 << 62)

int sive_probe_new(sive_probe **out)
{
    if (!out)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_probe_new: out is NULL");
    *out = NULL;
    sive_probe *p = calloc(1, sizeof *p);
    if (!p)
        return sivei_fail(NULL, SIVE_E_NOMEM, "sive_probe_new: out of memory");
    sivei_options_default(&p->opt);
    *out = p;
    sivei_clear_error();
    return SIVE_OK;
}

static void reuse_forget(sive_probe *p)
{
    free(p->reuse.note);
    free(p->reuse.ranges);
    memset(&p->reuse, 0, sizeof p->reuse);
}

void sive_probe_free(sive_probe *p)
{
    if (p) {
        reuse_forget(p);
        free(p->ranges);
        sivei_probe_views_free(p);
    }
    free(p);
}

int sive_probe_reset(sive_probe *p)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    sivei_options_default(&p->opt);
    free(p->ranges);
    p->ranges = NULL;
    p->n_ranges = 0;
    sivei_probe_views_free(p);
    reuse_forget(p);
    p->errmsg[0] = '\0';
    return SIVE_OK;
}

/* The line of r's run notes that starts with "radius: " (malloc'ed), NULL
 * when none (*oom set when out of memory). */
static char *radius_line(const sive_result *r, int *oom)
{
    for (const char *s = r->notes; s && *s;) {
        const char *e = strchr(s, '\n');
        const size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
        if (!strncmp(s, "radius: ", 8)) {
            char *t = malloc(n + 1);
            if (!t)
                return *oom = 1, NULL;
            memcpy(t, s, n);
            t[n] = '\0';
            return t;
        }
        s += n;
    }
    return NULL;
}

int sive_probe_set_radius_from(sive_probe *p, const sive_result *r)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    if (!r) {
        reuse_forget(p);
        return SIVE_OK;
    }
    /* refused: the probe keeps the radius it had, as the other setters */
    if (r->opt.h_absolute || r->opt.c_h != 0.0)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "sive_probe_set_radius_from: the result's radius was not chosen "
                         "from the loss (its run had %s = %g): give it as h instead",
                         r->opt.h_absolute ? "h" : "c_h",
                         r->opt.h_absolute ? r->opt.h : r->opt.c_h);
    if (r->status != SIVE_OK && r->status != SIVE_E_DIVERGED)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "sive_probe_set_radius_from: the result's run did not complete "
                         "(%s): its radius may not be the search's choice",
                         sive_strerror(r->status));
    int oom = 0;
    sivei_reuse u = {.on = 1, .h = r->h, .opt = r->opt, .dtype = r->dtype, .dim = r->dim,
                     .n_examples = r->n_examples, .theta_hash = r->theta_hash,
                     .identity = r->identity, .n_ranges = r->n_ranges,
                     .note = radius_line(r, &oom)};
    if (r->n_ranges && (u.ranges = malloc(2 * r->n_ranges * sizeof *u.ranges)))
        memcpy(u.ranges, r->ranges, 2 * r->n_ranges * sizeof *u.ranges);
    if (oom || (r->n_ranges && !u.ranges)) {
        free(u.note);
        free(u.ranges);
        return sivei_fail(p->errmsg, SIVE_E_NOMEM, "sive_probe_set_radius_from: out of memory");
    }
    reuse_forget(p);
    p->reuse = u;
    sivei_clear_error();
    return SIVE_OK;
}

/* A run that takes its radius from sive_probe_set_radius_from(): it must
 * choose its radius from the loss (chosen) with the options (threads and
 * the chain range excepted), model and theta* the earlier run had. */
static int reuse_check(sive_probe *p, const sivei_options *o, int chosen, const sive_model *m,
                       const void *theta)
{
    const sivei_reuse *u = &p->reuse;
    if (!chosen)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "a radius taken from an earlier result (sive_probe_set_radius_from) "
                         "needs a run whose radius comes from the loss (c_h = auto, or the "
                         "defaults on an exact loss); this run's is %s",
                         o->h_absolute ? "set (h)" : "set (c_h)");
    const char *what = sivei_option_mismatch(&u->opt, o);
    if (what)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "the result whose radius this run takes had another '%s': its "
                         "search chose h for other options", what);
    if (u->n_ranges != p->n_ranges ||
        (p->n_ranges && memcmp(u->ranges, p->ranges, 2 * p->n_ranges * sizeof *p->ranges)))
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "the result whose radius this run takes moved other parameters "
                         "(sive_probe_set_params)");
    if (!m || !theta)
        return SIVE_OK; /* refused by the run's own checks */
    const size_t esz = m->dtype == SIVE_F32 ? sizeof(float) : sizeof(double);
    const uint64_t th = sivei_fnv1a64(SIVEI_FNV_OFFSET, theta, m->dim * esz);
    char diff[160] = ""; /* the first difference, named */
    if (u->dtype != (int32_t)m->dtype)
        snprintf(diff, sizeof diff, "a model of dtype %s (this run: %s)",
                 u->dtype == SIVE_F32 ? "f32" : "f64", m->dtype == SIVE_F32 ? "f32" : "f64");
    else if (u->dim != m->dim || u->n_examples != m->n_examples)
        snprintf(diff, sizeof diff, "a model of dim %llu, n_examples %llu (this run: %zu, %llu)",
                 (unsigned long long)u->dim, (unsigned long long)u->n_examples, m->dim,
                 (unsigned long long)m->n_examples);
    else if (u->identity != m->identity)
        snprintf(diff, sizeof diff, "another model or data set (identity %016llx, this run: "
                 "%016llx)", (unsigned long long)u->identity, (unsigned long long)m->identity);
    else if (u->theta_hash != th)
        snprintf(diff, sizeof diff, "another theta* (hash %016llx, this run: %016llx)",
                 (unsigned long long)u->theta_hash, (unsigned long long)th);
    if (*diff)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "the result whose radius this run takes probed %s: its search chose h "
                         "for another loss; take the radius from a run of this model at this "
                         "theta*, or let this run search", diff);
    return SIVE_OK;
}

/* The health line of a radius taken from an earlier result: its search's
 * line when it had one (so that the parts of a split run read as the
 * whole run), else one naming the h. */
static int reuse_note(sive_result *r, const sivei_reuse *u)
{
    if (u->note)
        return sivei_health_append(r, u->note);
    char line[200];
    snprintf(line, sizeof line,
             "radius: chosen from the loss (c_h = 0): h = %.4g, taken from an earlier "
             "run's search (its result had no radius line)\n", u->h);
    return sivei_health_append(r, line);
}

const char *sive_probe_errmsg(const sive_probe *p)
{
    return p ? p->errmsg : "probe handle is NULL";
}

int sive_probe_set_progress(sive_probe *p, sive_progress_fn fn, void *user)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    p->progress = fn;
    p->progress_user = user;
    return SIVE_OK;
}

/* ------------------------------------------------------------------ */

void sivei_run_fail(sivei_run *run, int status, int cb_code, const char *fmt, ...)
{
    /* the callback's own message, read before anything else can touch
     * this thread's last error */
    const char *why = status == SIVE_E_CALLBACK ? sive_last_errmsg() : "";
    pthread_mutex_lock(&run->lock);
    if (run->status == SIVE_OK) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(run->errmsg, sizeof run->errmsg, fmt, ap);
        va_end(ap);
        if (why[0] && k >= 0 && (size_t)k < sizeof run->errmsg)
            snprintf(run->errmsg + k, sizeof run->errmsg - (size_t)k, ": %s", why);
        run->status = status;
        run->callback_code = cb_code;
    }
    pthread_mutex_unlock(&run->lock);
    atomic_store(&run->stop, 1);
}

static void *worker_main(void *arg)
{
    sivei_work *w = arg;
    sivei_run *run = w->run;
    if (sivei_work_init(w, run, w->worker) != SIVE_OK) {
        sivei_run_fail(run, SIVE_E_NOMEM, 0, "out of memory for a worker's scratch");
        return NULL;
    }
    for (;;) {
        int c = atomic_fetch_add(&run->next_chain, 1);
        if (c >= run->r->end)
            break;
        if (run->model.dtype == SIVE_F32)
            sivei_chain_run_f32(run, w, c);
        else
            sivei_chain_run_f64(run, w, c);
    }
    sivei_work_release(w);
    return NULL;
}

/* The model description, copied up to its struct_size and checked. */
static int check_model(const sive_model *m, sive_model *copy, char *err)
{
    const size_t v02 = offsetof(sive_model, destroy) + sizeof m->destroy;
    if (!m)
        return sivei_fail(err, SIVE_E_INVALID_ARG, "model is NULL");
    if (!sivei_model_size_ok(m->struct_size))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "model struct_size %u is not the size of a sive_model (%zu, %zu, "
                         "or a newer header's multiple of 8 up to %d): "
                         "call sive_model_init(&m, sizeof m) first",
                         (unsigned)m->struct_size, v02, sizeof *m, SIVEI_MODEL_SIZE_MAX);
    memset(copy, 0, sizeof *copy);
    memcpy(copy, m, m->struct_size < sizeof *copy ? m->struct_size : sizeof *copy);
    if (copy->dtype != SIVE_F32 && copy->dtype != SIVE_F64)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "model dtype %d is neither SIVE_F32 nor SIVE_F64", (int)copy->dtype);
    if (copy->dim == 0 || copy->dim > MAX_DIM)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "model dim %zu is outside [1, 2^40]", copy->dim);
    if (copy->n_examples > MAX_EXAMPLES)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "model n_examples %llu is above 2^62",
                         (unsigned long long)copy->n_examples);
    if (!copy->grad || (!copy->loss && !copy->group_loss))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "the model needs a gradient callback and a loss or group_loss callback");
    if (copy->loss && copy->n_examples == 0)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "per-example losses need a data set: n_examples is 0 "
                         "(use group_loss for an analytic model)");
    return SIVE_OK;
}

/* Element i of theta in double. */
static double theta_at(const sive_model *m, const void *theta, size_t i)
{
    return m->dtype == SIVE_F32 ? ((const float *)theta)[i] : ((const double *)theta)[i];
}

/* The radius h from theta* (checked finite): absolute, adaptive over the
 * k moved parameters (c_h*||theta*_S||/sqrt(k); S all of theta without
 * ranges), or (c_h = 0) the one radius_auto.c chose, carried in o->h. */
static int radius(const sivei_run *run, const void *theta, double *h_out, char *err)
{
    const sivei_options *o = &run->opt;
    const sive_model *m = &run->model;
    for (size_t i = 0; i < m->dim; i++)
        if (!isfinite(theta_at(m, theta, i)))
            return sivei_fail(err, SIVE_E_INVALID_ARG, "theta_star[%zu] = %g is not finite",
                             i, theta_at(m, theta, i));
    double norm2 = 0.0;
    for (size_t k = 0; k < sivei_range_count(run); k++) {
        size_t b, e;
        sivei_range_at(run, k, &b, &e);
        for (size_t i = b; i < e; i++) {
            double v = theta_at(m, theta, i);
            norm2 += v * v;
        }
    }
    if (!o->h_absolute && o->c_h == 0.0) {
        *h_out = o->h;
        return SIVE_OK;
    }
    double h = o->h_absolute ? o->h : o->c_h * sqrt(norm2 / (double)run->moved);
    if (isinf(h))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "adaptive radius h = c_h*||theta*||/sqrt(d) overflows to "
                         "infinity: set an absolute SIVE_OPT_H");
    if (!(h > 0.0))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "adaptive radius h = c_h*||theta*||/sqrt(d) = %g is not positive "
                         "(theta*%s is zero?): set an absolute SIVE_OPT_H", h,
                         run->n_ranges ? " on the moved parameters" : "");
    *h_out = h;
    return SIVE_OK;
}

/* Constraints between options and the model. */
static int check_sizes(const sivei_options *o, const sive_model *m, char *err)
{
    int64_t tail = sivei_tail_count(o);
    if (tail < 4)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "the tail window holds %lld evaluated steps (steps %lld, burn-in %g, "
                         "eval stride %lld); at least 4 are needed",
                         (long long)tail, (long long)o->steps, o->burn_in,
                         (long long)o->eval_stride);
    /* the hot phase is the burn-in's first quarter (anneal.c) */
    const int64_t burn = (int64_t)floor(o->burn_in * (double)o->steps);
    if (o->anneal > 1.0 && burn / 4 < 1)
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "anneal %g runs the burn-in's first quarter hot: floor(burn_in*steps) "
                         "= %lld steps (burn_in %g, steps %lld) leaves it none; at least 4 "
                         "are needed",
                         o->anneal, (long long)burn, o->burn_in, (long long)o->steps);
    if (o->grad_extrapolate && (m->n_examples == 0 || o->metropolis))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "grad_extrapolate needs a data set (n_examples > 0) and no "
                         "metropolis (whose gradient is the full batch)");
    if (o->grad_extrapolate &&
        (o->grad_batch > (INT64_C(1) << 23) ||
         (!o->replacement && (uint64_t)(2 * o->grad_batch) > m->n_examples)))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "grad_extrapolate runs at 2 grad_batch = %lld: needs at most 2^24%s",
                         (long long)(2 * o->grad_batch),
                         o->replacement ? "" : " and, without replacement, n_examples");
    if (m->n_examples == 0)
        return SIVE_OK;
    if ((uint64_t)o->groups * (uint64_t)o->eval_batch > ((uint64_t)1 << 31))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "groups*eval_batch = %lld indices per step is above 2^31",
                         (long long)(o->groups * o->eval_batch));
    if (!o->replacement && ((uint64_t)o->eval_batch > m->n_examples ||
                            (uint64_t)o->grad_batch > m->n_examples))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "sampling without replacement needs eval_batch (%lld) and "
                         "grad_batch (%lld) <= n_examples (%llu)",
                         (long long)o->eval_batch, (long long)o->grad_batch,
                         (unsigned long long)m->n_examples);
    if (!o->replacement && m->n_examples > ((uint64_t)1 << 32))
        return sivei_fail(err, SIVE_E_INVALID_ARG,
                         "sampling without replacement keeps 32-bit permutations of the "
                         "data set; n_examples %llu is above 2^32",
                         (unsigned long long)m->n_examples);
    return SIVE_OK;
}

/* Run the chains on min(threads, chains) workers; the caller's thread is
 * worker 0, so a run whose extra threads cannot start still completes. */
static void run_workers(sivei_run *run)
{
    int64_t to_run = run->r->end - run->r->begin;
    int64_t n = run->opt.threads < to_run ? run->opt.threads : to_run;
    sivei_work *w = calloc((size_t)n, sizeof *w);
    pthread_t *tid = calloc((size_t)n, sizeof *tid);
    if (!w || !tid)
        n = 1;
    sivei_work w0;
    sivei_work *ws = w ? w : &w0;
    for (int64_t i = 0; i < n; i++) {
        ws[i].run = run;
        ws[i].worker = (int32_t)i;
    }
    int64_t started = 1;
    for (; started < n; started++)
        if (pthread_create(&tid[started], NULL, worker_main, &ws[started]) != 0)
            break;
    worker_main(&ws[0]);
    for (int64_t i = 1; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
    free(w);
}

/* What sive_result_merge() checks parts agree on: the model's shape and
 * the bytes of theta*. */
static void identify(sive_result *r, const sive_model *m, const void *theta)
{
    size_t esz = m->dtype == SIVE_F32 ? sizeof(float) : sizeof(double);
    r->dtype = (int32_t)m->dtype;
    r->dim = m->dim;
    r->n_examples = m->n_examples;
    r->theta_hash = sivei_fnv1a64(SIVEI_FNV_OFFSET, theta, m->dim * esz);
    r->identity = m->identity; /* 0 when the caller's struct has none */
}

/* Start a run: everything that can be checked before the first callback. */
static int prepare(sive_probe *p, const sivei_options *o, const sive_model *m,
                   const void *theta_star, sivei_run *run)
{
    int rc = check_model(m, &run->model, p->errmsg);
    if (rc)
        return rc;
    if (!theta_star)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG, "theta_star is NULL");
    run->opt = *o; /* frozen: the chains never read the probe */
    run->progress = p->progress;
    run->progress_user = p->progress_user;
    run->theta_star = theta_star;
    run->star_exact = p->star_exact;
    if ((rc = sivei_params_prepare(p, run->model.dim, &run->ranges,
                                   &run->n_ranges, &run->moved, p->errmsg)) ||
        (rc = radius(run, theta_star, &run->h, p->errmsg)) ||
        (rc = check_sizes(&run->opt, &run->model, p->errmsg)))
        return rc;
    int64_t end = run->opt.chain_end ? run->opt.chain_end : run->opt.chains;
    if (run->opt.chain_begin >= end || end > run->opt.chains)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "chain range [%lld, %lld) is not a non-empty part of the %lld chains",
                         (long long)run->opt.chain_begin, (long long)end,
                         (long long)run->opt.chains);
    run->eta = run->opt.base_lr / run->opt.t;
    run->r = sivei_result_alloc(&run->opt, run->h, run->eta,
                                (int32_t)run->opt.chain_begin, (int32_t)end, 1);
    if (!run->r)
        return sivei_fail(p->errmsg, SIVE_E_NOMEM,
                         "out of memory for %lld chains x %lld steps of traces",
                         (long long)(end - run->opt.chain_begin), (long long)run->opt.steps);
    identify(run->r, &run->model, theta_star);
    if (sivei_result_set_params(run->r, run->ranges, run->n_ranges, run->moved))
        rc = sivei_fail(p->errmsg, SIVE_E_NOMEM, "out of memory for the parameter ranges");
    else
        rc = sivei_views_prepare(p, run, p->errmsg);
    if (rc) {
        sive_result_free(run->r);
        run->r = NULL;
    }
    return rc;
}

/* One run of the chains with options o (p's or the step-halved copy). */
int sivei_run_once(sive_probe *p, const sivei_options *o, const sive_model *m,
                   const void *theta_star, sive_result **out)
{
    sivei_run run;
    memset(&run, 0, sizeof run);
    int rc = prepare(p, o, m, theta_star, &run);
    if (rc)
        return rc;
    atomic_init(&run.next_chain, run.r->begin);
    atomic_init(&run.stop, 0);
    pthread_mutex_init(&run.lock, NULL);
    /* a callback failing at theta* is the run's status (its chains then
     * stop at step 0, as after any callback error); other failures here
     * are the caller's to fix and return no result */
    if ((rc = sivei_evaluators_prepare(&run, p->errmsg)) ||
        (rc = sivei_samplers_prepare(&run, p->errmsg))) {
        sivei_evaluators_release(&run);
        pthread_mutex_destroy(&run.lock);
        sive_result_free(run.r);
        return rc;
    }
    run_workers(&run);
    sivei_evaluators_release(&run);
    pthread_mutex_destroy(&run.lock);
    /* out of memory, or a loss not finite at theta* met by a step's
     * recomputation (control variates beyond the table limit): no result,
     * as when the pass at theta* finds it */
    const int no_result =
        run.status == SIVE_E_NOMEM || run.status == SIVE_E_INVALID_ARG;
    if (!no_result && (rc = sivei_result_summarise(run.r)) == SIVE_OK)
        rc = sivei_samplers_note(&run);
    sivei_samplers_release(&run);
    if (no_result) {
        sive_result_free(run.r);
        return sivei_fail(p->errmsg, run.status, "%s", run.errmsg);
    }
    if (rc) {
        sive_result_free(run.r);
        return sivei_fail(p->errmsg, rc, "out of memory while summarising the chains");
    }
    sivei_result_conclude(run.r, run.status, run.callback_code, run.errmsg);
    if ((rc = sivei_views_finish(run.r))) {
        sive_result_free(run.r);
        return sivei_fail(p->errmsg, rc, "out of memory while summarising the views");
    }
    *out = run.r;
    return SIVE_OK;
}

/* SIVE_OPT_STEP_EXTRAPOLATE (grad = 0): the same chains at base_lr/2;
 * SIVE_OPT_GRAD_EXTRAPOLATE (grad = 1): at 2 B_grad; each paired with
 * r's (step0.c).  A callback error or a cancel there becomes r's status. */
static int extrapolate(sive_probe *p, const sive_model *m, const void *theta_star,
                       sive_result *r, int grad)
{
    sivei_options o = r->opt;
    double weight = 2.0;
    o.step_extrapolate = 0;
    o.grad_extrapolate = 0;
    if (grad) {
        const double n = (double)r->n_examples, b = (double)o.grad_batch;
        o.grad_batch *= 2; /* lambda(B) = lambda_0 + c x(B), x = 1/B (- 1/n) */
        if (!o.replacement)
            weight = 2.0 - 2.0 * b / n;
    } else {
        o.base_lr /= 2.0;
    }
    sive_result *fine = NULL;
    const size_t views = p->n_views; /* r's views are measured: not again */
    p->n_views = 0;
    int rc = sivei_run_once(p, &o, m, theta_star, &fine);
    p->n_views = views;
    if (rc)
        return rc;
    const char *what = grad ? "2 grad_batch (grad_extrapolate)" : "base_lr/2 (step_extrapolate)";
    if (fine->status == SIVE_E_CALLBACK || fine->status == SIVE_E_CANCELLED) {
        char msg[SIVE_ERRMSG_LEN + 64];
        snprintf(msg, sizeof msg, "in the run at %s: %s", what, fine->errmsg);
        sivei_result_conclude(r, fine->status, fine->callback_code, msg);
    } else if ((rc = sivei_richardson(r, fine, weight,
                                      grad ? SIVE_STAT_SIVE_FULL_BATCH : SIVE_STAT_SIVE_STEP0,
                                      grad ? SIVE_STAT_MCSE_FULL_BATCH : SIVE_STAT_MCSE_STEP0))) {
        rc = sivei_fail(p->errmsg, rc, "out of memory while extrapolating (%s)", what);
    }
    sive_result_free(fine);
    return rc;
}

/* Metropolis + c_h = 0: short pilots at a large radius may not have
 * relaxed, so the plateau search can stop on a radius the full-length run
 * itself finds too small: its own e = d ln lambda-hat / d ln h with
 * e - EXACT_Z se above EXACT_SLOPE (the search's plateau bound, ~2 % of
 * bias).  Such a run is repeated at twice the h, at most EXACT_DOUBLINGS
 * times.  The check runs all chains (like the
 * pilots, so every part of a split run chooses the same h); *r is the
 * last of them when the caller's range is all chains, else NULL. */
#define EXACT_DOUBLINGS 3
#define EXACT_SLOPE 0.04
#define EXACT_Z 2.0
static int exact_continue(sive_probe *p, sivei_options *o, const sive_model *m,
                          const void *theta_star, sivei_auto *a, sive_result **r)
{
    sivei_options f = *o;
    f.chain_begin = 0;
    f.chain_end = 0;
    for (int k = 0;; k++) {
        int rc = sivei_run_once(p, &f, m, theta_star, r);
        if (rc)
            return rc;
        const double *st = (*r)->summary, lam = st[SIVE_STAT_SIVE_UNCLIPPED];
        if ((*r)->status != SIVE_OK || k == EXACT_DOUBLINGS || !(lam > 0.0) ||
            (st[SIVE_STAT_DLAMBDA_DLOG_H] - EXACT_Z * st[SIVE_STAT_DLAMBDA_DLOG_H_SE]) / lam <=
                EXACT_SLOPE)
            break;
        sive_result_free(*r);
        *r = NULL;
        a->levels++;
        a->pilot_steps += f.steps * f.chains;
        a->doublings++;
        f.h *= 2.0;
    }
    o->h = a->h = f.h;
    const int64_t end = o->chain_end ? o->chain_end : o->chains;
    /* a part discards the last check and runs its range; its radius line
     * counts what the whole run's counts (the search), so that the
     * parts' lines are the whole run's and merge keeps it */
    if ((*r)->status == SIVE_OK && (o->chain_begin != 0 || end != o->chains)) {
        sive_result_free(*r);
        *r = NULL;
    }
    return SIVE_OK;
}

int sive_probe_run(sive_probe *p, const sive_model *m, const void *theta_star,
                   sive_result **out)
{
    if (out)
        *out = NULL;
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    p->errmsg[0] = '\0';
    if (!out)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG, "out is NULL");
    sive_result *r = NULL;
    sivei_options o = p->opt;
    sivei_auto a;
    sivei_defaults dflt;
    sive_model mc; /* the description as the run reads it; refused later if bad */
    char scratch[SIVE_ERRMSG_LEN];
    const int model_ok = check_model(m, &mc, scratch) == SIVE_OK;
    int rc = sivei_defaults_resolve(&o, model_ok ? &mc : NULL, theta_star, p->ranges != NULL,
                                    &dflt);
    if (rc)
        return sivei_fail(p->errmsg, rc, "out of memory while choosing the defaults");
    p->star_exact = dflt.exact;
    int chosen = !o.h_absolute && o.c_h == 0.0;
    const int reused = p->reuse.on;
    if (reused && (rc = reuse_check(p, &o, chosen, model_ok ? &mc : NULL, theta_star)))
        return rc;
    if (reused) {
        o.h = p->reuse.h; /* the search's choice, without the search */
    } else if (chosen) {
        const size_t views = p->n_views; /* the pilots choose h: no views */
        p->n_views = 0;
        rc = sivei_radius_auto(p, &o, m, theta_star, &a, &r);
        p->n_views = views;
        if (rc)
            return rc;
        o.h = a.h;
        if (r)
            chosen = 0; /* a pilot's callback error or cancel */
        else if (o.metropolis && (rc = exact_continue(p, &o, m, theta_star, &a, &r)))
            return rc;
    }
    if (!r)
        rc = sivei_run_once(p, &o, m, theta_star, &r);
    for (int grad = 0; grad < 2 && rc == SIVE_OK; grad++)
        if ((grad ? r->opt.grad_extrapolate : r->opt.step_extrapolate) &&
            r->status == SIVE_OK && (rc = extrapolate(p, m, theta_star, r, grad))) {
            sive_result_free(r);
            return rc;
        }
    if (rc)
        return rc;
    /* a radius set: paired pilots further out (the run's bits unchanged) */
    if (r->opt.radius_check == 1 && (o.h_absolute || o.c_h != 0.0) && !reused &&
        r->status == SIVE_OK && (rc = sivei_radius_check(p, m, theta_star, r))) {
        sive_result_free(r);
        return rc;
    }
    if ((rc = sivei_defaults_note(r, &dflt)) ||
        (chosen && (rc = reused ? reuse_note(r, &p->reuse) : sivei_radius_auto_note(r, &a)))) {
        sive_result_free(r);
        return sivei_fail(p->errmsg, rc, "out of memory for the health text");
    }
    *out = r;
    sivei_clear_error();
    return SIVE_OK;
}
