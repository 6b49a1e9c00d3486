/* Orbit moves (experimental options orbit_every, orbit_scale; the model's
 * sive_model.move; docs/theory.md "Orbit moves"):
 *  - exactness: on L = u^2 (v_1^2 + v_2^2) with theta* = 0, whose loss is
 *    invariant under (u, v) -> (c u, v / c) with Jacobian c^-1, lambda-hat
 *    with an orbit move after every step matches the continuous tethered
 *    law's t^2 Var[L] within 3 MCSE (16 chains; a Jacobian of the wrong
 *    sign fails it by far: docs/validation.md "Orbit moves");
 *  - the same bits on 1 and 2 threads; orbit_every 0 is the sampler
 *    without it, bit for bit; refusals (no metropolis, no move, ranges);
 *  - the deep linear network's move (sive_dln_model()): the loss is
 *    invariant to rounding, log_ratio is log |det| of the map (a numerical
 *    determinant on a tiny network whose widths make it non-zero), and a
 *    probe with the moves reports them in its health text. */
#define SIVE_EXPERIMENTAL
#include <sive/dln.h>
#include <sive/sive.h>

#include <check.h>
#include <stdatomic.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_run.h"
#include "funnel.h"

#define T 1e4
#define KV 2 /* v's dimension */

/* L = u^2 |v|^2, d = 1 + KV */
static int uv_grad(const void *theta, size_t d, const sive_batch *b, void *grad, double *loss,
                   void *user)
{
    const double *x = theta;
    double *g = grad, v2 = 0.0;
    (void)d;
    (void)b;
    (void)user;
    for (int i = 1; i <= KV; i++)
        v2 += x[i] * x[i];
    g[0] = 2.0 * x[0] * v2;
    for (int i = 1; i <= KV; i++)
        g[i] = 2.0 * x[0] * x[0] * x[i];
    *loss = x[0] * x[0] * v2;
    return 0;
}

static int uv_group(const void *theta, size_t d, const sive_batch *b, double *gl, void *user)
{
    double l, g[1 + KV];
    uv_grad(theta, d, b, g, &l, user);
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = l;
    return 0;
}

/* (u, v) -> (c u, v / c), log c = scale N(0, 1): |det| = c^(1 - KV); c and
 * 1/c equally likely, so log_ratio = (1 - KV) log c. */
static int uv_move(const sive_move_info *info, const void *theta, void *out, double *log_ratio,
                   void *user)
{
    const double *x = theta;
    double *y = out, z;
    (void)user;
    ck_assert_uint_eq(info->struct_size, sizeof *info);
    ck_assert(info->dim == 1 + KV && info->t == T && info->h > 0.0 && info->theta_star);
    sive_rng g;
    sive_rng_seed(&g, info->batch->seed, 7);
    sive_rng_normals(&g, &z, 1);
    const double lc = info->scale * z, c = exp(lc);
    y[0] = c * x[0];
    for (int i = 1; i <= KV; i++)
        y[i] = x[i] / c;
    *log_ratio = (1.0 - KV) * lc;
    return 0;
}

static sive_model uv_model(void)
{
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    m.dtype = SIVE_F64;
    m.dim = 1 + KV;
    m.grad = uv_grad;
    m.group_loss = uv_group;
    m.move = uv_move;
    return m;
}

static sive_probe *probe(int64_t steps, int64_t chains, int64_t threads, double h,
                         int64_t every)
{
    sive_probe *p = funnel_probe(T, h, steps, chains, threads, 18090);
    if (every >= 0)
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_ORBIT_EVERY, every), SIVE_OK);
    return p;
}

