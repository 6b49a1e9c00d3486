/* `sive trajectory`: train, probe every checkpoint, and compare the three
 * operational LLC estimators of the paper's Section 4.2 along training:
 *  - Online:        t (mean_T L - min_T L) of each chain (SIVE_STAT_ONLINE_MEAN);
 *  - Retrospective: t (mean_T L - L*_c), L*_c the minimum tail loss of chain c
 *                   at the FINAL checkpoint, so it can only be computed once
 *                   every checkpoint was probed;
 *  - SIVE.
 * Each is a mean ± std over chains ("trials"), chain c of every checkpoint
 * using the same seed streams. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PC_SIVE, PC_SIVE_UNCLIPPED, PC_ONLINE, PC_TAIL_MEAN, PC_TAIL_MIN, PC_RETRO,
       PC_NC, PC_COUNT };

typedef struct traj_epoch {
    train_row tr;
    int rc;                 /* probe status                               */
    char err[512];
    double secs;
    int32_t chains_ok;
    uint32_t flags;
    double ess, rhat, mcse, nc, nc_std;
    double mean[PC_COUNT], std[PC_COUNT];
    double *pc;             /* chains x PC_COUNT, NaN for failed chains   */
    char *health;
} traj_epoch;

static double *pcv(const traj_epoch *e, int32_t chain, int k) { return &e->pc[chain * PC_COUNT + k]; }

static void collect(traj_epoch *e, const sive_result *r, int32_t K)
{
    static const sive_stat from[PC_COUNT] = {
        [PC_SIVE] = SIVE_STAT_SIVE, [PC_SIVE_UNCLIPPED] = SIVE_STAT_SIVE_UNCLIPPED,
        [PC_ONLINE] = SIVE_STAT_ONLINE_MEAN, [PC_TAIL_MEAN] = SIVE_STAT_TAIL_MEAN_LOSS,
        [PC_TAIL_MIN] = SIVE_STAT_TAIL_MIN_LOSS, [PC_RETRO] = SIVE_STAT_COUNT_,
        [PC_NC] = SIVE_STAT_NOISE_CORRECTION};
    for (int32_t c = 0; c < K; c++)
        for (int k = 0; k < PC_COUNT; k++)
            *pcv(e, c, k) = r && k != PC_RETRO ? sive_result_stat(r, from[k], c) : NAN;
    double col[4096];
    for (int k = 0; k < PC_COUNT; k++) {
        for (int32_t c = 0; c < K; c++)
            col[c] = *pcv(e, c, k);
        cli_mean_std(col, (size_t)K, &e->mean[k], &e->std[k]);
    }
    if (!r)
        return;
    e->chains_ok = sive_result_chains_ok(r);
    e->flags = sive_result_flags(r);
    e->ess = sive_result_ess(r);
    e->rhat = sive_result_rhat(r);
    e->mcse = sive_result_mcse(r);
    e->nc = sive_result_noise_correction(r);
    e->nc_std = sive_result_noise_correction_std(r);
    e->health = strdup(sive_result_health(r));
}

static void write_table(FILE *f, const trajectory_cfg *c, const traj_epoch *ep, int64_t n)
{
    fprintf(f, "%-6s %-10s %-10s %-8s  %-22s %-22s %-22s\n", "Epoch", "TrainLoss", "TestLoss",
            "TestAcc", "Online", "Retrospective", "SIVE");
    for (int64_t i = 0; i < n; i++) {
        const traj_epoch *e = &ep[i];
        fprintf(f, "%-6lld %-10.4f %-10.4f %6.2f%%   ", (long long)e->tr.epoch, e->tr.train_loss,
                e->tr.test_loss, 100.0 * e->tr.test_acc);
        cli_pm(f, e->mean[PC_ONLINE], e->std[PC_ONLINE], 22);
        fputc(' ', f);
        cli_pm(f, e->mean[PC_RETRO], e->std[PC_RETRO], 22);
        fputc(' ', f);
        cli_pm(f, e->mean[PC_SIVE], e->std[PC_SIVE], 22);
        if (e->rc)
            fprintf(f, " [%s]", sive_strerror(e->rc));
        else if (e->chains_ok < (int32_t)c->probe.chains)
            fprintf(f, " [%d/%lld chains]", (int)e->chains_ok, (long long)c->probe.chains);
        fputc('\n', f);
    }
}

