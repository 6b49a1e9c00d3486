/* The radius search's no-plateau fallback (lib/core/radius_auto.c,
 * sivei_auto_flatter): the level with the smallest upper bound e + 2 se
 * on the slope d ln lambda-hat / d ln h is kept, but a slope steeper than
 * 0.3 either way is never preferred to a shallow one.  Links the internal
 * archive.  And the health line's ending for each way the search ends
 * (sivei_radius_auto_note). */
#include "probe_impl.h"

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The health line of a search that ended with e (sivei_radius_auto_note);
 * the caller frees it. */
static char *note_of(int e)
{
    sivei_options o;
    sivei_options_default(&o);
    o.chains = 1;
    sive_result *r = sivei_result_alloc(&o, 1.0, 0.01, 0, 1, 0);
    ck_assert_ptr_nonnull(r);
    sivei_auto a = {.h = 0.0123, .slope = 0.011, .slope_se = 0.004, .levels = 3,
                    .accepted = (sivei_auto_end)e, .pilot_steps = 1234, .n_pilot = 2,
                    .pilot_h = {0.01, 0.02}, .pilot_lam = {1.5, 1.6}};
    ck_assert_int_eq(sivei_radius_auto_note(r, &a), SIVE_OK);
    char *line = strdup(sive_result_health(r));
    sive_result_free(r);
    ck_assert_ptr_nonnull(line);
    return line;
}

START_TEST(every_ending_has_its_text)
{
    static const char head[] = "radius: chosen from the loss (c_h = 0): h = 0.0123 after 3 pilot "
                               "runs (1234 chain steps); d ln lambda-hat / d ln h there 0.011 "
                               "+- 0.004";
    static const char tail[] = "; pilots (h lambda-hat): 0.01 1.5, 0.02 1.6\n";
    char *line[SIVEI_AUTO_ENDS];
    for (int e = 0; e < SIVEI_AUTO_ENDS; e++) {
        line[e] = note_of(e);
        const size_t n = strlen(line[e]), nh = strlen(head), nt = strlen(tail);
        ck_assert_msg(n >= nh + nt && !strncmp(line[e], head, nh) &&
                          !strcmp(line[e] + n - nt, tail),
                      "ending %d: %s", e, line[e]);
        /* a plateau adds nothing; every other ending one parenthesis */
        const char *end = line[e] + nh;
        const size_t len = n - nh - nt;
        if (e == SIVEI_END_PLATEAU)
            ck_assert_uint_eq(len, 0);
        else
            ck_assert_msg(len > 3 && !strncmp(end, " (", 2) && end[len - 1] == ')' &&
                              !memchr(end + 2, '(', len - 2),
                          "ending %d: %.*s", e, (int)len, end);
        for (int f = 0; f < e; f++)
            ck_assert_msg(strcmp(line[e], line[f]), "endings %d and %d: %s", f, e, line[e]);
    }
    ck_assert_ptr_nonnull(strstr(line[SIVEI_END_NONE], " (no plateau: the flattest level used)"));
    ck_assert_ptr_nonnull(strstr(line[SIVEI_END_ROSE_FELL], "before a pilot fell)"));
    /* out of range: the no-plateau ending */
    const int out[] = {-1, SIVEI_AUTO_ENDS, 1000};
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
        char *l = note_of(out[i]);
        ck_assert_str_eq(l, line[SIVEI_END_NONE]);
        free(l);
    }
    for (int e = 0; e < SIVEI_AUTO_ENDS; e++)
        free(line[e]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("radius_rules");
    TCase *tc = tcase_create("fallback");
    tcase_add_test(tc, shallow_levels_by_upper_bound);
    tcase_add_test(tc, steep_negative_slope_is_not_flat);
    tcase_add_test(tc, every_ending_has_its_text);
    suite_add_tcase(s, tc);
    return check_run(s);
}
