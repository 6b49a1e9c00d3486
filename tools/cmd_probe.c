/* `sive probe`: lambda-hat and diagnostics for saved checkpoints. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PO_STEPS = 300, PO_GROUPS, PO_EVAL_BATCH, PO_GRAD_BATCH, PO_C_H, PO_H, PO_BASE_LR,
       PO_T, PO_BURN_IN, PO_CHAINS, PO_THREADS, PO_BLIS_THREADS, PO_STRIDE, PO_SEED,
       PO_ANCHOR, PO_DATA, PO_FORMAT, PO_QUIET, PO_HELP, PO_TRACES };

const struct option probe_longopts[] = {
    {"steps", required_argument, 0, PO_STEPS},
    {"groups", required_argument, 0, PO_GROUPS},
    {"eval-batch", required_argument, 0, PO_EVAL_BATCH},
    {"grad-batch", required_argument, 0, PO_GRAD_BATCH},
    {"c-h", required_argument, 0, PO_C_H},
    {"h", required_argument, 0, PO_H},
    {"base-lr", required_argument, 0, PO_BASE_LR},
    {"t", required_argument, 0, PO_T},
    {"burn-in", required_argument, 0, PO_BURN_IN},
    {"chains", required_argument, 0, PO_CHAINS},
    {"threads", required_argument, 0, PO_THREADS},
    {"blis-threads", required_argument, 0, PO_BLIS_THREADS},
    {"eval-stride", required_argument, 0, PO_STRIDE},
    {"anchor", required_argument, 0, PO_ANCHOR},
    {0, 0, 0, 0}};

const char probe_usage_opts[] =
    "probe (defaults: the paper's DNN operating point):\n"
    "  --t T               inverse temperature t = n*beta (1e4)\n"
    "  --base-lr A         base step a = eta*t (0.05)\n"
    "  --c-h C             adaptive radius h = C*||theta*||/sqrt(d) (1)\n"
    "  --h H               absolute radius instead of --c-h\n"
    "  --steps M           Langevin steps per chain (100000)\n"
    "  --burn-in F         burn-in fraction alpha of the steps (0.3)\n"
    "  --groups N          evaluation groups per step (512)\n"
    "  --eval-batch B      examples per evaluation group (64)\n"
    "  --grad-batch B      examples per gradient batch (1024)\n"
    "  --chains K          independent chains (5)\n"
    "  --threads J         chains run in parallel (default: min(K, cpus))\n"
    "  --blis-threads J    BLIS threads per chain (default: cpus / threads)\n"
    "  --eval-stride k     evaluate every k-th step (1)\n"
    "  --anchor L          also report t*(mean tail loss - L)\n";

void probe_defaults(probe_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->t = 1e4;
    c->base_lr = 0.05;
    c->c_h = 1.0;
    c->h = NAN;
    c->burn_in = 0.3;
    c->anchor = NAN;
    c->steps = 100000;
    c->groups = 512;
    c->eval_batch = 64;
    c->grad_batch = 1024;
    c->chains = 5;
    c->threads = 0;      /* auto */
    c->blis_threads = 0; /* auto */
    c->stride = 1;
}

int probe_option(probe_cfg *c, int code, const char *arg)
{
    int64_t iv;
    double dv;
    switch (code) {
    case PO_STEPS: if (cli_int("--steps", arg, 2, (int64_t)1 << 40, &iv)) return -1; c->steps = iv; return 1;
    case PO_GROUPS: if (cli_int("--groups", arg, 2, 1 << 20, &iv)) return -1; c->groups = iv; return 1;
    case PO_EVAL_BATCH: if (cli_int("--eval-batch", arg, 1, 1 << 24, &iv)) return -1; c->eval_batch = iv; return 1;
    case PO_GRAD_BATCH: if (cli_int("--grad-batch", arg, 1, 1 << 24, &iv)) return -1; c->grad_batch = iv; return 1;
    case PO_C_H: if (cli_double("--c-h", arg, 1e-12, 1e12, &dv)) return -1; c->c_h = dv; c->h = NAN; return 1;
    case PO_H: if (cli_double("--h", arg, 1e-12, 1e12, &dv)) return -1; c->h = dv; return 1;
    case PO_BASE_LR: if (cli_double("--base-lr", arg, 1e-12, 1.0, &dv)) return -1; c->base_lr = dv; return 1;
    case PO_T: if (cli_double("--t", arg, 1e-12, 1e12, &dv)) return -1; c->t = dv; return 1;
    case PO_BURN_IN: if (cli_double("--burn-in", arg, 0.0, 0.99, &dv)) return -1; c->burn_in = dv; return 1;
    case PO_CHAINS: if (cli_int("--chains", arg, 1, 4096, &iv)) return -1; c->chains = iv; return 1;
    case PO_THREADS: if (cli_int("--threads", arg, 1, 1024, &iv)) return -1; c->threads = iv; return 1;
    case PO_BLIS_THREADS: if (cli_int("--blis-threads", arg, 1, 1024, &iv)) return -1; c->blis_threads = iv; return 1;
    case PO_STRIDE: if (cli_int("--eval-stride", arg, 1, 1 << 20, &iv)) return -1; c->stride = iv; return 1;
    case PO_ANCHOR: if (cli_double("--anchor", arg, -1e300, 1e300, &dv)) return -1; c->anchor = dv; return 1;
    default: return 0;
    }
}

