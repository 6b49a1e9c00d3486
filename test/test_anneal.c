/* The annealed burn-in (experimental option anneal; docs/theory.md,
 * "Annealed burn-in") and its start test (SIVE_STAT_START_Z,
 * SIVE_FLAG_START_DEPENDENT):
 *  - the odd chains, started cold, are the chains of a run without the
 *    option bit for bit (ULA and metropolis), the even ones differ;
 *    anneal 1 is the run without the option; the start test is NaN and
 *    the flag down without the option or with one chain;
 *  - the start test's two parts (SIVE_STAT_START_Z_LAMBDA, _MEAN) are
 *    sivei_start_test's z, START_Z their combination, in the health line,
 *    bit for bit after a save and load, NaN without the option;
 *  - the tail's law is the law at t: K1 (K = 1 + x^2, theta* = 0.2,
 *    t = 10^4, h = 2) with metropolis and anneal 1000 within 4 MCSE of the
 *    continuous law, and the flag down on K1 and on an isotropic
 *    quadratic (d = 10) under ULA over several seeds (stationary by
 *    construction: a raised flag there is a false alarm);
 *  - the flag fires on a slow mode: coordinates with two wells behind a
 *    barrier that chains started at theta* never cross at t, and hot
 *    chains cross at t/kappa;
 *  - with Hamiltonian steps (leapfrog 4) too: the hot chains' trajectories
 *    run on U at t/kappa (they cross the wells' barrier), the step frozen
 *    for the tail is adapted at t (the tail's acceptance near the 0.70 it
 *    was adapted to, and K1's law at t within 4 MCSE at anneal 1000);
 *  - and with delayed rejection (delayed_rejection 2) on those steps: its
 *    second stage and ghost run at the chain's t too (the hot chains cross
 *    the barrier; K1's law at t within 4 MCSE at anneal 1000);
 *  - the test's null distribution: on an isotropic quadratic its two Welch
 *    z (lambda-hat, t times the mean tail loss; sivei_start_test) have mean
 *    ~ 0 and standard deviation ~ 1 over 400 runs, and start_dependent is
 *    raised in no more runs than a binomial tolerance about the nominal
 *    0.27 % allows; sivei_t_as_z against Student's t quantiles.
 * Linked with the internal archive for sivei_start_test.  The test's power
 * on the deep networks: docs/validation.md, "The start test's power". */
#define SIVE_EXPERIMENTAL
#include <check.h>
#include <sive/sive.h>

#include "check_run.h"
#include "probe_impl.h"
#include "quad.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sive_probe *probe(double t, double h, int64_t steps, int64_t chains, int64_t seed,
                         int metropolis, double anneal)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, t), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, h), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, chains), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, seed), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_METROPOLIS, metropolis), SIVE_OK);
    if (anneal > 0.0)
        ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANNEAL, anneal), SIVE_OK);
    return p;
}

static sive_result *run(sive_probe *p, sive_model *m, const double *th)
{
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, m, th, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    sive_probe_free(p);
    return r;
}

static double chain_lam(const sive_result *r, int c)
{
    return sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c);
}

