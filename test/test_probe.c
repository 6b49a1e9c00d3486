/* The probe's public API: options, errors, estimators on fixed inputs,
 * determinism, threads, divergence, callbacks that fail, sampling. */
#include <sive/sive.h>

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small float64 model: K = 0.5*|x|^2 + noise, d parameters ---- */
typedef struct quad {
    double sigma;
    int64_t nan_step;   /* gradient NaN at this step (-1: never)      */
    int32_t nan_chain;  /* ... on this chain (-1: every chain)        */
    int64_t fail_step;  /* eval returns fail_code at this step        */
    int fail_code;
    uint64_t data_size; /* when > 0: indices are checked against it   */
    int bad_index;      /* set if an index was out of range           */
    int dup_in_batch;   /* set if a batch repeated an index           */
    int null_index;     /* set if index was unexpectedly NULL/non-NULL*/
} quad;

static int quad_grad(const double *th, size_t d, const sive_batch *b, double *g,
                     double *loss, void *user)
{
    quad *q = user;
    double k = 0.0;
    for (size_t i = 0; i < d; i++) {
        g[i] = th[i];
        k += 0.5 * th[i] * th[i];
    }
    if (b->step == q->nan_step && (q->nan_chain < 0 || q->nan_chain == b->chain))
        g[0] = NAN;
    if (q->data_size) {
        if (!b->index)
            q->null_index = 1;
        else
            for (size_t j = 0; j < b->group_size; j++)
                if (b->index[j] >= q->data_size)
                    q->bad_index = 1;
    } else if (b->index) {
        q->null_index = 1;
    }
    *loss = k;
    return 0;
}

static int quad_eval(const double *th, size_t d, const sive_batch *b, double *gl,
                     void *user)
{
    quad *q = user;
    if (b->step == q->fail_step)
        return q->fail_code;
    double k = 0.0;
    for (size_t i = 0; i < d; i++)
        k += 0.5 * th[i] * th[i];
    sive_rng g;
    sive_rng_seed(&g, b->seed, 0);
    sive_rng_normals(&g, gl, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = 3.0 + k + q->sigma * gl[i];
    if (q->data_size && b->index) {
        for (size_t i = 0; i < b->n_groups; i++) {
            const uint64_t *ix = b->index + i * b->group_size;
            for (size_t j = 0; j < b->group_size; j++) {
                if (ix[j] >= q->data_size)
                    q->bad_index = 1;
                for (size_t k2 = 0; k2 < j; k2++)
                    if (ix[k2] == ix[j])
                        q->dup_in_batch = 1;
            }
        }
    }
    return 0;
}

static quad quad_default(void)
{
    quad q = {.sigma = 0.01, .nan_step = -1, .nan_chain = -1, .fail_step = -1};
    return q;
}

static sive_probe *new_quad_probe(size_t d, quad *q)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p, d), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, quad_grad, quad_eval, q), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 2000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 3), SIVE_OK);
    return p;
}

/* ---------------------------------------------------------------- */

START_TEST(version_and_strerror)
{
    ck_assert_uint_eq(sive_version_number(), SIVE_VERSION_NUMBER);
    ck_assert_str_eq(sive_version_string(), SIVE_VERSION_STRING);
    const int codes[] = {SIVE_OK, SIVE_E_INVALID_ARG, SIVE_E_NOMEM, SIVE_E_STATE,
                         SIVE_E_CALLBACK, SIVE_E_DIVERGED, SIVE_E_CANCELLED, SIVE_E_IO,
                         SIVE_E_FORMAT, SIVE_E_THREAD, SIVE_E_UNSUPPORTED};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        ck_assert_ptr_nonnull(sive_strerror(codes[i]));
        ck_assert_int_gt((int)strlen(sive_strerror(codes[i])), 0);
    }
    ck_assert_str_eq(sive_strerror(12345), "unknown status code");
    /* pinned values */
    ck_assert_int_eq(SIVE_E_INVALID_ARG, -1);
    ck_assert_int_eq(SIVE_E_UNSUPPORTED, -10);
}
END_TEST

