/* The deep linear network and the monomials (include/sive/dln.h):
 * Aoyagi's lambda against the closed forms it must reproduce (L = 1:
 * d/2; L = 2: the reduced-rank regression of Aoyagi & Watanabe 2005; the
 * scalar chain (a_1...a_L)^2: 1/2 with multiplicity L; a bottleneck whose
 * lambda is a minimum of two known ones), exact factorisations, gradients
 * against finite differences in both loss modes, and the error paths. */
#include <sive/dln.h>
#include <sive/sive.h>

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check_run.h"

/* Aoyagi & Watanabe (2005), reduced-rank regression y = B A x with input
 * M, hidden H, output N and true rank r. */
static double rrr_lambda(long M, long H, long N, long r, long *mult)
{
    *mult = 1;
    if (M + H < N + r)
        return (double)(H * M - H * r + N * r) / 2.0;
    if (N + H < M + r)
        return (double)(H * N - H * r + M * r) / 2.0;
    if (M + N < H + r)
        return (double)(M * N) / 2.0;
    long num = 2 * (H + r) * (M + N) - (M - N) * (M - N) - (H + r) * (H + r);
    if ((M + H + N + r) % 2) {
        *mult = 2;
        num += 1;
    }
    return (double)num / 8.0;
}

START_TEST(lambda_reduced_rank_regression)
{
    int cases = 0;
    for (size_t M = 1; M <= 9; M++)
        for (size_t H = 1; H <= 9; H++)
            for (size_t N = 1; N <= 9; N++) {
                size_t w[3] = {M, H, N}, rmax = M < H ? M : H;
                rmax = N < rmax ? N : rmax;
                for (size_t r = 0; r <= rmax; r++) {
                    double lam = NAN;
                    int64_t m = 0;
                    long em = 0;
                    ck_assert_int_eq(sive_dln_lambda(w, 2, r, &lam, &m), SIVE_OK);
                    double ref = rrr_lambda((long)M, (long)H, (long)N, (long)r, &em);
                    ck_assert_msg(lam == ref && m == em,
                                  "%zu-%zu-%zu r %zu: lambda %g (m %lld), RRR %g (m %ld)",
                                  M, H, N, r, lam, (long long)m, ref, em);
                    cases++;
                }
            }
    ck_assert_int_gt(cases, 700);
}
END_TEST

START_TEST(lambda_regular_and_hand_cases)
{
    double lam;
    int64_t m;
    for (size_t a = 1; a <= 12; a++) /* L = 1: regular, d/2 */
        for (size_t b = 1; b <= 12; b += 5)
            for (size_t r = 0; r <= (a < b ? a : b); r++) {
                size_t w[2] = {a, b};
                ck_assert_int_eq(sive_dln_lambda(w, 1, r, &lam, &m), SIVE_OK);
                ck_assert(lam == a * b / 2.0 && m == 1);
            }
    for (size_t L = 1; L <= 10; L++) { /* K = (a_1...a_L)^2 */
        size_t w[11];
        for (size_t s = 0; s <= L; s++)
            w[s] = 1;
        ck_assert_int_eq(sive_dln_lambda(w, L, 0, &lam, &m), SIVE_OK);
        ck_assert_msg(lam == 0.5 && m == (int64_t)L, "L %zu: %g %lld", L, lam,
                      (long long)m);
        ck_assert_int_eq(sive_dln_lambda(w, L, 1, &lam, &m), SIVE_OK);
        ck_assert(lam == 0.5 && m == 1); /* true product 1: regular */
    }
    /* Square full rank: a submersion onto r x r matrices, lambda = r^2/2. */
    size_t sq[5] = {4, 4, 4, 4, 4};
    ck_assert_int_eq(sive_dln_lambda(sq, 4, 4, &lam, &m), SIVE_OK);
    ck_assert(lam == 8.0 && m == 1);
    /* By hand from the statement: 2-2-2-2, r 0 (l 3, S 8, a 2). */
    size_t h1[4] = {2, 2, 2, 2};
    ck_assert_int_eq(sive_dln_lambda(h1, 3, 0, &lam, &m), SIVE_OK);
    ck_assert(lam == 1.5 && m == 3);
    /* 10-3-10-10, r 1: M = 9 2 9 9, l 3, S 29, a 2: 9.5 + 1/6 - 140 1/6 + 148.5 */
    size_t h2[4] = {10, 3, 10, 10};
    ck_assert_int_eq(sive_dln_lambda(h2, 3, 1, &lam, &m), SIVE_OK);
    ck_assert(lam == 18.0 && m == 3);
    /* 5-1-6-7, r 0: K = ||v||^2 ||W3 w2||^2 with v in R^5 (lambda 5/2) and
     * the RRR 1-6-7 (lambda 3) in disjoint variables: min = 5/2, m 1. */
    size_t h3[4] = {5, 1, 6, 7};
    ck_assert_int_eq(sive_dln_lambda(h3, 3, 0, &lam, &m), SIVE_OK);
    ck_assert(lam == 2.5 && m == 1);
}
END_TEST

