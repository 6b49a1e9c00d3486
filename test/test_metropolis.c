/* The Metropolis-adjusted step (SIVE_OPT_METROPOLIS; docs/theory.md,
 * "Metropolis-adjusted step") against the continuous tethered law, which
 * it samples exactly at any step:
 *  - K1 (K = 1 + x^2 around theta* = 0.2, t = 10^4, h = 2) at base_lr
 *    0.05, where ULA gives 0.554: t^2 Var under the continuous law
 *    (0.49999), without and with evaluation noise (SIVE's correction on
 *    top of the exact chain);
 *  - least squares (test/lsq.h) with full-batch gradients (grad_batch = n,
 *    no replacement) and per-example evaluation, against the continuous
 *    law's closed form (control variates keep the evaluation noise
 *    below the Monte Carlo error);
 *  - with the frozen preconditioner (SIVE_OPT_PRECONDITION; the proposal
 *    and its density in the P metric): K1 (P = 1 in one dimension), a
 *    tethered anisotropic quadratic whose curvatures span three decades
 *    (P spans a decade and a half: proposal densities in the identity
 *    metric would sample another law), and full-batch least squares,
 *    each within 3 MCSE of the continuous law;
 *  - the quartic K = sum x_i^4 (d = 4, h = 0.3), whose curvature grows
 *    with the distance to theta*, so the chain's step depends on its
 *    state (beta < 0), against the continuous law by quadrature (within
 *    3 MCSE; without the proposal densities' normalisation term in
 *    log_alpha it is off by 11 MCSE);
 *  - the refusals (mini-batch gradients, a model that gives no loss), the
 *    health line, and the same bits for 1 and 2 threads (with and
 *    without the preconditioner).
 *  - Hamiltonian steps (the experimental leapfrog = K > 1; docs/theory.md
 *    "Hamiltonian steps"): K1, the anisotropic quadratic with the frozen
 *    preconditioner as the inverse mass, and the quartic (no position
 *    dependence: beta 0), each within 3 MCSE of the continuous law at a
 *    quarter of the steps (the same gradient count); leapfrog 1 gives the
 *    Langevin step's bits; leapfrog > 1 without metropolis is refused.
 *  - delayed-rejection Hamiltonian steps (the experimental
 *    delayed_rejection = k; docs/theory.md "Delayed rejection"): K1, the
 *    anisotropic quadratic (preconditioned), the quartic, and the funnel
 *    L = u^2 v^2 (against its law by quadrature), each within 3 MCSE with
 *    the second stage exercised; the option at 0 and 1 gives the bits of
 *    the sampler without it; without leapfrog >= 2 it is refused.
 *  - the locally adaptive step (the experimental auto_step = S; docs/theory.md
 *    "Locally adaptive step"): K1, the anisotropic quadratic (with P and
 *    leapfrog 4, and as autoMALA, leapfrog 1), the quartic, and the funnel
 *    u^2 v^2 against its continuous law by quadrature, each within 3 MCSE;
 *    auto_step 0 gives the sampler's bits; refused without metropolis;
 *    its tallies (SIVE_STAT_AUTO_STEP_GRADS, _RESCALED) per chain and as
 *    the health line gives them, NaN after a load or a merge.
 *  - replica exchange (the experimental replicas = R, replica_ratio = q;
 *    docs/theory.md "Replica exchange"): rung 0's lambda-hat on K1, the
 *    quartic and the funnel u^2 v^2 (MALA, and HMC on K1) within 3 MCSE of
 *    the continuous law at t, with the swaps exercised (their acceptance
 *    in the health line, between 0.05 and 1); replicas 1 gives the
 *    sampler's bits whatever replica_ratio; 1 and 2 threads the same bits;
 *    refused without metropolis and with auto_step.  With a float32
 *    model (SIVE_F32, replica_f32): K1 within 3 MCSE, the swaps exercised,
 *    replicas 1 the sampler's bits, 1 and 2 threads the same bits, a
 *    save and load the same lambda-hat, and within 1e-3 of the float64
 *    model's lambda-hat (MALA rungs, and Hamiltonian ones with the
 *    preconditioner) but not its bits.  (By hand, 2026-11-27:
 *    with the swap's log ratio's sign flipped, K1 read 10458 +- 1664
 *    against 0.5, z +6.3, and the test failed.)
 * Tolerances: 4 MCSE (the run's own; 3 with the preconditioner and the
 * quartic), and the MCSE small enough that a bias of ULA's size (+11 % on
 * K1) would fail by far. */
#include <check.h>
#define SIVE_EXPERIMENTAL /* LEAPFROG, AUTO_STEP, DELAYED_REJECTION, REPLICAS, REPLICA_RATIO */
#include <sive/sive.h>

#include "check_run.h"
#include "funnel.h"
#include "lsq.h"
#include "quad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T 1e4

static sive_probe *k1_probe(int64_t steps, int64_t chains, int64_t groups, int64_t threads)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 2.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, 0.05), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, chains), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, groups), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, threads), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 18023), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    return p;
}

/* t^2 Var[L] for L = 1 + x^2 under exp(-t L - (x - 0.2)^2/(2 h^2)). */
static double k1_continuous(double h)
{
    double prec = 2.0 * T + 1.0 / (h * h), s2 = 1.0 / prec, mu = 0.2 / (h * h) / prec;
    return T * T * (4.0 * mu * mu * s2 + 2.0 * s2 * s2);
}

