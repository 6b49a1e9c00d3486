/* The MLP as a probe model (sive_mlp_model): a probe samples a tiny MLP;
 * runs with 1 and 2 probe threads (and 1 or 2 BLIS threads) give
 * bit-identical traces; the library's per-example grouping matches plain
 * grouped evaluation; constructor errors; a failing callback's message
 * reaches the result; the model outlives the architecture it was made from. */
#include <sive/data.h>
#include <sive/mlp.h>

#include "check_run.h"

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

static int n_traces(void)
{
    int k = 0;
    while (sive_trace_name((sive_trace)k))
        k++;
    return k;
}

/* A run that must finish: the probe accepted it and every chain ran. */
static sive_result *run_ok(sive_probe *p, const sive_model *m, const float *theta)
{
    sive_result *r = NULL;
    int rc = sive_probe_run(p, m, theta, &r);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_probe_errmsg(p));
    ck_assert_msg(sive_result_status(r) == SIVE_OK, "%s", sive_result_errmsg(r));
    return r;
}

/* With n > 0: only the parameter ranges moved (sive_probe_set_params). */
static int same_lbar(const sive_result *a, const sive_result *b, int32_t c)
{
    size_t na, nb;
    const double *x = sive_result_trace(a, SIVE_TRACE_LBAR, c, &na);
    const double *y = sive_result_trace(b, SIVE_TRACE_LBAR, c, &nb);
    return na == nb && memcmp(x, y, na * sizeof *x) == 0;
}

static sive_result *run_params(const fixture *f, int threads, int blis_threads,
                               const uint64_t *ranges, size_t n)
{
    sive_probe *p;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    if (n)
        ck_assert_int_eq(sive_probe_set_params(p, ranges, n), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 80), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 3), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 17), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, threads), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 11), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    sive_model model;
    ck_assert_int_eq(sive_model_init(&model, sizeof model), SIVE_OK);
    int rc = sive_mlp_model(&model, f->m, f->ds, blis_threads);
    ck_assert_msg(rc == SIVE_OK, "%s", sive_last_errmsg());
    ck_assert_uint_eq(model.n_examples, 200);
    ck_assert_uint_eq(model.dim, sive_mlp_dim(f->m));
    ck_assert_int_eq(model.dtype, SIVE_F32);
    ck_assert(model.grad && model.loss && model.destroy);
    sive_result *r = run_ok(p, &model, f->theta);
    sive_model_destroy(&model);
    sive_probe_free(p);
    return r;
}

static sive_result *run(const fixture *f, int threads, int blis_threads)
{
    return run_params(f, threads, blis_threads, NULL, 0);
}

/* The six named blocks, as six ranges, cover theta: the unrestricted run
 * bit for bit (losses, path, lambda-hat; the norms of the step sum the
 * blocks in another order, so they agree to rounding).  One layer alone
 * is another probe. */
START_TEST(test_params_cover_bit_identical)
{
    fixture f = make_fixture();
    static const char *const names[] = {"1.weight", "1.bias", "2.weight",
                                        "2.bias", "3.weight", "3.bias"};
    uint64_t r6[12], l3[2];
    for (int k = 0; k < 6; k++)
        ck_assert_int_eq(sive_mlp_param_range(f.m, names[k], &r6[2 * k], &r6[2 * k + 1]),
                         SIVE_OK);
    ck_assert_uint_eq(r6[0], 0);
    ck_assert_uint_eq(r6[11], sive_mlp_dim(f.m));
    for (int k = 1; k < 6; k++)
        ck_assert_uint_eq(r6[2 * k], r6[2 * k - 1]);
    ck_assert_int_eq(sive_mlp_param_range(f.m, "layer3", &l3[0], &l3[1]), SIVE_OK);
    ck_assert(l3[0] == r6[8] && l3[1] == r6[11]);
    uint64_t b, e;
    ck_assert_int_eq(sive_mlp_param_range(f.m, "4.weight", &b, &e), SIVE_E_INVALID_ARG);
    sive_result *all = run(&f, 2, 1), *cover = run_params(&f, 2, 1, r6, 6);
    sive_result *last = run_params(&f, 2, 1, l3, 1);
    ck_assert_uint_eq(sive_result_params_dim(last), l3[1] - l3[0]);
    for (int32_t c = 0; c < 3; c++) {
        size_t n1, n2;
        for (int t = 0; t < n_traces(); t++) {
            const double *a = sive_result_trace(all, (sive_trace)t, c, &n1);
            const double *x = sive_result_trace(cover, (sive_trace)t, c, &n2);
            ck_assert_uint_eq(n1, n2);
            for (size_t i = 0; i < n1; i++) {
                if (t == SIVE_TRACE_DISP || t == SIVE_TRACE_GRAD_NORM)
                    ck_assert(fabs(a[i] - x[i]) <= 1e-12 * fabs(a[i]));
                else
                    ck_assert_msg(memcmp(&a[i], &x[i], sizeof a[i]) == 0,
                                  "chain %d trace %d step %zu", (int)c, t, i);
            }
        }
        ck_assert(!same_lbar(all, last, c));
    }
    ck_assert(sive_result_lambda(all) == sive_result_lambda(cover));
    sive_result_free(all);
    sive_result_free(cover);
    sive_result_free(last);
    free_fixture(&f);
}
END_TEST

