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
}

#endif