/* Probe threads and BLIS threads per chain: chains in parallel first (they
 * scale perfectly), the remaining cores go to each chain's matrix products. */
static void thread_plan(const probe_cfg *c, int64_t *threads, int64_t *blis)
{
    int64_t cpus = cli_cpus();
    int64_t t = c->threads > 0 ? c->threads : (c->chains < cpus ? c->chains : cpus);
    int64_t par = t < c->chains ? t : c->chains;
    *threads = t;
    *blis = c->blis_threads > 0 ? c->blis_threads : (cpus / par > 0 ? cpus / par : 1);
}

void probe_print_settings(FILE *f, const probe_cfg *c)
{
    int64_t th, bl;
    thread_plan(c, &th, &bl);
    fprintf(f, "t = %g, base_lr = %g, ", c->t, c->base_lr);
    if (isnan(c->h))
        fprintf(f, "h = %g*||theta*||/sqrt(d)", c->c_h);
    else
        fprintf(f, "h = %g", c->h);
    fprintf(f, ", M = %lld, burn-in %g, N = %lld, B_eval = %lld, B_grad = %lld, "
               "chains %lld, eval stride %lld, seed %llu, threads %lld x BLIS %lld",
            (long long)c->steps, c->burn_in, (long long)c->groups, (long long)c->eval_batch,
            (long long)c->grad_batch, (long long)c->chains, (long long)c->stride,
            (unsigned long long)c->seed, (long long)th, (long long)bl);
    if (isfinite(c->anchor))
        fprintf(f, ", anchor %.10g", c->anchor);
}

void probe_json_settings(FILE *f, const probe_cfg *c)
{
    int64_t th, bl;
    thread_plan(c, &th, &bl);
    fprintf(f, "\"t\":%.10g,\"base_lr\":%.10g,\"c_h\":", c->t, c->base_lr);
    cli_json_num(f, isnan(c->h) ? c->c_h : NAN);
    fputs(",\"h_abs\":", f);
    cli_json_num(f, c->h);
    fprintf(f, ",\"steps\":%lld,\"burn_in\":%.10g,\"groups\":%lld,\"eval_batch\":%lld,"
               "\"grad_batch\":%lld,\"chains\":%lld,\"eval_stride\":%lld,\"seed\":%llu,"
               "\"threads\":%lld,\"blis_threads\":%lld,\"anchor\":",
            (long long)c->steps, c->burn_in, (long long)c->groups, (long long)c->eval_batch,
            (long long)c->grad_batch, (long long)c->chains, (long long)c->stride,
            (unsigned long long)c->seed, (long long)th, (long long)bl);
    cli_json_num(f, c->anchor);
}

