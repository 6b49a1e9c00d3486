/* Least-squares regression with per-example losses, the shared fixture of
 * the tests that check samplers and evaluators against an exact target:
 * l_j(theta) = (x_j.theta - y_j)^2 / 2 on n synthetic examples.  With the
 * full-data gradient the tethered ULA chain is Gaussian and
 * t^2 Var_q[L_n] has a closed form (an AR(1) per eigen-direction of
 * A = X'X/n; test/exact_ula.h), lsq_expect().  Include after <check.h>
 * and <sive/sive.h>. */
#ifndef SIVE_TEST_LSQ_H
#define SIVE_TEST_LSQ_H

#include "exact_ula.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define D 6
#define NEX 200

typedef struct lsq {
    double x[NEX][D], y[NEX];
    double A[D][D], b[D]; /* A = X'X/n, b = X'y/n */
    int fail_at_star;     /* on chain -1: 1 the callback fails, 2 a NaN loss */
    int batch_grad;       /* 1: the gradient of the batch's mean loss (the
                             mini-batch gradient); 0: the full-data one */
    atomic_int star_grads;/* gradient calls at theta* (batch chain -1)    */
    atomic_int grads;     /* all gradient calls                           */
    int fail_grad_pass;   /* 1: the gradient callback fails on chain -1   */
    double *rec;          /* if set: the gradient of chain c at step m <
                             rec_steps into rec[(c rec_steps + m) D ...] */
    int64_t rec_steps;
} lsq;

static double dot(const double *a, const double *b)
{
    double s = 0.0;
    for (int i = 0; i < D; i++)
        s += a[i] * b[i];
    return s;
}

/* Columns of different scales (eigenvalues of A spread over ~1.5
 * decades), residual noise of std 1: per-example losses that vary far
 * more between examples than with theta near theta*. */
static void lsq_make(lsq *m, uint64_t seed)
{
    static const double scale[D] = {0.5, 0.7, 1.0, 1.2, 1.6, 2.0};
    sive_rng g;
    sive_rng_seed(&g, seed, 0);
    memset(m, 0, sizeof *m);
    for (int j = 0; j < NEX; j++) {
        double z[D + 1];
        sive_rng_normals(&g, z, D + 1);
        for (int i = 0; i < D; i++)
            m->x[j][i] = scale[i] * z[i];
        m->y[j] = 0.3 * m->x[j][0] - 0.2 * m->x[j][3] + z[D];
    }
    for (int j = 0; j < NEX; j++)
        for (int i = 0; i < D; i++) {
            m->b[i] += m->x[j][i] * m->y[j] / NEX;
            for (int k = 0; k < D; k++)
                m->A[i][k] += m->x[j][i] * m->x[j][k] / NEX;
        }
}

static int lsq_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                    double *loss, void *user)
{
    lsq *m = user;
    const double *th = theta;
    double *g = grad;
    (void)d;
    atomic_fetch_add(&m->grads, 1);
    if (b->chain == -1)
        atomic_fetch_add(&m->star_grads, 1);
    if (m->fail_grad_pass && b->chain == -1) {
        sive_set_errmsg("no gradient at theta* today");
        return 9;
    }
    if (m->batch_grad) {
        double l = 0.0;
        for (int i = 0; i < D; i++)
            g[i] = 0.0;
        for (size_t k = 0; k < b->group_size; k++) {
            const double *x = m->x[b->index[k]];
            double r = dot(x, th) - m->y[b->index[k]];
            for (int i = 0; i < D; i++)
                g[i] += x[i] * r / (double)b->group_size;
            l += 0.5 * r * r / (double)b->group_size;
        }
        *loss = l;
        return 0;
    }
    for (int i = 0; i < D; i++)
        g[i] = dot(m->A[i], th) - m->b[i];
    if (m->rec && b->chain >= 0 && b->step < m->rec_steps)
        memcpy(m->rec + ((size_t)b->chain * (size_t)m->rec_steps + (size_t)b->step) * D, g,
               sizeof(double) * D);
    double l = 0.0;
    for (int j = 0; j < NEX; j++) {
        double r = dot(m->x[j], th) - m->y[j];
        l += 0.5 * r * r;
    }
    *loss = l / NEX;
    return 0;
}

static int lsq_loss(const void *theta, size_t d, const sive_batch *b, double *losses,
                    void *user)
{
    const lsq *m = user;
    const double *th = theta;
    (void)d;
    if (m->fail_at_star == 1 && b->chain == -1) {
        sive_set_errmsg("no losses at theta* today");
        return 7;
    }
    for (size_t i = 0; i < b->group_size; i++) {
        double r = dot(m->x[b->index[i]], th) - m->y[b->index[i]];
        losses[i] = 0.5 * r * r;
    }
    if (m->fail_at_star == 2 && b->chain == -1)
        losses[b->group_size / 2] = NAN;
    return 0;
}

static void lsq_model(sive_model *sm, lsq *m)
{
    ck_assert_int_eq(sive_model_init(sm, sizeof *sm), SIVE_OK);
    sm->dtype = SIVE_F64;
    sm->dim = D;
    sm->n_examples = NEX;
    sm->grad = lsq_grad;
    sm->loss = lsq_loss;
    sm->user = m;
}