START_TEST(cold_chains_are_the_plain_chains)
{
    /* weakly curved: a chain forgets its start slowly, so the hot
     * chains' tails differ in the last bits too */
    static quad_fixture q = {.k = 0.002, .l0 = 1.0, .sigma = 1e-4};
    sive_model m = quad_fixture_model(&q, 3);
    const double th[3] = {0.2, -0.1, 0.05};
    for (int metro = 0; metro <= 1; metro++) {
        sive_result *plain = run(probe(1e4, 0.5, 3000, 4, 7, metro, 0.0), &m, th);
        sive_result *one = run(probe(1e4, 0.5, 3000, 4, 7, metro, 1.0), &m, th);
        sive_result *hot = run(probe(1e4, 0.5, 3000, 4, 7, metro, 100.0), &m, th);
        for (int c = 0; c < 4; c++) {
            ck_assert(chain_lam(one, c) == chain_lam(plain, c));
            if (c & 1) /* cold: today's chain */
                ck_assert(chain_lam(hot, c) == chain_lam(plain, c));
            else
                ck_assert(chain_lam(hot, c) != chain_lam(plain, c));
        }
        ck_assert(isnan(sive_result_stat(plain, SIVE_STAT_START_Z, SIVE_SUMMARY)));
        ck_assert(isnan(sive_result_stat(one, SIVE_STAT_START_Z, SIVE_SUMMARY)));
        ck_assert(isfinite(sive_result_stat(hot, SIVE_STAT_START_Z, SIVE_SUMMARY)));
        ck_assert(!(sive_result_flags(plain) & SIVE_FLAG_START_DEPENDENT));
        ck_assert_ptr_nonnull(strstr(sive_result_health(hot), "anneal 100: the chains started hot"));
        sive_result_free(plain);
        sive_result_free(one);
        sive_result_free(hot);
    }
    /* one chain: nothing to compare */
    sive_result *r = run(probe(1e4, 0.5, 3000, 1, 7, 1, 100.0), &m, th);
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_START_Z, SIVE_SUMMARY)));
    sive_result_free(r);
}
END_TEST

/* A result through sive_result_to_bytes() and sive_result_from_bytes(). */
static sive_result *round_trip(const sive_result *r)
{
    void *bytes = NULL;
    size_t len = 0;
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_to_bytes(r, NULL, &bytes, &len), SIVE_OK);
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    sive_free(bytes);
    return back;
}

static int same_bits(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* The start test's two parts are published: START_Z_LAMBDA and
 * START_Z_MEAN are sivei_start_test's Welch z of lambda-hat and of t
 * times the tail mean loss, START_Z their Bonferroni combination (the
 * part with the larger |z|, its tail probability doubled), the health
 * line prints them; recomputed from the traces, they survive a save and
 * load bit for bit; NaN without the option or with one chain. */
START_TEST(start_z_parts_published)
{
    static quad_fixture q = {.k = 0.002, .l0 = 1.0, .sigma = 1e-4};
    sive_model m = quad_fixture_model(&q, 3);
    const double th[3] = {0.2, -0.1, 0.05};
    static const sive_stat parts[3] = {SIVE_STAT_START_Z, SIVE_STAT_START_Z_LAMBDA,
                                       SIVE_STAT_START_Z_MEAN};
    sive_result *hot = run(probe(1e4, 0.5, 3000, 4, 7, 1, 100.0), &m, th);
    sivei_start st;
    ck_assert_int_eq(sivei_start_test(hot, &st), SIVE_OK);
    const double zl = sive_result_stat(hot, SIVE_STAT_START_Z_LAMBDA, SIVE_SUMMARY),
                 zm = sive_result_stat(hot, SIVE_STAT_START_Z_MEAN, SIVE_SUMMARY),
                 z = sive_result_stat(hot, SIVE_STAT_START_Z, SIVE_SUMMARY);
    printf("start test: z %+.4f of lambda-hat %+.4f and t mean loss %+.4f\n", z, zl, zm);
    ck_assert(isfinite(zl) && isfinite(zm));
    ck_assert(zl == st.z[0] && zm == st.z[1] && z == st.zmin);
    const double big = fabs(zl) > fabs(zm) ? zl : zm;
    ck_assert(fabs(z) <= fabs(big) && (z == 0.0 || (z > 0.0) == (big > 0.0)));
    for (int i = 0; i < 3; i++) { /* summary only */
        ck_assert(isnan(sive_result_stat(hot, parts[i], 0)));
        ck_assert(isnan(sive_result_stat_std(hot, parts[i])));
    }
    char want[160];
    snprintf(want, sizeof want, "(z %+.2f, ", zl);
    ck_assert_ptr_nonnull(strstr(sive_result_health(hot), want));
    snprintf(want, sizeof want, "(z %+.2f, ", zm);
    ck_assert_ptr_nonnull(strstr(sive_result_health(hot), want));
    sive_result *back = round_trip(hot);
    for (int i = 0; i < 3; i++)
        ck_assert(same_bits(sive_result_stat(back, parts[i], SIVE_SUMMARY),
                            sive_result_stat(hot, parts[i], SIVE_SUMMARY)));
    sive_result_free(back);
    sive_result_free(hot);
    sive_result *plain = run(probe(1e4, 0.5, 3000, 4, 7, 1, 0.0), &m, th);
    sive_result *one = run(probe(1e4, 0.5, 3000, 1, 7, 1, 100.0), &m, th);
    for (int i = 0; i < 3; i++) {
        ck_assert(isnan(sive_result_stat(plain, parts[i], SIVE_SUMMARY)));
        ck_assert(isnan(sive_result_stat(one, parts[i], SIVE_SUMMARY)));
    }
    sive_result_free(plain);
    sive_result_free(one);
}
END_TEST

/* A burn-in without a first quarter (floor(burn_in * steps) < 4: burn_in
 * 0, say) has no step to run hot: anneal > 1 was a silent no-op whose
 * start test still reported "the chains started hot"; it is refused. */
START_TEST(refused_without_a_hot_phase)
{
    static quad_fixture q = {.k = 0.002, .l0 = 1.0, .sigma = 1e-4};
    sive_model m = quad_fixture_model(&q, 3);
    const double th[3] = {0.2, -0.1, 0.05};
    const struct {
        double burn_in;
        int64_t steps;
        int ok;
    } cases[] = {{0.0, 3000, 0}, {0.3, 10, 0}, {0.4, 10, 1}, {0.3, 3000, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sive_probe *p = probe(1e4, 0.5, cases[i].steps, 2, 7, 0, 4.0);
        ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, cases[i].burn_in), SIVE_OK);
        sive_result *r = NULL;
        const int rc = sive_probe_run(p, &m, th, &r);
        if (cases[i].ok) {
            ck_assert_msg(rc == SIVE_OK, "case %zu: %s", i, sive_probe_errmsg(p));
        } else {
            ck_assert_int_eq(rc, SIVE_E_INVALID_ARG);
            ck_assert_ptr_null(r);
            ck_assert_msg(strstr(sive_probe_errmsg(p), "anneal 4"), "%s", sive_probe_errmsg(p));
        }
        sive_result_free(r);
        sive_probe_free(p);
    }
}
END_TEST