static sive_dln *make(const size_t *w, size_t L, size_t r, uint64_t n, double noise)
{
    sive_dln *m = NULL;
    const double sv[4] = {2.0, 1.0, 0.5, 1.5};
    ck_assert_int_eq(sive_dln_new(&m, w, L, r, r <= 4 ? sv : NULL, 7), SIVE_OK);
    ck_assert_int_eq(sive_dln_set_data(m, n, noise, 11), SIVE_OK);
    return m;
}

START_TEST(factorisation_is_exact)
{
    const size_t w[4] = {5, 4, 6, 3};
    sive_dln *m = make(w, 3, 3, 0, 0.5);
    const size_t d = sive_dln_dim(m);
    ck_assert_uint_eq(d, 20 + 24 + 18);
    double *th = malloc(d * sizeof *th), *g = malloc(d * sizeof *g), loss;
    sive_dln_work *wk = NULL;
    ck_assert_int_eq(sive_dln_work_new(&wk, m, 2, 1), SIVE_OK); /* 3 blocks */
    ck_assert_int_eq(sive_dln_factorisation(m, NULL, 3, th), SIVE_OK);
    ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, NULL, 0, g, &loss), SIVE_OK);
    ck_assert_double_eq_tol(loss, 3 * 0.25 / 2, 1e-12); /* HL noise^2 / 2 */
    for (size_t i = 0; i < d; i++)
        ck_assert_double_eq_tol(g[i], 0.0, 1e-12);
    /* balanced: W2^T W2 = W1 W1^T (4 x 4) */
    const double *W1 = th, *W2 = th + 20;
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++) {
            double a = 0, b = 0;
            for (size_t k = 0; k < 6; k++)
                a += W2[k * 4 + i] * W2[k * 4 + j];
            for (size_t k = 0; k < 5; k++)
                b += W1[i * 5 + k] * W1[j * 5 + k];
            ck_assert_double_eq_tol(a, b, 1e-12);
        }
    const double sc[3] = {2.0, 0.25, 2.0};
    ck_assert_int_eq(sive_dln_factorisation(m, sc, 3, th), SIVE_OK);
    ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, NULL, 0, NULL, &loss), SIVE_OK);
    ck_assert_double_eq_tol(loss, 0.375, 1e-12);
    const double bad[3] = {2.0, 2.0, 2.0};
    ck_assert_int_eq(sive_dln_factorisation(m, bad, 3, th), SIVE_E_INVALID_ARG);
    /* the teacher has the singular values: ||W_T||_F^2 = 4 + 1 + 0.25 */
    double wt[15], f2 = 0.0;
    ck_assert_int_eq(sive_dln_teacher(m, wt), SIVE_OK);
    for (int i = 0; i < 15; i++)
        f2 += wt[i] * wt[i];
    ck_assert_double_eq_tol(f2, 5.25, 1e-12);
    sive_dln_work_free(wk);
    sive_dln_free(m);
    free(th);
    free(g);
}
END_TEST