/* Eigen-decomposition of the symmetric A by cyclic Jacobi rotations:
 * A = Q diag(ev) Q' (Q's columns are the eigenvectors). */
static void jacobi(const double A[D][D], double ev[D], double Q[D][D])
{
    double a[D][D];
    memcpy(a, A, sizeof a);
    for (int i = 0; i < D; i++)
        for (int k = 0; k < D; k++)
            Q[i][k] = i == k;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0;
        for (int p = 0; p < D; p++)
            for (int q = p + 1; q < D; q++)
                off += a[p][q] * a[p][q];
        if (off < 1e-30)
            break;
        for (int p = 0; p < D; p++)
            for (int q = p + 1; q < D; q++) {
                if (a[p][q] == 0.0)
                    continue;
                double th = 0.5 * atan2(2.0 * a[p][q], a[q][q] - a[p][p]);
                double c = cos(th), s = sin(th);
                for (int k = 0; k < D; k++) { /* rows/columns p, q of J'aJ */
                    double akp = a[k][p], akq = a[k][q];
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for (int k = 0; k < D; k++) {
                    double apk = a[p][k], aqk = a[q][k];
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < D; k++) {
                    double qkp = Q[k][p], qkq = Q[k][q];
                    Q[k][p] = c * qkp - s * qkq;
                    Q[k][q] = s * qkp + c * qkq;
                }
            }
    }
    for (int i = 0; i < D; i++)
        ev[i] = a[i][i];
}

/* Expectation of the unclipped SIVE of a stationary tail of n steps (as
 * test_calibration.c's exact_target): t^2 n/(n-1) (Var L_n - Var mean_T). */
static inline double lsq_expect(const lsq *m, const double *star, double t, double a, double h,
                         double n)
{
    double ev[D], Q[D][D], grad[D], var = 0.0, var_mean = 0.0;
    jacobi(m->A, ev, Q);
    for (int i = 0; i < D; i++)
        grad[i] = dot(m->A[i], star) - m->b[i];
    for (int k = 0; k < D; k++) {
        double gk = 0.0, vm;
        for (int i = 0; i < D; i++)
            gk += Q[i][k] * grad[i];
        var += exact_ula_coord_var(a, a / t, h, ev[k], gk, 0.5 * ev[k], n, &vm);
        var_mean += vm;
    }
    return t * t * n / (n - 1.0) * (var - var_mean);
}

/* theta*: off the least-squares solution, so the gradient at theta* is
 * not zero (the linear term of the closed form is exercised). */
static const double STAR[D] = {0.35, -0.05, 0.1, -0.15, 0.02, -0.04};

/* The fixture's operating point: t 1000, base_lr 0.05, h 0.5, 2 threads,
 * a fixed seed; M steps, K chains, N groups of B_eval examples. */
static inline sive_probe *lsq_probe(int64_t steps, int64_t chains, int64_t groups,
                                    int64_t batch)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 1000.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, 0.05), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 0.5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, chains), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, groups), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, batch), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 20261126), SIVE_OK);
    return p;
}

/* A run of probe p on m that must succeed. */
static inline sive_result *lsq_run(sive_probe *p, lsq *m)
{
    sive_model sm;
    lsq_model(&sm, m);
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, &sm, STAR, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_msg(sive_result_status(r) == SIVE_OK, "%s", sive_result_errmsg(r));
    return r;
}

/* Chain c's trace `which` has the same length and bits in a and b. */
static inline int same_trace(const sive_result *a, const sive_result *b, sive_trace which,
                      int32_t c)
{
    size_t na, nb;
    const double *x = sive_result_trace(a, which, c, &na);
    const double *y = sive_result_trace(b, which, c, &nb);
    return x && y && na == nb && memcmp(x, y, na * sizeof *x) == 0;
}

/* part[k] (chain k of a 2-chain probe) ran with the int option opt = k:
 * saved and loaded, part 1 keeps the value and its traces; the parts do
 * not merge, and the message names the option.  Frees both parts. */
static inline void lsq_saved_not_merged(sive_result *part[2], sive_option opt,
                                        const char *name)
{
    char path[] = "/tmp/sive-lsq-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(sive_result_save(part[1], path, NULL), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_load(path, &back, NULL), SIVE_OK);
    int64_t v = -1;
    ck_assert_int_eq(sive_result_option_int(back, opt, &v), SIVE_OK);
    ck_assert_int_eq(v, 1);
    ck_assert(same_trace(part[1], back, SIVE_TRACE_DISP, 1));
    sive_result *merged = NULL;
    const sive_result *parts[2] = {part[0], back};
    ck_assert_int_eq(sive_result_merge(&merged, parts, 2), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_last_errmsg(), name), "%s", sive_last_errmsg());
    unlink(path);
    close(fd);
    sive_result_free(back);
    sive_result_free(part[0]);
    sive_result_free(part[1]);
}

#endif
