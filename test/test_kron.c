/* Layer-block Newton moves (experimental kron_every, kron_step; the
 * model's sive_model.blocks and curvature; lib/core/sampler_kron.c,
 * docs/theory.md "Layer-block Newton moves"):
 *  - the proposal density ratio log q(theta | theta') - log q(theta' |
 *    theta) equals the one evaluated directly from the dense metric
 *    M = t (G (x) A) + I/h^2 (Gaussian elimination), also with factors that
 *    depend on the block itself (the reverse under the metric at theta');
 *  - exact factors, s = 1: the deep linear network's move is an exact
 *    draw, the tail acceptance 1 to rounding (population and data mode),
 *    and on the 1-1-1 network (K = u^2 v^2 / 2) lambda-hat reads the
 *    continuous law within 4 MCSE; the same bits on 1 and 2 threads;
 *  - wrong factors (scaled, and made to depend on the block): acceptance
 *    below 1, the law still within 4 MCSE;
 *  - kron_every unset and 0 give the same bits; refusals; a failing
 *    curvature callback stops the run with its code and a message. */
#define SIVE_EXPERIMENTAL
#include "kron.h"
#include <sive/dln.h>
#include <sive/sive.h>

#include "check_run.h"
#include "funnel.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T 1e4

/* ---- a model wrapping a DLN model with wrong factors ----------------- */

typedef struct wrong {
    sive_model inner;
    double fg, fa; /* scales of the roots */
    int self;      /* 1: F_G also scaled by (1 + |W_block|^2), block-dependent */
    int fail_at;   /* > 0: the curvature callback returns 7 from that step on */
} wrong;

static int w_grad(const void *th, size_t d, const sive_batch *b, void *g, double *l, void *u)
{
    const wrong *w = u;
    return w->inner.grad(th, d, b, g, l, w->inner.user);
}

static int w_group(const void *th, size_t d, const sive_batch *b, double *gl, void *u)
{
    const wrong *w = u;
    return w->inner.group_loss(th, d, b, gl, w->inner.user);
}

static int w_curv(const sive_curvature_info *info, const void *theta, double *gr, double *ar,
                  void *u)
{
    const wrong *w = u;
    if (w->fail_at > 0 && info->batch->step >= w->fail_at)
        return 7;
    int rc = w->inner.curvature(info, theta, gr, ar, w->inner.user);
    const sive_block *b = &w->inner.blocks[info->block];
    const double *x = theta;
    double n2 = 0.0;
    for (size_t i = 0; i < b->rows * b->cols; i++)
        n2 += x[b->offset + i] * x[b->offset + i];
    const double cg = w->fg * (w->self ? 1.0 + n2 : 1.0);
    for (size_t i = 0; i < b->g_rows * b->rows; i++)
        gr[i] *= cg;
    for (size_t i = 0; i < b->a_rows * b->cols; i++)
        ar[i] *= w->fa;
    return rc;
}

static sive_model wrong_model(wrong *w)
{
    sive_model m = w->inner;
    m.user = w;
    m.grad = w_grad;
    m.group_loss = w_group;
    m.loss = NULL;
    m.curvature = w_curv;
    m.destroy = NULL;
    return m;
}

static sive_dln *dln_of(const size_t *widths, size_t layers, size_t rank)
{
    sive_dln *d = NULL;
    ck_assert_int_eq(sive_dln_new(&d, widths, layers, rank, NULL, 5), SIVE_OK);
    return d;
}

/* *m <- the network's probe model (blocks and curvature included). */
static void dln_model(sive_model *m, const sive_dln *dln)
{
    ck_assert_int_eq(sive_model_init(m, sizeof *m), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(m, dln, 1), SIVE_OK);
}

/* ---- the density ratio against a dense evaluation ------------------- */

/* Solve a x = b (n x n, both overwritten; x into b) and return log det a,
 * Gaussian elimination with partial pivoting (a positive definite). */
