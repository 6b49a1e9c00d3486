/* Helpers shared by the benchmarks (not part of the library). */
#ifndef SIVE_BENCH_COMMON_H
#define SIVE_BENCH_COMMON_H

#include <sive/data.h>
#include <sive/mlp.h>
#include <sive/sive.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef SIVE_DATA_DIR
#define SIVE_DATA_DIR "data"
#endif

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A run saved by bench_truth --save DIR, whose note is its case, its
 * setting, then "lambda target ...": the result, lambda and the finite-t
 * target (NaN where the note lacks them); 1 (said) when it cannot be
 * loaded. */
static inline int bench_load_saved(const char *path, sive_result **r, double *lambda,
                                   double *target)
{
    char *note = NULL;
    *lambda = *target = 0.0 / 0.0;
    if (sive_result_load(path, r, &note)) {
        printf("cannot load %s: %s\n", path, sive_last_errmsg());
        return 1;
    }
    const char *nums = note;
    for (int i = 0; i < 2 && nums; i++)
        nums = strchr(nums, '\n') ? strchr(nums, '\n') + 1 : NULL;
    if (nums)
        sscanf(nums, "%lf %lf", lambda, target);
    sive_free(note);
    return 0;
}

/* The bundled MNIST split (8000 train / 2000 test); exits on failure. */
static inline sive_dataset *bench_train_set(void)
{
    const char *dir = getenv("SIVE_DATA");
    if (!dir)
        dir = SIVE_DATA_DIR;
    sive_dataset *train = NULL, *test = NULL;
    if (sive_dataset_open_dir(dir, &train, &test) != SIVE_OK) {
        fprintf(stderr, "cannot open the data in %s: %s\n", dir, sive_last_errmsg());
        exit(1);
    }
    sive_dataset_free(test);
    return train;
}

/* The paper's MLP 784-128-128-10 and a checkpoint: initialised with seed 0,
 * then `epochs` epochs of SGD (lr 0.01, batch 64, seed 0), as
 * `sive train --epochs E` makes epoch_E.ckpt.  Exits on failure. */
static inline float *bench_checkpoint(sive_mlp **m_out, const sive_dataset *train,
                                      int epochs)
{
    sive_mlp *m = NULL;
    if (sive_mlp_new(&m, 784, 128, 128, 10) != SIVE_OK)
        exit(1);
    float *theta = malloc(sive_mlp_dim(m) * sizeof *theta);
    sive_mlp_work *w = NULL;
    if (!theta || sive_mlp_init_params(m, theta, 0) != SIVE_OK ||
        sive_mlp_work_new(&w, m, 0, 1) != SIVE_OK)
        exit(1);
    for (int e = 1; e <= epochs; e++)
        if (sive_mlp_train_epoch(m, w, theta, train, 0.01f, 64, 0, (uint64_t)e, NULL) !=
            SIVE_OK) {
            fprintf(stderr, "training: %s\n", sive_last_errmsg());
            exit(1);
        }
    sive_mlp_work_free(w);
    *m_out = m;
    return theta;
}

/* The MLP on the training set as a probe model (sive_mlp_model) with
 * blis_threads BLIS threads per worker; exits on failure.  Release it with
 * sive_model_destroy(). */
static inline void bench_mlp_model(sive_model *out, const sive_mlp *m,
                                   const sive_dataset *train, int blis_threads)
{
    if (sive_model_init(out, sizeof *out) != SIVE_OK ||
        sive_mlp_model(out, m, train, blis_threads) != SIVE_OK) {
        fprintf(stderr, "model: %s\n", sive_last_errmsg());
        exit(1);
    }
}

/* Run p on model from theta and return the result; exits when the run
 * produced none, or when need_ok is set and the run did not end with
 * SIVE_OK (a benchmark's figures from a cut-short run would mislead). */
static inline sive_result *bench_run(sive_probe *p, const sive_model *model,
                                     const void *theta, int need_ok)
{
    sive_result *r = NULL;
    if (sive_probe_run(p, model, theta, &r) != SIVE_OK) {
        fprintf(stderr, "run: %s\n", sive_probe_errmsg(p));
        exit(1);
    }
    if (sive_result_status(r) != SIVE_OK) {
        fprintf(stderr, "run ended early: %s\n", sive_result_errmsg(r));
        if (need_ok)
            exit(1);
    }
    return r;
}

static inline void bench_machine(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256], model[256] = "?";
    int n = 0;
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c && model[0] == '?') {
                    snprintf(model, sizeof model, "%s", c + 2);
                    model[strcspn(model, "\n")] = 0;
                }
                n++;
            }
        }
        fclose(f);
    }
    const char *wp = getenv("OMP_WAIT_POLICY");
    printf("machine: %s, %d cpus; OMP_WAIT_POLICY=%s\n", model, n, wp ? wp : "(unset)");
    /* Asked before any BLIS use: libsive picks the kernels when BLIS
     * initialises, and a benchmark timing BLIS directly must get the same
     * ones as the MLP. */
    printf("BLIS kernels: %s\n", sive_mlp_blis_kernels());
}

#endif
