/* `sive train`: SGD on the reference MLP, one checkpoint per epoch. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TO_EPOCHS = 400, TO_EVERY, TO_DATA, TO_OUT, TO_SEED, TO_LR, TO_BATCH, TO_HIDDEN,
       TO_TRAIN_THREADS, TO_QUIET, TO_HELP };

const struct option train_longopts[] = {
    {"epochs", required_argument, 0, TO_EPOCHS}, {"every", required_argument, 0, TO_EVERY},
    {"data", required_argument, 0, TO_DATA},
    {"out", required_argument, 0, TO_OUT},       {"seed", required_argument, 0, TO_SEED},
    {"lr", required_argument, 0, TO_LR},         {"batch", required_argument, 0, TO_BATCH},
    {"hidden", required_argument, 0, TO_HIDDEN},
    {"train-threads", required_argument, 0, TO_TRAIN_THREADS},
    {0, 0, 0, 0}};

const char *const train_synopsis[] = {
    "--epochs E", "[--every K]", "[--data DIR]", "[--out DIR]", "[--seed S]", "[--lr A]",
    "[--batch B]", "[--hidden H1,H2]", "[--train-threads J]", NULL};

const char train_usage_opts[] =
    "training:\n"
    "  --epochs E          epochs of SGD; checkpoints epoch_0 ... epoch_E (required)\n"
    "  --every K           keep a checkpoint every K epochs (and the last) (1)\n"
    "  --data DIR          MNIST directory: the official IDX files or the bundled\n"
    "                      subset (default: $SIVE_DATA_DIR, else the bundled data)\n"
    "  --out DIR           where checkpoints (and reports) go\n"
    "  --seed S            seed of the initialisation, shuffling and probes (0)\n"
    "  --lr A              SGD learning rate (0.01)\n"
    "  --batch B           SGD batch size (64)\n"
    "  --hidden H1,H2      hidden layer widths (128,128)\n"
    "  --train-threads J   BLIS threads of the training products (1)\n";

void train_defaults(train_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->out_dir = "checkpoints";
    c->epochs = -1; /* required */
    c->every = 1;
    c->batch = 64;
    c->h1 = c->h2 = 128;
    c->threads = 1;
    c->lr = 0.01;
}

int train_option(train_cfg *c, int code, const char *arg)
{
    int64_t iv;
    double dv;
    switch (code) {
    case TO_EPOCHS: if (cli_int("--epochs", arg, 0, 100000, &iv)) return -1; c->epochs = iv; return 1;
    case TO_EVERY: if (cli_int("--every", arg, 1, 100000, &iv)) return -1; c->every = iv; return 1;
    case TO_DATA: c->data_dir = arg; return 1;
    case TO_OUT:
        if (!*arg) { fprintf(stderr, "%s: --out expects a directory\n", cli_cmd); return -1; }
        c->out_dir = arg;
        return 1;
    case TO_SEED: return cli_seed("--seed", arg, &c->seed) ? -1 : 1;
    case TO_LR: if (cli_double("--lr", arg, 1e-12, 1e6, &dv)) return -1; c->lr = dv; return 1;
    case TO_BATCH: if (cli_int("--batch", arg, 1, 1 << 24, &iv)) return -1; c->batch = iv; return 1;
    case TO_HIDDEN: return cli_hidden(arg, &c->h1, &c->h2) ? -1 : 1;
    case TO_TRAIN_THREADS:
        if (cli_int("--train-threads", arg, 1, 1024, &iv)) return -1;
        c->threads = iv;
        return 1;
    default: return 0;
    }
}

static size_t classes_of(const sive_dataset *a, const sive_dataset *b)
{
    size_t k = sive_dataset_classes(a), kb = sive_dataset_classes(b);
    if (kb > k)
        k = kb;
    return k < 2 ? 2 : k;
}

/* What training works on. */
typedef struct train_state {
    const train_cfg *c;
    const sive_dataset *train, *test;
    sive_mlp *m;
    sive_mlp_work *w;
    float *theta;
} train_state;

/* The model, its workspace and its initial parameters. */
static int train_setup(train_state *s, char *err, size_t errlen)
{
    const train_cfg *c = s->c;
    size_t in = sive_dataset_rows(s->train) * sive_dataset_cols(s->train);
    int rc = sive_mlp_new(&s->m, in, (size_t)c->h1, (size_t)c->h2, classes_of(s->train, s->test));
    if (!rc)
        rc = sive_mlp_work_new(&s->w, s->m, 0, (int)c->threads);
    if (rc) {
        snprintf(err, errlen, "%s", sive_last_errmsg());
        return rc;
    }
    if (!(s->theta = malloc(sive_mlp_dim(s->m) * sizeof *s->theta))) {
        snprintf(err, errlen, "out of memory for %zu parameters", sive_mlp_dim(s->m));
        return SIVE_E_NOMEM;
    }
    sive_mlp_init_params(s->m, s->theta, c->seed);
    return SIVE_OK;
}

/* Epoch e (nothing to train for e = 0: its checkpoint is the
 * initialisation), its losses and, when kept, its checkpoint. */
