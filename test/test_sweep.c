/* sive_probe_sweep(): one result per value, each equal to a plain run with
 * that option (common random numbers), independent of `parallel`, and the
 * error paths leave every out[i] NULL. */
#include "check_run.h"
#include "quad.h"

#include <check.h>
#include <math.h>
#include <sive/sive.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* L(theta) = |theta|^2 with Gaussian evaluation noise (per group) */
static quad_fixture qf = {.k = 2.0, .l0 = 0.0, .sigma = 0.01};

static sive_model qmodel(void) { return quad_fixture_model(&qf, 3); }

static sive_probe *qprobe(void)
{
    sive_probe *p;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 400), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, 7), SIVE_OK);
    return p;
}

static const double theta0[3] = {0.1, -0.2, 0.05};

START_TEST(sweep_equals_single_runs)
{
    sive_model m = qmodel();
    sive_probe *p = qprobe();
    const double lr[] = {0.01, 0.05, 0.1};
    sive_result *out[3], *par[3];
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_BASE_LR, lr, 3, 1, out), SIVE_OK);
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_BASE_LR, lr, 3, 3, par), SIVE_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_nonnull(out[i]);
        double v;
        ck_assert_int_eq(sive_result_option_double(out[i], SIVE_OPT_BASE_LR, &v), SIVE_OK);
        ck_assert_double_eq(v, lr[i]);
        /* the same run by hand */
        sive_probe *q = qprobe();
        sive_result *r;
        ck_assert_int_eq(sive_probe_set_double(q, SIVE_OPT_BASE_LR, lr[i]), SIVE_OK);
        ck_assert_int_eq(sive_probe_run(q, &m, theta0, &r), SIVE_OK);
        ck_assert(sive_result_lambda(r) == sive_result_lambda(out[i]));
        ck_assert(sive_result_lambda(par[i]) == sive_result_lambda(out[i]));
        ck_assert(sive_result_noise_correction(par[i]) == sive_result_noise_correction(out[i]));
        sive_result_free(r);
        sive_probe_free(q);
    }
    /* p itself unchanged */
    double v;
    ck_assert_int_eq(sive_probe_get_double(p, SIVE_OPT_BASE_LR, &v), SIVE_OK);
    ck_assert_double_eq(v, 0.05); /* the library default */
    for (int i = 0; i < 3; i++)
        sive_result_free(out[i]), sive_result_free(par[i]);
    sive_probe_free(p);
}
END_TEST

/* N changes only the evaluation draws: the Langevin path (disp trace) is
 * shared across values (common random numbers) */
START_TEST(sweep_groups_common_path)
{
    sive_model m = qmodel();
    sive_probe *p = qprobe();
    const double n[] = {4, 16};
    sive_result *out[2];
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_GROUPS, n, 2, 2, out), SIVE_OK);
    size_t l0, l1;
    const double *d0 = sive_result_trace(out[0], SIVE_TRACE_DISP, 0, &l0);
    const double *d1 = sive_result_trace(out[1], SIVE_TRACE_DISP, 0, &l1);
    ck_assert_uint_eq(l0, l1);
    ck_assert(memcmp(d0, d1, l0 * sizeof *d0) == 0);
    int64_t g;
    ck_assert_int_eq(sive_result_option_int(out[1], SIVE_OPT_GROUPS, &g), SIVE_OK);
    ck_assert_int_eq(g, 16);
    sive_result_free(out[0]);
    sive_result_free(out[1]);
    sive_probe_free(p);
}
END_TEST

START_TEST(sweep_errors)
{
    sive_model m = qmodel();
    sive_probe *p = qprobe();
    sive_result *out[2] = {(sive_result *)1, (sive_result *)1};
    const double bad_n[] = {4, 4.5};
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_GROUPS, bad_n, 2, 1, out),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_null(out[1]);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "value 1"));
    const double neg[] = {0.05, -1};
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_BASE_LR, neg, 2, 1, out),
                     SIVE_E_INVALID_ARG);
    const double seeds[] = {1, 2};
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_SEED, seeds, 2, 1, out),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_BASE_LR, neg, 2, 0, out),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_sweep(NULL, &m, theta0, SIVE_OPT_BASE_LR, neg, 2, 1, out),
                     SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_BASE_LR, neg, 0, 1, out),
                     SIVE_E_INVALID_ARG);
    /* a run that refuses theta*: nothing is returned */
    const double nan_theta[3] = {NAN, 0, 0};
    const double lr[] = {0.01, 0.02};
    ck_assert_int_eq(sive_probe_sweep(p, &m, nan_theta, SIVE_OPT_BASE_LR, lr, 2, 2, out),
                     SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(out[0]);
    ck_assert_ptr_null(out[1]);
    sive_probe_free(p);
}
END_TEST

