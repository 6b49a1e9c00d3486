/* Toy chain speed: K2 = u^2 v^2 with N = 64 noisy evaluations per step on one
 * thread (goal: >= 3 million Langevin steps per second).
 *
 * Two figures per run of the paper's M = 100 000 steps:
 *  - chain loop: from the progress callback at step 0 to the one at step M,
 *    i.e. the Langevin loop with both callbacks and the traces;
 *  - the chain loop again in the thread CPU time of the chain's thread,
 *    which other processes taking turns on the core do not inflate;
 *  - end to end: the whole toy_run (allocation, loop, estimators, ESS, Rhat).
 * And, in the same run, the 64 evaluation-noise normals of a step drawn
 * alone, which bounds what any step can reach with this sampler. */
#include "toy.h"

#include <sive/sive.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

typedef struct timing {
    double start, end, cpu_start, cpu_end;
} timing;

/* Both calls come from the thread running the one chain. */
static int on_progress(int32_t chain, int64_t step, int64_t total, void *user)
{
    timing *t = user;
    (void)chain;
    if (step == 0) {
        t->start = now();
        t->cpu_start = clock_s(CLOCK_THREAD_CPUTIME_ID);
    }
    if (step == total) {
        t->end = now();
        t->cpu_end = clock_s(CLOCK_THREAD_CPUTIME_ID);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int64_t steps = argc > 1 ? atoll(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    if (steps < 100 || reps < 1) {
        fprintf(stderr, "usage: bench_toy [steps >= 100] [repetitions >= 1]\n");
        return 2;
    }
    toy_config cfg;
    toy_defaults(&cfg, 2);
    cfg.chains = 1;
    cfg.steps = steps;
    timing tm;
    cfg.progress = on_progress;
    cfg.progress_user = &tm;
    double best_loop = 0.0, best_cpu = 0.0, best_total = 0.0;
    for (int r = 0; r < reps; r++) {
        toy_report rep;
        char err[256];
        cfg.seed = (uint64_t)r;
        double t0 = now();
        int rc = toy_run(&cfg, &rep, err, sizeof err);
        double total = now() - t0;
        if (rc) {
            fprintf(stderr, "bench_toy: %s\n", err);
            return 1;
        }
        toy_report_free(&rep);
        double loop = (double)steps / (tm.end - tm.start), all = (double)steps / total;
        double cpu = (double)steps / (tm.cpu_end - tm.cpu_start);
        best_loop = loop > best_loop ? loop : best_loop;
        best_cpu = cpu > best_cpu ? cpu : best_cpu;
        best_total = all > best_total ? all : best_total;
    }
    sive_rng g;
    sive_rng_seed(&g, 1, 1);
    double buf[64], sink = 0.0, t0 = now();
    const int64_t nref = 1000000;
    for (int64_t i = 0; i < nref; i++) {
        sive_rng_normals(&g, buf, 64);
        sink += buf[i & 63];
    }
    double normals_rate = (double)nref / (now() - t0);
    printf("toy K2, N = 64, 1 thread, M = %lld, best of %d runs\n", (long long)steps, reps);
    printf("  chain loop : %6.2f M steps/s  (goal 3.00: ratio %.2f)\n", best_loop / 1e6,
           best_loop / 3e6);
    printf("  chain loop : %6.2f M steps/s of thread CPU time\n", best_cpu / 1e6);
    printf("  end to end : %6.2f M steps/s  (with estimators and diagnostics)\n",
           best_total / 1e6);
    printf("  64 normals alone: %6.2f M sets/s -> they are %.0f%% of a loop step\n",
           normals_rate / 1e6, 100.0 * best_loop / normals_rate);
    return sink == 12345.0; /* keep the reference loop */
}
