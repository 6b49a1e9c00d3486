/* `sive probe`: lambda-hat and diagnostics for saved checkpoints; `sive
 * options`: the library's option table. */
#include "cli.h"
#define SIVE_EXPERIMENTAL /* kron_every, radius_lookahead, radius_check (merge_autos) */
#include <sive/experimental.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Codes of the CLI's own options (the library's are CLI_OPT_CODE + i). */
enum { PO_BLIS_THREADS = 300, PO_DATA, PO_FORMAT, PO_QUIET, PO_HELP, PO_TRACES,
       PO_CHAIN_RANGE, PO_SAVE_RESULT, PO_PARAMS, PO_EVAL_DATA, PO_H_FROM };

/* The most BLIS threads sive_mlp_model() accepts (mlp.h). */
enum { BLIS_MAX = 1024 };

/* ------------------------------------------------------------------ */
/* Settings                                                           */
/* ------------------------------------------------------------------ */

int probe_cfg_init(probe_cfg *c)
{
    memset(c, 0, sizeof *c);
    int rc = sive_probe_new(&c->p);
    if (rc)
        fprintf(stderr, "%s: cannot create a probe: %s (%s)\n", cli_cmd, sive_last_errmsg(),
                sive_strerror(rc));
    return rc;
}

void probe_cfg_free(probe_cfg *c)
{
    sive_probe_free(c->p);
    c->p = NULL;
}

struct option *probe_opts_add(struct option *dst, size_t cap, const cli_optset *set)
{
    static const struct option own[] = {
        {"blis-threads", required_argument, 0, PO_BLIS_THREADS},
        {"params", required_argument, 0, PO_PARAMS}, {0, 0, 0, 0}};
    cli_opts_add(dst, cap, set);
    return cli_opts_cat(dst, cap, dst, own);
}

int probe_option(probe_cfg *c, int code, const char *arg)
{
    if (code == PO_BLIS_THREADS) {
        if (cli_int("--blis-threads", arg, 1, BLIS_MAX, &c->blis_threads))
            return -1;
        return 1;
    }
    if (code == PO_PARAMS) {
        uint64_t *r = NULL;
        size_t n = 0;
        char err[256];
        /* the grammar and the names checked now (any MLP has the same
         * names); the ranges are resolved per checkpoint in probe_run() */
        sive_mlp *m = NULL;
        snprintf(err, sizeof err, "out of memory");
        if (sive_mlp_new(&m, 4, 2, 2, 2) == SIVE_OK &&
            !params_spec_ranges(arg, m, &r, &n, err, sizeof err))
            err[0] = '\0';
        sive_mlp_free(m);
        free(r);
        if (err[0]) {
            fprintf(stderr, "%s: %s\n", cli_cmd, err);
            return -1;
        }
        c->params = arg;
        return 1;
    }
    int h = cli_opt_apply(c->p, code, arg);
    if (h <= 0)
        return h;
    const sive_option_info *in = sive_option_at((size_t)(code - CLI_OPT_CODE));
    if (in->id == SIVE_OPT_THREADS)
        c->threads_set = 1;
    if (in->id == SIVE_OPT_H || in->id == SIVE_OPT_C_H) {
        const char *flag = in->id == SIVE_OPT_H ? "--h" : "--c-h";
        if (c->radius && strcmp(c->radius, flag)) {
            fprintf(stderr, "%s: --h (absolute radius) and --c-h (adaptive radius "
                            "c_h*|theta*|/sqrt(d)) exclude each other: give one\n",
                    cli_cmd);
            return -1;
        }
        c->radius = flag;
    }
    return 1;
}

/* The CLI's defaults where they are not the library's. */
static const cli_opt_note probe_notes[] = {
    {"threads", "min(chains, cpus): chains run in parallel"}, {NULL, NULL}};

void probe_usage_opts(FILE *f, const cli_optset *set)
{
    sive_probe *defaults = NULL;
    sive_probe_new(&defaults);
    fputs("probe (from the library's option table; defaults: the paper's DNN\n"
          "operating point):\n",
          f);
    if (defaults)
        cli_opts_usage(f, defaults, set, probe_notes);
    fprintf(f, "  --blis-threads INT  BLIS threads per chain\n"
               "                      (default cpus / parallel chains, in [1, %d])\n"
               "  --params LIST       move only these parameters (weight-restricted\n"
               "                      probe): comma-separated A:B index ranges, indices\n"
               "                      and names 1.weight, 1.bias, ..., 3.bias, layer1..3\n"
               "                      (default: all)\n",
            BLIS_MAX);
    sive_probe_free(defaults);
}

/* Chains in parallel first (they scale perfectly); the remaining cores go
 * to each chain's matrix products. */
void probe_cfg_finish(probe_cfg *c)
{
    if (c->threads_set)
        return;
    int64_t t = cli_opt_int(c->p, SIVE_OPT_CHAINS), cpus = cli_cpus();
    int64_t most = sive_option_info_get(SIVE_OPT_THREADS)->int_hi;
    t = t < cpus ? t : cpus;
    sive_probe_set_int(c->p, SIVE_OPT_THREADS, t < most ? t : most);
}

/* The model of probe_cfg_check(): a run it starts ends at once. */
static int refuse(const void *theta, size_t dim, const sive_batch *b, void *out, double *loss,
                  void *user)
{
    (void)theta, (void)dim, (void)b, (void)out, (void)loss, (void)user;
    return 1;
}

static int refuse_loss(const void *theta, size_t dim, const sive_batch *b, double *out,
                       void *user)
{
    (void)theta, (void)dim, (void)b, (void)out, (void)user;
    return 1;
}

/* The library's verdict on the options for this data (before any chain
 * runs: no result), SIVE_OK or SIVE_E_INVALID_ARG with sive_probe_errmsg(). */
static int cfg_refused(const probe_cfg *c, uint64_t n_examples)
{
    sive_model m;
    sive_model_init(&m, sizeof m);
    m.dtype = SIVE_F32;
    m.dim = 1;
    m.n_examples = n_examples;
    m.grad = refuse;
    if (n_examples)
        m.loss = refuse_loss;
    else
        m.group_loss = refuse_loss;
    const float theta = 1.0f;
    sive_result *r = NULL;
    /* past the options the first callback stops the run */
    int rc = sive_probe_run(c->p, &m, &theta, &r);
    int refused = rc == SIVE_E_INVALID_ARG && !r;
    sive_result_free(r);
    return refused ? SIVE_E_INVALID_ARG : SIVE_OK;
}

/* --orbit-every: the library's refusal would say to set sive_model.move,
 * which a command-line user cannot (the MLP has no move).  1 with the
 * reason in err. */
static int orbit_refused(const probe_cfg *c, char *err, size_t n)
{
    sive_option orbit;
    int64_t every = 0;
    if (sive_option_by_name("orbit_every", &orbit) || sive_probe_get_int(c->p, orbit, &every) ||
        every <= 0)
        return 0;
    snprintf(err, n, "--orbit-every %lld: the MLP this command probes supplies no orbit move "
             "(only models such as sive_dln_model() of the library do); leave --orbit-every 0",
             (long long)every);
    return 1;
}

