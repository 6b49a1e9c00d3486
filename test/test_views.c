/* Evaluation views (sive_probe_add_eval_view; docs/guide.md "Refined
 * LLCs"): one Langevin path, K refined estimates.
 *
 * Checked: on a tethered quadratic restricted to 4 of 6 coordinates, a view
 * whose quadratic differs from the training one (other curvatures, another
 * centre, its own noise) against the exact law of the view's loss under the
 * chain's stationary law (test/exact_ula.h); the run's own result is bit
 * for bit the same with and without views; on least squares with
 * per-example losses, a view of the whole training set (its own draws)
 * against the exact target of the full-data chain, and a subset view sees
 * only its examples; the argument checks. */
#include <sive/sive.h>

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsq.h"
#include "quad.h"
#include "sres_forge.h"

/* The view's quadratic: sum_i q_i/2 (theta_i - c_i)^2 + l0, noise sigma
 * per group (its normals from the batch's seed, as quad.h does). */
typedef struct view_quad {
    double q[D], c[D], l0, sigma;
} view_quad;

static int view_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                      void *user)
{
    const view_quad *v = user;
    const double *th = theta;
    double l = v->l0;
    for (size_t i = 0; i < d; i++)
        l += 0.5 * v->q[i] * (th[i] - v->c[i]) * (th[i] - v->c[i]);
    quad_noisy_groups(b, l, v->sigma, gl);
    return 0;
}

static const uint64_t RANGES[] = {1, 3, 4, 6}; /* k = 4 of D = 6 */

static sive_probe *quad_probe(double t, double a, int64_t steps)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, t), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, a), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_params(p, RANGES, 2), SIVE_OK);
    return p;
}

static int moved(size_t i)
{
    return (i >= RANGES[0] && i < RANGES[1]) || (i >= RANGES[2] && i < RANGES[3]);
}

/* E[SIVE_UNCLIPPED] of view v's result vr: f_i = q_i (s_i - c_i) x +
 * q_i/2 x^2 for x = theta_i - s_i, x following the chain's AR(1) (H =
 * curv, g = curv s_i), over the moved coordinates only. */
static double view_exact(const view_quad *v, const double *star, double t, double a,
                         double h, double curv, const sive_result *vr)
{
    const double n = sive_result_stat(vr, SIVE_STAT_TAIL_LENGTH, 0);
    double var = 0.0, vmean = 0.0;
    for (size_t i = 0; i < D; i++) {
        if (!moved(i))
            continue;
        double vmi;
        var += exact_ula_coord_var_f(a, a / t, h, curv, curv * star[i],
                                     v->q[i] * (star[i] - v->c[i]), v->q[i] / 2.0, n, &vmi);
        vmean += vmi;
    }
    return t * t * n / (n - 1.0) * (var - vmean);
}

