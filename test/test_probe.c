/* The probe's public API (0.2): the model description and its checks,
 * options as data, run outcomes and their messages, estimators on fixed
 * inputs, determinism, threads, divergence, failing callbacks, progress and
 * cancellation, sampling, per-example against per-group losses, names. */
#include <sive/sive.h>
#define SIVE_EXPERIMENTAL
#include <sive/experimental.h>

#include "check_run.h"

#include <check.h>
#include <locale.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Any non-NULL pointer: a run that refuses must overwrite it with NULL. */
#define NOT_NULL_RESULT ((sive_result *)(uintptr_t)1)

/* ---- a small float64 model: K = 0.5*|x|^2 + noise, d parameters ---- */
typedef struct quad {
    double sigma;
    int64_t nan_step;    /* gradient NaN at this step (-1: never)      */
    int32_t nan_chain;   /* ... on this chain (-1: every chain)        */
    int64_t fail_step;   /* the failing callback returns fail_code here */
    int fail_code;
    int fail_in_grad;    /* 1: the gradient fails, 0: the evaluation    */
    const char *fail_msg;/* passed to sive_set_errmsg() before failing */
    const char *ok_msg;  /* sive_set_errmsg() by a gradient that succeeds */
    uint64_t data_size;  /* the model's n_examples; indices checked    */
    int bad_index;       /* set if an index was out of range           */
    int dup_in_batch;    /* set if a batch repeated an index           */
    int null_index;      /* set if index was unexpectedly NULL/non-NULL*/
    int destroyed;       /* calls of quad_destroy                      */
} quad;

/* The configured failure, if step m is the failing one for this callback. */
static int quad_fail(const quad *q, int in_grad, int64_t m)
{
    if (m != q->fail_step || q->fail_in_grad != in_grad)
        return 0;
    if (q->fail_msg)
        sive_set_errmsg(q->fail_msg);
    return q->fail_code;
}

static void quad_check_indices(quad *q, const sive_batch *b, size_t n)
{
    if (!q->data_size) {
        if (b->index)
            q->null_index = 1;
        return;
    }
    if (!b->index) {
        q->null_index = 1;
        return;
    }
    for (size_t i = 0; i < b->n_groups; i++) {
        const uint64_t *ix = b->index + i * n;
        for (size_t j = 0; j < n; j++) {
            if (ix[j] >= q->data_size)
                q->bad_index = 1;
            for (size_t k = 0; k < j; k++)
                if (ix[k] == ix[j])
                    q->dup_in_batch = 1;
        }
    }
}

static int quad_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                     double *loss, void *user)
{
    quad *q = user;
    const double *th = theta;
    double *g = grad, k = 0.0;
    int rc = quad_fail(q, 1, b->step);
    if (rc)
        return rc;
    for (size_t i = 0; i < d; i++) {
        g[i] = th[i];
        k += 0.5 * th[i] * th[i];
    }
    if (b->step == q->nan_step && (q->nan_chain < 0 || q->nan_chain == b->chain))
        g[0] = NAN;
    if (q->data_size && b->index)
        for (size_t j = 0; j < b->group_size; j++)
            if (b->index[j] >= q->data_size)
                q->bad_index = 1;
    if (!q->data_size != !b->index)
        q->null_index = 1;
    if (q->ok_msg)
        sive_set_errmsg(q->ok_msg);
    *loss = k;
    return 0;
}

static int quad_eval(const void *theta, size_t d, const sive_batch *b, double *gl,
                     void *user)
{
    quad *q = user;
    const double *th = theta;
    int rc = quad_fail(q, 0, b->step);
    if (rc)
        return rc;
    double k = 0.0;
    for (size_t i = 0; i < d; i++)
        k += 0.5 * th[i] * th[i];
    sive_rng g;
    sive_rng_seed(&g, b->seed, 0);
    sive_rng_normals(&g, gl, b->n_groups);
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = 3.0 + k + q->sigma * gl[i];
    quad_check_indices(q, b, b->group_size);
    return 0;
}

static void quad_destroy(void *user)
{
    ((quad *)user)->destroyed++;
}

static quad quad_default(void)
{
    quad q = {.sigma = 0.01, .nan_step = -1, .nan_chain = -1, .fail_step = -1};
    return q;
}

static sive_model quad_model(size_t d, quad *q)
{
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    m.dtype = SIVE_F64;
    m.dim = d;
    m.n_examples = q->data_size;
    m.grad = quad_grad;
    m.group_loss = quad_eval;
    m.user = q;
    return m;
}

static sive_probe *new_quad_probe(void)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 2000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 3), SIVE_OK);
    return p;
}

/* A run that produced a result (whatever its status). */
static sive_result *run_result(sive_probe *p, const sive_model *m, const void *theta)
{
    sive_result *r = NOT_NULL_RESULT;
    int rc = sive_probe_run(p, m, theta, &r);
    ck_assert_msg(rc == SIVE_OK, "run refused (%d): %s", rc, sive_probe_errmsg(p));
    ck_assert_ptr_nonnull(r);
    ck_assert(r != NOT_NULL_RESULT);
    return r;
}

/* A run that produced a result with the given status. */
static sive_result *run_status(sive_probe *p, const sive_model *m, const void *theta,
                               int status)
{
    sive_result *r = run_result(p, m, theta);
    ck_assert_msg(sive_result_status(r) == status, "status %d (want %d): %s",
                  sive_result_status(r), status, sive_result_errmsg(r));
    if (status == SIVE_OK)
        ck_assert_str_eq(sive_result_errmsg(r), "");
    else
        ck_assert_int_gt((int)strlen(sive_result_errmsg(r)), 0);
    return r;
}

/* A run refused before any chain: the status, no result, a message that
 * contains needle (when not NULL). */
static void run_refused(sive_probe *p, const sive_model *m, const void *theta,
                        int status, const char *needle)
{
    sive_result *r = NOT_NULL_RESULT;
    ck_assert_int_eq(sive_probe_run(p, m, theta, &r), status);
    ck_assert_ptr_null(r);
    ck_assert_int_gt((int)strlen(sive_probe_errmsg(p)), 0);
    if (needle)
        ck_assert_msg(strstr(sive_probe_errmsg(p), needle) != NULL,
                      "'%s' not in '%s'", needle, sive_probe_errmsg(p));
}

static int n_traces(void)
{
    int k = 0;
    while (sive_trace_name((sive_trace)k))
        k++;
    return k;
}

static int same_traces(const sive_result *a, const sive_result *b)
{
    if (sive_result_chains(a) != sive_result_chains(b))
        return 0;
    for (int32_t c = 0; c < sive_result_chains(a); c++)
        for (int k = 0; k < n_traces(); k++) {
            size_t la, lb;
            const double *ta = sive_result_trace(a, (sive_trace)k, c, &la);
            const double *tb = sive_result_trace(b, (sive_trace)k, c, &lb);
            if (la != lb || memcmp(ta, tb, la * sizeof(double)) != 0)
                return 0;
        }
    return 1;
}