static void k1_check(double sigma, const char *what, int precond)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0};
    q.sigma = sigma;
    sive_model m = quad_fixture_model(&q, 1);
    sive_probe *p = k1_probe(40000, 24, 16, 2);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, precond), SIVE_OK);
    sive_result *r = NULL;
    double th = 0.2;
    ck_assert_int_eq(sive_probe_run(p, &m, &th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r);
    const double want = k1_continuous(2.0), z = (lam - want) / se;
    const double corr = sive_result_stat(r, SIVE_STAT_NOISE_CORRECTION, SIVE_SUMMARY);
    printf("K1 metropolis, %s: %.5f +- %.5f (continuous law %.5f; ULA at a = 0.05 0.554): "
           "%+.2f %% (z %+.2f), noise correction %.4f\n", what, lam, se, want,
           100.0 * (lam / want - 1.0), z, corr);
    ck_assert_msg(fabs(z) < (precond ? 3.0 : 4.0), "z %.2f", z);
    ck_assert_msg(se < 0.01 * want, "MCSE %.4g", se);
    ck_assert(!(sive_result_flags(r) & SIVE_FLAG_STEP_BIAS));
    const char *hl = sive_result_health(r);
    ck_assert_msg(hl && strstr(hl, "metropolis: tail acceptance"), "%s", hl ? hl : "");
    ck_assert_msg(!strstr(hl, "preconditioned") == !precond, "%s", hl);
    printf("  %s", strstr(hl, "metropolis: tail acceptance"));
    sive_result_free(r);
    sive_probe_free(p);
}

START_TEST(k1_exact)
{
    k1_check(1e-6, "no evaluation noise", 0);
}
END_TEST

START_TEST(k1_exact_precond)
{
    k1_check(1e-6, "preconditioned", 1);
}
END_TEST

START_TEST(k1_exact_noisy)
{
    /* a correction t^2 sigma^2 / N of about 0.1 (20 % of lambda) */
    k1_check(1.25e-4, "evaluation noise", 0);
}
END_TEST

static void lsq_check(int precond)
{
    static lsq m;
    lsq_make(&m, 7);
    m.batch_grad = 1; /* the gradient of the batch: the whole set here */
    sive_probe *p = lsq_probe(40000, 16, 32, 32);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, NEX), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, precond), SIVE_OK);
    sive_result *r = lsq_run(p, &m);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r);
    /* the continuous law: ULA's closed form as a -> 0, an infinite tail */
    const double want = lsq_expect(&m, STAR, 1000.0, 1e-9, 0.5, 1e30);
    const double ula = lsq_expect(&m, STAR, 1000.0, 0.05, 0.5, 0.7 * 40000);
    const double z = (lam - want) / se;
    printf("least squares, full batch, metropolis%s: %.4f +- %.4f (continuous law %.4f, ULA "
           "at a = 0.05 %.4f): %+.2f %% (z %+.2f)\n", precond ? " preconditioned" : "", lam,
           se, want, ula, 100.0 * (lam / want - 1.0), z);
    ck_assert_msg(fabs(z) < (precond ? 3.0 : 4.0), "z %.2f", z);
    ck_assert_msg(4.0 * se < fabs(ula - want), "MCSE %.4g cannot tell ULA's bias", se);
    sive_result_free(r);
    sive_probe_free(p);
}

START_TEST(lsq_full_batch_exact)
{
    lsq_check(0);
}
END_TEST

START_TEST(lsq_full_batch_exact_precond)
{
    lsq_check(1);
}
END_TEST

/* The tethered anisotropic quadratic L = 1 + sum_i k_i theta_i^2 / 2
 * (curvatures over three decades): the continuous law is Gaussian per
 * coordinate, precision t k_i + 1/h^2, mean theta*_i/(h^2 prec_i), and
 * t^2 Var[L] = t^2 sum_i k_i^2 (mu_i^2 s_i^2 + s_i^4 / 2), s_i^2 = 1/prec_i. */
#define AD 4
static const double aniso_k[AD] = {0.1, 1.0, 10.0, 100.0};

static int aniso_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                      double *loss, void *user)
{
    (void)b;
    (void)user;
    const double *th = theta;
    double *g = grad, l = 1.0;
    for (size_t i = 0; i < d; i++) {
        g[i] = aniso_k[i] * th[i];
        l += 0.5 * aniso_k[i] * th[i] * th[i];
    }
    *loss = l;
    return 0;
}

static int aniso_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                       void *user)
{
    (void)user;
    double g[AD], l;
    aniso_grad(theta, d, b, g, &l, NULL);
    quad_noisy_groups(b, l, 1e-6, gl);
    return 0;
}

/* The anisotropic quadratic's model, its theta* into th (AD values) and
 * t^2 Var[L] under the continuous law at radius h into *want. */
static sive_model aniso_model(double *th, double h, double *want)
{
    static quad_fixture unused;
    static const double star[AD] = {0.2, -0.1, 0.05, 0.02};
    sive_model m = quad_fixture_model(&unused, AD);
    m.grad = aniso_grad;
    m.group_loss = aniso_group;
    *want = 0.0;
    for (int i = 0; i < AD; i++) {
        double prec = T * aniso_k[i] + 1.0 / (h * h), s2 = 1.0 / prec;
        double mu = star[i] / (h * h) / prec;
        th[i] = star[i];
        *want += T * T * aniso_k[i] * aniso_k[i] * (mu * mu * s2 + 0.5 * s2 * s2);
    }
    return m;
}

START_TEST(aniso_exact_precond)
{
    double th[AD], want;
    sive_model m = aniso_model(th, 2.0, &want);
    sive_probe *p = k1_probe(20000, 16, 8, 2);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, 1), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r), z = (lam - want) / se;
    printf("anisotropic quadratic (k 0.1 .. 100), metropolis preconditioned: %.4f +- %.4f "
           "(continuous law %.4f): %+.2f %% (z %+.2f)\n%s", lam, se, want,
           100.0 * (lam / want - 1.0), z, sive_result_health(r));
    ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
    ck_assert_msg(se < 0.02 * want, "MCSE %.4g", se);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* The quartic K = sum x_i^4 around theta* = 0 (the monomial k = 2): its
 * curvature 12 x^2 grows with the distance to theta*, so the chain's step
 * depends on where it is (docs/theory.md, "Metropolis-adjusted step").
 * Evaluations carry a tiny noise (the group-loss callback needs one). */
