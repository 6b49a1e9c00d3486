/* The sampler (lib/sampler*.c, docs/theory.md "Samplers") on the
 * least-squares fixture with mini-batch gradients (test/lsq.h).
 *
 * Checked: the gradient draws never depend on the evaluation draws, with
 * or without replacement (N, B_eval and the stride leave the Langevin path
 * bit for bit, in a run and in a sweep over groups).  Gradient control
 * variates: the calls they make, the refusal without a data set, a
 * callback error and a cancel in their pass at theta*, the option in
 * result files and merges; and ("exact", the 'slow' suite) the
 * full-batch chain's exact target recovered at a small B_grad. */
#include <sive/sive.h>

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The pass at theta* is one call here (n = 200 < 4096 examples), then two
 * calls per step; the option is kept in the result. */
START_TEST(gcv_calls_and_option)
{
    static lsq m;
    lsq_make(&m, 12);
    m.batch_grad = 1;
    sive_probe *p = sampler_probe(100, 3, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, 1), SIVE_OK);
    sive_result *r = lsq_run(p, &m);
    ck_assert_int_eq(atomic_load(&m.star_grads), 1);
    ck_assert_int_eq(atomic_load(&m.grads), 1 + 2 * 3 * 100);
    int64_t v = -1;
    ck_assert_int_eq(sive_result_option_int(r, SIVE_OPT_GRAD_CONTROL_VARIATE, &v), SIVE_OK);
    ck_assert_int_eq(v, 1);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* An analytic model (no data set) is refused before anything runs. */
static int no_data_groups(const void *theta, size_t d, const sive_batch *b, double *gl,
                          void *user)
{
    (void)theta, (void)d, (void)user;
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = 0.0;
    return 0;
}

START_TEST(gcv_needs_data)
{
    static lsq m;
    lsq_make(&m, 1);
    sive_model sm;
    lsq_model(&sm, &m);
    sm.n_examples = 0;
    sm.loss = NULL;
    sm.group_loss = no_data_groups;
    sive_probe *p = sampler_probe(100, 2, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, 1), SIVE_OK);
    sive_result *r = (sive_result *)p;
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "data set"), "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(atomic_load(&m.grads), 0);
    sive_probe_free(p);
}
END_TEST

/* A callback error in the pass at theta* is the run's, like any callback
 * error: a result with that status and code, no chain run. */
START_TEST(gcv_pass_callback_error)
{
    static lsq m;
    lsq_make(&m, 1);
    m.batch_grad = 1;
    m.fail_grad_pass = 1;
    sive_model sm;
    lsq_model(&sm, &m);
    sive_probe *p = sampler_probe(100, 2, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, 1), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_result_callback_code(r), 9);
    ck_assert_int_eq(sive_result_chains_ok(r), 0);
    const char *msg = sive_result_errmsg(r);
    ck_assert_msg(strstr(msg, "theta*") && strstr(msg, "no gradient at theta* today"), "%s",
                  msg);
    ck_assert_int_eq(atomic_load(&m.grads), 1);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* The pass reports progress as chain -1 and can be cancelled there. */
static int cancel_in_pass(int32_t chain, int64_t step, int64_t total, void *user)
{
    int *seen = user;
    if (chain == -1 && step == total && total == 200)
        (*seen)++;
    return chain == -1;
}

START_TEST(gcv_pass_cancel)
{
    static lsq m;
    lsq_make(&m, 1);
    m.batch_grad = 1;
    sive_model sm;
    lsq_model(&sm, &m);
    sive_probe *p = sampler_probe(100, 2, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, 1), SIVE_OK);
    int seen = 0;
    ck_assert_int_eq(sive_probe_set_progress(p, cancel_in_pass, &seen), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_E_CANCELLED);
    ck_assert_int_eq(seen, 1);
    ck_assert_int_eq(atomic_load(&m.grads), 1); /* no step ran */
    ck_assert_msg(strstr(sive_result_errmsg(r), "gradient pass"), "%s", sive_result_errmsg(r));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Saved and loaded, the option survives; parts with and without it do not
 * merge. */
