/* `sive demo`: what the README's first command ends with.
 *  1. the toy Table 1 at the paper's settings (both models, ~2 s);
 *  2. a short MNIST trajectory on the bundled digits with a reduced probe
 *     budget (see DEMO_* below), written to --out with its plot. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* The demo budget (docs/cli.md has the measurements behind it).
 *
 * Training: the paper's SGD (lr 0.01, batch 64) on the 8000 bundled training
 * images is 125 steps an epoch, so 24 epochs (~3000 steps, ~2 s) cover about
 * the paper's first three epochs on the full MNIST; a checkpoint every 3
 * epochs gives 9 checkpoints.
 *
 * Probe: t, base_lr, c_h, N and B_eval stay at the paper's values.  A step
 * costs the gradient batch (~1.8 ms on one core at B_grad = 256, ~6 ms at
 * the paper's 1024) plus the evaluation of N*B_eval = 32 768 draws (~20 ms;
 * the MLP adapter runs each distinct example of the 8000 once).  Evaluating
 * only every 8th step brings a step to ~4.5 ms; the tail still holds 125
 * evaluations per chain, and with N = 512 the noise correction SIVE
 * subtracts is small (C ~ 1800 vs ~14 000 at N = 64), so the estimate is
 * more precise than with a smaller N evaluated more often at the same cost
 * (4 chains, epoch 24: MCSE 206 at N 512 / stride 8, 386 at N 128 /
 * stride 4, 516 at N 64 / stride 2; the spread over chains, set by the
 * chain length, was the same for all).  With only 2000 steps the chains
 * started from early checkpoints are still descending after 30 % of the
 * run, which inflates the variance; a burn-in of one half removes most of
 * that (epoch 0: SIVE 13 200 with alpha 0.3, 5 000 with 0.5, 4 400 with
 * 8000 steps).  Two chains run in parallel on two cores.  With 2000 steps
 * (103 s for the whole demo) the two chains disagreed by +-1300 at epoch
 * 24; 4000 steps halve that (+-500) for ~3 minutes on the idle 2-core
 * test machine. */
#define DEMO_EPOCHS 24
#define DEMO_EVERY 3
#define DEMO_STEPS 4000
#define DEMO_BURN_IN 0.5
#define DEMO_STRIDE 8
#define DEMO_GROUPS 512
#define DEMO_EVAL_BATCH 64
#define DEMO_GRAD_BATCH 256
#define DEMO_CHAINS 2

enum { DM_OUT = 600, DM_QUICK, DM_DATA, DM_NO_PLOT, DM_QUIET, DM_HELP };

static const char demo_usage[] =
    "usage: sive demo [--out DIR] [--quick] [--data DIR] [--no-plot] [--quiet]\n"
    "Prints the paper's toy Table 1, then trains the reference MLP on the bundled\n"
    "MNIST digits and tracks its LLC along training with a reduced budget,\n"
    "writing DIR/trajectory.csv, .json and .png (default DIR: demo-out).\n"
    "  --quick             a much smaller budget (seconds; for smoke tests)\n";

int cmd_demo(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, 0, DM_OUT}, {"quick", no_argument, 0, DM_QUICK},
        {"data", required_argument, 0, DM_DATA}, {"no-plot", no_argument, 0, DM_NO_PLOT},
        {"quiet", no_argument, 0, DM_QUIET},     {"help", no_argument, 0, DM_HELP},
        {0, 0, 0, 0}};
    const char *out = "demo-out", *data = NULL;
    int quick = 0, quiet = 0, plot = 1, o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (o) {
        case DM_OUT:
            if (!*optarg) {
                fprintf(stderr, "sive demo: --out expects a directory\n");
                return EXIT_USAGE;
            }
            out = optarg;
            break;
        case DM_QUICK: quick = 1; break;
        case DM_DATA: data = optarg; break;
        case DM_NO_PLOT: plot = 0; break;
        case DM_QUIET: quiet = 1; break;
        case DM_HELP: fputs(demo_usage, stdout); return 0;
        default: fputs(demo_usage, stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sive demo: unexpected argument '%s'\n%s", argv[optind], demo_usage);
        return EXIT_USAGE;
    }
    double t0 = cli_now();
    int cpus = cli_cpus();

    /* 1. toy Table 1 */
    printf("=== 1. Toy models: the paper's Table 1%s ===\n\n",
           quick ? " (--quick: 20 000 steps instead of 100 000)" : "");
    fflush(stdout);
    toy_config cfg[2];
    toy_report rep[2];
    memset(rep, 0, sizeof rep);
    for (int i = 0; i < 2; i++) {
        toy_defaults(&cfg[i], i + 1);
        cfg[i].threads = cpus;
        if (quick)
            cfg[i].steps = 20000;
        char err[512] = "";
        int rc = toy_run(&cfg[i], &rep[i], err, sizeof err);
        if (rc) {
            fprintf(stderr, "sive demo: toy model k%d: %s (%s)\n", i + 1, err, sive_strerror(rc));
            for (int j = 0; j <= i; j++)
                toy_report_free(&rep[j]);
            return EXIT_RUN;
        }
    }
    toy_print_table(stdout, cfg, rep, 2);
    toy_report_free(&rep[0]);
    toy_report_free(&rep[1]);
    printf("(%.1f s)\n\n", cli_now() - t0);

    /* 2. a short trajectory on the bundled digits */
    trajectory_cfg c;
    memset(&c, 0, sizeof c);
    train_defaults(&c.train);
    probe_defaults(&c.probe);
    c.train.out_dir = out;
    c.train.data_dir = data;
    c.train.quiet = c.probe.quiet = quiet;
    c.plot = plot;
    c.format = FMT_TABLE;
    c.train.epochs = quick ? 2 : DEMO_EPOCHS;
    c.train.every = quick ? 1 : DEMO_EVERY;
    c.probe.steps = quick ? 300 : DEMO_STEPS;
    c.probe.burn_in = DEMO_BURN_IN;
    c.probe.stride = quick ? 1 : DEMO_STRIDE;
    c.probe.groups = quick ? 16 : DEMO_GROUPS;
    c.probe.eval_batch = quick ? 32 : DEMO_EVAL_BATCH;
    c.probe.grad_batch = quick ? 128 : DEMO_GRAD_BATCH;
    c.probe.chains = quick ? 2 : DEMO_CHAINS;
    c.probe.threads = cpus < c.probe.chains ? cpus : c.probe.chains;
    c.probe.blis_threads = 1;
    char note[512];
    snprintf(note, sizeof note,
             "demo%s: %lld epochs, a checkpoint every %lld; M = %lld steps (paper 100000), "
             "burn-in %g (paper 0.3), eval stride %lld (paper 1), B_grad = %lld (paper 1024), "
             "%lld chains (paper 5); t, base_lr, c_h, N = %lld and B_eval = %lld as in the paper",
             quick ? " --quick" : "", (long long)c.train.epochs, (long long)c.train.every,
             (long long)c.probe.steps, c.probe.burn_in, (long long)c.probe.stride,
             (long long)c.probe.grad_batch, (long long)c.probe.chains, (long long)c.probe.groups,
             (long long)c.probe.eval_batch);
    c.budget_note = note;
    printf("=== 2. MNIST: LLC along an SGD trajectory (the paper's Section 4.2, reduced "
           "budget) ===\n\n");
    fflush(stdout);
    int status = trajectory_run(&c);
    printf("\ndemo finished in %.0f s\n", cli_now() - t0);
    return status;
}
