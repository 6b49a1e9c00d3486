/* `sive trajectory`: train, probe every checkpoint, and compare the three
 * operational LLC estimators of the paper's Section 4.2 along training:
 *  - Online:        t (mean_T L - min_T L) of each chain (SIVE_STAT_ONLINE_MEAN);
 *  - Retrospective: t (mean_T L - L*_c), L*_c the minimum tail loss of chain c
 *                   at the FINAL checkpoint, so it can only be computed once
 *                   every checkpoint was probed (the library's
 *                   sive_retrospective_values());
 *  - SIVE.
 * Each is a mean ± std over chains ("trials"), chain c of every checkpoint
 * using the same seed streams. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PC_SIVE, PC_SIVE_UNCLIPPED, PC_ONLINE, PC_TAIL_MEAN, PC_TAIL_MIN, PC_RETRO,
       PC_NC, PC_COUNT };

/* The per-chain columns kept for every checkpoint: library statistics
 * under their names, and the paper's two operational estimators under the
 * program's (cli_key_name()). */
#define NO_STAT ((sive_stat)-1)
static const struct {
    sive_stat stat;
    int own_key; /* a cli_key, or -1 for the statistic's name */
} pc_def[PC_COUNT] = {
    [PC_SIVE] = {SIVE_STAT_SIVE, -1},
    [PC_SIVE_UNCLIPPED] = {SIVE_STAT_SIVE_UNCLIPPED, -1},
    [PC_ONLINE] = {SIVE_STAT_ONLINE_MEAN, CLI_KEY_ONLINE},
    [PC_TAIL_MEAN] = {SIVE_STAT_TAIL_MEAN_LOSS, -1},
    [PC_TAIL_MIN] = {SIVE_STAT_TAIL_MIN_LOSS, -1},
    [PC_RETRO] = {NO_STAT, CLI_KEY_RETROSPECTIVE},
    [PC_NC] = {SIVE_STAT_NOISE_CORRECTION, -1},
};

static const char *pc_key(int k)
{
    return pc_def[k].own_key >= 0 ? cli_key_name((cli_key)pc_def[k].own_key)
                                  : sive_stat_name(pc_def[k].stat);
}

/* Room for the run's pooled diagnostics (cli_stat_pooled(): library
 * summaries), kept per checkpoint by statistic number. */
enum { MAX_STATS = 64 };

typedef struct traj_epoch {
    train_row tr;
    int rc;                 /* probe status                               */
    char err[512];
    double secs;
    int32_t chains_ok;
    uint32_t flags;
    double pool[MAX_STATS]; /* sive_result_stat(r, s, SIVE_SUMMARY) when pooled */
    double mean[PC_COUNT], std[PC_COUNT];
    double *pc;             /* chains x PC_COUNT, NaN for failed chains   */
    char *health;
    char *stopped;          /* "chain 1: aborted at step 812 of 3000\n"...,
                               one line per chain that did not finish    */
    char *settings;         /* JSON members: the options as the run
                               resolved them (NULL: it did not start)    */
} traj_epoch;

/* Everything one trajectory run holds. */
typedef struct traj_ctx {
    const trajectory_cfg *c;
    sive_dataset *train, *test;
    traj_epoch *ep;
    train_row *rows;
    double *anchor;         /* per chain: the retrospective anchor         */
    int64_t n;              /* checkpoints                                */
    int32_t K;              /* chains                                     */
    size_t in, classes;     /* model sizes (from the checkpoints)         */
    progress *pg;
    double train_secs, probe_secs;
    int64_t n_ckpt;         /* checkpoints written (x->n: those probed)   */
    int interrupted;        /* Ctrl-C: x->n holds what was probed          */
    int lost;               /* mpirun: a unit failed, nothing is written   */
    int share;              /* mpirun: a checkpoint cut between ranks has
                               its radius searched once (rank 0's choice) */
    int data_rc;            /* mpirun, ranks > 0: the data did not open... */
    char data_err[1024];    /* ...and why                                  */
} traj_ctx;

static double *pcv(const traj_epoch *e, int32_t chain, int k) { return &e->pc[chain * PC_COUNT + k]; }

/* Mean and std over chains of every column. */
static void column_stats(traj_epoch *e, int32_t K)
{
    double col[4096]; /* SIVE_OPT_CHAINS is at most 4096 */
    for (int k = 0; k < PC_COUNT; k++) {
        for (int32_t c = 0; c < K && c < 4096; c++)
            col[c] = *pcv(e, c, k);
        cli_mean_std(col, (size_t)(K < 4096 ? K : 4096), &e->mean[k], &e->std[k]);
    }
}

/* The probe's settings as JSON members, as the run r resolved them (r
 * NULL: as given), into a new string (NULL without memory). */
