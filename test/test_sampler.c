/* The sampler (lib/sampler*.c, docs/theory.md "Samplers") on the
 * least-squares fixture with mini-batch gradients (test/lsq.h).
 *
 * Checked: the gradient draws never depend on the evaluation draws, with
 * or without replacement (N, B_eval and the stride leave the Langevin path
 * bit for bit, in a run and in a sweep over groups).  Gradient control
 * variates: the calls they make, the refusal without a data set, a
 * callback error and a cancel in their pass at theta*, the option in
 * result files and merges; grad_extrapolate (its arithmetic against a
 * run at 2 B_grad, the full-batch exact target recovered from B_grad 8,
 * result files and merges) and grad_noise_clipped; and ("exact", the
 * 'slow' suite) the full-batch chain's exact target recovered at a small
 * B_grad. */
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

/* Chain k of a 2-chain run (100 steps, B_grad 8) with the int option
 * opt = k, into part[k]. */
static void two_parts(sive_option opt, sive_result *part[2])
{
    static lsq m;
    lsq_make(&m, 2);
    m.batch_grad = 1;
    for (int k = 0; k < 2; k++) {
        sive_probe *p = sampler_probe(100, 2, 8);
        ck_assert_int_eq(sive_probe_set_int(p, opt, k), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, k), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, k + 1), SIVE_OK);
        part[k] = lsq_run(p, &m);
        sive_probe_free(p);
    }
}

/* Saved and loaded, the option survives; parts with and without it do not
 * merge. */
START_TEST(gcv_result_file_and_merge)
{
    sive_result *part[2];
    two_parts(SIVE_OPT_GRAD_CONTROL_VARIATE, part);
    lsq_saved_not_merged(part, SIVE_OPT_GRAD_CONTROL_VARIATE, "grad_control_variate");
}
END_TEST

/* The preconditioner is estimated in the first half of the burn-in: a
 * run without one is refused. */
START_TEST(precond_needs_burn_in)
{
    static lsq m;
    lsq_make(&m, 1);
    sive_model sm;
    lsq_model(&sm, &m);
    sive_probe *p = sampler_probe(100, 2, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.01), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "burn-in"), "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.02), SIVE_OK);
    r = lsq_run(p, &m);
    int64_t v = -1;
    ck_assert_int_eq(sive_result_option_int(r, SIVE_OPT_PRECONDITION, &v), SIVE_OK);
    ck_assert_int_eq(v, 1);
    sive_result_free(r);
    sive_probe_free(p);
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
static double z_full_batch_nc(lsq *m, int64_t b, int repl, int gcv, int64_t nc, int full,
                              int64_t M, int64_t K, double *rel)
{
    sive_probe *p = sampler_probe(M, K, b);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_FULL, full), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_COMPENSATION, nc), SIVE_OK);
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
    printf("B_grad %3lld, replacement %d, grad_control_variate %d, grad_noise_compensation "
           "%lld (full %d): SIVE %.4f +- %.4f (full-batch exact %.4f: %+.2f %%, z %+.2f)\n",
           (long long)b, repl, gcv, (long long)nc, full, mean, se, expect, 100.0 * *rel, z);
    sive_result_free(r);
    sive_probe_free(p);
    return z;
}

