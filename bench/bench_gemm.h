/* BLIS sgemm timing on the shapes of the MLP probe step (shared by
 * bench_gemm and bench_step). */
#ifndef SIVE_BENCH_GEMM_H
#define SIVE_BENCH_GEMM_H

#include "bench_common.h"

#include <blis.h>
#include <pthread.h>

/* The BLIS build (bench_machine() has printed the kernel set). */
static inline void bench_blis(void)
{
    printf("BLIS %s, threading %s\n", bli_info_get_version_str(),
           bli_info_get_enable_openmp()     ? "OpenMP"
           : bli_info_get_enable_pthreads() ? "pthreads"
                                            : "none");
}

/* One product C[m x n] = A[m x k] B[k x n] (+ beta C), C row-major, A and B
 * given by general strides exactly as lib/ref/mlp.c passes them. */
typedef struct gemm_shape {
    const char *name;
    size_t m, n, k;
    size_t rsa, csa, rsb, csb;
    float beta;
    double count; /* times per probe step */
} gemm_shape;

static inline double gemm_flops(const gemm_shape *s)
{
    return 2.0 * (double)s->m * (double)s->n * (double)s->k;
}

/* The step's products for the 784-128-128-10 MLP, with block rows r:
 * evaluation forward of N*B_eval rows, gradient forward + backward of B_grad
 * rows.  Returns the number of shapes written to s (at most 16).  A last
 * partial block is listed as its own shape. */
static inline int step_shapes(gemm_shape *s, size_t r, size_t n_eval, size_t n_grad)
{
    const size_t in = 784, h1 = 128, h2 = 128, k = 10;
    int c = 0;
    typedef struct part {
        size_t rows;
        double count;
        const char *tag;
    } part;
    part parts[4];
    int np = 0;
    /* evaluation: full blocks and a remainder */
    parts[np++] = (part){r, (double)(n_eval / r), "eval"};
    if (n_eval % r)
        parts[np++] = (part){n_eval % r, 1.0, "eval-rem"};
    size_t gr = n_grad < r ? n_grad : r;
    parts[np++] = (part){gr, (double)(n_grad / gr), "grad"};
    if (n_grad % gr)
        parts[np++] = (part){n_grad % gr, 1.0, "grad-rem"};
    static char names[16][48];
    for (int p = 0; p < np; p++) {
        size_t q = parts[p].rows;
        double cnt = parts[p].count;
        if (cnt == 0)
            continue;
        int grad = parts[p].tag[0] == 'g';
#define ADD(nm, M, N, K, RA, CA, RB, CB, BETA)                                    \
    do {                                                                           \
        snprintf(names[c], sizeof names[c], "%s %s", parts[p].tag, nm);            \
        s[c] = (gemm_shape){names[c], M, N, K, RA, CA, RB, CB, BETA, cnt};         \
        c++;                                                                       \
    } while (0)
        ADD("X.W1t", q, h1, in, in, 1, 1, in, 0.0f);
        ADD("A1.W2t", q, h2, h1, h1, 1, 1, h1, 0.0f);
        ADD("A2.W3t", q, k, h2, h2, 1, 1, h2, 0.0f);
        if (grad) {
            ADD("dZ3t.A2", k, h2, q, 1, k, h2, 1, 1.0f);
            ADD("dZ3.W3", q, h2, k, k, 1, h2, 1, 0.0f);
            ADD("dA2t.A1", h2, h1, q, 1, h2, h1, 1, 1.0f);
            ADD("dA2.W2", q, h1, h2, h2, 1, h1, 1, 0.0f);
            ADD("dA1t.X", h1, in, q, 1, h1, in, 1, 1.0f);
        }
#undef ADD
    }
    return c;
}

typedef struct gemm_bufs {
    float *a, *b, *c;
} gemm_bufs;

static inline gemm_bufs gemm_bufs_new(size_t elems)
{
    gemm_bufs g;
    g.a = aligned_alloc(64, ((elems * 4 + 63) / 64) * 64);
    g.b = aligned_alloc(64, ((elems * 4 + 63) / 64) * 64);
    g.c = aligned_alloc(64, ((elems * 4 + 63) / 64) * 64);
    if (!g.a || !g.b || !g.c)
        exit(1);
    for (size_t i = 0; i < elems; i++) {
        g.a[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
        g.b[i] = (float)((i * 40503u) % 1000) * 1e-3f - 0.5f;
        g.c[i] = 0.0f;
    }
    return g;
}

static inline void gemm_bufs_free(gemm_bufs *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
}

static inline void gemm_run(const gemm_shape *s, const gemm_bufs *g, rntm_t *rntm)
{
    float alpha = 1.0f, beta = s->beta;
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)s->m, (dim_t)s->n,
                 (dim_t)s->k, &alpha, g->a, (inc_t)s->rsa, (inc_t)s->csa, g->b,
                 (inc_t)s->rsb, (inc_t)s->csb, &beta, g->c, (inc_t)s->n, 1, NULL, rntm);
}

