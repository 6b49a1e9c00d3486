/* Toy chain speed: K2 = u^2 v^2 with N = 64 noisy evaluations per step on one
 * thread, in Langevin steps per second (goal: >= 3 million).  Also prints
 * the cost of the 64 normals a step needs alone, drawn with the public
 * sampler in the same run, so the figure can be read against the part of a
 * step that the model itself spends. */
#include "toy.h"

#include <sive/sive.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int64_t steps = argc > 1 ? atoll(argv[1]) : 1000000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    toy_config cfg;
    toy_defaults(&cfg, 2);
    cfg.chains = 1;
    cfg.steps = steps;
    double best = 0.0;
    for (int r = 0; r < reps; r++) {
        toy_report rep;
        char err[256];
        double t0 = now();
        int rc = toy_run(&cfg, &rep, err, sizeof err);
        double dt = now() - t0;
        if (rc) {
            fprintf(stderr, "bench_toy: %s\n", err);
            return 1;
        }
        toy_report_free(&rep);
        double rate = (double)steps / dt;
        best = rate > best ? rate : best;
    }
    /* Reference: the 64 evaluation-noise normals of one step, alone. */
    sive_rng g;
    sive_rng_seed(&g, 1, 1);
    double buf[64], sink = 0.0, t0 = now();
    for (int64_t i = 0; i < steps; i++) {
        sive_rng_normals(&g, buf, 64);
        sink += buf[7];
    }
    double normals_rate = (double)steps / (now() - t0);
    printf("toy K2, N = 64, 1 thread: %.2f M steps/s (best of %d runs of %lld steps; goal 3.00)\n",
           best / 1e6, reps, (long long)steps);
    printf("64 normals alone: %.2f M steps/s -> the sampler is %.0f%% of a step (sink %g)\n",
           normals_rate / 1e6, 100.0 * best / normals_rate, sink > 0 ? 0.0 : 1.0);
    return 0;
}