/* Bit-identical doubles (NaN with the same payload counts as equal). */
static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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
    ck_assert_int_eq(sive_probe_new(NULL), SIVE_E_INVALID_ARG);
    ck_assert_int_gt((int)strlen(sive_last_errmsg()), 0);
    ck_assert_int_eq(sive_probe_set_double(NULL, SIVE_OPT_T, 1.0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_int(NULL, SIVE_OPT_STEPS, 10), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_text(NULL, "steps", "10"), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_progress(NULL, NULL, NULL), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_reset(NULL), SIVE_E_INVALID_ARG);
    int64_t iv;
    double dv;
    ck_assert_int_eq(sive_probe_get_int(NULL, SIVE_OPT_STEPS, &iv), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_get_double(NULL, SIVE_OPT_T, &dv), SIVE_E_INVALID_ARG);
    sive_result *r = NOT_NULL_RESULT;
    ck_assert_int_eq(sive_probe_run(NULL, NULL, NULL, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_ptr_nonnull(sive_probe_errmsg(NULL));
    sive_probe_free(NULL);
    sive_result_free(NULL);
    sive_model_destroy(NULL);
    /* result getters are NULL-safe */
    ck_assert_int_eq(sive_result_status(NULL), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(sive_result_errmsg(NULL));
    ck_assert_int_eq(sive_result_callback_code(NULL), 0);
    ck_assert(isnan(sive_result_lambda(NULL)));
    ck_assert_int_eq(sive_result_chains(NULL), 0);
    ck_assert_int_eq(sive_result_steps(NULL), 0);
    ck_assert_int_eq(sive_result_dtype(NULL), SIVE_DTYPE_UNKNOWN);
    ck_assert_uint_eq(sive_result_flags(NULL), 0);
    ck_assert_int_eq(sive_result_chain_status(NULL, 0, NULL), SIVE_CHAIN_INVALID);
    ck_assert_int_eq(sive_result_option_int(NULL, SIVE_OPT_STEPS, &iv), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_result_option_double(NULL, SIVE_OPT_T, &dv), SIVE_E_INVALID_ARG);
    size_t len = 7;
    ck_assert_ptr_null(sive_result_trace(NULL, SIVE_TRACE_LBAR, 0, &len));
    ck_assert_uint_eq(len, 0);
    ck_assert_str_eq(sive_result_health(NULL), "");
}
END_TEST

START_TEST(option_bounds)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
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
        {SIVE_OPT_EVAL_BATCH, 0}, {SIVE_OPT_GRAD_BATCH, -3},
        {SIVE_OPT_CHAINS, 0}, {SIVE_OPT_CHAINS, 5000}, {SIVE_OPT_THREADS, 0},
        {SIVE_OPT_REPLACEMENT, 2}, {SIVE_OPT_EVAL_STRIDE, 0}};
    for (size_t i = 0; i < sizeof bad_i / sizeof bad_i[0]; i++)
        ck_assert_int_eq(sive_probe_set_int(p, bad_i[i].o, bad_i[i].v), SIVE_E_INVALID_ARG);
    /* wrong type, unknown option, and 10 (0.1's data size) is not reused */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_T, 5), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_STEPS, 5.0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_double(p, (sive_option)999, 5.0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_int(p, (sive_option)0, 5), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_int(p, (sive_option)10, 5), SIVE_E_INVALID_ARG);
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

/* ---- options as data ---- */

static int is_machine_name(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* Every option of p holds its table default (NaN where there is none). */
static void check_defaults(const sive_probe *p)
{
    for (size_t i = 0; sive_option_at(i); i++) {
        const sive_option_info *in = sive_option_at(i);
        if (in->type == SIVE_TYPE_INT) {
            int64_t v;
            ck_assert_int_eq(sive_probe_get_int(p, in->id, &v), SIVE_OK);
            ck_assert_msg(v == in->int_default, "%s: %lld vs default %lld", in->name,
                          (long long)v, (long long)in->int_default);
        } else {
            double v;
            ck_assert_int_eq(sive_probe_get_double(p, in->id, &v), SIVE_OK);
            ck_assert_msg(same_bits(v, in->double_default) ||
                              (isnan(v) && isnan(in->double_default)),
                          "%s: %g vs default %g", in->name, v, in->double_default);
        }
    }
}

static void expect_int(sive_probe *p, const sive_option_info *in, int64_t v, int ok)
{
    int64_t before, after;
    ck_assert_int_eq(sive_probe_get_int(p, in->id, &before), SIVE_OK);
    int rc = sive_probe_set_int(p, in->id, v);
    ck_assert_msg(rc == (ok ? SIVE_OK : SIVE_E_INVALID_ARG), "%s = %lld: %d", in->name,
                  (long long)v, rc);
    ck_assert_int_eq(sive_probe_get_int(p, in->id, &after), SIVE_OK);
    ck_assert(after == (ok ? v : before));
    if (!ok)
        ck_assert(strstr(sive_probe_errmsg(p), in->name) != NULL);
}

static void expect_double(sive_probe *p, const sive_option_info *in, double v, int ok)
{
    double before, after;
    ck_assert_int_eq(sive_probe_get_double(p, in->id, &before), SIVE_OK);
    int rc = sive_probe_set_double(p, in->id, v);
    ck_assert_msg(rc == (ok ? SIVE_OK : SIVE_E_INVALID_ARG), "%s = %.17g: %d", in->name,
                  v, rc);
    ck_assert_int_eq(sive_probe_get_double(p, in->id, &after), SIVE_OK);
    ck_assert(same_bits(after, ok ? v : before));
    if (!ok)
        ck_assert(strstr(sive_probe_errmsg(p), in->name) != NULL);
}

/* lo-1 and hi+1 refused, lo and hi accepted: compared as integers. */
static void check_int_bounds(sive_probe *p, const sive_option_info *in)
{
    ck_assert(in->int_lo <= in->int_default && in->int_default <= in->int_hi);
    ck_assert(in->double_lo == 0.0 && in->double_hi == 0.0 && in->double_default == 0.0);
    expect_int(p, in, in->int_lo, 1);
    if (in->int_lo > INT64_MIN)
        expect_int(p, in, in->int_lo - 1, 0);
    expect_int(p, in, in->int_hi, 1);
    if (in->int_hi < INT64_MAX)
        expect_int(p, in, in->int_hi + 1, 0);
    ck_assert_int_eq(sive_probe_set_double(p, in->id, 1.0), SIVE_E_INVALID_ARG);
}

/* The closest doubles inside and outside each bound. */
static void check_double_bounds(sive_probe *p, const sive_option_info *in)
{
    const double lo = in->double_lo, hi = in->double_hi;
    ck_assert(in->int_lo == 0 && in->int_hi == 0 && in->int_default == 0);
    if (!isnan(in->double_default))
        ck_assert((in->lo_open ? in->double_default > lo : in->double_default >= lo) &&
                  (in->hi_open ? in->double_default < hi : in->double_default <= hi));
    expect_double(p, in, in->lo_open ? nextafter(lo, INFINITY) : lo, 1);
    if (in->lo_open || lo > -INFINITY)
        expect_double(p, in, in->lo_open ? lo : nextafter(lo, -INFINITY), 0);
    expect_double(p, in, in->hi_open ? nextafter(hi, -INFINITY) : hi, 1);
    if (in->hi_open || hi < INFINITY)
        expect_double(p, in, in->hi_open ? hi : nextafter(hi, INFINITY), 0);
    /* NaN means "none" for the anchor only */
    expect_double(p, in, NAN, in->id == SIVE_OPT_ANCHOR);
    ck_assert_int_eq(sive_probe_set_int(p, in->id, 1), SIVE_E_INVALID_ARG);
}

START_TEST(option_table)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    check_defaults(p);
    size_t n = 0;
    for (; sive_option_at(n); n++) {
        const sive_option_info *in = sive_option_at(n);
        sive_option id = (sive_option)0;
        ck_assert_msg(is_machine_name(in->name), "option %zu name", n);
        ck_assert_int_eq(sive_option_by_name(in->name, &id), SIVE_OK);
        ck_assert_int_eq(id, in->id);
        ck_assert_ptr_eq(sive_option_info_get(in->id), in);
        ck_assert(in->doc && strlen(in->doc) > 0);
        ck_assert(in->type == SIVE_TYPE_INT || in->type == SIVE_TYPE_DOUBLE);
        for (size_t j = 0; j < n; j++) {
            ck_assert_str_ne(sive_option_at(j)->name, in->name);
            ck_assert_int_ne(sive_option_at(j)->id, in->id);
        }
        if (in->type == SIVE_TYPE_INT)
            check_int_bounds(p, in);
        else
            check_double_bounds(p, in);
    }
    ck_assert_uint_ge(n, 15);
    ck_assert_ptr_null(sive_option_at(n + 1));
    ck_assert_ptr_null(sive_option_info_get((sive_option)10));
    ck_assert_ptr_null(sive_option_info_get((sive_option)0));
    sive_option id;
    ck_assert_int_eq(sive_option_by_name("data_size", &id), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "data_size"));
    ck_assert_int_eq(sive_option_by_name(NULL, &id), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_option_by_name("steps", NULL), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

/* The steps' upper bound 2^40 is exact: a double comparison would too, but
 * the seed's full int64 range would not survive one. */
START_TEST(option_int64_exact)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    const sive_option_info *in = sive_option_info_get(SIVE_OPT_STEPS);
    ck_assert_ptr_nonnull(in);
    ck_assert(in->int_lo == 2 && in->int_hi == INT64_C(1) << 40); /* documented */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, in->int_hi), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, in->int_hi + 1),
                     SIVE_E_INVALID_ARG);
    int64_t v;
    const int64_t seeds[] = {INT64_MAX, INT64_MAX - 1, INT64_MIN + 1, -1};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, seeds[i]), SIVE_OK);
        ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_SEED, &v), SIVE_OK);
        ck_assert(v == seeds[i]);
    }
    sive_probe_free(p);
}
END_TEST