START_TEST(null_and_bad_handles)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(NULL, 3), SIVE_E_INVALID_ARG);
    ck_assert_int_gt((int)strlen(sive_last_errmsg()), 0);
    ck_assert_int_eq(sive_probe_new(&p, 0), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(sive_probe_set_double(NULL, SIVE_OPT_T, 1.0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_int(NULL, SIVE_OPT_STEPS, 10), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_callbacks_f64(NULL, quad_grad, quad_eval, NULL),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_run_f64(NULL, NULL, NULL), SIVE_E_INVALID_ARG);
    ck_assert_uint_eq(sive_probe_dim(NULL), 0);
    ck_assert_ptr_nonnull(sive_probe_errmsg(NULL));
    sive_probe_free(NULL);
    sive_result_free(NULL);
    /* result getters are NULL-safe */
    ck_assert(isnan(sive_result_lambda(NULL)));
    ck_assert_int_eq(sive_result_chains(NULL), 0);
    ck_assert_int_eq(sive_result_chain_status(NULL, 0, NULL), SIVE_CHAIN_INVALID);
    size_t len = 7;
    ck_assert_ptr_null(sive_result_trace(NULL, SIVE_TRACE_LBAR, 0, &len));
    ck_assert_uint_eq(len, 0);
    ck_assert_str_eq(sive_result_health(NULL), "");
}
END_TEST

START_TEST(option_bounds)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p, 4), SIVE_OK);
    struct { sive_option o; double v; } bad_d[] = {
        {SIVE_OPT_T, 0.0}, {SIVE_OPT_T, -1.0}, {SIVE_OPT_T, NAN}, {SIVE_OPT_T, INFINITY},
        {SIVE_OPT_BASE_LR, 0.0}, {SIVE_OPT_BASE_LR, 1.5}, {SIVE_OPT_H, 0.0},
        {SIVE_OPT_C_H, -2.0}, {SIVE_OPT_BURN_IN, 1.0}, {SIVE_OPT_BURN_IN, -0.1},
        {SIVE_OPT_ANCHOR, INFINITY}};
    for (size_t i = 0; i < sizeof bad_d / sizeof bad_d[0]; i++) {
        ck_assert_int_eq(sive_probe_set_double(p, bad_d[i].o, bad_d[i].v), SIVE_E_INVALID_ARG);
        ck_assert_int_gt((int)strlen(sive_probe_errmsg(p)), 0);
    }
    struct { sive_option o; int64_t v; } bad_i[] = {
        {SIVE_OPT_STEPS, 1}, {SIVE_OPT_GROUPS, 1}, {SIVE_OPT_GROUPS, 0},
        {SIVE_OPT_EVAL_BATCH, 0}, {SIVE_OPT_GRAD_BATCH, -3}, {SIVE_OPT_DATA_SIZE, -1},
        {SIVE_OPT_CHAINS, 0}, {SIVE_OPT_CHAINS, 5000}, {SIVE_OPT_THREADS, 0},
        {SIVE_OPT_REPLACEMENT, 2}, {SIVE_OPT_EVAL_STRIDE, 0}};
    for (size_t i = 0; i < sizeof bad_i / sizeof bad_i[0]; i++)
        ck_assert_int_eq(sive_probe_set_int(p, bad_i[i].o, bad_i[i].v), SIVE_E_INVALID_ARG);
    /* wrong type and unknown option */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_T, 5), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_STEPS, 5.0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, (sive_option)999, 5.0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_int(p, (sive_option)0, 5), SIVE_E_INVALID_ARG);
    /* a failed set leaves the value unchanged; defaults are the paper's */
    double v;
    int64_t iv;
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_T, &v), SIVE_OK);
    ck_assert(v == 1e4);
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_C_H, &v), SIVE_OK);
    ck_assert(v == 1.0);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_GROUPS, &iv), SIVE_OK);
    ck_assert_int_eq(iv, 512);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_STEPS, &iv), SIVE_OK);
    ck_assert_int_eq(iv, 100000);
    /* h and c_h select the radius mode */
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 2.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_C_H, &v), SIVE_OK);
    ck_assert(isnan(v));
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_H, &v), SIVE_OK);
    ck_assert(v == 2.0);
    /* NaN clears the anchor; seed takes any 64-bit value */
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, NAN), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, INT64_MIN), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_SEED, &iv), SIVE_OK);
    ck_assert(iv == INT64_MIN);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_STEPS, NULL), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