static char *settings_json(const probe_cfg *c, const sive_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    probe_json_settings(m, c, r);
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void collect(traj_epoch *e, const probe_cfg *c, const sive_result *r, int32_t K)
{
    /* the chains that finished, as in the library's summaries (a chain
     * stopped by Ctrl-C is left out of the mean over chains) */
    for (int32_t c = 0; c < K; c++) {
        int ok = r && sive_result_chain_status(r, c, NULL) == SIVE_CHAIN_OK;
        for (int k = 0; k < PC_COUNT; k++)
            *pcv(e, c, k) = ok && k != PC_RETRO ? sive_result_stat(r, pc_def[k].stat, c) : NAN;
    }
    column_stats(e, K);
    for (int s = 0; s < cli_stat_count() && s < MAX_STATS; s++)
        e->pool[s] = sive_result_stat(r, (sive_stat)s, SIVE_SUMMARY); /* NaN without r */
    if (!r)
        return;
    e->chains_ok = sive_result_chains_ok(r);
    e->flags = sive_result_flags(r);
    e->health = strdup(sive_result_health(r));
    e->settings = settings_json(c, r);
    char *buf = NULL, note[300];
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    for (int32_t c = 0; m && c < K; c++)
        if (cli_chain_note(note, sizeof note, r, c))
            fprintf(m, "chain %d: %s\n", (int)c, note);
    if (m && fclose(m) == 0)
        e->stopped = buf;
}

/* The columns of the table on stdout. */
enum { TT_MARK, TT_EPOCH, TT_TRAIN, TT_TEST, TT_ACC, TT_ONLINE, TT_RETRO, TT_SIVE, TT_MCSE,
       TT_ESS, TT_SIVE_ESS, TT_RHAT, TT_FLAGS, TT_COLS };

/* One epoch's row: estimators rounded to their std over chains, the
 * pooled diagnostics, the mark and names of the raised flags. */
static void table_row(cli_table *t, const traj_epoch *e, int32_t K)
{
    char buf[256];
    cli_table_row(t);
    cli_table_set(t, TT_EPOCH, "%lld", (long long)e->tr.epoch);
    cli_table_set(t, TT_TRAIN, "%.4f", e->tr.train_loss);
    cli_table_set(t, TT_TEST, "%.4f", e->tr.test_loss);
    cli_table_set(t, TT_ACC, "%.2f%%", 100.0 * e->tr.test_acc);
    static const int col[3] = {TT_ONLINE, TT_RETRO, TT_SIVE}, pc[3] = {PC_ONLINE, PC_RETRO, PC_SIVE};
    for (int j = 0; j < 3; j++)
        cli_table_set(t, col[j], "%s",
                      cli_round_pm(buf, sizeof buf, e->mean[pc[j]], e->std[pc[j]], 1));
    double mcse = e->pool[SIVE_STAT_MCSE];
    cli_table_set(t, TT_MCSE, "%s", cli_round_pm(buf, sizeof buf, mcse, mcse, 0));
    cli_table_set(t, TT_ESS, "%.0f", e->pool[SIVE_STAT_ESS]);
    cli_table_set(t, TT_SIVE_ESS, "%.0f", e->pool[SIVE_STAT_SIVE_ESS]);
    cli_table_set(t, TT_RHAT, "%.3f", e->pool[SIVE_STAT_RHAT]);
    if (e->flags)
        cli_table_set(t, TT_MARK, CLI_FLAG_MARK);
    cli_flag_names(buf, sizeof buf, e->flags);
    if (e->rc)
        cli_table_set(t, TT_FLAGS, "%s%s[%s]", buf, *buf ? " " : "", sive_strerror(e->rc));
    else if (e->chains_ok < K)
        cli_table_set(t, TT_FLAGS, "%s%s[%d/%d chains]", buf, *buf ? " " : "", (int)e->chains_ok,
                      (int)K);
    else
        cli_table_set(t, TT_FLAGS, "%s", buf);
}

static void write_table(FILE *f, const traj_ctx *x)
{
    static const char *const head[TT_COLS] = {
        "", "Epoch", "TrainLoss", "TestLoss", "TestAcc", "Online", "Retrospective", "SIVE",
        "MCSE", "ESS L̄", "ESS λ̂", "R̂", "flags"};
    static const int right[TT_COLS] = {[TT_EPOCH] = 1, [TT_ACC] = 1, [TT_MCSE] = 1,
                                       [TT_ESS] = 1, [TT_SIVE_ESS] = 1, [TT_RHAT] = 1};
    cli_table t;
    uint32_t flags = 0;
    cli_table_init(&t, TT_COLS, head, right);
    for (int64_t i = 0; i < x->n; i++) {
        table_row(&t, &x->ep[i], x->K);
        flags |= x->ep[i].flags;
    }
    cli_table_print(f, &t, "");
    cli_table_free(&t);
    for (int64_t i = 0, first = 1; i < x->n; i++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "epoch %lld, ", (long long)x->ep[i].tr.epoch);
        if (x->ep[i].stopped && *x->ep[i].stopped && first)
            fputc('\n', f), first = 0;
        cli_print_lines(f, x->ep[i].stopped, prefix);
    }
    if (!flags)
        return;
    fprintf(f, "\n" CLI_FLAG_MARK " raised flags (per epoch with the numbers: \"health\" in "
               "%s/trajectory.json):\n", x->c->train.out_dir);
    cli_flags_legend(f, flags, "  ");
}

/* Columns with mean and std, in the CSV's order (plot.c reads them by
 * position: keep it). */
static const int csv_pm[] = {PC_ONLINE, PC_RETRO, PC_SIVE, PC_SIVE_UNCLIPPED};

static void csv_header(FILE *f)
{
    fputs("epoch,train_loss,test_loss,test_accuracy", f);
    for (size_t k = 0; k < sizeof csv_pm / sizeof csv_pm[0]; k++)
        fprintf(f, ",%s_mean,%s_std", pc_key(csv_pm[k]), pc_key(csv_pm[k]));
    for (int s = 0; s < cli_stat_count() && s < MAX_STATS; s++)
        if (cli_stat_pooled((sive_stat)s))
            fprintf(f, ",%s", sive_stat_name((sive_stat)s));
    fprintf(f, ",%s,chains_ok,flags,health,status,train_accuracy,train_seconds,probe_seconds\n",
            pc_key(PC_TAIL_MEAN));
}

/* 1-based position of column name in the CSV (0: none), for the plot. */
static int csv_column(const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return 0;
    csv_header(m);
    fclose(m);
    int col = 0;
    const char *tok = buf;
    for (int k = 1; tok && *tok && !col; k++) {
        size_t n = strcspn(tok, ",\n");
        if (n == strlen(name) && !strncmp(tok, name, n))
            col = k;
        tok += n + (tok[n] != '\0');
    }
    free(buf);
    return col;
}

static void write_csv(FILE *f, const traj_ctx *x)
{
    csv_header(f);
    for (int64_t i = 0; i < x->n; i++) {
        const traj_epoch *e = &x->ep[i];
        fprintf(f, "%lld,%.10g,%.10g,%.10g", (long long)e->tr.epoch, e->tr.train_loss,
                e->tr.test_loss, e->tr.test_acc);
        for (size_t k = 0; k < sizeof csv_pm / sizeof csv_pm[0]; k++)
            fprintf(f, ",%.10g,%.10g", e->mean[csv_pm[k]], e->std[csv_pm[k]]);
        for (int s = 0; s < cli_stat_count() && s < MAX_STATS; s++)
            if (cli_stat_pooled((sive_stat)s))
                fprintf(f, ",%.10g", e->pool[s]);
        char names[256];
        fprintf(f, ",%.10g,%d,%u,", e->mean[PC_TAIL_MEAN], (int)e->chains_ok, (unsigned)e->flags);
        cli_csv_str(f, cli_flag_names(names, sizeof names, e->flags));
        fprintf(f, ",%d,%.10g,%.4g,%.4g\n", e->rc, e->tr.train_acc, e->tr.seconds, e->secs);
    }
}

