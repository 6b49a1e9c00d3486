/* BLIS sgemm rate on the MLP probe step's own shapes and on a large square,
 * with 1 and 2 BLIS threads, and the ratio of each to the square's rate
 * measured in the same run.
 *
 *   bench_gemm [block_rows (256)] [square n (2048)] [reps (5)]
 *   bench_gemm --kernels [square n (768)] [rounds (3)]
 *
 * --kernels compares BLIS's own kernel set with libsive's choice
 * (sive_mlp_blis_kernels()) side by side: BLIS fixes its set once per
 * process, so each round runs this program twice as a child, once with
 * SIVE_BLIS_AUTO=0 and once without, alternately, and prints the best
 * sgemm rate of each (square n^3 on 1 and 2 threads, all products of one
 * probe step on 1 thread) and their ratio.
 *
 * Shapes: the evaluation forward of N*B_eval = 32768 rows in blocks of
 * block_rows (X.W1t: r x 784 . 784 x 128, A1.W2t: r x 128 . 128 x 128,
 * A2.W3t: r x 128 . 128 x 10), and the gradient's forward and backward on
 * B_grad = 1024 rows in the same blocks, with the strides lib/ref/mlp.c uses. */
#include "bench_gemm.h"

#include <sys/wait.h>
#include <unistd.h>

/* Child of --kernels: one line "kernels<TAB>sq1<TAB>sq2<TAB>step ms". */
static int rate_child(size_t n)
{
    const char *k = sive_mlp_blis_kernels();
    double sq1 = square_rate(1, n, 5), sq2 = square_rate(2, n, 5);
    gemm_shape s[16];
    int ns = step_shapes(s, SIVE_MLP_DEFAULT_BLOCK_ROWS, 512 * 64, 1024);
    gemm_bufs g = gemm_bufs_new(2048 * 2048);
    double st = step_gemm_time(s, ns, &g, 1, 3);
    gemm_bufs_free(&g);
    printf("%s\t%.6g\t%.6g\t%.6g\n", k, sq1, sq2, st * 1e3);
    return 0;
}

typedef struct kernel_run {
    char kernels[320];
    double sq1, sq2, step_ms;
} kernel_run;

/* Run this program as a --rate child, with SIVE_BLIS_AUTO=0 when own is
 * set; keeps the best figures in k.  Returns 0 on success. */
static int run_child(const char *n, int own, kernel_run *k)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (own)
            setenv("SIVE_BLIS_AUTO", "0", 1);
        else
            unsetenv("SIVE_BLIS_AUTO");
        execl("/proc/self/exe", "bench_gemm", "--rate", n, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    char line[512] = "";
    int ok = f && fgets(line, sizeof line, f) != NULL;
    if (f)
        fclose(f);
    int st = 0;
    waitpid(pid, &st, 0);
    char *t1 = strchr(line, '\t');
    if (!ok || !t1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    *t1 = 0;
    double a, b, c;
    if (sscanf(t1 + 1, "%lf %lf %lf", &a, &b, &c) != 3)
        return -1;
    snprintf(k->kernels, sizeof k->kernels, "%s", line);
    k->sq1 = a > k->sq1 ? a : k->sq1;
    k->sq2 = b > k->sq2 ? b : k->sq2;
    k->step_ms = c < k->step_ms ? c : k->step_ms;
    return 0;
}

static int compare_kernels(const char *n, int rounds)
{
    if (getenv("BLIS_ARCH_TYPE"))
        printf("note: BLIS_ARCH_TYPE is set, so both runs use it\n");
    kernel_run k[2] = {{"", 0, 0, 1e30}, {"", 0, 0, 1e30}};
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 2; i++)
            if (run_child(n, i == 0, &k[i]) != 0) {
                fprintf(stderr, "bench_gemm: the --rate child failed\n");
                return 1;
            }
    printf("sgemm, best of %d alternating child processes per kernel set\n", rounds);
    for (int i = 0; i < 2; i++)
        printf("  %-14s %s\n", i ? "libsive's pick" : "BLIS's own", k[i].kernels);
    printf("  %-32s %12s %14s %8s\n", "", "BLIS's own", "libsive's pick", "ratio");
    printf("  square %s^3, 1 thread, GFLOP/s  %12.1f %14.1f %8.2f\n", n, k[0].sq1 * 1e-9,
           k[1].sq1 * 1e-9, k[1].sq1 / k[0].sq1);
    printf("  square %s^3, 2 threads, GFLOP/s %12.1f %14.1f %8.2f\n", n, k[0].sq2 * 1e-9,
           k[1].sq2 * 1e-9, k[1].sq2 / k[0].sq2);
    printf("  step products, 1 thread, ms     %12.2f %14.2f %8.2f\n", k[0].step_ms,
           k[1].step_ms, k[0].step_ms / k[1].step_ms);
    printf("  (ratio = libsive's pick / BLIS's own rate: above 1 is faster)\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--rate") == 0)
        return rate_child((size_t)atol(argv[2]));
    if (argc > 1 && strcmp(argv[1], "--kernels") == 0) {
        bench_machine();
        return compare_kernels(argc > 2 ? argv[2] : "768", argc > 3 ? atoi(argv[3]) : 3);
    }
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
