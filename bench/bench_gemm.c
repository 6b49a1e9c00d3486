/* BLIS sgemm rate on the MLP probe step's own shapes and on a large square,
 * with 1 and 2 BLIS threads, and the ratio of each to the square's rate
 * measured in the same run.
 *
 *   bench_gemm [block_rows (256)] [square n (2048)] [reps (5)]
 *
 * Shapes: the evaluation forward of N*B_eval = 32768 rows in blocks of
 * block_rows (X.W1t: r x 784 . 784 x 128, A1.W2t: r x 128 . 128 x 128,
 * A2.W3t: r x 128 . 128 x 10), and the gradient's forward and backward on
 * B_grad = 1024 rows in the same blocks, with the strides lib/mlp.c uses. */
#include "bench_gemm.h"

int main(int argc, char **argv)
{
    size_t r = argc > 1 ? (size_t)atol(argv[1]) : SIVE_MLP_DEFAULT_BLOCK_ROWS;
    size_t nsq = argc > 2 ? (size_t)atol(argv[2]) : 2048;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    bench_machine();
    bench_blis();
    double sq1 = square_rate(1, nsq, reps), sq2 = square_rate(2, nsq, reps);
    gemm_shape sq = {"square", nsq, nsq, nsq, nsq, 1, nsq, 1, 0.0f, 1};
    double sqc = 2.0 * gemm_flops(&sq) / concurrent_time(&sq, 1, reps);
    printf("\nlarge square %zu^3 (best of %d)\n", nsq, reps);
    printf("  1 thread           %7.1f GFLOP/s\n", sq1 * 1e-9);
    printf("  2 threads          %7.1f GFLOP/s  (%.2f x 1 thread)\n", sq2 * 1e-9, sq2 / sq1);
    printf("  2 x 1 concurrent   %7.1f GFLOP/s  (%.2f x 1 thread)\n", sqc * 1e-9, sqc / sq1);

    gemm_shape s[16];
    int ns = step_shapes(s, r, 512 * 64, 1024);
    gemm_bufs g = gemm_bufs_new(2048 * 2048);
    printf("\nstep shapes, block rows %zu (ratio = rate / square rate, same threads)\n", r);
    printf("  %-20s %5s %5s %5s %6s %10s %6s %10s %6s\n", "product", "m", "n", "k",
           "count", "1T GF/s", "ratio", "2T GF/s", "ratio");
    for (int i = 0; i < ns; i++) {
        double t1 = gemm_time(&s[i], &g, 1, reps, 0.02);
        double t2 = gemm_time(&s[i], &g, 2, reps, 0.02);
        double f = gemm_flops(&s[i]);
        printf("  %-20s %5zu %5zu %5zu %6.0f %10.1f %6.2f %10.1f %6.2f\n", s[i].name, s[i].m,
               s[i].n, s[i].k, s[i].count, f / t1 * 1e-9, f / t1 / sq1, f / t2 * 1e-9,
               f / t2 / sq2);
    }
    double flops = step_gemm_flops(s, ns);
    double st1 = step_gemm_time(s, ns, &g, 1, reps), st2 = step_gemm_time(s, ns, &g, 2, reps);
    double stc = concurrent_time(s, ns, reps) / 2.0;
    printf("\nall products of one step: %.4f GFLOP\n", flops * 1e-9);
    printf("  %-26s %8s %9s %12s %12s\n", "layout", "ms/step", "GFLOP/s", "vs square",
           "bound ms");
    printf("  %-26s %8.2f %9.1f %12.2f %12.2f\n", "1 chain x 1 BLIS thread", st1 * 1e3,
           flops / st1 * 1e-9, flops / st1 / sq1, flops / sq1 * 1e3);
    printf("  %-26s %8.2f %9.1f %12.2f %12.2f\n", "1 chain x 2 BLIS threads", st2 * 1e3,
           flops / st2 * 1e-9, flops / st2 / sq2, flops / sq2 * 1e3);
    printf("  %-26s %8.2f %9.1f %12.2f %12.2f\n", "2 chains x 1 (per step)", stc * 1e3,
           flops / stc * 1e-9, flops / stc / sq2, flops / sq2 * 1e3);
    printf("  (bound ms = step GFLOP / square rate of the same thread count: the "
           "\"GEMM bound\")\n");

    printf("\nblock-size sweep: all products of one step, ms (1T, 2T, 2x1 concurrent "
           "per step)\n");
    size_t sizes[] = {64, 128, 256, 512, 1024, 2048};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        gemm_shape t[16];
        int nt = step_shapes(t, sizes[i], 512 * 64, 1024);
        double a = step_gemm_time(t, nt, &g, 1, reps), b = step_gemm_time(t, nt, &g, 2, reps);
        double c = concurrent_time(t, nt, reps) / 2.0;
        printf("  rows %5zu: %7.2f %7.2f %7.2f   (%.2f %.2f %.2f of the square)\n", sizes[i],
               a * 1e3, b * 1e3, c * 1e3, flops / a / sq1, flops / b / sq2, flops / c / sq2);
    }
    gemm_bufs_free(&g);
    return 0;
}