START_TEST(option_text)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    int64_t iv, steps0;
    double dv;
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_STEPS, &steps0), SIVE_OK);
    /* ints: plain decimal only, nothing truncated or rounded */
    const char *bad_int[] = {"1e4", "10.0", "", "12abc", " 12", "12 ", "0x10", "-", "+",
                             "99999999999999999999", "1"};
    for (size_t i = 0; i < sizeof bad_int / sizeof bad_int[0]; i++) {
        ck_assert_msg(sive_probe_set_text(p, "steps", bad_int[i]) == SIVE_E_INVALID_ARG,
                      "steps '%s' accepted", bad_int[i]);
        ck_assert_int_gt((int)strlen(sive_probe_errmsg(p)), 0);
        ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_STEPS, &iv), SIVE_OK);
        ck_assert_int_eq(iv, steps0);
    }
    /* a whole number too large for 64 bits is out of range, not "not a whole number" */
    ck_assert_int_eq(sive_probe_set_text(p, "steps", "99999999999999999999"), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "is outside [2, 1099511627776]"), "%s",
                  sive_probe_errmsg(p));
    /* the seed, a uint64_t, takes every 64-bit value: 2^64 - 1 is -1's bits */
    ck_assert_int_eq(sive_probe_set_text(p, "seed", "18446744073709551615"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_SEED, &iv), SIVE_OK);
    ck_assert(iv == -1);
    ck_assert_int_eq(sive_probe_set_text(p, "seed", "9223372036854775808"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_SEED, &iv), SIVE_OK);
    ck_assert(iv == INT64_MIN);
    ck_assert_int_eq(sive_probe_set_text(p, "seed", "+18446744073709551615"), SIVE_OK);
    const char *bad_seed[] = {"18446744073709551616", "-9223372036854775809",
                              "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_seed / sizeof bad_seed[0]; i++) {
        ck_assert_int_eq(sive_probe_set_text(p, "seed", "7"), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_text(p, "seed", bad_seed[i]), SIVE_E_INVALID_ARG);
        ck_assert_msg(strstr(sive_probe_errmsg(p), "is outside [-9223372036854775808, "
                                                   "18446744073709551615]"),
                      "%s", sive_probe_errmsg(p));
        ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_SEED, &iv), SIVE_OK);
        ck_assert_int_eq(iv, 7); /* unchanged */
    }
    ck_assert_int_eq(sive_probe_set_text(p, "steps", "12345"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_STEPS, &iv), SIVE_OK);
    ck_assert_int_eq(iv, 12345);
    ck_assert_int_eq(sive_probe_set_text(p, "seed", "-9223372036854775808"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_SEED, &iv), SIVE_OK);
    ck_assert(iv == INT64_MIN);
    /* doubles: any finite number of the grammar within bounds */
    ck_assert_int_eq(sive_probe_set_text(p, "base_lr", "5e-2"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_BASE_LR, &dv), SIVE_OK);
    ck_assert(dv == 0.05);
    const char *bad_t[] = {"", "abc", "0.1x", "nan", "inf", "1e999", "-3"};
    for (size_t i = 0; i < sizeof bad_t / sizeof bad_t[0]; i++)
        ck_assert_msg(sive_probe_set_text(p, "t", bad_t[i]) == SIVE_E_INVALID_ARG,
                      "t '%s' accepted", bad_t[i]);
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_T, &dv), SIVE_OK);
    ck_assert(dv == 1e4);
    /* a number beyond a double's range is said to be so */
    ck_assert_int_eq(sive_probe_set_text(p, "t", "1e999"), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "overflows"), "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_probe_set_text(p, "t", "1e-999"), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "underflows"), "%s", sive_probe_errmsg(p));
    ck_assert_int_eq(sive_probe_set_text(p, "anchor", "1.5"), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_text(p, "anchor", "nan"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_ANCHOR, &dv), SIVE_OK);
    ck_assert(isnan(dv));
    /* by name, the same side effects as the typed setter */
    ck_assert_int_eq(sive_probe_set_text(p, "h", "0.5"), SIVE_OK);
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_C_H, &dv), SIVE_OK);
    ck_assert(isnan(dv));
    /* unknown names, case and the retired data size included */
    const char *bad_names[] = {"data_size", "STEPS", "", "steps "};
    for (size_t i = 0; i < 4; i++)
        ck_assert_int_eq(sive_probe_set_text(p, bad_names[i], "1"), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "steps "));
    ck_assert_int_eq(sive_probe_set_text(p, "steps", NULL), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_text(p, NULL, "1"), SIVE_E_INVALID_ARG);
    sive_probe_free(p);
}
END_TEST

static int count_progress(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)chain;
    (void)step;
    (void)total;
    atomic_fetch_add((atomic_int *)user, 1);
    return 0;
}

START_TEST(probe_reset)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    atomic_int calls = 0;
    ck_assert_int_eq(sive_probe_set_progress(p, count_progress, &calls), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 77), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, -5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 3.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 0.5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_reset(p), SIVE_OK);
    check_defaults(p); /* the adaptive radius mode is back too */
    ck_assert_str_eq(sive_probe_errmsg(p), "");
    /* the progress callback stays */
    quad q = quad_default();
    sive_model m = quad_model(2, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 1), SIVE_OK);
    double theta[2] = {0.5, 0.25};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_gt(atomic_load(&calls), 0);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* ---- the model description ---- */

START_TEST(run_preconditions)
{
    quad q = quad_default();
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.1, 0.2, 0.3};
    /* no gradient, no loss */
    m.grad = NULL;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "gradient");
    m.grad = quad_grad;
    m.group_loss = NULL;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "loss");
    m.group_loss = quad_eval;
    /* NULL arguments */
    run_refused(p, NULL, theta, SIVE_E_INVALID_ARG, "model");
    run_refused(p, &m, NULL, SIVE_E_INVALID_ARG, "theta_star");
    ck_assert_int_eq(sive_probe_run(p, &m, theta, NULL), SIVE_E_INVALID_ARG);
    /* non-finite theta* */
    theta[1] = NAN;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "theta_star[1]");
    theta[1] = INFINITY;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "theta_star[1]");
    /* zero centre with adaptive radius (set: on this exact-loss model the
     * default radius is the one from the loss, which takes theta* = 0) */
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_C_H, 1.0), SIVE_OK);
    double zero[3] = {0, 0, 0};
    run_refused(p, &m, zero, SIVE_E_INVALID_ARG, "SIVE_OPT_H");
    /* finite centre whose adaptive radius overflows: says so, not "zero?" */
    double huge[3] = {1e300, 1e300, 1e300};
    run_refused(p, &m, huge, SIVE_E_INVALID_ARG, "overflows");
    /* tail too short */
    theta[1] = 0.2;
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 10), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.8), SIVE_OK);
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "tail window");
    /* without replacement, batch larger than the data set */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    m.n_examples = 100;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "without replacement");
    /* ...and the same probe runs once the model fits */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 1), SIVE_OK);
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_str_eq(sive_probe_errmsg(p), "");
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(model_validation)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    double theta[3] = {0.1, 0.2, 0.3};
    sive_model m;
    /* sive_model_init: zeroes, sets struct_size, refuses older layouts */
    memset(&m, 0xab, sizeof m);
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    ck_assert_uint_eq(m.struct_size, sizeof m);
    ck_assert(m.dim == 0 && m.n_examples == 0 && !m.grad && !m.loss && !m.group_loss &&
              !m.user && !m.destroy && (int)m.dtype == 0);
    ck_assert_int_eq(sive_model_init(&m, sizeof m - 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_model_init(&m, 8), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_model_init(NULL, sizeof m), SIVE_E_INVALID_ARG);
    /* each field checked by the run */
    m = quad_model(3, &q);
    m.struct_size = (uint32_t)(sizeof m - 1);
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "struct_size");
    m.struct_size = 0; /* never initialised */
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "struct_size");
    /* uninitialised garbage >= 64 was taken as a newer header's struct */
    const uint32_t garbage[] = {0xabababab, 0xdeadbeef, 65, 100, 4096, 1032};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        m.struct_size = garbage[i];
        run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "struct_size");
        ck_assert_int_eq(sive_model_init(&m, garbage[i]), SIVE_E_INVALID_ARG);
    }
    m = quad_model(3, &q);
    m.struct_size = (uint32_t)offsetof(sive_model, identity); /* a 0.2 program */
    m.identity = 99; /* beyond its struct: not read */
    sive_result *r02 = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, theta, &r02), SIVE_OK);
    sive_result_free(r02);
    const int dtypes[] = {0, 3, -1};
    for (size_t i = 0; i < 3; i++) {
        m = quad_model(3, &q);
        m.dtype = (sive_dtype)dtypes[i];
        run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "dtype");
    }
    m = quad_model(3, &q);
    m.dim = 0;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "dim");
    m.dim = ((size_t)1 << 40) + 1;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "dim");
    m = quad_model(3, &q);
    m.grad = NULL;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, NULL);
    m = quad_model(3, &q);
    m.group_loss = NULL;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, NULL);
    /* per-example losses need a data set */
    m = quad_model(3, &q);
    m.loss = quad_eval; /* same signature; never called: refused first */
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "n_examples");
    m = quad_model(3, &q);
    m.n_examples = ((uint64_t)1 << 62) + 1;
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, "n_examples");
    /* the probe stays usable */
    m = quad_model(3, &q);
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(model_destroy)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100), SIVE_OK);
    double theta[3] = {0.1, 0.2, 0.3};
    sive_model m = quad_model(3, &q);
    m.destroy = quad_destroy;
    /* a run never releases the model */
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    sive_result_free(r);
    ck_assert_int_eq(q.destroyed, 0);
    sive_model_destroy(&m);
    ck_assert_int_eq(q.destroyed, 1);
    /* everything but struct_size is zeroed: destroying again is a no-op */
    ck_assert_uint_eq(m.struct_size, sizeof m);
    ck_assert(!m.grad && !m.group_loss && !m.user && !m.destroy && m.dim == 0);
    sive_model_destroy(&m);
    ck_assert_int_eq(q.destroyed, 1);
    run_refused(p, &m, theta, SIVE_E_INVALID_ARG, NULL);
    /* without a destroy callback: only zeroed */
    m = quad_model(3, &q);
    sive_model_destroy(&m);
    ck_assert(!m.grad && !m.user);
    ck_assert_int_eq(q.destroyed, 1);
    /* an uninitialised struct_size is not trusted */
    sive_model z;
    memset(&z, 0, sizeof z);
    z.destroy = quad_destroy;
    z.user = &q;
    sive_model_destroy(&z);
    ck_assert_int_eq(q.destroyed, 1);
    sive_probe_free(p);
}
END_TEST