/* Central differences of the loss against the gradient. */
static void check_grad(sive_dln *m, const uint64_t *idx, size_t n)
{
    const size_t d = sive_dln_dim(m);
    double *th = malloc(d * sizeof *th), *g = malloc(d * sizeof *g);
    sive_rng rng;
    sive_rng_seed(&rng, 5, 0);
    sive_rng_normals(&rng, th, d);
    sive_dln_work *wk = NULL;
    ck_assert_int_eq(sive_dln_work_new(&wk, m, 3, 1), SIVE_OK);
    double l0;
    ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, idx, n, g, &l0), SIVE_OK);
    for (size_t i = 0; i < d; i++) {
        const double e = 1e-5, keep = th[i];
        double lp, lm;
        th[i] = keep + e;
        ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, idx, n, NULL, &lp), SIVE_OK);
        th[i] = keep - e;
        ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, idx, n, NULL, &lm), SIVE_OK);
        th[i] = keep;
        const double fd = (lp - lm) / (2 * e);
        ck_assert_msg(fabs(fd - g[i]) <= 1e-6 * (1.0 + fabs(g[i])),
                      "coordinate %zu: grad %.10g, differences %.10g", i, g[i], fd);
    }
    sive_dln_work_free(wk);
    free(th);
    free(g);
}

START_TEST(gradients_match_differences)
{
    const size_t w1[2] = {4, 3}, w3[4] = {5, 4, 6, 3}, w5[6] = {3, 2, 4, 2, 3, 4};
    sive_dln *m = make(w1, 1, 2, 0, 0.0);
    check_grad(m, NULL, 0);
    sive_dln_free(m);
    m = make(w3, 3, 2, 0, 1.0);
    check_grad(m, NULL, 0);
    sive_dln_free(m);
    m = make(w5, 5, 0, 0, 0.0);
    check_grad(m, NULL, 0);
    sive_dln_free(m);
    const uint64_t idx[7] = {0, 3, 3, 9, 1, 2, 8};
    m = make(w3, 3, 2, 10, 0.7);
    check_grad(m, idx, 7);
    sive_dln_free(m);
}
END_TEST

/* Data mode: per-example losses average to the batch loss, and the mean
 * over many examples approaches the population loss. */
START_TEST(data_mode_matches_population)
{
    const size_t w[3] = {4, 3, 2};
    sive_dln *m = make(w, 2, 1, 20000, 0.5);
    sive_dln *p = make(w, 2, 1, 0, 0.5);
    const size_t d = sive_dln_dim(m);
    double th[18], pop, mean;
    ck_assert_uint_eq(d, 18);
    sive_rng rng;
    sive_rng_seed(&rng, 1, 0);
    sive_rng_normals(&rng, th, d);
    sive_dln_work *wk = NULL;
    ck_assert_int_eq(sive_dln_work_new(&wk, m, 0, 1), SIVE_OK);
    ck_assert_int_eq(sive_dln_loss_grad(p, wk, th, NULL, 0, NULL, &pop), SIVE_OK);
    uint64_t *idx = malloc(20000 * sizeof *idx);
    double *l = malloc(20000 * sizeof *l), s = 0, s2 = 0;
    for (uint64_t j = 0; j < 20000; j++)
        idx[j] = j;
    ck_assert_int_eq(sive_dln_example_losses(m, wk, th, idx, 20000, l), SIVE_OK);
    ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, idx, 20000, NULL, &mean), SIVE_OK);
    for (int j = 0; j < 20000; j++) {
        s += l[j];
        s2 += l[j] * l[j];
    }
    const double se = sqrt((s2 / 20000 - (s / 20000) * (s / 20000)) / 20000);
    ck_assert_double_eq_tol(mean, s / 20000, 1e-9 * fabs(mean));
    ck_assert_msg(fabs(mean - pop) < 4 * se, "data %g, population %g, se %g", mean,
                  pop, se);
    ck_assert_int_eq(sive_dln_example_losses(p, wk, th, NULL, 0, l), SIVE_E_INVALID_ARG);
    idx[0] = 20000;
    ck_assert_int_eq(sive_dln_example_losses(m, wk, th, idx, 1, l), SIVE_E_INVALID_ARG);
    /* SGD from the data finds a student of small population loss */
    double tr[18], lt;
    for (size_t i = 0; i < d; i++)
        tr[i] = 0.3 * th[i];
    ck_assert_int_eq(sive_dln_train(m, wk, tr, 0.05, 3000, 32, 3, &lt), SIVE_OK);
    ck_assert_int_eq(sive_dln_loss_grad(p, wk, tr, NULL, 0, NULL, &pop), SIVE_OK);
    ck_assert_msg(pop < 0.25 + 0.01 && lt < 0.26, "student %g / %g", pop, lt);
    sive_dln_work_free(wk);
    sive_dln_free(m);
    sive_dln_free(p);
    free(idx);
    free(l);
}
END_TEST