static double solve(double *a, double *b, size_t n)
{
    double ld = 0.0;
    for (size_t k = 0; k < n; k++) {
        size_t p = k;
        for (size_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
                p = i;
        for (size_t j = 0; j < n; j++) {
            const double t = a[k * n + j];
            a[k * n + j] = a[p * n + j], a[p * n + j] = t;
        }
        const double t = b[k];
        b[k] = b[p], b[p] = t;
        ld += log(fabs(a[k * n + k]));
        for (size_t i = k + 1; i < n; i++) {
            const double f = a[i * n + k] / a[k * n + k];
            for (size_t j = k; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
            b[i] -= f * b[k];
        }
    }
    for (size_t k = n; k-- > 0;) {
        for (size_t j = k + 1; j < n; j++)
            b[k] -= a[k * n + j] * b[j];
        b[k] /= a[k * n + k];
    }
    return ld;
}

/* log q(to | from) up to the shared constant, from the dense metric at
 * from: M = t G (x) A + I/h^2 (G, A from the model's roots), mean from -
 * s M^-1 grad U(from), covariance s (2 - s) M^-1. */
static double dense_logq(const sive_model *m, size_t k, const sivei_kron_law *law,
                         const double *from, const double *to)
{
    const sive_block *b = &m->blocks[k];
    const size_t r = b->rows, c = b->cols, n = r * c, o = b->offset;
    double *fg = calloc(b->g_rows * r, sizeof *fg), *fa = calloc(b->a_rows * c, sizeof *fa);
    double *mm = calloc(n * n, sizeof *mm), *g = calloc(m->dim, sizeof *g), *v = calloc(n, 8);
    double *mm2 = calloc(n * n, sizeof *mm2), *e = calloc(n, sizeof *e), l = NAN;
    const sive_batch bt = {.n_groups = 1, .chain = 0, .worker = 0, .step = 0};
    const sive_curvature_info info = {.struct_size = sizeof info, .dim = m->dim, .block = k,
                                      .batch = &bt};
    ck_assert_int_eq(m->curvature(&info, from, fg, fa, m->user), 0);
    ck_assert_int_eq(m->grad(from, m->dim, &bt, g, &l, m->user), 0);
    for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++)
            for (size_t i2 = 0; i2 < r; i2++)
                for (size_t j2 = 0; j2 < c; j2++) {
                    double gg = 0.0, aa = 0.0;
                    for (size_t q = 0; q < b->g_rows; q++)
                        gg += fg[q * r + i] * fg[q * r + i2];
                    for (size_t q = 0; q < b->a_rows; q++)
                        aa += fa[q * c + j] * fa[q * c + j2];
                    mm[(i * c + j) * n + i2 * c + j2] =
                        law->t * gg * aa + (i == i2 && j == j2) / (law->h * law->h);
                }
    memcpy(mm2, mm, n * n * sizeof *mm);
    for (size_t q = 0; q < n; q++)
        v[q] = law->t * g[o + q] + (from[o + q] - law->star[o + q]) / (law->h * law->h);
    const double ld = solve(mm, v, n); /* v = M^-1 grad U */
    for (size_t q = 0; q < n; q++)
        e[q] = to[o + q] - (from[o + q] - law->s * v[q]);
    double quad = 0.0;
    for (size_t p = 0; p < n; p++)
        for (size_t q = 0; q < n; q++)
            quad += e[p] * mm2[p * n + q] * e[q];
    free(fg), free(fa), free(mm), free(g), free(v), free(mm2), free(e);
    return 0.5 * ld - 0.5 * quad / (law->s * (2.0 - law->s));
}

static void ratio_case(const sive_model *m, double s, uint64_t seed)
{
    const size_t d = m->dim;
    double *th = malloc(d * 8), *star = calloc(d, 8), *g = malloc(d * 8), *pr = malloc(d * 8),
           *gp = malloc(d * 8), l;
    sive_rng rng;
    sive_rng_seed(&rng, seed, 1);
    sive_rng_normals(&rng, th, d);
    for (size_t i = 0; i < d; i++)
        th[i] *= 0.5;
    const sive_batch b = {.n_groups = 1, .seed = seed, .chain = 0, .worker = 0, .step = 0};
    const sivei_kron_law law = {.t = 50.0, .h = 0.7, .s = s, .star = star};
    sivei_kron *k = sivei_kron_new(m);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(m->grad(th, d, &b, g, &l, m->user), 0);
    double lf = NAN, lr = NAN;
    ck_assert_int_eq(sivei_kron_propose(k, m, &law, &b, th, g, pr, &lf), 0);
    const sive_block *bl = &m->blocks[sivei_kron_block(k)];
    for (size_t i = 0; i < d; i++) /* only the block moves */
        ck_assert((i >= bl->offset && i < bl->offset + bl->rows * bl->cols) || pr[i] == th[i]);
    ck_assert_int_eq(m->grad(pr, d, &b, gp, &l, m->user), 0);
    ck_assert_int_eq(sivei_kron_reverse(k, m, &law, &b, th, pr, gp, &lr), 0);
    const size_t kb = sivei_kron_block(k);
    const double got = lr - lf,
                 want = dense_logq(m, kb, &law, pr, th) - dense_logq(m, kb, &law, th, pr);
    printf("block %zu (%zu x %zu), s %.2f: log ratio %.12f, dense %.12f\n", kb, bl->rows,
           bl->cols, s, got, want);
    ck_assert_msg(fabs(got - want) < 1e-9 * (1.0 + fabs(want)), "%.15g vs %.15g", got, want);
    sivei_kron_free(k);
    free(th), free(star), free(g), free(pr), free(gp);
}

START_TEST(ratio_dense)
{
    const size_t widths[] = {3, 4, 2, 3};
    sive_dln *dln = dln_of(widths, 3, 1);
    wrong w = {.fg = 1.7, .fa = 0.6, .self = 1};
    dln_model(&w.inner, dln);
    ck_assert_uint_eq(w.inner.n_blocks, 3);
    sive_model bad = wrong_model(&w);
    for (uint64_t seed = 1; seed <= 6; seed++) {
        ratio_case(&w.inner, seed % 2 ? 1.0 : 0.45, seed);
        ratio_case(&bad, seed % 2 ? 1.0 : 0.45, seed);
    }
    sive_model_destroy(&w.inner);
    sive_dln_free(dln);
}
END_TEST

/* ---- runs ------------------------------------------------------------ */

static sive_result *run(sive_model *m, const double *th, int64_t steps, int64_t chains,
                        int64_t threads, int64_t every, double s)
{
    sive_probe *p = funnel_probe(T, 1.0, steps, chains, threads, 18100);
    if (every >= 0)
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_KRON_EVERY, every), SIVE_OK);
    if (s > 0.0)
        ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_KRON_STEP, s), SIVE_OK);
    if (m->n_examples) { /* metropolis: the exact loss on the whole data set */
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, (int64_t)m->n_examples),
                         SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    }
    sive_result *r = NULL;
    const int rc = sive_probe_run(p, m, th, &r);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_msg(sive_result_status(r) == SIVE_OK, "%s", sive_result_errmsg(r));
    sive_probe_free(p);
    return r;
}

