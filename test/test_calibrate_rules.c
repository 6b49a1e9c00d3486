/* The plateau rules of a calibration sweep (sive_calibrate(), lib/core/calibrate.c)
 * on synthetic result rows: plateau present, absent, noisy; the arguments
 * refused; rows from a real result.  Links the internal archive for the
 * paired standard error (sivei_calib_diff_se, sivei_calib_z). */
#include "calibrate.h"

#include "check_run.h"
#include "quad.h"

#include <check.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>

#define CAL_Z 2.0 /* the rules' confidence multiplier (sive.h) */
#define CAL_H_TOL SIVE_CALIB_H_TOL
#define cal_diff_se sivei_calib_diff_se
#define cal_z sivei_calib_z

/* The rules through the public entry point: never an error on valid rows. */
static void cal_rule_h(const sive_calib_row *r, size_t n, double tol, sive_calib_verdict *v)
{
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_H, r, n, tol, v), SIVE_OK);
}

static void cal_rule_step(const sive_calib_row *r, size_t n, sive_calib_verdict *v)
{
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_STEP, r, n, NAN, v), SIVE_OK);
}

static void cal_rule_groups(const sive_calib_row *r, size_t n, double frac, sive_calib_verdict *v)
{
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_GROUPS, r, n, frac, v), SIVE_OK);
}

static sive_calib_row row(double value, double lambda, double se)
{
    sive_calib_row r = {.value = value, .lambda = lambda, .se = se, .ess = 1000, .rhat = 1.0,
                 .nc = 1.0, .nc_std = 0.01, .ok = 1};
    return r;
}

/* K chains per row with common random numbers: chain c's value at every h
 * is mu(h) + spread * z_c + jitter * w_{c,h}, z and w fixed pseudo-normal
 * draws; the rows carry the chains, their mean and SE = std / sqrt(K). */
#define K_SYN 20
static double syn_chain[16][K_SYN];

static double pseudo_normal(uint32_t *s)
{
    double u = 0; /* Irwin-Hall: sum of 12 uniforms - 6 */
    for (int i = 0; i < 12; i++) {
        *s = *s * 1664525u + 1013904223u;
        u += (*s >> 8) / 16777216.0;
    }
    return u - 6.0;
}

static void syn_rows(sive_calib_row *r, size_t n, const double *h, const double *mu, double spread,
                     double jitter)
{
    uint32_t s = 12345;
    double z[K_SYN];
    for (int c = 0; c < K_SYN; c++)
        z[c] = pseudo_normal(&s);
    for (size_t i = 0; i < n; i++) {
        double m = 0, q = 0;
        for (int c = 0; c < K_SYN; c++) {
            syn_chain[i][c] = mu[i] + spread * z[c] + jitter * pseudo_normal(&s);
            m += syn_chain[i][c];
        }
        m /= K_SYN;
        for (int c = 0; c < K_SYN; c++)
            q += (syn_chain[i][c] - m) * (syn_chain[i][c] - m);
        r[i] = row(h[i], m, sqrt(q / (K_SYN - 1) / K_SYN));
        r[i].chain = syn_chain[i];
        r[i].chains = K_SYN;
    }
}

/* K2's h curve as measured with 100 chains (docs/calibration.md): the
 * collapse at 0.2, 0.5 12 % below the large-h value, 1 4 % below it */
static const double k2_h[] = {0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50};
static const double k2_mu[] = {1.823, 0.548, 0.347, 0.374, 0.406,
                               0.419, 0.4234, 0.4237, 0.4238, 0.4238};

