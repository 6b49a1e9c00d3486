/* Probe handle: lifecycle, options and their bounds, validation, and the
 * scheduling of chains on worker threads. */
#include "probe_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIM ((size_t)1 << 40)

static const sive_options default_options = {
    .t = 1e4, .base_lr = 0.05, .h = 0.0, .c_h = 1.0, .burn_in = 0.3,
    .anchor = NAN, .h_absolute = 0,
    .steps = 100000, .groups = 512, .eval_batch = 64, .grad_batch = 1024,
    .data_size = 0, .chains = 5, .threads = 1, .replacement = 1,
    .eval_stride = 1, .seed = 0,
};

/* Option table: type and bounds, so setters, getters and docs agree. */
typedef struct opt_info {
    const char *name;
    int is_double;
    double lo, hi; /* inclusive unless noted below */
    int lo_open;   /* lower bound exclusive */
    int hi_open;   /* upper bound exclusive */
} opt_info;

static const opt_info opt_table[] = {
    [SIVE_OPT_T] = {"t", 1, 0.0, 1e12, 1, 0},
    [SIVE_OPT_BASE_LR] = {"base_lr", 1, 0.0, 1.0, 1, 0},
    [SIVE_OPT_H] = {"h", 1, 0.0, 1e12, 1, 0},
    [SIVE_OPT_C_H] = {"c_h", 1, 0.0, 1e12, 1, 0},
    [SIVE_OPT_STEPS] = {"steps", 0, 2.0, 1099511627776.0, 0, 0},
    [SIVE_OPT_BURN_IN] = {"burn_in", 1, 0.0, 1.0, 0, 1},
    [SIVE_OPT_GROUPS] = {"groups", 0, 2.0, 1048576.0, 0, 0},
    [SIVE_OPT_EVAL_BATCH] = {"eval_batch", 0, 1.0, 16777216.0, 0, 0},
    [SIVE_OPT_GRAD_BATCH] = {"grad_batch", 0, 1.0, 16777216.0, 0, 0},
    [SIVE_OPT_DATA_SIZE] = {"data_size", 0, 0.0, 4611686018427387904.0, 0, 0},
    [SIVE_OPT_CHAINS] = {"chains", 0, 1.0, 4096.0, 0, 0},
    [SIVE_OPT_THREADS] = {"threads", 0, 1.0, 1024.0, 0, 0},
    [SIVE_OPT_SEED] = {"seed", 0, -9.3e18, 9.3e18, 0, 0},
    [SIVE_OPT_REPLACEMENT] = {"replacement", 0, 0.0, 1.0, 0, 0},
    [SIVE_OPT_EVAL_STRIDE] = {"eval_stride", 0, 1.0, 1048576.0, 0, 0},
    [SIVE_OPT_ANCHOR] = {"anchor", 1, -INFINITY, INFINITY, 1, 1},
};

#define N_OPTS ((int)(sizeof opt_table / sizeof opt_table[0]))

static const opt_info *lookup(sive_probe *p, sive_option opt, int want_double)
{
    if ((int)opt <= 0 || (int)opt >= N_OPTS || !opt_table[opt].name) {
        sive_fail(p ? p->errmsg : NULL, SIVE_E_INVALID_ARG,
                  "unknown option %d", (int)opt);
        return NULL;
    }
    const opt_info *info = &opt_table[opt];
    if (info->is_double != want_double) {
        sive_fail(p ? p->errmsg : NULL, SIVE_E_INVALID_ARG,
                  "option '%s' is %s-typed: use sive_probe_%s_%s", info->name,
                  info->is_double ? "double" : "int", "set/get",
                  info->is_double ? "double" : "int");
        return NULL;
    }
    return info;
}

static int in_range(const opt_info *info, double v)
{
    if (info->lo_open ? !(v > info->lo) : !(v >= info->lo))
        return 0;
    if (info->hi_open ? !(v < info->hi) : !(v <= info->hi))
        return 0;
    return 1;
}

static void range_text(const opt_info *info, char *buf, size_t len)
{
    snprintf(buf, len, "%c%g, %g%c", info->lo_open ? '(' : '[', info->lo,
             info->hi, info->hi_open ? ')' : ']');
}