/* The start line names its estimates as every health line does: a group's
 * "lambda-hat X" is its chains' reported (clipped) estimates' mean, with
 * the unclipped mean the test compares named beside it when they differ;
 * noise-dominated chains (sigma 0.05, 2 groups) give negative unclipped
 * group means, which read "lambda-hat -1.328". */
START_TEST(start_line_names_the_unclipped)
{
    static quad_fixture q = {.k = 1.0, .l0 = 1.0, .sigma = 0.05};
    sive_model m = quad_fixture_model(&q, 2);
    const double th[2] = {0.2, -0.1};
    int negative = 0;
    for (int seed = 0; seed < 6; seed++) {
        sive_probe *p = probe(100.0, 0.5, 400, 4, seed, 0, 4.0);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 2), SIVE_OK);
        sive_result *r = run(p, &m, th);
        const char *h = sive_result_health(r), *line = strstr(h, "anneal 4: ");
        ck_assert_ptr_nonnull(line);
        ck_assert_msg(!strstr(h, "lambda-hat -"), "%s", h);
        for (int g = 0; g < 2; g++) {
            const double mean = (chain_lam(r, g) + chain_lam(r, g + 2)) / 2.0;
            negative += mean < 0.0;
            if (mean < 0.0)
                ck_assert_msg(strstr(line, "(unclipped -"), "%s", line);
        }
        sive_result_free(r);
    }
    ck_assert_int_gt(negative, 0); /* the case happened */
}
END_TEST

