/* The run's default sampler and radius (docs/guide.md "Defaults";
 * docs/theory.md "Defaults from the loss geometry").
 *
 * SIVE_OPT_METROPOLIS = -1 ("auto", its default) is resolved at the start
 * of every sive_probe_run(), zstd-style ("0 means default" there; -1
 * here, 0 being ULA):
 *  - with a radius set (h or c_h, sivei_options.radius_set) it is 0, and
 *    the radius is the one set: exactly the 0.2 path;
 *  - with no radius set, it is 1 and the radius comes from the loss
 *    (c_h = 0) when the model's loss is exact as the Metropolis sampler
 *    defines it (sampler_mala.c: no option it refuses, and the gradient
 *    callback stores a finite loss at theta* on the whole data set, the
 *    same loss and gradient for two batch seeds);
 *    otherwise 0 with c_h = 1, the 0.2 defaults.
 * Experimental kron_every and radius_lookahead = -1 ("auto", their
 * defaults) follow that outcome (docs/validation.md, "Mixing moves and the
 * look-ahead radius together"): where metropolis "auto" chose the exact
 * path, radius_lookahead is 8, anywhere else 0; kron_every is 1 wherever
 * the resolved step is the Metropolis-adjusted one (chosen or set, with or
 * without a radius) and the sampler accepts the layer-block Newton move
 * (the model supplies blocks and curvature, double, no parameter ranges,
 * orbit_every 0), anywhere else 0, the behaviour before it.
 * Experimental radius_check = -1 ("auto") is 1 where metropolis is 1 and
 * a radius (h, or c_h other than auto) was set, anywhere else 0.
 * The run (and its result, hence its file) then holds the resolved values;
 * the probe keeps -1. */
#include "probe_impl.h"
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* theta*'s entries are finite (the run refuses it otherwise: the callback
 * is not called on it here). */
static int finite_theta(const sive_model *m, const void *theta)
{
    for (size_t i = 0; i < m->dim; i++) {
        const double v = m->dtype == SIVE_F32 ? ((const float *)theta)[i]
                                              : ((const double *)theta)[i];
        if (!isfinite(v))
            return 0;
    }
    return 1;
}

int sivei_grad_at_star(const sive_model *m, int64_t grad_batch, const uint64_t *all,
                       const void *theta, uint64_t seed, void *grad, double *loss)
{
    const uint64_t n = m->n_examples;
    sive_batch gb = {.index = n ? all : NULL, .n_groups = 1,
                     .group_size = n ? (size_t)n : (size_t)grad_batch,
                     .seed = seed, .chain = -1, .worker = 0, .step = -1};
    *loss = NAN;
    sivei_clear_error();
    return m->grad(theta, m->dim, &gb, grad, loss, m->user);
}

/* The exact call at theta* (sivei_grad_at_star), as the Metropolis
 * sampler makes its check, once with seed 0 and once with another: 1 when
 * both store the same finite loss and the same gradient bits (a callback
 * that draws its own noise from batch->seed is a stochastic gradient, not
 * an exact loss), 0 (why filled) when not, SIVE_E_NOMEM. */
static int exact_at_star(const sive_model *m, const sivei_options *o, const void *theta,
                         char *why, size_t len)
{
    const uint64_t n = m->n_examples;
    const size_t el = m->dtype == SIVE_F32 ? sizeof(float) : sizeof(double);
    uint64_t *all = n ? malloc((size_t)n * sizeof *all) : NULL;
    void *g[2] = {calloc(m->dim, el), calloc(m->dim, el)};
    if (!g[0] || !g[1] || (n && !all)) {
        free(all);
        free(g[0]);
        free(g[1]);
        return SIVE_E_NOMEM;
    }
    for (uint64_t i = 0; i < n; i++)
        all[i] = i;
    static const uint64_t seeds[2] = {0, 0x9e3779b97f4a7c15u};
    double loss[2] = {NAN, NAN};
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++)
        rc = sivei_grad_at_star(m, o->grad_batch, all, theta, seeds[k], g[k], &loss[k]);
    const int same = !rc && memcmp(&loss[0], &loss[1], sizeof loss[0]) == 0 &&
                     memcmp(g[0], g[1], m->dim * el) == 0;
    free(all);
    free(g[0]);
    free(g[1]);
    if (rc)
        snprintf(why, len, "the gradient callback returned %d at theta*", rc);
    else if (!isfinite(loss[0]))
        snprintf(why, len, "the gradient callback stores no finite loss in *loss at theta*");
    else if (!same)
        snprintf(why, len, "the gradient or loss at theta* changes with the batch seed: a "
                           "stochastic gradient");
    else
        snprintf(why, len, "the loss is exact: finite at theta* and the same for two seeds%s",
                 n ? ", full batch without replacement" : "");
    return !rc && isfinite(loss[0]) && same;
}