START_TEST(h_plateau_present)
{
    sive_calib_row r[10];
    syn_rows(r, 10, k2_h, k2_mu, 0.1, 0.005); /* chain spread 0.1, paired SE ~0.002 */
    sive_calib_verdict v;
    cal_rule_h(r, 10, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_int_eq(v.noisy, 0);
    ck_assert_double_eq(r[v.pick].value, 1.0); /* 0.5 is 12 % off: > 10 % */
    ck_assert_uint_eq(v.hi, 9);
    ck_assert_ptr_nonnull(strstr(v.reason, "paired over 20 chains"));
    /* a 3 % tolerance moves the onset to 2 (1 is 4 % below the large-h value) */
    cal_rule_h(r, 10, 0.03, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_double_eq(r[v.pick].value, 2.0);
}
END_TEST

/* The paper's own h table on K2 (SIVE column; its +- is the std over 5
 * trials, so SE = std / sqrt 5), without chains to pair: every value from
 * the collapse at 0.2 on is within 2 unpaired combined SE of every larger
 * one (a "not significantly different" rule would start the plateau at
 * 0.2), but those SEs are far too wide to show flatness within 10 %: no
 * plateau, and the hint asks for more chains. */
START_TEST(h_unpaired_too_wide)
{
    static const double l[] = {1.7330, 0.5077, 0.3376, 0.4264, 0.4427,
                               0.4547, 0.4551, 0.4549, 0.4550, 0.4550};
    static const double sd[] = {0.1469, 0.1172, 0.1462, 0.0969, 0.0957,
                                0.1040, 0.1043, 0.1041, 0.1042, 0.1042};
    sive_calib_row r[10];
    for (int i = 0; i < 10; i++)
        r[i] = row(k2_h[i], l[i], sd[i] / sqrt(5));
    for (int j = 3; j < 10; j++)
        ck_assert_double_lt(fabs(r[2].lambda - r[j].lambda), 2 * cal_diff_se(&r[2], &r[j], NULL));
    sive_calib_verdict v;
    cal_rule_h(r, 10, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "no plateau found in this range"));
    ck_assert_ptr_nonnull(strstr(v.reason, "unpaired"));
    ck_assert_ptr_nonnull(strstr(v.hint, "more chains"));
}
END_TEST

/* Rows with and without per-chain values (a sweep whose last value was
 * run apart, or loaded without chains): the plateau's comparisons are
 * paired for some and unpaired for others, and the reason says which (it
 * said "unpaired" for all of them). */
START_TEST(h_pairing_mixed)
{
    static const double h[] = {1, 2, 4}, mu[] = {1.0, 1.0, 1.0};
    sive_calib_row r[3];
    syn_rows(r, 3, h, mu, 0.1, 0.005);
    r[2].chain = NULL; /* 4: no chains to pair with */
    r[2].chains = 0;
    r[2].se = 0.005;
    sive_calib_verdict v;
    cal_rule_h(r, 3, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_double_eq(r[v.pick].value, 1.0);
    ck_assert_msg(strstr(v.reason, "paired over 20 chains in 1 of the 2 comparisons, "
                                   "unpaired SE sqrt(SE_i^2 + SE_j^2) in the other 1"),
                  "%s", v.reason);
    ck_assert_msg(strstr(v.reason, "|difference| + 2 to 2.09 SE"), "%s", v.reason);
    /* all paired, or all unpaired: said as before */
    r[2].chain = syn_chain[2];
    r[2].chains = K_SYN;
    cal_rule_h(r, 3, CAL_H_TOL, &v);
    ck_assert_msg(strstr(v.reason, "SE of the difference paired over 20 chains)"), "%s",
                  v.reason);
    for (int i = 0; i < 3; i++)
        r[i].chain = NULL, r[i].chains = 0;
    cal_rule_h(r, 3, CAL_H_TOL, &v);
    ck_assert_msg(strstr(v.reason, "; unpaired SE sqrt(SE_i^2 + SE_j^2))"), "%s", v.reason);
}
END_TEST

/* the tolerance is a sharp edge: |d| + z SE just below / above 10 % */
START_TEST(h_tolerance_edge)
{
    static const double h[] = {1, 2}, mu[] = {1.0, 1.0};
    for (int below = 0; below <= 1; below++) {
        sive_calib_row r[2];
        syn_rows(r, 2, h, mu, 0.1, 0.01);
        size_t m;
        double se = cal_diff_se(&r[0], &r[1], &m);
        ck_assert_uint_eq(m, K_SYN);
        /* shift row 0 so that its mean difference is -d: the SE stays */
        double d = 0.1 * r[1].lambda - cal_z(K_SYN) * se + (below ? -1e-4 : 1e-4);
        double shift = -d - (r[0].lambda - r[1].lambda);
        for (int c = 0; c < K_SYN; c++)
            syn_chain[0][c] += shift;
        r[0].lambda += shift;
        ck_assert_double_eq_tol(cal_diff_se(&r[0], &r[1], NULL), se, 1e-12);
        sive_calib_verdict v;
        cal_rule_h(r, 2, 0.1, &v);
        ck_assert_int_eq(v.found, below);
    }
}
END_TEST

START_TEST(h_plateau_absent)
{
    sive_calib_row r[5];
    for (int i = 0; i < 5; i++)
        r[i] = row(pow(2, i), 1.0 + 0.5 * i, 0.05); /* still rising */
    sive_calib_verdict v;
    cal_rule_h(r, 5, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_int_eq(v.noisy, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "no plateau found in this range"));
    ck_assert_ptr_nonnull(strstr(v.reason, "still moves"));
    ck_assert_int_ne(v.hint[0], 0);
    ck_assert_ptr_nonnull(strstr(v.hint, "extend the range"));
    /* rising because the large radii do not mix: say so */
    r[4].rhat = 1.7;
    r[4].ess = 7;
    cal_rule_h(r, 5, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_ptr_nonnull(strstr(v.hint, "does not mix"));
}
END_TEST

START_TEST(h_noisy)
{
    sive_calib_row r[5];
    for (int i = 0; i < 5; i++)
        r[i] = row(pow(2, i), 0.4 + 0.3 * (i % 2), 0.5); /* se > lambda */
    sive_calib_verdict v;
    cal_rule_h(r, 5, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_int_eq(v.noisy, 1);
    ck_assert_ptr_nonnull(strstr(v.reason, "too noisy"));
}
END_TEST

/* paired SE by hand; NaN chains are skipped; unequal chain counts fall
 * back to the unpaired SE */
START_TEST(diff_se_paired)
{
    static const double a[] = {1, 2, 3, 4, NAN}, b[] = {1.1, 2.1, 3.2, 4.1, 5};
    sive_calib_row ra = row(1, 2.5, 0.6), rb = row(2, 2.625, 0.6);
    ra.chain = a, ra.chains = 5, rb.chain = b, rb.chains = 5;
    size_t m;
    /* differences -0.1, -0.1, -0.2, -0.1: std 0.05, SE 0.025 */
    ck_assert_double_eq_tol(cal_diff_se(&ra, &rb, &m), 0.025, 1e-12);
    ck_assert_uint_eq(m, 4);
    rb.chains = 4;
    ck_assert_double_eq_tol(cal_diff_se(&ra, &rb, &m), sqrt(0.72), 1e-12);
    ck_assert_uint_eq(m, 0);
    ck_assert_double_eq_tol(cal_z(5), 2.776, 1e-9);  /* t(0.975, 4) */
    ck_assert_double_eq_tol(cal_z(0), CAL_Z, 1e-12); /* unpaired */
    ck_assert_double_eq_tol(cal_z(1000), CAL_Z, 1e-12);
}
END_TEST

START_TEST(h_single_value_no_plateau)
{
    sive_calib_row r[1] = {row(1, 0.5, 0.01)};
    sive_calib_verdict v;
    cal_rule_h(r, 1, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 0);
}
END_TEST

START_TEST(h_diverged_tail_no_plateau)
{
    sive_calib_row r[4] = {row(1, 0.5, 0.01), row(2, 0.5, 0.01), row(4, 0.5, 0.01), row(8, 0.5, 0.01)};
    r[3].ok = 0;
    sive_calib_verdict v;
    cal_rule_h(r, 4, CAL_H_TOL, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "diverged"));
}
END_TEST

/* base_lr as the paper's table: poor mixing below, ULA blow-up above */
START_TEST(step_range_present)
{
    static const double lr[] = {0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1};
    static const double l[] = {4.06, 0.235, 0.375, 0.405, 0.431, 0.481, 3.07, 9.45};
    static const double se[] = {1.3, 0.084, 0.14, 0.09, 0.043, 0.048, 2.2, 7.7};
    static const double rh[] = {1.9, 1.3, 1.08, 1.02, 1.0, 1.0, 1.01, 1.0};
    static const double es[] = {10, 40, 90, 300, 2000, 3000, 4000, 5000};
    sive_calib_row r[8];
    for (int i = 0; i < 8; i++) {
        r[i] = row(lr[i], l[i], se[i]);
        r[i].rhat = rh[i];
        r[i].ess = es[i];
    }
    sive_calib_verdict v;
    cal_rule_step(r, 8, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_double_eq(r[v.lo].value, 0.01);
    ck_assert_double_eq(r[v.hi].value, 0.1);
    ck_assert_double_eq(r[v.pick].value, 0.05);
}
END_TEST

START_TEST(step_range_absent)
{
    sive_calib_row r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = row(0.01 * pow(2, i), 0.4, 0.02);
        r[i].rhat = 1.2; /* nothing mixes */
    }
    sive_calib_verdict v;
    cal_rule_step(r, 4, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "no plateau found in this range"));
}
END_TEST

START_TEST(step_jump_breaks_range)
{
    /* mixes everywhere, but lambda doubles between each pair */
    sive_calib_row r[4];
    for (int i = 0; i < 4; i++)
        r[i] = row(0.01 * pow(2, i), pow(2, i), 0.01 * pow(2, i));
    sive_calib_verdict v;
    cal_rule_step(r, 4, &v);
    ck_assert_int_eq(v.found, 0);
}
END_TEST

START_TEST(step_noisy)
{
    sive_calib_row r[4];
    for (int i = 0; i < 4; i++)
        r[i] = row(0.01 * pow(2, i), 0.4, 0.4);
    sive_calib_verdict v;
    cal_rule_step(r, 4, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_int_eq(v.noisy, 1);
}
END_TEST

/* N: the noise correction's std falls as N^-1.5 */
START_TEST(groups_present)
{
    sive_calib_row r[6];
    for (int i = 0; i < 6; i++) {
        double n = 2.0 * pow(4, i);
        r[i] = row(n, 0.45, 0.03);
        r[i].nc_std = 1.069 * pow(2.0 / n, 1.5);
    }
    sive_calib_verdict v;
    cal_rule_groups(r, 6, 0.1, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_double_eq(r[v.pick].value, 32.0); /* 0.017 < 0.045 from 32 on */
}
END_TEST

START_TEST(groups_absent_and_noisy)
{
    sive_calib_row r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = row(2 << i, 0.45, 0.03);
        r[i].nc_std = 0.2;
    }
    sive_calib_verdict v;
    cal_rule_groups(r, 3, 0.1, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_ptr_nonnull(strstr(v.hint, "larger N"));
    /* a noisy dip at the smallest N does not count: it must stay below */
    r[0].nc_std = 0.001;
    cal_rule_groups(r, 3, 0.1, &v);
    ck_assert_int_eq(v.found, 0);
    r[2].nc_std = 0.01;
    cal_rule_groups(r, 3, 0.1, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_uint_eq(v.pick, 2);
}
END_TEST

/* errors as values: what sive_calibrate and sive_calib_rule_of refuse */
START_TEST(arguments_refused)
{
    sive_calib_row r[3] = {row(1, 0.5, 0.01), row(2, 0.5, 0.01), row(4, 0.5, 0.01)};
    sive_calib_verdict v;
    v.found = 7;
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_H, r, 0, 0, &v), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(v.found, 0); /* cleared */
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_H, NULL, 3, 0, &v), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_H, r, 3, 0, NULL), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_calibrate((sive_calib_rule)3, r, 3, 0, &v), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "unknown rule"));
    r[1].value = 8; /* 1, 8, 4: not sorted */
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_STEP, r, 3, 0, &v), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "sorted"));
    r[1].value = NAN;
    ck_assert_int_eq(sive_calibrate(SIVE_CALIB_RULE_STEP, r, 3, 0, &v), SIVE_E_INVALID_ARG);
    sive_calib_rule rule = (sive_calib_rule)9;
    ck_assert_int_eq(sive_calib_rule_of(SIVE_OPT_T, &rule), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(rule, 9);
    ck_assert_int_eq(sive_calib_rule_of(SIVE_OPT_C_H, NULL), SIVE_E_INVALID_ARG);
    static const struct { sive_option o; sive_calib_rule r; } map[] = {
        {SIVE_OPT_H, SIVE_CALIB_RULE_H}, {SIVE_OPT_C_H, SIVE_CALIB_RULE_H},
        {SIVE_OPT_BASE_LR, SIVE_CALIB_RULE_STEP}, {SIVE_OPT_GROUPS, SIVE_CALIB_RULE_GROUPS}};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(sive_calib_rule_of(map[i].o, &rule), SIVE_OK);
        ck_assert_int_eq(rule, map[i].r);
    }
}
END_TEST