/* ---- estimators and determinism ---- */

/* L̄ ≡ 0, s² ≡ 1 with N = 2 and t = 1: unclipped -0.5, clipped 0. */
static int fixed_eval(const void *th, size_t d, const sive_batch *b, double *gl, void *u)
{
    (void)th; (void)d; (void)u;
    ck_assert_uint_eq(b->n_groups, 2);
    gl[0] = -sqrt(0.5);
    gl[1] = sqrt(0.5);
    return 0;
}

static int zero_grad(const void *th, size_t d, const sive_batch *b, void *g,
                     double *loss, void *u)
{
    (void)th; (void)b; (void)u; (void)loss;
    memset(g, 0, d * sizeof(double));
    return 0;
}

/* A probe of t = 1, N = 2, 2 chains of `steps` steps on m: dimension 2,
 * zero gradients, the group losses of `eval`. */
static sive_probe *fixed_probe(sive_model *m, sive_group_fn eval, int64_t steps)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_model_init(m, sizeof *m), SIVE_OK);
    m->dtype = SIVE_F64;
    m->dim = 2;
    m->grad = zero_grad;
    m->group_loss = eval;
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    return p;
}

/* Chain 0's L̄ jumps by ±2 from step to step (a pseudo-random sign), chain
 * 1's is fixed_eval's: s² ≡ 1 with N = 2 and t = 1, so chain 0's SIVE is
 * about 4 - 0.5 and chain 1's -0.5, clipped to 0: the reported lambda-hat
 * (the clipped mean) and the unclipped summary differ. */
static int one_negative_eval(const void *th, size_t d, const sive_batch *b, double *gl, void *u)
{
    (void)th; (void)d; (void)u;
    const uint64_t h = (uint64_t)(b->step + 1) * 0x9e3779b97f4a7c15u;
    const double shift = b->chain == 0 ? ((h >> 40) & 1 ? 2.0 : -2.0) : 0.0;
    gl[0] = shift - sqrt(0.5);
    gl[1] = shift + sqrt(0.5);
    return 0;
}

/* The health text's "lambda-hat X" is the reported one (sive_result_lambda,
 * the CLI's and Python's), with the unclipped summary the flags read named
 * next to it when a negative chain makes them differ. */
START_TEST(health_text_names_lambda_hat)
{
    sive_model m;
    sive_probe *p = fixed_probe(&m, one_negative_eval, 400);
    double theta[2] = {1.0, -1.0};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    const double lam = sive_result_lambda(r),
                 un = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    ck_assert(sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, 1) < 0.0);
    ck_assert(lam > un + 0.1);
    const uint32_t f = sive_result_flags(r);
    ck_assert(f & SIVE_FLAG_NEGATIVE_SIVE);
    ck_assert(f & SIVE_FLAG_IMPRECISE);
    char want[160];
    snprintf(want, sizeof want, "imprecise: lambda-hat %.4g (unclipped %.4g) has MCSE ", lam, un);
    ck_assert_msg(strstr(sive_result_health(r), want), "%s", sive_result_health(r));
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "% of the unclipped, above "));
    /* the share has a decimal, so a share just above the threshold never
     * reads "30 %, above 30 %" */
    snprintf(want, sizeof want, "(%.1f %% of the unclipped, above 30 %%)",
             100.0 * sive_result_mcse(r) / fabs(un));
    ck_assert_msg(strstr(sive_result_health(r), want), "%s", sive_result_health(r));
    /* no "lambda-hat" number in the text is other than the reported one */
    char bare[64];
    snprintf(bare, sizeof bare, "lambda-hat %.4g ", un);
    ck_assert_ptr_null(strstr(sive_result_health(r), bare));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(estimators_fixed_inputs)
{
    sive_model m;
    sive_probe *p = fixed_probe(&m, fixed_eval, 100);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, -1.0), SIVE_OK);
    double theta[2] = {1.0, -1.0};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
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
static int silent_grad(const void *th, size_t d, const sive_batch *b, void *g,
                       double *loss, void *u)
{
    (void)th; (void)d; (void)b; (void)g; (void)loss; (void)u;
    return 0;
}

START_TEST(unwritten_gradient_is_zero)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_model m = quad_model(3, &q);
    m.grad = zero_grad;
    sive_result *a = run_status(p, &m, theta, SIVE_OK);
    m.grad = silent_grad;
    sive_result *b = run_status(p, &m, theta, SIVE_OK);
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

START_TEST(deterministic_and_thread_invariant)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    sive_model m = quad_model(5, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 42), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 5), SIVE_OK);
    double theta[5] = {0.3, -0.2, 0.1, 0.5, -0.4};
    sive_result *r1 = run_status(p, &m, theta, SIVE_OK);
    sive_result *r2 = run_status(p, &m, theta, SIVE_OK);
    ck_assert(same_traces(r1, r2));
    ck_assert(sive_result_lambda(r1) == sive_result_lambda(r2));
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    sive_result *r3 = run_status(p, &m, theta, SIVE_OK);
    ck_assert(same_traces(r1, r3));
    ck_assert(sive_result_ess(r1) == sive_result_ess(r3));
    /* another seed gives another path */
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 43), SIVE_OK);
    sive_result *r4 = run_status(p, &m, theta, SIVE_OK);
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
    sive_probe *p = new_quad_probe();
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *a = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 64), SIVE_OK);
    sive_result *b = run_status(p, &m, theta, SIVE_OK);
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

/* ---- divergence, failing callbacks, messages ---- */

START_TEST(nan_at_step_500_one_chain)
{
    quad q = quad_default();
    q.nan_step = 500;
    q.nan_chain = 1;
    sive_probe *p = new_quad_probe();
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(sive_result_chains_ok(r), 2);
    int64_t step = -1;
    ck_assert_int_eq(sive_result_chain_status(r, 1, &step), SIVE_CHAIN_DIVERGED);
    ck_assert_int_eq(step, 500);
    ck_assert_int_eq(sive_result_chain_status(r, 0, &step), SIVE_CHAIN_OK);
    ck_assert_int_eq(step, 2000);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_DIVERGED);
    /* the health text names the chain and the step */
    const char *health = sive_result_health(r);
    ck_assert_msg(strstr(health, "diverged") && strstr(health, "chain 1") &&
                      strstr(health, "step 500"),
                  "health: %s", health);
    ck_assert(isnan(sive_result_stat(r, SIVE_STAT_SIVE, 1)));
    ck_assert(isfinite(sive_result_lambda(r)));
    /* the summary is the mean of the healthy chains */
    double mean = 0.5 * (sive_result_stat(r, SIVE_STAT_SIVE, 0) +
                         sive_result_stat(r, SIVE_STAT_SIVE, 2));
    ck_assert_double_eq_tol(sive_result_lambda(r), mean, 1e-12 * fabs(mean));
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
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = run_status(p, &m, theta, SIVE_E_DIVERGED);
    ck_assert_int_eq(sive_result_chains_ok(r), 0);
    for (int32_t c = 0; c < 3; c++)
        ck_assert_int_eq(sive_result_chain_status(r, c, NULL), SIVE_CHAIN_DIVERGED);
    ck_assert(isnan(sive_result_lambda(r)));
    ck_assert_ptr_nonnull(strstr(sive_result_errmsg(r), "diverged"));
    ck_assert_int_eq(sive_result_callback_code(r), 0);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(callback_error_aborts)
{
    quad q = quad_default();
    q.fail_step = 77;
    q.fail_code = 42;
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, _i + 1), SIVE_OK);
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = run_status(p, &m, theta, SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_result_callback_code(r), 42);
    ck_assert_ptr_nonnull(strstr(sive_result_errmsg(r), "returned 42"));
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
    r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(sive_result_callback_code(r), 0);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A callback's sive_set_errmsg() text reaches the result (_i: 0 the group
 * loss fails, 1 the gradient). */