/* Best time of one product over `reps` timings of `inner` calls each. */
static inline double gemm_time(const gemm_shape *s, const gemm_bufs *g, int threads,
                               int reps, double min_seconds)
{
    rntm_t rntm;
    bli_rntm_init(&rntm);
    bli_rntm_set_num_threads(threads, &rntm);
    gemm_run(s, g, &rntm); /* warm up */
    int inner = 1;
    double t0 = bench_now();
    gemm_run(s, g, &rntm);
    double one = bench_now() - t0;
    if (one < min_seconds)
        inner = (int)(min_seconds / (one > 1e-7 ? one : 1e-7)) + 1;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        t0 = bench_now();
        for (int i = 0; i < inner; i++)
            gemm_run(s, g, &rntm);
        double t = (bench_now() - t0) / inner;
        best = t < best ? t : best;
    }
    return best;
}

/* Time of all the step's products in sequence (each shape count times),
 * best of reps. */
static inline double step_gemm_time(const gemm_shape *s, int ns, const gemm_bufs *g,
                                    int threads, int reps)
{
    rntm_t rntm;
    bli_rntm_init(&rntm);
    bli_rntm_set_num_threads(threads, &rntm);
    double best = 1e30;
    for (int r = 0; r < reps + 1; r++) {
        double t0 = bench_now();
        for (int i = 0; i < ns; i++)
            for (int j = 0; j < (int)s[i].count; j++)
                gemm_run(&s[i], g, &rntm);
        double t = bench_now() - t0;
        if (r > 0 && t < best) /* first round warms up */
            best = t;
    }
    return best;
}

/* Two threads, each running the product on one BLIS thread at the same
 * time: the throughput of the "chains in parallel" layout. */
typedef struct conc_arg {
    const gemm_shape *s;
    int ns;
    int reps;
    double best;
    pthread_barrier_t *bar;
} conc_arg;

static void *conc_main(void *p)
{
    conc_arg *a = p;
    gemm_bufs g = gemm_bufs_new(2048 * 2048);
    rntm_t rntm;
    bli_rntm_init(&rntm);
    bli_rntm_set_num_threads(1, &rntm);
    a->best = 1e30;
    for (int r = 0; r < a->reps + 1; r++) {
        pthread_barrier_wait(a->bar);
        double t0 = bench_now();
        for (int i = 0; i < a->ns; i++)
            for (int j = 0; j < (int)(a->s[i].count > 0 ? a->s[i].count : 1); j++)
                gemm_run(&a->s[i], &g, &rntm);
        double t = bench_now() - t0;
        if (r > 0 && t < a->best)
            a->best = t;
    }
    gemm_bufs_free(&g);
    return NULL;
}

/* Seconds for both threads to finish the shapes (max of the two bests). */
static inline double concurrent_time(const gemm_shape *s, int ns, int reps)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    conc_arg a[2] = {{s, ns, reps, 0, &bar}, {s, ns, reps, 0, &bar}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, conc_main, &a[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    return a[0].best > a[1].best ? a[0].best : a[1].best;
}

static inline double square_rate(int threads, size_t n, int reps)
{
    gemm_shape sq = {"square", n, n, n, n, 1, n, 1, 0.0f, 1};
    gemm_bufs g = gemm_bufs_new(n * n);
    double t = gemm_time(&sq, &g, threads, reps, 0.2);
    gemm_bufs_free(&g);
    return gemm_flops(&sq) / t;
}

/* The 1-thread square rate in thread CPU time (best of reps single calls):
 * what one core gives when it runs, however often other processes take
 * it; the yardstick for thread CPU times on a busy machine. */
static inline double square_rate_cpu(size_t n, int reps)
{
    gemm_shape sq = {"square", n, n, n, n, 1, n, 1, 0.0f, 1};
    gemm_bufs g = gemm_bufs_new(n * n);
    rntm_t rntm;
    bli_rntm_init(&rntm);
    bli_rntm_set_num_threads(1, &rntm);
    gemm_run(&sq, &g, &rntm); /* warm up */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        gemm_run(&sq, &g, &rntm);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        double t = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
        best = t < best ? t : best;
    }
    gemm_bufs_free(&g);
    return gemm_flops(&sq) / best;
}

static inline double step_gemm_flops(const gemm_shape *s, int ns)
{
    double f = 0;
    for (int i = 0; i < ns; i++)
        f += gemm_flops(&s[i]) * s[i].count;
    return f;
}

#endif
