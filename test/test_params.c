/* Weight-restricted probes (sive_probe_set_params; docs/guide.md "Refined
 * LLCs") on the quadratic fixture (test/quad.h).
 *
 * Checked: the restricted chain's SIVE against the exact tethered ULA law
 * of the moved coordinates only (test/exact_ula.h), the frozen ones never
 * leaving theta* (seen by the gradient callback), the adaptive radius over
 * the moved parameters; ranges covering all of theta give the
 * unrestricted run's traces bit for bit; the ranges in results (getters,
 * bytes, merge); the argument checks and the mask form. */
#include <sive/sive.h>

#include "check_run.h"
#include "exact_ula.h"
#include "quad.h"

#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D 12

/* The quadratic with a record of the gradient calls whose theta moved a
 * coordinate outside the ranges (it must stay at theta*'s bit pattern). */
typedef struct watched {
    quad_fixture q;
    const double *star;
    const unsigned char *moves; /* D flags */
    atomic_long strays;
} watched;

static int watched_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                        double *loss, void *user)
{
    watched *w = user;
    const double *th = theta;
    for (size_t i = 0; i < d; i++)
        if (!w->moves[i] && memcmp(&th[i], &w->star[i], sizeof th[i]) != 0)
            atomic_fetch_add(&w->strays, 1);
    return quad_fixture_grad(theta, d, b, grad, loss, &w->q);
}

static int watched_group(const void *theta, size_t d, const sive_batch *b, double *gl,
                         void *user)
{
    return quad_fixture_group(theta, d, b, gl, &((watched *)user)->q);
}

/* The quadratic q watched: w must outlive the runs. */
static sive_model watched_model(watched *w, quad_fixture q, const double *star,
                                const unsigned char *moves)
{
    w->q = q;
    w->star = star;
    w->moves = moves;
    atomic_init(&w->strays, 0);
    sive_model m = quad_fixture_model(&w->q, D);
    m.grad = watched_grad;
    m.group_loss = watched_group;
    m.user = w;
    return m;
}

static sive_probe *probe(double t, double a, int64_t steps, int64_t chains, uint64_t seed)
{
    sive_probe *p = NULL;
    ck_assert_int_eq(sive_probe_new(&p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_T, t), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_BASE_LR, a), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, steps), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAINS, chains), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_THREADS, 2), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_GROUPS, 8), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_SEED, (int64_t)seed), SIVE_OK);
    return p;
}

static void star_of(double *star, size_t d)
{
    for (size_t i = 0; i < d; i++)
        star[i] = 0.3 + 0.1 * (double)i;
}

/* Moved: [2, 5) and [8, 10), k = 5 of D = 12. */
static const uint64_t RANGES[] = {2, 5, 8, 10};
#define K_MOVED 5

START_TEST(restricted_quadratic_exact)
{
    const double t = 10.0, a = 0.05, c_h = 2.0, curv = 2.0;
    const int64_t M = 20000;
    double star[D];
    unsigned char moves[D] = {0};
    star_of(star, D);
    double n2 = 0.0;
    for (size_t r = 0; r < 2; r++)
        for (uint64_t i = RANGES[2 * r]; i < RANGES[2 * r + 1]; i++) {
            moves[i] = 1;
            n2 += star[i] * star[i];
        }
    static watched w;
    sive_model m = watched_model(&w, (quad_fixture){.k = curv, .l0 = 0.1, .sigma = 0.02},
                                 star, moves);
    sive_probe *p = probe(t, a, M, 8, 42);
    ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_C_H, c_h), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_params(p, RANGES, 2), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    ck_assert_int_eq(atomic_load(&w.strays), 0);
    ck_assert_uint_eq(sive_result_params_dim(r), K_MOVED);
    /* the adaptive radius over the moved parameters (to rounding: the
     * test's sum may be contracted differently) */
    const double h = sive_result_stat(r, SIVE_STAT_H, SIVE_SUMMARY);
    ck_assert_msg(fabs(h / (c_h * sqrt(n2 / K_MOVED)) - 1.0) < 1e-14, "h %.17g, want %.17g",
                  h, c_h * sqrt(n2 / K_MOVED));
    /* E[SIVE_UNCLIPPED] on a tail of n steps: the moved coordinates' exact
     * laws only (each an AR(1) around its own mean; f = k s x + k/2 x^2
     * for x = theta_i - s, s = theta*_i) */
    const double n = sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0);
    double var = 0.0, vm = 0.0;
    for (size_t i = 0; i < D; i++) {
        if (!moves[i])
            continue;
        double vmi;
        var += exact_ula_coord_var(a, a / t, h, curv, curv * star[i], curv / 2.0, n, &vmi);
        vm += vmi;
    }
    const double want = t * t * n / (n - 1.0) * (var - vm);
    const double got = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY);
    const double se = sive_result_stat(r, SIVE_STAT_MCSE, SIVE_SUMMARY);
    const double z = (got - want) / se;
    printf("restricted quadratic (k = %d of %d): SIVE %.5f, exact %.5f, rel %+.2f %%, "
           "MCSE %.5f, z %+.2f\n", K_MOVED, D, got, want, 100.0 * (got / want - 1.0), se, z);
    ck_assert_msg(fabs(z) < 4.0, "z = %g", z);
    /* the unrestricted target is another number: the test can tell */
    double var_all = 0.0, vm_all = 0.0;
    for (size_t i = 0; i < D; i++) {
        double vmi;
        var_all += exact_ula_coord_var(a, a / t, h, curv, curv * star[i], curv / 2.0, n,
                                       &vmi);
        vm_all += vmi;
    }
    ck_assert(fabs(t * t * n / (n - 1.0) * (var_all - vm_all) - got) > 8.0 * se);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Ranges covering all of theta: the unrestricted run bit for bit, every
 * trace when they split at multiples of the noise chunk (2048), the loss
 * traces and the path when they split anywhere (the norms then sum in
 * another order). */
