/* Milliseconds per MLP probe step at the paper's configuration, split into
 * evaluation, gradient and update, for three thread layouts, against the
 * GEMM bound measured in the same run.
 *
 *   bench_step [steps per run, 4 .. 999 (12)] [rounds (5)]
 *              [epochs of the checkpoint (1)] [1 = unique mode only (0)]
 *   bench_step --one a|b|c [steps] [rounds] [dense]
 *
 * Configuration: N = 512, B_eval = 64, B_grad = 1024, d = 118 282, the
 * bundled 8000-image training split, the checkpoint `sive train` makes
 * after the given number of epochs (0 = freshly initialised).
 *
 * Layouts:
 *   (a) 1 chain, probe threads 1, BLIS threads 2        ms per step
 *   (b) 2 chains, probe threads 2, BLIS threads 1 each  wall ms / (2 M)
 *   (c) 1 chain, probe threads 1, BLIS threads 1        (reference)
 * Two evaluation modes, each a sive_model whose callbacks time the MLP's
 * compute functions:
 *   unique  a per-example model, as sive_mlp_model() makes: the library
 *           finds the distinct examples among the N*B_eval draws (about
 *           7870 of 32 768 from 8000 images), the loss callback
 *           (sive_mlp_example_losses) puts each through the network once,
 *           and the library sums the group means;
 *   dense   a per-group model whose callback is sive_mlp_group_losses:
 *           every draw goes through the network, the work the PyTorch peer
 *           does.
 * eval and grad are the time inside the model's callbacks; update = chain
 * loop time - eval - grad (index draws, normals, the Langevin update, trace
 * bookkeeping and, in unique mode, the library's deduplication and group
 * sums, which 0.1 counted in eval because its MLP adapter did them inside
 * its callback).  The "model" column runs the same probe through
 * sive_mlp_model itself.  Steps 0 and 1 of every run are excluded
 * (workspace creation, BLIS and OpenMP warm-up); each figure is the best
 * over the rounds, layouts interleaved so that they share the machine's
 * load.  The chain loop is timed from the progress callback, which the
 * library calls at every step only for runs shorter than 1000 steps.
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
 * between step 2 and the last step: the probe step's own allocations. */
#include "bench_gemm.h"

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
/* Timed model                                                        */
/* ------------------------------------------------------------------ */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define MAXC 2 /* chains, and so worker threads, of the largest layout */
typedef struct timed {
    const sive_mlp *m;
    const sive_dataset *ds;
    sive_mlp_work *w[MAXC]; /* per worker, made on its first call */
    int blis;
    /* summed over the timed steps, per chain */
    double t_eval[MAXC], t_grad[MAXC], c_eval[MAXC], c_grad[MAXC];
    double t_loop0[MAXC], t_loop1[MAXC], c_loop0[MAXC], c_loop1[MAXC];
    long alloc0[MAXC], alloc1[MAXC];
    double distinct; /* examples evaluated by chain 0, summed over timed steps */
    int64_t first;
} timed;

/* The calling worker's workspace, made on its first call as sive_mlp_model
 * does (so that its allocation falls in an untimed step). */
static sive_mlp_work *work_of(timed *T, const sive_batch *b)
{
    if (b->worker < 0 || b->worker >= MAXC || b->chain < 0 || b->chain >= MAXC) {
        sive_set_errmsg("bench_step: worker or chain beyond the largest layout");
        return NULL;
    }
    sive_mlp_work **w = &T->w[b->worker];
    if (!*w && sive_mlp_work_new(w, T->m, 0, T->blis) != SIVE_OK)
        return NULL;
    return *w;
}

/* Add the time since (t0, c0) to a chain's sums, from step `first` on. */
static void note_time(const timed *T, const sive_batch *b, double t0, double c0,
                      double *wall, double *cpu)
{
    if (b->step >= T->first) {
        wall[b->chain] += bench_now() - t0;
        cpu[b->chain] += cpu_now() - c0;
    }
}

static int timed_grad(const void *theta, size_t d, const sive_batch *b, void *g,
                      double *loss, void *user)
{
    timed *T = user;
    (void)d;
    sive_mlp_work *w = work_of(T, b);
    if (!w)
        return -1;
    double t0 = bench_now(), c0 = cpu_now();
    int rc = sive_mlp_loss_grad(T->m, w, theta, T->ds, b->index, b->group_size, g, loss);
    note_time(T, b, t0, c0, T->t_grad, T->c_grad);
    return rc;
}