static double z_full_batch(lsq *m, int64_t b, int repl, int gcv, int64_t M, int64_t K,
                           double *rel)
{
    return z_full_batch_nc(m, b, repl, gcv, 0, 0, M, K, rel);
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

/* Gradient noise compensation removes the residual heating that gradient
 * control variates leave (docs/theory.md, "Gradient noise compensation"):
 * at B_grad 64 without replacement the full-batch law within 3 SE, both
 * ways; at B_grad 4 with replacement (+84 % with control variates alone)
 * the diagonal compensation removes at least half of the excess (its
 * estimate from 4 examples clips in the large excursions: +28 %). */
START_TEST(gcv_noise_recovers_full_batch_target)
{
    static lsq m;
    lsq_make(&m, 7);
    m.batch_grad = 1;
    const int64_t M = 20000, K = 48;
    double rel, rel_gcv;
    for (int full = 0; full < 2; full++) {
        double z = z_full_batch_nc(&m, 64, 0, 1, 8, full, M, K, &rel);
        ck_assert_msg(fabs(z) < 3.0, "B_grad 64, K 8, full %d: z %g", full, z);
    }
    z_full_batch_nc(&m, 4, 1, 1, 0, 0, M, K, &rel_gcv);
    z_full_batch_nc(&m, 4, 1, 1, 4, 0, M, K, &rel);
    ck_assert_msg(fabs(rel) < 0.5 * fabs(rel_gcv), "B_grad 4: relative error %g with, %g "
                  "without compensation", rel, rel_gcv);
}
END_TEST

/* The compensation's preconditions, and its calls: 2 (K - 1) more per step. */
START_TEST(gcv_noise_option)
{
    static lsq m;
    lsq_make(&m, 3);
    m.batch_grad = 1;
    static const int64_t bad[][2] = {{0, 4}, {1, 3}, {1, 1}, {1, 16}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sive_probe *p = sampler_probe(100, 2, 8);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, bad[i][0]),
                         SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_COMPENSATION, bad[i][1]),
                         SIVE_OK);
        sive_model sm;
        lsq_model(&sm, &m);
        sive_result *r = NULL;
        ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_E_INVALID_ARG);
        ck_assert_ptr_null(r);
        ck_assert_msg(strstr(sive_probe_errmsg(p), "grad_noise_compensation"), "%s",
                      sive_probe_errmsg(p));
        sive_probe_free(p);
    }
    for (int full = 0; full < 2; full++) {
        sive_probe *p = sampler_probe(100, 2, 8);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, 1), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_COMPENSATION, 4), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_FULL, full), SIVE_OK);
        atomic_store(&m.grads, 0);
        atomic_store(&m.star_grads, 0);
        sive_result *r = lsq_run(p, &m);
        ck_assert_int_eq(sive_result_status(r), SIVE_OK);
        ck_assert_int_eq(atomic_load(&m.grads) - atomic_load(&m.star_grads), 2 * 100 * 8);
        ck_assert(isfinite(sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY)));
        sive_result_free(r);
        sive_probe_free(p);
    }
}
END_TEST

/* grad_extrapolate removes the gradient batch's heating (docs/theory.md,
 * "Gradient batch bias"): on the least-squares fixture with gradient
 * control variates and replacement, the chain at B_grad 8 is ~30 % above
 * the full-batch chain's exact law (first order in a tr(C)/B); the
 * estimate extrapolated from B and 2B matches it within 3 of its own MCSE
 * (-5 %, z -1.3 with this seed: the second-order remainder, about -x^2/2
 * for a heating x, is below that).  The run at B is more than 5 MCSE
 * off, so the check can fail.  24 chains x 10^4 steps, ~3 s of CPU. */
START_TEST(grad_extrapolate_removes_batch_heating)
{
    static lsq m;
    lsq_make(&m, 7);
    m.batch_grad = 1;
    sive_probe *p = sampler_probe(10000, 24, 8);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 32), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 32), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_EXTRAPOLATE, 1), SIVE_OK);
    sive_result *r = lsq_run(p, &m);
    const double n = sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0);
    const double expect = lsq_expect(&m, STAR, 1000.0, 0.05, 0.5, n);
    const double at_b = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    const double se_b = sive_result_mcse(r);
    const double ex = sive_result_stat(r, SIVE_STAT_SIVE_FULL_BATCH, SIVE_SUMMARY);
    const double se = sive_result_stat(r, SIVE_STAT_MCSE_FULL_BATCH, SIVE_SUMMARY);
    printf("least squares, B_grad 8 (gcv, replacement): %.4f +- %.4f (%+.2f %%); "
           "extrapolated %.4f +- %.4f (%+.2f %%, z %+.2f); full-batch exact %.4f\n", at_b,
           se_b, 100.0 * (at_b / expect - 1.0), ex, se, 100.0 * (ex / expect - 1.0),
           (ex - expect) / se, expect);
    ck_assert_msg((at_b - expect) / se_b > 5.0, "B_grad 8: %g, exact %g +- %g", at_b,
                  expect, se_b);
    ck_assert_msg(se > 0.0 && fabs(ex - expect) < 3.0 * se, "extrapolated %g +- %g, exact %g",
                  ex, se, expect);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* The extrapolation's arithmetic against a separate run at 2 B_grad (the
 * same chains: the same Langevin noise), with weights 2 and -1 with
 * replacement, 2 - 2B/n and -(1 - 2B/n) without; NaN without the option;
 * the refusal of 2 B_grad above n without replacement. */