/* The row of a real (small) probe: the result's numbers, the SE from the
 * chains' spread, and per-chain values that pair with themselves. */
START_TEST(row_from_result)
{
    quad_fixture q = {.k = 2.0, .l0 = 0.0, .sigma = 0.01};
    sive_model m = quad_fixture_model(&q, 2);
    const double theta0[2] = {0.1, -0.2};
    sive_probe *p;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 300), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 3), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, theta0, &r), SIVE_OK);
    double chain[3], small[2];
    sive_calib_row row3, unpaired;
    ck_assert_int_eq(sive_calib_row_from_result(r, 0.5, small, 2, &row3), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_calib_row_from_result(NULL, 0.5, chain, 3, &row3), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_calib_row_from_result(r, 0.5, chain, 3, &row3), SIVE_OK);
    ck_assert_double_eq(row3.value, 0.5);
    ck_assert(row3.chain == chain && row3.chains == 3 && row3.ok == 1);
    ck_assert(memcmp(&row3.lambda, &(double){sive_result_lambda(r)}, sizeof(double)) == 0);
    ck_assert_double_eq(row3.se, sive_result_lambda_std(r) / sqrt(3.0));
    ck_assert_double_eq(row3.rhat, sive_result_rhat(r));
    ck_assert_double_eq(row3.nc_std, sive_result_noise_correction_std(r));
    for (int32_t c = 0; c < 3; c++)
        ck_assert_double_eq(chain[c], sive_result_stat(r, SIVE_STAT_SIVE, c));
    size_t pairs;
    ck_assert_double_eq(cal_diff_se(&row3, &row3, &pairs), 0.0);
    ck_assert_uint_eq(pairs, 3);
    ck_assert_int_eq(sive_calib_row_from_result(r, 0.5, NULL, 0, &unpaired), SIVE_OK);
    ck_assert(unpaired.chain == NULL && unpaired.chains == 0);
    ck_assert_double_eq(unpaired.se, row3.se);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calibrate_rules");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, h_plateau_present);
    tcase_add_test(tc, h_unpaired_too_wide);
    tcase_add_test(tc, h_pairing_mixed);
    tcase_add_test(tc, h_tolerance_edge);
    tcase_add_test(tc, diff_se_paired);
    tcase_add_test(tc, h_plateau_absent);
    tcase_add_test(tc, h_noisy);
    tcase_add_test(tc, h_single_value_no_plateau);
    tcase_add_test(tc, h_diverged_tail_no_plateau);
    tcase_add_test(tc, step_range_present);
    tcase_add_test(tc, step_range_absent);
    tcase_add_test(tc, step_jump_breaks_range);
    tcase_add_test(tc, step_noisy);
    tcase_add_test(tc, groups_present);
    tcase_add_test(tc, groups_absent_and_noisy);
    tcase_add_test(tc, arguments_refused);
    tcase_add_test(tc, row_from_result);
    suite_add_tcase(s, tc);
    return check_run(s);
}