START_TEST(exact)
{
    sive_model m = uv_model();
    const double th[1 + KV] = {0}, want = funnel_continuous(T, 1.0, KV);
    sive_probe *p = probe(20000, 16, 2, 1.0, 1);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r),
                 z = (lam - want) / se;
    const char *ol = strstr(sive_result_health(r), "orbit moves");
    ck_assert_ptr_nonnull(ol);
    printf("u^2 |v|^2 (|v| in R^%d), orbit moves after every step: %.5f +- %.5f (continuous "
           "law %.5f): %+.2f %% (z %+.2f)\n  %s",
           KV, lam, se, want, 100.0 * (lam / want - 1.0), z, ol);
    ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
    ck_assert_msg(se < 0.05 * want, "MCSE %.4g", se);
    const double acc = atof(strstr(ol, "tail acceptance ") + strlen("tail acceptance "));
    ck_assert_msg(acc > 0.2 && acc < 0.7, "orbit acceptance %.3f", acc);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* lambda-hat of a short run (every < 0: the option unset). */
static double lam_of(sive_model *m, const double *th, int64_t every, int64_t threads)
{
    sive_probe *p = probe(2000, 4, threads, 1.0, every);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
    const double lam = sive_result_lambda(r);
    ck_assert(!strstr(sive_result_health(r), "orbit moves") == (every <= 0));
    sive_result_free(r);
    sive_probe_free(p);
    return lam;
}

START_TEST(bits_and_refusals)
{
    sive_model m = uv_model();
    const double th[1 + KV] = {0.1, 0.2, -0.1};
    double lam[5] = {lam_of(&m, th, -1, 1), lam_of(&m, th, 0, 1), lam_of(&m, th, 1, 1),
                     lam_of(&m, th, 1, 2), lam_of(&m, th, 3, 2)};
    ck_assert(memcmp(&lam[0], &lam[1], sizeof lam[0]) == 0);
    ck_assert(lam[0] != lam[2]);
    ck_assert(memcmp(&lam[2], &lam[3], sizeof lam[0]) == 0);
    ck_assert(lam[2] != lam[4]);
    sive_result *r = NULL;
    sive_probe *p = probe(2000, 2, 1, 1.0, 1);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "0"), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "metropolis 1"));
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    sive_model nm = m;
    nm.move = NULL;
    ck_assert_int_eq(sive_probe_run(p, &nm, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "supplies no move"));
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "orbit_every 0"));
    /* a model of the 0.2 layout (no move field): the message says so */
    sive_model old;
    ck_assert_int_eq(sive_model_init(&old, offsetof(sive_model, identity)), SIVE_OK);
    old.dtype = SIVE_F64;
    old.dim = 1 + KV;
    old.grad = uv_grad;
    old.group_loss = uv_group;
    ck_assert_int_eq(sive_probe_run(p, &old, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "predates sive_model.move"), "%s",
                  sive_probe_errmsg(p));
    const uint64_t ranges[2] = {0, 2};
    ck_assert_int_eq(sive_probe_set_params(p, ranges, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "parameter ranges"));
    ck_assert_ptr_null(r);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_ORBIT_EVERY, -1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ORBIT_SCALE, 0.0), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

/* log |det M| of the n x n matrix a (row-major, overwritten) by Gaussian
 * elimination with partial pivoting. */
static double log_abs_det(double *a, size_t n)
{
    double s = 0.0;
    for (size_t k = 0; k < n; k++) {
        size_t piv = k;
        for (size_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[piv * n + k]))
                piv = i;
        for (size_t j = 0; j < n; j++) {
            const double tmp = a[k * n + j];
            a[k * n + j] = a[piv * n + j];
            a[piv * n + j] = tmp;
        }
        s += log(fabs(a[k * n + k]));
        for (size_t i = k + 1; i < n; i++) {
            const double f = a[i * n + k] / a[k * n + k];
            for (size_t j = k; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
        }
    }
    return s;
}