START_TEST(grad_extrapolate_option)
{
    static lsq m;
    lsq_make(&m, 3);
    m.batch_grad = 1;
    for (int repl = 0; repl < 2; repl++) {
        sive_result *r[2];
        for (int k = 0; k < 2; k++) {
            sive_probe *p = sampler_probe(400, 3, k ? 32 : 16);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, repl), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_EXTRAPOLATE, !k), SIVE_OK);
            r[k] = lsq_run(p, &m);
            sive_probe_free(p);
        }
        ck_assert(isnan(sive_result_stat(r[1], SIVE_STAT_SIVE_FULL_BATCH, SIVE_SUMMARY)));
        ck_assert(isnan(sive_result_stat(r[1], SIVE_STAT_GRAD_NOISE_CLIPPED, SIVE_SUMMARY)));
        const double w = repl ? 2.0 : 2.0 - 2.0 * 16.0 / NEX;
        double sum = 0.0;
        for (int32_t c = 0; c < 3; c++) {
            double want = w * sive_result_stat(r[1], SIVE_STAT_SIVE_UNCLIPPED, c) +
                          (1.0 - w) * sive_result_stat(r[0], SIVE_STAT_SIVE_UNCLIPPED, c);
            double got = sive_result_stat(r[0], SIVE_STAT_SIVE_FULL_BATCH, c);
            ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "chain %d: %g, want %g",
                          (int)c, got, want);
            ck_assert(sive_result_stat(r[0], SIVE_STAT_MCSE_FULL_BATCH, c) > 0.0);
            sum += got;
        }
        ck_assert(fabs(sive_result_stat(r[0], SIVE_STAT_SIVE_FULL_BATCH, SIVE_SUMMARY) -
                       sum / 3) < 1e-12 * fabs(sum));
        int64_t v = -1;
        ck_assert_int_eq(sive_result_option_int(r[0], SIVE_OPT_GRAD_EXTRAPOLATE, &v), SIVE_OK);
        ck_assert_int_eq(v, 1);
        sive_result_free(r[0]);
        sive_result_free(r[1]);
    }
    /* with step_extrapolate too: both extrapolations, each against the run
     * at B_grad and base_lr (the run at base_lr/2 is at B_grad) */
    sive_probe *p = sampler_probe(200, 2, 16);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_EXTRAPOLATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEP_EXTRAPOLATE, 1), SIVE_OK);
    sive_result *both = lsq_run(p, &m);
    ck_assert(isfinite(sive_result_stat(both, SIVE_STAT_SIVE_FULL_BATCH, SIVE_SUMMARY)));
    ck_assert(isfinite(sive_result_stat(both, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY)));
    ck_assert(sive_result_stat(both, SIVE_STAT_SIVE_FULL_BATCH, SIVE_SUMMARY) !=
              sive_result_stat(both, SIVE_STAT_SIVE_STEP0, SIVE_SUMMARY));
    sive_result_free(both);
    sive_probe_free(p);
    /* without replacement 2 B_grad must fit the data set (n = 200) */
    p = sampler_probe(100, 2, 128);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_EXTRAPOLATE, 1), SIVE_OK);
    sive_model sm;
    lsq_model(&sm, &m);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "grad_extrapolate"), "%s", sive_probe_errmsg(p));
    sive_probe_free(p);
    sive_option o;
    ck_assert_int_eq(sive_option_by_name("grad_extrapolate", &o), SIVE_OK);
    ck_assert_int_eq(o, SIVE_OPT_GRAD_EXTRAPOLATE);
}
END_TEST

