/* The MLP adapter: a probe samples a tiny MLP; runs with 1 and 2 probe
 * threads (and 1 or 2 BLIS threads per chain) give bit-identical traces;
 * binding errors. */
#include <sive/data.h>
#include <sive/mlp.h>

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static sive_dataset *synth(size_t count, size_t rows, size_t cols, size_t k)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    uint8_t *px = malloc(count * rows * cols), *lb = malloc(count);
    for (size_t i = 0; i < count * rows * cols; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        px[i] = (uint8_t)(s >> 56);
    }
    for (size_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        lb[i] = (uint8_t)((s >> 33) % k);
    }
    sive_dataset *ds = NULL;
    ck_assert_int_eq(sive_dataset_from_memory(&ds, px, lb, count, rows, cols),
                     SIVE_OK);
    free(px);
    free(lb);
    return ds;
}

typedef struct fixture {
    sive_mlp *m;
    float *theta;
    sive_dataset *ds;
} fixture;

static fixture make_fixture(void)
{
    fixture f;
    ck_assert_int_eq(sive_mlp_new(&f.m, 16, 6, 5, 3), SIVE_OK);
    f.theta = malloc(sive_mlp_dim(f.m) * sizeof *f.theta);
    ck_assert_int_eq(sive_mlp_init_params(f.m, f.theta, 3), SIVE_OK);
    f.ds = synth(200, 4, 4, 3);
    return f;
}

static void free_fixture(fixture *f)
{
    free(f->theta);
    sive_mlp_free(f->m);
    sive_dataset_free(f->ds);
}

static sive_result *run(const fixture *f, int threads, int blis_threads,
                        int32_t max_chains)
{
    sive_probe *p;
    ck_assert_int_eq(sive_probe_new(&p, sive_mlp_dim(f->m)), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 80), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 3), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 17), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, threads), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 11), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    sive_mlp_binding *b;
    int rc = sive_mlp_probe_bind(&b, p, f->m, f->ds, max_chains, blis_threads);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    int64_t n;
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_DATA_SIZE, &n), SIVE_OK);
    ck_assert_int_eq(n, 200);
    sive_result *r = NULL;
    rc = sive_probe_run_f32(p, f->theta, &r);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_probe_errmsg(p));
    sive_mlp_binding_free(b);
    sive_probe_free(p);
    return r;
}

START_TEST(test_threads_bit_identical)
{
    fixture f = make_fixture();
    sive_result *r1 = run(&f, 1, 1, 0);
    sive_result *r2 = run(&f, 2, 1, 0);
    sive_result *r3 = run(&f, 2, 2, 3);
    ck_assert_int_eq(sive_result_chains_ok(r1), 3);
    for (int32_t c = 0; c < 3; c++)
        for (int t = 0; t < SIVE_TRACE_COUNT_; t++) {
            size_t n1, n2, n3;
            const double *a = sive_result_trace(r1, (sive_trace)t, c, &n1);
            const double *b = sive_result_trace(r2, (sive_trace)t, c, &n2);
            const double *d = sive_result_trace(r3, (sive_trace)t, c, &n3);
            ck_assert_uint_eq(n1, 80);
            ck_assert(n1 == n2 && n1 == n3);
            ck_assert_msg(memcmp(a, b, n1 * sizeof *a) == 0 &&
                              memcmp(a, d, n1 * sizeof *a) == 0,
                          "chain %d trace %d differs", (int)c, t);
        }
    /* the traces are the MLP's: finite losses around ln 3 */
    size_t n;
    const double *lbar = sive_result_trace(r1, SIVE_TRACE_LBAR, 0, &n);
    const double *gl = sive_result_trace(r1, SIVE_TRACE_GRAD_LOSS, 0, &n);
    ck_assert(isfinite(lbar[0]) && lbar[0] > 0.5 && lbar[0] < 2.5);
    ck_assert(isfinite(gl[0]) && gl[0] > 0.5 && gl[0] < 2.5);
    ck_assert(sive_result_lambda(r1) == sive_result_lambda(r2));
    sive_result_free(r1);
    sive_result_free(r2);
    sive_result_free(r3);
    free_fixture(&f);
}
END_TEST