static void write_csv(FILE *f, const traj_epoch *ep, int64_t n)
{
    fputs("epoch,train_loss,test_loss,test_accuracy,online_mean,online_std,"
          "retrospective_mean,retrospective_std,sive_mean,sive_std,sive_unclipped_mean,"
          "sive_unclipped_std,noise_correction,noise_correction_std,mcse,ess,rhat,"
          "tail_mean_loss,chains_ok,flags,status,train_accuracy,train_seconds,probe_seconds\n",
          f);
    for (int64_t i = 0; i < n; i++) {
        const traj_epoch *e = &ep[i];
        fprintf(f, "%lld,%.10g,%.10g,%.10g", (long long)e->tr.epoch, e->tr.train_loss,
                e->tr.test_loss, e->tr.test_acc);
        static const int cols[] = {PC_ONLINE, PC_RETRO, PC_SIVE, PC_SIVE_UNCLIPPED};
        for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
            fprintf(f, ",%.10g,%.10g", e->mean[cols[k]], e->std[cols[k]]);
        fprintf(f, ",%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%d,%u,%d,%.10g,%.4g,%.4g\n", e->nc,
                e->nc_std, e->mcse, e->ess, e->rhat, e->mean[PC_TAIL_MEAN], (int)e->chains_ok,
                (unsigned)e->flags, e->rc, e->tr.train_acc, e->tr.seconds, e->secs);
    }
}

static void json_pm(FILE *f, const char *key, const traj_epoch *e, int k, int32_t K)
{
    fprintf(f, ",\"%s\":{\"mean\":", key);
    cli_json_num(f, e->mean[k]);
    fputs(",\"std\":", f);
    cli_json_num(f, e->std[k]);
    fputs(",\"chains\":[", f);
    for (int32_t c = 0; c < K; c++) {
        if (c)
            fputc(',', f);
        cli_json_num(f, *pcv(e, c, k));
    }
    fputs("]}", f);
}

static void write_json(FILE *f, const trajectory_cfg *c, const traj_epoch *ep, int64_t n,
                       const double *anchor, size_t in, size_t classes)
{
    const train_cfg *t = &c->train;
    int32_t K = (int32_t)c->probe.chains;
    fputs("{\"model\":", f);
    fprintf(f, "{\"layers\":[%zu,%lld,%lld,%zu]},\"training\":{\"epochs\":%lld,\"lr\":%.10g,"
               "\"batch\":%lld,\"seed\":%llu,\"data\":",
            in, (long long)t->h1, (long long)t->h2, classes, (long long)t->epochs, t->lr,
            (long long)t->batch, (unsigned long long)t->seed);
    cli_json_str(f, t->data_dir ? t->data_dir : cli_data_dir());
    fputs("},\"probe\":{", f);
    probe_json_settings(f, &c->probe);
    fputs("},\"budget\":", f);
    if (c->budget_note)
        cli_json_str(f, c->budget_note);
    else
        fputs("null", f);
    fputs(",\"retrospective_anchor\":[", f);
    for (int32_t k = 0; k < K; k++) {
        if (k)
            fputc(',', f);
        cli_json_num(f, anchor[k]);
    }
    fputs("],\"epochs\":[", f);
    for (int64_t i = 0; i < n; i++) {
        const traj_epoch *e = &ep[i];
        fprintf(f, "%s\n{\"epoch\":%lld,\"checkpoint\":", i ? "," : "", (long long)e->tr.epoch);
        cli_json_str(f, e->tr.path);
        static const struct { const char *k; int idx; } dbl[] = {{"train_loss", 0}, {"test_loss", 1},
            {"train_accuracy", 2}, {"test_accuracy", 3}};
        double v[4] = {e->tr.train_loss, e->tr.test_loss, e->tr.train_acc, e->tr.test_acc};
        for (size_t j = 0; j < 4; j++) {
            fprintf(f, ",\"%s\":", dbl[j].k);
            cli_json_num(f, v[dbl[j].idx]);
        }
        json_pm(f, "online", e, PC_ONLINE, K);
        json_pm(f, "retrospective", e, PC_RETRO, K);
        json_pm(f, "sive", e, PC_SIVE, K);
        json_pm(f, "sive_unclipped", e, PC_SIVE_UNCLIPPED, K);
        json_pm(f, "tail_mean_loss", e, PC_TAIL_MEAN, K);
        json_pm(f, "tail_min_loss", e, PC_TAIL_MIN, K);
        fputs(",\"noise_correction\":", f);
        cli_json_num(f, e->nc);
        fputs(",\"noise_correction_std\":", f);
        cli_json_num(f, e->nc_std);
        fputs(",\"mcse\":", f);
        cli_json_num(f, e->mcse);
        fputs(",\"ess\":", f);
        cli_json_num(f, e->ess);
        fputs(",\"rhat\":", f);
        cli_json_num(f, e->rhat);
        fprintf(f, ",\"chains_ok\":%d,\"flags\":%u,\"status\":%d,\"error\":", (int)e->chains_ok,
                (unsigned)e->flags, e->rc);
        if (e->rc)
            cli_json_str(f, e->err);
        else
            fputs("null", f);
        fputs(",\"health\":", f);
        cli_json_lines(f, e->health);
        fputs(",\"train_seconds\":", f);
        cli_json_num(f, e->tr.seconds);
        fputs(",\"probe_seconds\":", f);
        cli_json_num(f, e->secs);
        fputc('}', f);
    }
    fputs("]}\n", f);
}

