/* The MLP probe's lambda-hat for a fixed seed and a small budget, to check
 * that an optimisation leaves results unchanged.
 *
 *   bench_lambda [steps] [chains] [save.bin|""] [compare.bin|""] [epochs]
 *
 * Runs the paper's configuration (N = 512, B_eval = 64, B_grad = 1024,
 * t = 1e4, base_lr 0.05, c_h = 1) for `steps` steps (default 300) on
 * `chains` chains (default 2, seed 7) around the checkpoint `sive train`
 * makes after `epochs` epochs (default 1), prints
 * lambda-hat (17 digits) per chain and the summary, optionally saves the
 * Lbar / grad-loss / displacement traces and per-chain SIVE values to
 * save.bin, and compares them with an earlier compare.bin: largest
 * relative difference of each.  (Files from before the s2 and gradient-norm
 * traces were added hold only Lbar, grad loss and displacement.) */
#include "bench_common.h"

#include <math.h>

#define NTR 5
static const sive_trace which[NTR] = {SIVE_TRACE_LBAR, SIVE_TRACE_S2, SIVE_TRACE_GRAD_LOSS,
                                      SIVE_TRACE_GRAD_NORM, SIVE_TRACE_DISP};
static const char *names[NTR] = {"Lbar", "s2", "grad loss", "grad norm", "displacement"};

/* Compare this run's values cur[0 .. total-1] (per chain: SIVE, raw
 * variance, then the NTR traces of len steps) with those saved in file cmp;
 * prints whether they are bit-identical and the largest relative
 * differences.  Returns 0, or 1 if the file cannot be read. */
static int compare(const char *cmp, const double *cur, size_t total, int chains, size_t len)
{
    double *old = malloc(total * sizeof *old);
    FILE *f = fopen(cmp, "rb");
    if (!old || !f || fread(old, sizeof *old, total, f) != total) {
        perror(cmp);
        return 1;
    }
    fclose(f);
    double dl = 0, dr = 0, dt[NTR] = {0};
    int identical = memcmp(old, cur, total * sizeof *old) == 0;
    const double *a = old, *c = cur;
    for (int ch = 0; ch < chains; ch++) {
        dl = fmax(dl, fabs(a[0] - c[0]) / fabs(a[0]));
        dr = fmax(dr, fabs(a[1] - c[1]) / fabs(a[1]));
        a += 2;
        c += 2;
        for (int k = 0; k < NTR; k++, a += len, c += len)
            for (size_t i = 0; i < len; i++)
                if (isfinite(a[i]))
                    dt[k] = fmax(dt[k], fabs(a[i] - c[i]) / fabs(a[i]));
    }
    printf("compared with %s: %s\n", cmp, identical ? "bit-identical" : "differs");
    printf("  max relative difference: SIVE %.3g, raw variance %.3g", dl, dr);
    for (int k = 0; k < NTR; k++)
        printf(", %s trace %.3g", names[k], dt[k]);
    printf("\n");
    free(old);
    return 0;
}

int main(int argc, char **argv)
{
    int64_t steps = argc > 1 ? atoll(argv[1]) : 300;
    int chains = argc > 2 ? atoi(argv[2]) : 2;
    const char *save = argc > 3 && argv[3][0] ? argv[3] : NULL;
    const char *cmp = argc > 4 && argv[4][0] ? argv[4] : NULL;
    int epochs = argc > 5 ? atoi(argv[5]) : 1;
    bench_machine();
    sive_dataset *train = bench_train_set();
    sive_mlp *m;
    float *theta = bench_checkpoint(&m, train, epochs);
    sive_probe *p;
    if (sive_probe_new(&p) || sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, chains) ||
        sive_probe_set_int(p, SIVE_OPT_THREADS, chains < 2 ? 1 : 2) ||
        sive_probe_set_int(p, SIVE_OPT_SEED, 7)) {
        fprintf(stderr, "setup: %s\n", sive_last_errmsg());
        return 1;
    }
    sive_model model;
    bench_mlp_model(&model, m, train, 1);
    double t0 = bench_now();
    sive_result *r = bench_run(p, &model, theta, 1);
    double wall = bench_now() - t0;
    printf("MLP probe, %d-epoch checkpoint, N 512, B_eval 64, B_grad 1024, M %lld, "
           "%d chains, seed 7: %.1f s\n", epochs, (long long)steps, chains, wall);
    size_t len = (size_t)steps;
    double *cur = malloc((size_t)chains * (NTR * len + 2) * sizeof *cur);
    double *q = cur;
    for (int c = 0; c < chains; c++) {
        double l = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c);
        double raw = sive_result_stat(r, SIVE_STAT_RAW_VARIANCE, c);
        printf("  chain %d: SIVE unclipped %.17g  raw variance %.17g\n", c, l, raw);
        *q++ = l;
        *q++ = raw;
        for (int k = 0; k < NTR; k++) {
            size_t n;
            const double *tr = sive_result_trace(r, which[k], c, &n);
            memcpy(q, tr, len * sizeof *q);
            q += len;
        }
    }
    printf("  lambda-hat %.17g  (std over chains %.6g)\n", sive_result_lambda(r),
           sive_result_lambda_std(r));
    size_t total = (size_t)(q - cur);
    if (save) {
        FILE *f = fopen(save, "wb");
        if (!f || fwrite(cur, sizeof *cur, total, f) != total) {
            perror(save);
            return 1;
        }
        fclose(f);
    }
    if (cmp && compare(cmp, cur, total, chains, len))
        return 1;
    free(cur);
    sive_result_free(r);
    sive_model_destroy(&model);
    sive_probe_free(p);
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}