/* The model's gradient at theta* from the pieces cached in the pass at
 * theta* (chain and step -1) equals sive_dln_loss_grad() on the same batch
 * (to rounding: other products), at 3 layers with a batch spanning blocks
 * and repeats; theta != theta*, a batch before the pass is complete and a
 * bad index take the plain path. */
/* g within 1e-12 (relative to its largest entry) of the plain gradient want. */
static void close_gradients(const double *g, const double *want, size_t d, const char *what)
{
    double diff = 0.0, norm = 0.0;
    for (size_t i = 0; i < d; i++) {
        diff = fmax(diff, fabs(g[i] - want[i]));
        norm = fmax(norm, fabs(want[i]));
    }
    ck_assert_msg(diff <= 1e-12 * norm, "%s off by %g (max |g| %g)", what, diff, norm);
}

START_TEST(star_cache_matches_plain_gradient)
{
    const size_t w[4] = {5, 4, 6, 3};
    sive_dln *m = make(w, 3, 2, 700, 0.5);
    const size_t d = sive_dln_dim(m);
    double *th = malloc(d * sizeof *th), *g0 = malloc(d * sizeof *g0),
           *g1 = malloc(d * sizeof *g1), *other = malloc(d * sizeof *other);
    sive_rng rng;
    sive_rng_seed(&rng, 3, 0);
    sive_rng_normals(&rng, th, d);
    for (size_t i = 0; i < d; i++)
        other[i] = th[i] + 1e-3;
    sive_model model;
    sive_dln_work *wk = NULL;
    ck_assert_int_eq(sive_model_init(&model, sizeof model), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(&model, m, 1), SIVE_OK);
    ck_assert_int_eq(sive_dln_work_new(&wk, m, 0, 1), SIVE_OK);
    uint64_t idx[700], bidx[300];
    for (uint64_t j = 0; j < 300; j++)
        bidx[j] = (j * 37 + 11) % 700; /* repeats, above one 256-row block */
    sive_batch b = {.index = bidx, .n_groups = 1, .group_size = 300, .chain = 0,
                    .worker = 0, .step = 5};
    double l0, l1;
    ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, bidx, 300, g0, &l0), SIVE_OK);
    /* the pass at theta*, in two chunks; the half-filled cache is not used */
    for (uint64_t j = 0; j < 700; j++)
        idx[j] = j;
    sive_batch pass = {.index = idx, .n_groups = 1, .group_size = 400, .chain = -1,
                       .worker = 0, .step = -1};
    ck_assert_int_eq(model.grad(th, d, &pass, g1, &l1, model.user), SIVE_OK);
    ck_assert_int_eq(model.grad(th, d, &b, g1, &l1, model.user), SIVE_OK);
    for (size_t i = 0; i < d; i++)
        ck_assert_double_eq(g1[i], g0[i]); /* plain path: bit for bit */
    pass.index = idx + 400;
    pass.group_size = 300;
    ck_assert_int_eq(model.grad(th, d, &pass, g1, &l1, model.user), SIVE_OK);
    ck_assert_int_eq(model.grad(th, d, &b, g1, &l1, model.user), SIVE_OK);
    close_gradients(g1, g0, d, "cached gradient");
    ck_assert_double_eq_tol(l1, l0, 1e-12 * l0);
    ck_assert_int_eq(sive_dln_loss_grad(m, wk, other, bidx, 300, g0, &l0), SIVE_OK);
    ck_assert_int_eq(model.grad(other, d, &b, g1, &l1, model.user), SIVE_OK);
    for (size_t i = 0; i < d; i++)
        ck_assert_double_eq(g1[i], g0[i]);
    /* new data of the same size (the model allows it: the mode is kept):
     * the next run's pass at the same theta* starts the cache over, so the
     * batch gradient at theta* is the new data's, not the cached pieces' */
    ck_assert_int_eq(sive_dln_set_data(m, 700, 0.5, 12), SIVE_OK);
    ck_assert_int_eq(sive_dln_loss_grad(m, wk, th, bidx, 300, g0, &l0), SIVE_OK);
    pass.index = idx;
    pass.group_size = 700;
    ck_assert_int_eq(model.grad(th, d, &pass, g1, &l1, model.user), SIVE_OK);
    ck_assert_int_eq(model.grad(th, d, &b, g1, &l1, model.user), SIVE_OK);
    close_gradients(g1, g0, d, "gradient at theta* after new data");
    ck_assert_double_eq_tol(l1, l0, 1e-12 * l0);
    bidx[7] = 700;
    ck_assert_int_eq(model.grad(th, d, &b, g1, &l1, model.user), SIVE_E_INVALID_ARG);
    /* data of another size: the model (n_examples 700) refuses to run */
    ck_assert_int_eq(sive_dln_set_data(m, 800, 0.5, 12), SIVE_OK);
    bidx[7] = 7;
    ck_assert_int_eq(model.grad(th, d, &b, g1, &l1, model.user), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "make a new model"));
    sive_model_destroy(&model);
    sive_dln_work_free(wk);
    sive_dln_free(m);
    free(th);
    free(g0);
    free(g1);
    free(other);
}
END_TEST