START_TEST(test_threads_bit_identical)
{
    fixture f = make_fixture();
    sive_result *r1 = run(&f, 1, 1);
    sive_result *r2 = run(&f, 2, 1);
    sive_result *r3 = run(&f, 2, 2);
    ck_assert_int_eq(sive_result_chains_ok(r1), 3);
    for (int32_t c = 0; c < 3; c++)
        for (int t = 0; t < n_traces(); t++) {
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

/* A refused constructor leaves the model as sive_model_init() made it. */
static void expect_refused(sive_model *out, const sive_mlp *m, const sive_dataset *ds,
                           int blis_threads)
{
    ck_assert_int_eq(sive_mlp_model(out, m, ds, blis_threads), SIVE_E_INVALID_ARG);
    ck_assert_int_gt((int)strlen(sive_last_errmsg()), 0);
    if (out)
        ck_assert(!out->grad && !out->loss && !out->user && !out->destroy &&
                  out->dim == 0 && out->n_examples == 0);
}

START_TEST(test_model_errors)
{
    fixture f = make_fixture();
    sive_model model;
    ck_assert_int_eq(sive_model_init(&model, sizeof model), SIVE_OK);
    expect_refused(&model, f.m, f.ds, 0);
    expect_refused(&model, f.m, f.ds, 1025);
    expect_refused(&model, f.m, NULL, 1);
    expect_refused(&model, NULL, f.ds, 1);
    expect_refused(NULL, f.m, f.ds, 1);
    /* labels beyond the model's classes; examples of another size */
    uint8_t px[2 * 20] = {0}, lb[2] = {0, 5};
    sive_dataset *bad;
    ck_assert_int_eq(sive_dataset_from_memory(&bad, px, lb, 2, 4, 4), SIVE_OK);
    expect_refused(&model, f.m, bad, 1);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "label"));
    sive_dataset_free(bad);
    lb[1] = 1;
    ck_assert_int_eq(sive_dataset_from_memory(&bad, px, lb, 2, 4, 5), SIVE_OK);
    expect_refused(&model, f.m, bad, 1);
    sive_dataset_free(bad);
    /* a model not prepared by sive_model_init() */
    sive_model raw;
    memset(&raw, 0, sizeof raw);
    expect_refused(&raw, f.m, f.ds, 1);
    ck_assert_int_eq(sive_mlp_model(&model, f.m, f.ds, 1), SIVE_OK);
    sive_model_destroy(&model);
    sive_model_destroy(&model); /* idempotent */
    free_fixture(&f);
}
END_TEST

/* A model whose n_examples claims more examples than its data set: the
 * MLP's own check fails the run, with its status as the callback code and
 * its message in the result. */
START_TEST(test_callback_message)
{
    fixture f = make_fixture();
    sive_probe *p;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 10), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.0), SIVE_OK);
    sive_model model;
    ck_assert_int_eq(sive_model_init(&model, sizeof model), SIVE_OK);
    ck_assert_int_eq(sive_mlp_model(&model, f.m, f.ds, 1), SIVE_OK);
    sive_model lying = model;
    lying.n_examples = 1000000; /* 512*64 draws: some are >= 200 */
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &lying, f.theta, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_result_callback_code(r), SIVE_E_INVALID_ARG);
    const char *msg = sive_result_errmsg(r);
    ck_assert_msg(strstr(msg, "returned -1") && strstr(msg, "out of range"), "%s", msg);
    sive_result_free(r);
    /* the real description still works with the same state */
    sive_result_free(run_ok(p, &model, f.theta));
    sive_model_destroy(&model);
    sive_probe_free(p);
    free_fixture(&f);
}
END_TEST

