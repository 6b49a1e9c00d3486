/* Unit tests for lib/numerics/rng.c (and its public face, rng_public.c): PCG32 known answers, stream derivation, bounded
 * integers, the ziggurat tables and the law of the normal variates.
 *
 * Statistical checks use thresholds taken from the sampling distribution of
 * the statistic at a false-alarm probability of about 1e-6 per check (5
 * sigma for asymptotically normal statistics), never tuned to the seed. */
#include "rng.h"

#include "check_run.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Hidden tables from rng.c (no header on purpose: tests only). */
extern const uint64_t *const sive_zig_k_table;
extern const double *const sive_zig_x_table;
extern const double *const sive_zig_w_table;
extern const double *const sive_zig_f_table;

#define Z5 5.0          /* two-sided normal threshold, p ~ 5.7e-7 */
#define Z_UPPER 4.753   /* one-sided normal quantile at 1 - 1e-6 */

/* Upper 1e-6 quantile of chi-square(df): exact for df = 2 (an exponential
 * law with mean 2), Wilson-Hilferty otherwise (within a few percent of the
 * standard deviation for the df >= 9 used here). */
static double chi2_crit(double df)
{
    if (df == 2.0)
        return -2.0 * log(1e-6);
    double a = 2.0 / (9.0 * df);
    double c = 1.0 - a + Z_UPPER * sqrt(a);
    return df * c * c * c;
}

static double chi2_stat(const uint64_t *count, size_t k, double expected)
{
    double s = 0.0;
    for (size_t j = 0; j < k; j++) {
        double d = (double)count[j] - expected;
        s += d * d / expected;
    }
    return s;
}

/* Standard normal CDF. */
static double phi_cdf(double z) { return 0.5 * erfc(-z / M_SQRT2); }

/* ------------------------------------------------------------------ */
/* Generator                                                          */
/* ------------------------------------------------------------------ */