int probe_run(const probe_cfg *c, const sive_mlp *m, const float *theta,
              const sive_dataset *train, progress *pg, const char *label,
              sive_result **out, double *seconds, char *err, size_t errlen)
{
    *out = NULL;
    *seconds = 0.0;
    int64_t threads, blis;
    thread_plan(c, &threads, &blis);
    sive_probe *p = NULL;
    sive_mlp_binding *b = NULL;
    int rc = sive_probe_new(&p, sive_mlp_dim(m));
    if (rc) {
        snprintf(err, errlen, "%s", sive_last_errmsg());
        return rc;
    }
    if ((rc = sive_probe_set_double(p, SIVE_OPT_T, c->t)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_BASE_LR, c->base_lr)) ||
        (rc = isnan(c->h) ? sive_probe_set_double(p, SIVE_OPT_C_H, c->c_h)
                          : sive_probe_set_double(p, SIVE_OPT_H, c->h)) ||
        (rc = sive_probe_set_double(p, SIVE_OPT_BURN_IN, c->burn_in)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_STEPS, c->steps)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_GROUPS, c->groups)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_EVAL_BATCH, c->eval_batch)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_GRAD_BATCH, c->grad_batch)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_CHAINS, c->chains)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_THREADS, threads)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_SEED, (int64_t)c->seed)) ||
        (rc = sive_probe_set_int(p, SIVE_OPT_EVAL_STRIDE, c->stride)) ||
        (isfinite(c->anchor) && (rc = sive_probe_set_double(p, SIVE_OPT_ANCHOR, c->anchor)))) {
        snprintf(err, errlen, "%s", sive_probe_errmsg(p));
        goto out;
    }
    if ((rc = sive_mlp_probe_bind(&b, p, m, train, (int32_t)c->chains, (int)blis))) {
        snprintf(err, errlen, "%s", sive_last_errmsg());
        goto out;
    }
    /* registered even without a bar: it is how Ctrl-C stops a run */
    sive_probe_set_progress(p, progress_cb, pg);
    progress_start(pg, label, (int32_t)c->chains, c->steps);
    double t0 = cli_now();
    rc = sive_probe_run_f32(p, theta, out);
    *seconds = cli_now() - t0;
    progress_done(pg);
    if (rc) {
        int code = sive_probe_callback_code(p);
        if (rc == SIVE_E_CALLBACK && code)
            snprintf(err, errlen, "%s (callback status %d: %s)", sive_probe_errmsg(p), code,
                     sive_strerror(code));
        else if (rc == SIVE_E_CANCELLED && progress_interrupted())
            snprintf(err, errlen, "interrupted");
        else
            snprintf(err, errlen, "%s", sive_probe_errmsg(p));
    }
out:
    sive_probe_free(p);
    sive_mlp_binding_free(b);
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

static const char *chain_status_str(sive_chain_status s)
{
    switch (s) {
    case SIVE_CHAIN_OK: return "ok";
    case SIVE_CHAIN_DIVERGED: return "diverged";
    case SIVE_CHAIN_CALLBACK: return "callback error";
    case SIVE_CHAIN_ABORTED: return "aborted";
    default: return "invalid";
    }
}

static double summ(const sive_result *r, sive_stat s) { return sive_result_stat(r, s, SIVE_SUMMARY); }

static void row_pm(FILE *f, const char *name, const sive_result *r, sive_stat s)
{
    fprintf(f, "  %-26s", name);
    cli_pm(f, summ(r, s), sive_result_stat_std(r, s), 0);
    fputc('\n', f);
}

static void print_health_lines(FILE *f, const char *h, const char *prefix)
{
    if (!*h) {
        fprintf(f, "%shealthy (no flag raised)\n", prefix);
        return;
    }
    while (*h) {
        const char *nl = strchr(h, '\n');
        int len = nl ? (int)(nl - h) : (int)strlen(h);
        if (len)
            fprintf(f, "%s%.*s\n", prefix, len, h);
        h += len + (nl ? 1 : 0);
    }
}

