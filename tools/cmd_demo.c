/* `sive demo`: what the README's first command ends with.
 *  1. the toy Table 1 at the paper's settings (both models, ~2 s);
 *  2. a short MNIST trajectory on the bundled digits with a reduced probe
 *     budget (see DEMO_* below), written to --out with its plot. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The demo budget (docs/cli.md has the measurements behind it).
 *
 * Training: the paper's SGD (lr 0.01, batch 64) on the 8000 bundled training
 * images is 125 steps an epoch, so 24 epochs (~3000 steps, ~2 s) cover about
 * the paper's first three epochs on the full MNIST; a checkpoint every 4
 * epochs gives 7 checkpoints.
 *
 * Probe: what the chain samples stays the paper's (t, base_lr, c_h,
 * B_grad = 1024, burn-in 0.3); only the cost of measuring it is cut.  The
 * evaluation uses control variates (loss differences to theta*, whose
 * noise is an order of magnitude below that of raw losses on these
 * checkpoints: docs/performance.md), so N = 64 groups evaluated every 4th
 * step (1/32 of the paper's draws) measure the variance about as precisely
 * per step as the paper's N = 512 every step (0.29-0.39 of its
 * work-normalised variance on this data, docs/performance.md section 10);
 * a step then costs mostly the gradient batch (~7 ms on one core).  M = 4000 (paper 10^5)
 * and 2 chains keep the demo near 10 minutes of CPU (docs/cli.md); chains this short
 * are not converged (docs/results.md has the M sweep), which the health
 * flags say. */
#define DEMO_EPOCHS 24
#define DEMO_EVERY 4
#define DEMO_STEPS 4000
#define DEMO_BURN_IN 0.3
#define DEMO_STRIDE 4
#define DEMO_GROUPS 64
#define DEMO_EVAL_BATCH 64
#define DEMO_GRAD_BATCH 1024
#define DEMO_CONTROL_VARIATE 1
#define DEMO_CHAINS 2

enum { DM_OUT = 600, DM_QUICK, DM_DATA, DM_NO_PLOT, DM_QUIET, DM_HELP };

static const char demo_usage[] =
    "usage: sive demo [--out DIR] [--quick] [--data DIR] [--no-plot] [--quiet]\n"
    "Prints the paper's toy Table 1, then trains the reference MLP on the bundled\n"
    "MNIST digits and tracks its LLC along training with a reduced budget,\n"
    "writing DIR/trajectory.csv, .json and .png (default DIR: demo-out).\n"
    "  --quick             a much smaller budget (seconds; for smoke tests)\n";

/* Parse argv; returns -1 to go on, else the exit status. */
static int demo_parse(int argc, char **argv, const char **out, const char **data, int *quick,
                      int *quiet, int *plot)
{
    static const struct option opts[] = {
        {"out", required_argument, 0, DM_OUT}, {"quick", no_argument, 0, DM_QUICK},
        {"data", required_argument, 0, DM_DATA}, {"no-plot", no_argument, 0, DM_NO_PLOT},
        {"quiet", no_argument, 0, DM_QUIET},     {"help", no_argument, 0, DM_HELP},
        {0, 0, 0, 0}};
    int o;
    optind = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        switch (o) {
        case DM_OUT:
            if (!*optarg) {
                fprintf(stderr, "%s: --out expects a directory\n", cli_cmd);
                return EXIT_USAGE;
            }
            *out = optarg;
            break;
        case DM_QUICK: *quick = 1; break;
        case DM_DATA: *data = optarg; break;
        case DM_NO_PLOT: *plot = 0; break;
        case DM_QUIET: *quiet = 1; break;
        case DM_HELP: fputs(demo_usage, stdout); return 0;
        default: fputs(demo_usage, stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n%s", cli_cmd, argv[optind], demo_usage);
        return EXIT_USAGE;
    }
    return -1;
}

/* 1. the toy Table 1; returns an exit status. */
static int demo_toy(int quick, int cpus)
{
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
            fprintf(stderr, "%s: toy model k%d: %s (%s)\n", cli_cmd, i + 1, err, sive_strerror(rc));
            for (int j = 0; j <= i; j++)
                toy_report_free(&rep[j]);
            return EXIT_RUN;
        }
    }
    toy_print_table(stdout, cfg, rep, 2);
    toy_report_free(&rep[0]);
    toy_report_free(&rep[1]);
    return 0;
}

/* The demo's probe budget (the rest is the library's defaults, the paper's
 * DNN operating point: t, base_lr, c_h). */