START_TEST(dln_move)
{
    /* widths 2-3-4-3: hidden layers 1 (H0 - H2 = -2) and 2 (H1 - H3 = 0) */
    const size_t widths[] = {2, 3, 4, 3};
    sive_dln *dln = NULL;
    ck_assert_int_eq(sive_dln_new(&dln, widths, 3, 1, NULL, 5), SIVE_OK);
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(&m, dln, 1), SIVE_OK);
    ck_assert_ptr_nonnull(m.move);
    const size_t d = m.dim;
    double *th = malloc(d * sizeof *th), *out = malloc(d * sizeof *out),
           *g = malloc(d * sizeof *g), *jac = malloc(d * d * sizeof *jac),
           *e = calloc(d, sizeof *e);
    ck_assert(th && out && g && jac && e);
    sive_rng rg;
    sive_rng_seed(&rg, 11, 0);
    sive_rng_normals(&rg, th, d);
    sive_batch b = {.index = NULL, .n_groups = 1, .group_size = 1, .chain = 0, .worker = 0};
    const sive_move_info info = {.struct_size = sizeof info, .dim = d, .scale = 0.5, .t = T,
                                 .h = 1.0, .theta_star = e, .batch = &b};
    double l0, l1, lr;
    ck_assert_int_eq(m.grad(th, d, &b, g, &l0, m.user), 0);
    int nonzero = 0;
    for (uint64_t key = 1; key <= 40; key++) {
        b.seed = key;
        ck_assert_int_eq(m.move(&info, th, out, &lr, m.user), 0);
        ck_assert_int_eq(m.grad(out, d, &b, g, &l1, m.user), 0);
        ck_assert_msg(fabs(l1 - l0) <= 1e-12 * fabs(l0), "loss %.17g -> %.17g", l0, l1);
        /* the map is linear in theta for a fixed key: column i is T(e_i) */
        for (size_t i = 0; i < d; i++) {
            double lri;
            e[i] = 1.0;
            ck_assert_int_eq(m.move(&info, e, out, &lri, m.user), 0);
            e[i] = 0.0;
            ck_assert(lri == lr);
            for (size_t j = 0; j < d; j++)
                jac[j * d + i] = out[j];
        }
        const double ld = log_abs_det(jac, d);
        ck_assert_msg(fabs(ld - lr) < 1e-9 * (1.0 + fabs(lr)), "key %d: log|det| %.12g, move %.12g",
                      (int)key, ld, lr);
        nonzero += fabs(lr) > 1e-3;
    }
    ck_assert_int_gt(nonzero, 5);
    /* a probe with the moves: they run, and the health text names them */
    sive_probe *p = probe(2000, 2, 2, 0.5, 2);
    double *star = calloc(d, sizeof *star);
    ck_assert_int_eq(sive_dln_factorisation(dln, NULL, 3, star), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "orbit moves"));
    sive_result_free(r);
    sive_probe_free(p);
    free(star);
    free(th);
    free(out);
    free(g);
    free(jac);
    free(e);
    sive_model_destroy(&m);
    sive_dln_free(dln);
}
END_TEST

/* log of the tethered density at x, up to its constant */
static double log_q(sive_model *m, const double *x, const double *star, double t, double h)
{
    const sive_batch b = {.n_groups = 1, .group_size = 1};
    double l, *g = malloc(m->dim * sizeof *g), r2 = 0.0;
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(m->grad(x, m->dim, &b, g, &l, m->user), 0);
    for (size_t i = 0; i < m->dim; i++)
        r2 += (x[i] - star[i]) * (x[i] - star[i]);
    free(g);
    return -t * l - r2 / (2.0 * h * h);
}

/* The Gibbs layer move (sive_dln_set_move): one layer changes; its new
 * value does not depend on its old one (a draw from a conditional); and
 * log_ratio = log q(old) - log q(new) of the tethered density evaluated
 * directly, so the acceptance is 1 to rounding: together, an exact draw
 * from the conditional (the ratio fixes its density up to a constant).
 * Every layer of widths (at most 4 layers) is seen over 60 keys. */