START_TEST(view_quadratic_exact)
{
    const double t = 10.0, a = 0.05, h = 1.0, curv = 2.0;
    static quad_fixture q = {.k = 2.0, .l0 = 0.1, .sigma = 0.02};
    static view_quad v = {.l0 = 3.0, .sigma = 0.05};
    double star[D];
    for (size_t i = 0; i < D; i++) {
        star[i] = 0.3 + 0.1 * (double)i;
        v.q[i] = 0.5 + 0.25 * (double)i;
        v.c[i] = -0.2;
    }
    sive_model m = quad_fixture_model(&q, D), vm = quad_fixture_model(&q, D);
    vm.group_loss = view_group;
    vm.user = &v;
    sive_probe *p = quad_probe(t, a, 20000);
    sive_result *plain = NULL, *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &plain), SIVE_OK);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "other quadratic", &vm, NULL, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    /* the run's own result does not see the view */
    ck_assert_uint_eq(sive_result_views(plain), 0);
    ck_assert_uint_eq(sive_result_views(r), 1);
    for (int32_t c = 0; c < 8; c++)
        for (int k = 0; k < 5; k++)
            ck_assert(same_trace(plain, r, (sive_trace)k, c));
    ck_assert(sive_result_lambda(plain) == sive_result_lambda(r));
    const sive_result *vr = sive_result_view(r, 0);
    ck_assert_str_eq(sive_result_view_name(r, 0), "other quadratic");
    ck_assert_ptr_null(sive_result_view(r, 1));
    ck_assert_int_eq(sive_result_dtype(vr), sive_result_dtype(r)); /* the run's model */
    ck_assert(same_trace(r, vr, SIVE_TRACE_DISP, 3)); /* one path */
    const double want = view_exact(&v, star, t, a, h, curv, vr);
    const double got = sive_result_stat(vr, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    const double se = sive_result_stat(vr, SIVE_STAT_MCSE, SIVE_SUMMARY);
    const double z = (got - want) / se;
    const double corr = sive_result_stat(vr, SIVE_STAT_NOISE_CORRECTION, SIVE_SUMMARY);
    printf("view quadratic (k = 4 of 6): SIVE %.5f, exact %.5f, rel %+.2f %%, MCSE %.5f, "
           "z %+.2f; noise correction %.4f (t^2 sigma^2/N = %.4f); training SIVE %.5f\n",
           got, want, 100.0 * (got / want - 1.0), se, z, corr,
           t * t * v.sigma * v.sigma / 8.0, sive_result_lambda(r));
    ck_assert_msg(fabs(z) < 4.0, "z = %g", z);
    /* the view's own noise is corrected: C = t^2 sigma^2 / N in expectation */
    const double cse = sive_result_stat(vr, SIVE_STAT_NOISE_CORRECTION_STD, SIVE_SUMMARY);
    ck_assert_msg(fabs(corr - t * t * v.sigma * v.sigma / 8.0) < 4.0 * cse + 1e-12,
                  "correction %g", corr);
    /* and the view's target is not the training one */
    ck_assert(fabs(got - sive_result_lambda(r)) > 8.0 * se);
    sive_result_free(plain);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Control variates on a view (docs/theory.md "Evaluation views"): the
 * quadratic of view_quadratic_exact as per-example losses with noise
 * l'_j = L'(theta) + s_j sigma_p (1 + u_p.(theta - c)/5), p = j/2,
 * s_j = +-1, so that the mean over the view's NVEX examples is L'(theta)
 * exactly: the same exact target with and without control variates.  The
 * losses differ far more between examples than with theta near theta*
 * (as data sets' do), which is what control variates remove. */
#define NVEX 64
static view_quad cvq = {.l0 = 3.0};

static void cv_view_fill(double *star)
{
    for (size_t i = 0; i < D; i++) {
        star[i] = 0.3 + 0.1 * (double)i;
        cvq.q[i] = 0.5 + 0.25 * (double)i;
        cvq.c[i] = -0.2;
    }
}

static int cv_view_loss(const void *theta, size_t d, const sive_batch *b, double *losses,
                        void *user)
{
    (void)user;
    const double *th = theta;
    double l = cvq.l0;
    for (size_t i = 0; i < d; i++)
        l += 0.5 * cvq.q[i] * (th[i] - cvq.c[i]) * (th[i] - cvq.c[i]);
    for (size_t k = 0; k < b->group_size; k++) {
        const uint64_t j = b->index[k], pr = j / 2;
        double lin = 1.0;
        for (size_t i = 0; i < d; i++)
            lin += 0.2 * cos((double)(pr + 3 * i)) * (th[i] - cvq.c[i]);
        losses[k] = l + (j % 2 ? -1.0 : 1.0) * 10.0 * (1.0 + (double)(pr % 3)) * lin;
    }
    return 0;
}

/* The training loss per example (quad.h's, the same for every example):
 * control variates need the run's model to have per-example losses. */
static int quad_examples(const void *theta, size_t d, const sive_batch *b, double *losses,
                         void *user)
{
    const double l = quad_fixture_loss(user, theta, d);
    for (size_t k = 0; k < b->group_size; k++)
        losses[k] = l;
    return 0;
}

/* A control-variate run (cv 0/1) on the quadratic with the per-example
 * view "cv" and the group-only view "group". */
static sive_result *cv_view_run(int cv, int64_t steps, const double *star)
{
    static quad_fixture q = {.k = 2.0, .l0 = 0.1, .sigma = 0.02};
    static view_quad g = {.l0 = 1.0, .sigma = 0.05, .q = {1, 1, 1, 1, 1, 1}};
    sive_model m = quad_fixture_model(&q, D), vm = m, gm = m;
    m.loss = quad_examples;
    m.n_examples = NVEX;
    vm.group_loss = NULL;
    vm.loss = cv_view_loss;
    vm.n_examples = NVEX;
    gm.group_loss = view_group;
    gm.user = &g;
    sive_probe *p = quad_probe(10.0, 0.05, steps);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, cv), SIVE_OK);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "cv", &vm, NULL, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "group", &gm, NULL, 0), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, &m, star, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    sive_probe_free(p);
    return r;
}