/* Gradient control variates' gradient at theta*: after the pass at theta*
 * (chain and step -1, two chunks) the model sums cached per-example pieces;
 * that gradient equals sive_mlp_loss_grad() on the same batch (300 draws
 * with repeats, two blocks) to float rounding; before the pass is complete
 * and at another theta it is the plain path, bit for bit. */
START_TEST(test_star_cache_matches_plain_gradient)
{
    fixture f = make_fixture();
    const size_t d = sive_mlp_dim(f.m);
    float *g0 = malloc(d * sizeof *g0), *g1 = malloc(d * sizeof *g1),
          *other = malloc(d * sizeof *other);
    for (size_t i = 0; i < d; i++)
        other[i] = f.theta[i] + 1e-3f;
    sive_model model;
    sive_mlp_work *w = NULL;
    ck_assert_int_eq(sive_model_init(&model, sizeof model), SIVE_OK);
    ck_assert_int_eq(sive_mlp_model(&model, f.m, f.ds, 1), SIVE_OK);
    ck_assert_int_eq(sive_mlp_work_new(&w, f.m, 0, 1), SIVE_OK);
    uint64_t idx[200], bidx[300];
    for (uint64_t j = 0; j < 200; j++)
        idx[j] = j;
    for (uint64_t j = 0; j < 300; j++)
        bidx[j] = (j * 37 + 11) % 200;
    sive_batch b = {.index = bidx, .n_groups = 1, .group_size = 300, .chain = 1,
                    .worker = 0, .step = 9};
    sive_batch pass = {.index = idx, .n_groups = 1, .group_size = 120, .chain = -1,
                       .worker = 0, .step = -1};
    double l0, l1;
    ck_assert_int_eq(sive_mlp_loss_grad(f.m, w, f.theta, f.ds, bidx, 300, g0, &l0), SIVE_OK);
    ck_assert_int_eq(model.grad(f.theta, d, &pass, g1, &l1, model.user), SIVE_OK);
    ck_assert_int_eq(model.grad(f.theta, d, &b, g1, &l1, model.user), SIVE_OK);
    ck_assert_mem_eq(g1, g0, d * sizeof *g0); /* half the pass: plain */
    pass.index = idx + 120;
    pass.group_size = 80;
    ck_assert_int_eq(model.grad(f.theta, d, &pass, g1, &l1, model.user), SIVE_OK);
    ck_assert_int_eq(model.grad(f.theta, d, &b, g1, &l1, model.user), SIVE_OK);
    float diff = 0.0f, norm = 0.0f;
    for (size_t i = 0; i < d; i++) {
        diff = fmaxf(diff, fabsf(g1[i] - g0[i]));
        norm = fmaxf(norm, fabsf(g0[i]));
    }
    ck_assert_msg(diff <= 1e-5f * norm, "cached gradient off by %g (max |g| %g)", diff, norm);
    ck_assert_double_eq_tol(l1, l0, 1e-6 * l0);
    ck_assert_int_eq(sive_mlp_loss_grad(f.m, w, other, f.ds, bidx, 300, g0, &l0), SIVE_OK);
    ck_assert_int_eq(model.grad(other, d, &b, g1, &l1, model.user), SIVE_OK);
    ck_assert_mem_eq(g1, g0, d * sizeof *g0);
    bidx[5] = 200;
    ck_assert_int_eq(model.grad(f.theta, d, &b, g1, &l1, model.user), SIVE_E_INVALID_ARG);
    sive_mlp_work_free(w);
    sive_model_destroy(&model);
    free(g0);
    free(g1);
    free(other);
    free_fixture(&f);
}
END_TEST

/* The model keeps its own architecture: freeing m after the constructor
 * leaves nothing dangling (0.1's binding pointed into the caller's). */
START_TEST(test_model_outlives_architecture)
{
    fixture f = make_fixture();
    sive_result *want = run(&f, 1, 1);
    sive_mlp *copy = NULL;
    ck_assert_int_eq(sive_mlp_new(&copy, 16, 6, 5, 3), SIVE_OK);
    sive_model model;
    ck_assert_int_eq(sive_model_init(&model, sizeof model), SIVE_OK);
    ck_assert_int_eq(sive_mlp_model(&model, copy, f.ds, 1), SIVE_OK);
    sive_mlp_free(copy);
    sive_probe *p;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    const char *opts[][2] = {{"steps", "80"}, {"chains", "3"}, {"groups", "8"},
                             {"eval_batch", "5"}, {"grad_batch", "17"}, {"seed", "11"},
                             {"t", "100"}};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        ck_assert_int_eq(sive_probe_set_text(p, opts[i][0], opts[i][1]), SIVE_OK);
    sive_result *got = run_ok(p, &model, f.theta);
    size_t n1, n2;
    const double *a = sive_result_trace(want, SIVE_TRACE_LBAR, 2, &n1);
    const double *b = sive_result_trace(got, SIVE_TRACE_LBAR, 2, &n2);
    ck_assert(n1 == 80 && n2 == 80 && memcmp(a, b, n1 * sizeof *a) == 0);
    sive_result_free(want);
    sive_result_free(got);
    sive_model_destroy(&model);
    sive_probe_free(p);
    free_fixture(&f);
}
END_TEST