static double accept_of(const sive_result *r)
{
    const char *ol = strstr(sive_result_health(r), "layer-block Newton moves");
    ck_assert_ptr_nonnull(ol);
    ck_assert_ptr_nonnull(ol = strstr(ol, "tail acceptance "));
    return atof(ol + strlen("tail acceptance "));
}

/* 1-1-1 network at rank 0: K = u^2 v^2 / 2, the funnel's law at t/2. */
static void law_case(sive_model *m, double s, int exact)
{
    const double th[2] = {0.0, 0.0}, want = funnel_continuous(T / 2.0, 1.0, 1);
    sive_result *r = run(m, th, 20000, 16, 2, 1, s);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r), z = (lam - want) / se,
                 acc = accept_of(r);
    printf("1-1-1 DLN r0, layer-block Newton moves (%s factors, s %.2f): %.5f +- %.5f "
           "(continuous law %.5f): %+.2f %% (z %+.2f), tail acceptance %.6f\n",
           exact ? "exact" : "wrong", s, lam, se, want, 100.0 * (lam / want - 1.0), z, acc);
    ck_assert_msg(fabs(z) < 4.0, "z %.2f", z);
    ck_assert_msg(se < 0.05 * want, "MCSE %.4g", se);
    if (exact)
        ck_assert_msg(acc >= 1.0 - 1e-6, "acceptance %.6f", acc);
    else
        ck_assert_msg(acc < 0.99, "acceptance %.6f with wrong factors", acc);
    sive_result_free(r);
}