START_TEST(run_preconditions)
{
    quad q = quad_default();
    sive_probe *p = NULL;
    sive_result *r = (sive_result *)0x1;
    ck_assert_int_eq(sive_probe_new(&p, 3), SIVE_OK);
    double theta[3] = {0.1, 0.2, 0.3};
    float theta_f[3] = {0.1f, 0.2f, 0.3f};
    /* no callbacks */
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_STATE);
    ck_assert_ptr_null(r);
    ck_assert_int_gt((int)strlen(sive_probe_errmsg(p)), 0);
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, quad_grad, NULL, &q), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, quad_grad, quad_eval, &q), SIVE_OK);
    /* both NULL clears the registration */
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, NULL, NULL, NULL), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_STATE);
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, quad_grad, quad_eval, &q), SIVE_OK);
    /* dtype mismatch */
    ck_assert_int_eq(sive_probe_run_f32(p, theta_f, &r), SIVE_E_STATE);
    ck_assert_ptr_null(r);
    /* NULL arguments */
    ck_assert_int_eq(sive_probe_run_f64(p, NULL, &r), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, NULL), SIVE_E_INVALID_ARG);
    /* non-finite theta* */
    theta[1] = NAN;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "theta_star[1]"));
    theta[1] = INFINITY;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_INVALID_ARG);
    /* zero centre with adaptive radius */
    double zero[3] = {0, 0, 0};
    ck_assert_int_eq(sive_probe_run_f64(p, zero, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "SIVE_OPT_H"));
    /* tail too short */
    theta[1] = 0.2;
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 10), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.8), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "tail window"));
    /* without replacement, batch larger than the data set */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DATA_SIZE, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "without replacement"));
    ck_assert_ptr_null(r);
    sive_probe_free(p);
}
END_TEST

/* L̄ ≡ 0, s² ≡ 1 with N = 2 and t = 1: unclipped -0.5, clipped 0. */
static int fixed_eval(const double *th, size_t d, const sive_batch *b, double *gl, void *u)
{
    (void)th; (void)d; (void)u;
    ck_assert_uint_eq(b->n_groups, 2);
    gl[0] = -sqrt(0.5);
    gl[1] = sqrt(0.5);
    return 0;
}

static int zero_grad(const double *th, size_t d, const sive_batch *b, double *g,
                     double *loss, void *u)
{
    (void)th; (void)b; (void)u; (void)loss;
    memset(g, 0, d * sizeof *g);
    return 0;
}

START_TEST(estimators_fixed_inputs)
{
    sive_probe *p = NULL;
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_new(&p, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, zero_grad, fixed_eval, NULL), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, -1.0), SIVE_OK);
    double theta[2] = {1.0, -1.0};
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_OK);
    for (int32_t c = -1; c < 2; c++) {
        ck_assert_double_eq_tol(sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c), -0.5, 1e-12);
        ck_assert(sive_result_stat(r, SIVE_STAT_SIVE, c) == 0.0);
        ck_assert_double_eq_tol(sive_result_stat(r, SIVE_STAT_RAW_VARIANCE, c), 0.0, 1e-12);
        ck_assert_double_eq_tol(sive_result_stat(r, SIVE_STAT_NOISE_CORRECTION, c), 0.5, 1e-12);
        ck_assert_double_eq_tol(sive_result_stat(r, SIVE_STAT_ONLINE_MEAN, c), 0.0, 1e-12);
        ck_assert_double_eq_tol(sive_result_stat(r, SIVE_STAT_ANCHORED_MEAN, c), 1.0, 1e-12);
        ck_assert_double_eq_tol(sive_result_stat(r, SIVE_STAT_TAIL_MEAN_LOSS, c), 0.0, 1e-12);
        ck_assert(sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, c) == 70.0);
        ck_assert_double_eq_tol(sive_result_stat(r, SIVE_STAT_H, c), 1.0, 1e-12);
    }
    ck_assert(sive_result_lambda(r) == 0.0);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_NEGATIVE_SIVE);
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "unclipped SIVE"));
    /* out-of-range getters */
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_SIVE, 2)));
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_SIVE, -2)));
    ck_assert(isnan(sive_result_stat(r, (sive_stat)99, 0)));
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_RHAT, 0)));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A gradient callback that writes nothing sees zeros (not a previous
 * chain's values or uninitialised memory: meson's MALLOC_PERTURB_ would
 * turn those into huge or NaN gradients). */