static void json_pm(FILE *f, const traj_epoch *e, int k, int32_t K)
{
    fprintf(f, ",\"%s\":{\"mean\":", pc_key(k));
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

static void json_epoch(FILE *f, const traj_epoch *e, int32_t K, const char *requested)
{
    fprintf(f, "{\"epoch\":%lld,\"checkpoint\":", (long long)e->tr.epoch);
    cli_json_str(f, e->tr.path);
    /* what this checkpoint's run resolved and ran, as `sive probe`'s
     * settings; the top-level probe_requested when it did not start */
    fprintf(f, ",\"settings\":{%s}", e->settings ? e->settings : requested);
    const char *key[4] = {"train_loss", "test_loss", "train_accuracy", "test_accuracy"};
    double v[4] = {e->tr.train_loss, e->tr.test_loss, e->tr.train_acc, e->tr.test_acc};
    for (size_t j = 0; j < 4; j++)
        cli_json_member(f, key[j], v[j]);
    static const int pm[] = {PC_ONLINE, PC_RETRO, PC_SIVE, PC_SIVE_UNCLIPPED, PC_TAIL_MEAN,
                             PC_TAIL_MIN};
    for (size_t k = 0; k < sizeof pm / sizeof pm[0]; k++)
        json_pm(f, e, pm[k], K);
    for (int s = 0; s < cli_stat_count() && s < MAX_STATS; s++)
        if (cli_stat_pooled((sive_stat)s))
            cli_json_member(f, sive_stat_name((sive_stat)s), e->pool[s]);
    /* the chain's geometry, as `sive probe` prints it (means over chains):
     * the radius, the tether step, the slope proxy, the displacement */
    static const sive_stat geometry[] = {SIVE_STAT_H, SIVE_STAT_TETHER_STEP,
                                         SIVE_STAT_SLOPE_PROXY, SIVE_STAT_RMS_DISP_REL_H};
    for (size_t g = 0; g < sizeof geometry / sizeof geometry[0]; g++)
        cli_json_member(f, sive_stat_name(geometry[g]), e->pool[geometry[g]]);
    fprintf(f, ",\"chains_ok\":%d,\"flags\":%u,\"flag_names\":", (int)e->chains_ok,
            (unsigned)e->flags);
    cli_json_flags(f, e->flags);
    fprintf(f, ",\"status\":%d,\"error\":", e->rc);
    if (e->rc)
        cli_json_str(f, e->err);
    else
        fputs("null", f);
    fputs(",\"health\":", f);
    cli_json_lines(f, e->health);
    fputs(",\"stopped_chains\":", f);
    cli_json_lines(f, e->stopped);
    cli_json_member(f, "train_seconds", e->tr.seconds);
    cli_json_member(f, "probe_seconds", e->secs);
    fputc('}', f);
}

static void write_json(FILE *f, const traj_ctx *x)
{
    const train_cfg *t = &x->c->train;
    fprintf(f, "{\"model\":{\"layers\":[%zu,%lld,%lld,%zu]},\"training\":{\"epochs\":%lld,"
               "\"lr\":%.10g,\"batch\":%lld,\"seed\":%llu,\"data\":",
            x->in, (long long)t->h1, (long long)t->h2, x->classes, (long long)t->epochs, t->lr,
            (long long)t->batch, (unsigned long long)t->seed);
    cli_json_str(f, t->data_dir ? t->data_dir : cli_data_dir());
    /* the settings as the runs resolved them (the first checkpoint's run
     * that started; the options as given when none did), then as given
     * (metropolis -1: auto), as `sive probe`'s settings and
     * settings_requested */
    char *requested = settings_json(&x->c->probe, NULL);
    const char *resolved = NULL;
    for (int64_t i = 0; i < x->n && !resolved; i++)
        resolved = x->ep[i].settings;
    const char *given = requested ? requested : "";
    fprintf(f, "},\"probe\":{%s},\"probe_requested\":{%s}", resolved ? resolved : given, given);
    fprintf(f, ",\"interrupted\":%s,\"budget\":", x->interrupted ? "true" : "false");
    if (x->c->budget_note)
        cli_json_str(f, x->c->budget_note);
    else
        fputs("null", f);
    fputs(",\"retrospective_anchor\":[", f);
    for (int32_t k = 0; k < x->K; k++) {
        if (k)
            fputc(',', f);
        cli_json_num(f, x->anchor[k]);
    }
    fputs("],\"epochs\":[", f);
    for (int64_t i = 0; i < x->n; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_epoch(f, &x->ep[i], x->K, given);
    }
    fputs("]}\n", f);
    free(requested);
}

/* Written atomically (cli_out): a reader never sees half a file. */
static int write_file(const traj_ctx *x, const char *name,
                      void (*fn)(FILE *, const traj_ctx *))
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", x->c->train.out_dir, name);
    cli_out *o = NULL;
    FILE *f = cli_out_open(&o, cli_cmd, path);
    if (!f)
        return -1;
    fn(f, x);
    return cli_out_commit(o);
}

/* Room for every checkpoint; returns an exit status (0: go on). */
static int traj_alloc(traj_ctx *x)
{
    const int64_t cap = x->c->train.epochs + 1;
    x->ep = calloc((size_t)cap, sizeof *x->ep);
    x->rows = calloc((size_t)cap, sizeof *x->rows);
    x->anchor = calloc((size_t)x->K, sizeof *x->anchor);
    int ok = x->ep && x->rows && x->anchor;
    for (int64_t i = 0; ok && i < cap; i++)
        ok = (x->ep[i].pc = malloc((size_t)x->K * PC_COUNT * sizeof(double))) != NULL;
    if (!ok)
        fprintf(stderr, "%s: out of memory\n", cli_cmd);
    return ok ? 0 : EXIT_RUN;
}

static void traj_free(traj_ctx *x)
{
    for (int64_t i = 0; x->ep && i <= x->c->train.epochs; i++) {
        free(x->ep[i].pc);
        free(x->ep[i].health);
        free(x->ep[i].stopped);
        free(x->ep[i].settings);
    }
    free(x->ep);
    free(x->rows);
    free(x->anchor);
    progress_free(x->pg);
    sive_dataset_free(x->train);
    sive_dataset_free(x->test);
}

/* 1. train, keeping the checkpoints' rows; returns an exit status. */
static int traj_train(traj_ctx *x)
{
    const train_cfg *t = &x->c->train;
    char err[1024] = "";
    double t0 = cli_now();
    if (!t->quiet)
        fprintf(stderr, "%s: training %lld epochs (lr %g, batch %lld, seed %llu)\n", cli_cmd,
                (long long)t->epochs, t->lr, (long long)t->batch, (unsigned long long)t->seed);
    int rc = train_run(t, x->train, x->test, t->quiet ? NULL : stderr, x->rows, &x->n, err,
                       sizeof err);
    x->train_secs = cli_now() - t0;
    if (!rc)
        return 0;
    fprintf(stderr, "%s: %s (%s)\n", cli_cmd, err, sive_strerror(rc));
    return rc == SIVE_E_CANCELLED ? EXIT_INTERRUPTED : EXIT_RUN;
}

/* Probe checkpoint i from its file into x->ep[i]. */
static void traj_probe_one(traj_ctx *x, int64_t i)
{
    traj_epoch *e = &x->ep[i];
    e->tr = x->rows[i];
    sive_mlp *m = NULL;
    float *theta = NULL;
    sive_result *r = NULL;
    e->rc = sive_checkpoint_load(e->tr.path, &m, &theta, NULL);
    if (e->rc) {
        snprintf(e->err, sizeof e->err, "%s", sive_last_errmsg());
    } else {
        sive_mlp_sizes(m, &x->in, NULL, NULL, &x->classes);
        char label[64];
        snprintf(label, sizeof label, "epoch %lld/%lld", (long long)e->tr.epoch,
                 (long long)x->c->train.epochs);
        e->rc = probe_run(&x->c->probe, m, theta, x->train, x->pg, label, &r, &e->secs, e->err,
                          sizeof e->err);
    }
    collect(e, &x->c->probe, r, x->K);
    sive_result_free(r);
    sive_free(theta);
    sive_mlp_free(m);
}