static const struct {
    sive_option opt;
    const char *label;
    double full, quick;
} demo_budget[] = {
    {SIVE_OPT_STEPS, "M", DEMO_STEPS, 300},
    {SIVE_OPT_BURN_IN, "burn-in", DEMO_BURN_IN, DEMO_BURN_IN},
    {SIVE_OPT_EVAL_STRIDE, "eval stride", DEMO_STRIDE, 1},
    {SIVE_OPT_GROUPS, "N", DEMO_GROUPS, 16},
    {SIVE_OPT_EVAL_BATCH, "B_eval", DEMO_EVAL_BATCH, 32},
    {SIVE_OPT_GRAD_BATCH, "B_grad", DEMO_GRAD_BATCH, 128},
    {SIVE_OPT_CONTROL_VARIATE, "control variates", DEMO_CONTROL_VARIATE, 1},
    {SIVE_OPT_CHAINS, "chains", DEMO_CHAINS, 2},
    /* not set: printed against the paper too */
    {SIVE_OPT_T, "t", NAN, NAN},
    {SIVE_OPT_BASE_LR, "base_lr", NAN, NAN},
    {SIVE_OPT_C_H, "c_h", NAN, NAN}};
enum { DEMO_BUDGET_N = sizeof demo_budget / sizeof demo_budget[0] };

/* The demo's probe budget, set through the library's setters so that the
 * library checks it like any user's value; returns 0 or -1 (message
 * printed). */
static int demo_probe(probe_cfg *p, int quick, int cpus)
{
    for (size_t i = 0; i < DEMO_BUDGET_N; i++) {
        double v = quick ? demo_budget[i].quick : demo_budget[i].full;
        if (isnan(v))
            continue;
        int rc = sive_option_info_get(demo_budget[i].opt)->type == SIVE_TYPE_INT
                     ? sive_probe_set_int(p->p, demo_budget[i].opt, (int64_t)v)
                     : sive_probe_set_double(p->p, demo_budget[i].opt, v);
        if (rc) {
            fprintf(stderr, "%s: %s\n", cli_cmd, sive_probe_errmsg(p->p));
            return -1;
        }
    }
    int64_t chains = cli_opt_int(p->p, SIVE_OPT_CHAINS);
    sive_probe_set_int(p->p, SIVE_OPT_THREADS, cpus < chains ? cpus : chains);
    p->threads_set = 1;
    p->blis_threads = 1;
    return 0;
}

/* "M = 4000 (paper 100000), ...; as in the paper: N = 512, ...": each
 * budget setting against the library's default, which is the paper's DNN
 * operating point (N = 512, B_eval = 64, B_grad = 1024, ...). */
static void demo_note(char *buf, size_t len, const sive_probe *p)
{
    char same[256] = "";
    size_t n = 0, m = 0;
    for (size_t i = 0; i < DEMO_BUDGET_N && n < len; i++) {
        const sive_option_info *in = sive_option_info_get(demo_budget[i].opt);
        int is_int = in->type == SIVE_TYPE_INT;
        double v = is_int ? (double)cli_opt_int(p, in->id) : cli_opt_double(p, in->id);
        double paper = is_int ? (double)in->int_default : in->double_default;
        if (v == paper)
            m += (size_t)snprintf(same + m, m < sizeof same ? sizeof same - m : 0, "%s%s = %g",
                                  m ? ", " : "", demo_budget[i].label, v);
        else
            n += (size_t)snprintf(buf + n, len - n, "%s%s = %g (paper %g)", n ? ", " : "",
                                  demo_budget[i].label, v, paper);
    }
    if (n < len && m)
        snprintf(buf + n, len - n, "; as in the paper: %s", same);
}

/* 2. a short trajectory on the bundled digits; returns an exit status. */
static int demo_trajectory(trajectory_cfg *c, int quick, int cpus)
{
    c->train.epochs = quick ? 2 : DEMO_EPOCHS;
    c->train.every = quick ? 1 : DEMO_EVERY;
    if (demo_probe(&c->probe, quick, cpus))
        return EXIT_RUN;
    char budget[512], note[700];
    demo_note(budget, sizeof budget, c->probe.p);
    snprintf(note, sizeof note, "demo%s: %lld epochs, a checkpoint every %lld; %s",
             quick ? " --quick" : "", (long long)c->train.epochs, (long long)c->train.every,
             budget);
    c->budget_note = note;
    printf("=== 2. MNIST: LLC along an SGD trajectory (the paper's Section 4.2, reduced "
           "budget) ===\n\n");
    fflush(stdout);
    return trajectory_run(c);
}

int cmd_demo(int argc, char **argv)
{
    trajectory_cfg c;
    memset(&c, 0, sizeof c);
    train_defaults(&c.train);
    c.train.out_dir = "demo-out";
    c.format = FMT_TABLE;
    c.plot = 1;
    int quick = 0, quiet = 0;
    int status = demo_parse(argc, argv, &c.train.out_dir, &c.train.data_dir, &quick, &quiet,
                            &c.plot);
    if (status >= 0)
        return status;
    c.train.quiet = quiet;
    double t0 = cli_now();
    int cpus = cli_cpus();
    if ((status = demo_toy(quick, cpus)))
        return status;
    printf("(%.1f s)\n\n", cli_now() - t0);
    if (probe_cfg_init(&c.probe))
        return EXIT_RUN;
    c.probe.quiet = quiet;
    status = demo_trajectory(&c, quick, cpus);
    probe_cfg_free(&c.probe);
    printf("\ndemo finished in %.0f s\n", cli_now() - t0);
    return status;
}