START_TEST(callback_message)
{
    quad q = quad_default();
    q.fail_step = 3;
    q.fail_code = -1;
    q.fail_in_grad = _i;
    q.fail_msg = "index 9000 out of range";
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 1), SIVE_OK);
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = run_status(p, &m, theta, SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_result_callback_code(r), -1);
    const char *msg = sive_result_errmsg(r);
    ck_assert_msg(strstr(msg, "index 9000 out of range") && strstr(msg, "returned -1") &&
                      strstr(msg, "step 3"),
                  "message: %s", msg);
    ck_assert_ptr_nonnull(strstr(msg, _i ? "gradient" : "evaluation"));
    int64_t step;
    ck_assert_int_eq(sive_result_chain_status(r, 0, &step), SIVE_CHAIN_CALLBACK);
    ck_assert_int_eq(step, 3);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A message left by someone else (the caller before the run, or a callback
 * that then succeeded) is not attached to a later failure without one. */
START_TEST(stale_message_not_picked_up)
{
    quad q = quad_default();
    q.fail_step = 5;
    q.fail_code = 9;
    q.ok_msg = "stale: set by a gradient call that succeeded";
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, _i + 1), SIVE_OK);
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_set_errmsg("stale: set before the run");
    ck_assert_str_eq(sive_last_errmsg(), "stale: set before the run");
    sive_result *r = run_status(p, &m, theta, SIVE_E_CALLBACK);
    ck_assert_int_eq(sive_result_callback_code(r), 9);
    ck_assert_msg(strstr(sive_result_errmsg(r), "returned 9") &&
                      !strstr(sive_result_errmsg(r), "stale"),
                  "message: %s", sive_result_errmsg(r));
    sive_result_free(r);
    /* NULL clears; long messages are cut at 511 bytes */
    sive_set_errmsg(NULL);
    ck_assert_str_eq(sive_last_errmsg(), "");
    char big[700];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sive_set_errmsg(big);
    ck_assert_uint_eq(strlen(sive_last_errmsg()), 511);
    sive_probe_free(p);
}
END_TEST

/* ---- progress ---- */

static int cancel_at_half(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)chain;
    atomic_fetch_add((atomic_int *)user, 1);
    return step >= total / 2 ? 7 : 0;
}

START_TEST(progress_cancel)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    sive_model m = quad_model(3, &q);
    atomic_int calls = 0;
    ck_assert_int_eq(sive_probe_set_progress(p, cancel_at_half, &calls), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = run_status(p, &m, theta, SIVE_E_CANCELLED);
    ck_assert_int_gt(atomic_load(&calls), 1);
    ck_assert_int_eq(sive_result_chains_ok(r), 0);
    ck_assert_int_eq(sive_result_callback_code(r), 0);
    ck_assert_ptr_nonnull(strstr(sive_result_errmsg(r), "cancel"));
    int64_t step;
    ck_assert_int_eq(sive_result_chain_status(r, 0, &step), SIVE_CHAIN_ABORTED);
    ck_assert_int_eq(step, 1000);
    ck_assert(sive_result_flags(r) & SIVE_FLAG_ABORTED);
    /* the stopped chain keeps estimates from its 1000 steps (tail 700) ... */
    ck_assert(isfinite(sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, 0)));
    ck_assert(sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0) == 700.0);
    ck_assert(isfinite(sive_result_stat(r, SIVE_STAT_ESS, 0)));
    /* ... which stay out of the summary (no chain finished) */
    ck_assert(isnan(sive_result_lambda(r)));
    ck_assert_ptr_nonnull(strstr(sive_result_health(r), "chain 0 stopped at step 1000"));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Slow steps: the progress callback still comes every fraction of a
 * second (the count-based stride alone would be M/1000 = 400 steps, over
 * 2 s here), so a cancel takes effect quickly. */
#define SLOW_MAX_CALLS 1024
typedef struct slow_clock {
    double t[SLOW_MAX_CALLS];
    int n;
    int64_t last_step, total;
    int backwards;
    double cancelled_at;
} slow_clock;

static int slow_grad(const void *th, size_t d, const sive_batch *b, void *g,
                     double *loss, void *u)
{
    (void)th; (void)b; (void)u; (void)loss;
    struct timespec ts = {0, 5000000}; /* 5 ms */
    nanosleep(&ts, NULL);
    memset(g, 0, d * sizeof(double));
    return 0;
}

static int clock_progress(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)chain;
    slow_clock *k = user;
    double t = now_seconds();
    if (k->n < SLOW_MAX_CALLS)
        k->t[k->n++] = t;
    k->backwards |= step < k->last_step;
    k->last_step = step;
    k->total = total;
    if (t - k->t[0] >= 1.2) {
        k->cancelled_at = t;
        return 1;
    }
    return 0;
}

START_TEST(progress_timely)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 400000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 1), SIVE_OK);
    sive_model m = quad_model(3, &q);
    m.grad = slow_grad;
    slow_clock *k = calloc(1, sizeof *k);
    ck_assert_int_eq(sive_probe_set_progress(p, clock_progress, k), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = run_status(p, &m, theta, SIVE_E_CANCELLED);
    double end = now_seconds();
    ck_assert_int_ge(k->n, 3);
    double worst = 0.0;
    for (int i = 1; i < k->n; i++)
        worst = fmax(worst, k->t[i] - k->t[i - 1]);
    ck_assert_msg(worst < 1.0, "progress gap %.3f s", worst);
    ck_assert_msg(end - k->cancelled_at < 1.0, "cancel took %.3f s", end - k->cancelled_at);
    ck_assert(!k->backwards);
    ck_assert_int_eq(k->total, 400000);
    ck_assert_int_lt(k->last_step, 400000);
    sive_result_free(r);
    free(k);
    sive_probe_free(p);
}
END_TEST

/* ---- frozen options ---- */

typedef struct snapshot {
    int64_t iv[64];
    double dv[64];
} snapshot;

/* Every option's value, read through get (the probe's or the result's). */
static void take_snapshot(snapshot *s, const sive_probe *p, const sive_result *r)
{
    for (size_t i = 0; sive_option_at(i); i++) {
        ck_assert_uint_lt(i, 64);
        const sive_option_info *in = sive_option_at(i);
        int rc = in->type == SIVE_TYPE_INT
                     ? (p ? sive_probe_get_int(p, in->id, &s->iv[i])
                          : sive_result_option_int(r, in->id, &s->iv[i]))
                     : (p ? sive_probe_get_double(p, in->id, &s->dv[i])
                          : sive_result_option_double(r, in->id, &s->dv[i]));
        ck_assert_msg(rc == SIVE_OK, "option %s", in->name);
    }
}

static int same_snapshot(const snapshot *a, const snapshot *b)
{
    for (size_t i = 0; sive_option_at(i); i++) {
        int same = sive_option_at(i)->type == SIVE_TYPE_INT
                       ? a->iv[i] == b->iv[i]
                       : same_bits(a->dv[i], b->dv[i]) || (isnan(a->dv[i]) && isnan(b->dv[i]));
        if (!same)
            return 0;
    }
    return 1;
}

START_TEST(result_options_frozen)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 300), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, -99), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, 1.5), SIVE_OK);
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    snapshot before, from_result, now;
    take_snapshot(&before, p, NULL);
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    take_snapshot(&from_result, NULL, r);
    /* but metropolis, kron_every, radius_lookahead and radius_check: the
     * probe's -1 (auto) is resolved by the run, to 0 here (a radius is
     * set: ULA) */
    static const sive_option autos[] = {SIVE_OPT_METROPOLIS, SIVE_OPT_KRON_EVERY,
                                        SIVE_OPT_RADIUS_LOOKAHEAD, SIVE_OPT_RADIUS_CHECK};
    for (size_t k = 0; k < 4; k++) {
        size_t mi = 0;
        while (sive_option_at(mi)->id != autos[k])
            mi++;
        ck_assert_int_eq(before.iv[mi], -1);
        ck_assert_int_eq(from_result.iv[mi], 0);
        before.iv[mi] = 0;
    }
    ck_assert(same_snapshot(&before, &from_result));
    /* change everything on the probe: the result keeps the run's values */
    ck_assert_int_eq(sive_probe_reset(p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 5000), SIVE_OK);
    take_snapshot(&now, p, NULL);
    ck_assert(!same_snapshot(&before, &now));
    take_snapshot(&from_result, NULL, r);
    ck_assert(same_snapshot(&before, &from_result));
    /* ...and after the probe is gone */
    sive_probe_free(p);
    take_snapshot(&from_result, NULL, r);
    ck_assert(same_snapshot(&before, &from_result));
    ck_assert_int_eq(sive_result_steps(r), 300);
    ck_assert_int_eq(sive_result_eval_stride(r), 2);
    int64_t iv;
    double dv;
    ck_assert_int_eq(sive_result_option_int(r, SIVE_OPT_SEED, &iv), SIVE_OK);
    ck_assert_int_eq(iv, -99);
    ck_assert_int_eq(sive_result_option_double(r, SIVE_OPT_C_H, &dv), SIVE_OK);
    ck_assert(isnan(dv)); /* the run used the absolute radius */
    ck_assert_int_eq(sive_result_option_int(r, SIVE_OPT_T, &iv), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_result_option_double(r, SIVE_OPT_STEPS, &dv), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_result_option_int(r, (sive_option)10, &iv), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_result_option_int(r, SIVE_OPT_STEPS, NULL), SIVE_E_INVALID_ARG);
    sive_result_free(r);
}
END_TEST