/* The line on stderr of a probed epoch; EXIT_RUN for a failed one. */
static int note_epoch(const traj_ctx *x, const traj_epoch *e)
{
    if (e->rc) {
        fprintf(stderr, "%s: epoch %lld: %s (%s)\n", cli_cmd, (long long)e->tr.epoch, e->err,
                sive_strerror(e->rc));
        return EXIT_RUN;
    }
    if (!x->c->train.quiet) {
        char a[96], b[96], names[256];
        fprintf(stderr, "  epoch %lld: SIVE %s, Online %s, tail loss %.5f (%.1f s)%s%s\n",
                (long long)e->tr.epoch,
                cli_round_pm(a, sizeof a, e->mean[PC_SIVE], e->std[PC_SIVE], 1),
                cli_round_pm(b, sizeof b, e->mean[PC_ONLINE], e->std[PC_ONLINE], 1),
                e->mean[PC_TAIL_MEAN], e->secs, e->flags ? " " CLI_FLAG_MARK " " : "",
                cli_flag_names(names, sizeof names, e->flags));
    }
    return 0;
}

static void announce_probes(const traj_ctx *x)
{
    if (x->c->train.quiet)
        return;
    fprintf(stderr, "%s: probing every checkpoint: ", cli_cmd);
    probe_print_settings(stderr, &x->c->probe);
    fputc('\n', stderr);
}

/* 2. probe every checkpoint, from its file; returns an exit status. */
static int traj_probe(traj_ctx *x)
{
    int status = 0;
    announce_probes(x);
    double t0 = cli_now();
    x->n_ckpt = x->n;
    progress_plan(x->pg, cli_cmd, "checkpoints", x->n);
    for (int64_t i = 0; i < x->n; i++) {
        traj_probe_one(x, i);
        const traj_epoch *e = &x->ep[i];
        if (e->rc == SIVE_E_CANCELLED && progress_interrupted()) {
            /* keep what was done: the epochs probed and this one's
             * finished chains are reported and written */
            fprintf(stderr, "%s: interrupted at epoch %lld\n", cli_cmd,
                    (long long)e->tr.epoch);
            x->n = i + 1;
            x->interrupted = 1;
            status = EXIT_INTERRUPTED;
            break;
        }
        if (note_epoch(x, e))
            status = EXIT_RUN;
    }
    x->probe_secs = cli_now() - t0;
    return status;
}

/* ------------------------------------------------------------------ */
/* 2'. Under mpirun: (checkpoint, chain) units over the ranks          */
/* ------------------------------------------------------------------ */

/* Unit u = i*K + c is chain c of checkpoint i.  Every unit is the same
 * work (M steps), so rank r takes the contiguous block [U r/R, U (r+1)/R)
 * of the U units: blocks differ by at most one unit.  A block cut at the
 * checkpoints is a list of pieces, each one probe run of a chain range of
 * one checkpoint.  Chain c draws the same random streams in any piece,
 * so the merged pieces are the one-process result bit for bit.
 *
 * With a radius from the loss (x->share), a checkpoint cut between ranks
 * would have every piece repeat the same search.  Its chain 0 is then a
 * piece of its own (PIECE_SEARCHES), run first; its result goes to every
 * rank, and the checkpoint's other pieces (PIECE_TAKES) run at its radius
 * (sive_probe_set_radius_from()).  A checkpoint in one piece searches in
 * it, once, as before. */
enum { PIECE_ALONE, PIECE_SEARCHES, PIECE_TAKES };

typedef struct traj_piece {
    int64_t ckpt;
    int32_t begin, end;  /* chains [begin, end)                           */
    int rank;
    int role;            /* PIECE_*                                        */
    char *ck;            /* ranks > 0: the checkpoint's bytes from rank 0, */
    int64_t ck_len;      /* or (ck_bad) rank 0's reason it has none        */
    int ck_bad;
    sive_result *r;      /* rank 0: the piece's result                     */
    char *msg;           /* a packed result (ranks > 0), or why it failed  */
    int64_t len;
    int failed;
    double secs;
} traj_piece;

/* With share, the roles of the pieces of cut checkpoints, chain 0 split
 * off: p has room for one more piece per rank. */
static int64_t plan_share(traj_piece *p, int64_t k)
{
    for (int64_t j = 0; j < k; j++) {
        const int cut = (j + 1 < k && p[j + 1].ckpt == p[j].ckpt) ||
                        (j > 0 && p[j - 1].ckpt == p[j].ckpt);
        if (!cut)
            continue;
        p[j].role = p[j].begin == 0 ? PIECE_SEARCHES : PIECE_TAKES;
        if (p[j].begin == 0 && p[j].end > 1) {
            memmove(&p[j + 2], &p[j + 1], (size_t)(k - j - 1) * sizeof *p);
            p[j + 1] = p[j];
            p[j + 1].begin = 1;
            p[j + 1].role = PIECE_TAKES;
            p[j].end = 1;
            k++;
            j++;
        }
    }
    return k;
}

/* Every rank's pieces, in unit order (so by checkpoint, then rank). */
static traj_piece *plan_pieces(int64_t n, int32_t K, int R, int share, int64_t *count)
{
    /* a block adds one cut, and with share one piece of chain 0 */
    traj_piece *p = calloc((size_t)(n + 2 * R), sizeof *p);
    const int64_t U = n * K;
    int64_t k = 0;
    for (int r = 0; p && r < R; r++) {
        for (int64_t u = U * r / R, hi = U * (r + 1) / R; u < hi;) {
            int64_t i = u / K, end = (i + 1) * K < hi ? (i + 1) * K : hi;
            p[k++] = (traj_piece){.ckpt = i, .begin = (int32_t)(u - i * K),
                                  .end = (int32_t)(end - i * K), .rank = r};
            u = end;
        }
    }
    *count = p && share ? plan_share(p, k) : k;
    return p;
}

static void pieces_free(traj_piece *pc, int64_t np)
{
    for (int64_t k = 0; pc && k < np; k++) {
        free(pc[k].ck);
        free(pc[k].msg);
        sive_result_free(pc[k].r);
    }
    free(pc);
}

/* Mark p failed: "err (status text)" in p->msg ("err" for rc 0). */
static void piece_fail(traj_piece *p, const char *err, int rc)
{
    size_t n = strlen(err) + 64;
    free(p->msg);
    p->failed = 1;
    if ((p->msg = malloc(n)) && rc)
        snprintf(p->msg, n, "%s (%s)", err, sive_strerror(rc));
    else if (p->msg)
        snprintf(p->msg, n, "%s", err);
    p->len = p->msg ? (int64_t)strlen(p->msg) : 0;
}

/* The centre of piece p: rank 0 reads the checkpoint it wrote, the others
 * load the bytes rank 0 sent.  0, or a status with p failed. */
static int piece_load(const traj_ctx *x, traj_piece *p, int rank, sive_mlp **m, float **theta)
{
    char err[1024];
    int rc;
    if (rank == 0) {
        if ((rc = sive_checkpoint_load(x->rows[p->ckpt].path, m, theta, NULL)))
            snprintf(err, sizeof err, "%s", sive_last_errmsg());
    } else if (p->ck_bad) {
        rc = SIVE_E_IO;
        snprintf(err, sizeof err, "rank 0 sent no checkpoint: %s",
                 p->ck ? p->ck : "out of memory");
    } else {
        rc = cli_mpi_unpack_checkpoint(p->ck, p->ck_len, m, theta, err, sizeof err);
    }
    if (rc)
        piece_fail(p, err, rc);
    return rc;
}

