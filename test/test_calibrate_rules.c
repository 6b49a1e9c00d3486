/* The plateau rules of `sive calibrate` (tools/calibrate_rules.c) on
 * synthetic result rows: plateau present, absent, noisy. */
#include "calibrate_rules.h"

#include <check.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>

static cal_row row(double value, double lambda, double se)
{
    cal_row r = {.value = value, .lambda = lambda, .se = se, .ess = 1000, .rhat = 1.0,
                 .nc = 1.0, .nc_std = 0.01, .ok = 1};
    return r;
}

/* the paper's h table on K2 (SIVE column, se = std / sqrt 5) */
START_TEST(h_plateau_present)
{
    static const double h[] = {0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50};
    static const double l[] = {1.7330, 0.5077, 0.3376, 0.4264, 0.4427,
                               0.4547, 0.4551, 0.4549, 0.4550, 0.4550};
    cal_row r[10];
    for (int i = 0; i < 10; i++)
        r[i] = row(h[i], l[i], 0.01);
    cal_verdict v;
    cal_rule_h(r, 10, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_int_eq(v.noisy, 0);
    ck_assert_double_eq(r[v.pick].value, 1.0); /* 0.4427 vs 0.4550: 0.87 combined SE */
    ck_assert_uint_eq(v.hi, 9);
}
END_TEST

START_TEST(h_plateau_absent)
{
    cal_row r[5];
    for (int i = 0; i < 5; i++)
        r[i] = row(pow(2, i), 1.0 + 0.5 * i, 0.05); /* still rising */
    cal_verdict v;
    cal_rule_h(r, 5, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_int_eq(v.noisy, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "no plateau found in this range"));
    ck_assert_int_ne(v.hint[0], 0);
    ck_assert_ptr_nonnull(strstr(v.hint, "extend the range"));
    /* rising because the large radii do not mix: say so */
    r[4].rhat = 1.7;
    r[4].ess = 7;
    cal_rule_h(r, 5, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_ptr_nonnull(strstr(v.hint, "does not mix"));
}
END_TEST

START_TEST(h_noisy)
{
    cal_row r[5];
    for (int i = 0; i < 5; i++)
        r[i] = row(pow(2, i), 0.4 + 0.3 * (i % 2), 0.5); /* se > lambda */
    cal_verdict v;
    cal_rule_h(r, 5, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_int_eq(v.noisy, 1);
    ck_assert_ptr_nonnull(strstr(v.reason, "too noisy"));
}
END_TEST

START_TEST(h_single_value_no_plateau)
{
    cal_row r[1] = {row(1, 0.5, 0.01)};
    cal_verdict v;
    cal_rule_h(r, 1, &v);
    ck_assert_int_eq(v.found, 0);
}
END_TEST

START_TEST(h_diverged_tail_no_plateau)
{
    cal_row r[4] = {row(1, 0.5, 0.01), row(2, 0.5, 0.01), row(4, 0.5, 0.01), row(8, 0.5, 0.01)};
    r[3].ok = 0;
    cal_verdict v;
    cal_rule_h(r, 4, &v);
    ck_assert_int_eq(v.found, 0);
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
    cal_row r[8];
    for (int i = 0; i < 8; i++) {
        r[i] = row(lr[i], l[i], se[i]);
        r[i].rhat = rh[i];
        r[i].ess = es[i];
    }
    cal_verdict v;
    cal_rule_step(r, 8, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_double_eq(r[v.lo].value, 0.01);
    ck_assert_double_eq(r[v.hi].value, 0.1);
    ck_assert_double_eq(r[v.pick].value, 0.05);
}
END_TEST

START_TEST(step_range_absent)
{
    cal_row r[4];
    for (int i = 0; i < 4; i++) {
        r[i] = row(0.01 * pow(2, i), 0.4, 0.02);
        r[i].rhat = 1.2; /* nothing mixes */
    }
    cal_verdict v;
    cal_rule_step(r, 4, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_ptr_nonnull(strstr(v.reason, "no plateau found in this range"));
}
END_TEST

START_TEST(step_jump_breaks_range)
{
    /* mixes everywhere, but lambda doubles between each pair */
    cal_row r[4];
    for (int i = 0; i < 4; i++)
        r[i] = row(0.01 * pow(2, i), pow(2, i), 0.01 * pow(2, i));
    cal_verdict v;
    cal_rule_step(r, 4, &v);
    ck_assert_int_eq(v.found, 0);
}
END_TEST

START_TEST(step_noisy)
{
    cal_row r[4];
    for (int i = 0; i < 4; i++)
        r[i] = row(0.01 * pow(2, i), 0.4, 0.4);
    cal_verdict v;
    cal_rule_step(r, 4, &v);
    ck_assert_int_eq(v.found, 0);
    ck_assert_int_eq(v.noisy, 1);
}
END_TEST

/* N: the noise correction's std falls as N^-1.5 */
START_TEST(groups_present)
{
    cal_row r[6];
    for (int i = 0; i < 6; i++) {
        double n = 2.0 * pow(4, i);
        r[i] = row(n, 0.45, 0.03);
        r[i].nc_std = 1.069 * pow(2.0 / n, 1.5);
    }
    cal_verdict v;
    cal_rule_groups(r, 6, 0.1, &v);
    ck_assert_int_eq(v.found, 1);
    ck_assert_double_eq(r[v.pick].value, 32.0); /* 0.017 < 0.045 from 32 on */
}
END_TEST

START_TEST(groups_absent_and_noisy)
{
    cal_row r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = row(2 << i, 0.45, 0.03);
        r[i].nc_std = 0.2;
    }
    cal_verdict v;
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

int main(void)
{
    Suite *s = suite_create("calibrate_rules");
    TCase *tc = tcase_create("rules");
    tcase_add_test(tc, h_plateau_present);
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
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