START_TEST(law_exact)
{
    const size_t widths[] = {1, 1, 1};
    sive_dln *dln = dln_of(widths, 2, 0);
    sive_model m;
    dln_model(&m, dln);
    law_case(&m, 1.0, 1);
    sive_model_destroy(&m);
    sive_dln_free(dln);
}
END_TEST

START_TEST(law_wrong)
{
    const size_t widths[] = {1, 1, 1};
    sive_dln *dln = dln_of(widths, 2, 0);
    wrong w = {.fg = 3.0, .fa = 0.8, .self = 1};
    dln_model(&w.inner, dln);
    sive_model m = wrong_model(&w);
    law_case(&m, 0.8, 0);
    sive_model_destroy(&w.inner);
    sive_dln_free(dln);
}
END_TEST

/* Exact factors on a deeper network, population and data mode: every
 * move accepted (to rounding); 1 and 2 threads the same bits; unset (with
 * metropolis set) and 1 the same bits, 0 other bits and no move. */
START_TEST(accept_and_bits)
{
    const size_t widths[] = {3, 4, 2, 3};
    sive_dln *dln = dln_of(widths, 3, 1);
    double th[4 * 3 + 2 * 4 + 3 * 2];
    for (int data = 0; data < 2; data++) {
        if (data)
            ck_assert_int_eq(sive_dln_set_data(dln, 64, 0.5, 9), SIVE_OK);
        ck_assert_int_eq(sive_dln_factorisation(dln, NULL, 3, th), SIVE_OK);
        sive_model m;
        dln_model(&m, dln);
        sive_result *a = run(&m, th, 1000, 4, 1, 2, 0.0), *b = run(&m, th, 1000, 4, 2, 2, 0.0);
        const double la = sive_result_lambda(a), lb = sive_result_lambda(b);
        printf("%s mode: tail acceptance %.6f, lambda-hat %.6g\n", data ? "data" : "population",
               accept_of(a), la);
        ck_assert_msg(accept_of(a) >= 1.0 - 1e-6, "acceptance %.6f", accept_of(a));
        ck_assert(memcmp(&la, &lb, sizeof la) == 0);
        sive_result *u = run(&m, th, 1000, 4, 1, -1, 0.0), *z = run(&m, th, 1000, 4, 1, 0, 0.0);
        sive_result *one = run(&m, th, 1000, 4, 1, 1, 0.0);
        const double lu = sive_result_lambda(u), lz = sive_result_lambda(z);
        const double l1 = sive_result_lambda(one);
        ck_assert(memcmp(&lu, &l1, sizeof lu) == 0);
        ck_assert(lz != lu && lz != la);
        ck_assert_ptr_nonnull(strstr(sive_result_health(u), "layer-block"));
        ck_assert_ptr_null(strstr(sive_result_health(z), "layer-block"));
        sive_result_free(a), sive_result_free(b), sive_result_free(u), sive_result_free(z);
        sive_result_free(one);
        sive_model_destroy(&m);
    }
    sive_dln_free(dln);
}
END_TEST

static void refused(sive_probe *p, sive_model *m, const double *th, const char *why)
{
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), why), "'%s' lacks '%s'", sive_probe_errmsg(p),
                  why);
    ck_assert_ptr_null(r);
}

START_TEST(refusals)
{
    const size_t widths[] = {2, 2, 2};
    sive_dln *dln = dln_of(widths, 2, 1);
    sive_model m;
    dln_model(&m, dln);
    double th[8] = {0};
    sive_probe *p = funnel_probe(T, 1.0, 200, 2, 1, 1);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_KRON_EVERY, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "0"), SIVE_OK);
    refused(p, &m, th, "metropolis 1");
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_ORBIT_EVERY, 1), SIVE_OK);
    refused(p, &m, th, "orbit_every");
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_ORBIT_EVERY, 0), SIVE_OK);
    sive_model n = m;
    n.curvature = NULL;
    refused(p, &n, th, "no parameter blocks");
    n = m;
    n.struct_size = (uint32_t)offsetof(sive_model, identity); /* a 0.2 program */
    refused(p, &n, th, "no parameter blocks");
    sive_block bl[2] = {m.blocks[0], m.blocks[1]};
    n = m;
    n.blocks = bl;
    bl[1].offset = 2; /* overlaps block 0 */
    refused(p, &n, th, "overlaps");
    bl[1].offset = 5; /* 4 entries from 5: past dim 8 */
    refused(p, &n, th, "outside theta");
    n = m;
    n.dtype = SIVE_F32;
    refused(p, &n, th, "double model");
    const uint64_t ranges[2] = {0, 4};
    ck_assert_int_eq(sive_probe_set_params(p, ranges, 1), SIVE_OK);
    refused(p, &m, th, "parameter ranges");
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_KRON_EVERY, -2), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_KRON_STEP, 0.0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_KRON_STEP, 1.5), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
    sive_model_destroy(&m);
    sive_dln_free(dln);
}
END_TEST