/* grad_extrapolate in result files and merges: kept as set, its
 * statistics NaN after loading (the run at 2 B_grad is not stored), and
 * parts that differ in it do not merge. */
START_TEST(grad_extrapolate_result_file_and_merge)
{
    sive_result *part[2];
    two_parts(SIVE_OPT_GRAD_EXTRAPOLATE, part);
    ck_assert(isfinite(sive_result_stat(part[1], SIVE_STAT_SIVE_FULL_BATCH, 1)));
    size_t len = 0;
    void *bytes = NULL;
    ck_assert_int_eq(sive_result_to_bytes(part[1], NULL, &bytes, &len), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    ck_assert(isnan(sive_result_stat(back, SIVE_STAT_SIVE_FULL_BATCH, 1)));
    ck_assert(isnan(sive_result_stat(back, SIVE_STAT_MCSE_FULL_BATCH, SIVE_SUMMARY)));
    sive_result_free(back);
    sive_free(bytes);
    lsq_saved_not_merged(part, SIVE_OPT_GRAD_EXTRAPOLATE, "grad_extrapolate");
}
END_TEST

/* SIVE_STAT_GRAD_NOISE_CLIPPED: 0 with nothing clipped (a small t: the
 * gradient noise a^2 C/(2 eta) = a t C/2 is far below 1), large and
 * noted in the health text when the compensation cannot keep up (t
 * 10^5 at B_grad 4), for the diagonal and the full covariance. */
START_TEST(gcv_noise_clipped_stat)
{
    static lsq m;
    lsq_make(&m, 3);
    m.batch_grad = 1;
    for (int full = 0; full < 2; full++)
        for (int hot = 0; hot < 2; hot++) {
            sive_probe *p = sampler_probe(400, 2, 4);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, 1), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_COMPENSATION, 2),
                             SIVE_OK);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_NOISE_FULL, full), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, hot ? 1000.0 : 1.0), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, hot ? 0.5 : 0.1), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, hot ? 0.2 : 0.005),
                             SIVE_OK);
            sive_result *r = lsq_run(p, &m);
            const double x = sive_result_stat(r, SIVE_STAT_GRAD_NOISE_CLIPPED, SIVE_SUMMARY);
            const char *health = sive_result_health(r);
            printf("grad_noise_full %d, %s: grad_noise_clipped %g\n", full, hot ? "hot" : "cold",
                   x);
            for (int32_t c = 0; c < 2; c++) {
                double xc = sive_result_stat(r, SIVE_STAT_GRAD_NOISE_CLIPPED, c);
                ck_assert_msg(xc >= 0.0 && xc <= 1.0, "chain %d: %g", (int)c, xc);
            }
            if (hot) {
                ck_assert_msg(x > 0.05, "full %d: %g", full, x);
                ck_assert_msg(health && strstr(health, "grad_noise_clipped"), "%s",
                              health ? health : "(none)");
            } else {
                ck_assert_msg(x == 0.0, "full %d: %g", full, x);
                ck_assert(!health || !strstr(health, "grad_noise_clipped"));
            }
            sive_result_free(r);
            sive_probe_free(p);
        }
}
END_TEST

/* ---- the frozen preconditioner against the exact law given P ---- */

typedef double mat[D][D];

static void mat_mul(mat out, const mat x, const mat y, int transpose_y)
{
    mat r;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            double acc = 0.0;
            for (int k = 0; k < D; k++)
                acc += x[i][k] * (transpose_y ? y[j][k] : y[k][j]);
            r[i][j] = acc;
        }
    memcpy(out, r, sizeof r);
}