/* unique mode: the library passes the distinct examples of the draws */
static int timed_losses(const void *theta, size_t d, const sive_batch *b, double *losses,
                        void *user)
{
    timed *T = user;
    (void)d;
    sive_mlp_work *w = work_of(T, b);
    if (!w)
        return -1;
    double t0 = bench_now(), c0 = cpu_now();
    int rc = sive_mlp_example_losses(T->m, w, theta, T->ds, b->index, b->group_size, losses);
    note_time(T, b, t0, c0, T->t_eval, T->c_eval);
    if (b->step >= T->first && b->chain == 0)
        T->distinct += (double)b->group_size;
    return rc;
}

/* dense mode: every draw of every group through the network */
static int timed_groups(const void *theta, size_t d, const sive_batch *b, double *gl,
                        void *user)
{
    timed *T = user;
    (void)d;
    sive_mlp_work *w = work_of(T, b);
    if (!w)
        return -1;
    double t0 = bench_now(), c0 = cpu_now();
    int rc = sive_mlp_group_losses(T->m, w, theta, T->ds, b->index, b->n_groups,
                                   b->group_size, gl);
    note_time(T, b, t0, c0, T->t_eval, T->c_eval);
    return rc;
}

/* called at every step, since runs are shorter than 1000 steps */
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

/* ------------------------------------------------------------------ */
/* Runs                                                               */
/* ------------------------------------------------------------------ */
typedef struct layout {
    const char *name;
    int chains, threads, blis;
} layout;

/* Best figures of one (mode, layout); ms per step of throughput (wall /
 * chain-steps) and CPU ms per chain-step. */
typedef struct figures {
    double total, eval, grad, update;     /* wall, split as measured */
    double ctotal, ceval, cgrad, cupdate; /* thread CPU time, per chain-step */
    double model;                         /* wall through sive_mlp_model */
    double distinct;
    long allocs;
    char where[160]; /* allocating libraries of the last round */
} figures;

static const figures no_figures = {1e30, 0, 0, 0, 1e30, 0, 0, 0, 1e30, 0, 0, ""};

static void die(const char *what)
{
    fprintf(stderr, "bench_step: %s: %s\n", what, sive_last_errmsg());
    exit(1);
}

static sive_probe *make_probe(const layout *L, int64_t steps)
{
    sive_probe *p;
    if (sive_probe_new(&p) || sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, L->chains) ||
        sive_probe_set_int(p, SIVE_OPT_THREADS, L->threads) ||
        sive_probe_set_double(p, SIVE_OPT_BURN_IN, 0.0) ||
        sive_probe_set_int(p, SIVE_OPT_SEED, 1))
        die("probe");
    return p;
}

/* Keep the better of F's figures and those of the run T (n timed steps). */
static void keep_best(figures *F, const timed *T, const layout *L, int64_t n)
{
    double loop = 0, ev = 0, gr = 0, cl = 0, ce = 0, cg = 0;
    long al = 0;
    for (int c = 0; c < L->chains; c++) {
        loop = fmax(loop, T->t_loop1[c] - T->t_loop0[c]);
        ev += T->t_eval[c];
        gr += T->t_grad[c];
        cl += T->c_loop1[c] - T->c_loop0[c];
        ce += T->c_eval[c];
        cg += T->c_grad[c];
        al += T->alloc1[c] - T->alloc0[c];
    }
    double cs = (double)(n * L->chains); /* chain-steps */
    double tot = loop * 1e3 / cs;        /* wall per step of throughput */
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
}

/* Which libraries the allocations of the last timed window came from,
 * "libname count, ..." into where. */
static void attribute_allocs(char *where, size_t size)
{
    long nc = atomic_load(&n_callers);
    if (nc > NCALLERS)
        nc = NCALLERS;
    where[0] = 0;
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
        size_t len = strlen(where);
        snprintf(where + len, size - len, "%s%s %ld", j ? ", " : "", seen[j], cnt[j]);
    }
}