static void print_table(FILE *f, const ckpt_info *ci, const probe_cfg *c, const sive_result *r,
                        double seconds, int rc, const char *err)
{
    fprintf(f, "== %s", ci->path);
    if (ci->dim)
        fprintf(f, ": epoch %lld, %zu-%zu-%zu-%zu (d = %zu), train loss %.4f, test loss %.4f",
                (long long)ci->meta.epoch, ci->sizes[0], ci->sizes[1], ci->sizes[2],
                ci->sizes[3], ci->dim, ci->meta.train_loss, ci->meta.test_loss);
    fputc('\n', f);
    if (!r) {
        fprintf(f, "  error: %s (%s)\n\n", err, sive_strerror(rc));
        return;
    }
    int32_t K = sive_result_chains(r), ok = sive_result_chains_ok(r);
    fprintf(f, "  (mean ± std over %d chains)\n", (int)ok);
    row_pm(f, "lambda-hat (SIVE)", r, SIVE_STAT_SIVE);
    row_pm(f, "SIVE unclipped", r, SIVE_STAT_SIVE_UNCLIPPED);
    row_pm(f, "raw variance t^2 Var(L)", r, SIVE_STAT_RAW_VARIANCE);
    row_pm(f, "online mean (naive)", r, SIVE_STAT_ONLINE_MEAN);
    if (isfinite(c->anchor))
        row_pm(f, "anchored mean", r, SIVE_STAT_ANCHORED_MEAN);
    fprintf(f, "  %-26s%.6f (min %.6f)\n", "tail mean loss", summ(r, SIVE_STAT_TAIL_MEAN_LOSS),
            summ(r, SIVE_STAT_TAIL_MIN_LOSS));
    fprintf(f, "  %-26s%.4f\n", "MCSE (SIVE, chain mean)", sive_result_mcse(r));
    fprintf(f, "  %-26s%.0f\n", "ESS (all chains)", sive_result_ess(r));
    fprintf(f, "  %-26s%.4f\n", "split-Rhat", sive_result_rhat(r));
    fprintf(f, "  %-26s%.4f ± %.4f\n", "noise correction C", sive_result_noise_correction(r),
            sive_result_noise_correction_std(r));
    fprintf(f, "  %-26s%.6g (tether step eta/h^2 %.3g)\n", "h", summ(r, SIVE_STAT_H),
            summ(r, SIVE_STAT_TETHER_STEP));
    fprintf(f, "  %-26s%.6g\n", "slope proxy t^2 h^2 |g|^2", summ(r, SIVE_STAT_SLOPE_PROXY));
    fprintf(f, "  %-26s%.4f\n", "RMS displacement / h", summ(r, SIVE_STAT_RMS_DISP_REL_H));
    fprintf(f, "  %-26s%d/%d", "chains ok", (int)ok, (int)K);
    for (int32_t k = 0; k < K; k++) {
        int64_t step = 0;
        sive_chain_status s = sive_result_chain_status(r, k, &step);
        if (s != SIVE_CHAIN_OK)
            fprintf(f, "; chain %d %s at step %lld", (int)k, chain_status_str(s), (long long)step);
    }
    fputc('\n', f);
    int64_t steps = 0;
    for (int32_t k = 0; k < K; k++) {
        int64_t s = 0;
        sive_result_chain_status(r, k, &s);
        steps += s;
    }
    fprintf(f, "  %-26s%.1f s (%.0f chain steps/s)\n", "time", seconds,
            seconds > 0 ? (double)steps / seconds : NAN);
    if (rc)
        fprintf(f, "  error: %s (%s)\n", err, sive_strerror(rc));
    print_health_lines(f, sive_result_health(r), "  health: ");
    fputc('\n', f);
}

static const struct {
    const char *key;
    sive_stat stat;
} json_pm[] = {
    {"sive", SIVE_STAT_SIVE},
    {"sive_unclipped", SIVE_STAT_SIVE_UNCLIPPED},
    {"raw_variance", SIVE_STAT_RAW_VARIANCE},
    {"online_mean", SIVE_STAT_ONLINE_MEAN},
    {"anchored_mean", SIVE_STAT_ANCHORED_MEAN},
    {"tail_mean_loss", SIVE_STAT_TAIL_MEAN_LOSS},
    {"tail_min_loss", SIVE_STAT_TAIL_MIN_LOSS},
    {"h", SIVE_STAT_H},
    {"tether_step", SIVE_STAT_TETHER_STEP},
    {"slope_proxy", SIVE_STAT_SLOPE_PROXY},
    {"grad_norm2_start", SIVE_STAT_GRAD_NORM2_START},
    {"rms_disp_rel_h", SIVE_STAT_RMS_DISP_REL_H},
};

