/* The constant low-rank dense preconditioner of the Metropolis-adjusted
 * step (experimental precondition_rank, precondition_stiff,
 * precondition_update; docs/theory.md "Low-rank dense preconditioner")
 * against exact finite-t laws:
 *  - a tethered quadratic L = (x' A x)/2, x = theta - theta*, A = R diag(k)
 *    R' in a random rotated basis R (d = 6, three stiff directions k = 100,
 *    30, 10 and three flat ones k = 3e-4 .. 1e-4): the law is Gaussian, and
 *    t^2 Var[L] = sum_i (t k_i / (t k_i + 1/h^2))^2 / 2 exactly; with
 *    the estimate at theta* and with the update at each chain's state;
 *  - K1 (one dimension: P = s, a scalar);
 *  - a rotated funnel: L = y0^2 y1^2 + (100 y2^2 + 30 y3^2)/2, y = R'x
 *    (d = 4), whose law factorises into the funnel u^2 v^2 (by quadrature)
 *    and two Gaussians; the estimate at theta* sees only the two stiff
 *    directions, the update also the funnel's curvature where the chain is;
 *  - the eigen-estimate: the health line's top curvature t k_1 + 1/h^2 and
 *    the rank shrunk, against A;
 *  - precondition_rank 0 gives the sampler's bits; 1 and 2 threads the same
 *    bits; the refusals; a gradient callback failing inside the estimate
 *    ends the run with SIVE_E_CALLBACK.
 * Tolerance: 3 MCSE, with the MCSE below 3 % of the target.  (By hand,
 * 2026-11-27: with the proposal density taken in the identity metric
 * instead of P^-1 in the acceptance, the rotated quadratic read
 * 1.6487 +- 0.0135 against 2.6411, z -73.7, K1 z -33.8, the funnel z -61.5,
 * and the test failed.) */
#include <check.h>
#define SIVE_EXPERIMENTAL /* PRECONDITION_RANK, _STIFF, _UPDATE */
#include <sive/experimental.h>
#include <sive/sive.h>

#include "check_run.h"
#include "funnel.h"
#include "quad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T 1e4
#define D 6

static double rot[D * D]; /* R, row-major: y_i = sum_j R_ji x_j, i.e. y = R' x */

/* The columns of the d x d matrix a (row-major) orthonormalised in place
 * (Gram-Schmidt, twice). */
static void orthonormal_columns(double *a, int d)
{
    for (int j = 0; j < d; j++) {
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < j; i++) {
                double s = 0.0;
                for (int r = 0; r < d; r++)
                    s += a[r * d + i] * a[r * d + j];
                for (int r = 0; r < d; r++)
                    a[r * d + j] -= s * a[r * d + i];
            }
        double n = 0.0;
        for (int r = 0; r < d; r++)
            n += a[r * d + j] * a[r * d + j];
        for (int r = 0; r < d; r++)
            a[r * d + j] /= sqrt(n);
    }
}

/* A random orthogonal R (Gram-Schmidt of normals from a fixed seed). */
static void make_rotation(void)
{
    sive_rng g;
    sive_rng_seed(&g, 1095, 0);
    sive_rng_normals(&g, rot, D * D);
    orthonormal_columns(rot, D);
}

/* y = R' x for the first d coordinates (d <= D: the leading block of R
 * re-orthonormalised would differ; the models use d = D or d = 4 with the
 * 4 x 4 rotation rot4). */
static double rot4[16];

static void to_y(const double *r, int d, const double *x, double *y)
{
    for (int i = 0; i < d; i++) {
        y[i] = 0.0;
        for (int j = 0; j < d; j++)
            y[i] += r[j * d + i] * x[j];
    }
}

static void from_y(const double *r, int d, const double *gy, double *gx)
{
    for (int j = 0; j < d; j++) {
        gx[j] = 0.0;
        for (int i = 0; i < d; i++)
            gx[j] += r[j * d + i] * gy[i];
    }
}