/* One timed run of layout L through the timed model; updates F's bests. */
static void run_split(figures *F, const layout *L, int unique, const sive_mlp *m,
                      const sive_dataset *ds, const float *theta, int64_t steps)
{
    sive_probe *p = make_probe(L, steps);
    timed T = {.m = m, .ds = ds, .blis = L->blis, .first = 2};
    sive_model md;
    if (sive_model_init(&md, sizeof md))
        die("model");
    md.dtype = SIVE_F32;
    md.dim = sive_mlp_dim(m);
    md.n_examples = sive_dataset_count(ds);
    md.grad = timed_grad;
    md.loss = unique ? timed_losses : NULL;
    md.group_loss = unique ? NULL : timed_groups;
    md.user = &T;
    if (sive_probe_set_progress(p, on_progress, &T))
        die("progress");
    sive_result *r = bench_run(p, &md, theta, 1);
    int64_t n = steps - T.first;
    keep_best(F, &T, L, n);
    attribute_allocs(F->where, sizeof F->where);
    if (unique)
        F->distinct = T.distinct / (double)n;
    sive_result_free(r);
    sive_probe_free(p);
    for (int k = 0; k < MAXC; k++)
        sive_mlp_work_free(T.w[k]);
}

/* One run through sive_mlp_model: wall ms per step of throughput. */
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
    sive_probe *p = make_probe(L, steps);
    sive_model md;
    bench_mlp_model(&md, m, ds, L->blis);
    real_first = 2;
    if (sive_probe_set_progress(p, real_progress, NULL))
        die("progress");
    sive_result *r = bench_run(p, &md, theta, 1);
    double loop = 0;
    for (int c = 0; c < L->chains; c++)
        loop = fmax(loop, real_t1[c] - real_t0[c]);
    double tot = loop * 1e3 / (double)((steps - 2) * L->chains);
    if (tot < F->model)
        F->model = tot;
    sive_result_free(r);
    sive_model_destroy(&md);
    sive_probe_free(p);
}

#define NL 3
static const layout layouts[NL] = {
    {"(a) 1 chain x 2 BLIS", 1, 1, 2},
    {"(b) 2 chains x 1 BLIS", 2, 2, 1},
    {"(c) 1 chain x 1 BLIS", 1, 1, 1},
};

/* bench_step --one LAYOUT [steps] [rounds] [dense]: one layout (a, b or c)
 * only; prints `libsive <mode> <layout> <best ms per step>` (for
 * bench_vs_torch.py, which reads the last field). */
