/* Peak resident memory of a probe against its bound
 *
 *     4 d sizeof(float)        theta* (the caller's) + theta, gradient and
 *                              Langevin noise of the chain being run
 *   + 5 M chains 8             the five per-step traces (double)
 *   + the workspaces           MLP: per worker thread a sive_mlp_work (the
 *                              model's), the library's distinct-example
 *                              scratch (lib/core/dedup.c) and BLIS's packing
 *                              buffers (KC x NC and MC x KC floats);
 *                              analytic model: none
 *   + index buffers            N B_eval + B_grad indices (uint64) and N
 *                              group losses per worker
 * and, with T probe threads, (T - 1) more sets of theta, gradient, noise and
 * index buffers.
 *
 *   bench_memory                 all configurations, one process each
 *   bench_memory mlp T M         the MLP (d = 118 282), T probe threads
 *   bench_memory quad D M K      a quadratic with D parameters (f32), K chains
 *
 * Measured: VmHWM after the run minus VmRSS just before it (the peak is
 * reset with /proc/self/clear_refs first), plus theta*, which the caller
 * allocated before that point; and the same when the last chain finished,
 * before the estimators and diagnostics run.  glibc is told to map every block of 64 KiB
 * or more on its own and to give freed memory back (mallopt, malloc_trim),
 * so that memory freed before the run and reused by it is not missed. */
#include "bench_common.h"

#include <blis.h>
#include <malloc.h>
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) {
            v = atol(line + n + 1);
            break;
        }
    if (f)
        fclose(f);
    return v;
}

/* VmHWM when the last chain finished (before the estimators and
 * diagnostics are computed) */
static long hwm_chains;
static int on_progress(int32_t c, int64_t step, int64_t total, void *user)
{
    (void)c;
    (void)user;
    if (step == total) {
        long h = status_kb("VmHWM:");
        if (h > hwm_chains)
            hwm_chains = h;
    }
    return 0;
}

static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return 0;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

/* ---- the synthetic quadratic: K(theta) = |theta|^2 / (2 d) ---- */
static int quad_grad(const void *theta, size_t d, const sive_batch *b, void *grad,
                     double *loss, void *user)
{
    const float *th = theta;
    float *g = grad;
    (void)b;
    (void)user;
    double s = 0;
    const float inv = 1.0f / (float)d;
    for (size_t i = 0; i < d; i++) {
        g[i] = th[i] * inv;
        s += (double)th[i] * th[i];
    }
    *loss = s / (2.0 * (double)d);
    return 0;
}

static int quad_eval(const void *theta, size_t d, const sive_batch *b, double *gl,
                     void *user)
{
    const float *th = theta;
    (void)user;
    double s = 0;
    for (size_t i = 0; i < d; i++)
        s += (double)th[i] * th[i];
    sive_rng g;
    sive_rng_seed(&g, b->seed, 0);
    sive_rng_normals(&g, gl, b->n_groups);
    for (size_t k = 0; k < b->n_groups; k++)
        gl[k] = s / (2.0 * (double)d) + 1e-4 * gl[k];
    return 0;
}

typedef struct figs {
    double measured, chains_only, bound, theta_star, scratch, traces, workspace, index;
} figs;

static void report(const char *name, size_t d, int threads, int64_t M, int chains,
                   const figs *f)
{
    const double MB = 1.0 / (1024.0 * 1024.0);
    printf("%-34s d %9zu  T %d  M %5lld  K %d | measured %8.2f MiB  bound %8.2f MiB  "
           "ratio %.3f\n", name, d, threads, (long long)M, chains, f->measured * MB,
           f->bound * MB, f->measured / f->bound);
    printf("%34s   peak while the chains ran %.2f MiB (ratio %.3f); the rest is the "
           "estimators' and diagnostics' scratch\n", "", f->chains_only * MB,
           f->chains_only / f->bound);
    printf("%34s   bound = theta* %.2f + %d x (theta, grad, noise) %.2f + traces %.2f + "
           "workspace %.2f + index buffers %.2f MiB\n", "", f->theta_star * MB, threads,
           f->scratch * MB, f->traces * MB, f->workspace * MB, f->index * MB);
}

/* Run p on model from a trimmed heap with the peak reset, and set f's
 * theta_star, measured and chains_only (theta* counted in both) from the
 * peaks. */
static sive_result *measured_run(sive_probe *p, const sive_model *model, const float *star,
                                 size_t d, figs *f)
{
    malloc_trim(0);
    long rss0 = status_kb("VmRSS:");
    if (!reset_peak())
        fprintf(stderr, "bench_memory: cannot reset the peak (clear_refs)\n");
    sive_result *r = bench_run(p, model, star, 1);
    long hwm = status_kb("VmHWM:");
    if (hwm < hwm_chains) /* the kernel folds per-thread RSS counts lazily */
        hwm = hwm_chains;
    f->theta_star = (double)d * sizeof(float);
    f->measured = (double)(hwm - rss0) * 1024.0 + f->theta_star;
    f->chains_only = (double)(hwm_chains - rss0) * 1024.0 + f->theta_star;
    return r;
}