static int quartic_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                        double *loss, void *user)
{
    const double *th = theta;
    double *g = grad, s = 0.0;
    (void)b;
    (void)user;
    for (size_t i = 0; i < d; i++) {
        g[i] = 4.0 * th[i] * th[i] * th[i];
        s += th[i] * th[i] * th[i] * th[i];
    }
    *loss = s;
    return 0;
}

static int quartic_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                         void *user)
{
    double l;
    quartic_grad(theta, d, b, (double[8]){0}, &l, user);
    quad_noisy_groups(b, l, 1e-7, gl);
    return 0;
}

/* t^2 Var[x^4] under exp(-t x^4 - x^2/(2 h^2)) by Simpson's rule on
 * |x| <= 8 t^(-1/4) (the density is below e^-4000 there). */
static double quartic_continuous(double t, double h)
{
    const int n = 20000;
    const double X = 8.0 * pow(t, -0.25), dx = 2.0 * X / n;
    double z = 0.0, m4 = 0.0, m8 = 0.0;
    for (int i = 0; i <= n; i++) {
        const double x = -X + i * dx, x4 = x * x * x * x;
        const double w = (i == 0 || i == n ? 1.0 : i % 2 ? 4.0 : 2.0) *
                         exp(-t * x4 - x * x / (2.0 * h * h));
        z += w;
        m4 += w * x4;
        m8 += w * x4 * x4;
    }
    m4 /= z;
    return t * t * (m8 / z - m4 * m4);
}

/* The quartic's model in d <= 8 dimensions. */
static sive_model quartic_model(size_t d)
{
    static quad_fixture q; /* the model's frame: its callbacks replaced */
    sive_model m = quad_fixture_model(&q, d);
    m.grad = quartic_grad;
    m.group_loss = quartic_group;
    return m;
}

START_TEST(position_dependent_step_exact)
{
    enum { QD = 4 };
    sive_model m = quartic_model(QD);
    sive_probe *p = k1_probe(20000, 16, 4, 2);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 0.3), SIVE_OK);
    sive_result *r = NULL;
    double th[QD] = {0};
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r);
    const double want = QD * quartic_continuous(T, 0.3), z = (lam - want) / se;
    const char *hl = sive_result_health(r);
    const char *b = hl ? strstr(hl, "median beta ") : NULL;
    const double beta = b ? atof(b + strlen("median beta ")) : NAN;
    printf("quartic x%d, metropolis with a position-dependent step (median beta %.3f): "
           "%.4f +- %.4f (continuous law %.4f): %+.2f %% (z %+.2f)\n", QD, beta, lam, se,
           want, 100.0 * (lam / want - 1.0), z);
    ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
    ck_assert_msg(se < 0.03 * want, "MCSE %.4g", se);
    /* the mechanism is exercised: the step shrinks away from theta* */
    ck_assert_msg(beta < -0.2, "beta %.3f", beta);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Hamiltonian steps (leapfrog K) and, with S > 0, the locally adaptive
 * step (experimental auto_step; docs/theory.md "Locally adaptive step"):
 * lambda-hat of model m at th (steps chain steps, 16 chains, every other
 * setting of k1_probe) within 3 MCSE of want, the MCSE below se_max of
 * it; the health line names the leapfrog moves (and the auto step's
 * gradient calls per step) and beta stays 0. */
static void ham_check(sive_model *m, const double *th, double h, int64_t steps, int64_t S,
                      int64_t K, int precond, double want, double se_max, const char *what)
{
    sive_probe *p = k1_probe(steps, 16, 4, 2);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, h), SIVE_OK);
    if (S)
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_AUTO_STEP, S), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, K), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, precond), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r), z = (lam - want) / se;
    const char *hl = sive_result_health(r), *as = strstr(hl, "auto_step ");
    ck_assert(!as == !S);
    printf("%s, %s %d, leapfrog %d%s: %.5f +- %.5f (continuous law %.5f): %+.2f %% "
           "(z %+.2f)\n  %s", what, S ? "auto_step" : "Hamiltonian steps, auto_step", (int)S,
           (int)K, precond ? ", preconditioned" : "", lam, se, want,
           100.0 * (lam / want - 1.0), z, S ? as : strstr(hl, "metropolis: tail acceptance"));
    ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
    ck_assert_msg(se < se_max * want, "MCSE %.4g", se);
    ck_assert_ptr_nonnull(strstr(hl, "leapfrog moves"));
    ck_assert_ptr_nonnull(strstr(hl, "median beta 0 (0 .. 0)"));
    /* the auto step adapts a toward the chosen steps, not an acceptance
     * target, and a move costs the trial trajectories' gradients (its own
     * line): the metropolis line says so, not "acceptance target 0.70" */
    ck_assert(!strstr(hl, "acceptance target") == !!S);
    ck_assert(!strstr(hl, "adapted toward the chosen steps") == !S);
    sive_result_free(r);
    sive_probe_free(p);
}

/* The locally adaptive step: 16 chains, 3 MCSE (ham_check). */
static void auto_check(sive_model *m, const double *th, double h, int64_t steps, int64_t S,
                       int64_t K, int precond, double want, const char *what)
{
    ham_check(m, th, h, steps, S, K, precond, want, 0.05, what);
}

/* L = u^2 v^2 (d = 2, theta* = 0): a funnel along each axis (at |u| the
 * curvature in v is 2 t u^2), no step fits everywhere. */