static int silent_grad(const double *th, size_t d, const sive_batch *b, double *g,
                       double *loss, void *u)
{
    (void)th; (void)d; (void)b; (void)g; (void)loss; (void)u;
    return 0;
}

START_TEST(unwritten_gradient_is_zero)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe(3, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *a = NULL, *b = NULL;
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, zero_grad, quad_eval, &q), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &a), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_callbacks_f64(p, silent_grad, quad_eval, &q), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &b), SIVE_OK);
    ck_assert_int_eq(sive_result_chains_ok(b), 3);
    for (int32_t c = 0; c < 3; c++) {
        size_t la, lb;
        const double *da = sive_result_trace(a, SIVE_TRACE_DISP, c, &la);
        const double *db = sive_result_trace(b, SIVE_TRACE_DISP, c, &lb);
        ck_assert_uint_eq(la, lb);
        ck_assert(memcmp(da, db, la * sizeof(double)) == 0);
    }
    sive_result_free(a);
    sive_result_free(b);
    sive_probe_free(p);
}
END_TEST

static int same_traces(const sive_result *a, const sive_result *b)
{
    if (sive_result_chains(a) != sive_result_chains(b))
        return 0;
    for (int32_t c = 0; c < sive_result_chains(a); c++)
        for (int k = 0; k < SIVE_TRACE_COUNT_; k++) {
            size_t la, lb;
            const double *ta = sive_result_trace(a, (sive_trace)k, c, &la);
            const double *tb = sive_result_trace(b, (sive_trace)k, c, &lb);
            if (la != lb || memcmp(ta, tb, la * sizeof(double)) != 0)
                return 0;
        }
    return 1;
}

START_TEST(deterministic_and_thread_invariant)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe(5, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 42), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 5), SIVE_OK);
    double theta[5] = {0.3, -0.2, 0.1, 0.5, -0.4};
    sive_result *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r1), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r2), SIVE_OK);
    ck_assert(same_traces(r1, r2));
    ck_assert(sive_result_lambda(r1) == sive_result_lambda(r2));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r3), SIVE_OK);
    ck_assert(same_traces(r1, r3));
    ck_assert(sive_result_ess(r1) == sive_result_ess(r3));
    /* another seed gives another path */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 43), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r4), SIVE_OK);
    ck_assert(!same_traces(r1, r4));
    /* chains differ from each other */
    size_t l0, l1;
    const double *d0 = sive_result_trace(r1, SIVE_TRACE_DISP, 0, &l0);
    const double *d1 = sive_result_trace(r1, SIVE_TRACE_DISP, 1, &l1);
    ck_assert(memcmp(d0, d1, l0 * sizeof(double)) != 0);
    sive_result_free(r1);
    sive_result_free(r2);
    sive_result_free(r3);
    sive_result_free(r4);
    sive_probe_free(p);
}
END_TEST

START_TEST(groups_leave_langevin_path_unchanged)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *a = NULL, *b = NULL;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &a), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 64), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &b), SIVE_OK);
    for (int32_t c = 0; c < 3; c++) {
        size_t la, lb;
        const double *da = sive_result_trace(a, SIVE_TRACE_DISP, c, &la);
        const double *db = sive_result_trace(b, SIVE_TRACE_DISP, c, &lb);
        ck_assert_uint_eq(la, 2000);
        ck_assert(memcmp(da, db, la * sizeof(double)) == 0);
        /* ...but the measurements differ */
        const double *sa = sive_result_trace(a, SIVE_TRACE_S2, c, &la);
        const double *sb = sive_result_trace(b, SIVE_TRACE_S2, c, &lb);
        ck_assert(memcmp(sa, sb, la * sizeof(double)) != 0);
    }
    sive_result_free(a);
    sive_result_free(b);
    sive_probe_free(p);
}
END_TEST