/* Write through a temporary file + rename, so a reader never sees half. */
static int write_file(const char *dir, const char *name,
                      void (*fn)(FILE *, const trajectory_cfg *, const traj_epoch *, int64_t,
                                 const double *, size_t, size_t),
                      const trajectory_cfg *c, const traj_epoch *ep, int64_t n,
                      const double *anchor, size_t in, size_t classes)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "sive trajectory: cannot write %s: %s\n", tmp, strerror(errno));
        return -1;
    }
    fn(f, c, ep, n, anchor, in, classes);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "sive trajectory: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void csv_writer(FILE *f, const trajectory_cfg *c, const traj_epoch *ep, int64_t n,
                       const double *a, size_t in, size_t cl)
{
    (void)c, (void)a, (void)in, (void)cl;
    write_csv(f, ep, n);
}

int trajectory_run(const trajectory_cfg *c)
{
    const train_cfg *t = &c->train;
    const probe_cfg *pc = &c->probe;
    const int32_t K = (int32_t)pc->chains;
    const int64_t cap = t->epochs + 1;
    int64_t n = cap; /* checkpoints: fewer with --every */
    const int quiet = t->quiet;
    if (cli_mkdirs(t->out_dir))
        return EXIT_RUN;
    sive_dataset *train = NULL, *test = NULL;
    if (cli_open_data("sive trajectory", t->data_dir, &train, &test, quiet))
        return EXIT_RUN;
    progress_catch_sigint();

    int status = 0;
    traj_epoch *ep = calloc((size_t)cap, sizeof *ep);
    train_row *rows = calloc((size_t)cap, sizeof *rows);
    double *anchor = calloc((size_t)K, sizeof *anchor);
    progress *pg = progress_new(!quiet);
    char err[1024] = "";
    int rc = SIVE_E_NOMEM;
    if (ep && rows && anchor) {
        rc = SIVE_OK;
        for (int64_t i = 0; i < cap && !rc; i++)
            if (!(ep[i].pc = malloc((size_t)K * PC_COUNT * sizeof(double))))
                rc = SIVE_E_NOMEM;
    }
    if (rc) {
        fprintf(stderr, "sive trajectory: out of memory\n");
        status = EXIT_RUN;
        goto out;
    }

    /* 1. train */
    double t0 = cli_now();
    if (!quiet)
        fprintf(stderr, "sive trajectory: training %lld epochs (lr %g, batch %lld, seed %llu)\n",
                (long long)t->epochs, t->lr, (long long)t->batch, (unsigned long long)t->seed);
    rc = train_run(t, train, test, quiet ? NULL : stderr, rows, &n, err, sizeof err);
    if (rc) {
        fprintf(stderr, "sive trajectory: %s (%s)\n", err, sive_strerror(rc));
        status = rc == SIVE_E_CANCELLED ? EXIT_INTERRUPTED : EXIT_RUN;
        goto out;
    }
    double train_secs = cli_now() - t0;

    /* 2. probe every checkpoint, from its file */
    if (!quiet) {
        fputs("sive trajectory: probing every checkpoint: ", stderr);
        probe_print_settings(stderr, pc);
        fputc('\n', stderr);
    }
    size_t in = 0, classes = 0;
    double probe_t0 = cli_now();
    for (int64_t i = 0; i < n; i++) {
        traj_epoch *e = &ep[i];
        e->tr = rows[i];
        sive_mlp *m = NULL;
        float *theta = NULL;
        sive_result *r = NULL;
        e->rc = sive_checkpoint_load(e->tr.path, &m, &theta, NULL);
        if (e->rc) {
            snprintf(e->err, sizeof e->err, "%s", sive_last_errmsg());
        } else {
            sive_mlp_sizes(m, &in, NULL, NULL, &classes);
            char label[64];
            snprintf(label, sizeof label, "epoch %lld/%lld", (long long)e->tr.epoch,
                     (long long)t->epochs);
            e->rc = probe_run(pc, m, theta, train, pg, label, &r, &e->secs, e->err,
                              sizeof e->err);
        }
        collect(e, r, K);
        sive_result_free(r);
        sive_free(theta);
        sive_mlp_free(m);
        if (e->rc == SIVE_E_CANCELLED && progress_interrupted()) {
            fprintf(stderr, "sive trajectory: interrupted\n");
            status = EXIT_INTERRUPTED;
            goto out;
        }
        if (e->rc) {
            fprintf(stderr, "sive trajectory: epoch %lld: %s (%s)\n", (long long)e->tr.epoch, e->err,
                    sive_strerror(e->rc));
            status = EXIT_RUN;
        } else if (!quiet) {
            fprintf(stderr, "  epoch %lld: SIVE %.2f, Online %.2f, tail loss %.5f (%.1f s)\n",
                    (long long)e->tr.epoch, e->mean[PC_SIVE], e->mean[PC_ONLINE], e->mean[PC_TAIL_MEAN],
                    e->secs);
        }
    }
    double probe_secs = cli_now() - probe_t0;

    /* 3. the retrospective anchor of chain c: its minimum tail loss at the
     *    final checkpoint; then every estimator's mean ± std over chains */
    const traj_epoch *last = &ep[n - 1];
    for (int32_t k = 0; k < K; k++)
        anchor[k] = *pcv(last, k, PC_TAIL_MIN);
    double *col = malloc((size_t)K * sizeof *col);
    if (!col) {
        fprintf(stderr, "sive trajectory: out of memory\n");
        status = EXIT_RUN;
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        traj_epoch *e = &ep[i];
        for (int32_t k = 0; k < K; k++)
            *pcv(e, k, PC_RETRO) = pc->t * (*pcv(e, k, PC_TAIL_MEAN) - anchor[k]);
        for (int j = 0; j < PC_COUNT; j++) {
            for (int32_t k = 0; k < K; k++)
                col[k] = *pcv(e, k, j);
            cli_mean_std(col, (size_t)K, &e->mean[j], &e->std[j]);
        }
    }
    free(col);

    /* 4. report */
    int to_files = write_file(t->out_dir, "trajectory.csv", csv_writer, c, ep, n, anchor, in,
                              classes) |
                   write_file(t->out_dir, "trajectory.json", write_json, c, ep, n, anchor, in,
                              classes);
    if (to_files)
        status = EXIT_RUN;
    if (c->format == FMT_JSON) {
        write_json(stdout, c, ep, n, anchor, in, classes);
    } else if (c->format == FMT_CSV) {
        write_csv(stdout, ep, n);
    } else {
        printf("LLC along the SGD trajectory: mean ± std over %d chains (trials)\n", (int)K);
        printf("model %zu-%lld-%lld-%zu, %zu training / %zu test images, SGD lr %g batch %lld, "
               "seed %llu\n",
               in, (long long)t->h1, (long long)t->h2, classes, sive_dataset_count(train),
               sive_dataset_count(test), t->lr, (long long)t->batch,
               (unsigned long long)t->seed);
        fputs("probe: ", stdout);
        probe_print_settings(stdout, pc);
        fputc('\n', stdout);
        if (c->budget_note)
            printf("budget: %s\n", c->budget_note);
        printf("Retrospective anchors each chain at its minimum tail loss at epoch %lld.\n\n",
               (long long)t->epochs);
        write_table(stdout, c, ep, n);
        printf("\ntraining %.1f s, probes %.1f s\n", train_secs, probe_secs);
    }
    fflush(stdout);

    int plotted = 1;
    if (c->plot && !to_files) {
        plotted = plot_trajectory(t->out_dir, quiet);
        if (plotted < 0)
            status = EXIT_RUN;
    }
    FILE *note = c->format == FMT_TABLE ? stdout : stderr;
    if (c->format == FMT_TABLE || !quiet) {
        fprintf(note, "wrote %s/trajectory.csv, %s/trajectory.json", t->out_dir, t->out_dir);
        if (plotted == 0)
            fprintf(note, ", %s/trajectory.png", t->out_dir);
        fprintf(note, " and %lld checkpoints %s/epoch_<E>.ckpt\n", (long long)n, t->out_dir);
    }

out:
    if (ep)
        for (int64_t i = 0; i < cap; i++) {
            free(ep[i].pc);
            free(ep[i].health);
        }
    free(ep);
    free(rows);
    free(anchor);
    progress_free(pg);
    sive_dataset_free(train);
    sive_dataset_free(test);
    return status;
}

