/* Control variates (SIVE_OPT_CONTROL_VARIATE, docs/theory.md "Control
 * variates") on a model with real per-example losses and an exact target:
 * least-squares regression, l_j(theta) = (x_j.theta - y_j)^2 / 2 on n
 * synthetic examples, with the full-data gradient.  The tethered ULA chain
 * is then Gaussian and t^2 Var_q[L_n] has a closed form (an AR(1) per
 * eigen-direction of A = X'X/n; test/exact_ula.h).
 *
 * Checked: SIVE with and without control variates agrees with the closed
 * form within 3 standard errors over many chains; the noise correction is
 * over 10x smaller with them at the same N*B_eval; the Langevin path does
 * not depend on the option; the table and the per-step recomputation of
 * l_j(theta*) give the same bits; result files keep the option (and
 * files of format version 1 still load); the
 * health flags still report a correction that is large against lambda-hat;
 * a group-only model and a failing callback at theta* are refused; on the
 * reference MLP (float32) the first step, at theta* itself, reports
 * Lbar = L_n(theta*) with no spread between groups. */
#include <sive/data.h>
#include <sive/mlp.h>
#include <sive/sive.h>

#include "check_run.h"
#include "sres_forge.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lsq.h"

/* Group means of the per-example losses (a group-only model of the same
 * data, for the refusal test). */
static int lsq_groups(const void *theta, size_t d, const sive_batch *b, double *gl,
                      void *user)
{
    (void)theta, (void)d, (void)user;
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = 0.0;
    return 0;
}

static sive_probe *probe_for(int cv, int64_t steps, int64_t chains, int64_t groups,
                             int64_t batch)
{
    sive_probe *p = lsq_probe(steps, chains, groups, batch);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, cv), SIVE_OK);
    return p;
}

/* A run of the probe_for() configuration on m. */
static sive_result *run_with(lsq *m, int cv, int64_t steps, int64_t chains, int64_t groups,
                             int64_t batch)
{
    sive_probe *p = probe_for(cv, steps, chains, groups, batch);
    sive_result *r = lsq_run(p, m);
    sive_probe_free(p);
    return r;
}

/* Mean over chains of a per-chain statistic and its standard error. */
static double chain_mean(const sive_result *r, sive_stat s, double *se)
{
    int32_t K = sive_result_chains(r);
    double sum = 0.0;
    for (int32_t c = 0; c < K; c++)
        sum += sive_result_stat(r, s, c);
    *se = sive_result_stat_std(r, s) / sqrt((double)K);
    return sum / K;
}

START_TEST(exact_target_with_and_without)
{
    static lsq m;
    lsq_make(&m, 7);
    const int64_t M = 20000, K = 48;
    double expect = 0.0, c[2] = {0.0, 0.0};
    for (int cv = 0; cv <= 1; cv++) {
        sive_probe *p = probe_for(cv, M, K, 32, 32);
        sive_result *r = lsq_run(p, &m);
        double n = sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0), se, ce;
        expect = lsq_expect(&m, STAR, 1000.0, 0.05, 0.5, n);
        double mean = chain_mean(r, SIVE_STAT_SIVE_UNCLIPPED, &se);
        c[cv] = chain_mean(r, SIVE_STAT_NOISE_CORRECTION, &ce);
        printf("control_variate %d: SIVE %.4f +- %.4f (exact %.4f, z %+.2f), "
               "correction %.3f, MCSE of the mean %.4f\n", cv, mean, se, expect,
               (mean - expect) / se, c[cv], sive_result_mcse(r));
        ck_assert_msg(fabs(mean - expect) < 3.0 * se,
                      "control_variate %d: SIVE %g vs exact %g (se %g)", cv, mean, expect, se);
        sive_result_free(r);
        sive_probe_free(p);
    }
    ck_assert_msg(c[1] * 10.0 <= c[0], "correction %g with control variates, %g without",
                  c[1], c[0]);
}
END_TEST

/* The option changes what is evaluated, never the Langevin path: the
 * displacement traces are the same bits. */
START_TEST(same_path)
{
    static lsq m;
    lsq_make(&m, 3);
    sive_result *r[2] = {run_with(&m, 0, 400, 2, 8, 8), run_with(&m, 1, 400, 2, 8, 8)};
    size_t n;
    ck_assert(sive_result_trace(r[0], SIVE_TRACE_DISP, 1, &n) && n == 400);
    ck_assert(same_trace(r[0], r[1], SIVE_TRACE_DISP, 1));
    ck_assert(!same_trace(r[0], r[1], SIVE_TRACE_LBAR, 1));
    int64_t v = -1;
    ck_assert_int_eq(sive_result_option_int(r[1], SIVE_OPT_CONTROL_VARIATE, &v), SIVE_OK);
    ck_assert_int_eq(v, 1);
    sive_result_free(r[0]);
    sive_result_free(r[1]);
}
END_TEST