START_TEST(errors_and_monomials)
{
    sive_dln *m = (sive_dln *)1;
    const size_t w[3] = {3, 0, 2}, ok[3] = {3, 2, 2};
    ck_assert_int_eq(sive_dln_new(&m, w, 2, 0, NULL, 0), SIVE_E_INVALID_ARG);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(sive_dln_new(&m, ok, 2, 3, NULL, 0), SIVE_E_INVALID_ARG);
    ck_assert(strstr(sive_last_errmsg(), "rank 3") != NULL);
    ck_assert_int_eq(sive_dln_new(&m, ok, 0, 0, NULL, 0), SIVE_E_INVALID_ARG);
    const double neg[1] = {-1.0};
    ck_assert_int_eq(sive_dln_new(&m, ok, 2, 1, neg, 0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dln_lambda(ok, 2, 3, NULL, NULL), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dln_new(&m, ok, 2, 2, NULL, 0), SIVE_OK);
    ck_assert_int_eq(sive_dln_set_data(m, 5, NAN, 0), SIVE_E_INVALID_ARG);
    sive_model mod;
    /* an uninitialised struct_size is refused as sive_mlp_model() and the
     * run refuse it (a model made on it could not be destroyed: a leak) */
    memset(&mod, 0xab, sizeof mod);
    ck_assert_int_eq(sive_dln_model(&mod, m, 1), SIVE_E_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(sive_last_errmsg(), "sive_model_init"));
    const uint32_t kk[1] = {1};
    ck_assert_int_eq(sive_monomial_model(&mod, kk, 1), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_model_init(&mod, sizeof mod), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(&mod, m, 0), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_dln_model(&mod, m, 1), SIVE_OK);
    ck_assert(mod.dtype == SIVE_F64 && mod.dim == 10 && mod.n_examples == 0 &&
              mod.group_loss && !mod.loss);
    sive_model_destroy(&mod);
    sive_dln_free(m);
    sive_dln_free(NULL);

    const uint32_t k[3] = {1, 2, 3}, zero[2] = {1, 0};
    ck_assert_double_eq_tol(sive_monomial_lambda(k, 3), 0.5 + 0.25 + 1.0 / 6, 1e-15);
    ck_assert(isnan(sive_monomial_lambda(zero, 2)));
    ck_assert_int_eq(sive_monomial_model(&mod, zero, 2), SIVE_E_INVALID_ARG);
    ck_assert_int_eq(sive_model_init(&mod, sizeof mod), SIVE_OK);
    ck_assert_int_eq(sive_monomial_model(&mod, k, 3), SIVE_OK);
    const double th[3] = {-0.5, 2.0, 1.5};
    double g[3], loss = NAN, gl[2];
    sive_batch b = {.n_groups = 2, .group_size = 1};
    ck_assert_int_eq(mod.grad(th, 3, &b, g, &loss, mod.user), SIVE_OK);
    ck_assert_double_eq_tol(loss, 0.25 + 16 + pow(1.5, 6), 1e-12);
    ck_assert_double_eq_tol(g[0], -1.0, 1e-12);
    ck_assert_double_eq_tol(g[1], 4 * 8.0, 1e-12);
    ck_assert_double_eq_tol(g[2], 6 * pow(1.5, 5), 1e-12);
    ck_assert_int_eq(mod.group_loss(th, 3, &b, gl, mod.user), SIVE_OK);
    ck_assert(gl[0] == loss && gl[1] == loss);
    sive_model_destroy(&mod);
}
END_TEST

/* sive_model.identity of a DLN model: its architecture, teacher and data
 * content, so that sive_result_merge() tells apart parts probed on
 * different data sets (it was 0, "no identity", and they merged).  The
 * same network gives the same identity; other data (same size, other
 * seed), another teacher, population mode, another width do not. */
static uint64_t dln_identity_of(const size_t *w, size_t L, size_t rank, uint64_t teacher_seed,
                                uint64_t n, uint64_t data_seed)
{
    sive_dln *m = NULL;
    ck_assert_int_eq(sive_dln_new(&m, w, L, rank, NULL, teacher_seed), SIVE_OK);
    if (n)
        ck_assert_int_eq(sive_dln_set_data(m, n, 0.5, data_seed), SIVE_OK);
    sive_model mod;
    ck_assert_int_eq(sive_model_init(&mod, sizeof mod), SIVE_OK);
    ck_assert_int_eq(sive_dln_model(&mod, m, 1), SIVE_OK);
    const uint64_t id = mod.identity;
    sive_model_destroy(&mod);
    sive_dln_free(m);
    ck_assert(id != 0);
    return id;
}

START_TEST(model_identity_from_data)
{
    const size_t w[3] = {4, 3, 2}, wider[3] = {4, 4, 2};
    const uint64_t id = dln_identity_of(w, 2, 2, 7, 300, 11);
    ck_assert(dln_identity_of(w, 2, 2, 7, 300, 11) == id);
    ck_assert(dln_identity_of(w, 2, 2, 7, 300, 12) != id); /* other data */
    ck_assert(dln_identity_of(w, 2, 2, 7, 301, 11) != id);
    ck_assert(dln_identity_of(w, 2, 2, 8, 300, 11) != id); /* other teacher */
    ck_assert(dln_identity_of(wider, 2, 2, 7, 300, 11) != id);
    const uint64_t pop = dln_identity_of(w, 2, 2, 7, 0, 0);
    ck_assert(pop != id && dln_identity_of(w, 2, 2, 7, 0, 0) == pop);
    ck_assert(dln_identity_of(w, 2, 1, 7, 0, 0) != pop);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dln");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, lambda_reduced_rank_regression);
    tcase_add_test(tc, lambda_regular_and_hand_cases);
    tcase_add_test(tc, factorisation_is_exact);
    tcase_add_test(tc, gradients_match_differences);
    tcase_add_test(tc, data_mode_matches_population);
    tcase_add_test(tc, star_cache_matches_plain_gradient);
    tcase_add_test(tc, errors_and_monomials);
    tcase_add_test(tc, model_identity_from_data);
    suite_add_tcase(s, tc);
    return check_run(s);
}
