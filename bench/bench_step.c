/* Milliseconds per MLP probe step at the paper's configuration, split into
 * evaluation, gradient and update, for two thread layouts, against the GEMM
 * bound measured in the same run.
 *
 *   bench_step [steps per run (12)] [rounds (5)] [epochs of the checkpoint (1)]
 *
 * Configuration: N = 512, B_eval = 64, B_grad = 1024, d = 118 282, the
 * bundled 8000-image training split, the checkpoint `sive train` makes
 * after the given number of epochs (0 = freshly initialised).
 *
 * Layouts:
 *   (a) 1 chain, probe threads 1, BLIS threads 2        ms per step
 *   (b) 2 chains, probe threads 2, BLIS threads 1 each  wall ms / (2 M)
 *   (c) 1 chain, probe threads 1, BLIS threads 1        (reference)
 * Two evaluation modes:
 *   unique  what the adapter (sive_mlp_probe_bind) does: each distinct
 *           example of the N*B_eval draws goes through the network once
 *           (about 7870 of the 32 768 draws from 8000 images are
 *           distinct), group means summed from the per-example losses;
 *   dense   every draw goes through the network (sive_mlp_group_losses),
 *           the work the PyTorch peer does.
 * The split comes from timing wrappers around the compute functions the
 * adapter calls (the unique mode calls the adapter's internal function);
 * update = chain loop time - evaluation - gradient (index draws, normals,
 * the Langevin update, trace bookkeeping).  The "adapter" column runs the
 * same probe through sive_mlp_probe_bind itself.  Steps 0 and 1 of every run are
 * excluded (workspace creation, BLIS and OpenMP warm-up); each figure is
 * the best over the rounds, layouts interleaved so that they share the
 * machine's load.
 *
 * GEMM bound = the step's GEMM FLOPs counted from the shapes of the dense
 * step (the evaluation forward of all 32 768 draws plus the gradient:
 * 8.254 GFLOP) / the 2-thread sgemm rate on a 2048^3 square measured in
 * the same run.  Acceptance: step <= 1.25 x bound.  The unique mode does
 * fewer FLOPs; its ratio to the bound of the FLOPs it performs is printed
 * too ("/own").
 *
 * The malloc counter (this program interposes malloc & co. unless built
 * with a sanitizer) counts allocations made by anything in the process
 * between step 1 and the last step: the probe step's own allocations. */
#include "bench_gemm.h"
#include "mlp_internal.h" /* the adapter's evaluation through distinct examples */

#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>

/* ------------------------------------------------------------------ */
/* Allocation counter                                                 */
/* ------------------------------------------------------------------ */
static atomic_long n_alloc;
/* callers of the allocations made while `tracking` is set */
#define NCALLERS 4096
static atomic_int tracking;
static atomic_long n_callers;
static void *callers[NCALLERS];
#define NOTE_CALLER()                                                             \
    do {                                                                          \
        if (atomic_load_explicit(&tracking, memory_order_relaxed)) {              \
            long k_ = atomic_fetch_add(&n_callers, 1);                            \
            if (k_ < NCALLERS)                                                    \
                callers[k_] = __builtin_return_address(0);                        \
        }                                                                         \
    } while (0)
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define COUNT_MALLOC 1
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
void *malloc(size_t n)
{
    atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
    NOTE_CALLER();
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
    NOTE_CALLER();
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
    NOTE_CALLER();
    return __libc_realloc(p, n);
}
int posix_memalign(void **out, size_t al, size_t n)
{
    atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
    NOTE_CALLER();
    void *p = __libc_memalign(al, n);
    if (!p)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}
void *aligned_alloc(size_t al, size_t n)
{
    atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
    NOTE_CALLER();
    return __libc_memalign(al, n);
}
void *memalign(size_t al, size_t n)
{
    atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
    NOTE_CALLER();
    return __libc_memalign(al, n);
}
#else
#define COUNT_MALLOC 0
#endif

/* ------------------------------------------------------------------ */
/* Timed callbacks                                                    */
/* ------------------------------------------------------------------ */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define MAXC 2
typedef struct timed {
    const sive_mlp *m;
    const sive_dataset *ds;
    sive_mlp_work *w[MAXC];
    sive_mlp_dedup dd[MAXC];
    int blis, unique;
    /* summed over the timed steps, per chain */
    double t_eval[MAXC], t_grad[MAXC], c_eval[MAXC], c_grad[MAXC];
    double t_loop0[MAXC], t_loop1[MAXC], c_loop0[MAXC], c_loop1[MAXC];
    long alloc0[MAXC], alloc1[MAXC];
    double distinct; /* distinct examples, summed over timed evaluations */
    int64_t first;
} timed;