/* ------------------------------------------------------------------ */

enum { TJ_FORMAT = 500, TJ_NO_PLOT, TJ_QUIET, TJ_HELP };

static const char traj_usage_head[] =
    "usage: sive trajectory --epochs E [--data DIR] [--out DIR] [--seed S]\n"
    "                       [probe options] [--format table|json|csv] [--no-plot]\n"
    "                       [--quiet]\n"
    "Trains the reference MLP for E epochs (checkpoints epoch_0 ... epoch_E in\n"
    "--out, default trajectory-out), probes every checkpoint, and reports per\n"
    "epoch the train and test loss and the Online, Retrospective and SIVE\n"
    "estimates (mean ± std over chains) on stdout and in DIR/trajectory.csv and\n"
    "DIR/trajectory.json; draws DIR/trajectory.png when gnuplot is installed.\n"
    "  --format F          stdout format: table (default), json or csv\n"
    "  --no-plot           do not run gnuplot\n"
    "  --quiet             no progress bar or notes on stderr\n";

int cmd_trajectory(int argc, char **argv)
{
    static const struct option own[] = {
        {"format", required_argument, 0, TJ_FORMAT}, {"no-plot", no_argument, 0, TJ_NO_PLOT},
        {"quiet", no_argument, 0, TJ_QUIET},         {"help", no_argument, 0, TJ_HELP},
        {0, 0, 0, 0}};
    struct option tmp[48], opts[48];
    cli_opts_cat(tmp, 48, train_longopts, probe_longopts);
    cli_opts_cat(opts, 48, tmp, own);
    trajectory_cfg c;
    memset(&c, 0, sizeof c);
    train_defaults(&c.train);
    c.train.out_dir = "trajectory-out";
    probe_defaults(&c.probe);
    c.plot = 1;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int h = train_option(&c.train, o, optarg);
        if (!h)
            h = probe_option(&c.probe, o, optarg);
        if (h < 0)
            return EXIT_USAGE;
        if (h)
            continue;
        switch (o) {
        case TJ_FORMAT: if (cli_format(optarg, &c.format)) return EXIT_USAGE; break;
        case TJ_NO_PLOT: c.plot = 0; break;
        case TJ_QUIET: c.train.quiet = c.probe.quiet = 1; break;
        case TJ_HELP:
            fputs(traj_usage_head, stdout);
            fputs(train_usage_opts, stdout);
            fputs(probe_usage_opts, stdout);
            return 0;
        default: fputs(traj_usage_head, stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sive trajectory: unexpected argument '%s'\n%s", argv[optind],
                traj_usage_head);
        return EXIT_USAGE;
    }
    if (c.train.epochs < 1) {
        fprintf(stderr, "sive trajectory: --epochs E (at least 1) is required\n%s",
                traj_usage_head);
        return EXIT_USAGE;
    }
    c.probe.seed = c.train.seed;
    return trajectory_run(&c);
}