static int64_t view_cv(const sive_result *r, size_t k)
{
    int64_t v = -1;
    ck_assert_int_eq(sive_result_option_int(sive_result_view(r, k), SIVE_OPT_CONTROL_VARIATE,
                                            &v), SIVE_OK);
    return v;
}

START_TEST(view_control_variates_exact)
{
    const double t = 10.0, a = 0.05, h = 1.0, curv = 2.0;
    double star[D];
    cv_view_fill(star);
    double mcse[2];
    for (int cv = 0; cv < 2; cv++) {
        sive_result *r = cv_view_run(cv, 20000, star);
        const sive_result *vr = sive_result_view(r, 0);
        ck_assert_int_eq(view_cv(r, 0), cv); /* the view records what it used */
        ck_assert_int_eq(view_cv(r, 1), 0);  /* a group-only view cannot */
        const double want = view_exact(&cvq, star, t, a, h, curv, vr);
        const double got = sive_result_stat(vr, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
        mcse[cv] = sive_result_stat(vr, SIVE_STAT_MCSE, SIVE_SUMMARY);
        const double z = (got - want) / mcse[cv];
        printf("per-example view, control_variate %d: SIVE %.5f, exact %.5f, rel %+.2f %%, "
               "MCSE %.5f, z %+.2f, noise correction %.4f\n", cv, got, want,
               100.0 * (got / want - 1.0), mcse[cv], z,
               sive_result_stat(vr, SIVE_STAT_NOISE_CORRECTION, SIVE_SUMMARY));
        ck_assert_msg(fabs(z) < 4.0, "control_variate %d: z = %g", cv, z);
        sive_result_free(r);
    }
    printf("view MCSE with control variates / without: %.3f\n", mcse[1] / mcse[0]);
    ck_assert_msg(mcse[1] < 0.5 * mcse[0], "MCSE %g with control variates, %g without",
                  mcse[1], mcse[0]);
}
END_TEST

/* Beyond the table limit (SIVE_CV_TABLE_MAX below the view's n) a view's
 * steps evaluate their draws at theta* again: the same bits; a result's
 * bytes keep which views used control variates. */
START_TEST(view_control_variates_recomputed_and_saved)
{
    double star[D];
    cv_view_fill(star);
    sive_result *r[2];
    r[0] = cv_view_run(1, 300, star);
    setenv("SIVE_CV_TABLE_MAX", "10", 1);
    r[1] = cv_view_run(1, 300, star);
    unsetenv("SIVE_CV_TABLE_MAX");
    for (int32_t c = 0; c < 8; c++)
        ck_assert(same_trace(sive_result_view(r[0], 0), sive_result_view(r[1], 0),
                             SIVE_TRACE_LBAR, c));
    void *bytes = NULL;
    size_t len = 0;
    ck_assert_int_eq(sive_result_to_bytes(r[0], NULL, &bytes, &len), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    ck_assert_int_eq(view_cv(back, 0), 1);
    ck_assert_int_eq(view_cv(back, 1), 0);
    ck_assert_int_eq(sive_result_dtype(sive_result_view(back, 0)), sive_result_dtype(r[0]));
    ck_assert(sive_result_lambda(sive_result_view(back, 0)) ==
              sive_result_lambda(sive_result_view(r[0], 0)));
    sive_free(bytes);
    sive_result_free(back);
    sive_result_free(r[0]);
    sive_result_free(r[1]);
}
END_TEST

/* cv_view_loss with example 3 not finite in the pass at theta* */
static int nan_view_loss(const void *theta, size_t d, const sive_batch *b, double *losses,
                         void *user)
{
    int rc = cv_view_loss(theta, d, b, losses, user);
    for (size_t k = 0; k < b->group_size; k++)
        if (b->chain == -1 && b->index[k] == 3)
            losses[k] = NAN;
    return rc;
}

/* A view's loss not finite at theta*: the run's answer for its own data
 * (no result), the view named. */
START_TEST(view_nan_at_star_refused)
{
    static quad_fixture q = {.k = 2.0, .l0 = 0.1, .sigma = 0.02};
    double star[D];
    cv_view_fill(star);
    sive_model m = quad_fixture_model(&q, D), vm = m;
    m.loss = quad_examples;
    m.n_examples = NVEX;
    vm.group_loss = NULL;
    vm.loss = nan_view_loss;
    vm.n_examples = NVEX;
    sive_probe *p = quad_probe(10.0, 0.05, 50);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "odd", &vm, NULL, 0), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "evaluation view 'odd': loss of example 3 at "
                                               "theta* is nan"), "%s", sive_probe_errmsg(p));
    /* without control variates the view is not evaluated at theta* */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* lsq's losses, recording whether a view call saw an index outside the
 * subset (the odd indices). */