/* t^2 Var[L] for L = 1 + x^2 under exp(-t L - (x - 0.2)^2/(2 h^2)). */
static double k1_continuous(double t, double h)
{
    double prec = 2.0 * t + 1.0 / (h * h), s2 = 1.0 / prec, mu = 0.2 / (h * h) / prec;
    return t * t * (4.0 * mu * mu * s2 + 2.0 * s2 * s2);
}

START_TEST(tail_law_unchanged_and_quiet)
{
    static quad_fixture q = {.k = 2.0, .l0 = 1.0};
    sive_model m = quad_fixture_model(&q, 1);
    const double th = 0.2, want = k1_continuous(1e4, 2.0);
    sive_result *r = run(probe(1e4, 2.0, 40000, 16, 18023, 1, 1000.0), &m, &th);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r);
    double z = sive_result_stat(r, SIVE_STAT_START_Z, SIVE_SUMMARY);
    printf("K1 metropolis, anneal 1000: %.5f +- %.5f (continuous law %.5f), start z %+.2f\n",
           lam, se, want, z);
    ck_assert_msg(fabs(lam - want) < 4.0 * se, "%.5f +- %.5f", lam, se);
    ck_assert_msg(se < 0.02 * want, "MCSE %.4g", se);
    ck_assert(!(sive_result_flags(r) & SIVE_FLAG_START_DEPENDENT));
    sive_result_free(r);
    /* ULA on an isotropic quadratic (d = 10, stationary from any start):
     * no false alarm over several seeds */
    static quad_fixture q10 = {.k = 1.0, .l0 = 0.0, .sigma = 1e-5};
    sive_model m10 = quad_fixture_model(&q10, 10);
    const double th10[10] = {0};
    for (int seed = 1; seed <= 6; seed++) {
        r = run(probe(1e4, 1.0, 4000, 6, seed, seed & 1, 100.0), &m10, th10);
        z = sive_result_stat(r, SIVE_STAT_START_Z, SIVE_SUMMARY);
        printf("quadratic d = 10, %s, seed %d: start z %+.2f\n", seed & 1 ? "metropolis" : "ULA",
               seed, z);
        ck_assert(isfinite(z));
        ck_assert_msg(!(sive_result_flags(r) & SIVE_FLAG_START_DEPENDENT), "seed %d z %.2f",
                      seed, z);
        sive_result_free(r);
    }
}
END_TEST

/* A slow mode by construction: K = sum_i x_i^2 (x_i - 1)^4, theta* = 0.
 * Each coordinate has a quadratic well at 0 (lambda 1/2) and a quartic one
 * at 1 (lambda 1/4) that holds most of the law's mass at t = 10^4 (mass
 * ~ t^(-1/4) against t^(-1/2); the tether h = 1 about 0 costs e^(-1/2)),
 * behind a barrier t max K = 10^4 * 0.022 = 220 that a chain started at
 * theta* never crosses.  At t/1000 the barrier is 0.2: the hot chains
 * cross, and freeze into either well as t rises.  So the cold chains read
 * d/2 = 20 and the hot ones less: the start test must see it. */
enum { WD = 40 };

static int wells_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                      double *loss, void *user)
{
    const double *x = theta;
    double *g = grad, s = 0.0;
    (void)b, (void)user;
    for (size_t i = 0; i < d; i++) {
        const double u = x[i] - 1.0, u3 = u * u * u;
        g[i] = 2.0 * x[i] * u3 * (3.0 * x[i] - 1.0);
        s += x[i] * x[i] * u3 * u;
    }
    *loss = s;
    return 0;
}

static int wells_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                       void *user)
{
    double l;
    wells_grad(theta, d, b, (double[WD]){0}, &l, user);
    quad_noisy_groups(b, l, 1e-7, gl);
    return 0;
}