/* Probe piece p: its result, or NULL with p failed.  A piece stopped by a
 * callback or a cancel cannot be merged: it fails too. */
static sive_result *piece_run(traj_ctx *x, traj_piece *p, int rank)
{
    sive_mlp *m = NULL;
    float *theta = NULL;
    sive_result *r = NULL;
    if (x->data_rc) {
        piece_fail(p, x->data_err, x->data_rc);
        return NULL;
    }
    if (piece_load(x, p, rank, &m, &theta))
        return NULL;
    sive_probe *sp = x->c->probe.p;
    char err[1024] = "";
    sive_probe_set_int(sp, SIVE_OPT_CHAIN_BEGIN, p->begin);
    sive_probe_set_int(sp, SIVE_OPT_CHAIN_END, p->end);
    int rc = probe_run(&x->c->probe, m, theta, x->train, x->pg, "chains", &r, &p->secs, err,
                       sizeof err);
    sive_probe_set_int(sp, SIVE_OPT_CHAIN_BEGIN, 0); /* the settings shown: the whole run's */
    sive_probe_set_int(sp, SIVE_OPT_CHAIN_END, 0);
    if (rc != SIVE_OK && rc != SIVE_E_DIVERGED) {
        piece_fail(p, err, rc);
        sive_result_free(r);
        r = NULL;
    }
    sive_free(theta);
    sive_mlp_free(m);
    return r;
}

/* Rank 0 tells every rank the number of checkpoints (-1 when the run ends
 * before the probes: status != 0, rank 0 said why), of chains and whether
 * the radius is shared (x->share).  Every rank plans its pieces with rank
 * 0's values, so that all plans, hence all collective calls, agree and no
 * rank waits for a piece that is never sent; a rank started with other
 * options then fails its pieces or the merge names them.  Returns this
 * rank's status. */
static int share_count(traj_ctx *x, int status)
{
    char text[64], *buf = text;
    int64_t len = snprintf(text, sizeof text, "%lld %d %d", status ? -1LL : (long long)x->n,
                           (int)x->K, x->share);
    int is_error = 0;
    if (cli_mpi_bcast(&buf, &len, &is_error))
        return EXIT_RUN;
    if (cli_mpi_rank() == 0)
        return status;
    long long n = -1;
    int K = 0, share = 0;
    if (sscanf(buf, "%lld %d %d", &n, &K, &share) != 3 || K < 1)
        n = -1;
    free(buf);
    x->n = n < 0 ? 0 : n;
    if (n >= 0) {
        x->K = (int32_t)K;
        x->share = share;
    }
    return n < 0 ? EXIT_RUN : 0;
}

static char *bytes_dup(const char *b, int64_t len)
{
    char *d = malloc((size_t)len + 1);
    if (d) {
        memcpy(d, b, (size_t)len);
        d[len] = '\0';
    }
    return d;
}

/* Rank 0 sends every checkpoint file to every rank, so that the ranks
 * need no shared file system (the checksum of the format guards the
 * transfer); each rank keeps those of its own pieces. */
static void share_checkpoints(const traj_ctx *x, traj_piece *pc, int64_t np, int rank)
{
    int64_t k = 0;
    for (int64_t i = 0; i < x->n; i++) {
        char *buf = NULL, err[1024] = "";
        int64_t len = 0;
        int bad = 0;
        if (rank == 0 && (bad = cli_file_read(x->rows[i].path, &buf, &len, err, sizeof err))) {
            buf = err;
            len = (int64_t)strlen(err);
            bad = 1;
        }
        cli_mpi_bcast(&buf, &len, &bad);
        /* a rank has one piece per checkpoint, or two (chain 0 split off) */
        for (char *mine = NULL; k < np && pc[k].ckpt <= i; k++)
            if (pc[k].ckpt == i && pc[k].rank == rank && rank > 0) {
                pc[k].ck = mine ? bytes_dup(mine, len) : buf;
                pc[k].ck_len = len;
                pc[k].ck_bad = bad || !pc[k].ck;
                mine = pc[k].ck;
                buf = NULL;
            }
        if (buf != err)
            free(buf);
    }
}

/* src[i] when the piece that searches checkpoint i's radius failed: the
 * checkpoint's other pieces are not run (they fail by name). */
static char share_failed;
#define SHARE_FAILED ((sive_result *)(void *)&share_failed)

/* Run piece p on this rank, at the radius of *from (NULL: its own): rank
 * 0 keeps the result, the others its bytes with the seconds as the note. */
static void piece_do(traj_ctx *x, traj_piece *p, int rank, sive_result *const *from)
{
    sive_probe *sp = x->c->probe.p;
    sive_result *r = NULL;
    if (from && *from == SHARE_FAILED) {
        piece_fail(p, "not run: the piece of chain 0, which searches this checkpoint's radius, "
                      "failed", 0);
        return;
    }
    if (from) /* refused (left unset) when chain 0's run did not choose its radius */
        sive_probe_set_radius_from(sp, *from);
    r = piece_run(x, p, rank);
    if (from)
        sive_probe_set_radius_from(sp, NULL);
    if (rank == 0) {
        p->r = r;
        return;
    }
    char note[64], err[1024];
    snprintf(note, sizeof note, "%.17g", p->secs);
    int rc = r ? cli_mpi_pack(r, note, &p->msg, &p->len, err, sizeof err) : 0;
    if (rc)
        piece_fail(p, err, rc);
    sive_result_free(r);
}

/* The result of every PIECE_SEARCHES piece from its rank to all, in plan
 * order: a collective call per piece on every rank, also when the piece
 * failed (then its message goes as an error), so that a failure is a
 * value every rank receives and none waits.  Unpacked into src[ckpt]
 * (SHARE_FAILED when it failed). */
static void share_radii(const traj_piece *pc, int64_t np, int rank, sive_result **src)
{
    for (int64_t k = 0; k < np; k++) {
        const traj_piece *p = &pc[k];
        if (p->role != PIECE_SEARCHES)
            continue;
        char *buf = NULL, *own = NULL, err[1024], *note = NULL;
        int64_t len = 0;
        int bad = 0;
        if (rank == p->rank && (p->failed || rank > 0)) {
            buf = p->msg; /* why it failed, or the bytes it sends rank 0 later */
            len = p->len;
            bad = p->failed;
        } else if (rank == p->rank && cli_mpi_pack(p->r, "", &own, &len, err, sizeof err)) {
            buf = err;
            len = (int64_t)strlen(err);
            bad = 1;
        } else if (rank == p->rank) {
            buf = own;
        }
        cli_mpi_bcast_from(p->rank, &buf, &len, &bad);
        if (bad || cli_mpi_unpack(buf, len, &src[p->ckpt], &note, err, sizeof err))
            src[p->ckpt] = SHARE_FAILED;
        sive_free(note);
        if (rank != p->rank)
            free(buf);
        free(own);
    }
}