static const double quad_k[D] = {100.0, 30.0, 10.0, 3e-4, 2e-4, 1e-4};
static const double star6[D] = {0.3, -0.2, 0.1, 0.05, -0.4, 0.25};
static const double star4[4] = {0.1, -0.2, 0.05, 0.3};

static int rq_grad(const void *theta, size_t d, const sive_batch *b, void *grad, double *loss,
                   void *user)
{
    (void)b;
    (void)user;
    const double *th = theta;
    double x[D], y[D], gy[D], l = 0.0;
    for (size_t i = 0; i < d; i++)
        x[i] = th[i] - star6[i];
    to_y(rot, D, x, y);
    for (int i = 0; i < D; i++) {
        gy[i] = quad_k[i] * y[i];
        l += 0.5 * quad_k[i] * y[i] * y[i];
    }
    from_y(rot, D, gy, grad);
    *loss = l;
    return 0;
}

static int rq_group(const void *theta, size_t d, const sive_batch *b, double *gl, void *user)
{
    double g[D], l;
    rq_grad(theta, d, b, g, &l, user);
    quad_noisy_groups(b, l, 1e-7, gl);
    return 0;
}

static double rq_continuous(double h)
{
    double s = 0.0;
    for (int i = 0; i < D; i++) {
        const double r = T * quad_k[i] / (T * quad_k[i] + 1.0 / (h * h));
        s += 0.5 * r * r;
    }
    return s;
}

static int rf_grad(const void *theta, size_t d, const sive_batch *b, void *grad, double *loss,
                   void *user)
{
    (void)b;
    (void)user;
    (void)d;
    const double *th = theta;
    double x[4], y[4], gy[4];
    for (int i = 0; i < 4; i++)
        x[i] = th[i] - star4[i];
    to_y(rot4, 4, x, y);
    gy[0] = 2.0 * y[0] * y[1] * y[1];
    gy[1] = 2.0 * y[0] * y[0] * y[1];
    gy[2] = 100.0 * y[2];
    gy[3] = 30.0 * y[3];
    from_y(rot4, 4, gy, grad);
    *loss = y[0] * y[0] * y[1] * y[1] + 50.0 * y[2] * y[2] + 15.0 * y[3] * y[3];
    return 0;
}

static int rf_group(const void *theta, size_t d, const sive_batch *b, double *gl, void *user)
{
    double g[4], l;
    rf_grad(theta, d, b, g, &l, user);
    quad_noisy_groups(b, l, 1e-7, gl);
    return 0;
}

/* The rotated funnel's t^2 Var[L]: the funnel u^2 v^2 (funnel.h) plus the
 * two stiff Gaussians' share. */
static double rf_continuous(double t, double h)
{
    double s = u2v2_continuous(t, h);
    for (int i = 0; i < 2; i++) {
        const double k = i ? 30.0 : 100.0, r = t * k / (t * k + 1.0 / (h * h));
        s += 0.5 * r * r;
    }
    return s;
}

static sive_model model_of(size_t d, sive_grad_fn g, sive_group_fn gl)
{
    static quad_fixture unused;
    sive_model m = quad_fixture_model(&unused, d);
    m.grad = g;
    m.group_loss = gl;
    return m;
}

static sive_probe *probe(int64_t steps, int64_t chains, double h, int64_t threads,
                         int64_t rank, int64_t update)
{
    sive_probe *p = funnel_probe(T, h, steps, chains, threads, 18095);
    if (rank >= 0)
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION_RANK, rank), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION_UPDATE, update), SIVE_OK);
    return p;
}

/* lambda-hat of m at th within 3 MCSE of want (rank 0: only printed, the
 * plain sampler for comparison); tau: precondition_stiff; returns the
 * result. */