/* Runs p on the two wells and checks the start test fires; returns z. */
static double slow_mode(sive_probe *p, const char *what)
{
    static quad_fixture unused;
    sive_model m = quad_fixture_model(&unused, WD);
    m.grad = wells_grad;
    m.group_loss = wells_group;
    const double th[WD] = {0};
    sive_result *r = run(p, &m, th);
    const double z = sive_result_stat(r, SIVE_STAT_START_Z, SIVE_SUMMARY);
    printf("two wells x^2 (x - 1)^4 (d = %d), t = 1e4, %s, anneal 1000: lambda-hat %.4f, "
           "start z %+.2f\n%s", WD, what, sive_result_lambda(r), z, sive_result_health(r));
    for (int c = 0; c < 8; c++)
        printf("  chain %d (%s): %.4f +- %.4f\n", c, c & 1 ? "cold" : "hot", chain_lam(r, c),
               sive_result_stat(r, SIVE_STAT_MCSE, c));
    fflush(stdout);
    ck_assert_msg(z < -3.0, "%s: z %.2f", what, z);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_START_DEPENDENT);
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "start_dependent: "));
    sive_result_free(r);
    return z;
}

START_TEST(fires_on_a_slow_mode)
{
    slow_mode(probe(1e4, 1.0, 40000, 8, 5, 0, 1000.0), "ULA, 8 chains x 40000 steps");
}
END_TEST

/* The tail's acceptance, from the health line "metropolis: tail
 * acceptance X". */
static double tail_acceptance(const sive_result *r)
{
    const char *p = strstr(sive_result_health(r), "metropolis: tail acceptance ");
    double acc = NAN;
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sscanf(p, "metropolis: tail acceptance %lf", &acc), 1);
    return acc;
}

/* Hamiltonian steps (leapfrog 4) and, with dr = 2, their delayed
 * rejection, under anneal 1000.  The slow mode: the hot chains'
 * trajectories (both stages) must follow U at t/kappa to cross the
 * barrier; run at t they stay with the cold ones.  K1: the tail's law at
 * t after a burn-in at t/1000, and (without dr, where it is the one
 * tuned) the tail's acceptance near 0.70. */
static void hot_hamiltonian(int64_t dr, int64_t k1_steps, const char *what)
{
    sive_probe *p = probe(1e4, 1.0, 10000, 8, 5, 1, 1000.0);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DELAYED_REJECTION, dr), SIVE_OK);
    char label[160];
    snprintf(label, sizeof label, "metropolis + %s, 8 chains x 10000 steps", what);
    slow_mode(p, label);
    static quad_fixture q = {.k = 2.0, .l0 = 1.0};
    sive_model m = quad_fixture_model(&q, 1);
    const double th1 = 0.2, want = k1_continuous(1e4, 2.0);
    p = probe(1e4, 2.0, k1_steps, 16, 18023, 1, 1000.0);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_LEAPFROG, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DELAYED_REJECTION, dr), SIVE_OK);
    sive_result *r = run(p, &m, &th1);
    const double lam = sive_result_lambda(r), se = sive_result_mcse(r);
    const double z = sive_result_stat(r, SIVE_STAT_START_Z, SIVE_SUMMARY);
    const double acc = tail_acceptance(r);
    printf("K1 %s, anneal 1000: %.5f +- %.5f (continuous law %.5f), start z %+.2f, "
           "tail acceptance %.3f\n", what, lam, se, want, z, acc);
    ck_assert_msg(fabs(lam - want) < 4.0 * se, "%.5f +- %.5f", lam, se);
    if (!dr)
        ck_assert_msg(fabs(acc - 0.70) < 0.08, "tail acceptance %.3f", acc);
    ck_assert(!(sive_result_flags(r) & SIVE_FLAG_START_DEPENDENT));
    sive_result_free(r);
}

START_TEST(hamiltonian_steps_run_hot)
{
    hot_hamiltonian(0, 20000, "leapfrog 4");
}
END_TEST

START_TEST(delayed_rejection_runs_hot)
{
    hot_hamiltonian(2, 12000, "leapfrog 4 + delayed_rejection 2");
}
END_TEST