static int timed_grad(const float *theta, size_t d, const sive_batch *b, float *g,
                      double *loss, void *user)
{
    timed *T = user;
    (void)d;
    int c = b->chain;
    if (!T->w[c] && sive_mlp_work_new(&T->w[c], T->m, 0, T->blis))
        return -1;
    double t0 = bench_now(), c0 = cpu_now();
    int rc = sive_mlp_loss_grad(T->m, T->w[c], theta, T->ds, b->index, b->group_size, g,
                                loss);
    if (b->step >= T->first) {
        T->t_grad[c] += bench_now() - t0;
        T->c_grad[c] += cpu_now() - c0;
    }
    return rc;
}

static int timed_eval(const float *theta, size_t d, const sive_batch *b, double *gl,
                      void *user)
{
    timed *T = user;
    (void)d;
    int c = b->chain;
    if (!T->w[c] && sive_mlp_work_new(&T->w[c], T->m, 0, T->blis))
        return -1;
    size_t count = sive_dataset_count(T->ds);
    sive_mlp_dedup *dd = &T->dd[c];
    if (T->unique && !dd->slot) { /* as the adapter: made on first use */
        dd->count = dd->cap = count;
        dd->slot = malloc(count * sizeof *dd->slot);
        dd->uniq = malloc(count * sizeof *dd->uniq);
        dd->loss = malloc(count * sizeof *dd->loss);
        memset(dd->slot, 0xff, count * sizeof *dd->slot);
    }
    double t0 = bench_now(), c0 = cpu_now();
    int rc = T->unique ? sive_mlp_group_losses_unique(T->m, T->w[c], theta, T->ds, b->index,
                                                      b->n_groups, b->group_size, gl, dd)
                       : sive_mlp_group_losses(T->m, T->w[c], theta, T->ds, b->index,
                                               b->n_groups, b->group_size, gl);
    if (b->step >= T->first) {
        T->t_eval[c] += bench_now() - t0;
        T->c_eval[c] += cpu_now() - c0;
        if (T->unique && c == 0) {
            /* count the distinct examples of this draw (bench-side) */
            static unsigned char seen[1 << 20];
            size_t n = b->n_groups * b->group_size, u = 0;
            if (count <= sizeof seen) {
                memset(seen, 0, count);
                for (size_t i = 0; i < n; i++)
                    if (!seen[b->index[i]]) {
                        seen[b->index[i]] = 1;
                        u++;
                    }
                T->distinct += (double)u;
            }
        }
    }
    return rc;
}

/* progress is called at every step when M < 1000 */
static int on_progress(int32_t c, int64_t step, int64_t total, void *user)
{
    timed *T = user;
    if (step == T->first) {
        T->t_loop0[c] = bench_now();
        T->c_loop0[c] = cpu_now();
        T->alloc0[c] = atomic_load(&n_alloc);
        atomic_store(&n_callers, 0);
        atomic_store(&tracking, 1);
    }
    if (step == total) {
        atomic_store(&tracking, 0);
        T->t_loop1[c] = bench_now();
        T->c_loop1[c] = cpu_now();
        T->alloc1[c] = atomic_load(&n_alloc);
    }
    return 0;
}

typedef struct layout {
    const char *name;
    int chains, threads, blis;
} layout;

/* Best figures of one (mode, layout); ms per step of throughput (wall /
 * chain-steps) and CPU ms per chain-step. */
typedef struct figures {
    double total, eval, grad, update;    /* wall, split as measured */
    double ctotal, ceval, cgrad, cupdate; /* thread CPU time, per chain-step */
    double adapter;                        /* wall through the adapter */
    double distinct;
    long allocs;
    char where[160]; /* allocating libraries of the last round */
} figures;

static void die(const char *what)
{
    fprintf(stderr, "bench_step: %s: %s\n", what, sive_last_errmsg());
    exit(1);
}

static sive_probe *make_probe(size_t d, const layout *L, int64_t steps)
{
    sive_probe *p;
    if (sive_probe_new(&p, d) || sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, L->chains) ||
        sive_probe_set_int(p, SIVE_OPT_THREADS, L->threads) ||
        sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.0) ||
        sive_probe_set_int(p, SIVE_OPT_SEED, 1))
        die("probe");
    return p;
}