static int precondition; /* run_cover's SIVE_OPT_PRECONDITION */

static sive_result *run_cover(const uint64_t *ranges, size_t n, size_t d)
{
    static quad_fixture q = {.k = 1.5, .l0 = 0.0, .sigma = 0.01};
    sive_model m = quad_fixture_model(&q, d);
    double *star = malloc(d * sizeof *star);
    star_of(star, d);
    sive_probe *p = probe(5.0, 0.01, 200, 2, 7);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, precondition), SIVE_OK);
    if (ranges)
        ck_assert_int_eq(sive_probe_set_params(p, ranges, n), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    sive_probe_free(p);
    free(star);
    return r;
}

static int same(const sive_result *a, const sive_result *b, sive_trace which, int32_t c)
{
    size_t na, nb;
    const double *x = sive_result_trace(a, which, c, &na);
    const double *y = sive_result_trace(b, which, c, &nb);
    return x && y && na == nb && memcmp(x, y, na * sizeof *x) == 0;
}

START_TEST(full_cover_is_unrestricted)
{
    precondition = _i; /* plain SGLD, then the frozen preconditioner */
    const size_t d = 5000;
    const uint64_t chunked[] = {0, 2048, 2048, 4096, 4096, 5000};
    const uint64_t anywhere[] = {0, 7, 7, 3001, 3001, 5000};
    sive_result *all = run_cover(NULL, 0, d);
    sive_result *r1 = run_cover(chunked, 3, d), *r2 = run_cover(anywhere, 3, d);
    ck_assert_uint_eq(sive_result_params_dim(r1), d);
    for (int32_t c = 0; c < 2; c++) {
        for (int k = 0; k < 5; k++)
            ck_assert_msg(same(all, r1, (sive_trace)k, c), "trace %d chain %d", k, (int)c);
        ck_assert(same(all, r2, SIVE_TRACE_LBAR, c));
        ck_assert(same(all, r2, SIVE_TRACE_S2, c));
        ck_assert(same(all, r2, SIVE_TRACE_GRAD_LOSS, c));
    }
    ck_assert(sive_result_lambda(all) == sive_result_lambda(r1));
    ck_assert(sive_result_lambda(all) == sive_result_lambda(r2));
    sive_result_free(all);
    sive_result_free(r1);
    sive_result_free(r2);
}
END_TEST

/* With the frozen preconditioner the coordinates outside the ranges stay
 * at theta* too, and the subset's chain is another chain. */
START_TEST(preconditioned_subset_stays)
{
    double star[D];
    unsigned char moves[D] = {0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0};
    star_of(star, D);
    static watched w;
    sive_model m = watched_model(&w, (quad_fixture){.k = 2.0, .l0 = 0.0, .sigma = 0.01},
                                 star, moves);
    sive_probe *p = probe(10.0, 0.05, 2000, 2, 9);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_PRECONDITION, 1), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_params(p, RANGES, 2), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    ck_assert_int_eq(sive_result_status(r), SIVE_OK);
    ck_assert_int_eq(atomic_load(&w.strays), 0);
    ck_assert(isfinite(sive_result_lambda(r)));
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

