/* One-parameter sweeps on top of sive_probe_run(): a copy of the probe per
 * value with that one option changed, every value with the same seed
 * (common random numbers), optionally several values at once on their own
 * threads.  No statistics here: each value's result is an ordinary run's. */
#include "probe_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The model seen by one concurrent slot: worker numbers shifted by
 * offset, so that runs going on at the same time never share a worker
 * number (models keep per-worker scratch, see sive_batch.worker). */
typedef struct sweep_wrap {
    const sive_model *inner;
    int32_t offset;
} sweep_wrap;

static int wrap_grad(const void *theta, size_t dim, const sive_batch *b, void *grad,
                     double *loss, void *user)
{
    const sweep_wrap *w = user;
    sive_batch c = *b;
    c.worker += w->offset;
    return w->inner->grad(theta, dim, &c, grad, loss, w->inner->user);
}

static int wrap_loss(const void *theta, size_t dim, const sive_batch *b, double *losses,
                     void *user)
{
    const sweep_wrap *w = user;
    sive_batch c = *b;
    c.worker += w->offset;
    return w->inner->loss(theta, dim, &c, losses, w->inner->user);
}

static int wrap_group(const void *theta, size_t dim, const sive_batch *b, double *gl,
                      void *user)
{
    const sweep_wrap *w = user;
    sive_batch c = *b;
    c.worker += w->offset;
    return w->inner->group_loss(theta, dim, &c, gl, w->inner->user);
}

static int wrap_move(const sive_move_info *info, const void *theta, void *out,
                     double *log_ratio, void *user)
{
    const sweep_wrap *w = user;
    sive_batch c = *info->batch;
    c.worker += w->offset;
    sive_move_info i = *info;
    i.batch = &c;
    return w->inner->move(&i, theta, out, log_ratio, w->inner->user);
}

static int wrap_curvature(const sive_curvature_info *info, const void *theta, double *g_root,
                          double *a_root, void *user)
{
    const sweep_wrap *w = user;
    sive_batch c = *info->batch;
    c.worker += w->offset;
    sive_curvature_info i = *info;
    i.batch = &c;
    return w->inner->curvature(&i, theta, g_root, a_root, w->inner->user);
}

typedef struct sweep_job {
    sive_probe *probes;          /* one per value, options already set */
    const sive_model *m;
    const void *theta;
    size_t n;
    sive_result **out;
    int *status;                 /* per value: the run's return value   */
    char (*msg)[SIVE_ERRMSG_LEN];/* per value: probe message on failure */
    atomic_size_t next;
    atomic_int stop;
} sweep_job;

/* A slot s > 0 wraps the model and every evaluation view of the probe
 * (their callbacks get the same worker numbers as the model's). */
typedef struct sweep_slot {
    sweep_job *job;
    sweep_wrap wrap;
    sive_model model;
    sivei_view *views;  /* the probe's views, wrapped; NULL in slot 0 */
    sweep_wrap *vwrap;  /* one per view */
} sweep_slot;

/* *out: the first struct_size bytes of m, the rest zero (a program built
 * against an older header has a shorter struct: nothing past it is read). */
static void model_copy(sive_model *out, const sive_model *m)
{
    memset(out, 0, sizeof *out);
    memcpy(out, m, m->struct_size < sizeof *out ? m->struct_size : sizeof *out);
}

/* *out: inner's description with its callbacks seen through w, worker
 * numbers shifted by offset. */
static void wrap_model(sive_model *out, const sive_model *inner, sweep_wrap *w, int32_t offset)
{
    model_copy(out, inner);
    w->inner = inner;
    w->offset = offset;
    out->user = w;
    out->grad = inner->grad ? wrap_grad : NULL;
    out->loss = inner->loss ? wrap_loss : NULL;
    out->group_loss = inner->group_loss ? wrap_group : NULL;
    out->move = out->move ? wrap_move : NULL; /* read only when struct_size covers it */
    out->curvature = out->curvature ? wrap_curvature : NULL; /* likewise */
    out->destroy = NULL;
}