static sive_result *check_law(sive_model *m, const double *th, double h, int64_t steps,
                              int64_t rank, int64_t update, double tau, double want,
                              const char *what)
{
    sive_probe *p = probe(steps, 16, h, 2, rank, update);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_PRECONDITION_STIFF, tau), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r), z = (lam - want) / se;
    const char *hl = sive_result_health(r), *lr = strstr(hl, "low-rank preconditioner");
    printf("%s, precondition_rank %d, update %d: %.5f +- %.5f (exact law %.5f): %+.2f %% "
           "(z %+.2f)\n  %s", what, (int)rank, (int)update, lam, se, want,
           100.0 * (lam / want - 1.0), z, lr ? lr : "(no low-rank line)\n");
    ck_assert(!lr == !(rank > 0));
    if (rank > 0) {
        ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
        ck_assert_msg(se < 0.03 * want, "MCSE %.4g", se);
    }
    sive_probe_free(p);
    return r;
}

START_TEST(rotated_quadratic_exact)
{
    make_rotation();
    sive_model m = model_of(D, rq_grad, rq_group);
    const double want = rq_continuous(2.0);
    sive_result_free(check_law(&m, star6, 2.0, 20000, 0, 0, 1.0, want, "rotated quadratic"));
    sive_result *r = check_law(&m, star6, 2.0, 20000, 3, 0, 1.0, want, "rotated quadratic");
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "at theta*: rank 3"));
    sive_result_free(r);
    sive_result_free(check_law(&m, star6, 2.0, 20000, 5, 1, 1.0, want, "rotated quadratic"));
}
END_TEST

START_TEST(k1_exact)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-6};
    sive_model m = quad_fixture_model(&q, 1);
    const double th = 0.2, h = 2.0, prec = 2.0 * T + 1.0 / (h * h), s2 = 1.0 / prec,
                 mu = 0.2 / (h * h) / prec;
    const double want = T * T * (4.0 * mu * mu * s2 + 2.0 * s2 * s2);
    sive_result_free(check_law(&m, &th, h, 20000, 1, 0, 1e4, want, "K1"));
}
END_TEST

START_TEST(rotated_funnel_exact)
{
    make_rotation();
    /* the 4 x 4 rotation: the leading block of rot, orthonormalised */
    for (int i = 0; i < 16; i++)
        rot4[i] = rot[(i / 4) * D + i % 4];
    orthonormal_columns(rot4, 4);
    sive_model m = model_of(4, rf_grad, rf_group);
    const double want = rf_continuous(T, 0.3);
    sive_result *r = check_law(&m, star4, 0.3, 40000, 2, 0, 1e3, want, "rotated funnel");
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "at theta*: rank 2"));
    sive_result_free(r);
    sive_result_free(check_law(&m, star4, 0.3, 40000, 2, 1, 1.0, want, "rotated funnel"));
}
END_TEST

/* The eigen-estimate against A: the top curvature t k_1 + 1/h^2 and the
 * reference t k_4 + 1/h^2 to 1e-6, the rank shrunk (3: the stiff ones;
 * with tau 2e5/c_4 only the two above 2e5, t k = 3e5 and 1e6). */
START_TEST(eigen_estimate)
{
    make_rotation();
    sive_model m = model_of(D, rq_grad, rq_group);
    const double h = 2.0, c0 = 1.0 / (h * h);
    for (int k = 0; k < 2; k++) {
        sive_probe *p = probe(200, 1, h, 1, 3, 0);
        ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_PRECONDITION_STIFF,
                                               k ? 2e5 / (T * 3e-4 + c0) : 1.0),
                         SIVE_OK);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &m, star6, &r), SIVE_OK);
        const char *hl = strstr(sive_result_health(r), "at theta*: rank ");
        ck_assert_ptr_nonnull(hl);
        printf("eigen-estimate: %s", hl);
        const int rank = atoi(hl + strlen("at theta*: rank "));
        const char *top = strstr(hl, "top "), *ref = strstr(hl, "reference ");
        ck_assert(top && ref);
        const double ctop = atof(top + 4), cref = atof(ref + 10);
        ck_assert_int_eq(rank, k ? 2 : 3);
        ck_assert_msg(fabs(ctop / (T * 100.0 + c0) - 1.0) < 1e-3, "top %.6g", ctop);
        ck_assert_msg(fabs(cref / (T * 3e-4 + c0) - 1.0) < 1e-3, "reference %.6g", cref);
        ck_assert_ptr_nonnull(strstr(hl, "gradient calls"));
        sive_result_free(r);
        sive_probe_free(p);
    }
}
END_TEST