/* Without a table (SIVE_CV_TABLE_MAX below n) each step evaluates its
 * draws at theta* again: the same values, so the same bits. */
START_TEST(table_and_recompute_agree)
{
    static lsq m;
    lsq_make(&m, 5);
    sive_result *r[2];
    r[0] = run_with(&m, 1, 300, 3, 8, 16);
    setenv("SIVE_CV_TABLE_MAX", "10", 1);
    r[1] = run_with(&m, 1, 300, 3, 8, 16);
    unsetenv("SIVE_CV_TABLE_MAX");
    for (int32_t c = 0; c < 3; c++)
        ck_assert(same_trace(r[0], r[1], SIVE_TRACE_LBAR, c));
    double l0 = sive_result_lambda(r[0]), l1 = sive_result_lambda(r[1]);
    ck_assert(memcmp(&l0, &l1, sizeof l0) == 0);
    sive_result_free(r[0]);
    sive_result_free(r[1]);
}
END_TEST

/* A correction that is large against lambda-hat (N*B_eval = 2 draws) is
 * still reported with control variates. */
START_TEST(noisy_correction_still_flagged)
{
    static lsq m;
    lsq_make(&m, 11);
    sive_result *r = run_with(&m, 1, 4000, 4, 2, 1);
    uint32_t f = sive_result_flags(r);
    printf("N*B_eval 2 with control variates: lambda %.3f, C %.3f +- %.3f, flags 0x%x\n",
           sive_result_lambda(r), sive_result_noise_correction(r),
           sive_result_noise_correction_std(r), (unsigned)f);
    ck_assert(f & SIVE_FLAG_NOISY_CORRECTION);
    ck_assert(f & SIVE_FLAG_DOMINANT_CORRECTION);
    sive_result_free(r);
}
END_TEST

/* A 2-chain run of m with control variates that may fail before its
 * chains: *r is pre-set to a non-NULL pointer, to see it cleared. */
static int run_raw(lsq *m, int group_only, sive_probe **p, sive_result **r)
{
    sive_model sm;
    lsq_model(&sm, m);
    if (group_only) {
        sm.loss = NULL;
        sm.group_loss = lsq_groups;
    }
    *p = probe_for(1, 100, 2, 4, 4);
    *r = (sive_result *)m;
    return sive_probe_run(*p, &sm, STAR, r);
}

START_TEST(group_only_model_refused)
{
    static lsq m;
    lsq_make(&m, 1);
    sive_probe *p;
    sive_result *r;
    ck_assert_int_eq(run_raw(&m, 1, &p, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "per-example"), "%s", sive_probe_errmsg(p));
    sive_probe_free(p);
}
END_TEST