int sive_probe_new(sive_probe **out, size_t dim)
{
    if (!out)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "sive_probe_new: out is NULL");
    *out = NULL;
    if (dim == 0 || dim > MAX_DIM)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_probe_new: dim %zu is outside [1, 2^40]", dim);
    sive_probe *p = calloc(1, sizeof *p);
    if (!p)
        return sive_fail(NULL, SIVE_E_NOMEM, "sive_probe_new: out of memory");
    p->dim = dim;
    p->opt = default_options;
    *out = p;
    sive_clear_error();
    return SIVE_OK;
}

void sive_probe_free(sive_probe *p) { free(p); }

size_t sive_probe_dim(const sive_probe *p) { return p ? p->dim : 0; }

const char *sive_probe_errmsg(const sive_probe *p)
{
    return p ? p->errmsg : "probe handle is NULL";
}

int sive_probe_callback_code(const sive_probe *p)
{
    return p ? p->callback_code : 0;
}

int sive_probe_set_double(sive_probe *p, sive_option opt, double value)
{
    if (!p)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    const opt_info *info = lookup(p, opt, 1);
    if (!info)
        return SIVE_E_INVALID_ARG;
    if (opt == SIVE_OPT_ANCHOR && isnan(value)) {
        p->opt.anchor = NAN; /* NaN clears the anchor */
        return SIVE_OK;
    }
    if (!in_range(info, value)) {
        char r[96];
        range_text(info, r, sizeof r);
        return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "option '%s' = %g is outside %s", info->name, value, r);
    }
    switch (opt) {
    case SIVE_OPT_T: p->opt.t = value; break;
    case SIVE_OPT_BASE_LR: p->opt.base_lr = value; break;
    case SIVE_OPT_H: p->opt.h = value; p->opt.h_absolute = 1; break;
    case SIVE_OPT_C_H: p->opt.c_h = value; p->opt.h_absolute = 0; break;
    case SIVE_OPT_BURN_IN: p->opt.burn_in = value; break;
    case SIVE_OPT_ANCHOR: p->opt.anchor = value; break;
    default: break;
    }
    return SIVE_OK;
}

int sive_probe_set_int(sive_probe *p, sive_option opt, int64_t value)
{
    if (!p)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    const opt_info *info = lookup(p, opt, 0);
    if (!info)
        return SIVE_E_INVALID_ARG;
    if (opt != SIVE_OPT_SEED && !in_range(info, (double)value)) {
        char r[96];
        range_text(info, r, sizeof r);
        return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "option '%s' = %lld is outside %s", info->name,
                         (long long)value, r);
    }
    sive_options *o = &p->opt;
    switch (opt) {
    case SIVE_OPT_STEPS: o->steps = value; break;
    case SIVE_OPT_GROUPS: o->groups = value; break;
    case SIVE_OPT_EVAL_BATCH: o->eval_batch = value; break;
    case SIVE_OPT_GRAD_BATCH: o->grad_batch = value; break;
    case SIVE_OPT_DATA_SIZE: o->data_size = value; break;
    case SIVE_OPT_CHAINS: o->chains = value; break;
    case SIVE_OPT_THREADS: o->threads = value; break;
    case SIVE_OPT_SEED: o->seed = (uint64_t)value; break;
    case SIVE_OPT_REPLACEMENT: o->replacement = value; break;
    case SIVE_OPT_EVAL_STRIDE: o->eval_stride = value; break;
    default: break;
    }
    return SIVE_OK;
}

int sive_probe_get_double(const sive_probe *p, sive_option opt, double *value)
{
    if (!p || !value)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_probe_get_double: NULL argument");
    if (!lookup((sive_probe *)p, opt, 1))
        return SIVE_E_INVALID_ARG;
    const sive_options *o = &p->opt;
    switch (opt) {
    case SIVE_OPT_T: *value = o->t; break;
    case SIVE_OPT_BASE_LR: *value = o->base_lr; break;
    case SIVE_OPT_H: *value = o->h_absolute ? o->h : NAN; break;
    case SIVE_OPT_C_H: *value = o->h_absolute ? NAN : o->c_h; break;
    case SIVE_OPT_BURN_IN: *value = o->burn_in; break;
    case SIVE_OPT_ANCHOR: *value = o->anchor; break;
    default: break;
    }
    return SIVE_OK;
}