static int u2v2_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                     double *loss, void *user)
{
    const double *x = theta;
    double *g = grad;
    (void)d;
    (void)b;
    (void)user;
    g[0] = 2.0 * x[0] * x[1] * x[1];
    g[1] = 2.0 * x[1] * x[0] * x[0];
    *loss = x[0] * x[0] * x[1] * x[1];
    return 0;
}

static int u2v2_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                      void *user)
{
    double l, g[2];
    u2v2_grad(theta, d, b, g, &l, user);
    quad_noisy_groups(b, l, 1e-7, gl);
    return 0;
}

/* The funnel u^2 v^2's model (d = 2). */
static sive_model u2v2_model(void)
{
    static quad_fixture q; /* the model's frame: its callbacks replaced */
    sive_model m = quad_fixture_model(&q, 2);
    m.grad = u2v2_grad;
    m.group_loss = u2v2_group;
    return m;
}

START_TEST(auto_step_exact)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-6};
    sive_model k1 = quad_fixture_model(&q, 1);
    double th1 = 0.2;
    auto_check(&k1, &th1, 2.0, 10000, 4, 1, 0, k1_continuous(2.0), "K1");
    double tha[AD], want;
    sive_model an = aniso_model(tha, 2.0, &want);
    auto_check(&an, tha, 2.0, 4000, 4, 4, 1, want, "anisotropic quadratic");
    auto_check(&an, tha, 2.0, 10000, 4, 1, 0, want, "anisotropic quadratic");
    enum { QD = 4 };
    sive_model qm = quartic_model(QD);
    double thq[QD] = {0};
    const double wq = QD * quartic_continuous(T, 0.3);
    auto_check(&qm, thq, 0.3, 10000, 4, 1, 0, wq, "quartic x4");
    auto_check(&qm, thq, 0.3, 4000, 4, 4, 0, wq, "quartic x4");
}
END_TEST

START_TEST(auto_step_funnel)
{
    sive_model m = u2v2_model();
    double th[2] = {0.0, 0.0};
    const double want = u2v2_continuous(T, 1.0);
    auto_check(&m, th, 1.0, 10000, 6, 1, 0, want, "u^2 v^2");
    auto_check(&m, th, 1.0, 4000, 6, 4, 0, want, "u^2 v^2");
}
END_TEST

/* auto_step 0 set is the sampler without it, bit for bit; without
 * metropolis it is refused. */
START_TEST(auto_step_off_same_bits)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-4};
    sive_model m = quad_fixture_model(&q, 3);
    double th[3] = {0.2, -0.1, 0.05}, lam[4];
    for (int k = 0; k < 4; k++) {
        sive_probe *p = k1_probe(3000, 2, 8, 1);
        if (k / 2)
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 4), SIVE_OK);
        if (k % 2)
            ck_assert_int_eq(sive_probe_set_text(p, "auto_step", "0"), SIVE_OK);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
        lam[k] = sive_result_lambda(r);
        ck_assert_ptr_null(strstr(sive_result_health(r), "auto_step"));
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert(memcmp(&lam[0], &lam[1], sizeof lam[0]) == 0);
    ck_assert(memcmp(&lam[2], &lam[3], sizeof lam[0]) == 0);
    sive_probe *p = k1_probe(3000, 2, 8, 1);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "0"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_AUTO_STEP, 3), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "auto_step"));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_AUTO_STEP, 31), SIVE_E_INVALID_ARG);
    /* with delayed_rejection too: two step controls, refused by name */
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DELAYED_REJECTION, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "delayed_rejection"));
    sive_probe_free(p);
}
END_TEST

/* auto_step's tallies are published: SIVE_STAT_AUTO_STEP_GRADS (the
 * tail's gradient calls per step) and _RESCALED (the share of tail moves
 * whose step was halved or doubled) per chain, their summary the mean
 * over chains, as the health line gives them (pooled over the moves:
 * the chains' tails are equally long); measured while the chains step,
 * NaN after a save and load or a merge (lambda-hat unchanged), and
 * without auto_step. */