static void gibbs_move_check(const size_t *widths, size_t layers)
{
    sive_dln *dln = NULL;
    ck_assert_int_eq(sive_dln_new(&dln, widths, layers, 1, NULL, 5), SIVE_OK);
    ck_assert_int_eq(sive_dln_set_move(dln, SIVE_DLN_MOVE_GIBBS), SIVE_OK);
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(&m, dln, 1), SIVE_OK);
    const size_t d = m.dim;
    size_t off[5] = {0}; /* layer s's weights at off[s - 1] .. off[s] */
    for (size_t s = 1; s <= layers; s++)
        off[s] = off[s - 1] + widths[s] * widths[s - 1];
    ck_assert_uint_eq(off[layers], d);
    double *th = malloc(d * sizeof *th), *out = malloc(d * sizeof *out),
           *out2 = malloc(d * sizeof *out2), *star = malloc(d * sizeof *star);
    ck_assert(th && out && out2 && star);
    ck_assert_int_eq(sive_dln_factorisation(dln, NULL, 3, star), SIVE_OK);
    sive_rng rg;
    sive_rng_seed(&rg, 12, 0);
    const double hs[2] = {0.3, 3.0};
    int seen[4] = {0};
    for (uint64_t key = 1; key <= 60; key++) {
        const double h = hs[key % 2], t = key % 3 ? 1e3 : 1e5;
        sive_rng_normals(&rg, th, d);
        for (size_t i = 0; i < d; i++)
            th[i] = star[i] + 0.5 * h * th[i];
        sive_batch b = {.n_groups = 1, .group_size = 1, .seed = key, .worker = 1};
        const sive_move_info info = {.struct_size = sizeof info, .dim = d, .scale = 0.5,
                                     .t = t, .h = h, .theta_star = star, .batch = &b};
        double lr, lr2;
        ck_assert_int_eq(m.move(&info, th, out, &lr, m.user), 0);
        size_t first = d, last = 0;
        for (size_t i = 0; i < d; i++)
            if (out[i] != th[i])
                first = i < first ? i : first, last = i;
        ck_assert(first < d);
        size_t s = 0; /* the layer that moved, from 0 */
        while (s + 1 < layers && first >= off[s + 1])
            s++;
        ck_assert_msg(last < off[s + 1], "more than layer %zu moved", s + 1);
        seen[s] = 1;
        const double la = log_q(&m, out, star, t, h) - log_q(&m, th, star, t, h) + lr;
        ck_assert_msg(fabs(la) < 1e-7 * (1.0 + fabs(lr)), "key %d: log alpha %.3g (ratio %.6g)",
                      (int)key, la, lr);
        for (size_t i = off[s]; i < off[s + 1]; i++)
            th[i] += 1.0; /* another old W_s, the same rest and key */
        ck_assert_int_eq(m.move(&info, th, out2, &lr2, m.user), 0);
        for (size_t i = 0; i < d; i++)
            ck_assert_msg(fabs(out2[i] - out[i]) < 1e-9 * (1.0 + fabs(out[i])),
                          "the draw depends on the old layer");
    }
    for (size_t s = 0; s < layers; s++)
        ck_assert_msg(seen[s], "layer %zu never drawn", s + 1);
    sive_model_destroy(&m);
    free(th);
    free(out);
    free(out2);
    free(star);
    sive_dln_free(dln);
}

/* The move on three shapes: the widest layer hidden, the input (the
 * layer-1 draw's H_0 x H_0 scratch) and the output; under ASan the
 * scratch's size is checked on each.  Bad arguments; data mode refuses
 * the move. */