START_TEST(nan_at_step_500_one_chain)
{
    quad q = quad_default();
    q.nan_step = 500;
    q.nan_chain = 1;
    sive_probe *p = new_quad_probe(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_chains_ok(r), 2);
    int64_t step = -1;
    ck_assert_int_eq(sive_result_chain_status(r, 1, &step), SIVE_CHAIN_DIVERGED);
    ck_assert_int_eq(step, 500);
    ck_assert_int_eq(sive_result_chain_status(r, 0, &step), SIVE_CHAIN_OK);
    ck_assert_int_eq(step, 2000);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_DIVERGED);
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "chain 1 diverged at step 500"));
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_SIVE, 1)));
    ck_assert(isfinite(sive_result_lambda(r)));
    /* the summary is the mean of the healthy chains */
    double m = 0.5 * (sive_result_stat(r, SIVE_STAT_SIVE, 0) + sive_result_stat(r, SIVE_STAT_SIVE, 2));
    ck_assert_double_eq_tol(sive_result_lambda(r), m, 1e-12 * fabs(m));
    size_t len;
    ck_assert_ptr_nonnull(sive_result_trace(r, SIVE_TRACE_GRAD_NORM, 1, &len));
    ck_assert_uint_eq(len, 501);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(nan_every_chain)
{
    quad q = quad_default();
    q.nan_step = 500;
    sive_probe *p = new_quad_probe(3, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_DIVERGED);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(sive_result_chains_ok(r), 0);
    ck_assert(isnan(sive_result_lambda(r)));
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "diverged"));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(callback_error_aborts)
{
    quad q = quad_default();
    q.fail_step = 77;
    q.fail_code = 42;
    sive_probe *p = new_quad_probe(3, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, _i + 1), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_probe_callback_code(p), 42);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "returned 42"));
    ck_assert_ptr_nonnull(r);
    int n_cb = 0;
    for (int32_t c = 0; c < 3; c++) {
        sive_chain_status s = sive_result_chain_status(r, c, NULL);
        ck_assert(s == SIVE_CHAIN_CALLBACK || s == SIVE_CHAIN_ABORTED);
        n_cb += s == SIVE_CHAIN_CALLBACK;
    }
    ck_assert_int_ge(n_cb, 1);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_ABORTED);
    sive_result_free(r);
    /* the probe is usable again */
    q.fail_step = -1;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_OK);
    ck_assert_int_eq(sive_probe_callback_code(p), 0);
    ck_assert_str_eq(sive_probe_errmsg(p), "");
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

static int cancel_at_half(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)chain;
    int *calls = user;
    __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
    return step >= total / 2 ? 7 : 0;
}

START_TEST(progress_cancel)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe(3, &q);
    int calls = 0;
    ck_assert_int_eq(sive_probe_set_progress(p, cancel_at_half, &calls), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_E_CANCELLED);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_gt(calls, 1);
    ck_assert_int_eq(sive_result_chains_ok(r), 0);
    int64_t step;
    ck_assert_int_eq(sive_result_chain_status(r, 0, &step), SIVE_CHAIN_ABORTED);
    ck_assert_int_eq(step, 1000);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(sampling_indices)
{
    quad q = quad_default();
    q.data_size = 50;
    sive_probe *p = new_quad_probe(3, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_DATA_SIZE, 50), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 20), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 50), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 200), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = NULL;
    /* with replacement, 20 of 50: repeats are all but certain */
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_OK);
    ck_assert_int_eq(q.bad_index, 0);
    ck_assert_int_eq(q.null_index, 0);
    ck_assert_int_eq(q.dup_in_batch, 1);
    sive_result_free(r);
    q.dup_in_batch = 0;
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_OK);
    ck_assert_int_eq(q.bad_index, 0);
    ck_assert_int_eq(q.dup_in_batch, 0);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(eval_stride)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe(3, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, 4), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run_f64(p, theta, &r), SIVE_OK);
    size_t len;
    const double *lbar = sive_result_trace(r, SIVE_TRACE_LBAR, 0, &len);
    ck_assert_uint_eq(len, 2000);
    for (size_t m = 0; m < len; m++)
        ck_assert(m % 4 == 0 ? isfinite(lbar[m]) : isnan(lbar[m]));
    /* tail: m >= 600, m % 4 == 0  ->  350 steps */
    ck_assert(sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0) == 350.0);
    ck_assert_int_eq(sive_result_eval_stride(r), 4);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* float32 parameters, K = 0.5|x|^2 with t*E[K] -> d/2 for small steps */