START_TEST(callback_fails)
{
    const size_t widths[] = {2, 2, 2};
    sive_dln *dln = dln_of(widths, 2, 1);
    wrong w = {.fg = 1.0, .fa = 1.0, .fail_at = 50};
    dln_model(&w.inner, dln);
    sive_model m = wrong_model(&w);
    const double th[8] = {0};
    sive_probe *p = funnel_probe(T, 1.0, 200, 2, 1, 1);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_KRON_EVERY, 1), SIVE_OK);
    sive_result *r = NULL;
    sive_probe_run(p, &m, th, &r);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(sive_result_status(r), SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_result_callback_code(r), 7);
    ck_assert_msg(strstr(sive_result_errmsg(r), "curvature callback"), "%s",
                  sive_result_errmsg(r));
    sive_result_free(r);
    sive_probe_free(p);
    sive_model_destroy(&w.inner);
    sive_dln_free(dln);
}
END_TEST

/* ---- the defaults ------------------------------------------------------ */

static int64_t opt_int(const sive_result *r, sive_option o)
{
    int64_t v = -7;
    ck_assert_int_eq(sive_result_option_int(r, o, &v), SIVE_OK);
    return v;
}

/* Nothing set but the run's size, or the pairs in set (NULL-terminated),
 * on m at th; ranges: move the first block only. */
static sive_result *run_defaults(sive_model *m, const double *th, const char *const *set,
                                 int ranges)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 1000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 1903), SIVE_OK);
    for (; set && set[0]; set += 2)
        ck_assert_msg(sive_probe_set_text(p, set[0], set[1]) == SIVE_OK, "%s",
                      sive_probe_errmsg(p));
    const uint64_t first[2] = {m->blocks[0].offset,
                               m->blocks[0].offset + m->blocks[0].rows * m->blocks[0].cols};
    if (ranges)
        ck_assert_int_eq(sive_probe_set_params(p, first, 1), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, m, th, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_msg(sive_result_status(r) == SIVE_OK, "%s", sive_result_errmsg(r));
    sive_probe_free(p);
    return r;
}

static void same_bits(const sive_result *a, const sive_result *b, const char *what)
{
    const double la = sive_result_lambda(a), lb = sive_result_lambda(b);
    ck_assert_msg(memcmp(&la, &lb, sizeof la) == 0, "%s: %.17g against %.17g", what, la, lb);
}

/* kron_every and radius_lookahead "auto": on the DLN (exact loss, blocks
 * and curvature) with nothing set they resolve to 1 and 8 (the result and
 * the health line say so), the same bits as setting what they resolved
 * to; with metropolis 1 set (with c_h = auto, or an absolute h) the move
 * stays on (the same bits as kron_every 1 set; the health line says so)
 * and the look-ahead is 0, and setting kron_every 0 there changes the
 * bits (the behaviour before); with metropolis 0 set the move is off;
 * with parameter ranges the move is off and the look-ahead stays. */
