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
    size_t d = sive_mlp_dim(m);
    printf("MNIST probe: checkpoint after %d epochs, N 512, B_eval 64, B_grad 1024, M %lld, "
           "2 chains on 2 threads x 1 BLIS thread, seeds 3 .. %d\n\n", epochs,
           (long long)steps, 2 + seeds);
    printf("%6s %4s %6s %8s %10s %8s %8s %8s\n", "stride", "seed", "|T|", "ESS", "lambda",
           "MCSE", "wall s", "cpu s");
    double ess_m[16] = {0}, wall_m[16] = {0}, cpu_m[16] = {0}, lam_m[16] = {0};
    double ess_lo[16], ess_hi[16], tail_n[16] = {0};
    for (int i = 0; i < ns; i++) {
        ess_lo[i] = 1e30;
        ess_hi[i] = 0;
    }
    /* seeds outermost, so that the strides of one seed share the machine's mood */
    for (int sd = 0; sd < seeds; sd++)
        for (int i = 0; i < ns; i++) {
            sive_probe *p;
            sive_mlp_binding *b;
            if (sive_probe_new(&p, d) || sive_probe_set_int(p, SIVE_OPT_STEPS, steps) ||
                sive_probe_set_int(p, SIVE_OPT_CHAINS, 2) ||
                sive_probe_set_int(p, SIVE_OPT_THREADS, 2) ||
                sive_probe_set_int(p, SIVE_OPT_SEED, 3 + sd) ||
                sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, strides[i]) ||
                sive_mlp_probe_bind(&b, p, m, train, 0, 1)) {
                fprintf(stderr, "setup: %s\n", sive_last_errmsg());
                return 1;
            }
            sive_result *r = NULL;
            double w0 = bench_now(), c0 = cpu_now();
            int rc = sive_probe_run_f32(p, theta, &r);
            double wall = bench_now() - w0, cpu = cpu_now() - c0;
            if (rc && !r) {
                fprintf(stderr, "run: %s\n", sive_probe_errmsg(p));
                return 1;
            }
            double ess = sive_result_ess(r);
            double tail = sive_result_stat(r, SIVE_STAT_TAIL_LENGTH, 0);
            printf("%6d %4d %6.0f %8.1f %10.2f %8.2f %8.1f %8.1f\n", strides[i], 3 + sd, tail,
                   ess, sive_result_lambda(r), sive_result_mcse(r), wall, cpu);
            fflush(stdout);
            ess_m[i] += ess / seeds;
            wall_m[i] += wall / seeds;
            cpu_m[i] += cpu / seeds;
            lam_m[i] += sive_result_lambda(r) / seeds;
            tail_n[i] = tail;
            ess_lo[i] = fmin(ess_lo[i], ess);
            ess_hi[i] = fmax(ess_hi[i], ess);
            sive_result_free(r);
            sive_mlp_binding_free(b);
            sive_probe_free(p);
        }
    printf("\nmeans over %d seeds\n", seeds);
    printf("%6s %6s %8s %15s %10s %8s %8s %9s %6s %9s %6s\n", "stride", "|T|", "ESS",
           "(min .. max)", "lambda", "wall s", "cpu s", "ESS/wall", "ratio", "ESS/cpu",
           "ratio");
    for (int i = 0; i < ns; i++) {
        double ew = ess_m[i] / wall_m[i], ec = ess_m[i] / cpu_m[i];
        double bw = ess_m[0] / wall_m[0], bc = ess_m[0] / cpu_m[0];
        printf("%6d %6.0f %8.1f %6.1f .. %6.1f %10.2f %8.1f %8.1f %9.3f %6.2f %9.3f %6.2f\n",
               strides[i], tail_n[i], ess_m[i], ess_lo[i], ess_hi[i], lam_m[i], wall_m[i],
               cpu_m[i], ew, ew / bw, ec, ec / bc);
    }
    printf("\n|T| = evaluated tail steps per chain; ESS = multi-chain tail ESS of L-bar "
           "(sive_result_ess); cpu s = process CPU time (both threads); ratio = ESS per "
           "second relative to stride 1\n");
    free(theta);
    sive_mlp_free(m);
    sive_dataset_free(train);
    return 0;
}