START_TEST(test_bind_errors)
{
    fixture f = make_fixture();
    sive_probe *p, *p_wrong;
    ck_assert_int_eq(sive_probe_new(&p, sive_mlp_dim(f.m)), SIVE_OK);
    ck_assert_int_eq(sive_probe_new(&p_wrong, sive_mlp_dim(f.m) + 1), SIVE_OK);
    sive_mlp_binding *b = (sive_mlp_binding *)1;
    ck_assert_int_eq(sive_mlp_probe_bind(&b, p_wrong, f.m, f.ds, 0, 1),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(b);
    ck_assert_int_eq(sive_mlp_probe_bind(&b, p, f.m, f.ds, -1, 1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_mlp_probe_bind(&b, p, f.m, f.ds, 4097, 1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_mlp_probe_bind(&b, p, f.m, f.ds, 1, 0),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_mlp_probe_bind(&b, p, f.m, NULL, 1, 1),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_mlp_probe_bind(NULL, p, f.m, f.ds, 1, 1),
                     SIVE_E_INVALID_ARG);
    /* labels beyond the model's classes */
    uint8_t px[2 * 16] = {0}, lb[2] = {0, 5};
    sive_dataset *bad;
    ck_assert_int_eq(sive_dataset_from_memory(&bad, px, lb, 2, 4, 4), SIVE_OK);
    ck_assert_int_eq(sive_mlp_probe_bind(&b, p, f.m, bad, 1, 1),
                     SIVE_E_INVALID_ARG);
    sive_dataset_free(bad);

    /* more chains than the binding was made for: the run stops with
     * SIVE_E_CALLBACK and the callback's status is kept */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 10), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.0), SIVE_OK);
    ck_assert_int_eq(sive_mlp_probe_bind(&b, p, f.m, f.ds, 1, 1), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run_f32(p, f.theta, &r), SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_probe_callback_code(p), SIVE_E_INVALID_ARG);
    sive_result_free(r);
    sive_mlp_binding_free(b);
    sive_mlp_binding_free(NULL);
    sive_probe_free(p);
    sive_probe_free(p_wrong);
    free_fixture(&f);
}
END_TEST

/* Plain callbacks on the public compute functions: every draw goes through
 * the network (the adapter evaluates distinct examples once when draws
 * repeat a lot, as with 40 draws from 30 examples here). */
typedef struct plain {
    const sive_mlp *m;
    const sive_dataset *ds;
    sive_mlp_work *w[2];
} plain;

static int plain_grad(const float *theta, size_t d, const sive_batch *b, float *g,
                      double *loss, void *user)
{
    plain *P = user;
    (void)d;
    return sive_mlp_loss_grad(P->m, P->w[b->chain], theta, P->ds, b->index,
                              b->group_size, g, loss);
}

static int plain_eval(const float *theta, size_t d, const sive_batch *b, double *gl,
                      void *user)
{
    plain *P = user;
    (void)d;
    return sive_mlp_group_losses(P->m, P->w[b->chain], theta, P->ds, b->index,
                                 b->n_groups, b->group_size, gl);
}

START_TEST(test_adapter_repeated_draws)
{
    fixture f = make_fixture();
    sive_dataset_free(f.ds);
    f.ds = synth(30, 4, 4, 3);
    sive_result *r[3];
    for (int k = 0; k < 3; k++) {
        sive_probe *p;
        ck_assert_int_eq(sive_probe_new(&p, sive_mlp_dim(f.m)), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 40), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 5), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 7), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, k == 2 ? 2 : 1), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
        sive_mlp_binding *b = NULL;
        plain P = {f.m, f.ds, {NULL, NULL}};
        if (k == 0) {
            for (int c = 0; c < 2; c++)
                ck_assert_int_eq(sive_mlp_work_new(&P.w[c], f.m, 0, 1), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DATA_SIZE, 30), SIVE_OK);
            ck_assert_int_eq(sive_probe_set_callbacks_f32(p, plain_grad, plain_eval, &P),
                             SIVE_OK);
        } else {
            ck_assert_int_eq(sive_mlp_probe_bind(&b, p, f.m, f.ds, 0, 1), SIVE_OK);
        }
        int rc = sive_probe_run_f32(p, f.theta, &r[k]);
        ck_assert_msg(rc == SIVE_OK, "%s", sive_probe_errmsg(p));
        sive_mlp_binding_free(b);
        for (int c = 0; c < 2; c++)
            sive_mlp_work_free(P.w[c]);
        sive_probe_free(p);
    }
    for (int32_t c = 0; c < 2; c++) {
        size_t n0, n1, n2;
        const double *a = sive_result_trace(r[0], SIVE_TRACE_LBAR, c, &n0);
        const double *b = sive_result_trace(r[1], SIVE_TRACE_LBAR, c, &n1);
        const double *e = sive_result_trace(r[2], SIVE_TRACE_LBAR, c, &n2);
        ck_assert(n0 == 40 && n1 == 40 && n2 == 40);
        ck_assert(memcmp(b, e, n1 * sizeof *b) == 0); /* thread count */
        for (size_t i = 0; i < n0; i++)
            ck_assert_msg(fabs(a[i] - b[i]) <= 1e-6 * fabs(a[i]), "chain %d step %zu", c, i);
    }
    for (int k = 0; k < 3; k++)
        sive_result_free(r[k]);
    free_fixture(&f);
}
END_TEST

static Suite *adapter_suite(void)
{
    Suite *s = suite_create("mlp_probe");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_threads_bit_identical);
    tcase_add_test(tc, test_bind_errors);
    tcase_add_test(tc, test_adapter_repeated_draws);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(adapter_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