START_TEST(callback_failure_at_star)
{
    static lsq m;
    lsq_make(&m, 1);
    m.fail_at_star = 1;
    sive_probe *p;
    sive_result *r;
    /* like any callback error: a result whose status says so, the
     * callback's code kept, no chain run */
    ck_assert_int_eq(run_raw(&m, 0, &p, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_result_callback_code(r), 7);
    ck_assert_int_eq(sive_result_chains_ok(r), 0);
    const char *msg = sive_result_errmsg(r);
    ck_assert_msg(strstr(msg, "theta*") && strstr(msg, "returned 7") &&
                      strstr(msg, "no losses at theta* today"), "%s", msg);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* C1: the pass at theta* reports progress as chain -1 and can be
 * cancelled (it could not: a long pass ignored Ctrl-C). */
static int cancel_at_star(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)step;
    int *seen = user;
    if (chain == -1) {
        ck_assert_int_eq(total, NEX);
        *seen += 1;
    }
    return chain == -1;
}

START_TEST(cancel_at_star_pass)
{
    static lsq m;
    lsq_make(&m, 1);
    sive_model sm;
    lsq_model(&sm, &m);
    sive_probe *p = probe_for(1, 100, 2, 4, 4);
    int seen = 0;
    ck_assert_int_eq(sive_probe_set_progress(p, cancel_at_star, &seen), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &sm, STAR, &r), SIVE_OK);
    ck_assert_int_eq(seen, 1);
    ck_assert_int_eq(sive_result_status(r), SIVE_E_CANCELLED);
    ck_assert_int_eq(sive_result_chains_ok(r), 0);
    ck_assert_msg(strstr(sive_result_errmsg(r), "theta*"), "%s", sive_result_errmsg(r));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A loss that is not finite at theta* is the model's fault, found before
 * any chain: no result. */
START_TEST(nan_at_star_refused)
{
    static lsq m;
    lsq_make(&m, 1);
    m.fail_at_star = 2;
    sive_probe *p;
    sive_result *r;
    ck_assert_int_eq(run_raw(&m, 0, &p, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "example 100 at theta* is nan"), "%s",
                  sive_probe_errmsg(p));
    sive_probe_free(p);
}
END_TEST

/* lsq's losses with example 100 not finite at theta* when a chain asks
 * (the recomputation beyond the table limit evaluates theta* as chain c),
 * finite in the pass at theta* (chain -1): a callback whose losses depend
 * on the batch, as with float32 reductions or dropout left on. */
static int nan_at_star_loss(const void *theta, size_t d, const sive_batch *b,
                            double *losses, void *user)
{
    int rc = lsq_loss(theta, d, b, losses, user);
    if (b->chain >= 0 && !memcmp(theta, STAR, sizeof STAR))
        for (size_t i = 0; i < b->group_size; i++)
            if (b->index[i] == 100)
                losses[i] = NAN;
    return rc;
}

/* Without a table a step's recomputation may meet such a loss: the pass's
 * answer (no result, the theta* message), not a diverged chain. */
START_TEST(nan_at_star_recomputed)
{
    static lsq m;
    lsq_make(&m, 1);
    sive_model sm;
    lsq_model(&sm, &m);
    sm.loss = nan_at_star_loss;
    sive_probe *p = probe_for(1, 400, 2, 4, 4);
    sive_result *r = (sive_result *)&m;
    setenv("SIVE_CV_TABLE_MAX", "10", 1);
    int rc = sive_probe_run(p, &sm, STAR, &r);
    unsetenv("SIVE_CV_TABLE_MAX");
    ck_assert_msg(rc == SIVE_E_INVALID_ARG, "rc %d: %s", rc,
                  r ? sive_result_errmsg(r) : "");
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "example 100 at theta* is nan"), "%s",
                  sive_probe_errmsg(p));
    sive_probe_free(p);
}
END_TEST

/* Saved and loaded, the option survives; parts with and without control
 * variates do not merge. */
START_TEST(result_file_and_merge)
{
    static lsq m;
    lsq_make(&m, 2);
    sive_result *part[2];
    for (int k = 0; k < 2; k++) {
        sive_probe *p = probe_for(k, 200, 2, 4, 4);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, k), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, k + 1), SIVE_OK);
        part[k] = lsq_run(p, &m);
        sive_probe_free(p);
    }
    lsq_saved_not_merged(part, SIVE_OPT_CONTROL_VARIATE, "control_variate");
}
END_TEST