static int stop_now(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)chain, (void)step, (void)total, (void)user;
    return 1;
}

/* a cancelled run stops the sweep: SIVE_E_CANCELLED, nothing returned */
START_TEST(sweep_cancelled)
{
    sive_model m = qmodel();
    sive_probe *p = qprobe();
    ck_assert_int_eq(sive_probe_set_progress(p, stop_now, NULL), SIVE_OK);
    const double lr[] = {0.01, 0.02, 0.05};
    sive_result *out[3];
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_BASE_LR, lr, 3, 2, out),
                     SIVE_E_CANCELLED);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_null(out[i]);
    ck_assert_ptr_nonnull(strstr(sive_probe_errmsg(p), "base_lr"));
    sive_probe_free(p);
}
END_TEST

/* Parallel slots never share a worker number: the evaluation views'
 * callbacks see the same (offset) worker as the model's evaluation just
 * before them in the same thread, so a view model with per-worker scratch
 * (sive_mlp_model on a test set) is not raced by two slots.  Each run's
 * first step sleeps 20 ms so that every slot runs a value. */
static _Thread_local int32_t model_worker = -1;
static atomic_int view_mismatch, view_max_worker;

static int worker_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                       double *loss, void *user)
{
    if (b->step == 0 && b->chain == 0)
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    return quad_fixture_grad(theta, d, b, grad, loss, user);
}

static int worker_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                        void *user)
{
    model_worker = b->worker;
    return quad_fixture_group(theta, d, b, gl, user);
}

static int worker_view(const void *theta, size_t d, const sive_batch *b, double *gl,
                       void *user)
{
    if (b->worker != model_worker)
        atomic_fetch_add(&view_mismatch, 1);
    int m = atomic_load(&view_max_worker);
    while (b->worker > m && !atomic_compare_exchange_weak(&view_max_worker, &m, b->worker))
        ;
    return quad_fixture_group(theta, d, b, gl, user);
}

START_TEST(sweep_views_worker_offset)
{
    sive_model m = qmodel();
    m.grad = worker_grad;
    m.group_loss = worker_group;
    sive_model vm = qmodel();
    vm.group_loss = worker_view;
    sive_probe *p = qprobe();
    ck_assert_int_eq(sive_probe_add_eval_view(p, "v", &vm, NULL, 0), SIVE_OK);
    atomic_store(&view_mismatch, 0);
    atomic_store(&view_max_worker, -1);
    const double lr[] = {0.01, 0.02, 0.05};
    sive_result *out[3];
    ck_assert_int_eq(sive_probe_sweep(p, &m, theta0, SIVE_OPT_BASE_LR, lr, 3, 3, out), SIVE_OK);
    const int mismatch = atomic_load(&view_mismatch), most = atomic_load(&view_max_worker);
    ck_assert_int_eq(mismatch, 0);
    ck_assert_int_ge(most, 2); /* a slot > 0 ran (w = 2) */
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(sive_result_views(out[i]), 1);
        sive_result_free(out[i]);
    }
    sive_probe_free(p);
}
END_TEST

/* A 0.2 program's sive_model ends at destroy (struct_size says so): the
 * sweep reads no byte past it.  The struct sits at the end of a readable
 * page followed by an unreadable one, so a read of the 0.3 identity field
 * beyond it faults. */
START_TEST(sweep_reads_only_struct_size)
{
    const size_t v02 = offsetof(sive_model, identity), page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(map, MAP_FAILED);
    ck_assert_int_eq(mprotect(map + page, page, PROT_NONE), 0);
    sive_model full = qmodel();
    sive_model *m02 = (sive_model *)(map + page - v02);
    memcpy(m02, &full, v02);
    m02->struct_size = (uint32_t)v02;
    sive_probe *p = qprobe();
    const double lr[] = {0.01, 0.05};
    sive_result *out[2];
    for (int32_t parallel = 1; parallel <= 2; parallel++) {
        ck_assert_int_eq(sive_probe_sweep(p, m02, theta0, SIVE_OPT_BASE_LR, lr, 2, parallel, out),
                         SIVE_OK);
        for (int i = 0; i < 2; i++)
            sive_result_free(out[i]);
    }
    sive_probe_free(p);
    munmap(map, 2 * page);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sweep_equals_single_runs);
    tcase_add_test(tc, sweep_groups_common_path);
    tcase_add_test(tc, sweep_errors);
    tcase_add_test(tc, sweep_cancelled);
    tcase_add_test(tc, sweep_views_worker_offset);
    tcase_add_test(tc, sweep_reads_only_struct_size);
    suite_add_tcase(s, tc);
    return check_run(s);
}