int sive_probe_get_int(const sive_probe *p, sive_option opt, int64_t *value)
{
    if (!p || !value)
        return sive_fail(NULL, SIVE_E_INVALID_ARG,
                         "sive_probe_get_int: NULL argument");
    if (!lookup((sive_probe *)p, opt, 0))
        return SIVE_E_INVALID_ARG;
    const sive_options *o = &p->opt;
    switch (opt) {
    case SIVE_OPT_STEPS: *value = o->steps; break;
    case SIVE_OPT_GROUPS: *value = o->groups; break;
    case SIVE_OPT_EVAL_BATCH: *value = o->eval_batch; break;
    case SIVE_OPT_GRAD_BATCH: *value = o->grad_batch; break;
    case SIVE_OPT_DATA_SIZE: *value = o->data_size; break;
    case SIVE_OPT_CHAINS: *value = o->chains; break;
    case SIVE_OPT_THREADS: *value = o->threads; break;
    case SIVE_OPT_SEED: *value = (int64_t)o->seed; break;
    case SIVE_OPT_REPLACEMENT: *value = o->replacement; break;
    case SIVE_OPT_EVAL_STRIDE: *value = o->eval_stride; break;
    default: break;
    }
    return SIVE_OK;
}

/* Forget the registration, so that nothing points into a caller's freed
 * model (bindings from other languages clear it after a run). */
static void clear_callbacks(sive_probe *p)
{
    p->dtype = SIVE_DTYPE_NONE;
    memset(&p->grad, 0, sizeof p->grad);
    memset(&p->eval, 0, sizeof p->eval);
    p->user = NULL;
}

/* Shared checks of the two registration functions: returns SIVE_OK when
 * the pair should be stored, 1 when both are NULL (registration cleared),
 * or an error status. */
static int check_callbacks(sive_probe *p, int have_grad, int have_eval)
{
    if (!p)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    if (!have_grad && !have_eval) {
        clear_callbacks(p);
        return 1;
    }
    if (!have_grad || !have_eval)
        return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "give both the gradient and the evaluation callback (or both NULL to clear)");
    return SIVE_OK;
}

int sive_probe_set_callbacks_f32(sive_probe *p, sive_grad_f32_fn grad,
                                 sive_eval_f32_fn eval, void *user)
{
    int rc = check_callbacks(p, grad != NULL, eval != NULL);
    if (rc != SIVE_OK)
        return rc > 0 ? SIVE_OK : rc;
    p->dtype = SIVE_DTYPE_F32;
    p->grad.f32 = grad;
    p->eval.f32 = eval;
    p->user = user;
    return SIVE_OK;
}

int sive_probe_set_callbacks_f64(sive_probe *p, sive_grad_f64_fn grad,
                                 sive_eval_f64_fn eval, void *user)
{
    int rc = check_callbacks(p, grad != NULL, eval != NULL);
    if (rc != SIVE_OK)
        return rc > 0 ? SIVE_OK : rc;
    p->dtype = SIVE_DTYPE_F64;
    p->grad.f64 = grad;
    p->eval.f64 = eval;
    p->user = user;
    return SIVE_OK;
}

int sive_probe_set_progress(sive_probe *p, sive_progress_fn fn, void *user)
{
    if (!p)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    p->progress = fn;
    p->progress_user = user;
    return SIVE_OK;
}

/* ------------------------------------------------------------------ */

void sive_run_fail(sive_run *run, int status, int cb_code, const char *fmt, ...)
{
    pthread_mutex_lock(&run->lock);
    if (run->status == SIVE_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(run->errmsg, sizeof run->errmsg, fmt, ap);
        va_end(ap);
        run->status = status;
        run->callback_code = cb_code;
    }
    pthread_mutex_unlock(&run->lock);
    atomic_store(&run->stop, 1);
}

int sive_work_init(sive_work *w, const sive_probe *p)
{
    const sive_options *o = &p->opt;
    size_t el = p->dtype == SIVE_DTYPE_F32 ? sizeof(float) : sizeof(double);
    memset(w, 0, sizeof *w);
    w->theta = malloc(p->dim * el);
    w->grad = malloc(p->dim * el);
    w->noise = malloc((p->dim < SIVE_NOISE_CHUNK ? p->dim : SIVE_NOISE_CHUNK) * el);
    w->group_loss = malloc((size_t)o->groups * sizeof(double));
    int ok = w->theta && w->grad && w->noise && w->group_loss;
    if (ok && o->data_size > 0) {
        w->eval_idx = malloc((size_t)o->groups * (size_t)o->eval_batch * sizeof(uint64_t));
        w->grad_idx = malloc((size_t)o->grad_batch * sizeof(uint64_t));
        ok = w->eval_idx && w->grad_idx;
        if (ok && !o->replacement) {
            w->perm = malloc((size_t)o->data_size * sizeof(uint64_t));
            ok = w->perm != NULL;
        }
    }
    if (!ok) {
        sive_work_release(w);
        return SIVE_E_NOMEM;
    }
    return SIVE_OK;
}