static void print_json(FILE *f, const ckpt_info *ci, const probe_cfg *c, const sive_result *r,
                       double seconds, int rc, const char *err)
{
    fputs("{\"checkpoint\":", f);
    cli_json_str(f, ci->path);
    if (ci->dim) {
        fprintf(f, ",\"epoch\":%lld,\"train_seed\":%llu,\"layers\":[%zu,%zu,%zu,%zu],\"dim\":%zu,"
                   "\"train_loss\":",
                (long long)ci->meta.epoch, (unsigned long long)ci->meta.seed, ci->sizes[0],
                ci->sizes[1], ci->sizes[2], ci->sizes[3], ci->dim);
        cli_json_num(f, ci->meta.train_loss);
        fputs(",\"test_loss\":", f);
        cli_json_num(f, ci->meta.test_loss);
    }
    fputs(",\"settings\":{", f);
    probe_json_settings(f, c);
    fprintf(f, "},\"status\":%d,\"error\":", rc);
    if (rc) {
        char buf[1200];
        snprintf(buf, sizeof buf, "%s (%s)", err, sive_strerror(rc));
        cli_json_str(f, buf);
    } else {
        fputs("null", f);
    }
    if (r) {
        for (size_t i = 0; i < sizeof json_pm / sizeof json_pm[0]; i++) {
            fprintf(f, ",\"%s\":{\"mean\":", json_pm[i].key);
            cli_json_num(f, summ(r, json_pm[i].stat));
            fputs(",\"std\":", f);
            cli_json_num(f, sive_result_stat_std(r, json_pm[i].stat));
            fputc('}', f);
        }
        fputs(",\"mcse\":", f);
        cli_json_num(f, sive_result_mcse(r));
        fputs(",\"ess\":", f);
        cli_json_num(f, sive_result_ess(r));
        fputs(",\"rhat\":", f);
        cli_json_num(f, sive_result_rhat(r));
        fputs(",\"noise_correction\":", f);
        cli_json_num(f, sive_result_noise_correction(r));
        fputs(",\"noise_correction_std\":", f);
        cli_json_num(f, sive_result_noise_correction_std(r));
        int32_t K = sive_result_chains(r);
        fprintf(f, ",\"chains\":%d,\"chains_ok\":%d,\"flags\":%u,\"health\":", (int)K,
                (int)sive_result_chains_ok(r), (unsigned)sive_result_flags(r));
        cli_json_lines(f, sive_result_health(r));
        fputs(",\"per_chain\":[", f);
        static const struct { const char *key; sive_stat stat; } pc[] = {
            {"sive", SIVE_STAT_SIVE}, {"sive_unclipped", SIVE_STAT_SIVE_UNCLIPPED},
            {"raw_variance", SIVE_STAT_RAW_VARIANCE}, {"online_mean", SIVE_STAT_ONLINE_MEAN},
            {"tail_mean_loss", SIVE_STAT_TAIL_MEAN_LOSS},
            {"tail_min_loss", SIVE_STAT_TAIL_MIN_LOSS},
            {"noise_correction", SIVE_STAT_NOISE_CORRECTION},
            {"noise_correction_std", SIVE_STAT_NOISE_CORRECTION_STD},
            {"mcse", SIVE_STAT_MCSE}, {"ess", SIVE_STAT_ESS}};
        for (int32_t k = 0; k < K; k++) {
            int64_t step = 0;
            sive_chain_status s = sive_result_chain_status(r, k, &step);
            fprintf(f, "%s{\"status\":\"%s\",\"stop_step\":%lld", k ? "," : "",
                    chain_status_str(s), (long long)step);
            for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++) {
                fprintf(f, ",\"%s\":", pc[i].key);
                cli_json_num(f, sive_result_stat(r, pc[i].stat, k));
            }
            fputc('}', f);
        }
        fputc(']', f);
    }
    fputs(",\"seconds\":", f);
    cli_json_num(f, seconds);
    fputc('}', f);
}

static void print_csv_header(FILE *f)
{
    fputs("checkpoint,epoch,train_loss,test_loss,status,sive,sive_std,sive_unclipped,"
          "sive_unclipped_std,raw_variance,raw_variance_std,online_mean,online_mean_std,"
          "anchored_mean,anchored_mean_std,tail_mean_loss,tail_min_loss,mcse,ess,rhat,"
          "noise_correction,noise_correction_std,h,slope_proxy,rms_disp_rel_h,chains,"
          "chains_ok,flags,seconds\n",
          f);
}

static void csv_num(FILE *f, double v) { fprintf(f, ",%.10g", v); }