static atomic_int outside;

static int even_loss(const void *theta, size_t d, const sive_batch *b, double *losses,
                     void *user)
{
    for (size_t i = 0; i < b->group_size; i++)
        if (b->index[i] % 2)
            atomic_fetch_add(&outside, 1);
    return lsq_loss(theta, d, b, losses, user);
}

START_TEST(views_of_training_data)
{
    static lsq m;
    lsq_make(&m, 21);
    sive_model sm, whole, evens;
    lsq_model(&sm, &m);
    whole = evens = sm;
    evens.loss = even_loss;
    uint64_t subset[NEX / 2];
    for (size_t i = 0; i < NEX / 2; i++)
        subset[i] = 2 * i;
    sive_probe *p = lsq_probe(20000, 8, 64, 32);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "train", &whole, NULL, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "even", &evens, subset, NEX / 2), SIVE_OK);
    atomic_store(&outside, 0);
    sive_result *r = lsq_run(p, &m);
    ck_assert_int_eq(atomic_load(&outside), 0);
    const sive_result *tr = sive_result_view(r, 0), *ev = sive_result_view(r, 1);
    /* the training set as a view, on its own draws: the exact target of
     * the full-data chain (lsq_expect), like the run's own estimate */
    const double n = sive_result_stat(tr, SIVE_STAT_TAIL_LENGTH, 0);
    const double want = lsq_expect(&m, STAR, 1000.0, 0.05, 0.5, n);
    double a = sive_result_lambda(r), b = sive_result_stat(tr, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    double sa = sive_result_mcse(r), sb = sive_result_mcse(tr);
    printf("lsq: exact %.4f; run %.4f +- %.4f; view 'train' %.4f +- %.4f (z %+.2f); view "
           "'even' %.4f +- %.4f\n", want, a, sa, b, sb, (b - want) / sb,
           sive_result_lambda(ev), sive_result_mcse(ev));
    ck_assert_msg(fabs(b - want) < 4.0 * sb, "z = %g", (b - want) / sb);
    ck_assert(!same_trace(r, tr, SIVE_TRACE_LBAR, 0));
    ck_assert(isfinite(sive_result_lambda(ev)) && sive_result_lambda(ev) != b);
    ck_assert_int_eq(sive_result_status(ev), SIVE_OK);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Views in result bytes and merges: a part's views survive bytes bit for
 * bit, and the parts of a chain-split run merge into the whole run's
 * views. */
START_TEST(views_saved_and_merged)
{
    static lsq m;
    lsq_make(&m, 31);
    sive_model sm;
    lsq_model(&sm, &m);
    uint64_t subset[NEX / 4];
    for (size_t i = 0; i < NEX / 4; i++)
        subset[i] = 4 * i + 1;
    sive_result *whole = NULL, *part[2];
    for (int k = -1; k < 2; k++) {
        sive_probe *p = lsq_probe(300, 4, 8, 8);
        ck_assert_int_eq(sive_probe_add_eval_view(p, "train", &sm, NULL, 0), SIVE_OK);
        ck_assert_int_eq(sive_probe_add_eval_view(p, "some", &sm, subset, NEX / 4), SIVE_OK);
        if (k >= 0) {
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, 2 * k), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, 2 * k + 2), SIVE_OK);
        }
        sive_result *r = lsq_run(p, &m);
        *(k < 0 ? &whole : &part[k]) = r;
        sive_probe_free(p);
    }
    void *bytes = NULL;
    size_t len = 0;
    ck_assert_int_eq(sive_result_to_bytes(part[1], NULL, &bytes, &len), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    /* a name with a NUL inside would save as another name: refused (the
     * fuzzer's load-save-load oracle found the loader taking it) */
    unsigned char *forged = malloc(len);
    ck_assert_ptr_nonnull(forged);
    memcpy(forged, bytes, len);
    unsigned char *name = NULL;
    for (size_t i = 0; !name && i + 12 <= len; i++)
        if (!memcmp(forged + i, "\4\0\0\0\0\0\0\0some", 12))
            name = forged + i;
    ck_assert_ptr_nonnull(name);
    name[9] = 0; /* "s\0me" */
    sres_rehash(forged, len);
    sive_result *nul = NULL;
    ck_assert_int_eq(sive_result_from_bytes(forged, len, &nul, NULL), SIVE_E_FORMAT);
    ck_assert_ptr_null(nul);
    name[9] = 'o'; /* the forging itself is sound */
    sres_rehash(forged, len);
    ck_assert_int_eq(sive_result_from_bytes(forged, len, &nul, NULL), SIVE_OK);
    sive_result_free(nul);
    free(forged);
    sive_free(bytes);
    ck_assert_uint_eq(sive_result_views(back), 2);
    ck_assert_str_eq(sive_result_view_name(back, 1), "some");
    for (size_t k = 0; k < 2; k++) {
        const sive_result *a = sive_result_view(part[1], k), *b = sive_result_view(back, k);
        for (int t = 0; t < 5; t++)
            ck_assert_msg(same_trace(a, b, (sive_trace)t, 3), "view %zu trace %d", k, t);
        ck_assert(sive_result_lambda(a) == sive_result_lambda(b));
    }
    sive_result *merged = NULL;
    const sive_result *parts[2] = {part[0], back};
    ck_assert_int_eq(sive_result_merge(&merged, parts, 2), SIVE_OK);
    ck_assert_uint_eq(sive_result_views(merged), 2);
    for (size_t k = 0; k < 2; k++) {
        const sive_result *a = sive_result_view(whole, k), *b = sive_result_view(merged, k);
        ck_assert_str_eq(sive_result_view_name(merged, k), sive_result_view_name(whole, k));
        for (int32_t c = 0; c < 4; c++)
            ck_assert(same_trace(a, b, SIVE_TRACE_LBAR, c) && same_trace(a, b, SIVE_TRACE_DISP, c));
        ck_assert(sive_result_lambda(a) == sive_result_lambda(b));
        ck_assert(sive_result_mcse(a) == sive_result_mcse(b));
    }
    /* parts with other views do not merge */
    sive_probe *p = lsq_probe(300, 4, 8, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, 2), SIVE_OK);
    sive_result *plain = lsq_run(p, &m);
    sive_probe_free(p);
    sive_result_free(merged);
    merged = NULL;
    const sive_result *mixed[2] = {part[0], plain};
    ck_assert_int_eq(sive_result_merge(&merged, mixed, 2), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_last_errmsg(), "evaluation views"), "%s", sive_last_errmsg());
    sive_result_free(plain);
    sive_result_free(back);
    sive_result_free(whole);
    sive_result_free(part[0]);
    sive_result_free(part[1]);
}
END_TEST