/* Ranges survive bytes and merge; parts with other ranges do not merge. */
START_TEST(ranges_in_results)
{
    static quad_fixture q = {.k = 1.0, .l0 = 0.0, .sigma = 0.01};
    sive_model m = quad_fixture_model(&q, D);
    double star[D];
    star_of(star, D);
    const uint64_t other[] = {2, 5, 8, 11};
    sive_result *part[3];
    for (int k = 0; k < 3; k++) {
        sive_probe *p = probe(5.0, 0.01, 100, 2, 3);
        ck_assert_int_eq(sive_probe_set_double(p, SIVE_OPT_H, 1.0), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_BEGIN, k % 2), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_CHAIN_END, k % 2 + 1), SIVE_OK);
        ck_assert_int_eq(sive_probe_set_params(p, k < 2 ? RANGES : other, 2), SIVE_OK);
        ck_assert_int_eq(sive_probe_run(p, &m, star, &part[k]), SIVE_OK);
        sive_probe_free(p);
    }
    void *bytes = NULL;
    size_t len = 0, n = 0;
    ck_assert_int_eq(sive_result_to_bytes(part[1], NULL, &bytes, &len), SIVE_OK);
    sive_result *back = NULL;
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &back, NULL), SIVE_OK);
    const uint64_t *rg = sive_result_params(back, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert(memcmp(rg, RANGES, sizeof RANGES) == 0);
    ck_assert_uint_eq(sive_result_params_dim(back), K_MOVED);
    ck_assert(sive_result_lambda(back) == sive_result_lambda(part[1]));
    /* a range past dim, with a valid hash: a format error, never a result */
    unsigned char *b = bytes;
    sive_result *bad = NULL;
    b[len - 16] = D + 1; /* the last range's end (little-endian) */
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len - 8; i++)
        hash = (hash ^ b[i]) * 0x100000001b3ull;
    for (int i = 0; i < 8; i++)
        b[len - 8 + (size_t)i] = (unsigned char)(hash >> (8 * i));
    ck_assert_int_eq(sive_result_from_bytes(bytes, len, &bad, NULL), SIVE_E_FORMAT);
    ck_assert_ptr_null(bad);
    sive_free(bytes);
    sive_result *merged = NULL;
    const sive_result *ok[2] = {part[0], back}, *mixed[2] = {part[0], part[2]};
    ck_assert_int_eq(sive_result_merge(&merged, ok, 2), SIVE_OK);
    ck_assert_uint_eq(sive_result_params_dim(merged), K_MOVED);
    ck_assert_ptr_nonnull(sive_result_params(merged, &n));
    ck_assert_uint_eq(n, 2);
    sive_result_free(merged);
    merged = NULL;
    ck_assert_int_eq(sive_result_merge(&merged, mixed, 2), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_last_errmsg(), "moved other parameters"), "%s",
                  sive_last_errmsg());
    sive_result_free(back);
    for (int k = 0; k < 3; k++)
        sive_result_free(part[k]);
}
END_TEST

START_TEST(argument_checks)
{
    static quad_fixture q = {.k = 1.0, .l0 = 0.0, .sigma = 0.01};
    sive_model m = quad_fixture_model(&q, D);
    double star[D];
    star_of(star, D);
    sive_probe *p = probe(5.0, 0.01, 100, 1, 3);
    const uint64_t empty[] = {3, 3}, reversed[] = {4, 2}, overlap[] = {0, 4, 3, 6},
                   past[] = {10, 13};
    ck_assert_int_eq(sive_probe_set_params(NULL, RANGES, 2), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_params(p, NULL, 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_params(p, empty, 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_params(p, reversed, 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_set_params(p, overlap, 2), SIVE_E_INVALID_ARG);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "overlaps"), "%s", sive_probe_errmsg(p));
    /* past the model's dim: refused at the run */
    ck_assert_int_eq(sive_probe_set_params(p, past, 1), SIVE_OK);
    sive_result *r = NULL;
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(r);
    ck_assert_msg(strstr(sive_probe_errmsg(p), "past the model's dim"), "%s",
                  sive_probe_errmsg(p));
    /* the mask form gives the same ranges; reset moves all again */
    unsigned char mask[D] = {0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0}, none[D] = {0};
    ck_assert_int_eq(sive_probe_set_params_mask(p, none, D), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_probe_reset(p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_params_mask(p, mask, D), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    size_t n = 0;
    const uint64_t *rg = sive_result_params(r, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert(memcmp(rg, RANGES, sizeof RANGES) == 0);
    sive_result_free(r);
    ck_assert_int_eq(sive_probe_reset(p), SIVE_OK);
    ck_assert_int_eq(sive_probe_set_int(p, SIVE_OPT_STEPS, 100), SIVE_OK);
    ck_assert_int_eq(sive_probe_run(p, &m, star, &r), SIVE_OK);
    ck_assert_ptr_null(sive_result_params(r, &n));
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(sive_result_params_dim(r), D);
    sive_result_free(r);
    sive_probe_free(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("params");
    TCase *tc = tcase_create("params");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, restricted_quadratic_exact);
    tcase_add_loop_test(tc, full_cover_is_unrestricted, 0, 2);
    tcase_add_test(tc, preconditioned_subset_stays);
    tcase_add_test(tc, ranges_in_results);
    tcase_add_test(tc, argument_checks);
    suite_add_tcase(s, tc);
    return check_run(s);
}