static void print_csv_row(FILE *f, const ckpt_info *ci, const sive_result *r, double seconds,
                          int rc)
{
    cli_csv_str(f, ci->path);
    if (ci->dim)
        fprintf(f, ",%lld", (long long)ci->meta.epoch);
    else
        fputs(",", f);
    csv_num(f, ci->dim ? ci->meta.train_loss : NAN);
    csv_num(f, ci->dim ? ci->meta.test_loss : NAN);
    fprintf(f, ",%d", rc);
    static const sive_stat pm[] = {SIVE_STAT_SIVE, SIVE_STAT_SIVE_UNCLIPPED,
                                   SIVE_STAT_RAW_VARIANCE, SIVE_STAT_ONLINE_MEAN,
                                   SIVE_STAT_ANCHORED_MEAN};
    for (size_t i = 0; i < sizeof pm / sizeof pm[0]; i++) {
        csv_num(f, summ(r, pm[i]));
        csv_num(f, sive_result_stat_std(r, pm[i]));
    }
    csv_num(f, summ(r, SIVE_STAT_TAIL_MEAN_LOSS));
    csv_num(f, summ(r, SIVE_STAT_TAIL_MIN_LOSS));
    csv_num(f, sive_result_mcse(r));
    csv_num(f, sive_result_ess(r));
    csv_num(f, sive_result_rhat(r));
    csv_num(f, sive_result_noise_correction(r));
    csv_num(f, sive_result_noise_correction_std(r));
    csv_num(f, summ(r, SIVE_STAT_H));
    csv_num(f, summ(r, SIVE_STAT_SLOPE_PROXY));
    csv_num(f, summ(r, SIVE_STAT_RMS_DISP_REL_H));
    fprintf(f, ",%d,%d,%u", (int)sive_result_chains(r), (int)sive_result_chains_ok(r),
            (unsigned)sive_result_flags(r));
    csv_num(f, seconds);
    fputc('\n', f);
}

/* ------------------------------------------------------------------ */

static const char probe_usage_head[] =
    "usage: sive probe CKPT... [--data DIR] [--steps M] [--groups N] [--eval-batch B]\n"
    "                  [--grad-batch B] [--c-h C] [--base-lr A] [--t T] [--chains K]\n"
    "                  [--threads J] [--eval-stride k] [--seed S] [--anchor L]\n"
    "                  [--format table|json|csv] [--quiet]\n"
    "Runs the SIVE probe on each checkpoint (made by 'sive train') over the\n"
    "training set and prints lambda-hat with its diagnostics.\n"
    "  --data DIR          MNIST directory (default: $SIVE_DATA_DIR or the bundled data)\n"
    "  --seed S            seed of the chains (0)\n"
    "  --format F          table (default), json (one object per checkpoint, an\n"
    "                      array when several) or csv\n"
    "  --traces FILE       write the per-step traces as CSV (chain, step, Lbar, s2,\n"
    "                      gradient-batch loss, |g|, |theta - theta*|/sqrt(d)); with\n"
    "                      several checkpoints FILE gets a column for each's index\n"
    "  --quiet             no progress bar or notes on stderr\n";

/* Per-step traces of every chain, for looking at burn-in and stationarity. */
static int write_traces(FILE *f, int ckpt, const sive_result *r)
{
    int32_t K = sive_result_chains(r);
    for (int32_t k = 0; k < K; k++) {
        const double *tr[SIVE_TRACE_COUNT_];
        size_t len = 0, n = 0;
        for (int j = 0; j < SIVE_TRACE_COUNT_; j++) {
            tr[j] = sive_result_trace(r, (sive_trace)j, k, &len);
            if (j == 0 || len < n)
                n = len;
        }
        for (size_t m = 0; m < n; m++)
            fprintf(f, "%d,%d,%zu,%.10g,%.10g,%.10g,%.10g,%.10g\n", ckpt, (int)k, m, tr[0][m],
                    tr[1][m], tr[2][m], tr[3][m], tr[4][m]);
    }
    return ferror(f) ? -1 : 0;
}