START_TEST(dln_gibbs_move)
{
    const size_t hidden[] = {2, 3, 4, 3}, input[] = {6, 2, 3}, output[] = {2, 3, 5};
    gibbs_move_check(hidden, 3);
    gibbs_move_check(input, 2);
    gibbs_move_check(output, 2);
    sive_dln *dln = NULL;
    ck_assert_int_eq(sive_dln_new(&dln, hidden, 3, 1, NULL, 5), SIVE_OK);
    ck_assert_int_eq(sive_dln_set_move(dln, (sive_dln_move)7), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_last_errmsg(), "unknown move 7") &&
                      strstr(sive_last_errmsg(), "SIVE_DLN_MOVE_GIBBS"), "%s", sive_last_errmsg());
    ck_assert_int_eq(sive_dln_set_move(NULL, SIVE_DLN_MOVE_GIBBS), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_last_errmsg(), "m is NULL"), "%s", sive_last_errmsg());
    ck_assert_int_eq(sive_dln_set_move(dln, SIVE_DLN_MOVE_GIBBS), SIVE_OK);
    ck_assert_int_eq(sive_dln_set_data(dln, 10, 0.0, 1), SIVE_OK);
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(&m, dln, 1), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "population mode"));
    sive_dln_free(dln);
}
END_TEST

/* The law: the 1-1-1 network at rank 0 is K = u^2 v^2 / 2, theta* = 0,
 * whose t^2 Var is the funnel's at t/2 (funnel.h).  Metropolis steps with
 * a Gibbs layer move after every step: lambda-hat within 4 MCSE, the
 * moves' tail acceptance 1 to rounding, the same bits on 1 and 2 threads. */
static double gibbs_run(sive_model *m, int64_t threads, double *se, double *acc)
{
    const double th[2] = {0.0, 0.0};
    sive_probe *p = probe(20000, 16, threads, 1.0, 1);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double lam = sive_result_lambda(r);
    *se = sive_result_mcse(r);
    const char *ol = strstr(sive_result_health(r), "orbit moves");
    ck_assert_ptr_nonnull(ol);
    ck_assert_ptr_nonnull(ol = strstr(ol, "tail acceptance "));
    *acc = atof(ol + strlen("tail acceptance "));
    sive_result_free(r);
    sive_probe_free(p);
    return lam;
}

START_TEST(dln_gibbs_law)
{
    const size_t widths[] = {1, 1, 1};
    sive_dln *dln = NULL;
    ck_assert_int_eq(sive_dln_new(&dln, widths, 2, 0, NULL, 5), SIVE_OK);
    ck_assert_int_eq(sive_dln_set_move(dln, SIVE_DLN_MOVE_GIBBS), SIVE_OK);
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(&m, dln, 1), SIVE_OK);
    double se, acc, se2, acc2;
    const double lam = gibbs_run(&m, 1, &se, &acc), lam2 = gibbs_run(&m, 2, &se2, &acc2);
    const double want = funnel_continuous(T / 2.0, 1.0, 1), z = (lam - want) / se;
    printf("1-1-1 DLN r0 (u^2 v^2 / 2), Gibbs layer moves after every step: %.5f +- %.5f "
           "(continuous law %.5f): %+.2f %% (z %+.2f), tail acceptance %.4f\n",
           lam, se, want, 100.0 * (lam / want - 1.0), z, acc);
    ck_assert_msg(fabs(z) < 4.0, "z %.2f", z);
    ck_assert_msg(se < 0.05 * want, "MCSE %.4g", se);
    ck_assert_msg(acc > 0.999, "Gibbs acceptance %.4f", acc);
    ck_assert(memcmp(&lam, &lam2, sizeof lam) == 0);
    sive_model_destroy(&m);
    sive_dln_free(dln);
}
END_TEST

/* orbit_every longer than the tail: no move is tried there, and the
 * health line says so instead of a tail acceptance of 0 (which reads as
 * every move rejected). */
START_TEST(no_tail_moves_named)
{
    sive_model m = uv_model();
    const double th[1 + KV] = {0.1, 0.2, -0.1};
    sive_probe *p = probe(2000, 2, 1, 1.0, 1500); /* one move, at step 1499 of the burn-in */
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.8), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
    const char *ol = strstr(sive_result_health(r), "orbit moves");
    ck_assert_ptr_nonnull(ol);
    ck_assert_msg(!strstr(ol, "tail acceptance 0.000"), "%s", ol);
    ck_assert_msg(strstr(ol, "no move in the tail"), "%s", ol);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A move into a region where the gradient (variant 0) or the loss (variant
 * 1) is not finite: the orthant u, v_1, v_2 > 0 of u^2 |v|^2, which the
 * Langevin proposals never enter (their acceptance reads the gradient
 * there); the move flips u's sign half the time (an involution with
 * Jacobian 1 that keeps the loss and the tether), so it proposes into the
 * orthant often.  Such a proposal must be rejected and counted, and the
 * chain go on: no chain diverges, and the health line counts them. */