START_TEST(defaults_mix)
{
    const size_t widths[] = {2, 3, 2};
    sive_dln *dln = dln_of(widths, 2, 1);
    double th[3 * 2 + 2 * 3];
    ck_assert_int_eq(sive_dln_factorisation(dln, NULL, 3, th), SIVE_OK);
    sive_model m;
    dln_model(&m, dln);
    static const char *const resolved[] = {"metropolis", "1", "c_h", "auto", "kron_every",
                                           "1", "radius_lookahead", "8", NULL};
    static const char *const set_m[] = {"metropolis", "1", "c_h", "auto", NULL};
    static const char *const set_mk[] = {"metropolis", "1", "c_h", "auto", "kron_every", "1",
                                         NULL};
    static const char *const set_h[] = {"metropolis", "1", "h", "0.05", NULL};
    static const char *const set_hu[] = {"metropolis", "0", "h", "0.05", NULL};
    static const char *const before[] = {"metropolis", "1", "c_h", "auto", "kron_every",
                                         "0", "radius_lookahead", "0", NULL};
    sive_result *d = run_defaults(&m, th, NULL, 0), *e = run_defaults(&m, th, resolved, 0);
    ck_assert_int_eq(opt_int(d, SIVE_OPT_METROPOLIS), 1);
    ck_assert_int_eq(opt_int(d, SIVE_OPT_KRON_EVERY), 1);
    ck_assert_int_eq(opt_int(d, SIVE_OPT_RADIUS_LOOKAHEAD), 8);
    ck_assert_msg(strstr(sive_result_health(d), "kron_every 1 (the model's blocks"), "%s",
                  sive_result_health(d));
    ck_assert_msg(accept_of(d) >= 1.0 - 1e-6, "acceptance %.6f", accept_of(d));
    same_bits(d, e, "defaults against kron_every 1, radius_lookahead 8 set");
    sive_result *o = run_defaults(&m, th, set_m, 0), *z = run_defaults(&m, th, before, 0);
    sive_result *ok = run_defaults(&m, th, set_mk, 0);
    ck_assert_int_eq(opt_int(o, SIVE_OPT_KRON_EVERY), 1);
    ck_assert_int_eq(opt_int(o, SIVE_OPT_RADIUS_LOOKAHEAD), 0);
    ck_assert_msg(strstr(sive_result_health(o), "defaults: kron_every 1 (metropolis 1"), "%s",
                  sive_result_health(o));
    same_bits(o, ok, "metropolis set against metropolis and kron_every 1 set");
    const double lo = sive_result_lambda(o), lz = sive_result_lambda(z);
    ck_assert_msg(memcmp(&lo, &lz, sizeof lo) != 0, "kron_every 0 set gave the move's bits");
    ck_assert_int_eq(opt_int(z, SIVE_OPT_KRON_EVERY), 0);
    ck_assert_ptr_null(strstr(sive_result_health(z), "defaults:"));
    sive_result *hm = run_defaults(&m, th, set_h, 0), *hu = run_defaults(&m, th, set_hu, 0);
    ck_assert_int_eq(opt_int(hm, SIVE_OPT_KRON_EVERY), 1);
    ck_assert_int_eq(opt_int(hu, SIVE_OPT_KRON_EVERY), 0);
    ck_assert_ptr_null(strstr(sive_result_health(hu), "defaults:"));
    sive_result *g = run_defaults(&m, th, NULL, 1);
    ck_assert_int_eq(opt_int(g, SIVE_OPT_KRON_EVERY), 0);
    ck_assert_int_eq(opt_int(g, SIVE_OPT_RADIUS_LOOKAHEAD), 8);
    /* the file keeps the resolved values */
    void *bytes = NULL;
    size_t len = 0;
    ck_assert_int_eq(sive_result_to_bytes(d, NULL, &bytes, &len), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    ck_assert_int_eq(opt_int(back, SIVE_OPT_KRON_EVERY), 1);
    ck_assert_int_eq(opt_int(back, SIVE_OPT_RADIUS_LOOKAHEAD), 8);
    printf("defaults on the 2-3-2 DLN: lambda-hat %.5g (kron 1, look-ahead 8); metropolis set: "
           "%.5g\n", sive_result_lambda(d), sive_result_lambda(o));
    sive_free(bytes);
    sive_result_free(back);
    sive_result_free(d), sive_result_free(e), sive_result_free(o), sive_result_free(z);
    sive_result_free(ok), sive_result_free(hm), sive_result_free(hu);
    sive_result_free(g);
    sive_model_destroy(&m);
    sive_dln_free(dln);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kron");
    TCase *tc = tcase_create("kron");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ratio_dense);
    tcase_add_test(tc, accept_and_bits);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, callback_fails);
    tcase_add_test(tc, law_exact);
    tcase_add_test(tc, law_wrong);
    tcase_add_test(tc, defaults_mix);
    suite_add_tcase(s, tc);
    return check_run(s);
}