int probe_cfg_check(const probe_cfg *c, uint64_t n_examples)
{
    char err[300];
    if (eval_specs_data_check(c, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", cli_cmd, err);
        return EXIT_USAGE;
    }
    if (orbit_refused(c, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", cli_cmd, err);
        return EXIT_USAGE;
    }
    if (!cfg_refused(c, n_examples))
        return 0;
    fprintf(stderr, "%s: %s\n", cli_cmd, sive_probe_errmsg(c->p));
    return EXIT_USAGE;
}

static int64_t probe_blis(const probe_cfg *c)
{
    if (c->blis_threads > 0)
        return c->blis_threads;
    int64_t t = cli_opt_int(c->p, SIVE_OPT_THREADS), k = cli_opt_int(c->p, SIVE_OPT_CHAINS);
    int64_t par = t < k ? t : k, b = cli_cpus() / (par > 0 ? par : 1);
    return b < 1 ? 1 : b > BLIS_MAX ? BLIS_MAX : b;
}

void probe_print_settings(FILE *f, const probe_cfg *c)
{
    /* neither radius nor sampler given: the run decides both at its start */
    const int radius_auto = !c->radius && cli_opt_int(c->p, SIVE_OPT_METROPOLIS) < 0;
    cli_opts_print_run(f, c->p, NULL, NULL, radius_auto, 0);
    fprintf(f, ", blis_threads = %lld", (long long)probe_blis(c));
    if (c->params)
        fprintf(f, ", params = %s", c->params);
}

void probe_json_settings(FILE *f, const probe_cfg *c, const sive_result *r)
{
    cli_opts_print_run(f, c->p, r, NULL, 0, 1);
    fprintf(f, ",\"blis_threads\":%lld", (long long)probe_blis(c));
    if (c->params) {
        fputs(",\"params\":", f);
        cli_json_str(f, c->params);
    }
}

/* ------------------------------------------------------------------ */
/* Running                                                            */
/* ------------------------------------------------------------------ */

/* The message of a run that ended with status rc. */
static void run_message(const sive_result *r, int rc, char *err, size_t errlen)
{
    int code = sive_result_callback_code(r);
    if (rc == SIVE_E_CANCELLED && progress_interrupted())
        snprintf(err, errlen, "interrupted");
    else if (rc == SIVE_E_CALLBACK && code)
        snprintf(err, errlen, "%s (callback status %d: %s)", sive_result_errmsg(r), code,
                 sive_strerror(code));
    else
        snprintf(err, errlen, "%s", sive_result_errmsg(r));
}

/* --params resolved for this checkpoint's layout into the probe. */
static int probe_set_params(const probe_cfg *c, const sive_mlp *m, char *err, size_t errlen)
{
    uint64_t *r = NULL;
    size_t n = 0;
    if (params_spec_ranges(c->params, m, &r, &n, err, errlen))
        return SIVE_E_INVALID_ARG;
    int rc = sive_probe_set_params(c->p, r, n);
    if (rc)
        snprintf(err, errlen, "%s", sive_probe_errmsg(c->p));
    free(r);
    return rc;
}

int probe_run(const probe_cfg *c, const sive_mlp *m, const float *theta,
              const sive_dataset *train, progress *pg, const char *label,
              sive_result **out, double *seconds, char *err, size_t errlen)
{
    *out = NULL;
    *seconds = 0.0;
    sive_model model;
    sive_model_init(&model, sizeof model);
    int rc = sive_mlp_model(&model, m, train, (int)probe_blis(c));
    if (rc) {
        snprintf(err, errlen, "%s", sive_last_errmsg());
        return rc;
    }
    eval_views views = {0};
    if ((c->params && (rc = probe_set_params(c, m, err, errlen))) ||
        (c->n_eval && (rc = eval_views_add(c, m, &model, (int)probe_blis(c), &views, err,
                                           errlen)))) {
        eval_views_release(&views);
        sive_model_destroy(&model);
        return rc;
    }
    /* registered even without a bar: it is how Ctrl-C stops a run */
    sive_probe_set_progress(c->p, progress_cb, pg);
    const int64_t K = cli_opt_int(c->p, SIVE_OPT_CHAINS);
    const int64_t end = cli_opt_int(c->p, SIVE_OPT_CHAIN_END);
    progress_start(pg, label, (int32_t)K,
                   (int32_t)((end > 0 ? end : K) - cli_opt_int(c->p, SIVE_OPT_CHAIN_BEGIN)),
                   cli_opt_int(c->p, SIVE_OPT_STEPS));
    double t0 = cli_now();
    rc = sive_probe_run(c->p, &model, theta, out);
    *seconds = cli_now() - t0;
    progress_done(pg);
    if (rc)
        snprintf(err, errlen, "%s", sive_probe_errmsg(c->p));
    else if ((rc = sive_result_status(*out)))
        run_message(*out, rc, err, errlen);
    eval_views_release(&views);
    sive_model_destroy(&model);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Output                                                             */
/* ------------------------------------------------------------------ */

typedef struct ckpt_info {
    const char *path;
    sive_checkpoint_meta meta;
    size_t sizes[4], dim;
} ckpt_info;

/* Load ci->path into *m and *theta and fill ci's meta, sizes and dim;
 * returns the loader's status (message in sive_last_errmsg()). */
static int ckpt_load(ckpt_info *ci, sive_mlp **m, float **theta)
{
    int rc = sive_checkpoint_load(ci->path, m, theta, &ci->meta);
    if (rc == SIVE_OK) {
        sive_mlp_sizes(*m, &ci->sizes[0], &ci->sizes[1], &ci->sizes[2], &ci->sizes[3]);
        ci->dim = sive_mlp_dim(*m);
    }
    return rc;
}

/* One checkpoint's outcome, for the three formats. */
typedef struct probe_out {
    const ckpt_info *ci;
    const probe_cfg *cfg;
    const sive_result *r; /* NULL when the run (or the load) failed */
    double seconds;
    int rc;
    int missing; /* the checkpoint does not exist: say so, not "input/output error" */
    const char *err;
} probe_out;

/* The status of o as text: "file not found" for a missing checkpoint. */
static const char *rc_text(const probe_out *o)
{
    return o->missing ? "file not found" : sive_strerror(o->rc);
}

static double summ(const sive_result *r, sive_stat s) { return sive_result_stat(r, s, SIVE_SUMMARY); }

/* "  name                      value": the value rounded to its
 * uncertainty. */
static void row_num(FILE *f, const char *name, double v, double u, int show_u)
{
    char buf[96];
    fprintf(f, "  %-26s%s\n", name, cli_round_pm(buf, sizeof buf, v, u, show_u));
}

/* A diagnostic with its standard error, labelled so ("6120 ± 50 (SE)"):
 * the block's other ± are spreads over chains. */
static void row_se(FILE *f, const char *name, double v, double u, const char *what)
{
    char buf[96];
    fprintf(f, "  %-26s%s (%s)\n", name, cli_round_pm(buf, sizeof buf, v, u, 1), what);
}

/* An estimator: mean ± std over chains.  With one chain there is no std:
 * SIVE (clipped or not) is rounded to its MCSE, the only error the library
 * gives for one chain; the other estimators have none, so they print 4
 * significant digits (SIVE's MCSE would round the online mean, thousands
 * of units away from SIVE, to 0). */
static void row_pm(FILE *f, const char *name, const sive_result *r, sive_stat s)
{
    double sd = sive_result_stat_std(r, s);
    int show = isfinite(sd);
    int sive = s == SIVE_STAT_SIVE || s == SIVE_STAT_SIVE_UNCLIPPED;
    row_num(f, name, summ(r, s), show ? sd : sive ? sive_result_mcse(r) : NAN, show);
}

/* A chain that did not finish: where it stopped and, when the library has
 * them, its estimates from the steps it ran. */
static void print_unfinished(FILE *f, const sive_result *r, int32_t k)
{
    char label[32], note[300];
    if (!cli_chain_note(note, sizeof note, r, k))
        return;
    snprintf(label, sizeof label, "chain %d", (int)k);
    fprintf(f, "  %-26s%s\n", label, note);
}

/* "chains ok 1/2", a line per chain that did not finish, the time. */
static void print_chains(FILE *f, const sive_result *r, double seconds)
{
    int32_t K = sive_result_chains(r);
    int64_t steps = 0;
    fprintf(f, "  %-26s%d/%d\n", "chains ok", (int)sive_result_chains_ok(r), (int)K);
    for (int32_t k = 0; k < K; k++) {
        int64_t step = 0;
        sive_result_chain_status(r, k, &step);
        steps += step;
        print_unfinished(f, r, k);
    }
    double rate = seconds > 0 ? (double)steps / seconds : NAN;
    fprintf(f, "  %-26s%.1f s (%.*f chain steps/s)\n", "time", seconds,
            cli_rate_decimals(rate), rate);
}

#define SKIP_LAMBDA "unclipped lambda-hat <= 0"

/* Why the radius slope d ln lambda-hat / d ln h is not assessed, as the
 * health logic decides (lib/core/health.c, radius_bound: not on a
 * nonstationary or unstable tail, nor with the unclipped lambda-hat <= 0),
 * or NULL when it is: a short or spiky tail's slope (-1.95e+03 +- 7.3e+02)
 * is not a reading of the radius. */
static const char *slope_skipped(const sive_result *r)
{
    const uint32_t fl = sive_result_flags(r);
    if (sive_result_chains_ok(r) < 1)
        return "no chain finished";
    if (!(summ(r, SIVE_STAT_SIVE_UNCLIPPED) > 0.0))
        return SKIP_LAMBDA;
    if (fl & SIVE_FLAG_NONSTATIONARY)
        return "nonstationary tail";
    if (fl & SIVE_FLAG_UNSTABLE)
        return "unstable tail";
    return NULL;
}

/* The diagnostics of a result, rounded: errors to 2 significant digits,
 * ESS whole, split-Rhat to 3 decimals. */
static void print_diagnostics(FILE *f, const sive_result *r)
{
    fprintf(f, "  %-26s%.6f (min %.6f)\n", "tail mean loss", summ(r, SIVE_STAT_TAIL_MEAN_LOSS),
            summ(r, SIVE_STAT_TAIL_MIN_LOSS));
    double mcse = sive_result_mcse(r);
    row_num(f, "MCSE (SIVE, chain mean)", mcse, mcse, 0);
    fprintf(f, "  %-26s%.0f\n", "ESS of Lbar (all chains)", sive_result_ess(r));
    fprintf(f, "  %-26s%.0f\n", "ESS of SIVE (sive_ess)", summ(r, SIVE_STAT_SIVE_ESS));
    fprintf(f, "  %-26s%.3f\n", "split-Rhat", sive_result_rhat(r));
    row_se(f, "noise correction C", sive_result_noise_correction(r),
           sive_result_noise_correction_std(r), "SE");
    fprintf(f, "  %-26s%.6g (tether step eta/h^2 %.3g)\n", "h", summ(r, SIVE_STAT_H),
            summ(r, SIVE_STAT_TETHER_STEP));
    fprintf(f, "  %-26s%.4g\n", "slope proxy t^2h^2|g|^2", summ(r, SIVE_STAT_SLOPE_PROXY));
    fprintf(f, "  %-26s%.3f\n", "RMS displacement / h", summ(r, SIVE_STAT_RMS_DISP_REL_H));
    /* the numbers behind radius_bound and step_bias (docs/theory.md),
     * the slope only where the health logic reads it */
    const double lam = summ(r, SIVE_STAT_SIVE_UNCLIPPED);
    const char *skip = slope_skipped(r);
    if (skip)
        fprintf(f, "  %-26snot assessed: %s\n", "d ln lambda / d ln h", skip);
    else
        row_se(f, "d ln lambda / d ln h", summ(r, SIVE_STAT_DLAMBDA_DLOG_H) / lam,
               summ(r, SIVE_STAT_DLAMBDA_DLOG_H_SE) / fabs(lam), "SE"); /* its digits, as every ± */
    if (lam > 0.0)
        fprintf(f, "  %-26s%.3g\n", "step share of lambda-hat",
                summ(r, SIVE_STAT_STEP_CURVATURE) / (2.0 * lam));
    else
        fprintf(f, "  %-26snot assessed: %s\n", "step share of lambda-hat", SKIP_LAMBDA);
    double s0 = summ(r, SIVE_STAT_SIVE_STEP0);
    if (!isnan(s0))
        row_se(f, "lambda-hat at step 0", s0, summ(r, SIVE_STAT_MCSE_STEP0), "MCSE");
    double fb = summ(r, SIVE_STAT_SIVE_FULL_BATCH);
    if (!isnan(fb))
        row_se(f, "lambda-hat at full batch", fb, summ(r, SIVE_STAT_MCSE_FULL_BATCH), "MCSE");
    double clipped = summ(r, SIVE_STAT_GRAD_NOISE_CLIPPED);
    if (!isnan(clipped))
        fprintf(f, "  %-26s%.3g\n", "grad noise clipped", clipped);
    /* the start test of --anneal (NaN without it, or without a chain of
     * each start: SIVE_STAT_START_Z) */
    double z = summ(r, SIVE_STAT_START_Z);
    if (!isnan(z))
        fprintf(f, "  %-26s%.2f (chains started hot - cold)\n",
                "start test z (start_z)", z);
    if (!isnan(z))
        fprintf(f, "  %-26s%.2f of lambda-hat, %.2f of t mean tail loss\n",
                "start test parts", summ(r, SIVE_STAT_START_Z_LAMBDA),
                summ(r, SIVE_STAT_START_Z_MEAN));
    /* --auto-step's tallies (NaN without it, and in a merged result) */
    double ag = summ(r, SIVE_STAT_AUTO_STEP_GRADS);
    if (!isnan(ag))
        fprintf(f, "  %-26s%.3g gradient calls per tail step, %.3g of the moves "
                   "halved or doubled\n",
                "auto_step", ag, summ(r, SIVE_STAT_AUTO_STEP_RESCALED));
}

/* 1 when view v's losses were control variates (lib/core/eval_views.c). */
static int view_cv(const sive_result *v)
{
    int64_t cv = 0;
    return sive_result_option_int(v, SIVE_OPT_CONTROL_VARIATE, &cv) == SIVE_OK && cv;
}

/* --eval-data: one line per view (its lambda-hat, MCSE, ESS, control
 * variates, flags). */
static void print_views(FILE *f, const sive_result *r)
{
    for (size_t k = 0; k < sive_result_views(r); k++) {
        const sive_result *v = sive_result_view(r, k);
        char name[80];
        snprintf(name, sizeof name, "view %s: lambda-hat", sive_result_view_name(r, k));
        row_pm(f, name, v, SIVE_STAT_SIVE);
        fprintf(f, "  %-25s MCSE %.4g, ESS %.4g%s", "", sive_result_mcse(v), sive_result_ess(v),
                view_cv(v) ? ", control variates" : "");
        const char *sep = ", flags: ";
        for (int b = 0; b < 32; b++)
            if (sive_result_flags(v) & (1u << b)) {
                fprintf(f, "%s%s", sep, sive_flag_name(1u << b));
                sep = " ";
            }
        fputc('\n', f);
    }
}

static void print_table(FILE *f, const probe_out *o)
{
    const ckpt_info *ci = o->ci;
    const sive_result *r = o->r;
    fprintf(f, "== %s", ci->path);
    if (ci->dim)
        fprintf(f, ": epoch %lld, %zu-%zu-%zu-%zu (d = %zu), train loss %.4f, test loss %.4f",
                (long long)ci->meta.epoch, ci->sizes[0], ci->sizes[1], ci->sizes[2],
                ci->sizes[3], ci->dim, ci->meta.train_loss, ci->meta.test_loss);
    fputc('\n', f);
    if (!r) {
        fprintf(f, "  error: %s (%s)\n\n", o->err, rc_text(o));
        return;
    }
    if (sive_result_params(r, NULL))
        fprintf(f, "  parameters moved: %llu (--params; the others stay at theta*)\n",
                (unsigned long long)sive_result_params_dim(r));
    if (sive_result_chains_ok(r) > 1)
        fprintf(f, "  (mean ± std over %d chains, rounded to the std)\n", (int)sive_result_chains_ok(r));
    else
        fprintf(f, "  (one chain: SIVE rounded to its MCSE, the other estimators to 4 digits)\n");
    row_pm(f, "lambda-hat (SIVE)", r, SIVE_STAT_SIVE);
    row_pm(f, "SIVE unclipped", r, SIVE_STAT_SIVE_UNCLIPPED);
    row_pm(f, "raw variance t^2 Var(L)", r, SIVE_STAT_RAW_VARIANCE);
    row_pm(f, "online mean (naive)", r, SIVE_STAT_ONLINE_MEAN);
    double anchor = NAN; /* as the run used it */
    sive_result_option_double(r, SIVE_OPT_ANCHOR, &anchor);
    if (isfinite(anchor))
        row_pm(f, "anchored mean", r, SIVE_STAT_ANCHORED_MEAN);
    print_diagnostics(f, r);
    print_views(f, r);
    print_chains(f, r, o->seconds);
    if (o->rc)
        fprintf(f, "  error: %s (%s)\n", o->err, rc_text(o));
    if (*sive_result_health(r))
        cli_print_lines(f, sive_result_health(r), "  " CLI_FLAG_MARK " health: ");
    else
        fputs("  health: healthy (no flag raised)\n", f);
    fputc('\n', f);
}

/* The summary table of every checkpoint probed: one row each, marked when
 * a flag was raised. */
enum { SUM_MARK, SUM_EPOCH, SUM_LAMBDA, SUM_MCSE, SUM_ESS, SUM_SIVE_ESS, SUM_RHAT, SUM_CHAINS,
       SUM_FLAGS, SUM_PATH, SUM_COLS };

static void summary_init(cli_table *t)
{
    static const char *const head[SUM_COLS] = {
        "", "epoch", "λ̂ (SIVE)", "MCSE", "ESS L̄", "ESS λ̂", "R̂", "chains", "flags", "checkpoint"};
    static const int right[SUM_COLS] = {[SUM_EPOCH] = 1, [SUM_MCSE] = 1, [SUM_ESS] = 1,
                                        [SUM_SIVE_ESS] = 1, [SUM_RHAT] = 1, [SUM_CHAINS] = 1};
    cli_table_init(t, SUM_COLS, head, right);
}

static void summary_row(cli_table *t, const probe_out *o)
{
    const sive_result *r = o->r;
    char buf[256];
    cli_table_row(t);
    cli_table_set(t, SUM_PATH, "%s", o->ci->path);
    if (o->ci->dim)
        cli_table_set(t, SUM_EPOCH, "%lld", (long long)o->ci->meta.epoch);
    if (!r) {
        cli_table_set(t, SUM_LAMBDA, "error: %s", rc_text(o));
        return;
    }
    double sd = sive_result_lambda_std(r), mcse = sive_result_mcse(r);
    cli_table_set(t, SUM_LAMBDA, "%s",
                  cli_round_pm(buf, sizeof buf, sive_result_lambda(r),
                               isfinite(sd) ? sd : mcse, isfinite(sd)));
    cli_table_set(t, SUM_MCSE, "%s", cli_round_pm(buf, sizeof buf, mcse, mcse, 0));
    cli_table_set(t, SUM_ESS, "%.0f", sive_result_ess(r));
    cli_table_set(t, SUM_SIVE_ESS, "%.0f", summ(r, SIVE_STAT_SIVE_ESS));
    cli_table_set(t, SUM_RHAT, "%.3f", sive_result_rhat(r));
    cli_table_set(t, SUM_CHAINS, "%d/%d", (int)sive_result_chains_ok(r), (int)sive_result_chains(r));
    uint32_t flags = sive_result_flags(r);
    if (flags) {
        cli_table_set(t, SUM_MARK, CLI_FLAG_MARK);
        cli_table_set(t, SUM_FLAGS, "%s", cli_flag_names(buf, sizeof buf, flags));
    }
}

static void summary_print(FILE *f, const cli_table *t, uint32_t flags)
{
    fputs("Summary: λ̂ mean ± std over chains (rounded to the std), its MCSE, the ESS of L̄ "
          "(all chains)\nand of the SIVE series (sive_ess), split-R̂; "
          CLI_FLAG_MARK " marks a raised health flag.\n\n", f);
    cli_table_print(f, t, "");
    if (!flags)
        return;
    fputs("\n" CLI_FLAG_MARK " raised flags (each checkpoint's health lines above give the "
          "numbers):\n", f);
    cli_flags_legend(f, flags, "  ");
}

static void json_head(FILE *f, const probe_out *o)
{
    const ckpt_info *ci = o->ci;
    fputs("{\"checkpoint\":", f);
    cli_json_str(f, ci->path);
    if (ci->dim) {
        fprintf(f, ",\"epoch\":%lld,\"train_seed\":%llu,\"layers\":[%zu,%zu,%zu,%zu],\"dim\":%zu,"
                   "\"train_loss\":",
                (long long)ci->meta.epoch, (unsigned long long)ci->meta.seed, ci->sizes[0],
                ci->sizes[1], ci->sizes[2], ci->sizes[3], ci->dim);
        cli_json_num(f, ci->meta.train_loss);
        cli_json_member(f, "test_loss", ci->meta.test_loss);
    }
    /* what the run resolved and ran (Python's Result.to_dict() settings),
     * then what was asked (metropolis -1: auto) */
    fputs(",\"settings\":{", f);
    probe_json_settings(f, o->cfg, o->r);
    fputs("},\"settings_requested\":{", f);
    probe_json_settings(f, o->cfg, NULL);
    fprintf(f, "},\"status\":%d,\"error\":", o->rc);
    if (o->rc) {
        char buf[1200];
        snprintf(buf, sizeof buf, "%s (%s)", o->err, rc_text(o));
        cli_json_str(f, buf);
    } else {
        fputs("null", f);
    }
}

/* Every statistic of chain k as JSON members. */
static void json_chain(FILE *f, const sive_result *r, int32_t k)
{
    int64_t step = 0;
    sive_chain_status s = sive_result_chain_status(r, k, &step);
    fprintf(f, "{\"status\":\"%s\",\"stop_step\":%lld", sive_chain_status_string(s),
            (long long)step);
    const char *name;
    for (int i = 0; (name = sive_stat_name((sive_stat)i)); i++)
        if (!cli_stat_summary_only((sive_stat)i))
            cli_json_member(f, name, sive_result_stat(r, (sive_stat)i, k));
    fputc('}', f);
}

/* Every statistic of the library under its name (new ones appear by
 * themselves): {mean, std} over chains, or one pooled number
 * (cli_stat_pooled()); then the chains, flags, health and per-chain
 * values. */
static void json_result(FILE *f, const sive_result *r)
{
    const char *name;
    for (int i = 0; (name = sive_stat_name((sive_stat)i)); i++) {
        sive_stat s = (sive_stat)i;
        fprintf(f, ",\"%s\":", name);
        if (cli_stat_pooled(s)) {
            cli_json_num(f, summ(r, s));
            continue;
        }
        fputs("{\"mean\":", f);
        cli_json_num(f, summ(r, s));
        fputs(",\"std\":", f);
        cli_json_num(f, sive_result_stat_std(r, s));
        fputc('}', f);
    }
    int32_t K = sive_result_chains(r);
    fprintf(f, ",\"chains\":%d,\"chains_ok\":%d,\"flags\":%u,\"flag_names\":", (int)K,
            (int)sive_result_chains_ok(r), (unsigned)sive_result_flags(r));
    cli_json_flags(f, sive_result_flags(r));
    fputs(",\"health\":", f);
    cli_json_lines(f, sive_result_health(r));
    fputs(",\"per_chain\":[", f);
    for (int32_t k = 0; k < K; k++) {
        if (k)
            fputc(',', f);
        json_chain(f, r, k);
    }
    fputc(']', f);
}

static void print_json(FILE *f, const probe_out *o)
{
    json_head(f, o);
    if (o->r) {
        json_result(f, o->r);
        fprintf(f, ",\"dtype\":\"%s\"",
                sive_result_dtype(o->r) == SIVE_F32 ? "float32" : "float64");
    }
    if (o->r && sive_result_params(o->r, NULL))
        fprintf(f, ",\"params_dim\":%llu", (unsigned long long)sive_result_params_dim(o->r));
    if (o->r && sive_result_views(o->r)) {
        fputs(",\"views\":[", f);
        for (size_t k = 0; k < sive_result_views(o->r); k++) {
            fputs(k ? ",{\"name\":" : "{\"name\":", f);
            cli_json_str(f, sive_result_view_name(o->r, k));
            fprintf(f, ",\"control_variate\":%d", view_cv(sive_result_view(o->r, k)));
            json_result(f, sive_result_view(o->r, k));
            fputc('}', f);
        }
        fputc(']', f);
    }
    cli_json_member(f, "seconds", o->seconds);
    fputc('}', f);
}

/* CSV: the header and the rows come from the same walk over the
 * statistics, so they cannot disagree. */
static void csv_stats(FILE *f, const sive_result *r, int header)
{
    const char *name;
    for (int i = 0; (name = sive_stat_name((sive_stat)i)); i++) {
        sive_stat s = (sive_stat)i;
        int pooled = cli_stat_pooled(s);
        if (header)
            fprintf(f, ",%s%s%s", name, pooled ? "" : ",", pooled ? "" : name);
        if (header && !pooled)
            fputs("_std", f);
        if (!header)
            fprintf(f, ",%.10g", summ(r, s));
        if (!header && !pooled)
            fprintf(f, ",%.10g", sive_result_stat_std(r, s));
    }
}

static void print_csv_header(FILE *f)
{
    fputs("checkpoint,epoch,train_loss,test_loss,status", f);
    csv_stats(f, NULL, 1);
    fputs(",chains,chains_ok,flags,health,seconds\n", f);
}

static void print_csv_row(FILE *f, const probe_out *o)
{
    const ckpt_info *ci = o->ci;
    cli_csv_str(f, ci->path);
    if (ci->dim)
        fprintf(f, ",%lld", (long long)ci->meta.epoch);
    else
        fputs(",", f);
    fprintf(f, ",%.10g,%.10g,%d", ci->dim ? ci->meta.train_loss : NAN,
            ci->dim ? ci->meta.test_loss : NAN, o->rc);
    csv_stats(f, o->r, 0);
    char names[256];
    uint32_t flags = sive_result_flags(o->r);
    fprintf(f, ",%d,%d,%u,", (int)sive_result_chains(o->r), (int)sive_result_chains_ok(o->r),
            (unsigned)flags);
    cli_csv_str(f, cli_flag_names(names, sizeof names, flags));
    fprintf(f, ",%.10g\n", o->seconds);
}

/* Per-step traces of every chain, for looking at burn-in and stationarity;
 * one column per trace of the library, named by sive_trace_name(). */
static void traces_header(FILE *f)
{
    fputs("checkpoint,chain,step", f);
    const char *name;
    for (int j = 0; (name = sive_trace_name((sive_trace)j)); j++)
        fprintf(f, ",%s", name);
    fputc('\n', f);
}

static void write_traces(FILE *f, int ckpt, const sive_result *r)
{
    enum { MAX_TRACES = 32 };
    const double *tr[MAX_TRACES];
    int n_tr = 0;
    while (n_tr < MAX_TRACES && sive_trace_name((sive_trace)n_tr))
        n_tr++;
    for (int32_t k = 0; k < sive_result_chains(r); k++) {
        size_t len = 0, n = 0;
        for (int j = 0; j < n_tr; j++) {
            tr[j] = sive_result_trace(r, (sive_trace)j, k, &len);
            if (j == 0 || len < n)
                n = len;
        }
        for (size_t m = 0; m < n; m++) {
            fprintf(f, "%d,%d,%zu", ckpt, (int)k, m);
            for (int j = 0; j < n_tr; j++)
                fprintf(f, ",%.10g", tr[j][m]);
            fputc('\n', f);
        }
    }
}

/* ------------------------------------------------------------------ */
/* The command                                                        */
/* ------------------------------------------------------------------ */

void probe_synopsis(cli_wrap *w, const cli_optset *set)
{
    cli_wrap_opts(w, set);
    cli_wrap_word(w, "[--blis-threads INT]");
    cli_wrap_word(w, "[--params LIST]");
}

static const char probe_usage_text[] =
    "Runs the SIVE probe on each checkpoint (made by 'sive train') over the\n"
    "training set and prints lambda-hat with its diagnostics.\n"
    "  --data DIR          MNIST directory (default: $SIVE_DATA_DIR or the bundled data)\n"
    "  --eval-data SPEC    also evaluate on other data, on the same chains\n"
    "                      (repeatable): train, test, class=K (training examples\n"
    "                      of label K), test:class=K; one lambda-hat per view\n"
    "  --format F          table (default), json (one object per checkpoint, an\n"
    "                      array when several) or csv\n"
    "  --traces FILE       write the per-step traces as CSV (chain, step, Lbar, s2,\n"
    "                      gradient-batch loss, |g|, |theta - theta*|/sqrt(d)); with\n"
    "                      several checkpoints FILE gets a column for each's index\n"
    "  --chain-range A:B   run only chains A .. B-1 of the --chains (the same\n"
    "                      numbers as in the whole run; see 'sive merge')\n"
    "  --save-result FILE  save the result (one checkpoint) for 'sive merge'\n"
    "  --h-from FILE       the radius that the run saved in FILE (--save-result)\n"
    "                      chose from the loss (c_h auto), without searching again:\n"
    "                      for the other parts of a split run (one checkpoint; the\n"
    "                      same options, checkpoint and data as FILE's run)\n"
    "  --quiet             no progress bar or notes on stderr\n";

/* The synopsis, then (full) the description of the command's own flags. */
static void probe_usage(FILE *f, int full)
{
    static const char *const pre[] = {"CKPT...", "[--data DIR]", NULL};
    static const char *const post[] = {"[--eval-data SPEC]...", "[--format table|json|csv]",
                                       "[--traces FILE]",
                                       "[--chain-range A:B]", "[--save-result FILE]",
                                       "[--h-from FILE]", "[--quiet]", NULL};
    cli_wrap w;
    cli_wrap_start(&w, f, "sive probe");
    cli_wrap_words(&w, pre);
    probe_synopsis(&w, NULL);
    cli_wrap_words(&w, post);
    cli_wrap_end(&w);
    if (full)
        fputs(probe_usage_text, f);
}

typedef struct probe_args {
    probe_cfg cfg;
    const char *data_dir, *traces, *save; /* save: --save-result */
    const char *h_from;                   /* --h-from, and its result */
    sive_result *h_from_r;
    int share; /* under mpirun: each checkpoint's radius searched once (unit_rank) */
    int fmt;
    char **ckpts;
    int n_ckpt;
    const sive_dataset *train;
    progress *pg;
    FILE *tf; /* --traces, or NULL */
    cli_out *tout;
    cli_table summary; /* table format: a row per checkpoint */
    uint32_t flags;    /* every flag raised by a checkpoint  */
    const char *title; /* the table's settings line: NULL "SIVE probe" */
} probe_args;

/* --chain-range A:B: chains [A, B) of the --chains (checked by the run
 * against the chain count, which may come later on the command line). */
static int chain_range(probe_cfg *c, const char *arg)
{
    char a[32], b[32];
    const char *colon = strchr(arg, ':');
    if (!colon || (size_t)(colon - arg) >= sizeof a || strlen(colon + 1) >= sizeof b) {
        fprintf(stderr, "%s: --chain-range takes A:B (chains A .. B-1), not '%s'\n", cli_cmd,
                arg);
        return -1;
    }
    snprintf(a, sizeof a, "%.*s", (int)(colon - arg), arg);
    snprintf(b, sizeof b, "%s", colon + 1);
    if (sive_probe_set_text(c->p, "chain_begin", a) ||
        sive_probe_set_text(c->p, "chain_end", b)) {
        fprintf(stderr, "%s: --chain-range %s: %s\n", cli_cmd, arg, sive_probe_errmsg(c->p));
        return -1;
    }
    if (strtol(b, NULL, 10) <= strtol(a, NULL, 10)) {
        fprintf(stderr, "%s: --chain-range %s: the range is empty\n", cli_cmd, arg);
        return -1;
    }
    return 0;
}

/* --h-from FILE: its result into *r, checked as a source of a radius
 * chosen from the loss.  It is given to the probe only after the options'
 * check (probe_cfg_check() runs a stand-in model, not FILE's), by
 * h_from_use(); the run then checks the options, model and theta*.
 * Returns -1 to go on, else the exit status: a file that cannot be read
 * or is damaged is a failed file (EXIT_RUN, "file not found" as for a
 * checkpoint), a result whose radius cannot be taken a usage error. */
static int h_from_load(probe_cfg *c, const char *path, sive_result **r)
{
    if (cli_in_check(path))
        return EXIT_RUN;
    int rc = sive_result_load(path, r, NULL);
    if (rc) {
        fprintf(stderr, "%s: --h-from: %s (%s)\n", cli_cmd, sive_last_errmsg(), sive_strerror(rc));
        return EXIT_RUN;
    }
    if ((rc = sive_probe_set_radius_from(c->p, *r)))
        fprintf(stderr, "%s: --h-from %s: %s\n", cli_cmd, path, sive_probe_errmsg(c->p));
    sive_probe_set_radius_from(c->p, NULL);
    return rc ? EXIT_USAGE : -1;
}

/* The radius h_from_load checked, set for the runs.  That check passed, so
 * a refusal here is out of memory: exit rather than search silently. */
static int h_from_use(probe_args *a)
{
    if (a->h_from_r && sive_probe_set_radius_from(a->cfg.p, a->h_from_r)) {
        fprintf(stderr, "%s: --h-from: %s\n", cli_cmd, sive_probe_errmsg(a->cfg.p));
        return EXIT_RUN;
    }
    return 0;
}

/* Parse argv into a; returns -1 to go on, else the exit status. */
/* --eval-data SPEC (repeatable). */
static int eval_data(probe_cfg *c, const char *spec)
{
    char err[200];
    if (eval_spec_check(spec, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", cli_cmd, err);
        return -1;
    }
    if (c->n_eval >= CLI_MAX_VIEWS) {
        fprintf(stderr, "%s: at most %d --eval-data views\n", cli_cmd, CLI_MAX_VIEWS);
        return -1;
    }
    c->eval_spec[c->n_eval++] = spec;
    return 0;
}

static int probe_parse(probe_args *a, int argc, char **argv)
{
    static const struct option own[] = {
        {"data", required_argument, 0, PO_DATA},   {"format", required_argument, 0, PO_FORMAT},
        {"quiet", no_argument, 0, PO_QUIET},       {"help", no_argument, 0, PO_HELP},
        {"traces", required_argument, 0, PO_TRACES},
        {"chain-range", required_argument, 0, PO_CHAIN_RANGE},
        {"save-result", required_argument, 0, PO_SAVE_RESULT},
        {"h-from", required_argument, 0, PO_H_FROM},
        {"eval-data", required_argument, 0, PO_EVAL_DATA}, {0, 0, 0, 0}};
    struct option opts[64] = {{0}};
    cli_opts_cat(opts, 64, probe_opts_add(opts, 64, NULL), own);
    int o;
    optind = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        int h = probe_option(&a->cfg, o, optarg);
        if (h < 0)
            return EXIT_USAGE;
        if (h)
            continue;
        switch (o) {
        case PO_DATA: a->data_dir = optarg; break;
        case PO_FORMAT: if (cli_format(optarg, &a->fmt)) return EXIT_USAGE; break;
        case PO_QUIET: a->cfg.quiet = 1; break;
        case PO_TRACES: a->traces = optarg; break;
        case PO_SAVE_RESULT: a->save = optarg; break;
        case PO_H_FROM: a->h_from = optarg; break;
        case PO_EVAL_DATA:
            if (eval_data(&a->cfg, optarg))
                return EXIT_USAGE;
            break;
        case PO_CHAIN_RANGE:
            if (chain_range(&a->cfg, optarg))
                return EXIT_USAGE;
            break;
        case PO_HELP:
            probe_usage(stdout, 1);
            probe_usage_opts(stdout, NULL);
            return 0;
        default: probe_usage(stderr, 0); return EXIT_USAGE;
        }
    }
    a->ckpts = argv + optind;
    a->n_ckpt = argc - optind;
    if (a->n_ckpt < 1) {
        fprintf(stderr, "%s: no checkpoint given\n", cli_cmd);
        probe_usage(stderr, 0);
        return EXIT_USAGE;
    }
    if (a->save && a->n_ckpt != 1) {
        fprintf(stderr, "%s: --save-result saves one result: give one checkpoint\n", cli_cmd);
        return EXIT_USAGE;
    }
    if (a->h_from && a->n_ckpt != 1) {
        fprintf(stderr, "%s: --h-from gives one checkpoint's radius: give one checkpoint\n",
                cli_cmd);
        return EXIT_USAGE;
    }
    probe_cfg_finish(&a->cfg);
    int st;
    if (a->h_from && (st = h_from_load(&a->cfg, a->h_from, &a->h_from_r)) >= 0)
        return st;
    /* before any run: a long run must not end in a failed write */
    if (a->save && cli_out_check(a->save))
        return EXIT_RUN;
    return -1;
}

/* Say on stderr why checkpoint path failed (why: the status as text);
 * returns the exit status. */
static int report_failure_why(const char *path, int rc, const char *err, const char *why)
{
    /* the loader's messages already name the file */
    if (strncmp(err, path, strlen(path)))
        fprintf(stderr, "%s: %s: %s (%s)\n", cli_cmd, path, err, why);
    else
        fprintf(stderr, "%s: %s (%s)\n", cli_cmd, err, why);
    return rc == SIVE_E_CANCELLED && progress_interrupted() ? EXIT_INTERRUPTED : EXIT_RUN;
}

static int report_failure(const char *path, int rc, const char *err)
{
    return report_failure_why(path, rc, err, sive_strerror(rc));
}

static void emit(probe_args *a, int i, const probe_out *o)
{
    if (a->fmt == FMT_TABLE) {
        print_table(stdout, o);
        summary_row(&a->summary, o);
        a->flags |= sive_result_flags(o->r);
    } else if (a->fmt == FMT_JSON) {
        if (i)
            fputs(",\n", stdout);
        print_json(stdout, o);
    } else {
        print_csv_row(stdout, o);
    }
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* Result files: --save-result and `sive merge`                       */
/* ------------------------------------------------------------------ */

/* What the output needs besides the result, kept in the file's note (the
 * library stores it verbatim).  Doubles in %a: exact round trip.  The
 * path comes last and runs to the end, so it may hold any character.  The
 * line "sampler auto" (before the path) says that neither --metropolis
 * nor a radius was given: the result holds the sampler and radius the
 * run resolved, the settings line the probe's "auto"; "metropolis auto"
 * says that --metropolis was not given but a radius was (--h or --c-h):
 * the radius is the result's, the sampler "auto". */
#define NOTE_HEAD "sive-probe-note 1\n"

/* The note's sampler line for c (see above): "" when --metropolis was given. */
static const char *note_sampler(const probe_cfg *c)
{
    if (cli_opt_int(c->p, SIVE_OPT_METROPOLIS) >= 0)
        return "";
    return c->radius ? "metropolis auto\n" : "sampler auto\n";
}

static char *note_make(const probe_out *o)
{
    const ckpt_info *ci = o->ci;
    size_t cap = strlen(ci->path) + 512;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    snprintf(s, cap,
             NOTE_HEAD "epoch %lld\ntrain_seed %llu\nlayers %zu %zu %zu %zu\ndim %zu\n"
             "train_loss %a\ntest_loss %a\nblis_threads %lld\nseconds %a\n%scheckpoint %s",
             (long long)ci->meta.epoch, (unsigned long long)ci->meta.seed, ci->sizes[0],
             ci->sizes[1], ci->sizes[2], ci->sizes[3], ci->dim, ci->meta.train_loss,
             ci->meta.test_loss, (long long)probe_blis(o->cfg), o->seconds,
             note_sampler(o->cfg), ci->path);
    return s;
}

/* The note back into ci (path borrowed from note), blis threads and
 * seconds, and (sampler_auto not NULL) its sampler line: 1 "sampler auto",
 * 2 "metropolis auto", 0 none; -1 when it is not a probe's note. */
static int note_parse(const char *note, ckpt_info *ci, int64_t *blis, double *seconds,
                      int *sampler_auto)
{
    long long epoch, bl;
    unsigned long long seed;
    int used = 0;
    if (strncmp(note, NOTE_HEAD, strlen(NOTE_HEAD)))
        return -1;
    note += strlen(NOTE_HEAD);
    if (sscanf(note, "epoch %lld\ntrain_seed %llu\nlayers %zu %zu %zu %zu\ndim %zu\n"
                     "train_loss %la\ntest_loss %la\nblis_threads %lld\nseconds %la\n%n",
               &epoch, &seed, &ci->sizes[0], &ci->sizes[1], &ci->sizes[2], &ci->sizes[3],
               &ci->dim, &ci->meta.train_loss, &ci->meta.test_loss, &bl, seconds,
               &used) != 11 || !used)
        return -1;
    static const char *const lines[] = {"sampler auto\n", "metropolis auto\n"};
    int sampler = 0;
    for (int k = 0; k < 2 && !sampler; k++)
        if (!strncmp(note + used, lines[k], strlen(lines[k]))) {
            sampler = k + 1;
            used += (int)strlen(lines[k]);
        }
    if (sampler_auto)
        *sampler_auto = sampler;
    if (strncmp(note + used, "checkpoint ", 11))
        return -1;
    used += 11;
    ci->meta.epoch = epoch;
    ci->meta.seed = seed;
    ci->path = note + used;
    *blis = bl;
    return 0;
}

/* Save the result of the one checkpoint; returns an exit status. */
static int save_result(const probe_args *a, const probe_out *o)
{
    char *note = note_make(o);
    int rc = note ? sive_result_save(o->r, a->save, note) : SIVE_E_NOMEM;
    if (rc)
        fprintf(stderr, "%s: cannot save the result: %s (%s)\n", cli_cmd,
                note ? sive_last_errmsg() : "out of memory", sive_strerror(rc));
    free(note);
    return rc ? EXIT_RUN : 0;
}

/* Load and probe checkpoint i and print the outcome; returns its exit
 * status. */
static int probe_one(probe_args *a, int i)
{
    ckpt_info ci = {.path = a->ckpts[i]};
    sive_mlp *m = NULL;
    float *theta = NULL;
    sive_result *r = NULL;
    char err[1024] = "";
    probe_out o = {.ci = &ci, .cfg = &a->cfg, .err = err};
    if ((o.rc = ckpt_load(&ci, &m, &theta))) {
        snprintf(err, sizeof err, "%s", sive_last_errmsg());
        struct stat st;
        o.missing = o.rc == SIVE_E_IO && stat(ci.path, &st) != 0 && errno == ENOENT;
    } else {
        char label[64];
        snprintf(label, sizeof label, "probe %d/%d", i + 1, a->n_ckpt);
        o.rc = probe_run(&a->cfg, m, theta, a->train, a->pg, label, &r, &o.seconds, err,
                         sizeof err);
    }
    o.r = r;
    int status = o.rc ? report_failure_why(ci.path, o.rc, err, rc_text(&o)) : 0;
    /* a part stopped by a callback or a cancel cannot be merged: no file */
    if (a->save && r && (o.rc == SIVE_OK || o.rc == SIVE_E_DIVERGED)) {
        int s = save_result(a, &o);
        status = s > status ? s : status;
    }
    emit(a, i, &o);
    if (a->tf && r) /* a failed write is reported by the commit */
        write_traces(a->tf, i, r);
    sive_result_free(r);
    sive_free(theta);
    sive_mlp_free(m);
    return status;
}

/* ------------------------------------------------------------------ */
/* Under mpirun: (checkpoint, chain) units spread over the ranks       */
/* ------------------------------------------------------------------ */

/* One unit: chain c of checkpoint i, as result bytes or an error text. */
static int unit_run(probe_args *a, int i, int32_t c, char **buf, int64_t *len)
{
    ckpt_info ci = {.path = a->ckpts[i]};
    sive_mlp *m = NULL;
    float *theta = NULL;
    sive_result *r = NULL;
    char err[1024] = "";
    probe_out o = {.ci = &ci, .cfg = &a->cfg, .err = err};
    sive_probe_set_int(a->cfg.p, SIVE_OPT_CHAIN_BEGIN, c);
    sive_probe_set_int(a->cfg.p, SIVE_OPT_CHAIN_END, c + 1);
    if ((o.rc = ckpt_load(&ci, &m, &theta))) {
        snprintf(err, sizeof err, "%s", sive_last_errmsg());
    } else {
        o.rc = probe_run(&a->cfg, m, theta, a->train, a->pg, "unit", &r, &o.seconds, err,
                         sizeof err);
    }
    int fail = !r || (o.rc != SIVE_OK && o.rc != SIVE_E_DIVERGED);
    if (!fail) {
        o.r = r;
        char *note = note_make(&o), why[900] = "out of memory";
        if (!note || cli_mpi_pack(r, note, buf, len, why, sizeof why)) {
            snprintf(err, sizeof err, "cannot serialise the result: %s", why);
            fail = 1;
        }
        free(note);
    }
    if (fail) {
        char *e = malloc(1200);
        if (e)
            snprintf(e, 1200, "%s (%s)", err, sive_strerror(o.rc ? o.rc : SIVE_E_IO));
        *buf = e;
        *len = e ? (int64_t)strlen(e) : 0;
    }
    sive_result_free(r);
    sive_free(theta);
    sive_mlp_free(m);
    return fail;
}

/* Rank 0: merge the K units of checkpoint i and print them as probe_one
 * would.  got[c] holds chain c's result. */
static int mpi_emit(probe_args *a, int i, sive_result **got, int32_t K, double seconds)
{
    ckpt_info ci = {.path = a->ckpts[i]};
    char err[1024] = "";
    sive_result *r = NULL;
    probe_out o = {.ci = &ci, .cfg = &a->cfg, .err = err, .seconds = seconds};
    sive_mlp *m = NULL;
    float *theta = NULL;
    if ((o.rc = ckpt_load(&ci, &m, &theta)) == SIVE_OK)
        o.rc = sive_result_merge(&r, (const sive_result *const *)got, (size_t)K);
    if (o.rc)
        snprintf(err, sizeof err, "%s", sive_last_errmsg());
    else if ((o.rc = sive_result_status(r)))
        run_message(r, o.rc, err, sizeof err);
    o.r = r;
    int status = o.rc ? report_failure(ci.path, o.rc, err) : 0;
    emit(a, i, &o);
    if (a->tf && r)
        write_traces(a->tf, i, r);
    sive_result_free(r);
    sive_free(theta);
    sive_mlp_free(m);
    return status;
}
static void print_preamble(const probe_args *a)
{
    /* the stderr line tells a terminal what runs while stdout goes elsewhere;
     * when the table's own line lands on the same terminal, once is enough */
    if (!a->cfg.quiet && !(a->fmt == FMT_TABLE && cli_same_terminal())) {
        fprintf(stderr, "%s: ", cli_cmd);
        probe_print_settings(stderr, &a->cfg);
        fputc('\n', stderr);
    }
    if (a->fmt == FMT_TABLE) {
        fprintf(stdout, "%s: ", a->title ? a->title : "SIVE probe");
        probe_print_settings(stdout, &a->cfg);
        fputs("\n\n", stdout);
    } else if (a->fmt == FMT_CSV) {
        print_csv_header(stdout);
    } else if (a->n_ckpt > 1) {
        fputs("[", stdout);
    }
}

/* Probe every checkpoint (one that fails to load or run does not stop the
 * others; one that is not a readable file stops the command before any). */
static int probe_all(probe_args *a)
{
    sive_dataset *train = NULL, *test = NULL;
    if (cli_open_data("sive probe", a->data_dir, &train, &test, a->cfg.quiet))
        return EXIT_RUN;
    a->train = a->cfg.train = train;
    a->cfg.test = test; /* for --eval-data test */
    int refused = probe_cfg_check(&a->cfg, sive_dataset_count(train));
    /* after the usage checks (exit 2 first), before any run: a typo in the
     * last of many checkpoints must not show up hours later */
    int unreadable = 0;
    for (int i = 0; i < a->n_ckpt && !refused; i++)
        unreadable |= cli_in_check(a->ckpts[i]) != 0;
    if (refused || unreadable || h_from_use(a) ||
        (a->traces && !(a->tf = cli_out_open(&a->tout, "sive probe", a->traces)))) {
        sive_dataset_free(train);
        sive_dataset_free(test);
        return refused ? refused : EXIT_RUN;
    }
    if (a->tf)
        traces_header(a->tf);
    progress_catch_sigint();
    a->pg = progress_new(!a->cfg.quiet);
    progress_plan(a->pg, "sive probe", "checkpoints", a->n_ckpt);
    print_preamble(a);
    summary_init(&a->summary);
    int status = 0;
    for (int i = 0; i < a->n_ckpt && !progress_interrupted(); i++) {
        int s = probe_one(a, i);
        status = s > status ? s : status;
    }
    if (a->fmt == FMT_JSON)
        fputs(a->n_ckpt > 1 ? "]\n" : "\n", stdout);
    else if (a->fmt == FMT_TABLE) /* also after an interrupt: what was done */
        summary_print(stdout, &a->summary, a->flags);
    cli_table_free(&a->summary);
    /* the traces of the checkpoints probed, also after an interrupt */
    if (a->tout && cli_out_commit(a->tout))
        status = status ? status : EXIT_RUN;
    progress_free(a->pg);
    sive_dataset_free(train);
    sive_dataset_free(test);
    return status;
}

/* The rank that computes unit u = i*K + c.  Without a radius search to
 * share, u mod R.  With one (a->share), chain 0 of checkpoint i first, on
 * rank i mod R, which searches and broadcasts its result; the other
 * units, in order, round-robin after those (equal work each). */
static int unit_rank(const probe_args *a, int u, int32_t K, int R)
{
    if (!a->share)
        return u % R;
    const int i = u / K, c = u % K;
    return c == 0 ? i % R : (a->n_ckpt + i * (K - 1) + c - 1) % R;
}

/* Rank 0: receive the other ranks' units, then, only if none failed,
 * merge and print checkpoint by checkpoint.  Returns the exit status. */
static int mpi_collect(probe_args *a, char **buf, int64_t *len, int *fail, int32_t K, int R)
{
    const int U = a->n_ckpt * K;
    for (int u = 0; u < U; u++) {
        const int src = unit_rank(a, u, K, R);
        if (src && cli_mpi_recv(src, &buf[u], &len[u], &fail[u])) {
            fprintf(stderr, "sive probe: lost the connection to rank %d\n", src);
            return EXIT_RUN;
        }
    }
    for (int u = 0; u < U; u++)
        if (fail[u]) {
            fprintf(stderr, "sive probe: rank %d, unit %d (checkpoint %s, chain %d) failed: %s\n",
                    unit_rank(a, u, K, R), u, a->ckpts[u / K], (int)(u % K),
                    buf[u] ? buf[u] : "out of memory");
            return EXIT_RUN;
        }
    sive_result **got = calloc((size_t)(unsigned)U + 1, sizeof *got);
    double *sec = calloc((size_t)(unsigned)a->n_ckpt + 1, sizeof *sec); /* summed over the units */
    int status = got && sec ? 0 : EXIT_RUN;
    for (int u = 0; u < U && !status; u++) {
        char *note = NULL;
        ckpt_info one = {0};
        int64_t blis;
        double t = 0.0;
        char why[1024];
        if (cli_mpi_unpack(buf[u], len[u], &got[u], &note, why, sizeof why)) {
            fprintf(stderr, "sive probe: unit %d: %s\n", u, why);
            status = EXIT_RUN;
        } else if (!note_parse(note, &one, &blis, &t, NULL)) {
            sec[u / K] += t;
        }
        sive_free(note);
    }
    if (status) {
        free(sec);
        return status;
    }
    print_preamble(a);
    summary_init(&a->summary);
    for (int i = 0; i < a->n_ckpt; i++) {
        int s = mpi_emit(a, i, got + (size_t)i * K, K, sec[i]);
        status = s > status ? s : status;
    }
    if (a->fmt == FMT_JSON)
        fputs(a->n_ckpt > 1 ? "]\n" : "\n", stdout);
    else if (a->fmt == FMT_TABLE)
        summary_print(stdout, &a->summary, a->flags);
    cli_table_free(&a->summary);
    for (int u = 0; got && u < U; u++)
        sive_result_free(got[u]);
    free(got);
    free(sec);
    return status;
}

/* Every rank computes the units u = i*K + c with u % R == rank (equal
 * work each: one chain of one checkpoint); ranks other than 0 send them
 * to rank 0.  Rank 0 writes everything, and nothing when a unit failed. */
/* The work this rank plans: the units (checkpoints x chains), the
 * checkpoints' paths, every option that changes a chain and the training
 * data's content (0 when it cannot be opened). */
static uint64_t probe_plan(const probe_args *a, int64_t units, const sive_dataset *train)
{
    uint64_t h = cli_hash(CLI_HASH_START, &units, sizeof units);
    for (int i = 0; i < a->n_ckpt; i++)
        h = cli_hash(h, a->ckpts[i], strlen(a->ckpts[i]) + 1);
    uint64_t data = sive_dataset_hash(train);
    return cli_hash(cli_hash_options(h, a->cfg.p), &data, sizeof data);
}

/* Whether a run of c's probe on n_examples examples may choose its radius
 * from the loss: c_h auto, or no radius and the sampler left to the
 * defaults, which search only on an exact loss: with a data set, the
 * whole of it in each gradient, without replacement (the Metropolis
 * sampler's condition, sampler_mala.c).  A guess on the side of a search:
 * a wrong yes costs a wait, a wrong no every unit's own search. */
int probe_radius_searched(const probe_cfg *c, uint64_t n_examples)
{
    double ch = 1.0;
    sive_probe_get_double(c->p, SIVE_OPT_C_H, &ch);
    if (c->radius)
        return !strcmp(c->radius, "--c-h") && ch == 0.0;
    return cli_opt_int(c->p, SIVE_OPT_METROPOLIS) < 0 &&
           cli_opt_int(c->p, SIVE_OPT_REPLACEMENT) == 0 &&
           (uint64_t)cli_opt_int(c->p, SIVE_OPT_GRAD_BATCH) == n_examples;
}

/* src[i] when checkpoint i's chain-0 unit failed: its other units are not
 * run (the run fails at its unit). */
static char share_failed;
#define SHARE_FAILED ((sive_result *)(void *)&share_failed)

/* Unit u on this rank into buf[u], len[u], fail[u] (1 when it failed).
 * from (NULL: none) is its checkpoint's chain-0 result, whose radius it
 * takes when that chose its radius from the loss. */
static int mpi_unit(probe_args *a, int u, int32_t K, int data_bad, sive_result **from,
                    char **buf, int64_t *len, int *fail)
{
    const char *why = data_bad ? "cannot open the training data"
                      : from && *from == SHARE_FAILED
                          ? "not run: the unit of chain 0, which chooses the radius, failed"
                          : NULL;
    if (why) {
        buf[u] = strdup(why);
        len[u] = buf[u] ? (int64_t)strlen(buf[u]) : 0;
        return fail[u] = 1;
    }
    /* refused (left unset) when chain 0's run did not choose its radius */
    if (from && *from)
        sive_probe_set_radius_from(a->cfg.p, *from);
    fail[u] = unit_run(a, u / K, u % K, &buf[u], &len[u]);
    if (from)
        sive_probe_set_radius_from(a->cfg.p, NULL);
    return fail[u];
}

/* Every checkpoint's chain-0 unit from the rank that ran it to all (in
 * checkpoint order: collective), unpacked into src[i] (SHARE_FAILED when
 * it failed). */
static void mpi_share(probe_args *a, int32_t K, int R, int rank, char **buf, int64_t *len,
                      int *fail, sive_result **src)
{
    for (int i = 0; i < a->n_ckpt; i++) {
        const int u = i * K, root = unit_rank(a, u, K, R);
        char *b = rank == root ? buf[u] : NULL, why[1024];
        int64_t n = rank == root ? len[u] : 0;
        int bad = rank == root ? fail[u] : 0;
        cli_mpi_bcast_from(root, &b, &n, &bad);
        char *note = NULL;
        if (bad || cli_mpi_unpack(b, n, &src[i], &note, why, sizeof why))
            src[i] = SHARE_FAILED;
        sive_free(note);
        if (rank != root)
            free(b);
    }
}

static int probe_all_mpi(probe_args *a, int R, int rank)
{
    int split = cli_opt_int(a->cfg.p, SIVE_OPT_CHAIN_BEGIN) ||
                cli_opt_int(a->cfg.p, SIVE_OPT_CHAIN_END) || a->save;
    if (split && rank == 0)
        fprintf(stderr, "sive probe: under mpirun the ranks split the chains: no "
                        "--chain-range or --save-result\n");
    /* every rank stops, also when only another one has these flags */
    if (cli_mpi_go("sive probe", split ? EXIT_USAGE : -1) >= 0)
        return EXIT_USAGE;
    const int32_t K = (int32_t)cli_opt_int(a->cfg.p, SIVE_OPT_CHAINS);
    const int U = a->n_ckpt * K;
    sive_dataset *train = NULL, *test = NULL;
    int data_bad = cli_open_data("sive probe", a->data_dir, &train, &test, 1);
    a->train = a->cfg.train = train;
    a->cfg.test = test; /* for --eval-data test */
    /* every rank computes and sends the units of one plan, or none does
     * (another --chains or checkpoint list left rank 0 waiting forever) */
    int agreed = cli_mpi_agree("sive probe", probe_plan(a, U, train),
                               "--chains, checkpoints, options or --data");
    /* the options the library refuses for this data, before any unit:
     * the ranks agreed on options and data, so all stop alike (exit 2, as
     * without mpirun); rank 0 says why */
    if (agreed < 0 && !data_bad) {
        char err[300];
        int bad = eval_specs_data_check(&a->cfg, err, sizeof err) ? 1
                  : orbit_refused(&a->cfg, err, sizeof err)          ? 1
                  : cfg_refused(&a->cfg, sive_dataset_count(train)) ? 2
                                                                     : 0;
        if (bad && rank == 0)
            fprintf(stderr, "%s: %s\n", cli_cmd, bad == 1 ? err : sive_probe_errmsg(a->cfg.p));
        if (bad)
            agreed = EXIT_USAGE;
    }
    /* every checkpoint a readable file before any unit, as without mpirun
     * (probe_all): a missing one named ("file not found", not the loader's
     * "input/output error" of its unit), exit EXIT_RUN, nothing written.
     * Rank 0 checks and says why first; then the other ranks, whose files
     * may differ (rank 0 then names the rank that stopped) */
    for (int turn = 0; turn < 2 && agreed < 0; turn++) {
        int unreadable = 0;
        for (int i = 0; i < a->n_ckpt && (rank == 0) == (turn == 0); i++)
            unreadable |= cli_in_check(a->ckpts[i]) != 0;
        if (cli_mpi_go("sive probe", unreadable ? EXIT_RUN : -1) >= 0)
            agreed = EXIT_RUN;
    }
    if (agreed >= 0) {
        sive_dataset_free(train);
        sive_dataset_free(test);
        return agreed;
    }
    a->pg = progress_new(0);
    char **buf = calloc((size_t)(unsigned)U + 1, sizeof *buf);
    int64_t *len = calloc((size_t)(unsigned)U + 1, sizeof *len);
    int *fail = calloc((size_t)(unsigned)U + 1, sizeof *fail), status = 0;
    sive_result **src = calloc((size_t)(unsigned)a->n_ckpt + 1, sizeof *src);
    if (!buf || !len || !fail || !src)
        return EXIT_RUN; /* every rank is out of memory alike */
    /* a radius from the loss is searched once per checkpoint: by its
     * chain-0 unit, whose result every rank then has (mpi_share) */
    a->share = !a->h_from_r && probe_radius_searched(&a->cfg, sive_dataset_count(train));
    if (h_from_use(a))
        status = EXIT_RUN; /* this rank searches its own radius: no rank waits */
    if (a->share)
        for (int u = 0; u < U; u += K)
            if (unit_rank(a, u, K, R) == rank)
                status = mpi_unit(a, u, K, data_bad, NULL, buf, len, fail) ? EXIT_RUN : status;
    if (a->share)
        mpi_share(a, K, R, rank, buf, len, fail, src);
    for (int u = 0; u < U; u++)
        if (unit_rank(a, u, K, R) == rank && !(a->share && u % K == 0))
            status = mpi_unit(a, u, K, data_bad, a->share ? &src[u / K] : NULL, buf, len, fail)
                         ? EXIT_RUN
                         : status;
    for (int i = 0; i < a->n_ckpt; i++)
        sive_result_free(src[i] && src[i] != SHARE_FAILED ? src[i] : NULL);
    free(src);
    sive_probe_set_int(a->cfg.p, SIVE_OPT_CHAIN_BEGIN, 0); /* the settings shown */
    sive_probe_set_int(a->cfg.p, SIVE_OPT_CHAIN_END, 0);
    for (int u = 0; rank && u < U; u++)
        if (unit_rank(a, u, K, R) == rank && cli_mpi_send(buf[u], len[u], fail[u]))
            status = EXIT_RUN;
    if (rank == 0) {
        if (a->traces && !(a->tf = cli_out_open(&a->tout, "sive probe", a->traces))) {
            status = EXIT_RUN;
        } else {
            if (a->tf)
                traces_header(a->tf);
            status = mpi_collect(a, buf, len, fail, K, R);
        }
        /* a failed unit: no traces file either */
        if (a->tf && status)
            cli_out_abort(a->tout);
        else if (a->tf && cli_out_commit(a->tout))
            status = EXIT_RUN;
    }
    for (int u = 0; u < U; u++)
        free(buf[u]);
    free(buf);
    free(len);
    free(fail);
    progress_free(a->pg);
    sive_dataset_free(train);
    sive_dataset_free(test);
    return status;
}

int cmd_probe(int argc, char **argv)
{
    probe_args a;
    memset(&a, 0, sizeof a);
    a.fmt = FMT_TABLE;
    int R = cli_mpi_start(&argc, &argv);
    if (R < 0) {
        fprintf(stderr, "sive probe: MPI_Init failed\n");
        return EXIT_RUN;
    }
    /* every rank reaches cli_mpi_go, so that none waits for one that
     * could not start */
    int status = probe_cfg_init(&a.cfg) ? EXIT_RUN : probe_parse(&a, argc, argv);
    status = cli_mpi_go("sive probe", status);
    if (status < 0)
        status = R > 1 ? probe_all_mpi(&a, R, cli_mpi_rank()) : probe_all(&a);
    sive_result_free(a.h_from_r);
    probe_cfg_free(&a.cfg);
    cli_mpi_end();
    return status;
}

/* ------------------------------------------------------------------ */
/* `sive merge`                                                       */
/* ------------------------------------------------------------------ */

static const char merge_usage[] =
    "usage: sive merge [--format table|json|csv] [--quiet] FILE...\n"
    "Combines result files of disjoint chain ranges of one probe (made by\n"
    "'sive probe --chain-range A:B --save-result FILE') and prints what the\n"
    "whole 'sive probe' would have printed: the same numbers, bit for bit\n"
    "('seconds' is the sum of the parts').  Parts of different probes,\n"
    "overlapping or missing chains are refused.\n";

/* Part 0's note's sampler line (note_parse: 1 "sampler auto", 2
 * "metropolis auto"). */
static int merge_sampler_auto;

/* The probe settings the merged run used, for the settings line (with
 * "sampler auto", the settings the whole run printed: metropolis auto and
 * the radius at its default, not what they resolved to; with "metropolis
 * auto", metropolis auto and the radius given, the result's). */
/* kron_every, radius_lookahead and radius_check: the note does not say whether they
 * were given, so a part's value equal to what "auto" resolves to reads as
 * auto (the same run either way): 8 / 0 only where the sampler was left
 * to the defaults ("sampler auto") and resolved to the exact path, else 0;
 * the CLI's MLP supplies no curvature, so kron auto is 0. */
static int merge_autos(probe_cfg *c, const sive_result *r)
{
    int64_t m = 0, kron = 0, look = 0;
    double ch = 1.0;
    sive_result_option_int(r, SIVE_OPT_METROPOLIS, &m);
    sive_result_option_int(r, SIVE_OPT_KRON_EVERY, &kron);
    sive_result_option_int(r, SIVE_OPT_RADIUS_LOOKAHEAD, &look);
    sive_result_option_double(r, SIVE_OPT_C_H, &ch);
    if (kron == 0 && sive_probe_set_int(c->p, SIVE_OPT_KRON_EVERY, -1))
        return -1;
    int64_t check = 0; /* 0 is what auto gives on the CLI's ULA runs */
    sive_result_option_int(r, SIVE_OPT_RADIUS_CHECK, &check);
    if (check == 0 && sive_probe_set_int(c->p, SIVE_OPT_RADIUS_CHECK, -1))
        return -1;
    if (look == (merge_sampler_auto == 1 && m == 1 && ch == 0.0 ? 8 : 0) &&
        sive_probe_set_int(c->p, SIVE_OPT_RADIUS_LOOKAHEAD, -1))
        return -1;
    return 0;
}

static int merge_cfg(probe_cfg *c, const sive_result *r, int64_t blis)
{
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        int64_t iv;
        double dv;
        if (in->type == SIVE_TYPE_INT) {
            if (sive_result_option_int(r, in->id, &iv) || sive_probe_set_int(c->p, in->id, iv))
                return -1;
        } else if (!sive_result_option_double(r, in->id, &dv) && !isnan(dv) &&
                   sive_probe_set_double(c->p, in->id, dv)) {
            return -1; /* NaN: no anchor, or the radius mode not in use */
        }
    }
    if (merge_sampler_auto == 1 && sive_probe_set_double(c->p, SIVE_OPT_C_H, 1.0))
        return -1;
    if (merge_sampler_auto && sive_probe_set_int(c->p, SIVE_OPT_METROPOLIS, -1))
        return -1;
    if (merge_autos(c, r))
        return -1;
    if (merge_sampler_auto == 2) /* the radius the parts were given */
        c->radius = isnan(cli_opt_double(c->p, SIVE_OPT_H)) ? "--c-h" : "--h";
    c->threads_set = 1;
    c->blis_threads = blis;
    return 0;
}

/* The checkpoint a part's note describes is part 0's (the library checks
 * theta*, the model's identity and the options; the note's epoch, seed,
 * layers and losses are printed from part 0, so they must agree too). */
static int same_checkpoint(const ckpt_info *a, const ckpt_info *b)
{
    return a->meta.epoch == b->meta.epoch && a->meta.seed == b->meta.seed &&
           !memcmp(a->sizes, b->sizes, sizeof a->sizes) && a->dim == b->dim &&
           !memcmp(&a->meta.train_loss, &b->meta.train_loss, sizeof(double)) &&
           !memcmp(&a->meta.test_loss, &b->meta.test_loss, sizeof(double));
}

/* Load every part; *seconds sums theirs; *odd is the first part whose
 * note describes another checkpoint than part 0's (*odd_ci), or -1.
 * Returns an exit status. */
static int merge_load(char **paths, int n, sive_result **parts, char **notes, ckpt_info *ci,
                      int64_t *blis, double *seconds, int *odd, ckpt_info *odd_ci)
{
    *seconds = 0.0;
    *odd = -1;
    for (int i = 0; i < n; i++)
        if (cli_in_check(paths[i])) /* "file not found" before any part is read */
            return EXIT_RUN;
    for (int i = 0; i < n; i++) {
        int rc = sive_result_load(paths[i], &parts[i], &notes[i]);
        if (rc) {
            fprintf(stderr, "sive merge: %s (%s)\n", sive_last_errmsg(), sive_strerror(rc));
            return EXIT_RUN;
        }
        ckpt_info one = {0};
        double sec = 0.0;
        int64_t bl = 0;
        if (note_parse(notes[i], i ? &one : ci, i ? &bl : blis, &sec,
                       i ? NULL : &merge_sampler_auto)) {
            fprintf(stderr, "sive merge: %s: not saved by 'sive probe --save-result'\n",
                    paths[i]);
            return EXIT_RUN;
        }
        if (i && *odd < 0 && !same_checkpoint(ci, &one)) {
            *odd = i;
            *odd_ci = one;
        }
        *seconds += sec;
    }
    return 0;
}

/* Print the merged result as `sive probe` prints one checkpoint. */
static int merge_print(probe_args *a, const ckpt_info *ci, const sive_result *r,
                       double seconds)
{
    char err[1024] = "";
    probe_out o = {.ci = ci, .cfg = &a->cfg, .r = r, .seconds = seconds, .err = err};
    o.rc = sive_result_status(r);
    if (o.rc)
        run_message(r, o.rc, err, sizeof err);
    int status = o.rc ? report_failure(ci->path, o.rc, err) : 0;
    a->n_ckpt = 1;
    print_preamble(a);
    summary_init(&a->summary);
    emit(a, 0, &o);
    if (a->fmt == FMT_JSON)
        fputs("\n", stdout);
    else if (a->fmt == FMT_TABLE)
        summary_print(stdout, &a->summary, a->flags);
    cli_table_free(&a->summary);
    return status;
}

static int merge_run(probe_args *a, char **paths, int n)
{
    sive_result **parts = calloc((size_t)n, sizeof *parts), *merged = NULL;
    char **notes = calloc((size_t)n, sizeof *notes);
    ckpt_info ci = {0}, odd_ci = {0};
    int64_t blis = 0;
    double seconds = 0.0;
    int odd = -1, status = parts && notes ? 0 : EXIT_RUN;
    if (!status)
        status = merge_load(paths, n, parts, notes, &ci, &blis, &seconds, &odd, &odd_ci);
    if (!status) {
        /* the library's checks first: they name theta*, options, data */
        int rc = sive_result_merge(&merged, (const sive_result *const *)parts, (size_t)n);
        if (rc) {
            fprintf(stderr, "sive merge: %s (%s)\n", sive_last_errmsg(), sive_strerror(rc));
            status = EXIT_RUN;
        } else if (odd >= 0) {
            fprintf(stderr, "sive merge: %s describes another checkpoint than %s (epoch "
                            "%lld, losses %.9g %.9g; part 0: epoch %lld, %.9g %.9g)\n",
                    paths[odd], paths[0], (long long)odd_ci.meta.epoch,
                    odd_ci.meta.train_loss, odd_ci.meta.test_loss, (long long)ci.meta.epoch,
                    ci.meta.train_loss, ci.meta.test_loss);
            status = EXIT_RUN;
        } else if (merge_cfg(&a->cfg, merged, blis)) {
            fprintf(stderr, "sive merge: the parts' options are out of range\n");
            status = EXIT_RUN;
        } else {
            status = merge_print(a, &ci, merged, seconds);
        }
    }
    sive_result_free(merged);
    for (int i = 0; parts && notes && i < n; i++) {
        sive_result_free(parts[i]);
        sive_free(notes[i]);
    }
    free(parts);
    free(notes);
    return status;
}

int cmd_merge(int argc, char **argv)
{
    static const struct option opts[] = {{"format", required_argument, 0, PO_FORMAT},
                                         {"quiet", no_argument, 0, PO_QUIET},
                                         {"help", no_argument, 0, PO_HELP}, {0, 0, 0, 0}};
    probe_args a;
    memset(&a, 0, sizeof a);
    a.fmt = FMT_TABLE;
    a.title = "SIVE merge"; /* the rest is what the whole probe prints */
    int o;
    optind = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        if (o == PO_FORMAT && !cli_format(optarg, &a.fmt))
            continue;
        if (o == PO_QUIET) {
            a.cfg.quiet = 1;
            continue;
        }
        fputs(merge_usage, o == PO_HELP ? stdout : stderr);
        return o == PO_HELP ? 0 : EXIT_USAGE;
    }
    if (optind >= argc) {
        fprintf(stderr, "sive merge: no result file given\n%s", merge_usage);
        return EXIT_USAGE;
    }
    int quiet = a.cfg.quiet;
    if (probe_cfg_init(&a.cfg))
        return EXIT_RUN;
    a.cfg.quiet = quiet;
    int status = merge_run(&a, argv + optind, argc - optind);
    probe_cfg_free(&a.cfg);
    return status;
}

/* ------------------------------------------------------------------ */
/* `sive options`: the library's option table, for people and scripts */
/* ------------------------------------------------------------------ */

/* Default and bounds of an option as text ("nan" for no default); exact:
 * every digit of a double (for scripts), else %g (for people). */
static void option_texts(const sive_option_info *in, int exact, char *def, char *lo, char *hi,
                         size_t len)
{
    const char *g = exact ? "%.17g" : "%g";
    if (in->type == SIVE_TYPE_INT) {
        snprintf(def, len, "%lld", (long long)in->int_default);
        snprintf(lo, len, "%lld", (long long)in->int_lo);
        snprintf(hi, len, "%lld", (long long)in->int_hi);
    } else {
        snprintf(def, len, g, in->double_default);
        snprintf(lo, len, g, in->double_lo);
        snprintf(hi, len, g, in->double_hi);
    }
}

/* Column widths of the table: the longest name, default and bounds. */
typedef struct option_widths {
    int name, def, range;
} option_widths;

/* def: OPTION_CELL bytes, range: 2 * OPTION_CELL + 8. */
enum { OPTION_CELL = 40 };

static void option_cells(const sive_option_info *in, char *def, char *range)
{
    char lo[OPTION_CELL], hi[OPTION_CELL];
    option_texts(in, 0, def, lo, hi, OPTION_CELL);
    if (in->type == SIVE_TYPE_DOUBLE && isnan(in->double_default))
        snprintf(def, OPTION_CELL, "none"); /* as --help says */
    snprintf(range, 2 * OPTION_CELL + 8, "%c%s, %s%c", in->lo_open ? '(' : '[', lo, hi,
             in->hi_open ? ')' : ']');
}

static option_widths option_table_widths(void)
{
    option_widths w = {(int)strlen("name"), (int)strlen("default"), (int)strlen("bounds")};
    const sive_option_info *in;
    char def[OPTION_CELL], range[2 * OPTION_CELL + 8];
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        option_cells(in, def, range);
        int n = (int)strlen(in->name), d = (int)strlen(def), r = (int)strlen(range);
        w.name = n > w.name ? n : w.name;
        w.def = d > w.def ? d : w.def;
        w.range = r > w.range ? r : w.range;
    }
    return w;
}

static void option_row(FILE *f, const sive_option_info *in, int fmt, int first,
                       const option_widths *w)
{
    char def[OPTION_CELL], lo[OPTION_CELL], hi[OPTION_CELL], range[2 * OPTION_CELL + 8];
    option_texts(in, fmt != FMT_TABLE, def, lo, hi, sizeof def);
    const char *type = in->type == SIVE_TYPE_INT ? "int" : "double";
    /* the tier (docs/abi.md): an experimental option may change or go */
    const int experimental = in->tier == SIVE_TIER_EXPERIMENTAL;
    if (fmt == FMT_JSON) {
        fprintf(f, "%s\n{\"name\":\"%s\",\"id\":%d,\"flag\":\"--%s\",\"type\":\"%s\",",
                first ? "" : ",", in->name, (int)in->id, cli_opt_flag(in), type);
        /* the integers as written (2^63 is not a double); NaN and the
         * infinite bounds of a double as null */
        const char *txt[3] = {def, lo, hi}, *key[3] = {"default", "lo", "hi"};
        for (int j = 0; j < 3; j++)
            fprintf(f, "%s\"%s\":%s", j ? "," : "", key[j],
                    in->type == SIVE_TYPE_INT || isfinite(strtod(txt[j], NULL)) ? txt[j] : "null");
        fprintf(f, ",\"lo_open\":%s,\"hi_open\":%s,\"doc\":", in->lo_open ? "true" : "false",
                in->hi_open ? "true" : "false");
        cli_json_str(f, in->doc);
        fprintf(f, ",\"experimental\":%s}", experimental ? "true" : "false");
    } else if (fmt == FMT_CSV) {
        fprintf(f, "%s,%d,--%s,%s,%s,%s,%s,%d,%d,", in->name, (int)in->id, cli_opt_flag(in), type,
                def, lo, hi, in->lo_open, in->hi_open);
        cli_csv_str(f, in->doc);
        fprintf(f, ",%d\n", experimental);
    } else {
        option_cells(in, def, range);
        fprintf(f, "%-*s  %-6s  %-*s  %-*s  %s%s\n", w->name, in->name, type, w->def, def,
                w->range, range, experimental ? "(experimental) " : "", in->doc);
    }
}

static const char options_usage[] =
    "usage: sive options [--format table|json|csv]\n"
    "Prints the library's probe options (sive_option_at()): name, type,\n"
    "default, bounds and description, and which are experimental (they may\n"
    "change or go in any release; docs/abi.md).  The probe, trajectory and toy\n"
    "flags are these names with '_' -> '-' (e.g. base_lr -> --base-lr).\n";

int cmd_options(int argc, char **argv)
{
    static const struct option opts[] = {{"format", required_argument, 0, PO_FORMAT},
                                         {"help", no_argument, 0, PO_HELP}, {0, 0, 0, 0}};
    int fmt = FMT_TABLE, o;
    optind = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        if (o == PO_FORMAT && !cli_format(optarg, &fmt))
            continue;
        fputs(options_usage, o == PO_HELP ? stdout : stderr);
        return o == PO_HELP ? 0 : EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "sive options: unexpected argument '%s'\n%s", argv[optind], options_usage);
        return EXIT_USAGE;
    }
    option_widths w = option_table_widths();
    if (fmt == FMT_TABLE)
        printf("%-*s  %-6s  %-*s  %-*s  %s\n", w.name, "name", "type", w.def, "default",
               w.range, "bounds", "description");
    else if (fmt == FMT_CSV)
        puts("name,id,flag,type,default,lo,hi,lo_open,hi_open,doc,experimental");
    else
        putchar('[');
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++)
        option_row(stdout, in, fmt, i == 0, &w);
    if (fmt == FMT_JSON)
        puts("]");
    return 0;
}