/* Changes the probe's options from inside the run (the progress callback
 * runs on the caller's thread with one worker). */
typedef struct meddler {
    sive_probe *p;
    int done;
} meddler;

static int meddle(int32_t chain, int64_t step, int64_t total, void *user)
{
    meddler *md = user;
    (void)chain;
    if (md->done || step < total / 4)
        return 0;
    sive_probe *p = md->p;
    md->done = sive_probe_set_int(p, SIVE_OPT_STEPS, 50) == SIVE_OK &&
               sive_probe_set_int(p, SIVE_OPT_CHAINS, 1) == SIVE_OK &&
               sive_probe_set_int(p, SIVE_OPT_GROUPS, 64) == SIVE_OK &&
               sive_probe_set_int(p, SIVE_OPT_SEED, 1234) == SIVE_OK &&
               sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, 7) == SIVE_OK &&
               sive_probe_set_double(p, SIVE_OPT_BASE_LR, 0.5) == SIVE_OK &&
               sive_probe_set_double(p, SIVE_OPT_T, 1.0) == SIVE_OK &&
               sive_probe_set_double(p, SIVE_OPT_H, 5.0) == SIVE_OK &&
               sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.9) == SIVE_OK &&
               sive_probe_set_double(p, SIVE_OPT_ANCHOR, 0.0) == SIVE_OK;
    return 0;
}

START_TEST(options_copied_at_start)
{
    quad q = quad_default();
    sive_probe *ref = new_quad_probe(), *p = new_quad_probe();
    sive_model m = quad_model(3, &q);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *a = run_status(ref, &m, theta, SIVE_OK);
    meddler md = {p, 0};
    ck_assert_int_eq(sive_probe_set_progress(p, meddle, &md), SIVE_OK);
    sive_result *b = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(md.done, 1);
    int64_t steps;
    ck_assert_int_eq(sive_probe_get_int(p, SIVE_OPT_STEPS, &steps), SIVE_OK);
    ck_assert_int_eq(steps, 50); /* the changes reached the probe... */
    /* ...but not the run: bit-identical to the undisturbed one */
    ck_assert_int_eq(sive_result_chains(b), 3);
    ck_assert_int_eq(sive_result_steps(b), 2000);
    ck_assert(same_traces(a, b));
    ck_assert(same_bits(sive_result_lambda(a), sive_result_lambda(b)));
    ck_assert(same_bits(sive_result_mcse(a), sive_result_mcse(b)));
    sive_result_free(a);
    sive_result_free(b);
    sive_probe_free(ref);
    sive_probe_free(p);
}
END_TEST

/* ---- worker numbers ---- */

#define MAX_W 8
typedef struct workers {
    int limit;
    atomic_int out_of_range, overlap;
    atomic_int busy[MAX_W], seen[MAX_W];
} workers;

/* Mark worker w busy for the call; two calls of one worker never overlap. */
static void worker_enter_leave(workers *k, int32_t w)
{
    if (w < 0 || w >= k->limit || w >= MAX_W) {
        atomic_store(&k->out_of_range, 1);
        return;
    }
    if (atomic_exchange(&k->busy[w], 1))
        atomic_store(&k->overlap, 1);
    atomic_store(&k->seen[w], 1);
    struct timespec ts = {0, 20000}; /* 20 us: lets overlaps show */
    nanosleep(&ts, NULL);
    atomic_store(&k->busy[w], 0);
}

static int worker_grad(const void *th, size_t d, const sive_batch *b, void *g,
                       double *loss, void *u)
{
    (void)loss;
    worker_enter_leave(u, b->worker);
    const double *x = th;
    for (size_t i = 0; i < d; i++)
        ((double *)g)[i] = x[i];
    return 0;
}

static int worker_eval(const void *th, size_t d, const sive_batch *b, double *gl, void *u)
{
    (void)th; (void)d;
    worker_enter_leave(u, b->worker);
    for (size_t i = 0; i < b->n_groups; i++)
        gl[i] = (double)i;
    return 0;
}

START_TEST(worker_numbers)
{
    const int cfg[3][2] = {{3, 5}, {4, 2}, {1, 3}}; /* threads, chains */
    workers *k = calloc(1, sizeof *k);
    k->limit = cfg[_i][0] < cfg[_i][1] ? cfg[_i][0] : cfg[_i][1];
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 200), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, cfg[_i][0]), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, cfg[_i][1]), SIVE_OK);
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    m.dtype = SIVE_F64;
    m.dim = 2;
    m.grad = worker_grad;
    m.group_loss = worker_eval;
    m.user = k;
    double theta[2] = {0.5, -0.5};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(sive_result_chains_ok(r), cfg[_i][1]);
    ck_assert_int_eq(atomic_load(&k->out_of_range), 0);
    ck_assert_int_eq(atomic_load(&k->overlap), 0);
    ck_assert_int_eq(atomic_load(&k->seen[0]), 1);
    sive_result_free(r);
    sive_probe_free(p);
    free(k);
}
END_TEST

/* ---- names ---- */

static void check_name_list(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(is_machine_name(names[i]), "name %zu", i);
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(names[i], names[j]);
    }
}

START_TEST(enum_names)
{
    const char *names[64];
    size_t n = 0;
    /* statistics: pinned 0 .. SIVE_STAT_TAIL_LENGTH at least, then NULL */
    for (; n < 64 && sive_stat_name((sive_stat)n); n++)
        names[n] = sive_stat_name((sive_stat)n);
    ck_assert_uint_ge(n, (size_t)SIVE_STAT_TAIL_LENGTH + 1);
    ck_assert_uint_lt(n, 64);
    check_name_list(names, n);
    for (size_t k = n; k < n + 8; k++)
        ck_assert_ptr_null(sive_stat_name((sive_stat)k));
    ck_assert_ptr_null(sive_stat_name((sive_stat)-1));
    ck_assert_str_eq(sive_stat_name(SIVE_STAT_SIVE), "sive");
    ck_assert_str_eq(sive_stat_name(SIVE_STAT_MCSE), "mcse");
    /* traces: the documented names, then NULL */
    const char *traces[] = {"lbar", "s2", "grad_loss", "grad_norm", "disp"};
    for (n = 0; n < 64 && sive_trace_name((sive_trace)n); n++)
        names[n] = sive_trace_name((sive_trace)n);
    ck_assert_uint_ge(n, 5);
    check_name_list(names, n);
    for (size_t k = 0; k < 5; k++)
        ck_assert_str_eq(names[k], traces[k]);
    ck_assert_ptr_null(sive_trace_name((sive_trace)n));
    ck_assert_ptr_null(sive_trace_name((sive_trace)-1));
    /* chain statuses -1 .. 4 (not_run: 0.2, issue 10) */
    const char *status[] = {"invalid", "ok", "diverged", "callback", "aborted", "not_run"};
    for (int s = -1; s <= 4; s++) {
        names[s + 1] = sive_chain_status_string((sive_chain_status)s);
        ck_assert_str_eq(names[s + 1], status[s + 1]);
    }
    check_name_list(names, 6);
    ck_assert_ptr_null(sive_chain_status_string((sive_chain_status)5));
    ck_assert_ptr_null(sive_chain_status_string((sive_chain_status)-2));
}
END_TEST

/* The public statistics table: row i is statistic i, its name is
 * sive_stat_name()'s, and each summary pools the chains as its row says. */