static void *slot_main(void *arg)
{
    sweep_slot *s = arg;
    sweep_job *j = s->job;
    for (;;) {
        if (atomic_load(&j->stop))
            break;
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n)
            break;
        if (s->views) /* this slot's worker numbers in the views' calls too */
            j->probes[i].views = s->views;
        int rc = sive_probe_run(&j->probes[i], &s->model, j->theta, &j->out[i]);
        if (rc == SIVE_OK && sive_result_status(j->out[i]) == SIVE_E_CANCELLED) {
            /* the progress callback asked to stop: no further values */
            rc = SIVE_E_CANCELLED;
            snprintf(j->msg[i], SIVE_ERRMSG_LEN, "%s", sive_result_errmsg(j->out[i]));
        } else if (rc != SIVE_OK) {
            memcpy(j->msg[i], j->probes[i].errmsg, SIVE_ERRMSG_LEN);
        }
        j->status[i] = rc;
        if (rc != SIVE_OK)
            atomic_store(&j->stop, 1);
    }
    return NULL;
}

/* The arguments a sweep refuses before allocating anything; the option's
 * table row into *in. */
static int sweep_check(sive_probe *p, const sive_model *m, const void *theta_star,
                       sive_option opt, const double *values, size_t n, int32_t parallel,
                       sive_result **out, const sive_option_info **in)
{
    if (!p)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_probe_sweep: probe handle is NULL");
    if (!m || !theta_star || !values || !out || n == 0)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                          "sive_probe_sweep: NULL model, theta*, values or out, or n == 0");
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (parallel < 1)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                          "sive_probe_sweep: parallel %d < 1", (int)parallel);
    if (!(*in = sive_option_info_get(opt)))
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG, "sive_probe_sweep: unknown option %d",
                          (int)opt);
    if (opt == SIVE_OPT_SEED)
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                          "sive_probe_sweep: the seed cannot be swept (every value runs with "
                          "the probe's seed)");
    if (m->struct_size < offsetof(sive_model, destroy) + sizeof m->destroy || !m->grad ||
        (!m->loss && !m->group_loss))
        return sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                          "sive_probe_sweep: bad model description (struct_size or callbacks)");
    return SIVE_OK;
}

/* Every value's probe, before anything runs: a bad value fails first. */
static int sweep_probes(sive_probe *p, const sive_option_info *in, const double *values,
                        size_t n, sive_probe *probes)
{
    int rc = SIVE_OK;
    for (size_t i = 0; i < n && rc == SIVE_OK; i++) {
        probes[i] = *p;
        probes[i].errmsg[0] = '\0';
        double v = values[i];
        if (in->type == SIVE_TYPE_INT) {
            if (!isfinite(v) || v != floor(v) || fabs(v) > 9.0e15)
                rc = sivei_fail(p->errmsg, SIVE_E_INVALID_ARG,
                                "sive_probe_sweep: value %zu (%g) of integer option %s is not "
                                "an integer", i, v, in->name);
            else if ((rc = sive_probe_set_int(&probes[i], in->id, (int64_t)v)))
                sivei_fail(p->errmsg, rc, "sive_probe_sweep: value %zu: %s", i,
                           probes[i].errmsg);
        } else if ((rc = sive_probe_set_double(&probes[i], in->id, v))) {
            sivei_fail(p->errmsg, rc, "sive_probe_sweep: value %zu: %s", i, probes[i].errmsg);
        }
    }
    return rc;
}

static void slots_free(sweep_slot *slots, size_t nslots)
{
    for (size_t s = 0; slots && s < nslots; s++)
        free(slots[s].views), free(slots[s].vwrap);
    free(slots);
}

/* Run the job on nslots slots, slot s's worker ids offset by s * threads
 * (the model's callbacks and those of p's evaluation views); SIVE_E_NOMEM
 * when the slots cannot be allocated. */