static int bad_orthant(const double *x) { return x[0] > 0.0 && x[1] > 0.0 && x[2] > 0.0; }

static int orthant_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                        double *loss, void *user)
{
    uv_grad(theta, d, b, grad, loss, NULL);
    if (bad_orthant(theta)) {
        if (*(const int *)user == 0)
            ((double *)grad)[1] = NAN;
        else
            *loss = INFINITY;
    }
    return 0;
}

static int orthant_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                         void *user)
{
    double l, g[1 + KV];
    orthant_grad(theta, d, b, g, &l, user);
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = l;
    return 0;
}

static int flip_move(const sive_move_info *info, const void *theta, void *out,
                     double *log_ratio, void *user)
{
    uv_move(info, theta, out, log_ratio, user);
    if (info->batch->seed >> 63)
        ((double *)out)[0] = -((double *)out)[0];
    return 0;
}

START_TEST(nonfinite_proposal_rejected)
{
    int variant = _i;
    sive_model m = uv_model();
    m.grad = orthant_grad;
    m.group_loss = orthant_group;
    m.move = flip_move;
    m.user = &variant;
    const double th[1 + KV] = {-0.1, 0.2, 0.1};
    sive_probe *p = probe(2000, 2, 1, 1.0, 1);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
    ck_assert_msg(sive_result_status(r) == SIVE_OK, "variant %d: %s", variant,
                  sive_result_errmsg(r));
    const char *ol = strstr(sive_result_health(r), "orbit moves");
    ck_assert_ptr_nonnull(ol);
    const char *nf = strstr(ol, " proposals with a non-finite loss or gradient rejected");
    ck_assert_msg(nf, "%s", ol);
    const char *n = nf; /* "; N proposals ...": N > 0 */
    while (n > ol && n[-1] >= '0' && n[-1] <= '9')
        n--;
    ck_assert_msg(n < nf && atoll(n) > 0, "%s", ol);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A move callback whose log_ratio is not finite (NaN on a quarter of the
 * keys, +inf on another quarter, by the key's top bits) on a finite
 * theta': each such proposal is rejected without a gradient call and the
 * health line counts them, exactly the calls that returned one; the chain
 * goes on.  A run whose ratios are all finite has no such text. */
static atomic_int bad_ratios;

static int ratio_move(const sive_move_info *info, const void *theta, void *out,
                      double *log_ratio, void *user)
{
    uv_move(info, theta, out, log_ratio, user);
    const unsigned q = (unsigned)(info->batch->seed >> 62);
    if (q < 2) {
        *log_ratio = q ? INFINITY : NAN;
        atomic_fetch_add(&bad_ratios, 1);
    }
    return 0;
}

/* The number N before `what` in the line ol ("; N proposals ..."), -1 when
 * the text is not there. */
static long long count_before(const char *ol, const char *what)
{
    const char *at = strstr(ol, what), *n = at;
    if (!at)
        return -1;
    while (n > ol && n[-1] >= '0' && n[-1] <= '9')
        n--;
    return n < at ? atoll(n) : -1;
}

START_TEST(nonfinite_ratio_counted)
{
    static const char what[] =
        " proposals with a non-finite log_ratio (the move callback's) rejected";
    sive_model m = uv_model();
    const double th[1 + KV] = {0.1, 0.2, -0.1};
    for (int broken = 0; broken < 2; broken++) {
        m.move = broken ? ratio_move : uv_move;
        atomic_store(&bad_ratios, 0);
        sive_probe *p = probe(2000, 2, 1, 1.0, 1);
        /* the callback's count is the run's alone: no radius_check pilots */
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_RADIUS_CHECK, 0), SIVE_OK);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
        ck_assert_msg(sive_result_status(r) == SIVE_OK, "%s", sive_result_errmsg(r));
        const char *ol = strstr(sive_result_health(r), "orbit moves");
        ck_assert_ptr_nonnull(ol);
        const long long want = broken ? atomic_load(&bad_ratios) : -1;
        ck_assert_msg(!broken || want > 500, "%lld", want); /* ~half of 4000 moves */
        ck_assert_msg(count_before(ol, what) == want, "want %lld: %s", want, ol);
        /* no gradient call for them: moves = calls - rejected ratios */
        const long long moves = count_before(ol, " moves = ");
        ck_assert_msg(moves == 2 * 2000 - (broken ? want : 0), "%lld: %s", moves, ol);
        sive_result_free(r);
        sive_probe_free(p);
    }
}
END_TEST