static int quad_grad_f32(const float *th, size_t d, const sive_batch *b, float *g,
                         double *loss, void *user)
{
    (void)b; (void)user;
    double k = 0.0;
    for (size_t i = 0; i < d; i++) {
        g[i] = th[i];
        k += 0.5 * (double)th[i] * th[i];
    }
    *loss = k;
    return 0;
}

static int quad_eval_f32(const float *th, size_t d, const sive_batch *b, double *gl,
                         void *user)
{
    (void)user;
    double k = 0.0;
    for (size_t i = 0; i < d; i++)
        k += 0.5 * (double)th[i] * th[i];
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = k + (i % 2 ? 1e-3 : -1e-3);
    return 0;
}

START_TEST(float32_path)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_callbacks_f32(p, quad_grad_f32, quad_eval_f32, NULL), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 20000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, 0.0), SIVE_OK);
    float theta[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    sive_result *r = NULL;
    double dtheta[4] = {0};
    ck_assert_int_eq(sive_probe_run_f64(p, dtheta, &r), SIVE_E_STATE);
    ck_assert_int_eq(sive_probe_run_f32(p, theta, &r), SIVE_OK);
    /* Exact ULA per coordinate: rho = 1 - a - eta/h^2, var = 2 eta/(1-rho^2),
     * t E[K] = t * d/2 * var.  Tolerance: 5 pooled MCSE of the mean. */
    double a = 0.05, eta = a / 100.0, rho = 1.0 - a - eta, var = 2.0 * eta / (1.0 - rho * rho);
    double exact = 100.0 * 2.0 * var;
    double est = sive_result_stat(r, SIVE_STAT_ANCHORED_MEAN, SIVE_SUMMARY);
    size_t n;
    const double *lb = sive_result_trace(r, SIVE_TRACE_LBAR, 0, &n);
    ck_assert_uint_eq(n, 20000);
    double se = 100.0 * sive_stats_mcse(lb + 6000, 14000) / sqrt(2.0);
    ck_assert_msg(fabs(est - exact) < 5.0 * se, "f32 anchored mean %g vs exact %g (se %g)", est,
                  exact, se);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(stats_helpers_bad_input)
{
    double x[3] = {1, 2, 3};
    ck_assert(isnan(sive_stats_ess(NULL, 10)));
    ck_assert(isnan(sive_stats_ess(x, 3)));
    ck_assert(isnan(sive_stats_mcse(x, 3)));
    ck_assert(isnan(sive_stats_mcse(NULL, 100)));
}
END_TEST

START_TEST(public_rng)
{
    sive_rng a, b;
    sive_rng_seed(&a, 7, 1);
    sive_rng_seed(&b, 7, 1);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(sive_rng_next(&a), sive_rng_next(&b));
    sive_rng_seed(&b, 7, 2);
    ck_assert_uint_ne(sive_rng_next(&a), sive_rng_next(&b));
    double z[1000], s = 0.0;
    sive_rng_normals(&a, z, 1000);
    for (int i = 0; i < 1000; i++)
        s += z[i];
    ck_assert(fabs(s / 1000.0) < 5.0 / sqrt(1000.0));
    double u = sive_rng_uniform(&a);
    ck_assert(u >= 0.0 && u < 1.0);
    sive_rng_seed(NULL, 1, 1); /* NULL-safe */
    ck_assert_uint_eq(sive_rng_next(NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("probe");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, version_and_strerror);
    tcase_add_test(tc, null_and_bad_handles);
    tcase_add_test(tc, option_bounds);
    tcase_add_test(tc, run_preconditions);
    tcase_add_test(tc, estimators_fixed_inputs);
    tcase_add_test(tc, deterministic_and_thread_invariant);
    tcase_add_test(tc, groups_leave_langevin_path_unchanged);
    tcase_add_test(tc, nan_at_step_500_one_chain);
    tcase_add_test(tc, nan_every_chain);
    tcase_add_test(tc, unwritten_gradient_is_zero);
    tcase_add_loop_test(tc, callback_error_aborts, 0, 2);
    tcase_add_test(tc, progress_cancel);
    tcase_add_test(tc, sampling_indices);
    tcase_add_test(tc, eval_stride);
    tcase_add_test(tc, float32_path);
    tcase_add_test(tc, stats_helpers_bad_input);
    tcase_add_test(tc, public_rng);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
