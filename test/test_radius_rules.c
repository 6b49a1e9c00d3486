/* The radius search's no-plateau fallback (lib/core/radius_auto.c,
 * sivei_auto_flatter): the level with the smallest upper bound e + 2 se
 * on the slope d ln lambda-hat / d ln h is kept, but a slope steeper than
 * 0.3 either way is never preferred to a shallow one.  Links the internal
 * archive. */
#include "probe_impl.h"

#include "check_run.h"

#include <check.h>
#include <math.h>

START_TEST(shallow_levels_by_upper_bound)
{
    /* the smaller e + 2 se wins, whatever the sign of a shallow e */
    ck_assert(sivei_auto_flatter(0.001, 0.001, 0.01, 0.001));
    ck_assert(!sivei_auto_flatter(0.01, 0.001, 0.001, 0.001));
    ck_assert(sivei_auto_flatter(-0.07, 0.034, 0.005, 0.003));
    ck_assert(sivei_auto_flatter(0.0, 0.01, 0.0, 0.02));
}
END_TEST

START_TEST(steep_negative_slope_is_not_flat)
{
    /* L3 20-30-30-20 r5: e = -7.63 +- 3.8 (upper bound -0.03) lost to
     * nothing before; a shallow level with a larger bound now wins */
    ck_assert(!sivei_auto_flatter(-7.63, 3.8, 0.0007, 0.0004));
    ck_assert(sivei_auto_flatter(0.0007, 0.0004, -7.63, 3.8));
    ck_assert(sivei_auto_flatter(0.25, 0.2, -108.0, 35.0));
    /* steep on both sides: the smaller |e| + 2 se */
    ck_assert(sivei_auto_flatter(-0.5, 0.1, 2.0, 0.1));
    ck_assert(sivei_auto_flatter(0.4, 0.1, -9.6, 4.6));
    /* a non-finite slope is steep */
    ck_assert(sivei_auto_flatter(0.2, 0.1, NAN, 0.1));
    ck_assert(!sivei_auto_flatter(NAN, 0.1, 0.2, 0.1));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("radius_rules");
    TCase *tc = tcase_create("fallback");
    tcase_add_test(tc, shallow_levels_by_upper_bound);
    tcase_add_test(tc, steep_negative_slope_is_not_flat);
    suite_add_tcase(s, tc);
    return check_run(s);
}
