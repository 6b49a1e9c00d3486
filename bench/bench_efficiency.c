/* Work-normalised variance of lambda-hat on the MNIST probe: what a unit of
 * precision costs with the paper's evaluation, with a stride, and with
 * control variates (SIVE_OPT_CONTROL_VARIATE; docs/performance.md).
 *
 *   bench_efficiency [epochs (12)] [steps (4000)] [n: 0 = bundled, or
 *                    60000] [chains (2)] [stride (4)] [groups for c (64)]
 *                    [seed (1)] [configurations (a,b,c); also cB, gB, f]
 *
 * The target is the paper's (t 1e4, base_lr 0.05, c_h 1, burn-in 0.3,
 * B_grad 1024) around a checkpoint trained for `epochs` epochs on the
 * bundled 8000 digits (SGD lr 0.01, batch 64, as `sive train`).  With n =
 * 60000 the probe's data set is the bundled digits followed by copies
 * shifted by one pixel (the official MNIST size; the cost of a step depends
 * on n, not on the pixels).  Configurations, same M, seeds and chains:
 *   (a) N 512, B_eval 64, stride 1          (the paper's)
 *   (b) N 512, B_eval 64, stride k          (stride only)
 *   (c) N G,   B_eval 64, stride k, control variates
 *   (gB) as (c), with gradient control variates at B_grad B (issue 19:
 *        near the full-batch target, where (a)-(c) sample B_grad 1024's)
 *   (cB) as (c) at B_grad B (with replacement, as (c))
 *   (f)  as (c) at the full-batch target: B_grad = n, replacement 0 (every
 *        gradient on all n examples; 0.2's way to (gB)'s target)
 * For each: lambda-hat with its MCSE, the noise correction and its std,
 * wall seconds, and the work-normalised variance
 *     W = (per-chain MCSE of lambda-hat)^2 x wall seconds per chain
 * (mean squared per-chain MCSE; wall per chain = wall x workers / chains),
 * then W / W(first configuration).  Chains run on 2 probe threads x 1 BLIS
 * thread. */
#include "bench_common.h"

#include <math.h>

#define SHIFTS 8

/* The bundled digits, then copies shifted by one pixel (eight directions,
 * zero fill), up to n images. */
static sive_dataset *shifted_copies(const sive_dataset *train, size_t n)
{
    static const int dx[SHIFTS] = {0, 1, -1, 0, 0, 1, -1, 1};
    static const int dy[SHIFTS] = {0, 0, 0, 1, -1, 1, -1, -1};
    const size_t n0 = sive_dataset_count(train), R = sive_dataset_rows(train),
                 C = sive_dataset_cols(train), px = R * C;
    if (n > n0 * SHIFTS) {
        fprintf(stderr, "n %zu is above %d copies of %zu\n", n, SHIFTS, n0);
        exit(1);
    }
    uint8_t *pix = calloc(n * px, 1), *lab = malloc(n);
    if (!pix || !lab)
        exit(1);
    const uint8_t *src = sive_dataset_pixels(train), *sl = sive_dataset_labels(train);
    for (size_t i = 0; i < n; i++) {
        size_t k = i / n0, j = i % n0;
        lab[i] = sl[j];
        for (size_t r = 0; r < R; r++)
            for (size_t c = 0; c < C; c++) {
                long rr = (long)r - dy[k], cc = (long)c - dx[k];
                if (rr >= 0 && rr < (long)R && cc >= 0 && cc < (long)C)
                    pix[i * px + r * C + c] = src[j * px + (size_t)rr * C + (size_t)cc];
            }
    }
    sive_dataset *ds = NULL;
    if (sive_dataset_from_memory(&ds, pix, lab, n, R, C) != SIVE_OK) {
        fprintf(stderr, "data set: %s\n", sive_last_errmsg());
        exit(1);
    }
    free(pix);
    free(lab);
    return ds;
}

typedef struct config {
    char name[16];
    int64_t groups, stride, cv, grad_batch, gcv, replacement;
} config;