/* Solve (A + s I) x = -g by Gaussian elimination with partial pivoting. */
static void solve_shifted(const lsq *m, double s, const double *g, double *x)
{
    double a[D][D + 1];
    for (int i = 0; i < D; i++) {
        for (int j = 0; j < D; j++)
            a[i][j] = m->A[i][j] + (i == j ? s : 0.0);
        a[i][D] = -g[i];
    }
    for (int c = 0; c < D; c++) {
        int piv = c;
        for (int r = c + 1; r < D; r++)
            if (fabs(a[r][c]) > fabs(a[piv][c]))
                piv = r;
        for (int j = 0; j <= D; j++) {
            double tmp = a[c][j];
            a[c][j] = a[piv][j];
            a[piv][j] = tmp;
        }
        for (int r = c + 1; r < D; r++) {
            double f = a[r][c] / a[c][c];
            for (int j = c; j <= D; j++)
                a[r][j] -= f * a[c][j];
        }
    }
    for (int i = D - 1; i >= 0; i--) {
        double acc = a[i][D];
        for (int j = i + 1; j < D; j++)
            acc -= a[i][j] * x[j];
        x[i] = acc / a[i][i];
    }
}

/* Cov(L_0, L_k) for cross-covariance C of the centred deviations:
 * b'Cb + tr(A C A C')/2. */
static double lag_cov(const lsq *m, const double *b, const mat c)
{
    double lin = 0.0;
    for (int i = 0; i < D; i++)
        lin += b[i] * dot(c[i], b);
    mat ac, act;
    mat am;
    memcpy(am, m->A, sizeof am);
    mat_mul(ac, am, c, 0);
    mat_mul(act, am, c, 1); /* A C' */
    double tr = 0.0;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++)
            tr += ac[i][j] * act[j][i];
    return lin + 0.5 * tr;
}

/* E[SIVE_UNCLIPPED] of a stationary tail of n steps of the chain
 * delta' = M delta - a P g* + sqrt(2 eta P) xi, M = I - P (a A + eta/h^2):
 * mean mu = -(A + (eta/h^2)/a I)^-1 g* (P cancels), covariance by the
 * doubling iteration of Sigma = M Sigma M' + 2 eta P. */
static double precond_expect(const lsq *m, const double *p, double t, double a, double h,
                             double n)
{
    const double eta = a / t, kt = eta / (h * h);
    double gstar[D], mu[D], beff[D];
    for (int i = 0; i < D; i++)
        gstar[i] = dot(m->A[i], STAR) - m->b[i];
    solve_shifted(m, kt / a, gstar, mu);
    for (int i = 0; i < D; i++)
        beff[i] = gstar[i] + dot(m->A[i], mu);
    mat M, S, Mp, tmp;
    for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) {
            M[i][j] = (i == j) - p[i] * (a * m->A[i][j] + (i == j ? kt : 0.0));
            S[i][j] = i == j ? 2.0 * eta * p[i] : 0.0;
        }
    memcpy(Mp, M, sizeof Mp);
    for (int it = 0; it < 40; it++) { /* S <- S + Mp S Mp', Mp <- Mp^2 */
        mat_mul(tmp, Mp, S, 0);
        mat_mul(tmp, tmp, Mp, 1);
        for (int i = 0; i < D; i++)
            for (int j = 0; j < D; j++)
                S[i][j] += tmp[i][j];
        mat_mul(Mp, Mp, Mp, 0);
    }
    double var = lag_cov(m, beff, S), acc = var;
    mat C;
    memcpy(C, S, sizeof C);
    for (int64_t k = 1; k < (int64_t)n; k++) {
        mat_mul(C, M, C, 0);
        double ck = lag_cov(m, beff, C);
        acc += 2.0 * (1.0 - (double)k / n) * ck;
        if (fabs(ck) < 1e-12 * var)
            break;
    }
    return t * t * n / (n - 1.0) * (var - acc / n);
}