/* This rank's pieces, with shared radii (x->share): first those that
 * search for other ranks, then the radii to every rank, then the rest. */
static void run_pieces(traj_ctx *x, traj_piece *pc, int64_t np, int rank)
{
    sive_result **src = x->share ? calloc((size_t)x->n + 1, sizeof *src) : NULL;
    if (x->share && !src)
        cli_mpi_abort("out of memory"); /* the others would wait in share_radii */
    for (int64_t k = 0; k < np; k++)
        if (pc[k].rank == rank && pc[k].role == PIECE_SEARCHES)
            piece_do(x, &pc[k], rank, NULL);
    if (src)
        share_radii(pc, np, rank, src);
    for (int64_t k = 0; k < np; k++)
        if (pc[k].rank == rank && pc[k].role != PIECE_SEARCHES)
            piece_do(x, &pc[k], rank, pc[k].role == PIECE_TAKES ? &src[pc[k].ckpt] : NULL);
    for (int64_t i = 0; src && i < x->n; i++)
        sive_result_free(src[i] != SHARE_FAILED ? src[i] : NULL);
    free(src);
}

/* A rank other than 0: the data, the checkpoints from rank 0, its pieces,
 * each sent back as a result file's bytes (the probe seconds as its note)
 * or as why it failed.  Returns an exit status. */
static int traj_worker(traj_ctx *x, int R, int rank)
{
    const char *dir = x->c->train.data_dir ? x->c->train.data_dir : cli_data_dir();
    if ((x->data_rc = sive_dataset_open_dir(dir, &x->train, &x->test)))
        snprintf(x->data_err, sizeof x->data_err, "cannot open the data (directory %s): %s", dir,
                 sive_last_errmsg());
    x->pg = progress_new(0);
    int64_t np = 0;
    traj_piece *pc = NULL;
    int status = share_count(x, 0);
    if (!status && !(pc = plan_pieces(x->n, x->K, R, x->share, &np)))
        cli_mpi_abort("out of memory"); /* rank 0 would wait for its pieces */
    if (!status)
        share_checkpoints(x, pc, np, rank);
    if (!status)
        run_pieces(x, pc, np, rank);
    for (int64_t k = 0; !status && k < np; k++)
        if (pc[k].rank == rank)
            cli_mpi_send(pc[k].msg, pc[k].len, pc[k].failed);
    for (int64_t k = 0; k < np; k++)
        if (pc[k].rank == rank && pc[k].failed)
            status = EXIT_RUN;
    pieces_free(pc, np);
    return status;
}

/* Rank 0: piece p's result; another rank's arrives now. */
static void piece_receive(traj_piece *p)
{
    if (p->rank == 0)
        return;
    char *note = NULL, err[1024];
    cli_mpi_recv(p->rank, &p->msg, &p->len, &p->failed);
    int rc = p->failed ? 0 : cli_mpi_unpack(p->msg, p->len, &p->r, &note, err, sizeof err);
    if (rc)
        piece_fail(p, err, rc);
    else if (note)
        p->secs = strtod(note, NULL);
    sive_free(note);
}

/* "chain 2" or "chains 1:3" (half-open, as --chain-range). */
static const char *piece_chains(char *buf, size_t len, const traj_piece *p)
{
    if (p->end - p->begin == 1)
        snprintf(buf, len, "chain %d", (int)p->begin);
    else
        snprintf(buf, len, "chains %d:%d", (int)p->begin, (int)p->end);
    return buf;
}

/* Rank 0: which units of which checkpoint p held, and why it failed. */
static void piece_report(const traj_ctx *x, const traj_piece *p)
{
    long long u0 = p->ckpt * x->K + p->begin, u1 = u0 + (p->end - p->begin) - 1;
    char units[64], chains[64];
    if (u0 == u1)
        snprintf(units, sizeof units, "unit %lld", u0);
    else
        snprintf(units, sizeof units, "units %lld-%lld", u0, u1);
    fprintf(stderr, "%s: rank %d, %s (epoch %lld, checkpoint %s, %s) failed: %s\n", cli_cmd,
            p->rank, units, (long long)x->rows[p->ckpt].epoch, x->rows[p->ckpt].path,
            piece_chains(chains, sizeof chains, p), p->msg ? p->msg : "out of memory");
}

/* Rank 0: the merge refused the k pieces of a checkpoint (the library's
 * message counts them as parts): which rank computed each part.  A rank
 * started with other options (mpirun's A : B syntax) shows up here. */
static void merge_report(const traj_ctx *x, const traj_piece *pc, int64_t k)
{
    const train_row *row = &x->rows[pc[0].ckpt];
    char chains[64];
    fprintf(stderr, "%s: epoch %lld (checkpoint %s): the ranks' chains do not "
                    "merge: %s\n", cli_cmd, (long long)row->epoch, row->path, sive_last_errmsg());
    for (int64_t j = 0; j < k; j++)
        fprintf(stderr, "  part %lld: rank %d, %s\n", (long long)j, pc[j].rank,
                piece_chains(chains, sizeof chains, &pc[j]));
}

/* Rank 0: checkpoint i from its k pieces into x->ep[i].  A failed piece or
 * a merge the library refuses loses the run (x->lost: nothing is written);
 * the pieces are still received, so no rank waits forever.  Returns an
 * exit status. */
static int gather_one(traj_ctx *x, int64_t i, traj_piece *pc, int64_t k)
{
    const sive_result *parts[4096 + 1]; /* at most one piece per chain */
    double secs = 0.0;
    for (int64_t j = 0; j < k; j++) {
        piece_receive(&pc[j]);
        if (pc[j].failed)
            piece_report(x, &pc[j]), x->lost = 1;
        parts[j] = pc[j].r;
        secs += pc[j].secs;
    }
    if (x->lost)
        return EXIT_RUN;
    traj_epoch *e = &x->ep[i];
    sive_result *r = NULL;
    e->tr = x->rows[i];
    if (sive_result_merge(&r, parts, (size_t)k)) {
        merge_report(x, pc, k);
        x->lost = 1;
        return EXIT_RUN;
    }
    e->secs = secs; /* the sum over the pieces, as `sive merge` reports */
    if ((e->rc = sive_result_status(r))) /* diverged chains, as one process says */
        snprintf(e->err, sizeof e->err, "%s", sive_result_errmsg(r));
    collect(e, &x->c->probe, r, x->K);
    sive_result_free(r);
    return note_epoch(x, e);
}

/* The model's layer sizes for the report, from the first checkpoint. */
static void model_sizes(traj_ctx *x)
{
    sive_mlp *m = NULL;
    float *theta = NULL;
    if (x->n && !sive_checkpoint_load(x->rows[0].path, &m, &theta, NULL))
        sive_mlp_sizes(m, &x->in, NULL, NULL, &x->classes);
    sive_free(theta);
    sive_mlp_free(m);
}