START_TEST(stat_table)
{
    size_t n = 0;
    for (; sive_stat_at(n); n++) {
        const sive_stat_info *in = sive_stat_at(n);
        ck_assert_int_eq((int)in->id, (int)n);
        ck_assert_ptr_eq(sive_stat_info_get((sive_stat)n), in);
        ck_assert_str_eq(in->name, sive_stat_name((sive_stat)n));
        ck_assert_uint_gt(strlen(in->doc), 10);
        ck_assert(in->pool >= SIVE_POOL_MEAN && in->pool <= SIVE_POOL_SUMMARY_ONLY);
        ck_assert(in->scalar == 0 || in->scalar == 1);
    }
    ck_assert_ptr_null(sive_stat_name((sive_stat)n)); /* every name has a row */
    ck_assert_ptr_null(sive_stat_info_get((sive_stat)-1));
    ck_assert_ptr_null(sive_stat_info_get((sive_stat)n));
    ck_assert_int_eq(sive_stat_info_get(SIVE_STAT_MCSE)->pool, SIVE_POOL_QUADRATURE);
    ck_assert_int_eq(sive_stat_info_get(SIVE_STAT_RHAT)->pool, SIVE_POOL_SUMMARY_ONLY);
    ck_assert_int_eq(sive_stat_info_get(SIVE_STAT_SIVE)->scalar, 0);

    quad q = quad_default();
    sive_model m = quad_model(2, &q);
    sive_probe *p = new_quad_probe();
    double theta[2] = {0.5, 0.25};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    const int32_t k = sive_result_chains(r);
    for (size_t s = 0; s < n; s++) {
        const sive_stat_info *in = sive_stat_at(s);
        double sum = 0.0, q2 = 0.0, v;
        for (int32_t c = 0; c < k; c++) {
            v = sive_result_stat(r, in->id, c);
            sum += v;
            q2 += v * v;
        }
        double got = sive_result_stat(r, in->id, SIVE_SUMMARY);
        if (in->pool == SIVE_POOL_SUMMARY_ONLY) {
            /* start_z and its parts exist only with the experimental anneal > 1 */
            ck_assert_msg(isnan(sum) && (isfinite(got) || in->id == SIVE_STAT_START_Z ||
                                         in->id == SIVE_STAT_START_Z_LAMBDA ||
                                         in->id == SIVE_STAT_START_Z_MEAN),
                          "%s", in->name);
        } else if (isnan(sum)) {
            continue; /* not estimated in this run (anchor, step0) */
        } else if (in->pool == SIVE_POOL_MEAN) {
            ck_assert_msg(fabs(got - sum / k) <= 1e-12 * fabs(got), "%s", in->name);
        } else if (in->pool == SIVE_POOL_QUADRATURE) {
            ck_assert_msg(fabs(got - sqrt(q2) / k) <= 1e-12 * fabs(got), "%s", in->name);
        } else { /* ALL_CHAINS: the multi-chain ESS is not the mean */
            ck_assert_msg(isfinite(got), "%s", in->name);
        }
    }
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

START_TEST(flag_names)
{
    const uint32_t pinned[] = {SIVE_FLAG_DIVERGED, SIVE_FLAG_NEGATIVE_SIVE,
                               SIVE_FLAG_NONSTATIONARY, SIVE_FLAG_LOW_ESS,
                               SIVE_FLAG_HIGH_RHAT, SIVE_FLAG_NOISY_CORRECTION,
                               SIVE_FLAG_ABORTED, SIVE_FLAG_DOMINANT_CORRECTION,
                               SIVE_FLAG_CHART, SIVE_FLAG_IMPRECISE,
                               SIVE_FLAG_RADIUS_BOUND, SIVE_FLAG_STEP_BIAS,
                               SIVE_FLAG_UNSTABLE, SIVE_FLAG_START_DEPENDENT};
    const char *expect[] = {"diverged", "negative_sive", "nonstationary", "low_ess",
                            "high_rhat", "noisy_correction", "aborted",
                            "dominant_correction", "chart", "imprecise",
                            "radius_bound", "step_bias", "unstable",
                            "start_dependent"};
    const char *names[32];
    size_t n = 0;
    for (; n < 32 && sive_flag_name(UINT32_C(1) << n); n++) {
        names[n] = sive_flag_name(UINT32_C(1) << n);
        ck_assert_int_gt((int)strlen(sive_flag_string(UINT32_C(1) << n)), 0);
        /* each text tells the user what to do about it, not only what it is */
        const char *text = sive_flag_string(UINT32_C(1) << n);
        ck_assert_msg(strstr(text, "raise") || strstr(text, "lower") || strstr(text, "use ") ||
                          strstr(text, "check") || strstr(text, "see "),
                      "flag %s: no advice in \"%s\"", names[n], text);
    }
    ck_assert_uint_ge(n, 14);
    check_name_list(names, n);
    for (size_t k = 0; k < 14; k++) {
        ck_assert_uint_eq(pinned[k], UINT32_C(1) << k);
        ck_assert_str_eq(sive_flag_name(pinned[k]), expect[k]);
    }
    /* past the last bit, no bit, several bits: unknown */
    for (size_t k = n; k < 32; k++) {
        ck_assert_ptr_null(sive_flag_name(UINT32_C(1) << k));
        ck_assert_str_eq(sive_flag_string(UINT32_C(1) << k), "");
    }
    ck_assert_ptr_null(sive_flag_name(0));
    ck_assert_ptr_null(sive_flag_name(SIVE_FLAG_DIVERGED | SIVE_FLAG_ABORTED));
    ck_assert_str_eq(sive_flag_string(0), "");
}
END_TEST

/* ---- sampling and evaluation ---- */

START_TEST(sampling_indices)
{
    quad q = quad_default();
    q.data_size = 50;
    sive_probe *p = new_quad_probe();
    sive_model m = quad_model(3, &q);
    ck_assert_uint_eq(m.n_examples, 50);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 20), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 50), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 200), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    /* with replacement, 20 of 50: repeats are all but certain */
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(q.bad_index, 0);
    ck_assert_int_eq(q.null_index, 0);
    ck_assert_int_eq(q.dup_in_batch, 1);
    sive_result_free(r);
    q.dup_in_batch = 0;
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, 0), SIVE_OK);
    r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(q.bad_index, 0);
    ck_assert_int_eq(q.null_index, 0);
    ck_assert_int_eq(q.dup_in_batch, 0);
    sive_result_free(r);
    /* an analytic model (n_examples 0) sees no indices */
    q.data_size = 0;
    m = quad_model(3, &q);
    r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(q.null_index, 0);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* A data-set model with per-example losses l_i(theta) = 0.5|theta - c_i|^2,
 * c_i depending on the example i. */
#define PE_N 50
typedef struct pe_model {
    atomic_int bad;          /* a per-example call broke its contract */
    atomic_int calls, max_distinct;
} pe_model;

static double pe_loss1(const double *th, size_t d, uint64_t i)
{
    double s = 0.0;
    for (size_t k = 0; k < d; k++) {
        double x = th[k] - (0.1 * (double)((i * 7 + k * 3) % 11) - 0.5);
        s += 0.5 * x * x;
    }
    return s;
}

static int pe_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                   double *loss, void *user)
{
    (void)user;
    const double *th = theta;
    double *g = grad, l = 0.0;
    for (size_t k = 0; k < d; k++) {
        g[k] = 0.0;
        for (size_t j = 0; j < b->group_size; j++)
            g[k] += th[k] - (0.1 * (double)((b->index[j] * 7 + k * 3) % 11) - 0.5);
        g[k] /= (double)b->group_size;
    }
    for (size_t j = 0; j < b->group_size; j++)
        l += pe_loss1(th, d, b->index[j]);
    *loss = l / (double)b->group_size;
    return 0;
}

/* Per-example form: the indices must be distinct, ascending, in range. */
static int pe_loss(const void *theta, size_t d, const sive_batch *b, double *losses,
                   void *user)
{
    pe_model *pm = user;
    int ok = b->n_groups == 1 && b->group_size >= 1 && b->index;
    for (size_t i = 0; ok && i < b->group_size; i++)
        ok = b->index[i] < PE_N && (i == 0 || b->index[i - 1] < b->index[i]);
    if (!ok) {
        atomic_store(&pm->bad, 1);
        return -7; /* fails the run too, whatever thread this is on */
    }
    atomic_fetch_add(&pm->calls, 1);
    int u = (int)b->group_size, seen = atomic_load(&pm->max_distinct);
    while (u > seen && !atomic_compare_exchange_weak(&pm->max_distinct, &seen, u))
        ;
    for (size_t i = 0; i < b->group_size; i++)
        losses[i] = pe_loss1(theta, d, b->index[i]);
    return 0;
}

/* Group form of the same model: each group's mean summed in draw order. */
static int pe_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                    void *user)
{
    (void)user;
    for (size_t g = 0; g < b->n_groups; g++) {
        double acc = 0.0;
        for (size_t j = 0; j < b->group_size; j++)
            acc += pe_loss1(theta, d, b->index[g * b->group_size + j]);
        gl[g] = acc / (double)b->group_size;
    }
    return 0;
}

static int pe_refuse(const void *theta, size_t d, const sive_batch *b, double *gl,
                     void *user)
{
    (void)theta; (void)d; (void)b; (void)gl; (void)user;
    return -99;
}

static sive_model pe_make(pe_model *pm, int per_example)
{
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    m.dtype = SIVE_F64;
    m.dim = 3;
    m.n_examples = PE_N;
    m.grad = pe_grad;
    m.loss = per_example ? pe_loss : NULL;
    m.group_loss = per_example ? NULL : pe_group;
    m.user = pm;
    return m;
}

/* _i: 1 with replacement, 0 without (N*B_eval = 160 draws of 50 examples
 * repeat many examples either way). */
START_TEST(per_example_equals_group)
{
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 300), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 16), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, 10), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 5), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, _i), SIVE_OK);
    pe_model pm = {0};
    sive_model ex = pe_make(&pm, 1), gr = pe_make(&pm, 0);
    double theta[3] = {0.2, -0.1, 0.3};
    sive_result *a = run_status(p, &ex, theta, SIVE_OK);
    sive_result *b = run_status(p, &gr, theta, SIVE_OK);
    ck_assert_int_eq(atomic_load(&pm.bad), 0);
    ck_assert_int_eq(atomic_load(&pm.calls), 2 * 300);
    ck_assert_int_le(atomic_load(&pm.max_distinct), PE_N); /* < 160 draws */
    ck_assert(same_traces(a, b));
    ck_assert(same_bits(sive_result_lambda(a), sive_result_lambda(b)));
    ck_assert(sive_result_lambda(a) > 0.0);
    /* both set: the per-example form is used (the group form would fail) */
    ex.group_loss = pe_refuse;
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    sive_result *c = run_status(p, &ex, theta, SIVE_OK);
    ck_assert(same_traces(a, c)); /* and on two threads */
    ck_assert_int_eq(atomic_load(&pm.bad), 0);
    sive_result_free(a);
    sive_result_free(b);
    sive_result_free(c);
    sive_probe_free(p);
}
END_TEST