START_TEST(gcv_result_file_and_merge)
{
    static lsq m;
    lsq_make(&m, 2);
    m.batch_grad = 1;
    sive_result *part[2];
    for (int k = 0; k < 2; k++) {
        sive_probe *p = sampler_probe(100, 2, 8);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, k), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, k), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, k + 1), SIVE_OK);
        part[k] = lsq_run(p, &m);
        sive_probe_free(p);
    }
    lsq_saved_not_merged(part, SIVE_OPT_GRAD_CONTROL_VARIATE, "grad_control_variate");
}
END_TEST

/* Mean over chains of a per-chain statistic and its standard error. */
static double chain_mean(const sive_result *r, sive_stat st, double *se)
{
    int32_t K = sive_result_chains(r);
    double sum = 0.0;
    for (int32_t c = 0; c < K; c++)
        sum += sive_result_stat(r, st, c);
    *se = sive_result_stat_std(r, st) / sqrt((double)K);
    return sum / K;
}

/* SIVE of a K-chain run at B_grad b (gcv: gradient control variates;
 * repl: replacement) and its z against the full-batch chain's exact
 * target; *rel: its relative error. */
static double z_full_batch(lsq *m, int64_t b, int repl, int gcv, int64_t M, int64_t K,
                           double *rel)
{
    sive_probe *p = sampler_probe(M, K, b);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, repl), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, gcv), SIVE_OK);
    /* evaluation control variates and 32 x 32 draws: an SE well below
     * the target (the evaluation is not under test) */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 32), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 32), SIVE_OK);
    sive_result *r = lsq_run(p, m);
    double n = sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0), se;
    double expect = lsq_expect(m, STAR, 1000.0, 0.05, 0.5, n);
    double mean = chain_mean(r, SIVE_STAT_SIVE_UNCLIPPED, &se);
    double z = (mean - expect) / se;
    *rel = mean / expect - 1.0;
    printf("B_grad %3lld, replacement %d, grad_control_variate %d: SIVE %.4f +- %.4f "
           "(full-batch exact %.4f: %+.2f %%, z %+.2f)\n", (long long)b, repl, gcv, mean, se,
           expect, 100.0 * *rel, z);
    sive_result_free(r);
    sive_probe_free(p);
    return z;
}

/* The full-batch tethered law's target at a small B_grad: recovered with
 * gradient control variates, missed without them.  Their residual bias is
 * O(a (d+2) lambda / B) (docs/theory.md, "Gradient control variates"):
 * ~1 % at B_grad 64 without replacement (below 3 SE of 48 chains), ~80 %
 * at B_grad 4, where the plain mini-batch chain is off by ~200x that. */
START_TEST(gcv_recovers_full_batch_target)
{
    static lsq m;
    lsq_make(&m, 7);
    m.batch_grad = 1;
    const int64_t M = 20000, K = 48;
    double rel_cv, rel_plain;
    double z = z_full_batch(&m, 64, 0, 1, M, K, &rel_cv);
    ck_assert_msg(fabs(z) < 3.0, "B_grad 64 with gradient control variates: z %g", z);
    z = z_full_batch(&m, 64, 0, 0, M, K, &rel_plain);
    ck_assert_msg(z > 5.0, "B_grad 64 without: z %g (the batch noise heats the chain)", z);
    z_full_batch(&m, 4, 1, 1, M, K, &rel_cv);
    z_full_batch(&m, 4, 1, 0, M, K, &rel_plain);
    ck_assert_msg(rel_plain > 20.0 * fabs(rel_cv), "B_grad 4: relative error %g with, %g "
                  "without gradient control variates", rel_cv, rel_plain);
}
END_TEST

int main(int argc, char **argv)
{
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    if (argc > 1 && strcmp(argv[1], "exact") == 0) {
        tcase_add_test(tc, gcv_recovers_full_batch_target);
    } else {
        tcase_add_loop_test(tc, eval_draws_leave_the_path, 0, 2);
        tcase_add_test(tc, sweep_over_groups_shares_the_path);
        tcase_add_test(tc, gcv_calls_and_option);
        tcase_add_test(tc, gcv_needs_data);
        tcase_add_test(tc, gcv_pass_callback_error);
        tcase_add_test(tc, gcv_pass_cancel);
        tcase_add_test(tc, gcv_result_file_and_merge);
    }
    suite_add_tcase(s, tc);
    return check_run(s);
}
