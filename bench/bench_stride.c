/* Evaluation stride against ESS per second on the MNIST probe.
 *
 *   bench_stride [steps (3000)] [epochs of the checkpoint (20)] [seeds (3)]
 *                [strides... (1 2 4 8)]
 *
 * For each seed (3, 4, ...) and stride k: the paper's configuration (N 512,
 * B_eval 64, B_grad 1024, t 1e4, base_lr 0.05, c_h 1, burn-in 0.3) with 2
 * chains on 2 probe threads x 1 BLIS thread, around a checkpoint
 * trained for the given number of epochs (SGD lr 0.01, batch 64, as `sive
 * train`).  Prints the tail length, the multi-chain tail ESS of L-bar
 * (sive_result_ess), lambda-hat and its MCSE, wall and CPU seconds, and ESS
 * per wall and per CPU second, each also as a ratio to stride 1, then the
 * means over the seeds (single ESS estimates of a slowly mixing series
 * scatter by tens of percent). */
#include "bench_common.h"

#include <math.h>

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Means over the seeds of one stride's figures, and the ESS range. */
typedef struct sums {
    double ess, wall, cpu, lambda, tail, ess_lo, ess_hi;
} sums;

/* One run at (seed, stride): prints its line and adds it to S. */
static void run_one(const sive_model *model, const float *theta, int64_t steps, int seed,
                    int stride, int seeds, sums *S)
{
    sive_probe *p;
    if (sive_probe_new(&p) || sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
        sive_probe_set_int(p, SIVE_OPT_CHAINS, 2) || sive_probe_set_int(p, SIVE_OPT_THREADS, 2) ||
        sive_probe_set_int(p, SIVE_OPT_SEED, seed) ||
        sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, stride)) {
        fprintf(stderr, "setup: %s\n", sive_last_errmsg());
        exit(1);
    }
    double w0 = bench_now(), c0 = cpu_now();
    /* a diverged chain still leaves a summary worth printing */
    sive_result *r = bench_run(p, model, theta, 0);
    double wall = bench_now() - w0, cpu = cpu_now() - c0;
    double ess = sive_result_ess(r);
    double tail = sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0);
    printf("%6d %4d %6.0f %8.1f %10.2f %8.2f %8.1f %8.1f\n", stride, seed, tail, ess,
           sive_result_lambda(r), sive_result_mcse(r), wall, cpu);
    fflush(stdout);
    S->ess += ess / seeds;
    S->wall += wall / seeds;
    S->cpu += cpu / seeds;
    S->lambda += sive_result_lambda(r) / seeds;
    S->tail = tail;
    S->ess_lo = fmin(S->ess_lo, ess);
    S->ess_hi = fmax(S->ess_hi, ess);
    sive_result_free(r);
    sive_probe_free(p);
}

static void print_means(const int *strides, int ns, const sums *S, int seeds)
{
    printf("\nmeans over %d seeds\n", seeds);
    printf("%6s %6s %8s %15s %10s %8s %8s %9s %6s %9s %6s\n", "stride", "|T|", "ESS",
           "(min .. max)", "lambda", "wall s", "cpu s", "ESS/wall", "ratio", "ESS/cpu",
           "ratio");
    double bw = S[0].ess / S[0].wall, bc = S[0].ess / S[0].cpu;
    for (int i = 0; i < ns; i++) {
        double ew = S[i].ess / S[i].wall, ec = S[i].ess / S[i].cpu;
        printf("%6d %6.0f %8.1f %6.1f .. %6.1f %10.2f %8.1f %8.1f %9.3f %6.2f %9.3f %6.2f\n",
               strides[i], S[i].tail, S[i].ess, S[i].ess_lo, S[i].ess_hi, S[i].lambda,
               S[i].wall, S[i].cpu, ew, ew / bw, ec, ec / bc);
    }
    printf("\n|T| = evaluated tail steps per chain; ESS = multi-chain tail ESS of L-bar "
           "(sive_result_ess); cpu s = process CPU time (both threads); ratio = ESS per "
           "second relative to stride 1\n");
}

int main(int argc, char **argv)
{
    int64_t steps = argc > 1 ? atoll(argv[1]) : 3000;
    int epochs = argc > 2 ? atoi(argv[2]) : 20;
    int seeds = argc > 3 ? atoi(argv[3]) : 3;
    int strides[16] = {1, 2, 4, 8}, ns = 4;
    if (argc > 4) {
        ns = 0;
        for (int i = 4; i < argc && ns < 16; i++)
            strides[ns++] = atoi(argv[i]);
    }
    if (steps < 100 || seeds < 1 || ns < 1) {
        fprintf(stderr, "usage: bench_stride [steps] [epochs] [seeds] [strides...]\n");
        return 2;
    }
    bench_machine();
    sive_dataset *train = bench_train_set();
    sive_mlp *m;
    float *theta = bench_checkpoint(&m, train, epochs);
    /* one model serves the runs one after the other */
    sive_model model;
    bench_mlp_model(&model, m, train, 1);
    printf("MNIST probe: checkpoint after %d epochs, N 512, B_eval 64, B_grad 1024, M %lld, "
           "2 chains on 2 threads x 1 BLIS thread, seeds 3 .. %d\n\n", epochs,
           (long long)steps, 2 + seeds);
    printf("%6s %4s %6s %8s %10s %8s %8s %8s\n", "stride", "seed", "|T|", "ESS", "lambda",
           "MCSE", "wall s", "cpu s");
    sums S[16];
    for (int i = 0; i < ns; i++)
        S[i] = (sums){0, 0, 0, 0, 0, 1e30, 0};
    /* seeds outermost, so that the strides of one seed share the machine's mood */
    for (int sd = 0; sd < seeds; sd++)
        for (int i = 0; i < ns; i++)
            run_one(&model, theta, steps, 3 + sd, strides[i], seeds, &S[i]);
    print_means(strides, ns, S, seeds);
    sive_model_destroy(&model);
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}
