/* The retrospective estimator (sive_retrospective*, lib/core/retrospective.c) on
 * a two-checkpoint "trajectory" of the quadratic fixture: at the final
 * checkpoint it is the online estimator bit for bit (the same anchor: the
 * chain's own tail minimum); at the earlier one t (tail mean - final tail
 * minimum) chain by chain; a chain that did not run gives NaN; arguments
 * are refused as values. */
#include "check_run.h"
#include "quad.h"

#include <check.h>
#include <math.h>
#include <string.h>

static quad_fixture qf = {.k = 2.0, .l0 = 0.0, .sigma = 0.01};

/* One probe of the fixture at theta0 (the same options and seed, so chain c
 * draws the same streams at every checkpoint), chains [begin, 3). */
static sive_result *probe_at(const double *theta0, int32_t begin)
{
    sive_model m = quad_fixture_model(&qf, 2);
    sive_probe *p;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 300), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 3), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 5), SIVE_OK);
    if (begin) {
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, begin), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, 3), SIVE_OK);
    }
    ck_assert_int_eq(sive_probe_run(p, &m, theta0, &r), SIVE_OK);
    sive_probe_free(p);
    return r;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

START_TEST(trajectory_of_two)
{
    static const double early[2] = {3.0, -2.0}, final_theta[2] = {0.1, -0.2};
    sive_result *r0 = probe_at(early, 0), *r1 = probe_at(final_theta, 0);
    double anchor[3], l0[3], l1[3], v[3], tm[3];
    ck_assert_int_eq(sive_retrospective_anchor(r1, anchor, 3), SIVE_OK);
    ck_assert_int_eq(sive_retrospective(r0, anchor, 3, l0), SIVE_OK);
    ck_assert_int_eq(sive_retrospective(r1, anchor, 3, l1), SIVE_OK);
    for (int32_t c = 0; c < 3; c++) {
        ck_assert(same_bits(anchor[c], sive_result_stat(r1, SIVE_STAT_TAIL_MIN_LOSS, c)));
        /* final checkpoint: the online estimator, bit for bit */
        ck_assert(same_bits(l1[c], sive_result_stat(r1, SIVE_STAT_ONLINE_MEAN, c)));
        /* earlier checkpoint: t (its tail mean - the final tail minimum) */
        double want = 100 * (sive_result_stat(r0, SIVE_STAT_TAIL_MEAN_LOSS, c) - anchor[c]);
        ck_assert(same_bits(l0[c], want));
        /* far from the minimum (the tether holds the chain within ~h of
         * theta0): a larger tail loss than at the final checkpoint */
        ck_assert_double_gt(l0[c], l1[c]);
        tm[c] = sive_result_stat(r0, SIVE_STAT_TAIL_MEAN_LOSS, c);
    }
    /* the data form gives the same numbers, in place too */
    ck_assert_int_eq(sive_retrospective_values(100, tm, anchor, 3, v), SIVE_OK);
    ck_assert(memcmp(v, l0, sizeof v) == 0);
    ck_assert_int_eq(sive_retrospective_values(100, tm, anchor, 3, tm), SIVE_OK);
    ck_assert(memcmp(tm, l0, sizeof v) == 0);
    sive_result_free(r0);
    sive_result_free(r1);
}
END_TEST

/* a part of a split run: chain 0 did not run here, so it has no anchor and
 * no estimate; the others are those of the whole run */
START_TEST(chain_not_run_is_nan)
{
    static const double th[2] = {0.1, -0.2};
    sive_result *part = probe_at(th, 1), *whole = probe_at(th, 0);
    double a_part[3], a_whole[3], l[3];
    ck_assert_int_eq(sive_retrospective_anchor(part, a_part, 3), SIVE_OK);
    ck_assert_int_eq(sive_retrospective_anchor(whole, a_whole, 3), SIVE_OK);
    ck_assert(isnan(a_part[0]));
    ck_assert(same_bits(a_part[1], a_whole[1]) && same_bits(a_part[2], a_whole[2]));
    ck_assert_int_eq(sive_retrospective(whole, a_part, 3, l), SIVE_OK);
    ck_assert(isnan(l[0]) && isfinite(l[1]) && isfinite(l[2]));
    ck_assert_int_eq(sive_retrospective(part, a_whole, 3, l), SIVE_OK);
    ck_assert(isnan(l[0]) && isfinite(l[1]));
    sive_result_free(part);
    sive_result_free(whole);
}
END_TEST

START_TEST(arguments_refused)
{
    static const double th[2] = {0.1, -0.2};
    sive_result *r = probe_at(th, 0);
    double a[4] = {0}, l[4];
    ck_assert_int_eq(sive_retrospective_anchor(r, a, 4), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "3 chains"));
    ck_assert_int_eq(sive_retrospective_anchor(NULL, a, 3), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_retrospective_anchor(r, NULL, 3), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_retrospective(r, a, 2, l), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_retrospective(r, NULL, 3, l), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_retrospective(r, a, 3, NULL), SIVE_E_INVALID_ARG);
    const double bad_t[] = {0.0, -1.0, NAN, INFINITY};
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(sive_retrospective_values(bad_t[i], a, a, 3, l), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_retrospective_values(1.0, NULL, a, 3, l), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_retrospective_values(1.0, a, a, 0, l), SIVE_OK); /* nothing to do */
    sive_result_free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("retrospective");
    TCase *tc = tcase_create("estimator");
    tcase_add_test(tc, trajectory_of_two);
    tcase_add_test(tc, chain_not_run_is_nan);
    tcase_add_test(tc, arguments_refused);
    suite_add_tcase(s, tc);
    return check_run(s);
}