/* One timed run of layout L through the wrappers; updates F's bests. */
static void run_split(figures *F, const layout *L, int unique, const sive_mlp *m,
                      const sive_dataset *ds, const float *theta, int64_t steps)
{
    size_t d = sive_mlp_dim(m);
    sive_probe *p = make_probe(d, L, steps);
    timed T = {.m = m, .ds = ds, .blis = L->blis, .unique = unique, .first = 2};
    if (sive_probe_set_int(p, SIVE_OPT_DATA_SIZE, (int64_t)sive_dataset_count(ds)) ||
        sive_probe_set_callbacks_f32(p, timed_grad, timed_eval, &T) ||
        sive_probe_set_progress(p, on_progress, &T))
        die("setup");
    sive_result *r = NULL;
    if (sive_probe_run_f32(p, theta, &r))
        die("run");
    int64_t n = steps - T.first;
    double loop = 0, ev = 0, gr = 0, cl = 0, ce = 0, cg = 0;
    long al = 0;
    for (int c = 0; c < L->chains; c++) {
        loop = fmax(loop, T.t_loop1[c] - T.t_loop0[c]);
        ev += T.t_eval[c];
        gr += T.t_grad[c];
        cl += T.c_loop1[c] - T.c_loop0[c];
        ce += T.c_eval[c];
        cg += T.c_grad[c];
        al += T.alloc1[c] - T.alloc0[c];
    }
    double cs = (double)(n * L->chains);  /* chain-steps */
    double tot = loop * 1e3 / cs;         /* wall per step of throughput */
    /* chains running at once share the wall clock */
    double e = ev * 1e3 / cs / L->threads, g = gr * 1e3 / cs / L->threads;
    if (tot < F->total) {
        F->total = tot;
        F->eval = e;
        F->grad = g;
        F->update = tot - e - g;
    }
    if (cl * 1e3 / cs < F->ctotal) {
        F->ctotal = cl * 1e3 / cs;
        F->ceval = ce * 1e3 / cs;
        F->cgrad = cg * 1e3 / cs;
        F->cupdate = F->ctotal - F->ceval - F->cgrad;
    }
    F->allocs = al;
    /* which libraries the allocations came from */
    long nc = atomic_load(&n_callers);
    if (nc > NCALLERS)
        nc = NCALLERS;
    F->where[0] = 0;
    const char *seen[8];
    long cnt[8];
    int ns = 0;
    for (long i = 0; i < nc; i++) {
        Dl_info di;
        const char *f = dladdr(callers[i], &di) && di.dli_fname ? di.dli_fname : "?";
        const char *b = strrchr(f, '/');
        f = b ? b + 1 : f;
        int j = 0;
        while (j < ns && strcmp(seen[j], f))
            j++;
        if (j == ns && ns < 8) {
            seen[ns] = f;
            cnt[ns++] = 0;
        }
        if (j < ns)
            cnt[j]++;
    }
    for (int j = 0; j < ns; j++) {
        size_t len = strlen(F->where);
        snprintf(F->where + len, sizeof F->where - len, "%s%s %ld", j ? ", " : "", seen[j],
                 cnt[j]);
    }
    if (unique)
        F->distinct = T.distinct / (double)n;
    sive_result_free(r);
    sive_probe_free(p);
    for (int c = 0; c < MAXC; c++) {
        sive_mlp_work_free(T.w[c]);
        free(T.dd[c].slot);
        free(T.dd[c].uniq);
        free(T.dd[c].loss);
    }
}

/* One run through the real adapter: wall ms per step of throughput. */
static int64_t real_first;
static double real_t0[MAXC], real_t1[MAXC];
static int real_progress(int32_t c, int64_t step, int64_t total, void *user)
{
    (void)user;
    if (step == real_first)
        real_t0[c] = bench_now();
    if (step == total)
        real_t1[c] = bench_now();
    return 0;
}

static void run_real(figures *F, const layout *L, const sive_mlp *m, const sive_dataset *ds,
                     const float *theta, int64_t steps)
{
    sive_probe *p = make_probe(sive_mlp_dim(m), L, steps);
    sive_mlp_binding *b;
    real_first = 2;
    if (sive_mlp_probe_bind(&b, p, m, ds, 0, L->blis) ||
        sive_probe_set_progress(p, real_progress, NULL))
        die("bind");
    sive_result *r = NULL;
    if (sive_probe_run_f32(p, theta, &r))
        die("run");
    double loop = 0;
    for (int c = 0; c < L->chains; c++)
        loop = fmax(loop, real_t1[c] - real_t0[c]);
    double tot = loop * 1e3 / (double)((steps - 2) * L->chains);
    if (tot < F->adapter)
        F->adapter = tot;
    sive_result_free(r);
    sive_mlp_binding_free(b);
    sive_probe_free(p);
}