static int train_epoch(train_state *s, int64_t e, int keep, train_row *row, char *err,
                       size_t errlen)
{
    const train_cfg *c = s->c;
    int rc;
    memset(row, 0, sizeof *row);
    row->epoch = e;
    row->running_loss = NAN;
    if (e > 0 && (rc = sive_mlp_train_epoch(s->m, s->w, s->theta, s->train, (float)c->lr,
                                            (size_t)c->batch, c->seed, (uint64_t)e,
                                            &row->running_loss))) {
        snprintf(err, errlen, "training epoch %lld: %s", (long long)e, sive_last_errmsg());
        return rc;
    }
    if ((rc = sive_mlp_evaluate(s->m, s->w, s->theta, s->train, &row->train_loss,
                                &row->train_acc)) ||
        (rc = sive_mlp_evaluate(s->m, s->w, s->theta, s->test, &row->test_loss,
                                &row->test_acc))) {
        snprintf(err, errlen, "evaluation after epoch %lld: %s", (long long)e, sive_last_errmsg());
        return rc;
    }
    if (!keep)
        return SIVE_OK;
    if (snprintf(row->path, sizeof row->path, "%s/epoch_%lld.ckpt", c->out_dir, (long long)e) >=
        (int)sizeof row->path) {
        snprintf(err, errlen, "output path too long");
        return SIVE_E_INVALID_ARG;
    }
    sive_checkpoint_meta meta = {.epoch = e, .seed = c->seed, .train_loss = row->train_loss,
                                 .test_loss = row->test_loss};
    if ((rc = sive_checkpoint_save(row->path, s->m, s->theta, &meta)))
        snprintf(err, errlen, "%s", sive_last_errmsg());
    return rc;
}

int train_run(const train_cfg *c, const sive_dataset *train, const sive_dataset *test,
              FILE *log, train_row *rows, int64_t *n_rows, char *err, size_t errlen)
{
    *n_rows = 0;
    train_state s = {.c = c, .train = train, .test = test};
    int rc = train_setup(&s, err, errlen);
    if (!rc && log) {
        fprintf(log, "%5s  %10s  %10s  %9s  %9s  %7s\n", "epoch", "train_loss", "test_loss",
                "train_acc", "test_acc", "seconds");
        fflush(log);
    }
    for (int64_t e = 0; !rc && e <= c->epochs; e++) {
        double t0 = cli_now();
        int keep = e % c->every == 0 || e == c->epochs;
        train_row row;
        if ((rc = train_epoch(&s, e, keep, &row, err, errlen)))
            break;
        row.seconds = cli_now() - t0;
        if (keep)
            rows[(*n_rows)++] = row;
        if (log) {
            fprintf(log, "%5lld  %10.4f  %10.4f  %8.2f%%  %8.2f%%  %7.2f%s\n", (long long)e,
                    row.train_loss, row.test_loss, 100.0 * row.train_acc, 100.0 * row.test_acc,
                    row.seconds, keep && c->every > 1 ? "  saved" : "");
            fflush(log);
        }
        if (progress_interrupted()) {
            rc = SIVE_E_CANCELLED;
            snprintf(err, errlen, "interrupted after epoch %lld", (long long)e);
        }
    }
    free(s.theta);
    sive_mlp_work_free(s.w);
    sive_mlp_free(s.m);
    return rc;
}

static void train_usage(FILE *f)
{
    static const char *const own[] = {"[--quiet]", NULL};
    cli_wrap w;
    cli_wrap_start(&w, f, "sive train");
    cli_wrap_words(&w, train_synopsis);
    cli_wrap_words(&w, own);
    cli_wrap_end(&w);
    fputs("Trains the reference MLP (784-H1-H2-10, ReLU, cross-entropy) with SGD and\n"
          "saves DIR/epoch_0.ckpt ... DIR/epoch_E.ckpt (default DIR: checkpoints), each\n"
          "with the loss on the full training and test sets.\n",
          f);
}

int cmd_train(int argc, char **argv)
{
    static const struct option own[] = {
        {"threads", required_argument, 0, TO_TRAIN_THREADS}, /* alias */
        {"quiet", no_argument, 0, TO_QUIET},
        {"help", no_argument, 0, TO_HELP},
        {0, 0, 0, 0}};
    struct option opts[32];
    cli_opts_cat(opts, 32, train_longopts, own);
    train_cfg c;
    train_defaults(&c);
    int o;
    optind = 1;
    opterr = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        int h = train_option(&c, o, optarg);
        if (h < 0)
            return EXIT_USAGE;
        if (h)
            continue;
        if (o == TO_QUIET) {
            c.quiet = 1;
        } else if (o == TO_HELP) {
            train_usage(stdout);
            fputs(train_usage_opts, stdout);
            return 0;
        } else {
            train_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", cli_cmd, argv[optind]);
        train_usage(stderr);
        return EXIT_USAGE;
    }
    if (c.epochs < 0) {
        fprintf(stderr, "%s: --epochs is required\n", cli_cmd);
        train_usage(stderr);
        return EXIT_USAGE;
    }
    if (cli_mkdirs(c.out_dir))
        return EXIT_RUN;
    sive_dataset *train = NULL, *test = NULL;
    if (cli_open_data("sive train", c.data_dir, &train, &test, c.quiet))
        return EXIT_RUN;
    progress_catch_sigint();
    train_row *rows = calloc((size_t)c.epochs + 1, sizeof *rows);
    char err[1024] = "";
    int64_t n_rows = 0;
    int rc = rows ? train_run(&c, train, test, stdout, rows, &n_rows, err, sizeof err)
                  : SIVE_E_NOMEM;
    if (rc)
        fprintf(stderr, "%s: %s (%s)\n", cli_cmd, rows ? err : "out of memory",
                sive_strerror(rc));
    else if (!c.quiet)
        fprintf(stderr, "%s: %lld checkpoints in %s/epoch_<E>.ckpt\n", cli_cmd,
                (long long)n_rows, c.out_dir);
    free(rows);
    sive_dataset_free(train);
    sive_dataset_free(test);
    if (rc == SIVE_E_CANCELLED)
        return EXIT_INTERRUPTED;
    return rc ? EXIT_RUN : 0;
}