int cmd_probe(int argc, char **argv)
{
    static const struct option own[] = {
        {"data", required_argument, 0, PO_DATA},   {"seed", required_argument, 0, PO_SEED},
        {"format", required_argument, 0, PO_FORMAT}, {"quiet", no_argument, 0, PO_QUIET},
        {"help", no_argument, 0, PO_HELP},           {"traces", required_argument, 0, PO_TRACES},
        {0, 0, 0, 0}};
    struct option opts[40];
    cli_opts_cat(opts, 40, probe_longopts, own);
    probe_cfg c;
    probe_defaults(&c);
    const char *data_dir = NULL, *traces = NULL;
    int fmt = FMT_TABLE, o;
    int64_t iv;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int h = probe_option(&c, o, optarg);
        if (h < 0)
            return EXIT_USAGE;
        if (h)
            continue;
        switch (o) {
        case PO_DATA: data_dir = optarg; break;
        case PO_SEED:
            if (cli_int("--seed", optarg, 0, INT64_MAX, &iv))
                return EXIT_USAGE;
            c.seed = (uint64_t)iv;
            break;
        case PO_FORMAT: if (cli_format(optarg, &fmt)) return EXIT_USAGE; break;
        case PO_QUIET: c.quiet = 1; break;
        case PO_TRACES: traces = optarg; break;
        case PO_HELP:
            fputs(probe_usage_head, stdout);
            fputs(probe_usage_opts, stdout);
            return 0;
        default: fputs(probe_usage_head, stderr); return EXIT_USAGE;
        }
    }
    int n_ckpt = argc - optind;
    if (n_ckpt < 1) {
        fprintf(stderr, "sive probe: no checkpoint given\n%s", probe_usage_head);
        return EXIT_USAGE;
    }
    char **ckpts = argv + optind;

    sive_dataset *train = NULL, *test = NULL;
    if (cli_open_data("sive probe", data_dir, &train, &test, c.quiet))
        return EXIT_RUN;
    sive_dataset_free(test);
    FILE *tf = NULL;
    if (traces) {
        if (!(tf = fopen(traces, "w"))) {
            fprintf(stderr, "sive probe: cannot write %s: %s\n", traces, strerror(errno));
            sive_dataset_free(train);
            return EXIT_RUN;
        }
        fputs("checkpoint,chain,step,lbar,s2,grad_loss,grad_norm,disp\n", tf);
    }
    progress_catch_sigint();
    progress *pg = progress_new(!c.quiet);
    if (!c.quiet) {
        fputs("sive probe: ", stderr);
        probe_print_settings(stderr, &c);
        fputc('\n', stderr);
    }
    if (fmt == FMT_TABLE) {
        fputs("SIVE probe: ", stdout);
        probe_print_settings(stdout, &c);
        fputs("\n\n", stdout);
    } else if (fmt == FMT_CSV) {
        print_csv_header(stdout);
    } else if (n_ckpt > 1) {
        fputs("[", stdout);
    }
    int status = 0;
    for (int i = 0; i < n_ckpt && !progress_interrupted(); i++) {
        ckpt_info ci = {.path = ckpts[i]};
        sive_mlp *m = NULL;
        float *theta = NULL;
        sive_result *r = NULL;
        double secs = 0.0;
        char err[1024] = "";
        int rc = sive_checkpoint_load(ckpts[i], &m, &theta, &ci.meta);
        if (rc) {
            snprintf(err, sizeof err, "%s", sive_last_errmsg());
        } else {
            sive_mlp_sizes(m, &ci.sizes[0], &ci.sizes[1], &ci.sizes[2], &ci.sizes[3]);
            ci.dim = sive_mlp_dim(m);
            char label[64];
            snprintf(label, sizeof label, "probe %d/%d", i + 1, n_ckpt);
            rc = probe_run(&c, m, theta, train, pg, label, &r, &secs, err, sizeof err);
        }
        if (rc) {
            status = rc == SIVE_E_CANCELLED && progress_interrupted() ? EXIT_INTERRUPTED
                                                                      : EXIT_RUN;
            /* the loader's messages already name the file */
            if (strncmp(err, ckpts[i], strlen(ckpts[i])))
                fprintf(stderr, "sive probe: %s: %s (%s)\n", ckpts[i], err, sive_strerror(rc));
            else
                fprintf(stderr, "sive probe: %s (%s)\n", err, sive_strerror(rc));
        }
        if (fmt == FMT_TABLE) {
            print_table(stdout, &ci, &c, r, secs, rc, err);
        } else if (fmt == FMT_JSON) {
            if (i)
                fputs(",\n", stdout);
            print_json(stdout, &ci, &c, r, secs, rc, err);
        } else {
            print_csv_row(stdout, &ci, r, secs, rc);
        }
        fflush(stdout);
        if (tf && r && write_traces(tf, i, r)) {
            fprintf(stderr, "sive probe: writing %s failed\n", traces);
            status = EXIT_RUN;
        }
        sive_result_free(r);
        sive_free(theta);
        sive_mlp_free(m);
    }
    if (fmt == FMT_JSON)
        fputs(n_ckpt > 1 ? "]\n" : "\n", stdout);
    if (tf && fclose(tf) != 0) {
        fprintf(stderr, "sive probe: writing %s failed: %s\n", traces, strerror(errno));
        status = EXIT_RUN;
    }
    progress_free(pg);
    sive_dataset_free(train);
    return status;
}