static int sweep_run(sweep_job *job, const sive_probe *p, const sive_model *m, size_t nslots,
                     int64_t threads)
{
    sweep_slot *slots = calloc(nslots, sizeof *slots);
    pthread_t *tid = calloc(nslots, sizeof *tid);
    int *started = calloc(nslots, sizeof *started);
    int ok = slots && tid && started;
    for (size_t s = 0; ok && s < nslots; s++) {
        slots[s].job = job;
        model_copy(&slots[s].model, m);
        if (s == 0) /* slot 0 uses the model and the views as they are */
            continue;
        const int32_t offset = (int32_t)((int64_t)s * threads);
        wrap_model(&slots[s].model, m, &slots[s].wrap, offset);
        if (!p->n_views)
            continue;
        slots[s].views = malloc(p->n_views * sizeof *slots[s].views);
        slots[s].vwrap = calloc(p->n_views, sizeof *slots[s].vwrap);
        if (!(ok = slots[s].views && slots[s].vwrap))
            break;
        for (size_t k = 0; k < p->n_views; k++) {
            slots[s].views[k] = p->views[k]; /* name and subset shared, read only */
            wrap_model(&slots[s].views[k].model, &p->views[k].model, &slots[s].vwrap[k],
                       offset);
        }
    }
    if (!ok) {
        slots_free(slots, nslots), free(tid), free(started);
        return SIVE_E_NOMEM;
    }
    /* slots 1.. on their own threads; slot 0 on the caller's, so a sweep
     * whose threads cannot start still runs every value */
    for (size_t s = 1; s < nslots; s++)
        started[s] = pthread_create(&tid[s], NULL, slot_main, &slots[s]) == 0;
    slot_main(&slots[0]);
    for (size_t s = 1; s < nslots; s++)
        if (started[s])
            pthread_join(tid[s], NULL);
    slots_free(slots, nslots), free(tid), free(started);
    return SIVE_OK;
}

int sive_probe_sweep(sive_probe *p, const sive_model *m, const void *theta_star,
                     sive_option opt, const double *values, size_t n, int32_t parallel,
                     sive_result **out)
{
    const sive_option_info *in = NULL;
    int rc = sweep_check(p, m, theta_star, opt, values, n, parallel, out, &in);
    if (rc)
        return rc;
    sive_probe *probes = malloc(n * sizeof *probes);
    int *status = calloc(n, sizeof *status);
    char(*msg)[SIVE_ERRMSG_LEN] = calloc(n, sizeof *msg);
    if (!probes || !status || !msg) {
        free(probes), free(status), free(msg);
        return sivei_fail(p->errmsg, SIVE_E_NOMEM, "sive_probe_sweep: out of memory");
    }
    if ((rc = sweep_probes(p, in, values, n, probes))) {
        free(probes), free(status), free(msg);
        return rc;
    }
    size_t nslots = (size_t)parallel < n ? (size_t)parallel : n;
    int64_t threads = p->opt.threads < p->opt.chains ? p->opt.threads : p->opt.chains;
    if (opt == SIVE_OPT_THREADS || opt == SIVE_OPT_CHAINS)
        for (size_t i = 0; i < n; i++)
            if (values[i] > (double)threads)
                threads = (int64_t)values[i];
    sweep_job job = {.probes = probes, .m = m, .theta = theta_star, .n = n, .out = out,
                     .status = status, .msg = msg};
    atomic_init(&job.next, 0);
    atomic_init(&job.stop, 0);
    if (sweep_run(&job, p, m, nslots, threads)) {
        free(probes), free(status), free(msg);
        return sivei_fail(p->errmsg, SIVE_E_NOMEM, "sive_probe_sweep: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        if (status[i] != SIVE_OK) {
            rc = status[i];
            sivei_fail(p->errmsg, rc, "sive_probe_sweep: value %zu (%s = %g): %s", i, in->name,
                       values[i], msg[i]);
            break;
        }
    if (rc)
        for (size_t i = 0; i < n; i++) {
            sive_result_free(out[i]);
            out[i] = NULL;
        }
    else
        p->errmsg[0] = '\0';
    free(probes), free(status), free(msg);
    return rc;
}