/* P as the library freezes it from the first `steps` gradients g. */
static void frozen_p(const double *g, int64_t steps, double *p)
{
    double v[D] = {0}, sr = 0.0, sr2 = 0.0;
    for (int64_t s = 0; s < steps; s++)
        for (int i = 0; i < D; i++)
            v[i] += g[s * D + i] * g[s * D + i];
    for (int i = 0; i < D; i++) {
        sr += sqrt(v[i] / (double)steps);
        sr2 += v[i] / (double)steps;
    }
    const double c = sr2 / sr; /* the g^2-weighted mean of P is 1 */
    for (int i = 0; i < D; i++)
        p[i] = c / fmax(sqrt(v[i] / (double)steps), c / 10.0);
}

/* With the preconditioner each chain's SIVE is unbiased for the exact
 * law of its frozen P (the test recomputes P from the gradients the
 * chain saw): the mean over chains within 3 SE of the mean target. */
START_TEST(precond_exact_given_p)
{
    static lsq m;
    lsq_make(&m, 7);
    const int64_t M = 20000, K = 48, freeze = (int64_t)floor(0.3 * (double)M) / 2;
    m.rec_steps = freeze;
    m.rec = malloc((size_t)(K * freeze * D) * sizeof *m.rec);
    ck_assert_ptr_nonnull(m.rec);
    sive_probe *p = lsq_probe(M, K, 32, 32);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, 1), SIVE_OK);
    sive_result *r = lsq_run(p, &m);
    double n = sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0), expect = 0.0, pmin = 1e9,
           pmax = 0.0;
    for (int32_t c = 0; c < K; c++) {
        double pc[D];
        frozen_p(m.rec + (size_t)c * (size_t)freeze * D, freeze, pc);
        for (int i = 0; i < D; i++)
            pmin = fmin(pmin, pc[i]), pmax = fmax(pmax, pc[i]);
        expect += precond_expect(&m, pc, 1000.0, 0.05, 0.5, n) / (double)K;
    }
    double se, mean = chain_mean(r, SIVE_STAT_SIVE_UNCLIPPED, &se);
    double plain = lsq_expect(&m, STAR, 1000.0, 0.05, 0.5, n);
    double z = (mean - expect) / se;
    printf("preconditioned (P in [%.3f, %.3f]): SIVE %.4f +- %.4f, exact given P %.4f "
           "(%+.2f %%, z %+.2f); plain chain's exact %.4f\n", pmin, pmax, mean, se, expect,
           100.0 * (mean / expect - 1.0), z, plain);
    ck_assert_msg(fabs(z) < 3.0, "preconditioned: z %g", z);
    ck_assert(pmax / pmin > 1.5); /* P is not the identity here */
    sive_result_free(r);
    sive_probe_free(p);
    free(m.rec);
}
END_TEST

int main(int argc, char **argv)
{
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    if (argc > 1 && strcmp(argv[1], "exact") == 0) {
        tcase_add_test(tc, gcv_recovers_full_batch_target);
        tcase_add_test(tc, precond_exact_given_p);
        tcase_add_test(tc, gcv_noise_recovers_full_batch_target);
    } else {
        tcase_add_loop_test(tc, eval_draws_leave_the_path, 0, 2);
        tcase_add_test(tc, sweep_over_groups_shares_the_path);
        tcase_add_test(tc, gcv_calls_and_option);
        tcase_add_test(tc, gcv_needs_data);
        tcase_add_test(tc, gcv_pass_callback_error);
        tcase_add_test(tc, gcv_pass_cancel);
        tcase_add_test(tc, gcv_result_file_and_merge);
        tcase_add_test(tc, precond_needs_burn_in);
        tcase_add_test(tc, gcv_noise_option);
        tcase_add_test(tc, grad_extrapolate_option);
        tcase_add_test(tc, grad_extrapolate_result_file_and_merge);
        tcase_add_test(tc, grad_extrapolate_removes_batch_heating);
        tcase_add_test(tc, gcv_noise_clipped_stat);
    }
    suite_add_tcase(s, tc);
    return check_run(s);
}
