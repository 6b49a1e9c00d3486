/* The sampler (lib/sampler*.c, docs/theory.md "Samplers") on the
 * least-squares fixture with mini-batch gradients (test/lsq.h).
 *
 * Checked: the gradient draws never depend on the evaluation draws, with
 * or without replacement (N, B_eval and the stride leave the Langevin path
 * bit for bit, in a run and in a sweep over groups). */
#include <sive/sive.h>

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lsq.h"

/* The fixture's probe with B_grad grad_batch, N = B_eval = 8. */
static sive_probe *sampler_probe(int64_t steps, int64_t chains, int64_t grad_batch)
{
    sive_probe *p = lsq_probe(steps, chains, 8, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, grad_batch), SIVE_OK);
    return p;
}

/* The Langevin path of every chain (displacement, gradient norm and the
 * gradient callback's loss) is the same in a and b. */
static void assert_same_path(const sive_result *a, const sive_result *b)
{
    for (int32_t c = 0; c < sive_result_chains(a); c++) {
        ck_assert_msg(same_trace(a, b, SIVE_TRACE_DISP, c), "chain %d", (int)c);
        ck_assert(same_trace(a, b, SIVE_TRACE_GRAD_NORM, c));
        ck_assert(same_trace(a, b, SIVE_TRACE_GRAD_LOSS, c));
    }
}

/* N, B_eval and the stride change the evaluation draws only, for both
 * values of replacement (0: each draw stream shuffles its own
 * permutation; before 0.3 they shared one, and the path moved). */
START_TEST(eval_draws_leave_the_path)
{
    static lsq m;
    lsq_make(&m, 9);
    m.batch_grad = 1;
    const int64_t settings[3][3] = {{8, 8, 1}, {16, 4, 1}, {3, 20, 3}};
    sive_result *r[3];
    for (int k = 0; k < 3; k++) {
        sive_probe *p = sampler_probe(300, 3, 16);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, _i), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, settings[k][0]), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, settings[k][1]), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, settings[k][2]),
                         SIVE_OK);
        r[k] = lsq_run(p, &m);
        sive_probe_free(p);
    }
    assert_same_path(r[0], r[1]);
    assert_same_path(r[0], r[2]);
    ck_assert(!same_trace(r[0], r[1], SIVE_TRACE_LBAR, 0)); /* evaluations differ */
    for (int k = 0; k < 3; k++)
        sive_result_free(r[k]);
}
END_TEST

/* sive_probe_sweep over groups without replacement shares the path. */
START_TEST(sweep_over_groups_shares_the_path)
{
    static lsq m;
    lsq_make(&m, 10);
    m.batch_grad = 1;
    sive_model sm;
    lsq_model(&sm, &m);
    sive_probe *p = sampler_probe(300, 2, 16);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    const double groups[] = {4, 32};
    sive_result *out[2];
    ck_assert_int_eq(sive_probe_sweep(p, &sm, STAR, SIVE_OPT_GROUPS, groups, 2, 1, out),
                     SIVE_OK);
    assert_same_path(out[0], out[1]);
    sive_result_free(out[0]);
    sive_result_free(out[1]);
    sive_probe_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, eval_draws_leave_the_path, 0, 2);
    tcase_add_test(tc, sweep_over_groups_shares_the_path);
    suite_add_tcase(s, tc);
    return check_run(s);
}
