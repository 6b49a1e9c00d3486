/* The probes whose 0.2.0 outputs test_compat01.c checks (issue 20): the
 * models and settings, shared by the test and by the generator that ran
 * them through libsive 0.2.0 (commit 4934e44) and saved each result with
 * its sive_result_save() into test/data/compat02_<name>.sres (result
 * format 1).  Only the 0.2 API is used here, so this header compiles
 * against either library. */
#ifndef SIVE_TEST_COMPAT02_H
#define SIVE_TEST_COMPAT02_H

#include "quad.h"

#include <sive/sive.h>
#include <math.h>
#include <stdint.h>

/* Per-example least squares on NEX02 examples in 2 dimensions, written
 * with integer arithmetic so that both libraries see the same doubles:
 * l_j(theta) = (x_j . theta - y_j)^2 / 2. */
#define NEX02 96

static inline void c02_example(uint64_t j, double x[2], double *y)
{
    x[0] = (double)((int64_t)((j * 37u) % 17u) - 8) / 8.0;
    x[1] = (double)((int64_t)((j * 11u) % 13u) - 6) / 6.0;
    *y = 0.5 * x[0] - 0.25 * x[1] + (double)((int64_t)((j * 7u) % 5u) - 2) / 4.0;
}

static int c02_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                    double *loss, void *user)
{
    const double *th = theta;
    double *g = grad, s = 0.0;
    (void)d;
    (void)user;
    g[0] = g[1] = 0.0;
    for (size_t i = 0; i < b->group_size; i++) {
        double x[2], y;
        c02_example(b->index[i], x, &y);
        double r = x[0] * th[0] + x[1] * th[1] - y;
        g[0] += r * x[0];
        g[1] += r * x[1];
        s += 0.5 * r * r;
    }
    g[0] /= (double)b->group_size;
    g[1] /= (double)b->group_size;
    *loss = s / (double)b->group_size;
    return 0;
}

static int c02_loss(const void *theta, size_t d, const sive_batch *b, double *losses,
                    void *user)
{
    const double *th = theta;
    (void)d;
    (void)user;
    for (size_t i = 0; i < b->group_size; i++) {
        double x[2], y;
        c02_example(b->index[i], x, &y);
        double r = x[0] * th[0] + x[1] * th[1] - y;
        losses[i] = 0.5 * r * r;
    }
    return 0;
}

static inline sive_model c02_lsq_model(void)
{
    sive_model m;
    sive_model_init(&m, sizeof m);
    m.dtype = SIVE_F64;
    m.dim = 2;
    m.n_examples = NEX02;
    m.grad = c02_grad;
    m.loss = c02_loss;
    return m;
}

/* One probe: a model (0: the quadratic of quad.h in 3 dimensions, 1: the
 * least squares above) at theta*, and the options that differ from the
 * defaults.  replacement = 0 is not among them: its draws changed on
 * purpose after 0.2 (CHANGELOG, "replacement = 0 results change"). */
typedef struct c02_case {
    const char *name;
    int model;
    double theta[3];
    int64_t steps, chains, groups, eval_batch, grad_batch, threads, seed, replacement,
        stride, chain_begin, chain_end;
    double t, base_lr, burn_in, h, c_h, anchor; /* h > 0: absolute mode; anchor NaN: none */
} c02_case;

static const c02_case c02_cases[] = {
    {"quad_default", 0, {0.5, -0.25, 1.0}, 200, 3, 8, 64, 1024, 1, 11, 1, 1, 0, 0,
     10.0, 0.05, 0.3, 0.0, 1.0, NAN},
    {"quad_absolute", 0, {0.5, -0.25, 1.0}, 200, 4, 5, 64, 1024, 2, -3, 1, 2, 1, 3,
     25.0, 0.1, 0.5, 0.2, 0.0, 1.5},
    {"lsq_replacement", 1, {0.4, -0.2, 0.0}, 200, 2, 6, 8, 16, 1, 5, 1, 1, 0, 0,
     96.0, 0.05, 0.3, 0.0, 1.0, NAN},
};
#define C02_CASES (sizeof c02_cases / sizeof c02_cases[0])

/* The probe of case c with its options set; NULL on an error. */
static inline sive_probe *c02_probe(const c02_case *c)
{
    sive_probe *p = NULL;
    if (sive_probe_new(&p))
        return NULL;
    const struct { sive_option o; int64_t v; } iv[] = {
        {SIVE_OPT_STEPS, c->steps}, {SIVE_OPT_CHAINS, c->chains},
        {SIVE_OPT_GROUPS, c->groups}, {SIVE_OPT_EVAL_BATCH, c->eval_batch},
        {SIVE_OPT_GRAD_BATCH, c->grad_batch}, {SIVE_OPT_THREADS, c->threads},
        {SIVE_OPT_SEED, c->seed}, {SIVE_OPT_REPLACEMENT, c->replacement},
        {SIVE_OPT_EVAL_STRIDE, c->stride}, {SIVE_OPT_CHAIN_BEGIN, c->chain_begin},
        {SIVE_OPT_CHAIN_END, c->chain_end}};
    int rc = 0;
    for (size_t i = 0; i < sizeof iv / sizeof iv[0]; i++)
        rc |= sive_probe_set_int(p, iv[i].o, iv[i].v);
    rc |= sive_probe_set_double(p, SIVE_OPT_T, c->t);
    rc |= sive_probe_set_double(p, SIVE_OPT_BASE_LR, c->base_lr);
    rc |= sive_probe_set_double(p, SIVE_OPT_BURN_IN, c->burn_in);
    rc |= c->h > 0.0 ? sive_probe_set_double(p, SIVE_OPT_H, c->h)
                     : sive_probe_set_double(p, SIVE_OPT_C_H, c->c_h);
    rc |= sive_probe_set_double(p, SIVE_OPT_ANCHOR, c->anchor);
    if (rc) {
        sive_probe_free(p);
        return NULL;
    }
    return p;
}

/* Run case c (q: the quadratic's parameters); SIVE_OK or the error. */
static inline int c02_run(const c02_case *c, quad_fixture *q, sive_result **out)
{
    sive_model m = c->model == 0 ? quad_fixture_model(q, 3) : c02_lsq_model();
    sive_probe *p = c02_probe(c);
    if (!p)
        return SIVE_E_INVALID_ARG;
    int rc = sive_probe_run(p, &m, c->theta, out);
    sive_probe_free(p);
    return rc;
}

#endif