START_TEST(test_pcg32_known_answer)
{
    /* O'Neill's pcg32-demo: pcg32_srandom_r(&rng, 42u, 54u). */
    static const uint32_t expect[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                       0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    sivei_pcg32 g;
    sivei_pcg32_seed(&g, 42u, 54u);
    for (int i = 0; i < 6; i++)
        ck_assert_uint_eq(sivei_pcg32_next(&g), expect[i]);
    ck_assert(g.inc & 1u);
}
END_TEST

START_TEST(test_pcg32_next64_is_two_next)
{
    sivei_pcg32 a, b;
    sivei_pcg32_seed(&a, 42u, 54u);
    b = a;
    uint64_t first = sivei_pcg32_next64(&b);
    ck_assert_uint_eq(first, 0xa15c02b77b47f409ull);
    for (int i = 0; i < 10000; i++) {
        uint64_t hi = sivei_pcg32_next(&a);
        uint64_t lo = sivei_pcg32_next(&a);
        if (i == 0)
            ck_assert_uint_eq((hi << 32) | lo, first);
        else
            ck_assert_uint_eq((hi << 32) | lo, sivei_pcg32_next64(&b));
        ck_assert_uint_eq(a.state, b.state);
    }
}
END_TEST

START_TEST(test_splitmix64_known_answer)
{
    /* Vigna's splitmix64 seeded with 0 returns these two values first;
     * sivei_splitmix64(x) is the output for state x. */
    ck_assert_uint_eq(sivei_splitmix64(0u), 0xe220a8397b1dcdafull);
    ck_assert_uint_eq(sivei_splitmix64(0x9e3779b97f4a7c15ull),
                      0x6e789e6aa1b965f4ull);
}
END_TEST

START_TEST(test_uniform_range_and_bits)
{
    sivei_pcg32 g;
    sivei_pcg32_seed(&g, 1u, 2u);
    double lo = 1.0, hi = 0.0, sum = 0.0;
    const int n = 1000000;
    for (int i = 0; i < n; i++) {
        double u = sivei_pcg32_uniform(&g);
        ck_assert(u >= 0.0 && u < 1.0);
        /* 53 random bits: u * 2^53 is an integer. */
        ck_assert(u * 0x1p53 == floor(u * 0x1p53));
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        sum += u;
    }
    /* Mean of n uniforms: sd = sqrt(1/(12 n)). */
    ck_assert(fabs(sum / n - 0.5) < Z5 * sqrt(1.0 / (12.0 * n)));
    ck_assert(lo < 1e-4 && hi > 1.0 - 1e-4);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Streams                                                            */
/* ------------------------------------------------------------------ */

START_TEST(test_streams_reproducible_and_distinct)
{
    /* All (seed, chain, purpose) in a small grid: the arguments play
     * different roles, so e.g. (seed 0, chain 1) and (seed 1, chain 0) must
     * differ too (a symmetric mix once made them collide). */
    enum { NSEED = 4, NCHAIN = 8, NPURP = 8, NS = NSEED * NCHAIN * NPURP };
    static sivei_pcg32 gen[NS];
    static uint64_t first[NS][4];
    int k = 0;
    for (uint64_t seed = 0; seed < NSEED; seed++)
        for (uint64_t chain = 0; chain < NCHAIN; chain++)
            for (uint64_t purpose = 0; purpose < NPURP; purpose++, k++) {
                sivei_pcg32 g, h;
                sivei_pcg32_stream(&g, seed, chain, purpose);
                sivei_pcg32_stream(&h, seed, chain, purpose);
                ck_assert_uint_eq(g.state, h.state);
                ck_assert_uint_eq(g.inc, h.inc);
                gen[k] = g;
                for (int j = 0; j < 4; j++)
                    first[k][j] = sivei_pcg32_next(&g);
            }
    for (int a = 0; a < NS; a++)
        for (int b = a + 1; b < NS; b++) {
            /* Different state AND increment, and different outputs. */
            ck_assert_msg(gen[a].state != gen[b].state, "state %d %d", a, b);
            ck_assert_msg(gen[a].inc != gen[b].inc, "inc %d %d", a, b);
            ck_assert(memcmp(first[a], first[b], sizeof first[a]) != 0);
        }
}
END_TEST

START_TEST(test_streams_uncorrelated)
{
    /* Neighbouring chains and purposes, and seeds, must not be correlated:
     * Pearson correlation of n paired uniforms has sd 1/sqrt(n). */
    const int n = 200000;
    const uint64_t args[4][3] = {{7, 0, 0}, {7, 0, 1}, {7, 1, 0}, {8, 0, 0}};
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++) {
            sivei_pcg32 g, h;
            sivei_pcg32_stream(&g, args[a][0], args[a][1], args[a][2]);
            sivei_pcg32_stream(&h, args[b][0], args[b][1], args[b][2]);
            double sxy = 0.0;
            for (int i = 0; i < n; i++) {
                double u = sivei_pcg32_uniform(&g) - 0.5;
                double v = sivei_pcg32_uniform(&h) - 0.5;
                sxy += u * v;
            }
            double r = sxy / n * 12.0; /* Var(U) = 1/12 */
            ck_assert_msg(fabs(r) < Z5 / sqrt((double)n),
                          "streams %d and %d: r = %g", a, b, r);
        }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bounded integers                                                   */
/* ------------------------------------------------------------------ */

START_TEST(test_below_edge_bounds)
{
    sivei_pcg32 g;
    sivei_pcg32_seed(&g, 3u, 4u);
    for (int i = 0; i < 1000; i++) {
        ck_assert_uint_eq(sivei_pcg32_below(&g, 1u), 0u);
        ck_assert_uint_lt(sivei_pcg32_below(&g, 2u), 2u);
        ck_assert_uint_lt(sivei_pcg32_below(&g, UINT32_MAX), UINT32_MAX);
        ck_assert_uint_le(sivei_pcg32_below(&g, 1ull << 32), UINT32_MAX);
        ck_assert_uint_lt(sivei_pcg32_below(&g, (1ull << 32) + 1u),
                          (1ull << 32) + 1u);
        ck_assert_uint_lt(sivei_pcg32_below(&g, UINT64_MAX), UINT64_MAX);
    }
    /* bound 2^32 consumes exactly one 32-bit draw and returns it. */
    sivei_pcg32 a = g, b = g;
    ck_assert_uint_eq(sivei_pcg32_below(&a, 1ull << 32), sivei_pcg32_next(&b));
    ck_assert_uint_eq(a.state, b.state);
}
END_TEST

/* The public sive_rng_stream/sive_rng_below (libsive-ref draws through
 * them) are the internal stream derivation and bounded draws, value for
 * value and state for state: the reference stack's outputs stay
 * bit-identical. */
START_TEST(test_public_stream_and_below)
{
    const uint64_t bounds[] = {0u, 1u, 2u, 7u, 60000u, UINT32_MAX, 1ull << 32,
                               (1ull << 32) + 1u, UINT64_MAX};
    for (uint64_t chain = 0; chain < 3; chain++) {
        sivei_pcg32 g;
        sive_rng r;
        sivei_pcg32_stream(&g, 12345u, chain, 7u);
        sive_rng_stream(&r, 12345u, chain, 7u);
        ck_assert_uint_eq(r.state, g.state);
        ck_assert_uint_eq(r.inc, g.inc);
        for (int i = 0; i < 200; i++) {
            uint64_t bound = bounds[i % (sizeof bounds / sizeof bounds[0])];
            uint64_t want = bound ? sivei_pcg32_below(&g, bound) : 0u;
            ck_assert_uint_eq(sive_rng_below(&r, bound), want);
            ck_assert_uint_eq(r.state, g.state);
        }
    }
    sive_rng_stream(NULL, 1u, 2u, 3u); /* NULL: no effect, no crash */
    ck_assert_uint_eq(sive_rng_below(NULL, 5u), 0u);
}
END_TEST

START_TEST(test_below_small_bound_chi_square)
{
    const uint64_t bound = 10;
    const int n = 2000000;
    uint64_t count[10] = {0};
    sivei_pcg32 g;
    sivei_pcg32_stream(&g, 11u, 0u, 0u);
    for (int i = 0; i < n; i++)
        count[sivei_pcg32_below(&g, bound)]++;
    double x2 = chi2_stat(count, bound, (double)n / bound);
    ck_assert_msg(x2 < chi2_crit(bound - 1.0), "chi2 = %g", x2);
}
END_TEST

/* Bounds of the form 3 * 2^j expose the two classic biases: plain modulo
 * makes the lowest third twice as likely, an unrejected multiply-shift makes
 * the residues y mod 3 come as 1/2, 1/4, 1/4.  Both views must be uniform
 * (chi-square with 2 degrees of freedom each). */
static void check_thirds(uint64_t bound, uint64_t third, int n)
{
    uint64_t coarse[3] = {0}, fine[3] = {0};
    sivei_pcg32 g;
    sivei_pcg32_stream(&g, 12u, 0u, bound);
    for (int i = 0; i < n; i++) {
        uint64_t y = sivei_pcg32_below(&g, bound);
        ck_assert_uint_lt(y, bound);
        coarse[y / third]++;
        fine[y % 3]++;
    }
    double crit = chi2_crit(2.0);
    double xc = chi2_stat(coarse, 3, n / 3.0), xf = chi2_stat(fine, 3, n / 3.0);
    ck_assert_msg(xc < crit, "bound %llu: coarse chi2 = %g",
                  (unsigned long long)bound, xc);
    ck_assert_msg(xf < crit, "bound %llu: residue chi2 = %g",
                  (unsigned long long)bound, xf);
}

START_TEST(test_below_unbiased_32)
{
    check_thirds(3ull << 30, 1ull << 30, 600000);
}
END_TEST

START_TEST(test_below_unbiased_64)
{
    check_thirds(3ull << 62, 1ull << 62, 600000);
    /* Just above 2^32, too. */
    check_thirds(3ull << 33, 1ull << 33, 300000);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Ziggurat tables                                                    */
/* ------------------------------------------------------------------ */

__extension__ typedef unsigned __int128 u128;

/* k * x_i <= 2^52 * x_{i+1} < (k + 1) * x_i, exactly, with 128-bit ints. */
static void check_k(uint64_t k, double xi, double xnext)
{
    int ei, en;
    double fi = frexp(xi, &ei), fn = frexp(xnext, &en);
    u128 mi = (u128)(uint64_t)ldexp(fi, 53);
    u128 mn = (u128)(uint64_t)ldexp(fn, 53);
    int shift = 52 + en - ei;
    ck_assert(shift >= 0 && shift <= 52);
    u128 rhs = mn << shift;
    ck_assert(k * mi <= rhs);
    ck_assert((k + 1) * mi > rhs);
}

START_TEST(test_ziggurat_tables)
{
    const uint64_t *k = sive_zig_k_table;
    const double *x = sive_zig_x_table, *w = sive_zig_w_table;
    const double *f = sive_zig_f_table;
    long double r = x[1];
    long double tail = sqrtl(acosl(-1.0L) / 2.0L) * erfcl(r / sqrtl(2.0L));
    long double v = r * expl(-r * r / 2) + tail;
    /* Area v and r from the literature (Marsaglia & Tsang 2000). */
    ck_assert(fabsl(r - 3.6541528853610088L) < 1e-15L);
    ck_assert(fabsl(v - 0.00492867323399L) < 1e-13L);
    ck_assert(x[256] == 0.0 && f[256] == 1.0);
    ck_assert(fabsl(x[0] - v / expl(-r * r / 2)) < 1e-15L * x[0]);
    for (int i = 0; i < 256; i++) {
        ck_assert(x[i + 1] < x[i]);
        ck_assert(w[i] == ldexp(x[i], -52)); /* exact scaling */
        if (i + 1 < 256)
            check_k(k[i], x[i], x[i + 1]);
        else
            ck_assert_uint_eq(k[i], 0u);
    }
    for (int i = 1; i <= 256; i++) {
        long double fi = expl(-(long double)x[i] * x[i] / 2);
        ck_assert(fabsl(f[i] - fi) <= 2e-16L * fi);
    }
    /* Every layer above the base has area v: X_i (f(X_{i+1}) - f(X_i)). */
    for (int i = 1; i < 256; i++) {
        long double xi = x[i], xn = x[i + 1];
        long double area = xi * (expl(-xn * xn / 2) - expl(-xi * xi / 2));
        ck_assert_msg(fabsl(area / v - 1.0L) < 1e-12L, "layer %d: %Lg", i,
                      area / v - 1.0L);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* Normal variates                                                    */
/* ------------------------------------------------------------------ */

START_TEST(test_normals_equal_repeated_normal)
{
    enum { N = 200000 };
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    float *c = malloc(N * sizeof *c);
    ck_assert(a && b && c);
    sivei_pcg32 g, h, q;
    sivei_pcg32_stream(&g, 5u, 1u, 2u);
    h = q = g;
    for (size_t i = 0; i < N; i++)
        a[i] = sivei_pcg32_normal(&g);
    /* Uneven pieces, including an empty one. */
    size_t cuts[] = {0, 0, 1, 7, 1000, 65537, N};
    for (size_t j = 0; j + 1 < sizeof cuts / sizeof cuts[0]; j++) {
        sivei_pcg32_normals(&h, b + cuts[j], cuts[j + 1] - cuts[j]);
        sivei_pcg32_normals_f32(&q, c + cuts[j], cuts[j + 1] - cuts[j]);
    }
    ck_assert(memcmp(a, b, N * sizeof *a) == 0);
    for (size_t i = 0; i < N; i++)
        ck_assert(c[i] == (float)a[i]);
    ck_assert_uint_eq(g.state, h.state);
    ck_assert_uint_eq(g.state, q.state);
    free(a);
    free(b);
    free(c);
}
END_TEST

enum { NNORM = 1 << 23 }; /* 8.4e6 draws */

static double *draw_normals(uint64_t purpose)
{
    double *z = malloc(NNORM * sizeof *z);
    ck_assert_ptr_nonnull(z);
    sivei_pcg32 g;
    sivei_pcg32_stream(&g, 2024u, 0u, purpose);
    sivei_pcg32_normals(&g, z, NNORM);
    return z;
}

START_TEST(test_normal_moments)
{
    double *z = draw_normals(1);
    const double n = NNORM;
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0, lag = 0;
    for (size_t i = 0; i < NNORM; i++) {
        double v = z[i], v2 = v * v;
        s1 += v;
        s2 += v2;
        s3 += v2 * v;
        s4 += v2 * v2;
        if (i)
            lag += v * z[i - 1];
    }
    /* Sampling sds of the raw moments of N(0,1): Var z = 1, Var z^2 = 2,
     * Var z^3 = 15, Var z^4 = 96; lag-1 product: Var = 1. */
    ck_assert_msg(fabs(s1 / n) < Z5 * sqrt(1.0 / n), "mean %g", s1 / n);
    ck_assert_msg(fabs(s2 / n - 1.0) < Z5 * sqrt(2.0 / n), "E z^2 %g", s2 / n);
    ck_assert_msg(fabs(s3 / n) < Z5 * sqrt(15.0 / n), "E z^3 %g", s3 / n);
    ck_assert_msg(fabs(s4 / n - 3.0) < Z5 * sqrt(96.0 / n), "E z^4 %g", s4 / n);
    ck_assert_msg(fabs(lag / (n - 1)) < Z5 * sqrt(1.0 / (n - 1)), "lag1 %g",
                  lag / (n - 1));
    free(z);
}
END_TEST

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(test_normal_kolmogorov_smirnov)
{
    const size_t n = 1u << 21;
    double *z = draw_normals(2);
    qsort(z, n, sizeof *z, cmp_double);
    double d = 0.0;
    for (size_t i = 0; i < n; i++) {
        double p = phi_cdf(z[i]);
        double lo = p - (double)i / n, hi = (double)(i + 1) / n - p;
        d = fmax(d, fmax(lo, hi));
    }
    /* Kolmogorov: P(sqrt(n) D > t) ~ 2 exp(-2 t^2); t for p = 1e-6. */
    double t = sqrt(log(2.0 / 1e-6) / 2.0);
    ck_assert_msg(sqrt((double)n) * d < t, "sqrt(n) D = %g (limit %g)",
                  sqrt((double)n) * d, t);
    free(z);
}
END_TEST

START_TEST(test_normal_binned_chi_square)
{
    /* 2048 equiprobable bins in Phi(z): fine enough to see a wedge or a
     * layer drawn with the wrong weight (the layers are ~0.01-0.3 wide). */
    enum { K = 2048 };
    double *z = draw_normals(3);
    uint64_t *count = calloc(K, sizeof *count);
    ck_assert_ptr_nonnull(count);
    for (size_t i = 0; i < NNORM; i++) {
        size_t j = (size_t)(phi_cdf(z[i]) * K);
        count[j < K ? j : K - 1]++;
    }
    double x2 = chi2_stat(count, K, (double)NNORM / K);
    ck_assert_msg(x2 < chi2_crit(K - 1.0), "chi2 = %g (limit %g)", x2,
                  chi2_crit(K - 1.0));
    free(count);
    free(z);
}
END_TEST

/* Count of |z| > c, each side, against the binomial law: 5 sd bands. */
static void check_tail(const double *z, size_t n, double c)
{
    size_t up = 0, down = 0;
    for (size_t i = 0; i < n; i++) {
        up += z[i] > c;
        down += z[i] < -c;
    }
    double p = 0.5 * erfc(c / M_SQRT2); /* one side */
    double mu = n * p, sd = sqrt(n * p * (1 - p));
    ck_assert_msg(fabs(up - mu) < Z5 * sd, "z > %g: %zu vs %g", c, up, mu);
    ck_assert_msg(fabs(down - mu) < Z5 * sd, "z < -%g: %zu vs %g", c, down, mu);
    double mu2 = 2 * mu, sd2 = sqrt(n * 2 * p * (1 - 2 * p));
    ck_assert_msg(fabs(up + down - mu2) < Z5 * sd2, "|z| > %g: %zu vs %g", c,
                  up + down, mu2);
}

START_TEST(test_normal_tails)
{
    double *z = draw_normals(4);
    /* P(|z| > 3) = 0.0027; r = 3.654 is where the exact tail sampler takes
     * over; 4.0 is inside it (about 270 draws per side expected, enough for
     * the normal approximation of the binomial band). */
    check_tail(z, NNORM, 3.0);
    check_tail(z, NNORM, sive_zig_x_table[1]);
    check_tail(z, NNORM, 4.0);
    double p3 = erfc(3.0 / M_SQRT2);
    ck_assert(fabs(p3 - 0.0026998) < 1e-7);
    free(z);
}
END_TEST

START_TEST(test_normal_tail_beyond_r)
{
    /* Conditional law beyond r: P(z > r + 0.5 | z > r) from the exact
     * tail sampler, on the draws beyond r (binomial 5 sd band). */
    double *z = draw_normals(5);
    double r = sive_zig_x_table[1], c = r + 0.5;
    size_t beyond = 0, far = 0;
    for (size_t i = 0; i < NNORM; i++) {
        double a = fabs(z[i]);
        beyond += a > r;
        far += a > c;
    }
    double p = erfc(c / M_SQRT2) / erfc(r / M_SQRT2);
    double mu = beyond * p, sd = sqrt(beyond * p * (1 - p));
    ck_assert_msg(fabs(far - mu) < Z5 * sd, "%zu vs %g", far, mu);
    free(z);
}
END_TEST

static Suite *rng_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *gen = tcase_create("generator");
    tcase_add_test(gen, test_pcg32_known_answer);
    tcase_add_test(gen, test_pcg32_next64_is_two_next);
    tcase_add_test(gen, test_splitmix64_known_answer);
    tcase_add_test(gen, test_uniform_range_and_bits);
    tcase_add_test(gen, test_streams_reproducible_and_distinct);
    tcase_add_test(gen, test_streams_uncorrelated);
    suite_add_tcase(s, gen);

    TCase *below = tcase_create("below");
    tcase_add_test(below, test_below_edge_bounds);
    tcase_add_test(below, test_public_stream_and_below);
    tcase_add_test(below, test_below_small_bound_chi_square);
    tcase_add_test(below, test_below_unbiased_32);
    tcase_add_test(below, test_below_unbiased_64);
    suite_add_tcase(s, below);

    TCase *norm = tcase_create("normal");
    tcase_add_test(norm, test_ziggurat_tables);
    tcase_add_test(norm, test_normals_equal_repeated_normal);
    tcase_add_test(norm, test_normal_moments);
    tcase_add_test(norm, test_normal_kolmogorov_smirnov);
    tcase_add_test(norm, test_normal_binned_chi_square);
    tcase_add_test(norm, test_normal_tails);
    tcase_add_test(norm, test_normal_tail_beyond_r);
    suite_add_tcase(s, norm);
    return s;
}

int main(void)
{
    return check_run(rng_suite());
}