#define NL 3
static const layout layouts[NL] = {
    {"(a) 1 chain x 2 BLIS", 1, 1, 2},
    {"(b) 2 chains x 1 BLIS", 2, 2, 1},
    {"(c) 1 chain x 1 BLIS", 1, 1, 1},
};

/* bench_step --one LAYOUT [steps] [rounds] [dense]: one layout (a, b or c)
 * only; prints `libsive <best ms per step>` (for bench_vs_torch.py). */
static int one(int argc, char **argv)
{
    const char *ln = argc > 2 ? argv[2] : "b";
    int64_t steps = argc > 3 ? atoll(argv[3]) : 12;
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    int dense = argc > 5 && !strcmp(argv[5], "dense");
    int k = ln[0] - 'a';
    if (k < 0 || k >= NL || steps < 4 || rounds < 1) {
        fprintf(stderr, "usage: bench_step --one a|b|c [steps >= 4] [rounds] [dense]\n");
        return 2;
    }
    sive_dataset *train = bench_train_set();
    sive_mlp *m;
    float *theta = bench_checkpoint(&m, train, 1);
    figures F = {1e30, 0, 0, 0, 1e30, 0, 0, 0, 1e30, 0, 0, ""};
    for (int r = 0; r < rounds; r++) {
        if (dense)
            run_split(&F, &layouts[k], 0, m, train, theta, steps);
        else
            run_real(&F, &layouts[k], m, train, theta, steps);
    }
    printf("libsive %s %s %.3f\n", dense ? "dense" : "adapter", layouts[k].name,
           dense ? F.total : F.adapter);
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--one"))
        return one(argc, argv);
    int64_t steps = argc > 1 ? atoll(argv[1]) : 12;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    int epochs = argc > 3 ? atoi(argv[3]) : 1;
    int only_unique = argc > 4 ? atoi(argv[4]) : 0;
    if (steps < 4 || rounds < 1) {
        fprintf(stderr, "usage: bench_step [steps >= 4] [rounds >= 1] [epochs] "
                        "[1 = unique mode only]\n");
        return 2;
    }
    bench_machine();
    sive_dataset *train = bench_train_set();
    sive_mlp *m;
    float *theta = bench_checkpoint(&m, train, epochs);
    printf("probe step: N 512, B_eval 64, B_grad 1024, d %zu, %zu training images, "
           "checkpoint after %d epoch(s); %lld steps per run (first 2 untimed), best of "
           "%d rounds\n", sive_mlp_dim(m), sive_dataset_count(train), epochs,
           (long long)steps, rounds);

    const size_t rows = SIVE_MLP_DEFAULT_BLOCK_ROWS;
    gemm_shape s[16];
    int ns = step_shapes(s, rows, 512 * 64, 1024);
    double flops = step_gemm_flops(s, ns);

    figures F[2][NL];
    for (int u = 0; u < 2; u++)
        for (int k = 0; k < NL; k++)
            F[u][k] = (figures){1e30, 0, 0, 0, 1e30, 0, 0, 0, 1e30, 0, 0, ""};
    double sq2 = 0, sq1 = 0, gemm2 = 1e30, gemmc = 1e30, gemm1 = 1e30;
    gemm_bufs g = gemm_bufs_new(2048 * 2048);
    for (int r = 0; r < rounds; r++) {
        sq2 = fmax(sq2, square_rate(2, 2048, 2));
        sq1 = fmax(sq1, square_rate(1, 2048, 2));
        gemm2 = fmin(gemm2, step_gemm_time(s, ns, &g, 2, 2));
        gemm1 = fmin(gemm1, step_gemm_time(s, ns, &g, 1, 2));
        gemmc = fmin(gemmc, concurrent_time(s, ns, 2) / 2.0);
        for (int k = 0; k < NL; k++) {
            for (int u = 1; u >= (only_unique ? 1 : 0); u--)
                run_split(&F[u][k], &layouts[k], u, m, train, theta, steps);
            run_real(&F[1][k], &layouts[k], m, train, theta, steps);
        }
    }
    /* the products the unique mode performs (its distinct rows) */
    double distinct = F[1][2].distinct;
    gemm_shape su[16];
    int nsu = step_shapes(su, rows, (size_t)(distinct + 0.5), 1024);
    double flops_u = step_gemm_flops(su, nsu);
    double gemmu2 = 1e30, gemmuc = 1e30;
    for (int r = 0; r < rounds; r++) {
        gemmu2 = fmin(gemmu2, step_gemm_time(su, nsu, &g, 2, 3));
        gemmuc = fmin(gemmuc, concurrent_time(su, nsu, 3) / 2.0);
    }
    gemm_bufs_free(&g);
    double bound = flops / sq2 * 1e3, bound_u = flops_u / sq2 * 1e3;
    printf("\nsgemm 2048^3: %.1f GFLOP/s on 2 threads, %.1f on 1\n", sq2 * 1e-9, sq1 * 1e-9);
    printf("dense step:  %.4f GFLOP of GEMMs -> GEMM bound %.2f ms/step on 2 threads;\n"
           "             its products alone: %.2f ms (1 chain x 2 BLIS), %.2f ms (2 x 1 "
           "concurrent, per step), %.2f ms (1 x 1)\n",
           flops * 1e-9, bound, gemm2 * 1e3, gemmc * 1e3, gemm1 * 1e3);
    printf("unique step: %.0f distinct of 32768 draws -> %.4f GFLOP -> own bound %.2f ms;\n"
           "             its products alone: %.2f ms (1 chain x 2 BLIS), %.2f ms (2 x 1 "
           "concurrent, per step)\n",
           distinct, flops_u * 1e-9, bound_u, gemmu2 * 1e3, gemmuc * 1e3);
    static const char *mode[2] = {"dense", "unique"};
    printf("\n%-7s %-22s %7s %7s %7s %7s %8s %7s %6s | %6s %6s %6s %6s | %7s\n", "mode",
           "layout, ms per step", "eval", "grad", "update", "total", "adapter", "/bound",
           "/own", "cpu:ev", "grad", "upd", "total", "mallocs");
    for (int u = 1; u >= (only_unique ? 1 : 0); u--)
        for (int k = 0; k < NL; k++) {
            const figures *f = &F[u][k];
            double best = u ? fmin(f->total, f->adapter) : f->total;
            printf("%-7s %-22s %7.2f %7.2f %7.2f %7.2f ", mode[u], layouts[k].name, f->eval,
                   f->grad, f->update, f->total);
            if (u)
                printf("%8.2f %7.2f %6.2f | ", f->adapter, best / bound, best / bound_u);
            else
                printf("%8s %7.2f %6s | ", "-", best / bound, "-");
            if (layouts[k].blis == 1)
                printf("%6.2f %6.2f %6.2f %6.2f | ", f->ceval, f->cgrad, f->cupdate, f->ctotal);
            else
                printf("%6s %6s %6s %6s | ", "-", "-", "-", "-");
            if (COUNT_MALLOC)
                printf("%7ld\n", f->allocs);
            else
                printf("%7s\n", "n/a");
        }
    printf("\nwall ms per step of throughput: eval/grad of (b) are the per-chain times / 2 "
           "(two chains at once); update = total - eval - grad; adapter = the same run "
           "through sive_mlp_probe_bind; /bound = best of total and adapter / the dense "
           "GEMM bound (acceptance <= 1.25); /own = the same / the bound of the FLOPs the "
           "unique mode performs; cpu = thread CPU ms per chain-step (1-BLIS-thread "
           "layouts), immune to other processes taking turns on the cores; mallocs = "
           "allocations by anything in the process during the timed steps of the last "
           "round.\n");
    if (COUNT_MALLOC) {
        printf("\nallocations during the timed steps, by calling library (the first %d "
               "of each run):\n", NCALLERS);
        for (int u = 1; u >= (only_unique ? 1 : 0); u--)
            for (int k = 0; k < NL; k++)
                printf("  %-7s %-22s %s\n", mode[u], layouts[k].name,
                       F[u][k].where[0] ? F[u][k].where : "none");
    }
    double a = fmin(F[1][0].total, F[1][0].adapter), b = fmin(F[1][1].total, F[1][1].adapter);
    printf("\nfaster layout (unique mode): %s (%.2fx)\n",
           a < b ? "(a) BLIS threads inside the chain" : "(b) chains in parallel",
           a < b ? b / a : a / b);
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}