void sive_work_release(sive_work *w)
{
    free(w->theta);
    free(w->grad);
    free(w->noise);
    free(w->group_loss);
    free(w->eval_idx);
    free(w->grad_idx);
    free(w->perm);
    memset(w, 0, sizeof *w);
}

int64_t sive_tail_count(int64_t steps, int64_t tail_start, int64_t stride)
{
    /* evaluated steps m in [tail_start, steps) with m % stride == 0 */
    if (tail_start >= steps)
        return 0;
    int64_t first = (tail_start + stride - 1) / stride; /* ceil */
    int64_t last = (steps - 1) / stride;
    return last >= first ? last - first + 1 : 0;
}

static void *worker_main(void *arg)
{
    sive_run *run = arg;
    sive_work w;
    if (sive_work_init(&w, run->p) != SIVE_OK) {
        sive_run_fail(run, SIVE_E_NOMEM, 0, "out of memory for a worker's scratch");
        return NULL;
    }
    for (;;) {
        int c = atomic_fetch_add(&run->next_chain, 1);
        if (c >= run->r->chains)
            break;
        if (run->p->dtype == SIVE_DTYPE_F32)
            sive_chain_run_f32(run, &w, c);
        else
            sive_chain_run_f64(run, &w, c);
    }
    sive_work_release(&w);
    return NULL;
}

static sive_result *result_alloc(const sive_probe *p, double h, double eta)
{
    const sive_options *o = &p->opt;
    sive_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->chains = (int32_t)o->chains;
    r->steps = o->steps;
    r->stride = o->eval_stride;
    r->tail_start = (int64_t)floor(o->burn_in * (double)o->steps);
    r->t = o->t;
    r->h = h;
    r->eta = eta;
    r->groups = o->groups;
    r->anchor = o->anchor;
    r->c = calloc((size_t)r->chains, sizeof *r->c);
    if (!r->c) {
        free(r);
        return NULL;
    }
    for (int32_t c = 0; c < r->chains; c++) {
        for (int k = 0; k < SIVE_TRACE_COUNT_; k++) {
            r->c[c].trace[k] = malloc((size_t)o->steps * sizeof(double));
            if (!r->c[c].trace[k]) {
                sive_result_free(r);
                return NULL;
            }
        }
        for (int k = 0; k < SIVE_STAT_COUNT_; k++)
            r->c[c].stat[k] = NAN;
    }
    return r;
}

/* Everything that can be checked before the first callback. */
static int validate(sive_probe *p, const void *theta_star, sive_result **out,
                    int dtype, double *h_out)
{
    if (!out)
        return sive_fail(p->errmsg, SIVE_E_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!theta_star)
        return sive_fail(p->errmsg, SIVE_E_INVALID_ARG, "theta_star is NULL");
    if (p->dtype == SIVE_DTYPE_NONE)
        return sive_fail(p->errmsg, SIVE_E_STATE,
                         "no callbacks registered: call sive_probe_set_callbacks_f32/_f64 first");
    if (p->dtype != dtype)
        return sive_fail(p->errmsg, SIVE_E_STATE,
                         "the registered callbacks are %s but the run is %s",
                         p->dtype == SIVE_DTYPE_F32 ? "float32" : "float64",
                         dtype == SIVE_DTYPE_F32 ? "float32" : "float64");
    const sive_options *o = &p->opt;
    double norm2 = 0.0;
    for (size_t i = 0; i < p->dim; i++) {
        double v = dtype == SIVE_DTYPE_F32 ? ((const float *)theta_star)[i]
                                           : ((const double *)theta_star)[i];
        if (!isfinite(v))
            return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                             "theta_star[%zu] = %g is not finite", i, v);
        norm2 += v * v;
    }
    double h = o->h_absolute ? o->h : o->c_h * sqrt(norm2 / (double)p->dim);
    if (!(h > 0.0) || !isfinite(h))
        return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "adaptive radius h = c_h*||theta*||/sqrt(d) = %g is not positive "
                         "(theta* is zero?): set an absolute SIVE_OPT_H", h);
    *h_out = h;
    int64_t tail_start = (int64_t)floor(o->burn_in * (double)o->steps);
    int64_t tail = sive_tail_count(o->steps, tail_start, o->eval_stride);
    if (tail < 4)
        return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                         "the tail window holds %lld evaluated steps (steps %lld, burn-in %g, "
                         "eval stride %lld); at least 4 are needed",
                         (long long)tail, (long long)o->steps, o->burn_in,
                         (long long)o->eval_stride);
    if (o->data_size > 0) {
        if ((uint64_t)o->groups * (uint64_t)o->eval_batch > ((uint64_t)1 << 31))
            return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                             "groups*eval_batch = %lld indices per step is above 2^31",
                             (long long)(o->groups * o->eval_batch));
        if (!o->replacement && (o->eval_batch > o->data_size || o->grad_batch > o->data_size))
            return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                             "sampling without replacement needs eval_batch (%lld) and "
                             "grad_batch (%lld) <= data_size (%lld)",
                             (long long)o->eval_batch, (long long)o->grad_batch,
                             (long long)o->data_size);
        if (!o->replacement && (uint64_t)o->data_size > ((uint64_t)1 << 32))
            return sive_fail(p->errmsg, SIVE_E_INVALID_ARG,
                             "sampling without replacement keeps a permutation of the data "
                             "set; data_size %lld is above 2^32",
                             (long long)o->data_size);
    }
    return SIVE_OK;
}