static int one(int argc, char **argv)
{
    const char *ln = argc > 2 ? argv[2] : "b";
    int64_t steps = argc > 3 ? atoll(argv[3]) : 12;
    int rounds = argc > 4 ? atoi(argv[4]) : 3;
    int dense = argc > 5 && !strcmp(argv[5], "dense");
    int k = ln[0] - 'a';
    if (k < 0 || k >= NL || steps < 4 || steps > 999 || rounds < 1) {
        fprintf(stderr, "usage: bench_step --one a|b|c [4 <= steps <= 999] [rounds] [dense]\n");
        return 2;
    }
    sive_dataset *train = bench_train_set();
    sive_mlp *m;
    float *theta = bench_checkpoint(&m, train, 1);
    figures F = no_figures;
    for (int r = 0; r < rounds; r++) {
        if (dense)
            run_split(&F, &layouts[k], 0, m, train, theta, steps);
        else
            run_real(&F, &layouts[k], m, train, theta, steps);
    }
    printf("libsive %s %s %.3f\n", dense ? "dense" : "model", layouts[k].name,
           dense ? F.total : F.model);
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The full table                                                     */
/* ------------------------------------------------------------------ */

/* The GEMM yardsticks measured in the same run (seconds, FLOP/s, FLOPs). */
typedef struct yardstick {
    double sq2, sq1;              /* 2048^3 square rate, 2 and 1 threads */
    double sq1c;                  /* ... 1 thread, in thread CPU time */
    double flops, gemm2, gemmc, gemm1; /* dense step's products */
    double distinct, flops_u, gemmu2, gemmuc; /* unique step's products */
} yardstick;

/* The products of a step evaluating `rows_eval` rows, for the bound. */
static int shapes_of(gemm_shape *s, size_t rows_eval)
{
    return step_shapes(s, SIVE_MLP_DEFAULT_BLOCK_ROWS, rows_eval, 1024);
}

/* One round of the dense step's products (keeps the best of Y's). */
static void gemm_round(yardstick *Y, gemm_bufs *g)
{
    gemm_shape s[16];
    int ns = shapes_of(s, 512 * 64);
    Y->flops = step_gemm_flops(s, ns);
    Y->sq2 = fmax(Y->sq2, square_rate(2, 2048, 2));
    Y->sq1 = fmax(Y->sq1, square_rate(1, 2048, 2));
    Y->sq1c = fmax(Y->sq1c, square_rate_cpu(2048, 2));
    Y->gemm2 = fmin(Y->gemm2, step_gemm_time(s, ns, g, 2, 2));
    Y->gemm1 = fmin(Y->gemm1, step_gemm_time(s, ns, g, 1, 2));
    Y->gemmc = fmin(Y->gemmc, concurrent_time(s, ns, 2) / 2.0);
}

/* The products the unique mode performs (its distinct rows). */
static void gemm_unique(yardstick *Y, gemm_bufs *g, int rounds)
{
    gemm_shape su[16];
    int nsu = shapes_of(su, (size_t)(Y->distinct + 0.5));
    Y->flops_u = step_gemm_flops(su, nsu);
    for (int r = 0; r < rounds; r++) {
        Y->gemmu2 = fmin(Y->gemmu2, step_gemm_time(su, nsu, g, 2, 3));
        Y->gemmuc = fmin(Y->gemmuc, concurrent_time(su, nsu, 3) / 2.0);
    }
}

static void print_yardstick(const yardstick *Y)
{
    double bound = Y->flops / Y->sq2 * 1e3, bound_u = Y->flops_u / Y->sq2 * 1e3;
    printf("\nsgemm 2048^3: %.1f GFLOP/s on 2 threads, %.1f on 1\n", Y->sq2 * 1e-9,
           Y->sq1 * 1e-9);
    printf("dense step:  %.4f GFLOP of GEMMs -> GEMM bound %.2f ms/step on 2 threads;\n"
           "             its products alone: %.2f ms (1 chain x 2 BLIS), %.2f ms (2 x 1 "
           "concurrent, per step), %.2f ms (1 x 1)\n",
           Y->flops * 1e-9, bound, Y->gemm2 * 1e3, Y->gemmc * 1e3, Y->gemm1 * 1e3);
    printf("unique step: %.0f distinct of 32768 draws -> %.4f GFLOP -> own bound %.2f ms;\n"
           "             its products alone: %.2f ms (1 chain x 2 BLIS), %.2f ms (2 x 1 "
           "concurrent, per step)\n",
           Y->distinct, Y->flops_u * 1e-9, bound_u, Y->gemmu2 * 1e3, Y->gemmuc * 1e3);
}

static const char *mode_name[2] = {"dense", "unique"};

static void print_row(const figures *f, const layout *L, int u, const yardstick *Y)
{
    double bound = Y->flops / Y->sq2 * 1e3, bound_u = Y->flops_u / Y->sq2 * 1e3;
    double best = u ? fmin(f->total, f->model) : f->total;
    printf("%-7s %-22s %7.2f %7.2f %7.2f %7.2f ", mode_name[u], L->name, f->eval, f->grad,
           f->update, f->total);
    if (u)
        printf("%8.2f %7.2f %6.2f | ", f->model, best / bound, best / bound_u);
    else
        printf("%8s %7.2f %6s | ", "-", best / bound, "-");
    if (L->blis == 1)
        printf("%6.2f %6.2f %6.2f %6.2f | ", f->ceval, f->cgrad, f->cupdate, f->ctotal);
    else
        printf("%6s %6s %6s %6s | ", "-", "-", "-", "-");
    if (COUNT_MALLOC)
        printf("%7ld\n", f->allocs);
    else
        printf("%7s\n", "n/a");
}

static void print_table(figures F[2][NL], int only_unique, const yardstick *Y)
{
    printf("\n%-7s %-22s %7s %7s %7s %7s %8s %7s %6s | %6s %6s %6s %6s | %7s\n", "mode",
           "layout, ms per step", "eval", "grad", "update", "total", "model", "/bound",
           "/own", "cpu:ev", "grad", "upd", "total", "mallocs");
    for (int u = 1; u >= (only_unique ? 1 : 0); u--)
        for (int k = 0; k < NL; k++)
            print_row(&F[u][k], &layouts[k], u, Y);
    printf("\nwall ms per step of throughput: eval/grad of (b) are the per-chain times / 2 "
           "(two chains at once); eval = time in the model's evaluation callback (unique: "
           "the distinct examples only); update = total - eval - grad (unique: includes the "
           "library's deduplication and group sums); model = the same run through "
           "sive_mlp_model; /bound = best of total and model / the dense GEMM bound "
           "(acceptance <= 1.25); /own = the same / the bound of the FLOPs the unique mode "
           "performs; cpu = thread CPU ms per chain-step (1-BLIS-thread layouts), immune to "
           "other processes taking turns on the cores; mallocs = allocations by anything in "
           "the process during the timed steps of the last round.\n");
    if (COUNT_MALLOC) {
        printf("\nallocations during the timed steps, by calling library (the first %d "
               "of each run):\n", NCALLERS);
        for (int u = 1; u >= (only_unique ? 1 : 0); u--)
            for (int k = 0; k < NL; k++)
                printf("  %-7s %-22s %s\n", mode_name[u], layouts[k].name,
                       F[u][k].where[0] ? F[u][k].where : "none");
    }
    double a = fmin(F[1][0].total, F[1][0].model), b = fmin(F[1][1].total, F[1][1].model);
    printf("\nfaster layout (unique mode): %s (%.2fx)\n",
           a < b ? "(a) BLIS threads inside the chain" : "(b) chains in parallel",
           a < b ? b / a : a / b);
}

/* Thread CPU time per chain-step against the bound in the same currency:
 * the step's FLOPs at the 1-thread square rate timed in thread CPU time.
 * Neither is inflated by other processes taking turns on the cores, so on
 * a busy machine this is the ratio an idle one would show (there, 2
 * threads run the square at about twice the 1-thread rate: 1.93 x in
 * docs/performance.md, section 12). */
static void print_cpu_bound(figures F[2][NL], int only_unique, const yardstick *Y)
{
    double b = Y->flops / Y->sq1c * 1e3, bu = Y->flops_u / Y->sq1c * 1e3;
    printf("\nthread CPU time against the CPU-time bound of the same run: square 2048^3 "
           "%.1f GFLOP/s on 1 thread (CPU time) -> dense bound %.2f ms, unique own "
           "bound %.2f ms per chain-step\n", Y->sq1c * 1e-9, b, bu);
    for (int u = 1; u >= (only_unique ? 1 : 0); u--)
        for (int k = 1; k < NL; k++)
            printf("  %-7s %-22s cpu %7.2f ms  / dense bound %5.2f%s\n", mode_name[u],
                   layouts[k].name, F[u][k].ctotal, F[u][k].ctotal / b,
                   u ? "" : "  (acceptance <= 1.25)");
    if (!only_unique)
        printf("  unique / own bound: (b) %.2f, (c) %.2f\n", F[1][1].ctotal / bu,
               F[1][2].ctotal / bu);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--one"))
        return one(argc, argv);
    int64_t steps = argc > 1 ? atoll(argv[1]) : 12;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    int epochs = argc > 3 ? atoi(argv[3]) : 1;
    int only_unique = argc > 4 ? atoi(argv[4]) : 0;
    if (steps < 4 || steps > 999 || rounds < 1) {
        fprintf(stderr, "usage: bench_step [4 <= steps <= 999] [rounds >= 1] [epochs] "
                        "[1 = unique mode only]\n");
        return 2;
    }
    bench_machine();
    bench_blis();
    sive_dataset *train = bench_train_set();
    sive_mlp *m;
    float *theta = bench_checkpoint(&m, train, epochs);
    printf("probe step: N 512, B_eval 64, B_grad 1024, d %zu, %zu training images, "
           "checkpoint after %d epoch(s); %lld steps per run (first 2 untimed), best of "
           "%d rounds\n", sive_mlp_dim(m), sive_dataset_count(train), epochs,
           (long long)steps, rounds);
    figures F[2][NL];
    for (int u = 0; u < 2; u++)
        for (int k = 0; k < NL; k++)
            F[u][k] = no_figures;
    yardstick Y = {0, 0, 0, 0, 1e30, 1e30, 1e30, 0, 0, 1e30, 1e30};
    gemm_bufs g = gemm_bufs_new(2048 * 2048);
    for (int r = 0; r < rounds; r++) {
        gemm_round(&Y, &g);
        for (int k = 0; k < NL; k++) {
            for (int u = 1; u >= (only_unique ? 1 : 0); u--)
                run_split(&F[u][k], &layouts[k], u, m, train, theta, steps);
            run_real(&F[1][k], &layouts[k], m, train, theta, steps);
        }
    }
    Y.distinct = F[1][2].distinct;
    gemm_unique(&Y, &g, rounds);
    gemm_bufs_free(&g);
    print_yardstick(&Y);
    print_table(F, only_unique, &Y);
    print_cpu_bound(F, only_unique, &Y);
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}