/* Plain group callbacks on the public compute functions: every draw goes
 * through the network, while the MLP model's per-example form lets the
 * library evaluate each distinct example once (draws repeat a lot here:
 * 40 draws from 30 examples). */
typedef struct plain {
    const sive_mlp *m;
    const sive_dataset *ds;
    sive_mlp_work *w[2];
} plain;

static int plain_grad(const void *theta, size_t d, const sive_batch *b, void *g,
                      double *loss, void *user)
{
    plain *P = user;
    (void)d;
    return sive_mlp_loss_grad(P->m, P->w[b->worker], theta, P->ds, b->index,
                              b->group_size, g, loss);
}

static int plain_eval(const void *theta, size_t d, const sive_batch *b, double *gl,
                      void *user)
{
    plain *P = user;
    (void)d;
    return sive_mlp_group_losses(P->m, P->w[b->worker], theta, P->ds, b->index,
                                 b->n_groups, b->group_size, gl);
}

static sive_result *run_small(const fixture *f, const sive_model *m, int threads)
{
    sive_probe *p;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 40), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 7), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, threads), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    sive_result *r = run_ok(p, m, f->theta);
    sive_probe_free(p);
    return r;
}

START_TEST(test_model_repeated_draws)
{
    fixture f = make_fixture();
    sive_dataset_free(f.ds);
    f.ds = synth(30, 4, 4, 3);
    plain P = {f.m, f.ds, {NULL, NULL}};
    for (int c = 0; c < 2; c++)
        ck_assert_int_eq(sive_mlp_work_new(&P.w[c], f.m, 0, 1), SIVE_OK);
    sive_model pm, mm;
    ck_assert_int_eq(sive_model_init(&pm, sizeof pm), SIVE_OK);
    pm.dtype = SIVE_F32;
    pm.dim = sive_mlp_dim(f.m);
    pm.n_examples = 30;
    pm.grad = plain_grad;
    pm.group_loss = plain_eval;
    pm.user = &P;
    ck_assert_int_eq(sive_model_init(&mm, sizeof mm), SIVE_OK);
    ck_assert_int_eq(sive_mlp_model(&mm, f.m, f.ds, 1), SIVE_OK);
    sive_result *r[3] = {run_small(&f, &pm, 2), run_small(&f, &mm, 1),
                         run_small(&f, &mm, 2)};
    for (int32_t c = 0; c < 2; c++) {
        size_t n0, n1, n2;
        const double *a = sive_result_trace(r[0], SIVE_TRACE_LBAR, c, &n0);
        const double *b = sive_result_trace(r[1], SIVE_TRACE_LBAR, c, &n1);
        const double *e = sive_result_trace(r[2], SIVE_TRACE_LBAR, c, &n2);
        ck_assert(n0 == 40 && n1 == 40 && n2 == 40);
        ck_assert(memcmp(b, e, n1 * sizeof *b) == 0); /* thread count */
        /* a row's logits may round differently in another block position */
        for (size_t i = 0; i < n0; i++)
            ck_assert_msg(fabs(a[i] - b[i]) <= 1e-6 * fabs(a[i]), "chain %d step %zu", c, i);
    }
    for (int k = 0; k < 3; k++)
        sive_result_free(r[k]);
    sive_model_destroy(&mm);
    for (int c = 0; c < 2; c++)
        sive_mlp_work_free(P.w[c]);
    free_fixture(&f);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("mlp_probe");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_threads_bit_identical);
    tcase_add_test(tc, test_params_cover_bit_identical);
    tcase_add_test(tc, test_model_errors);
    tcase_add_test(tc, test_callback_message);
    tcase_add_test(tc, test_model_outlives_architecture);
    tcase_add_test(tc, test_star_cache_matches_plain_gradient);
    tcase_add_test(tc, test_model_repeated_draws);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(model_suite());
}