static int run_common(sive_probe *p, const void *theta_star, sive_result **out,
                      int dtype)
{
    if (!p)
        return sive_fail(NULL, SIVE_E_INVALID_ARG, "probe handle is NULL");
    p->errmsg[0] = '\0';
    p->callback_code = 0;
    double h = 0.0;
    int rc = validate(p, theta_star, out, dtype, &h);
    if (rc)
        return rc;
    const sive_options *o = &p->opt;
    double eta = o->base_lr / o->t;
    sive_result *r = result_alloc(p, h, eta);
    if (!r)
        return sive_fail(p->errmsg, SIVE_E_NOMEM,
                         "out of memory for %lld chains x %lld steps of traces",
                         (long long)o->chains, (long long)o->steps);

    sive_run run = {.p = p, .theta_star = theta_star, .h = h, .eta = eta, .r = r};
    atomic_init(&run.next_chain, 0);
    atomic_init(&run.stop, 0);
    pthread_mutex_init(&run.lock, NULL);

    int64_t nthreads = o->threads < o->chains ? o->threads : o->chains;
    if (nthreads <= 1) {
        worker_main(&run);
    } else {
        pthread_t *tid = calloc((size_t)nthreads, sizeof *tid);
        int64_t started = 0;
        if (tid) {
            for (; started < nthreads; started++)
                if (pthread_create(&tid[started], NULL, worker_main, &run) != 0)
                    break;
        }
        if (started == 0) {
            /* no thread could start: run on the caller's thread */
            worker_main(&run);
        }
        for (int64_t i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        free(tid);
    }
    pthread_mutex_destroy(&run.lock);

    if (run.status == SIVE_E_NOMEM) {
        sive_result_free(r);
        return sive_fail(p->errmsg, SIVE_E_NOMEM, "%s", run.errmsg);
    }
    rc = sive_result_summarise(r);
    if (rc) {
        sive_result_free(r);
        return sive_fail(p->errmsg, rc, "out of memory while summarising the chains");
    }
    *out = r;
    if (run.status != SIVE_OK) {
        p->callback_code = run.callback_code;
        return sive_fail(p->errmsg, run.status, "%s", run.errmsg);
    }
    if (r->chains_ok == 0)
        return sive_fail(p->errmsg, SIVE_E_DIVERGED,
                         "all %d chains diverged (first at step %lld of chain 0); "
                         "lower base_lr or t, or check the model for NaN",
                         (int)r->chains, (long long)r->c[0].stop_step);
    sive_clear_error();
    return SIVE_OK;
}

int sive_probe_run_f32(sive_probe *p, const float *theta_star, sive_result **out)
{
    return run_common(p, theta_star, out, SIVE_DTYPE_F32);
}

int sive_probe_run_f64(sive_probe *p, const double *theta_star, sive_result **out)
{
    return run_common(p, theta_star, out, SIVE_DTYPE_F64);
}