/* The runs that only serve the main one (the radius pilots of c_h = auto,
 * the step-halved run of step extrapolation) do not evaluate the views. */
static atomic_int view_calls;

static int counted_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                         void *user)
{
    atomic_fetch_add(&view_calls, 1);
    return quad_fixture_group(theta, d, b, gl, user);
}

START_TEST(views_only_in_the_main_run)
{
    static quad_fixture q = {.k = 2.0, .l0 = 0.1, .sigma = 0.02};
    sive_model m = quad_fixture_model(&q, D), vm = m;
    vm.group_loss = counted_group;
    double star[D] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    sive_probe *p = quad_probe(10.0, 0.05, 400);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "counted", &vm, NULL, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEP_EXTRAPOLATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "c_h", "auto"), SIVE_OK);
    atomic_store(&view_calls, 0);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    ck_assert_int_eq(atomic_load(&view_calls), 8 * 400); /* chains x steps */
    ck_assert_uint_eq(sive_result_views(r), 1);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(view_argument_checks)
{
    static lsq m;
    lsq_make(&m, 2);
    sive_model sm, bad;
    lsq_model(&sm, &m);
    sive_probe *p = lsq_probe(100, 1, 4, 4);
    const uint64_t unordered[] = {4, 2}, far[] = {NEX};
    char longname[80];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ck_assert_int_eq(sive_probe_add_eval_view(p, "v", NULL, NULL, 0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "", &sm, NULL, 0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_add_eval_view(p, longname, &sm, NULL, 0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "v", &sm, unordered, 2), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "v", &sm, far, 1), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "subset[0]"), "%s", sive_probe_errmsg(p));
    bad = sm;
    bad.loss = NULL;
    ck_assert_int_eq(sive_probe_add_eval_view(p, "v", &bad, NULL, 0), SIVE_E_INVALID_ARG);
    /* another dim: refused at the run */
    bad = sm;
    bad.dim = D - 1;
    ck_assert_int_eq(sive_probe_add_eval_view(p, "short", &bad, NULL, 0), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "'short'"), "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_probe_clear_eval_views(p), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_OK);
    ck_assert_uint_eq(sive_result_views(r), 0);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* The analytic view of the two tests below: view_group's quadratic (q 1,
 * l0 3) on quad_fixture's model, star 0.3, 0.4, ... */