START_TEST(auto_step_stats_published)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-4};
    sive_model m = quad_fixture_model(&q, 3);
    double th[3] = {0.2, -0.1, 0.05};
    sive_result *r = NULL, *part[2] = {NULL, NULL};
    for (int k = 0; k < 3; k++) { /* the whole run, then chains 0..1 and 2..3 */
        sive_probe *p = k1_probe(3000, 4, 8, 2);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_AUTO_STEP, 4), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 2), SIVE_OK);
        if (k) {
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, 2 * (k - 1)), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, 2 * k), SIVE_OK);
        }
        ck_assert_int_eq(sive_probe_run(p, &m, th, k ? &part[k - 1] : &r), SIVE_OK);
        sive_probe_free(p);
    }
    const sive_stat st[2] = {SIVE_STAT_AUTO_STEP_GRADS, SIVE_STAT_AUTO_STEP_RESCALED};
    for (int i = 0; i < 2; i++) {
        double sum = 0.0;
        for (int32_t c = 0; c < 4; c++) {
            const double v = sive_result_stat(r, st[i], c);
            ck_assert_msg(i ? v >= 0.0 && v <= 1.0 : v >= 1.0, "%s chain %d: %g",
                          sive_stat_name(st[i]), (int)c, v);
            sum += v;
        }
        ck_assert_double_eq_tol(sive_result_stat(r, st[i], SIVE_SUMMARY), sum / 4, 1e-12);
        ck_assert(isfinite(sive_result_stat_std(r, st[i])));
    }
    const double grads = sive_result_stat(r, SIVE_STAT_AUTO_STEP_GRADS, SIVE_SUMMARY),
                 rescaled = sive_result_stat(r, SIVE_STAT_AUTO_STEP_RESCALED, SIVE_SUMMARY);
    const char *hl = sive_result_health(r), *a = strstr(hl, "tail gradient calls per step ");
    const char *j0 = strstr(hl, " +0 ");
    double hg = NAN, h0 = NAN;
    ck_assert(a && j0 && sscanf(a, "tail gradient calls per step %lf", &hg) == 1 &&
              sscanf(j0, " +0 %lf", &h0) == 1);
    printf("auto_step 4, leapfrog 2: %s %.4f (health %.3g), %s %.4f (health: j = 0 on %.3f)\n",
           sive_stat_name(st[0]), grads, hg, sive_stat_name(st[1]), rescaled, h0);
    ck_assert_msg(fabs(grads - hg) <= 0.006 * hg, "%g vs %g", grads, hg);
    ck_assert_msg(fabs(rescaled - (1.0 - h0)) <= 0.0006, "%g vs 1 - %g", rescaled, h0);
    /* run-only: NaN after a save and load, or a merge */
    void *bytes = NULL;
    size_t len = 0;
    sive_result *back = NULL, *merged = NULL;
    ck_assert_int_eq(sive_result_to_bytes(r, NULL, &bytes, &len), SIVE_OK);
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    sive_free(bytes);
    ck_assert_int_eq(sive_result_merge(&merged, (const sive_result *const *)part, 2), SIVE_OK);
    ck_assert(sive_result_lambda(back) == sive_result_lambda(r));
    ck_assert(sive_result_lambda(merged) == sive_result_lambda(r));
    for (int i = 0; i < 2; i++) {
        ck_assert(isfinite(sive_result_stat(part[0], st[i], SIVE_SUMMARY)));
        ck_assert(isnan(sive_result_stat(back, st[i], SIVE_SUMMARY)));
        ck_assert(isnan(sive_result_stat(back, st[i], 0)));
        ck_assert(isnan(sive_result_stat(merged, st[i], SIVE_SUMMARY)));
    }
    sive_result_free(back);
    sive_result_free(merged);
    sive_result_free(part[0]);
    sive_result_free(part[1]);
    sive_result_free(r);
    /* without auto_step: NaN */
    sive_probe *p = k1_probe(3000, 2, 8, 1);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
    for (int i = 0; i < 2; i++)
        ck_assert(isnan(sive_result_stat(r, st[i], SIVE_SUMMARY)) &&
                  isnan(sive_result_stat(r, st[i], 0)));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Pairs of runs that must give the same bits, without (k = 0, 1) and with
 * (k = 2, 3) the preconditioner: 1 and 2 threads, or (leapfrog1) the
 * leapfrog option unset and set to 1; the preconditioner changes them. */
static void same_bits_pairs(sive_model *m, const double *th, int64_t steps, int64_t chains,
                            int leapfrog1)
{
    double lam[4];
    for (int k = 0; k < 4; k++) {
        sive_probe *p = k1_probe(steps, chains, 8, leapfrog1 ? 1 : k % 2 + 1);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, k / 2), SIVE_OK);
        if (leapfrog1 && k % 2)
            ck_assert_int_eq(sive_probe_set_text(p, "leapfrog", "1"), SIVE_OK);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
        lam[k] = sive_result_lambda(r);
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert(memcmp(&lam[0], &lam[1], sizeof lam[0]) == 0);
    ck_assert(memcmp(&lam[2], &lam[3], sizeof lam[0]) == 0);
    ck_assert(lam[0] != lam[2]);
}

/* Hamiltonian steps: lambda-hat of model m at th with leapfrog K (steps
 * chain steps, 16 chains, every other setting of k1_probe), within 3 MCSE
 * of want; the health line names the leapfrog moves and beta stays 0. */
static void hmc_check(sive_model *m, const double *th, double h, int64_t steps, int64_t K,
                      int precond, double want, const char *what)
{
    ham_check(m, th, h, steps, 0, K, precond, want, 0.04, what);
}

START_TEST(hmc_exact)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-6};
    sive_model k1 = quad_fixture_model(&q, 1);
    double th1 = 0.2;
    hmc_check(&k1, &th1, 2.0, 10000, 4, 0, k1_continuous(2.0), "K1");
    double tha[AD], want;
    sive_model an = aniso_model(tha, 2.0, &want);
    hmc_check(&an, tha, 2.0, 5000, 4, 1, want, "anisotropic quadratic");
    enum { QD = 4 };
    sive_model qm = quartic_model(QD);
    double thq[QD] = {0};
    hmc_check(&qm, thq, 0.3, 5000, 4, 0, QD * quartic_continuous(T, 0.3), "quartic x4");
}
END_TEST

/* 16 chains of k1_probe with radius h, the sampler's options set by the
 * caller on the probe it returns (run_z runs it). */
static sive_probe *exact_probe(int64_t steps, double h)
{
    sive_probe *p = k1_probe(steps, 16, 4, 2);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, h), SIVE_OK);
    return p;
}

/* Runs p on m at th (status SIVE_OK): the result, and lambda-hat, its
 * MCSE and z against want; frees p. */
static sive_result *run_z(sive_probe *p, sive_model *m, const double *th, double want,
                          double *lam, double *se, double *z)
{
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    *lam = sive_result_lambda(r);
    *se = sive_result_mcse(r);
    *z = (*lam - want) / *se;
    sive_probe_free(p);
    return r;
}

/* Delayed rejection (factor k) on Hamiltonian steps (leapfrog K): as
 * hmc_check, and the second stage ran and accepted some proposals (the
 * health line's counts). */