/* The checkpoints cut between ranks whose radius is searched once. */
static void shared_note(const traj_ctx *x, const traj_piece *pc, int64_t np)
{
    int64_t n = 0;
    for (int64_t k = 0; k < np; k++)
        n += pc[k].role == PIECE_SEARCHES;
    if (n && !x->c->train.quiet)
        fprintf(stderr, "%s: %lld checkpoint%s cut between ranks: the radius searched once, "
                        "by the rank of chain 0, for all\n",
                cli_cmd, (long long)n, n > 1 ? "s" : "");
}

/* 2'. rank 0 under mpirun, after the setup (status): share the plan and
 * the checkpoints, probe its own pieces, then gather, merge and note the
 * others' checkpoint by checkpoint.  Returns an exit status; x->lost when
 * nothing may be written. */
static int traj_probe_mpi(traj_ctx *x, int R, int status)
{
    int64_t np = 0;
    x->share = !status && probe_radius_searched(&x->c->probe, sive_dataset_count(x->train));
    traj_piece *pc = status ? NULL : plan_pieces(x->n, x->K, R, x->share, &np);
    if (!status && !pc) {
        fprintf(stderr, "%s: out of memory\n", cli_cmd);
        status = EXIT_RUN;
    }
    if ((status = share_count(x, status))) {
        x->lost = 1;
        return status;
    }
    announce_probes(x);
    if (!x->c->train.quiet)
        fprintf(stderr, "%s: %lld units (checkpoint, chain) over %d ranks\n", cli_cmd,
                (long long)(x->n * x->K), R);
    shared_note(x, pc, np);
    double t0 = cli_now();
    x->n_ckpt = x->n;
    model_sizes(x);
    share_checkpoints(x, pc, np, 0);
    run_pieces(x, pc, np, 0);
    for (int64_t k = 0, i = 0; i < x->n; i++) {
        int64_t k0 = k;
        while (k < np && pc[k].ckpt == i)
            k++;
        int s = gather_one(x, i, pc + k0, k - k0);
        status = s > status ? s : status;
    }
    x->probe_secs = cli_now() - t0;
    pieces_free(pc, np);
    return status;
}

/* 3. the retrospective anchor of chain c: its minimum tail loss at the
 *    final checkpoint (the column is sive_retrospective_anchor() of its
 *    result); the library's estimator on every checkpoint's tail means
 *    (the results are not kept: sive_retrospective_values()); then every
 *    estimator's mean ± std over chains. */
static void traj_retrospective(traj_ctx *x)
{
    double t = cli_opt_double(x->c->probe.p, SIVE_OPT_T), mean[4096], retro[4096];
    int final = x->n == x->n_ckpt; /* else interrupted before the final checkpoint */
    const int32_t K = x->K < 4096 ? x->K : 4096; /* SIVE_OPT_CHAINS is at most 4096 */
    for (int32_t k = 0; k < x->K; k++)
        x->anchor[k] = final ? *pcv(&x->ep[x->n - 1], k, PC_TAIL_MIN) : NAN;
    for (int64_t i = 0; i < x->n; i++) {
        traj_epoch *e = &x->ep[i];
        for (int32_t k = 0; k < K; k++)
            mean[k] = *pcv(e, k, PC_TAIL_MEAN);
        sive_retrospective_values(t, mean, x->anchor, (size_t)K, retro); /* t > 0: no error */
        for (int32_t k = 0; k < K; k++)
            *pcv(e, k, PC_RETRO) = retro[k];
        column_stats(e, x->K);
    }
}

static void print_report(const traj_ctx *x)
{
    const train_cfg *t = &x->c->train;
    printf("LLC along the SGD trajectory: mean ± std over %d chains (trials)\n", (int)x->K);
    printf("model %zu-%lld-%lld-%zu, %zu training / %zu test images, SGD lr %g batch %lld, "
           "seed %llu\n",
           x->in, (long long)t->h1, (long long)t->h2, x->classes, sive_dataset_count(x->train),
           sive_dataset_count(x->test), t->lr, (long long)t->batch, (unsigned long long)t->seed);
    fputs("probe: ", stdout);
    probe_print_settings(stdout, &x->c->probe);
    fputc('\n', stdout);
    if (x->c->budget_note)
        printf("budget: %s\n", x->c->budget_note);
    if (x->n == x->n_ckpt)
        printf("Retrospective anchors each chain at its minimum tail loss at epoch %lld.\n",
               (long long)t->epochs);
    else
        printf("Retrospective: none (interrupted before the final checkpoint, its anchor).\n");
    printf("Numbers are rounded to their std over chains; ESS L̄: tail ESS of L̄ over all\n"
           "chains; ESS λ̂: of the SIVE series; " CLI_FLAG_MARK " marks a raised health flag.\n\n");
    write_table(stdout, x);
    printf("\ntraining %.1f s, probes %.1f s%s\n", x->train_secs, x->probe_secs,
           x->interrupted ? " (interrupted: the epochs probed so far)" : "");
}

/* The probe budget for the plot's title (gnuplot enhanced text). */
static void plot_budget(char *buf, size_t len, const probe_cfg *c)
{
    const sive_probe *p = c->p;
    snprintf(buf, len, "M = %lld, %lld chains, N = %lld, B_{eval} = %lld, B_{grad} = %lld, "
             "stride %lld, burn-in %g%s",
             (long long)cli_opt_int(p, SIVE_OPT_STEPS), (long long)cli_opt_int(p, SIVE_OPT_CHAINS),
             (long long)cli_opt_int(p, SIVE_OPT_GROUPS),
             (long long)cli_opt_int(p, SIVE_OPT_EVAL_BATCH),
             (long long)cli_opt_int(p, SIVE_OPT_GRAD_BATCH),
             (long long)cli_opt_int(p, SIVE_OPT_EVAL_STRIDE), cli_opt_double(p, SIVE_OPT_BURN_IN),
             cli_opt_int(p, SIVE_OPT_CONTROL_VARIATE) ? ", control variates" : "");
}

/* 4. the files, stdout, the plot and a note on what was written; returns
 *    an exit status. */
static int traj_report(const traj_ctx *x)
{
    const trajectory_cfg *c = x->c;
    const char *dir = c->train.out_dir;
    int status = 0;
    int to_files = write_file(x, "trajectory.csv", write_csv) |
                   write_file(x, "trajectory.json", write_json);
    if (to_files)
        status = EXIT_RUN;
    if (c->format == FMT_JSON)
        write_json(stdout, x);
    else if (c->format == FMT_CSV)
        write_csv(stdout, x);
    else
        print_report(x);
    fflush(stdout);
    int plotted = 1;
    char budget[256], names[256];
    plot_budget(budget, sizeof budget, &c->probe);
    uint32_t raised = 0; /* the flags of the plotted points (epoch 0 is not) */
    for (int64_t i = 0; i < x->n; i++)
        raised |= x->ep[i].tr.epoch >= 1 ? x->ep[i].flags : 0;
    cli_flag_names(names, sizeof names, raised);
    if (c->plot && !to_files && !x->interrupted &&
        (plotted = plot_trajectory(dir, c->train.quiet, budget, csv_column("flags"), names)) < 0)
        status = EXIT_RUN;
    FILE *note = c->format == FMT_TABLE ? stdout : stderr;
    if (c->format == FMT_TABLE || !c->train.quiet) {
        fprintf(note, "wrote %s/trajectory.csv, %s/trajectory.json", dir, dir);
        if (plotted == 0)
            fprintf(note, ", %s/trajectory.png", dir);
        fprintf(note, " and %lld checkpoints %s/epoch_<E>.ckpt\n", (long long)x->n_ckpt, dir);
    }
    return status;
}

