/* Unit tests for lib/numerics/linalg.c: the product with transposes
 * against a direct sum, and one-sided Jacobi: V orthogonal, a_out V^T =
 * a_in, a_out's columns orthogonal, and the squared column norms equal to
 * the known eigenvalues of a^T a (a = Q diag(d) P^T built from random
 * orthogonal Q, P), to relative accuracy eps * kappa (Demmel-Veselic: the
 * one-sided method's error bound, kappa the condition number of a with its
 * columns scaled to unit norm) on a spread of 10^6, where an eigensolver
 * on a^T a would lose eps * kappa^2 = 10^-4; also n > m (rank deficient:
 * the extra columns' norms read 0). */
#include "linalg.h"
#include "rng.h"

#include "check_run.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

static void normals(double *x, size_t n, uint64_t seed)
{
    sivei_pcg32 g;
    sivei_pcg32_stream(&g, seed, 0, 11u);
    sivei_pcg32_normals(&g, x, n);
}

static double at(const double *a, int t, size_t rows, size_t cols, size_t i, size_t j)
{
    return t ? a[j * rows + i] : a[i * cols + j]; /* op(a) is rows x cols */
}

START_TEST(gemm_transposes)
{
    enum { M = 3, K = 4, N = 5 };
    double a[M * K], b[K * N], c[M * N];
    normals(a, M * K, 1);
    normals(b, K * N, 2);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            sivei_gemm(a, ta, b, tb, c, M, K, N);
            for (size_t i = 0; i < M; i++)
                for (size_t j = 0; j < N; j++) {
                    double s = 0.0;
                    for (size_t q = 0; q < K; q++)
                        s += at(a, ta, M, K, i, q) * at(b, tb, K, N, q, j);
                    ck_assert_double_eq_tol(c[i * N + j], s, 1e-14);
                }
        }
}
END_TEST

/* q (n x n) <- an orthogonal matrix (Jacobi on a Gaussian one). */
static void orthogonal(double *q, size_t n, uint64_t seed)
{
    double *g = malloc(n * n * sizeof *g);
    normals(g, n * n, seed);
    sivei_jacobi_cols(g, n, n, q);
    free(g);
}

static int cmp(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* a (m x n) through Jacobi: the invariants, the sorted |columns|^2 into ev. */
static void check_jacobi(const double *a0, size_t m, size_t n, double *ev)
{
    double *a = malloc(m * n * sizeof *a), *v = malloc(n * n * sizeof *v),
           *back = malloc(m * n * sizeof *back), *vtv = malloc(n * n * sizeof *vtv);
    double fro = 0.0;
    for (size_t i = 0; i < m * n; i++)
        a[i] = a0[i], fro += a0[i] * a0[i];
    const int sweeps = sivei_jacobi_cols(a, m, n, v);
    ck_assert_int_lt(sweeps, 60);
    sivei_gemm(v, 1, v, 0, vtv, n, n, n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            ck_assert_double_eq_tol(vtv[i * n + j], i == j, 100 * n * DBL_EPSILON);
    sivei_gemm(a, 0, v, 1, back, m, n, n);
    for (size_t i = 0; i < m * n; i++)
        ck_assert_double_eq_tol(back[i], a0[i], 100 * n * DBL_EPSILON * sqrt(fro));
    /* columns below (m eps)^2 |a|_F^2 count as zero (linalg.h): only the
     * others must be orthogonal, to the dot product's rounding */
    const double tiny = (m * DBL_EPSILON) * (m * DBL_EPSILON) * fro;
    for (size_t p = 0; p < n; p++) {
        ev[p] = sivei_col_norm2(a, m, n, p);
        for (size_t q = p + 1; q < n; q++) {
            double d = 0.0;
            const double eq = sivei_col_norm2(a, m, n, q);
            for (size_t i = 0; i < m; i++)
                d += a[i * n + p] * a[i * n + q];
            ck_assert(ev[p] <= tiny || eq <= tiny ||
                      fabs(d) <= 10 * m * DBL_EPSILON * sqrt(ev[p] * eq));
        }
    }
    qsort(ev, n, sizeof *ev, cmp);
    free(a), free(v), free(back), free(vtv);
}

START_TEST(jacobi_spread)
{
    enum { N = 6 };
    double q[N * N], p[N * N], t[N * N], a[N * N], ev[N], d[N];
    orthogonal(q, N, 3);
    orthogonal(p, N, 4);
    for (size_t i = 0; i < N; i++)
        d[i] = pow(10.0, -6.0 * (double)i / (N - 1)); /* 1 .. 1e-6 */
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < N; j++)
            t[i * N + j] = q[i * N + j] * d[j]; /* Q diag(d) */
    sivei_gemm(t, 0, p, 1, a, N, N, N);          /* Q diag(d) P^T */
    check_jacobi(a, N, N, ev);
    for (size_t i = 0; i < N; i++) {
        const double want = d[N - 1 - i] * d[N - 1 - i];
        ck_assert_msg(fabs(ev[i] / want - 1.0) < 1e6 * 64 * DBL_EPSILON,
                      "eigenvalue %zu: %.17g, want %.17g", i, ev[i], want);
    }
}
END_TEST

START_TEST(jacobi_wide)
{
    enum { M = 3, N = 5 }; /* rank 3: two eigenvalues 0 */
    double a[M * N], ev[N];
    normals(a, M * N, 5);
    check_jacobi(a, M, N, ev);
    double fro = 0.0, sum = 0.0;
    for (size_t i = 0; i < M * N; i++)
        fro += a[i] * a[i];
    for (size_t i = 0; i < N; i++)
        sum += ev[i];
    const double tiny = (M * DBL_EPSILON) * (M * DBL_EPSILON) * fro;
    ck_assert_msg(ev[0] <= 4 * tiny && ev[1] <= 4 * tiny, "%g %g (tiny %g)", ev[0], ev[1],
                  tiny);
    ck_assert(ev[2] > 1e-3 * fro);
    ck_assert_double_eq_tol(sum, fro, 1e-13 * fro); /* the trace is kept */
}
END_TEST

int main(void)
{
    Suite *s = suite_create("linalg");
    TCase *tc = tcase_create("linalg");
    tcase_add_test(tc, gemm_transposes);
    tcase_add_test(tc, jacobi_spread);
    tcase_add_test(tc, jacobi_wide);
    suite_add_tcase(s, tc);
    return check_run(s);
}
