/* What gradient control variates add to a step's gradient work on the
 * reference models (docs/performance.md § 11): CPU time of the model's
 * gradient callback at theta_m (the plain step), at theta* before the pass
 * at theta* (computed like any gradient: 0.3's first gcv, two full
 * gradients per step) and after it (summed from the cached per-example
 * pieces, lib/star_cache.h), interleaved round by round in one process.
 *
 *   bench_gcv_cost [rounds (200)] [B_grad... (256 1024)]
 *
 * Models: the MLP 784-128-128-10 on the bundled 8000 digits (float32,
 * freshly initialised: the cost does not depend on the values) and the DLN
 * 10-10-10-10 of bench_gradbatch on 2048 noisy examples.  One BLIS thread.
 * Prints per-call medians and the ratios
 *   plain step  : grad(theta_m)
 *   gcv uncached: grad(theta_m) + grad(theta*)          (two passes)
 *   gcv cached  : grad(theta_m) + grad(theta*) cached
 * over the plain step. */
#include "bench_common.h"

#include <sive/dln.h>

#include <math.h>

#define MAX_ROUNDS 10000

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Round r's batch: B spread, repeatable indices (the same in both passes). */
static void fill_batch(uint64_t *idx, size_t B, int r, uint64_t n)
{
    for (size_t j = 0; j < B; j++)
        idx[j] = ((uint64_t)r * 7919u + j * 104729u) % n;
}

static double timed(const sive_model *m, const void *theta, const sive_batch *b, void *g)
{
    double loss, t0 = cpu_now();
    if (m->grad(theta, m->dim, b, g, &loss, m->user)) {
        fprintf(stderr, "gradient: %s\n", sive_last_errmsg());
        exit(1);
    }
    return cpu_now() - t0;
}

/* The pass at theta*: every example once, in chunks, chain and step -1. */
static void pass(const sive_model *m, const void *star, void *g)
{
    const size_t chunk = 4096;
    uint64_t *idx = malloc(chunk * sizeof *idx);
    for (uint64_t i0 = 0; i0 < m->n_examples; i0 += chunk) {
        size_t k = m->n_examples - i0 < chunk ? (size_t)(m->n_examples - i0) : chunk;
        for (size_t j = 0; j < k; j++)
            idx[j] = i0 + j;
        sive_batch b = {.index = idx, .n_groups = 1, .group_size = k, .chain = -1,
                        .worker = 0, .step = -1};
        timed(m, star, &b, g);
    }
    free(idx);
}

/* theta_m = theta* + 1e-3 (in the model's dtype). */
static void *perturbed(const sive_model *m, const void *star)
{
    size_t el = m->dtype == SIVE_F32 ? sizeof(float) : sizeof(double);
    void *t = malloc(m->dim * el);
    for (size_t i = 0; i < m->dim; i++)
        if (m->dtype == SIVE_F32)
            ((float *)t)[i] = ((const float *)star)[i] + 1e-3f;
        else
            ((double *)t)[i] = ((const double *)star)[i] + 1e-3;
    return t;
}

static void measure(const char *name, const sive_model *m, const void *star, int rounds,
                    const int64_t *batches, int nb)
{
    size_t el = m->dtype == SIVE_F32 ? sizeof(float) : sizeof(double);
    void *g = malloc(m->dim * el), *th = perturbed(m, star);
    for (int k = 0; k < nb; k++) {
        const size_t B = (size_t)batches[k];
        uint64_t *idx = malloc(B * sizeof *idx);
        static double tp[MAX_ROUNDS], tu[MAX_ROUNDS], tc[MAX_ROUNDS];
        /* the uncached times first (before the pass), interleaved with the
         * plain ones, then the cached ones after it */
        sive_batch b = {.index = idx, .n_groups = 1, .group_size = B, .chain = 0, .worker = 0};
        for (int r = 0; r < rounds; r++) {
            fill_batch(idx, B, r, m->n_examples);
            b.step = r;
            tp[r] = timed(m, th, &b, g);
            tu[r] = timed(m, star, &b, g);
        }
        pass(m, star, g);
        double tp2[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            fill_batch(idx, B, r, m->n_examples);
            b.step = r;
            tp2[r] = timed(m, th, &b, g);
            tc[r] = timed(m, star, &b, g);
        }
        double p = median(tp, rounds), u = median(tu, rounds), p2 = median(tp2, rounds),
               c = median(tc, rounds);
        printf("%-5s B_grad %5zu: grad(theta_m) %.3f ms (%.3f ms in the second half), "
               "grad(theta*) %.3f ms uncached, %.3f ms cached; step gradient work over "
               "plain: uncached %.2f, cached %.2f\n", name, B, 1e3 * p, 1e3 * p2, 1e3 * u,
               1e3 * c, (p + u) / p, (p2 + c) / p2);
        fflush(stdout);
        free(idx);
    }
    free(g);
    free(th);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    int64_t batches[8] = {256, 1024};
    int nb = 2;
    if (argc > 2)
        for (nb = 0; nb < 8 && 2 + nb < argc; nb++)
            batches[nb] = atoll(argv[2 + nb]);
    if (rounds < 1 || rounds > MAX_ROUNDS)
        rounds = 200;
    bench_machine();
    sive_dataset *train = bench_train_set();
    sive_mlp *mlp = NULL;
    if (sive_mlp_new(&mlp, 784, 128, 128, 10))
        exit(1);
    float *ft = malloc(sive_mlp_dim(mlp) * sizeof *ft);
    sive_mlp_init_params(mlp, ft, 0);
    const size_t w[4] = {10, 10, 10, 10};
    sive_dln *dln = NULL;
    double *dt = NULL;
    if (sive_dln_new(&dln, w, 3, 3, NULL, 1) || sive_dln_set_data(dln, 2048, 0.5, 2) ||
        !(dt = malloc(sive_dln_dim(dln) * sizeof *dt)) ||
        sive_dln_factorisation(dln, NULL, 3, dt))
        exit(1);
    printf("%d rounds per B_grad, process CPU time per call, medians; 1 BLIS thread\n",
           rounds);
    for (int k = 0; k < nb; k++) { /* a fresh model per B_grad: empty cache */
        sive_model mm, dm;
        bench_mlp_model(&mm, mlp, train, 1);
        if (sive_model_init(&dm, sizeof dm) || sive_dln_model(&dm, dln, 1))
            exit(1);
        measure("MLP", &mm, ft, rounds, &batches[k], 1);
        measure("DLN", &dm, dt, rounds, &batches[k], 1);
        sive_model_destroy(&mm);
        sive_model_destroy(&dm);
    }
    sive_dln_free(dln);
    sive_mlp_free(mlp);
    sive_dataset_free(train);
    free(ft);
    free(dt);
    return 0;
}