/* 1'. rank 0's start: the output directory, the data, room, then the
 *     training; returns an exit status. */
static int traj_setup(traj_ctx *x, int R)
{
    const trajectory_cfg *c = x->c;
    if (cli_mkdirs(c->train.out_dir) ||
        cli_open_data(cli_cmd, c->train.data_dir, &x->train, &x->test, c->train.quiet))
        return EXIT_RUN;
    /* before the training: the files written at the end, and the probe
     * options the library would refuse only when the first probe starts */
    char path[4200];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/trajectory.%s", c->train.out_dir, i ? "json" : "csv");
        if (cli_out_check(path))
            return EXIT_RUN;
    }
    int refused = probe_cfg_check(&c->probe, sive_dataset_count(x->train));
    if (refused)
        return refused;
    if (R == 1) /* under mpirun the launcher handles Ctrl-C */
        progress_catch_sigint();
    x->pg = progress_new(!c->train.quiet && R == 1);
    int status = traj_alloc(x);
    return status ? status : traj_train(x);
}

int trajectory_run(const trajectory_cfg *c)
{
    traj_ctx x = {.c = c, .K = (int32_t)cli_opt_int(c->probe.p, SIVE_OPT_CHAINS)};
    const int R = cli_mpi_size(), rank = cli_mpi_rank();
    int status;
    if (rank > 0) {
        status = traj_worker(&x, R, rank);
    } else if ((status = traj_setup(&x, R)) == 0 || R > 1) {
        status = R > 1 ? traj_probe_mpi(&x, R, status) : traj_probe(&x);
        /* also after Ctrl-C or a failed epoch: the table and files of the
         * epochs probed; but not when mpirun lost a unit */
        if (!x.lost) {
            traj_retrospective(&x);
            int s = traj_report(&x);
            status = status ? status : s;
        }
    }
    traj_free(&x);
    return status;
}

/* ------------------------------------------------------------------ */

enum { TJ_FORMAT = 500, TJ_NO_PLOT, TJ_QUIET, TJ_HELP };

static const char traj_usage_text[] =
    "Trains the reference MLP for E epochs (checkpoints epoch_0 ... epoch_E in\n"
    "--out, default trajectory-out), probes every checkpoint, and reports per\n"
    "epoch the train and test loss and the Online, Retrospective and SIVE\n"
    "estimates (mean ± std over chains) with the diagnostics and health flags\n"
    "on stdout and in DIR/trajectory.csv and DIR/trajectory.json; draws\n"
    "DIR/trajectory.png when gnuplot is installed.  Under mpirun -np R, rank 0\n"
    "trains and writes; the (checkpoint, chain) units are spread over the ranks\n"
    "and the files are the same (docs/scale.md).\n"
    "  --format F          stdout format: table (default), json or csv\n"
    "  --no-plot           do not run gnuplot\n"
    "  --quiet             no progress bar or notes on stderr\n";

/* The probe flags of the trajectory: all but seed, which train's --seed
 * sets for the training and the probes alike, and the chain range (a
 * trajectory has no result files to merge: a part would print partial
 * numbers; split runs are 'sive probe --chain-range' and 'sive merge'). */
static const char *const traj_skip[] = {"seed", "chain_begin", "chain_end", NULL};
static const cli_optset traj_probe_opts = {NULL, traj_skip};

/* The synopsis, then (full) the description of the command's own flags. */
static void traj_usage(FILE *f, int full)
{
    static const char *const own[] = {"[--format table|json|csv]", "[--no-plot]", "[--quiet]",
                                      NULL};
    cli_wrap w;
    cli_wrap_start(&w, f, "sive trajectory");
    cli_wrap_words(&w, train_synopsis);
    probe_synopsis(&w, &traj_probe_opts);
    cli_wrap_words(&w, own);
    cli_wrap_end(&w);
    if (full)
        fputs(traj_usage_text, f);
}

/* Parse argv into c; returns -1 to go on, else the exit status. */
static int traj_parse(trajectory_cfg *c, int argc, char **argv)
{
    static const struct option own[] = {
        {"format", required_argument, 0, TJ_FORMAT}, {"no-plot", no_argument, 0, TJ_NO_PLOT},
        {"quiet", no_argument, 0, TJ_QUIET},         {"help", no_argument, 0, TJ_HELP},
        {0, 0, 0, 0}};
    struct option opts[64] = {{0}};
    cli_opts_cat(opts, 64, train_longopts, own);
    probe_opts_add(opts, 64, &traj_probe_opts);
    int o;
    optind = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        int h = train_option(&c->train, o, optarg);
        if (!h)
            h = probe_option(&c->probe, o, optarg);
        if (h < 0)
            return EXIT_USAGE;
        if (h)
            continue;
        switch (o) {
        case TJ_FORMAT: if (cli_format(optarg, &c->format)) return EXIT_USAGE; break;
        case TJ_NO_PLOT: c->plot = 0; break;
        case TJ_QUIET: c->train.quiet = c->probe.quiet = 1; break;
        case TJ_HELP:
            traj_usage(stdout, 1);
            fputs(train_usage_opts, stdout);
            probe_usage_opts(stdout, &traj_probe_opts);
            return 0;
        default: traj_usage(stderr, 0); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", cli_cmd, argv[optind]);
        traj_usage(stderr, 0);
        return EXIT_USAGE;
    }
    if (c->train.epochs < 1) {
        fprintf(stderr, "%s: --epochs E (at least 1) is required\n", cli_cmd);
        traj_usage(stderr, 0);
        return EXIT_USAGE;
    }
    return -1;
}

int cmd_trajectory(int argc, char **argv)
{
    trajectory_cfg c;
    memset(&c, 0, sizeof c);
    train_defaults(&c.train);
    c.train.out_dir = "trajectory-out";
    c.plot = 1;
    if (cli_mpi_start(&argc, &argv) < 0) {
        fprintf(stderr, "%s: MPI_Init failed\n", cli_cmd);
        return EXIT_RUN;
    }
    int status = probe_cfg_init(&c.probe) ? EXIT_RUN : traj_parse(&c, argc, argv);
    if ((status = cli_mpi_go("sive trajectory", status)) < 0) {
        probe_cfg_finish(&c.probe);
        /* train's --seed is at most INT64_MAX: a valid probe seed */
        sive_probe_set_int(c.probe.p, SIVE_OPT_SEED, (int64_t)c.train.seed);
        status = trajectory_run(&c);
    }
    probe_cfg_free(&c.probe);
    cli_mpi_end();
    return status;
}