static int resolve_metropolis(sivei_options *o, const sive_model *m, const void *theta,
                              sivei_defaults *d)
{
    if (o->metropolis >= 0)
        return SIVE_OK;
    o->metropolis = 0;
    if (o->radius_set || !m || !theta)
        return SIVE_OK; /* a radius set: the 0.2 path; no model: refused later */
    d->resolved = 1;
    char why[SIVE_ERRMSG_LEN] = "";
    sivei_options as_exact = *o; /* what the sampler would see (leapfrog) */
    as_exact.metropolis = 1;
    if (sivei_mala_refuse(&as_exact, m, why) != SIVE_OK) {
        snprintf(d->why, sizeof d->why, "%s", why);
        return SIVE_OK;
    }
    if (!finite_theta(m, theta)) {
        snprintf(d->why, sizeof d->why, "theta* is not finite");
        return SIVE_OK;
    }
    const int rc = exact_at_star(m, o, theta, d->why, sizeof d->why);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        d->exact = 1;
        o->metropolis = 1;
        o->c_h = 0.0;
        o->h_absolute = 0;
    }
    return SIVE_OK;
}

/* kron_every and radius_lookahead "auto" (-1), after metropolis: the
 * move wherever the resolved step is the Metropolis-adjusted one (chosen
 * by the defaults or set, with or without a radius set: the move is exact
 * in law and only mixes better) and the sampler would take it
 * (sivei_mala_refuse: blocks, curvature, double, orbit_every 0) and every
 * parameter moves; the look-ahead only on the exact path the defaults
 * chose (it changes the radius search, which a set radius skips). */
static void resolve_mixing(sivei_options *o, const sive_model *m, int ranges, sivei_defaults *d)
{
    if (o->kron_every < 0) {
        o->kron_every = 0;
        if (o->metropolis == 1 && !ranges) {
            char why[SIVE_ERRMSG_LEN];
            sivei_options with = *o;
            with.kron_every = 1;
            if (sivei_mala_refuse(&with, m, why) == SIVE_OK)
                o->kron_every = d->kron = 1;
        }
    }
    if (o->radius_lookahead < 0)
        o->radius_lookahead = d->lookahead = d->exact ? 8 : 0;
    /* radius_check: where a radius was set on the exact (Metropolis) path
     * the defaults would have searched for it (a radius set turns
     * metropolis auto to ULA, so this is metropolis 1 set with it) */
    if (o->radius_check < 0)
        o->radius_check = d->check =
            o->metropolis == 1 && o->radius_set && (o->h_absolute || o->c_h != 0.0);
}

int sivei_defaults_resolve(sivei_options *o, const sive_model *m, const void *theta,
                           int ranges, sivei_defaults *d)
{
    memset(d, 0, sizeof *d);
    const int rc = resolve_metropolis(o, m, theta, d);
    if (rc == SIVE_OK)
        resolve_mixing(o, m, ranges, d);
    return rc;
}

/* Only when the defaults changed the path: a run that resolved to 0.2's
 * (ULA, c_h = 1) has 0.2's health text (docs/guide.md, "Defaults"); the
 * line is a run note, kept by result files and merges. */
int sivei_defaults_note(sive_result *r, const sivei_defaults *d)
{
    if (!d->resolved || !d->exact)
        return d->kron ? sivei_health_append(r, "defaults: kron_every 1 (metropolis 1, and the "
                                                "model's blocks and curvature)\n")
                       : SIVE_OK;
    char line[SIVE_ERRMSG_LEN + 240];
    snprintf(line, sizeof line,
             "defaults: metropolis 1 and c_h = auto (h, c_h and metropolis unset, and %s)%s%s\n",
             d->why, d->kron ? "; kron_every 1 (the model's blocks and curvature)" : "",
             d->lookahead ? "; radius_lookahead 8" : "");
    return sivei_health_append(r, line);
}