static int run_quad(size_t d, int64_t M, int chains)
{
    const int N = 8;
    float *star = malloc(d * sizeof *star);
    if (!star)
        return 1;
    for (size_t i = 0; i < d; i++)
        star[i] = 1.0f + (float)(i % 7) * 0.01f;
    sive_probe *p;
    sive_model model;
    if (sive_probe_new(&p) || sive_probe_set_int(p, SIVE_OPT_STEPS, M) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, chains) ||
        sive_probe_set_int(p, SIVE_OPT_GROUPS, N) ||
        sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.0) ||
        sive_probe_set_progress(p, on_progress, NULL) ||
        sive_model_init(&model, sizeof model))
        return 1;
    model.dtype = SIVE_F32;
    model.dim = d;
    model.grad = quad_grad;
    model.group_loss = quad_eval;
    figs f = {0};
    sive_result *r = measured_run(p, &model, star, d, &f);
    f.scratch = 3.0 * (double)d * sizeof(float);
    f.traces = 5.0 * (double)M * chains * 8.0;
    f.index = (double)N * 8.0;
    f.bound = f.theta_star + f.scratch + f.traces + f.index;
    char name[64];
    snprintf(name, sizeof name, "quadratic (f32 callbacks), N %d", N);
    report(name, d, 1, M, chains, &f);
    sive_result_free(r);
    sive_probe_free(p);
    free(star);
    return 0;
}

static int run_mlp(int threads, int64_t M)
{
    const int chains = threads;
    const size_t N = 512, Be = 64, Bg = 1024;
    sive_dataset *train = bench_train_set();
    sive_mlp *m;
    float *star = bench_checkpoint(&m, train, 1); /* BLIS warmed up on 1 thread */
    size_t d = sive_mlp_dim(m);
    sive_probe *p;
    if (sive_probe_new(&p) || sive_probe_set_int(p, SIVE_OPT_STEPS, M) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, chains) ||
        sive_probe_set_int(p, SIVE_OPT_THREADS, threads) ||
        sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.0) ||
        sive_probe_set_progress(p, on_progress, NULL))
        return 1;
    sive_model model;
    bench_mlp_model(&model, m, train, 1);
    figs f = {0};
    sive_result *r = measured_run(p, &model, star, d, &f);
    /* per worker: the model's sive_mlp_work (lib/ref/mlp.c's layout), the
     * library's distinct-example scratch (lib/core/dedup.c: a 4-byte slot per
     * example, the distinct indices and their losses, each draw's rank),
     * BLIS's packing buffers */
    const double rows = SIVE_MLP_DEFAULT_BLOCK_ROWS;
    double work = rows * (784 + 2 * 128 + 2 * 128 + 10) * 4.0 + 6 * 64.0 +
                  (128 + 128 + 10 + 16) * 8.0 + rows;
    size_t count = sive_dataset_count(train), T = N * Be;
    double dedup = (double)count * 4.0 + 2.0 * (double)(T < count ? T : count) * 8.0 +
                   (double)T * 4.0;
    cntx_t *cx = (cntx_t *)bli_gks_query_cntx();
    double mc = (double)bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_MC, cx);
    double kc = (double)bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_KC, cx);
    double nc = (double)bli_cntx_get_blksz_max_dt(BLIS_FLOAT, BLIS_NC, cx);
    double pack = (mc * kc + kc * nc) * 4.0;
    f.scratch = 3.0 * (double)d * sizeof(float);
    f.traces = 5.0 * (double)M * chains * 8.0;
    f.workspace = threads * (work + dedup + pack);
    f.index = threads * ((double)(N * Be + Bg) * 8.0 + (double)N * 8.0);
    f.bound = f.theta_star + threads * f.scratch + f.traces + f.workspace + f.index;
    char name[96];
    snprintf(name, sizeof name, "MLP 784-128-128-10, N 512, 8000 img");
    report(name, d, threads, M, chains, &f);
    printf("%34s   workspace = %d x (sive_mlp_work %.2f + distinct-example scratch %.2f "
           "+ BLIS packing %.2f) MiB\n", "", threads, work / 1048576.0, dedup / 1048576.0,
           pack / 1048576.0);
    sive_result_free(r);
    sive_model_destroy(&model);
    sive_probe_free(p);
    free(star);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}

static int child(const char *self, char *const argv[])
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execv(self, argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    if (argc > 1 && !strcmp(argv[1], "mlp"))
        return run_mlp(argc > 2 ? atoi(argv[2]) : 1, argc > 3 ? atoll(argv[3]) : 20);
    if (argc > 1 && !strcmp(argv[1], "quad"))
        return run_quad(argc > 2 ? (size_t)atoll(argv[2]) : 10000000,
                        argc > 3 ? atoll(argv[3]) : 10, argc > 4 ? atoi(argv[4]) : 1);
    bench_machine();
    printf("peak resident memory of a probe (VmHWM - VmRSS before the run + theta*), "
           "each configuration in its own process\n");
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    char *a1[] = {self, "mlp", "1", "20", NULL};
    char *a2[] = {self, "mlp", "2", "20", NULL};
    char *a3[] = {self, "quad", "10000000", "10", NULL};
    char *a4[] = {self, "quad", "118282", "10", NULL};
    char *a5[] = {self, "quad", "10000", "20000", "5", NULL}; /* traces dominate */
    int rc = child(self, a1) | child(self, a2) | child(self, a3) | child(self, a4) |
             child(self, a5);
    return rc;
}