/* One configuration: prints its row, returns W. */
static double run_config(const config *cf, const sive_model *model, const float *theta,
                         int64_t steps, int64_t chains, int64_t seed)
{
    sive_probe *p;
    if (sive_probe_new(&p) || sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, chains) ||
        sive_probe_set_int(p, SIVE_OPT_THREADS, 2) ||
        sive_probe_set_int(p, SIVE_OPT_SEED, seed) ||
        sive_probe_set_int(p, SIVE_OPT_GROUPS, cf->groups) ||
        sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, cf->stride) ||
        sive_probe_set_int(p, SIVE_OPT_CONTROL_VARIATE, cf->cv) ||
        sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, cf->grad_batch) ||
        sive_probe_set_int(p, SIVE_OPT_GRAD_CONTROL_VARIATE, cf->gcv) ||
        sive_probe_set_int(p, SIVE_OPT_REPLACEMENT, cf->replacement)) {
        fprintf(stderr, "setup: %s\n", sive_last_errmsg());
        exit(1);
    }
    double w0 = bench_now();
    sive_result *r = bench_run(p, model, theta, 1);
    double wall = bench_now() - w0;
    double mse = 0.0;
    for (int32_t c = 0; c < chains; c++) {
        double s = sive_result_stat(r, SIVE_STAT_MCSE, c);
        mse += s * s / (double)chains;
    }
    int64_t workers = chains < 2 ? chains : 2;
    double wall_chain = wall * (double)workers / (double)chains;
    double W = mse * wall_chain;
    printf("%-6s %5lld %6lld %3lld %9.1f %7.1f %9.1f %8.1f %7.1f %7.1f %9.3g  flags 0x%02x\n",
           cf->name, (long long)cf->groups, (long long)cf->stride, (long long)cf->cv,
           sive_result_lambda(r), sive_result_mcse(r), sive_result_noise_correction(r),
           sive_result_noise_correction_std(r), sqrt(mse), wall_chain, W,
           (unsigned)sive_result_flags(r));
    fflush(stdout);
    sive_result_free(r);
    sive_probe_free(p);
    return W;
}

/* "a,b,c,g256,c256,f,...": the configurations in that order; n is the
 * probe's data-set size (f's gradient batch). */
static int parse_configs(const char *list, config *cf, int64_t stride, int64_t groups_c,
                         size_t n_examples)
{
    int n = 0;
    for (const char *p = list; *p && n < 16; p += strcspn(p, ",") + (p[strcspn(p, ",")] != 0)) {
        config c = {.groups = 512, .stride = 1, .grad_batch = 1024, .replacement = 1};
        snprintf(c.name, sizeof c.name, "%.*s", (int)strcspn(p, ","), p);
        if (p[0] == 'b')
            c.stride = stride;
        else if (p[0] == 'c' || p[0] == 'g' || p[0] == 'f') {
            c.groups = groups_c;
            c.stride = stride;
            c.cv = 1;
            c.gcv = p[0] == 'g';
            c.grad_batch = p[1] >= '0' && p[1] <= '9' ? atoll(p + 1) : 1024;
            if (p[0] == 'f') {
                c.grad_batch = (int64_t)n_examples;
                c.replacement = 0;
            }
        } else if (p[0] != 'a') {
            fprintf(stderr, "configuration '%s' is not a, b, c, cB, gB or f\n", c.name);
            exit(2);
        }
        cf[n++] = c;
    }
    return n;
}

int main(int argc, char **argv)
{
    int epochs = argc > 1 ? atoi(argv[1]) : 12;
    int64_t steps = argc > 2 ? atoll(argv[2]) : 4000;
    size_t n = argc > 3 ? (size_t)atoll(argv[3]) : 0;
    int64_t chains = argc > 4 ? atoll(argv[4]) : 2;
    int64_t stride = argc > 5 ? atoll(argv[5]) : 4;
    int64_t groups_c = argc > 6 ? atoll(argv[6]) : 64;
    int64_t seed = argc > 7 ? atoll(argv[7]) : 1;
    const char *list = argc > 8 ? argv[8] : "a,b,c";
    bench_machine();
    sive_dataset *train = bench_train_set(), *probe_set = train;
    sive_mlp *m = NULL;
    float *theta = bench_checkpoint(&m, train, epochs);
    if (n)
        probe_set = shifted_copies(train, n);
    sive_model model;
    bench_mlp_model(&model, m, probe_set, 1);
    printf("checkpoint: epoch %d; probe data n = %zu; M %lld, %lld chains, seed %lld; "
           "t 1e4, base_lr 0.05, c_h 1, burn-in 0.3, B_grad 1024 (cB, gB: B; "
           "f: n without replacement), B_eval 64\n", epochs,
           sive_dataset_count(probe_set), (long long)steps, (long long)chains,
           (long long)seed);
    printf("cfg        N stride  cv    lambda    MCSE         C    C std  MCSE/c  wall/c"
           "         W\n");
    config cf[16];
    double W[16];
    int nc = parse_configs(list, cf, stride, groups_c, sive_dataset_count(probe_set));
    for (int i = 0; i < nc; i++)
        W[i] = run_config(&cf[i], &model, theta, steps, chains, seed);
    printf("W / W(%s):", cf[0].name);
    for (int i = 1; i < nc; i++)
        printf(" %s %.3f", cf[i].name, W[i] / W[0]);
    printf("\n");
    sive_model_destroy(&model);
    if (probe_set != train)
        sive_dataset_free(probe_set);
    sive_dataset_free(train);
    sive_mlp_free(m);
    free(theta);
    return 0;
}