/* A gradient that fails from its 4th call on: inside the estimate at
 * theta* (after the sampler's own check at theta*). */
static int calls_left;
static int failing_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                        double *loss, void *user)
{
    return --calls_left < 0 ? 7 : rq_grad(theta, d, b, grad, loss, user);
}

START_TEST(estimate_callback_error)
{
    make_rotation();
    sive_model m = model_of(D, failing_grad, rq_group);
    calls_left = 3;
    sive_probe *p = probe(2000, 2, 2.0, 1, 3, 0);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star6, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_E_CALLBACK);
    ck_assert_msg(strstr(sive_result_errmsg(r), "Hessian estimate"), "%s",
                  sive_result_errmsg(r));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* precondition_rank 0 (set) is the sampler without it, bit for bit; with
 * it (and the update) 1 and 2 threads give the same bits; refusals. */
START_TEST(bits_and_refusals)
{
    make_rotation();
    sive_model m = model_of(D, rq_grad, rq_group);
    double lam[5];
    for (int k = 0; k < 5; k++) {
        sive_probe *p = probe(2000, 4, 2.0, k % 2 + 1, k == 0 ? -1 : k == 1 ? 0 : 3, k >= 4);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &m, star6, &r), SIVE_OK);
        lam[k] = sive_result_lambda(r);
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert(memcmp(&lam[0], &lam[1], sizeof lam[0]) == 0);
    ck_assert(lam[0] != lam[2]);
    ck_assert(memcmp(&lam[2], &lam[3], sizeof lam[0]) == 0);
    /* the update, 1 and 2 threads */
    double up[2];
    for (int k = 0; k < 2; k++) {
        sive_probe *p = probe(2000, 4, 2.0, k + 1, 3, 1);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &m, star6, &r), SIVE_OK);
        up[k] = sive_result_lambda(r);
        ck_assert_ptr_nonnull(strstr(sive_result_health(r), "then estimated at each chain"));
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert(memcmp(&up[0], &up[1], sizeof up[0]) == 0);
    static const char *const with[] = {"metropolis", "precondition", "leapfrog", "auto_step",
                                       "replicas"};
    for (int k = 0; k < 5; k++) {
        sive_probe *p = probe(2000, 2, 2.0, 1, 3, 0);
        ck_assert_int_eq(sive_probe_set_text(p, with[k], k == 0 ? "0" : k == 1 ? "1" : "2"),
                         SIVE_OK);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &m, star6, &r), SIVE_E_INVALID_ARG);
        ck_assert_ptr_null(r);
        ck_assert_msg(strstr(sive_probe_errmsg(p), "precondition_rank") &&
                          strstr(sive_probe_errmsg(p), with[k]),
                      "%s", sive_probe_errmsg(p));
        sive_probe_free(p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("lowrank");
    TCase *tc = tcase_create("lowrank");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, eigen_estimate);
    tcase_add_test(tc, rotated_quadratic_exact);
    tcase_add_test(tc, k1_exact);
    tcase_add_test(tc, rotated_funnel_exact);
    tcase_add_test(tc, bits_and_refusals);
    tcase_add_test(tc, estimate_callback_error);
    suite_add_tcase(s, tc);
    return check_run(s);
}