static void drhmc_check(sive_model *m, const double *th, double h, int64_t steps, int64_t K,
                        int64_t k, int precond, double want, const char *what)
{
    sive_probe *p = exact_probe(steps, h);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, K), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DELAYED_REJECTION, k), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, precond), SIVE_OK);
    double lam, se, z;
    sive_result *r = run_z(p, m, th, want, &lam, &se, &z);
    const char *hl = sive_result_health(r), *dr = strstr(hl, "delayed rejection");
    printf("%s, delayed rejection %d (leapfrog %d): %.5f +- %.5f (law %.5f): %+.2f %% "
           "(z %+.2f)\n  %s", what, (int)k, (int)K, lam, se, want,
           100.0 * (lam / want - 1.0), z, dr ? dr : hl);
    ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
    ck_assert_msg(se < 0.05 * want, "MCSE %.4g", se);
    ck_assert_ptr_nonnull(dr);
    const char *a2 = strstr(dr, "accepted ");
    a2 = a2 ? strstr(a2 + 9, "accepted ") : NULL; /* the second stage's */
    ck_assert_msg(a2 && atof(a2 + 9) > 0.0, "%s", dr);
    sive_result_free(r);
}

/* The funnel L = u^2 v^2 around theta* = 0: where |u| is large v is stiff
 * (curvature 2 t u^2) and the other way round, so no one leapfrog step
 * fits the whole law (the geometry of a null sub-network). */
static int funnel_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                       double *loss, void *user)
{
    (void)d;
    (void)b;
    (void)user;
    const double *th = theta;
    double *g = grad;
    g[0] = 2.0 * th[0] * th[1] * th[1];
    g[1] = 2.0 * th[0] * th[0] * th[1];
    *loss = th[0] * th[0] * th[1] * th[1];
    return 0;
}

static int funnel_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                        void *user)
{
    double l;
    funnel_grad(theta, d, b, (double[2]){0}, &l, user);
    quad_noisy_groups(b, l, 1e-7, gl);
    return 0;
}

START_TEST(drhmc_exact)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-6};
    sive_model k1 = quad_fixture_model(&q, 1);
    double th1 = 0.2;
    drhmc_check(&k1, &th1, 2.0, 8000, 4, 3, 0, k1_continuous(2.0), "K1");
    static quad_fixture unused;
    sive_model an = quad_fixture_model(&unused, AD);
    an.grad = aniso_grad;
    an.group_loss = aniso_group;
    double tha[AD] = {0.2, -0.1, 0.05, 0.02}, want = 0.0;
    for (int i = 0; i < AD; i++) {
        double prec = T * aniso_k[i] + 1.0 / 4.0, s2 = 1.0 / prec, mu = tha[i] / 4.0 / prec;
        want += T * T * aniso_k[i] * aniso_k[i] * (mu * mu * s2 + 0.5 * s2 * s2);
    }
    drhmc_check(&an, tha, 2.0, 4000, 4, 2, 1, want, "anisotropic quadratic, preconditioned");
    enum { QD = 4 };
    static quad_fixture qq;
    sive_model qm = quad_fixture_model(&qq, QD);
    qm.grad = quartic_grad;
    qm.group_loss = quartic_group;
    double thq[QD] = {0};
    drhmc_check(&qm, thq, 0.3, 4000, 4, 4, 0, QD * quartic_continuous(T, 0.3), "quartic x4");
    static quad_fixture fq;
    sive_model fm = quad_fixture_model(&fq, 2);
    fm.grad = funnel_grad;
    fm.group_loss = funnel_group;
    double thf[2] = {0};
    drhmc_check(&fm, thf, 1.0, 8000, 4, 4, 0, u2v2_continuous(T, 1.0), "funnel u^2 v^2");
}
END_TEST

/* delayed_rejection 0 and 1 are the sampler without it, bit for bit (with
 * leapfrog 4); above 1 without leapfrog >= 2 it is refused. */
static void drhmc_off_bits(sive_model *m, const double *th)
{
    double lam[3];
    for (int k = 0; k < 3; k++) {
        sive_probe *p = k1_probe(2000, 2, 8, 1);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 4), SIVE_OK);
        if (k)
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DELAYED_REJECTION, k - 1),
                             SIVE_OK);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
        lam[k] = sive_result_lambda(r);
        ck_assert_ptr_null(strstr(sive_result_health(r), "delayed rejection"));
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert(memcmp(&lam[0], &lam[1], sizeof lam[0]) == 0);
    ck_assert(memcmp(&lam[0], &lam[2], sizeof lam[0]) == 0);
    sive_probe *p = k1_probe(2000, 2, 8, 1);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DELAYED_REJECTION, 2), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "delayed_rejection"));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DELAYED_REJECTION, 65), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}

/* leapfrog > 1 without metropolis is refused; 0 is out of bounds. */
static void leapfrog_refusal(sive_model *m, const double *th)
{
    sive_probe *p = k1_probe(3000, 2, 8, 1);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "0"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 2), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "leapfrog"));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 0), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}

static int grad_no_loss(const void *theta, size_t d, const sive_batch *b, void *grad,
                        double *loss, void *user)
{
    (void)loss;
    return quad_fixture_grad(theta, d, b, grad, &(double){0.0}, user);
}

START_TEST(refusals)
{
    static lsq m;
    lsq_make(&m, 7);
    sive_model sm;
    lsq_model(&sm, &m);
    sive_result *r = NULL;
    sive_probe *p = lsq_probe(1000, 2, 4, 4);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    /* the default mini-batch of 1024 with replacement: not the exact loss */
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "grad_batch"));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, NEX), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEP_EXTRAPOLATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "step_extrapolate"));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEP_EXTRAPOLATE, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    sive_result_free(r);
    sive_probe_free(p);
    /* a gradient callback that stores no loss */
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-6};
    sive_model qm = quad_fixture_model(&q, 1);
    qm.grad = grad_no_loss;
    p = k1_probe(1000, 1, 4, 1);
    double th = 0.2;
    ck_assert_int_eq(sive_probe_run(p, &qm, &th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "exact loss"));
    sive_probe_free(p);
}
END_TEST