START_TEST(t_as_z_quantiles)
{
    /* (t, nu, z): z with the upper tail of t_nu at t */
    static const double c[][3] = {
        {3.0, 1.0, 1.2679},     /* Cauchy: 1/2 - atan(3)/pi = 0.10242 */
        {2.228139, 10.0, 1.95996}, /* t_10's 97.5 % quantile */
        {4.032143, 5.0, 2.575829}, /* t_5's 99.5 % quantile */
        {-2.5, 1e9, -2.5}, {0.0, 3.0, 0.0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        const double z = sivei_t_as_z(c[i][0], c[i][1]);
        ck_assert_msg(fabs(z - c[i][2]) < 2e-4, "t %g nu %g: %.6f, want %.6f", c[i][0], c[i][1],
                      z, c[i][2]);
    }
    ck_assert(sivei_t_as_z(3.0, INFINITY) == 3.0);
    ck_assert(sivei_t_as_z(1e200, 2.0) == 37.0);
    ck_assert(fabs(sivei_normal_upper(0.0013498980) - 3.0) < 1e-6);
}
END_TEST

enum { NULL_RUNS = 400 };

START_TEST(null_distribution)
{
    static quad_fixture q = {.k = 1.0, .l0 = 0.0, .sigma = 1e-5};
    sive_model m = quad_fixture_model(&q, 10);
    const double th[10] = {0};
    double s1[2] = {0, 0}, s2[2] = {0, 0};
    int over = 0;
    for (int k = 0; k < NULL_RUNS; k++) {
        sive_result *r = run(probe(1e4, 1.0, 4000, 5, 1 + k, 1, 100.0), &m, th);
        sivei_start st;
        ck_assert_int_eq(sivei_start_test(r, &st), SIVE_OK);
        for (int i = 0; i < 2; i++) {
            ck_assert(isfinite(st.z[i]));
            s1[i] += st.z[i];
            s2[i] += st.z[i] * st.z[i];
        }
        ck_assert(sive_result_stat(r, SIVE_STAT_START_Z, SIVE_SUMMARY) == st.zmin);
        ck_assert(sive_result_stat(r, SIVE_STAT_START_Z_LAMBDA, SIVE_SUMMARY) == st.z[0]);
        ck_assert(sive_result_stat(r, SIVE_STAT_START_Z_MEAN, SIVE_SUMMARY) == st.z[1]);
        const int flag = !!(sive_result_flags(r) & SIVE_FLAG_START_DEPENDENT);
        ck_assert_int_eq(flag, fabs(st.zmin) > 3.0);
        over += flag;
        sive_result_free(r);
    }
    for (int i = 0; i < 2; i++) {
        const double mu = s1[i] / NULL_RUNS, sd = sqrt(s2[i] / NULL_RUNS - mu * mu);
        printf("quadratic d = 10, %d runs: Welch z of %s: mean %+.3f, sd %.3f\n", NULL_RUNS,
               i ? "t mean tail loss" : "lambda-hat", mu, sd);
        /* the mean's standard error is 0.05 */
        ck_assert_msg(fabs(mu) < 0.2 && sd > 0.85 && sd < 1.15, "mean %.3f sd %.3f", mu, sd);
    }
    /* nominal at most 0.27 %: 1.1 of 400; P(>= 5) = 0.6 % */
    printf("start_dependent in %d of %d runs\n", over, NULL_RUNS);
    ck_assert_int_le(over, 4);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("anneal");
    TCase *tc = tcase_create("anneal");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, cold_chains_are_the_plain_chains);
    tcase_add_test(tc, refused_without_a_hot_phase);
    tcase_add_test(tc, start_line_names_the_unclipped);
    tcase_add_test(tc, start_z_parts_published);
    tcase_add_test(tc, tail_law_unchanged_and_quiet);
    tcase_add_test(tc, fires_on_a_slow_mode);
    tcase_add_test(tc, hamiltonian_steps_run_hot);
    tcase_add_test(tc, delayed_rejection_runs_hot);
    tcase_add_test(tc, t_as_z_quantiles);
    tcase_add_test(tc, null_distribution);
    suite_add_tcase(s, tc);
    return check_run(s);
}