/* FNV-1a 64, as the result file's checksum. */
static uint64_t fnv1a64(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* A file of format version 1 (0.2.0: no control_variate,
 * grad_control_variate and precondition words after the seed, payload
 * words 18 to 20, and no identity) still loads, with the options 0.  It
 * is made from this library's format-4 file through format 3
 * (test/sres_forge.h). */
START_TEST(reads_version_1_files)
{
    static lsq m;
    lsq_make(&m, 4);
    sive_result *r = run_with(&m, 0, 100, 1, 4, 4);
    char path[] = "/tmp/sive-cv1-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(sive_result_save(r, path, NULL), SIVE_OK);
    FILE *f = fopen(path, "rb");
    static unsigned char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert(len > 200 && len < sizeof buf);
    len = sres_to_v3(buf, len);
    /* format 3's identity word (absolute offset 256: after the 2 sampler
     * words and theta_hash) goes first */
    memmove(buf + 256, buf + 264, len - 264);
    len -= 8;
    const size_t at = 24 + 18 * 8; /* header, then 6 f64 and 12 i64 options */
    memmove(buf + at, buf + at + 24, len - at - 24);
    len -= 24;
    buf[8] = 1;
    uint64_t plen = len - 24 - 8, h;
    for (int i = 0; i < 8; i++)
        buf[16 + i] = (unsigned char)(plen >> (8 * i));
    h = fnv1a64(buf, len - 8);
    for (int i = 0; i < 8; i++)
        buf[len - 8 + i] = (unsigned char)(h >> (8 * i));
    f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    sive_result *back = NULL;
    ck_assert_msg(sive_result_load(path, &back, NULL) == SIVE_OK, "%s", sive_last_errmsg());
    int64_t v = -1;
    ck_assert_int_eq(sive_result_option_int(back, SIVE_OPT_CONTROL_VARIATE, &v), SIVE_OK);
    ck_assert_int_eq(v, 0);
    ck_assert_int_eq(sive_result_option_int(back, SIVE_OPT_GRAD_CONTROL_VARIATE, &v), SIVE_OK);
    ck_assert_int_eq(v, 0);
    double a = sive_result_lambda(r), b = sive_result_lambda(back);
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
    unlink(path);
    close(fd);
    sive_result_free(back);
    sive_result_free(r);
}
END_TEST

#ifndef SIVE_DATA_DIR
#define SIVE_DATA_DIR "data"
#endif

/* At step 0 the chain is at theta*: every D_j is l_j(theta*) - l_j(theta*)
 * (float32 forward passes of different batches: equal up to rounding), so
 * s2_0 ~ 0 and Lbar_0 = L_n(theta*), here recomputed independently. */
START_TEST(mlp_first_step_is_the_full_loss)
{
    sive_dataset *train = NULL, *test = NULL;
    ck_assert_int_eq(sive_dataset_open_dir(SIVE_DATA_DIR, &train, &test), SIVE_OK);
    sive_mlp *m = NULL;
    ck_assert_int_eq(sive_mlp_new(&m, 784, 16, 16, 10), SIVE_OK);
    size_t d = sive_mlp_dim(m), n = sive_dataset_count(train);
    float *theta = malloc(d * sizeof *theta);
    uint64_t *idx = malloc(n * sizeof *idx);
    double *loss = malloc(n * sizeof *loss);
    ck_assert(theta && idx && loss);
    ck_assert_int_eq(sive_mlp_init_params(m, theta, 3), SIVE_OK);
    sive_mlp_work *w = NULL;
    ck_assert_int_eq(sive_mlp_work_new(&w, m, 0, 1), SIVE_OK);
    for (size_t j = 0; j < n; j++)
        idx[j] = j;
    ck_assert_int_eq(sive_mlp_example_losses(m, w, theta, train, idx, n, loss), SIVE_OK);
    double full = 0.0;
    for (size_t j = 0; j < n; j++)
        full += loss[j] / (double)n;
    sive_model sm;
    ck_assert_int_eq(sive_model_init(&sm, sizeof sm), SIVE_OK);
    ck_assert_int_eq(sive_mlp_model(&sm, m, train, 1), SIVE_OK);
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 16), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 32), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, 1), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_msg(sive_probe_run(p, &sm, theta, &r) == SIVE_OK, "%s", sive_probe_errmsg(p));
    size_t len;
    const double *lbar = sive_result_trace(r, SIVE_TRACE_LBAR, 0, &len);
    const double *s2 = sive_result_trace(r, SIVE_TRACE_S2, 0, &len);
    ck_assert_uint_eq(len, 8);
    ck_assert_msg(fabs(lbar[0] - full) <= 1e-6 * full, "Lbar_0 %.10g vs L_n %.10g", lbar[0], full);
    ck_assert_msg(s2[0] <= 1e-12 * full * full, "s2_0 %g", s2[0]);
    ck_assert(s2[7] > s2[0]); /* later steps move away from theta* */
    sive_result_free(r);
    sive_probe_free(p);
    sive_model_destroy(&sm);
    sive_mlp_work_free(w);
    sive_mlp_free(m);
    sive_dataset_free(train);
    sive_dataset_free(test);
    free(theta);
    free(idx);
    free(loss);
}
END_TEST

/* "exact": the exactness check over many chains (~10 s in a release
 * build; meson's 'slow' suite, which the sanitizer run skips); otherwise
 * everything else. */
int main(int argc, char **argv)
{
    int exact = argc > 1 && strcmp(argv[1], "exact") == 0;
    Suite *s = suite_create("control_variate");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    if (exact) {
        tcase_add_test(tc, exact_target_with_and_without);
    } else {
        tcase_add_test(tc, same_path);
        tcase_add_test(tc, table_and_recompute_agree);
        tcase_add_test(tc, noisy_correction_still_flagged);
        tcase_add_test(tc, group_only_model_refused);
        tcase_add_test(tc, callback_failure_at_star);
        tcase_add_test(tc, cancel_at_star_pass);
        tcase_add_test(tc, nan_at_star_refused);
        tcase_add_test(tc, nan_at_star_recomputed);
        tcase_add_test(tc, result_file_and_merge);
        tcase_add_test(tc, reads_version_1_files);
        tcase_add_test(tc, mlp_first_step_is_the_full_loss);
    }
    suite_add_tcase(s, tc);
    return check_run(s);
}