START_TEST(threads_same_bits)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-4};
    sive_model m = quad_fixture_model(&q, 3);
    double th[3] = {0.2, -0.1, 0.05};
    same_bits_pairs(&m, th, 4000, 4, 0);
    /* leapfrog 1 is the Langevin proposal bit for bit */
    same_bits_pairs(&m, th, 3000, 2, 1);
    leapfrog_refusal(&m, th);
    drhmc_off_bits(&m, th);
}
END_TEST

/* Replica exchange: lambda-hat of model m at th (steps chain steps, 16
 * chains, R rungs at t/q^k, leapfrog K) within 3 MCSE of want, the MCSE
 * below 5 % of it; the health line gives the swaps, whose acceptance is
 * within (0.05, 1): exercised, and not trivially all accepted. */
static void replica_check(sive_model *m, const double *th, double h, int64_t steps, int64_t R,
                          double q, int64_t K, double want, const char *what)
{
    sive_probe *p = exact_probe(steps, h);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLICAS, R), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_REPLICA_RATIO, q), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, K), SIVE_OK);
    double lam, se, z;
    sive_result *r = run_z(p, m, th, want, &lam, &se, &z);
    const char *hl = sive_result_health(r), *rl = strstr(hl, "replicas ");
    ck_assert_ptr_nonnull(rl);
    const char *a = strstr(rl, "chains: ");
    ck_assert_ptr_nonnull(a);
    const double swap01 = atof(a + strlen("chains: "));
    printf("%s, replicas %d, q %g, leapfrog %d: %.5f +- %.5f (continuous law %.5f): "
           "%+.2f %% (z %+.2f)\n  %s", what, (int)R, q, (int)K, lam, se, want,
           100.0 * (lam / want - 1.0), z, rl);
    ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
    ck_assert_msg(se < 0.05 * want, "MCSE %.4g", se);
    ck_assert_msg(swap01 > 0.05 && swap01 < 1.0, "swap acceptance %.3f", swap01);
    sive_result_free(r);
}

START_TEST(replica_exact)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-6};
    sive_model k1 = quad_fixture_model(&q, 1);
    double th1 = 0.2;
    replica_check(&k1, &th1, 2.0, 10000, 4, 4.0, 1, k1_continuous(2.0), "K1");
    replica_check(&k1, &th1, 2.0, 4000, 3, 4.0, 4, k1_continuous(2.0), "K1");
    enum { QD = 4 };
    sive_model qm = quartic_model(QD);
    double thq[QD] = {0};
    replica_check(&qm, thq, 0.3, 10000, 4, 2.0, 1, QD * quartic_continuous(T, 0.3),
                  "quartic x4");
    sive_model fm = u2v2_model();
    double thf[2] = {0};
    replica_check(&fm, thf, 1.0, 40000, 4, 4.0, 1, u2v2_continuous(T, 1.0), "u^2 v^2");
}
END_TEST

/* replicas 1 (with any replica_ratio) is the sampler without it, bit for
 * bit; replicas 3 gives the same bits on 1 and 2 threads; refused without
 * metropolis and with auto_step. */
START_TEST(replica_bits)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-4};
    sive_model m = quad_fixture_model(&q, 3);
    double th[3] = {0.2, -0.1, 0.05}, lam[5];
    for (int k = 0; k < 5; k++) {
        sive_probe *p = k1_probe(2000, 4, 8, k == 4 ? 2 : 1);
        if (k >= 1)
            ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_REPLICA_RATIO, 3.0), SIVE_OK);
        if (k >= 2)
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLICAS, k == 2 ? 1 : 3), SIVE_OK);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_OK);
        lam[k] = sive_result_lambda(r);
        ck_assert(!strstr(sive_result_health(r), "replicas ") == (k < 3));
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert(memcmp(&lam[0], &lam[1], sizeof lam[0]) == 0);
    ck_assert(memcmp(&lam[0], &lam[2], sizeof lam[0]) == 0);
    ck_assert(lam[0] != lam[3]);
    ck_assert(memcmp(&lam[3], &lam[4], sizeof lam[0]) == 0);
    sive_probe *p = k1_probe(2000, 2, 8, 1);
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "0"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLICAS, 2), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "replicas"));
    ck_assert_int_eq(sive_probe_set_text(p, "metropolis", "1"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_AUTO_STEP, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, th, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "auto_step"));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLICAS, 65), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_REPLICA_RATIO, 1.0), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

/* The quadratic of quad.h as a float32 model: theta and the gradient in
 * float, the loss and the group losses in double from the float theta. */
static int quad32_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                       double *loss, void *user)
{
    const quad_fixture *q = user;
    const float *th = theta;
    float *g = grad;
    double s = 0.0;
    (void)b;
    for (size_t i = 0; i < d; i++) {
        g[i] = (float)(q->k * th[i]);
        s += (double)th[i] * th[i];
    }
    *loss = q->l0 + 0.5 * q->k * s;
    return 0;
}

static int quad32_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                        void *user)
{
    const quad_fixture *q = user;
    const float *th = theta;
    double s = 0.0;
    for (size_t i = 0; i < d; i++)
        s += (double)th[i] * th[i];
    quad_noisy_groups(b, q->l0 + 0.5 * q->k * s, q->sigma, gl);
    return 0;
}

static sive_model quad32_model(quad_fixture *q, size_t dim)
{
    sive_model m = quad_fixture_model(q, dim);
    m.dtype = SIVE_F32;
    m.grad = quad32_grad;
    m.group_loss = quad32_group;
    return m;
}

/* replicas with a float32 model (SIVE_F32): K1 against its continuous law
 * within 3 MCSE with the swaps exercised (as replica_exact), replicas 1 the
 * sampler's bits, 1 and 2 threads the same bits, and a save and load gives
 * the run's numbers and dtype. */