START_TEST(eval_stride)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    sive_model m = quad_model(3, &q);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, 4), SIVE_OK);
    double theta[3] = {0.3, -0.2, 0.1};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    size_t len;
    const double *lbar = sive_result_trace(r, SIVE_TRACE_LBAR, 0, &len);
    ck_assert_uint_eq(len, 2000);
    for (size_t i = 0; i < len; i++)
        ck_assert(i % 4 == 0 ? isfinite(lbar[i]) : isnan(lbar[i]));
    /* tail: m >= 600, m % 4 == 0  ->  350 steps */
    ck_assert(sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0) == 350.0);
    ck_assert_int_eq(sive_result_eval_stride(r), 4);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* float32 parameters, K = 0.5|x|^2 with t*E[K] -> d/2 for small steps */
static int quad_grad_f32(const void *theta, size_t d, const sive_batch *b, void *grad,
                         double *loss, void *user)
{
    (void)b; (void)user;
    const float *th = theta;
    float *g = grad;
    double k = 0.0;
    for (size_t i = 0; i < d; i++) {
        g[i] = th[i];
        k += 0.5 * (double)th[i] * th[i];
    }
    *loss = k;
    return 0;
}

static int quad_eval_f32(const void *theta, size_t d, const sive_batch *b, double *gl,
                         void *user)
{
    (void)user;
    const float *th = theta;
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
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100.0), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 20000), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 4), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_ANCHOR, 0.0), SIVE_OK);
    sive_model m;
    ck_assert_int_eq(sive_model_init(&m, sizeof m), SIVE_OK);
    m.dtype = SIVE_F32;
    m.dim = 4;
    m.grad = quad_grad_f32;
    m.group_loss = quad_eval_f32;
    float theta[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    ck_assert_int_eq(sive_result_dtype(r), SIVE_F32);
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

/* ---- chart health: the tail displacement against h ---- */

/* The quadratic probe (h = 1, t = 100) at theta* = (c, c, c) with base_lr
 * a: its flags, and the health text copied into text[len]. */
static uint32_t chart_run_h(double c, double a, double h, char *text, size_t len)
{
    quad q = quad_default();
    sive_probe *p = new_quad_probe();
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, a), SIVE_OK);
    if (h > 0.0)
        ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, h), SIVE_OK);
    sive_model m = quad_model(3, &q);
    double theta[3] = {c, c, c};
    sive_result *r = run_status(p, &m, theta, SIVE_OK);
    uint32_t f = sive_result_flags(r);
    strncpy(text, sive_result_health(r), len - 1);
    text[len - 1] = '\0';
    sive_result_free(r);
    sive_probe_free(p);
    return f;
}

static uint32_t chart_run(double c, double a, char *text, size_t len)
{
    return chart_run_h(c, a, 0.0, text, len);
}

START_TEST(chart_displacement_health)
{
    char text[2048];
    /* minimum at 0, theta* = 5 h away: the chain settles at 5 t h^2/(1 + t h^2)
     * = 4.95 h from theta* */
    ck_assert_msg(chart_run(5.0, 0.05, text, sizeof text) & SIVE_FLAG_CHART, "%s", text);
    ck_assert_msg(strstr(text, "chart: chain ") && strstr(text, "> 3 h") &&
                      strstr(text, "lower c_h"), "%s", text);
    /* a step so small that in 2000 steps the chain diffuses ~0.005 h */
    ck_assert_msg(chart_run(0.0, 1e-6, text, sizeof text) & SIVE_FLAG_CHART, "%s", text);
    ck_assert_msg(strstr(text, "< 0.01 h") && strstr(text, "raise base_lr or steps"), "%s",
                  text);
    /* at the minimum with the default step: ~0.1 h, no warning */
    ck_assert_msg(!(chart_run(0.0, 0.05, text, sizeof text) & SIVE_FLAG_CHART), "%s", text);
    ck_assert_ptr_null(strstr(text, "chart"));
    /* the same at a radius 100 times larger: far inside h (~0.001 h) but at
     * its stationary spread, so no warning (h plays no part) */
    ck_assert_msg(!(chart_run_h(0.0, 0.05, 100.0, text, sizeof text) &
                    SIVE_FLAG_CHART), "%s", text);
    ck_assert_str_eq(sive_flag_name(SIVE_FLAG_CHART), "chart");
}
END_TEST


/* O1: the text setter reads numbers the same in every locale, and has one
 * grammar: whitespace and hex are refused for doubles as for ints.  A
 * comma locale is generated with localedef when the system has none. */
static int comma_locale(void)
{
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8"};
    for (size_t i = 0; i < 3; i++)
        if (setlocale(LC_ALL, names[i]))
            return 1;
    char dir[] = "/tmp/sive-locale-XXXXXX", cmd[256];
    if (!mkdtemp(dir))
        return 0;
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir);
    int ok = system(cmd) == 0 && setenv("LOCPATH", dir, 1) == 0 &&
             setlocale(LC_ALL, "de_DE.UTF-8") != NULL;
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        ok = 0;
    return ok;
}

START_TEST(option_text_locale)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    double dv;
    const char *bad[] = {" 0.5", "0.5 ", "0x1p-1", "0,5", "\t1", "inf", "1e", ".", "+.e1",
                         "1.5.2", "--1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(sive_probe_set_text(p, "base_lr", bad[i]) == SIVE_E_INVALID_ARG,
                      "base_lr '%s' accepted", bad[i]);
    const char *good[] = {"0.5", ".5", "5.e-1", "+5e-1", "50E-2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ck_assert_msg(sive_probe_set_text(p, "base_lr", good[i]) == SIVE_OK, "'%s': %s",
                      good[i], sive_probe_errmsg(p));
        ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_BASE_LR, &dv), SIVE_OK);
        ck_assert(dv == 0.5);
    }
    if (!comma_locale()) {
        fprintf(stderr, "option_text_locale: no comma locale (localedef failed): skipped\n");
        sive_probe_free(p);
        return;
    }
    ck_assert_str_eq(localeconv()->decimal_point, ",");
    ck_assert_msg(sive_probe_set_text(p, "base_lr", "0.25") == SIVE_OK, "%s",
                  sive_probe_errmsg(p));
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_BASE_LR, &dv), SIVE_OK);
    ck_assert(dv == 0.25);
    ck_assert_int_eq(sive_probe_set_text(p, "base_lr", "0,5"), SIVE_E_INVALID_ARG);
    setlocale(LC_ALL, "C");
    sive_probe_free(p);
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
    tcase_add_test(tc, option_table);
    tcase_add_test(tc, option_int64_exact);
    tcase_add_test(tc, option_text);
    tcase_add_test(tc, option_text_locale);
    tcase_add_test(tc, probe_reset);
    tcase_add_test(tc, run_preconditions);
    tcase_add_test(tc, model_validation);
    tcase_add_test(tc, model_destroy);
    tcase_add_test(tc, estimators_fixed_inputs);
    tcase_add_test(tc, health_text_names_lambda_hat);
    tcase_add_test(tc, deterministic_and_thread_invariant);
    tcase_add_test(tc, groups_leave_langevin_path_unchanged);
    tcase_add_test(tc, nan_at_step_500_one_chain);
    tcase_add_test(tc, nan_every_chain);
    tcase_add_test(tc, unwritten_gradient_is_zero);
    tcase_add_loop_test(tc, callback_error_aborts, 0, 2);
    tcase_add_loop_test(tc, callback_message, 0, 2);
    tcase_add_loop_test(tc, stale_message_not_picked_up, 0, 2);
    tcase_add_test(tc, progress_cancel);
    tcase_add_test(tc, progress_timely);
    tcase_add_test(tc, result_options_frozen);
    tcase_add_test(tc, options_copied_at_start);
    tcase_add_loop_test(tc, worker_numbers, 0, 3);
    tcase_add_test(tc, enum_names);
    tcase_add_test(tc, stat_table);
    tcase_add_test(tc, flag_names);
    tcase_add_test(tc, sampling_indices);
    tcase_add_loop_test(tc, per_example_equals_group, 0, 2);
    tcase_add_test(tc, eval_stride);
    tcase_add_test(tc, float32_path);
    tcase_add_test(tc, stats_helpers_bad_input);
    tcase_add_test(tc, public_rng);
    tcase_add_test(tc, chart_displacement_health);
    suite_add_tcase(s, tc);
    return check_run(s);
}
