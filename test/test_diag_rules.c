/* The chart flag's growth test (lib/core/diag_geometry.c,
 * sivei_disp_growth): the mean DISP over the last quarter of the evaluated
 * tail steps over that of the first quarter, read from the trace in place
 * (it copied the tail: out of memory it returned -1, which health.c read
 * as "not growing" and so dropped the "barely moves" line).  Checked: the
 * same value, bit for bit, as from sivei_tail_copy, with eval_stride 1
 * and 3, and NaN on a tail under 16 evaluated steps.  Links the internal
 * archive. */
#include "probe_impl.h"

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

static double growth_of_copy(const sive_result *r, const sivei_chain_out *c)
{
    size_t n = 0;
    double *x = sivei_tail_copy(r, c, SIVE_TRACE_DISP, &n);
    ck_assert_ptr_nonnull(x);
    const size_t q = n / 4;
    double first = 0.0, last = 0.0;
    for (size_t i = 0; i < q; i++) {
        first += x[i];
        last += x[n - q + i];
    }
    free(x);
    return q >= 4 && first > 0.0 ? last / first : NAN;
}

static sive_result *disp_result(int64_t steps, int64_t stride)
{
    sivei_options o;
    sivei_options_default(&o);
    o.steps = steps;
    o.eval_stride = stride;
    o.chains = 1;
    sive_result *r = sivei_result_alloc(&o, 1.0, 0.01, 0, 1, 1);
    ck_assert_ptr_nonnull(r);
    double *d = sivei_chain(r, 0)->trace[SIVE_TRACE_DISP];
    for (int64_t m = 0; m < steps; m++)
        d[m] = 0.1 + sqrt((double)m) + 0.01 * (double)(m % 7);
    return r;
}

START_TEST(growth_reads_the_evaluated_tail)
{
    const int64_t steps[] = {400, 401, 1000, 997};
    const int64_t stride[] = {1, 3, 3, 5};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        sive_result *r = disp_result(steps[i], stride[i]);
        const sivei_chain_out *c = sivei_chain(r, 0);
        const double g = sivei_disp_growth(r, c);
        ck_assert_msg(isfinite(g) && g > 1.0 && g == growth_of_copy(r, c),
                      "steps %lld stride %lld: %.17g vs %.17g", (long long)steps[i],
                      (long long)stride[i], g, growth_of_copy(r, c));
        sive_result_free(r);
    }
    /* a short tail: no answer */
    sive_result *r = disp_result(40, 3);
    ck_assert(isnan(sivei_disp_growth(r, sivei_chain(r, 0))));
    sive_result_free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("diag_rules");
    TCase *tc = tcase_create("growth");
    tcase_add_test(tc, growth_reads_the_evaluated_tail);
    suite_add_tcase(s, tc);
    return check_run(s);
}