START_TEST(replica_f32)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0, .sigma = 1e-6};
    sive_model m32 = quad32_model(&q, 1);
    const float th32 = 0.2f;
    double lam, se, z;
    sive_probe *p = exact_probe(10000, 2.0);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLICAS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_REPLICA_RATIO, 4.0), SIVE_OK);
    /* the continuous law at theta* = (float)0.2 */
    const double hh = 2.0, prec = 2.0 * T + 1.0 / (hh * hh), s2 = 1.0 / prec,
                 mu = (double)th32 / (hh * hh) / prec,
                 want = T * T * (4.0 * mu * mu * s2 + 2.0 * s2 * s2);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m32, &th32, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    ck_assert_int_eq(sive_result_dtype(r), SIVE_F32);
    lam = sive_result_lambda(r);
    se = sive_result_mcse(r);
    z = (lam - want) / se;
    const char *rl = strstr(sive_result_health(r), "replicas ");
    ck_assert_ptr_nonnull(rl);
    const char *a = strstr(rl, "chains: ");
    ck_assert_ptr_nonnull(a);
    const double swap01 = atof(a + strlen("chains: "));
    printf("K1 float32, replicas 4, q 4: %.5f +- %.5f (continuous law %.5f): %+.2f %% "
           "(z %+.2f)\n  %s", lam, se, want, 100.0 * (lam / want - 1.0), z, rl);
    ck_assert_msg(fabs(z) < 3.0, "z %.2f", z);
    ck_assert_msg(se < 0.05 * want, "MCSE %.4g", se);
    ck_assert_msg(swap01 > 0.05 && swap01 < 1.0, "swap acceptance %.3f", swap01);
    void *bytes = NULL;
    size_t len = 0;
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_to_bytes(r, NULL, &bytes, &len), SIVE_OK);
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    ck_assert_int_eq(sive_result_dtype(back), SIVE_F32);
    const double lb = sive_result_lambda(back);
    ck_assert(memcmp(&lam, &lb, sizeof lb) == 0);
    sive_free(bytes);
    sive_result_free(back);
    sive_result_free(r);
    sive_probe_free(p);
    /* bits: replicas 1 = off; replicas 3 on 1 and 2 threads */
    static quad_fixture q3 = {.k = 2.0, .l0 = 1.0, .sigma = 1e-4};
    sive_model m3 = quad32_model(&q3, 3);
    const float th3[3] = {0.2f, -0.1f, 0.05f};
    double l[4];
    for (int k = 0; k < 4; k++) {
        p = k1_probe(2000, 4, 8, k == 3 ? 2 : 1);
        if (k >= 1)
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLICAS, k == 1 ? 1 : 3),
                             SIVE_OK);
        ck_assert_int_eq(sive_probe_run(p, &m3, th3, &r), SIVE_OK);
        ck_assert_int_eq(sive_result_status(r), SIVE_OK);
        l[k] = sive_result_lambda(r);
        ck_assert(isfinite(l[k]));
        ck_assert(!strstr(sive_result_health(r), "replicas ") == (k < 2));
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert(memcmp(&l[0], &l[1], sizeof l[0]) == 0);
    ck_assert(l[0] != l[2]);
    ck_assert(memcmp(&l[2], &l[3], sizeof l[0]) == 0);
    /* the float model's rounding only: near the float64 model's numbers,
     * not its bits; with Hamiltonian rungs and a preconditioner as well */
    sive_model m64 = quad_fixture_model(&q3, 3);
    const double th64[3] = {th3[0], th3[1], th3[2]};
    for (int k = 0; k < 2; k++) {
        double x[2];
        for (int f = 0; f < 2; f++) {
            p = k1_probe(2000, 4, 8, 1);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLICAS, 3), SIVE_OK);
            if (k) {
                ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 3), SIVE_OK);
                ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, 1), SIVE_OK);
            }
            ck_assert_int_eq(f ? sive_probe_run(p, &m64, th64, &r)
                               : sive_probe_run(p, &m3, th3, &r), SIVE_OK);
            ck_assert_int_eq(sive_result_status(r), SIVE_OK);
            x[f] = sive_result_lambda(r);
            sive_result_free(r);
            sive_probe_free(p);
        }
        printf("K1 x3 replicas 3%s: float32 %.9g, float64 %.9g\n",
               k ? ", leapfrog 3, precondition" : "", x[0], x[1]);
        ck_assert_msg(fabs(x[0] - x[1]) < 1e-3 * fabs(x[1]), "%.9g vs %.9g", x[0], x[1]);
        ck_assert(x[0] != x[1]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("metropolis");
    TCase *tc = tcase_create("metropolis");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, k1_exact);
    tcase_add_test(tc, k1_exact_noisy);
    tcase_add_test(tc, lsq_full_batch_exact);
    tcase_add_test(tc, k1_exact_precond);
    tcase_add_test(tc, aniso_exact_precond);
    tcase_add_test(tc, lsq_full_batch_exact_precond);
    tcase_add_test(tc, position_dependent_step_exact);
    tcase_add_test(tc, auto_step_exact);
    tcase_add_test(tc, auto_step_funnel);
    tcase_add_test(tc, auto_step_off_same_bits);
    tcase_add_test(tc, auto_step_stats_published);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, threads_same_bits);
    tcase_add_test(tc, hmc_exact);
    tcase_add_test(tc, drhmc_exact);
    suite_add_tcase(s, tc);
    TCase *tr = tcase_create("replica");
    tcase_set_timeout(tr, 300);
    tcase_add_test(tr, replica_exact);
    tcase_add_test(tr, replica_bits);
    tcase_add_test(tr, replica_f32);
    suite_add_tcase(s, tr);
    return check_run(s);
}