static void analytic_view(double *star, sive_model *m, sive_model *vm)
{
    static quad_fixture q = {.k = 2.0, .l0 = 0.1, .sigma = 0.02};
    static view_quad v = {.l0 = 3.0, .sigma = 0.05};
    for (size_t i = 0; i < D; i++) {
        star[i] = 0.3 + 0.1 * (double)i;
        v.q[i] = 1.0;
    }
    *m = *vm = quad_fixture_model(&q, D);
    vm->group_loss = view_group;
    vm->user = &v;
}

/* An analytic view (group_loss, n_examples 0) draws no indices, so
 * replacement 0 is as good as 1 for it, as it is for an analytic model:
 * the run is not refused and gives the same results both ways. */
START_TEST(analytic_view_without_replacement)
{
    double star[D];
    sive_model m, vm;
    analytic_view(star, &m, &vm);
    sive_probe *p = quad_probe(10.0, 0.05, 400);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "analytic", &vm, NULL, 0), SIVE_OK);
    sive_result *with = NULL, *without = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &with), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    ck_assert_msg(sive_probe_run(p, &m, star, &without) == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert(same_trace(sive_result_view(with, 0), sive_result_view(without, 0),
                         SIVE_TRACE_LBAR, 0));
    ck_assert(sive_result_lambda(sive_result_view(with, 0)) ==
              sive_result_lambda(sive_result_view(without, 0)));
    sive_result_free(with);
    sive_result_free(without);
    sive_probe_free(p);
}
END_TEST

/* A view with examples draws groups*eval_batch indices per step and is
 * held to the run's limit (2^31) even on an analytic model, which is not
 * checked for it: refused before the workers allocate (here 2^32 indices,
 * 32 GiB a worker). */
START_TEST(view_with_examples_batch_limit)
{
    static quad_fixture q = {.k = 2.0, .l0 = 0.1, .sigma = 0.02};
    double star[D] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    sive_model m = quad_fixture_model(&q, D), vm = m;
    vm.n_examples = 1000;
    sive_probe *p = quad_probe(10.0, 0.05, 40);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 256), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, INT64_C(1) << 24), SIVE_OK);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "big", &vm, NULL, 0), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "'big'") &&
                      strstr(sive_probe_errmsg(p), "above 2^31"),
                  "%s", sive_probe_errmsg(p));
    sive_probe_free(p);
}
END_TEST

/* An analytic view on an analytic model draws no indices, so its workers
 * allocate none: groups 2^16 x eval_batch 2^24 would be 2^40 indices
 * (8 TiB a worker, beyond any malloc on this machine without
 * overcommit_memory = 1), and the run once failed with SIVE_E_NOMEM. */
START_TEST(analytic_view_allocates_no_indices)
{
    double star[D];
    sive_model m, vm;
    analytic_view(star, &m, &vm);
    sive_probe *p = quad_probe(10.0, 0.05, 20);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, INT64_C(1) << 16), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, INT64_C(1) << 24), SIVE_OK);
    ck_assert_int_eq(sive_probe_add_eval_view(p, "analytic", &vm, NULL, 0), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, &m, star, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    ck_assert_uint_eq(sive_result_views(r), 1);
    ck_assert(isfinite(sive_result_lambda(sive_result_view(r, 0))));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("views");
    TCase *tc = tcase_create("views");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, view_quadratic_exact);
    tcase_add_test(tc, views_of_training_data);
    tcase_add_test(tc, views_saved_and_merged);
    tcase_add_test(tc, views_only_in_the_main_run);
    tcase_add_test(tc, view_argument_checks);
    tcase_add_test(tc, view_control_variates_exact);
    tcase_add_test(tc, view_control_variates_recomputed_and_saved);
    tcase_add_test(tc, view_nan_at_star_refused);
    tcase_add_test(tc, analytic_view_without_replacement);
    tcase_add_test(tc, view_with_examples_batch_limit);
    tcase_add_test(tc, analytic_view_allocates_no_indices);
    suite_add_tcase(s, tc);
    return check_run(s);
}