/* sive_probe_sweep() with parallel > 1 runs slot s > 0 on a wrapped model
 * (worker numbers offset): its move callback, too, must get the model's
 * own user pointer and the offset worker of the gradient calls around it.
 * The move here refuses any other user pointer (the run then stops with a
 * callback error), and each run's first step sleeps 20 ms so that both
 * slots run a value. */
static int magic_user;
static _Thread_local int32_t grad_worker = -1;
static atomic_int move_worker_mismatch;

static int slow_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                     double *loss, void *user)
{
    if (b->step == 0 && b->chain == 0)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    grad_worker = b->worker;
    return uv_grad(theta, d, b, grad, loss, user);
}

static int checked_move(const sive_move_info *info, const void *theta, void *out,
                        double *log_ratio, void *user)
{
    if (user != &magic_user)
        return 7;
    if (info->batch->worker != grad_worker)
        atomic_fetch_add(&move_worker_mismatch, 1);
    return uv_move(info, theta, out, log_ratio, NULL);
}

START_TEST(sweep_parallel_move)
{
    sive_model m = uv_model();
    m.grad = slow_grad;
    m.move = checked_move;
    m.user = &magic_user;
    const double th[1 + KV] = {0.1, 0.2, -0.1}, scale[] = {0.1, 0.3};
    sive_probe *p = probe(500, 2, 1, 1.0, 1);
    sive_result *one[2], *two[2];
    atomic_store(&move_worker_mismatch, 0);
    ck_assert_int_eq(sive_probe_sweep(p, &m, th, SIVE_OPT_ORBIT_SCALE, scale, 2, 1, one),
                     SIVE_OK);
    ck_assert_int_eq(sive_probe_sweep(p, &m, th, SIVE_OPT_ORBIT_SCALE, scale, 2, 2, two),
                     SIVE_OK);
    ck_assert_int_eq(atomic_load(&move_worker_mismatch), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(sive_result_status(two[i]) == SIVE_OK, "value %d: %s", i,
                      sive_result_errmsg(two[i]));
        const double a = sive_result_lambda(one[i]), b = sive_result_lambda(two[i]);
        ck_assert(memcmp(&a, &b, sizeof a) == 0);
        sive_result_free(one[i]);
        sive_result_free(two[i]);
    }
    sive_probe_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("orbit");
    TCase *tc = tcase_create("orbit");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, exact);
    tcase_add_test(tc, bits_and_refusals);
    tcase_add_test(tc, dln_move);
    tcase_add_test(tc, dln_gibbs_move);
    tcase_add_test(tc, dln_gibbs_law);
    tcase_add_test(tc, sweep_parallel_move);
    tcase_add_test(tc, no_tail_moves_named);
    tcase_add_loop_test(tc, nonfinite_proposal_rejected, 0, 2);
    tcase_add_test(tc, nonfinite_ratio_counted);
    suite_add_tcase(s, tc);
    return check_run(s);
}
