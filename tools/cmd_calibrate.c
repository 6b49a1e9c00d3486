/* `sive calibrate`: sweep one probe parameter (c_h or h, base_lr, N) around
 * the operating point with common random numbers (sive_probe_sweep()),
 * print every value's estimate and diagnostics, apply the plateau rule of
 * that parameter (the library's sive_calibrate()) and draw the picture
 * (docs/calibration.md). */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CAL_MAX_VALUES 64
#define CAL_TOY_H_CHAINS 20

enum { CAL_MODEL_MLP, CAL_MODEL_K1, CAL_MODEL_K2 };
enum { CO_MODEL = 1, CO_PARAM, CO_VALUES, CO_STEPS, CO_CHAINS, CO_PARALLEL, CO_SEED,
       CO_SET, CO_OUT, CO_FORMAT, CO_QUIET, CO_NOPLOT, CO_DATA, CO_NCFRAC, CO_HELP,
       CO_BLIS, CO_HTOL };

typedef struct cal_args {
    int model, fmt, quiet, plot;
    const char *ckpt, *out_dir, *data_dir, *param;
    double values[CAL_MAX_VALUES];
    size_t n_values;
    int64_t steps, chains, parallel, blis;
    uint64_t seed; /* the probe's seed: every 64-bit value (0 unless given) */
    double nc_frac, h_tol;
    const char *sets[32];
    int n_sets;
} cal_args;

static const char usage_text[] =
    "usage: sive calibrate [CKPT] [--model mlp|k1|k2] [--param c_h|h|base_lr|groups]\n"
    "                      [--values V1,V2,...] [--steps M] [--chains K] [--seed S]\n"
    "                      [--parallel P] [--set NAME=VALUE]... [--h-tol F]\n"
    "                      [--nc-frac F]\n"
    "                      [--out DIR] [--no-plot] [--format table|json|csv]\n"
    "                      [--data DIR] [--blis-threads INT] [--quiet]\n"
    "Sweeps one probe parameter around the operating point, every value with the\n"
    "same seed (common random numbers), and says where the estimate is stable.\n"
    "  CKPT               an MLP checkpoint (from `sive train`); not with k1/k2\n"
    "  --model M          mlp (default with CKPT), k1 or k2 (the paper's toys)\n"
    "  --param P          c_h (default; h on the toys, which use an absolute radius),\n"
    "                     h, base_lr or groups (N)\n"
    "  --values LIST      comma-separated values (default: a range per parameter)\n"
    "  --steps M          Langevin steps per chain (toys 100000, MLP 1000 with\n"
    "                     L-bar every 5th step: --set eval_stride=1 for all)\n"
    "  --chains K         chains per value (toys 5, the toys' h sweep 20, MLP 2)\n"
    "  --seed S           the one seed of every value, 0 .. 2^64-1 (default 0)\n"
    "  --parallel P       values run at the same time (toys: cores; MLP 1)\n"
    "  --set NAME=VALUE   another probe option of the operating point (e.g.\n"
    "                     --set groups=128), from `sive options`\n"
    "  --h-tol F          h rule: lambda-hat within F of every larger value (0.1)\n"
    "  --nc-frac F        N rule: noise-correction std below F lambda-hat (0.1)\n"
    "  --out DIR          calibrate.csv, calibrate.json, traces.csv, calibrate.png\n"
    "                     (default: calibrate-<model>-<param>)\n"
    "  --no-plot          no gnuplot picture\n"
    "  --format F         stdout: table (default), json or csv\n"
    "  --data DIR         the MNIST directory (default: the bundled digits)\n"
    "  --blis-threads N   BLIS threads per chain (MLP; default cores / chains)\n"
    "Rules (docs/calibration.md): c_h/h: the smallest value from which lambda-hat\n"
    "is within 10 % of every larger value's with 95 % confidence: |difference| +\n"
    "q SE <= 10 % of the larger value, SE of the difference paired over chains,\n"
    "q the Student-t 97.5 % quantile (>= 2); base_lr: the range where\n"
    "R-hat <= 1.05, ESS >= 100 and lambda-hat changes < 2 SE per doubling; groups:\n"
    "the smallest N whose noise-correction std < 10 % of lambda-hat.\n";

/* ---- parsing ---- */

static int parse_values(const char *s, cal_args *a)
{
    char buf[2048];
    if (strlen(s) >= sizeof buf) { /* cut, its last value would read short */
        fprintf(stderr, "sive calibrate: --values: the list is longer than %zu characters\n",
                sizeof buf - 1);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", s);
    a->n_values = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (a->n_values == CAL_MAX_VALUES) {
            fprintf(stderr, "sive calibrate: --values: at most %d values\n", CAL_MAX_VALUES);
            return -1;
        }
        if (cli_double("--values", tok, 1e-300, 1e300, &a->values[a->n_values]))
            return -1;
        a->n_values++;
    }
    if (!a->n_values) {
        fprintf(stderr, "sive calibrate: --values: no value given\n");
        return -1;
    }
    return 0;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void default_values(cal_args *a, sive_option opt)
{
    static const double h_toy[] = {0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50};
    static const double ch_mlp[] = {0.25, 0.5, 1, 2, 4};
    static const double lr_toy[] = {0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1};
    static const double lr_mlp[] = {0.01, 0.02, 0.05, 0.1, 0.2};
    static const double n_toy[] = {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
    static const double n_mlp[] = {32, 128, 512};
    const double *v;
    size_t n;
    int toy = a->model != CAL_MODEL_MLP;
#define PICK(x) (v = (x), n = sizeof(x) / sizeof(x)[0])
    if (opt == SIVE_OPT_BASE_LR)
        toy ? PICK(lr_toy) : PICK(lr_mlp);
    else if (opt == SIVE_OPT_GROUPS)
        toy ? PICK(n_toy) : PICK(n_mlp);
    else
        toy ? PICK(h_toy) : PICK(ch_mlp);
#undef PICK
    memcpy(a->values, v, n * sizeof *v);
    a->n_values = n;
}

/* --model: 0, or 1 after a message. */
static int parse_model(const char *s, cal_args *a)
{
    if (!strcmp(s, "mlp"))
        a->model = CAL_MODEL_MLP;
    else if (!strcmp(s, "k1"))
        a->model = CAL_MODEL_K1;
    else if (!strcmp(s, "k2"))
        a->model = CAL_MODEL_K2;
    else
        return fprintf(stderr, "sive calibrate: --model expects mlp, k1 or k2, got '%s'\n", s),
               1;
    return 0;
}

/* --param: 0, or 1 after a message. */
static int parse_param(const char *s, cal_args *a)
{
    a->param = s;
    if (strcmp(s, "c_h") && strcmp(s, "h") && strcmp(s, "base_lr") && strcmp(s, "groups"))
        return fprintf(stderr, "sive calibrate: --param expects c_h, h, base_lr or groups, "
                               "got '%s'\n", s),
               1;
    return 0;
}

static int check_positional(cal_args *a, int argc, char **argv, int model_set);

static int parse_args(cal_args *a, int argc, char **argv)
{
    static const struct option opts[] = {
        {"model", required_argument, 0, CO_MODEL},   {"param", required_argument, 0, CO_PARAM},
        {"values", required_argument, 0, CO_VALUES}, {"steps", required_argument, 0, CO_STEPS},
        {"chains", required_argument, 0, CO_CHAINS},
        {"parallel", required_argument, 0, CO_PARALLEL},
        {"seed", required_argument, 0, CO_SEED},     {"set", required_argument, 0, CO_SET},
        {"out", required_argument, 0, CO_OUT},       {"format", required_argument, 0, CO_FORMAT},
        {"quiet", no_argument, 0, CO_QUIET},         {"no-plot", no_argument, 0, CO_NOPLOT},
        {"data", required_argument, 0, CO_DATA},     {"nc-frac", required_argument, 0, CO_NCFRAC},
        {"blis-threads", required_argument, 0, CO_BLIS},
        {"h-tol", required_argument, 0, CO_HTOL},
        {"help", no_argument, 0, CO_HELP},           {0, 0, 0, 0}};
    int model_set = 0, o;
    optind = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        int bad = 0;
        switch (o) {
        case CO_MODEL:
            model_set = 1;
            bad = parse_model(optarg, a);
            break;
        case CO_PARAM: bad = parse_param(optarg, a); break;
        case CO_VALUES: bad = parse_values(optarg, a); break;
        case CO_STEPS: bad = cli_int("--steps", optarg, 10, INT64_C(1) << 40, &a->steps); break;
        case CO_CHAINS: bad = cli_int("--chains", optarg, 1, 4096, &a->chains); break;
        case CO_PARALLEL: bad = cli_int("--parallel", optarg, 1, 256, &a->parallel); break;
        case CO_SEED: bad = cli_seed("--seed", optarg, &a->seed); break;
        case CO_BLIS: bad = cli_int("--blis-threads", optarg, 1, 1024, &a->blis); break;
        case CO_SET:
            if (a->n_sets == 32 || !strchr(optarg, '='))
                fprintf(stderr, "sive calibrate: --set expects NAME=VALUE (at most 32)\n"),
                    bad = 1;
            else
                a->sets[a->n_sets++] = optarg;
            break;
        case CO_OUT: a->out_dir = optarg; break;
        case CO_FORMAT: bad = cli_format(optarg, &a->fmt); break;
        case CO_QUIET: a->quiet = 1; break;
        case CO_NOPLOT: a->plot = 0; break;
        case CO_DATA: a->data_dir = optarg; break;
        case CO_NCFRAC: bad = cli_double("--nc-frac", optarg, 1e-6, 10, &a->nc_frac); break;
        case CO_HTOL: bad = cli_double("--h-tol", optarg, 1e-6, 10, &a->h_tol); break;
        case CO_HELP: fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return EXIT_USAGE;
        }
        if (bad)
            return EXIT_USAGE;
    }
    return check_positional(a, argc, argv, model_set);
}

/* The checkpoint operand and its agreement with --model: -1 (go on) or
 * EXIT_USAGE after a message. */
static int check_positional(cal_args *a, int argc, char **argv, int model_set)
{
    if (optind < argc)
        a->ckpt = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "sive calibrate: one checkpoint at a time (unexpected '%s')\n",
                argv[optind]);
        return EXIT_USAGE;
    }
    if (!model_set && !a->ckpt) {
        fprintf(stderr, "sive calibrate: give a checkpoint (CKPT) or --model k1|k2\n");
        return EXIT_USAGE;
    }
    if (a->model == CAL_MODEL_MLP && !a->ckpt) {
        fprintf(stderr, "sive calibrate: the MLP needs a checkpoint (CKPT)\n");
        return EXIT_USAGE;
    }
    if (a->model != CAL_MODEL_MLP && a->ckpt) {
        fprintf(stderr, "sive calibrate: a toy model takes no checkpoint\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- rows ---- */

typedef struct cal_out_row {
    sive_calib_row r;
    double lambda_std, mcse, disp, h;
    int32_t chains_ok;
    int status;
    uint32_t flags;
} cal_out_row;

/* chain[] (sive_result_chains(r) entries) receives each chain's lambda-hat
 * (NaN for a chain that did not finish): the rules pair them across values. */
static void fill_row(cal_out_row *o, double value, const sive_result *r, double *chain)
{
    memset(o, 0, sizeof *o);
    /* r and chain (room for SIVE_OPT_CHAINS) are valid: no error */
    sive_calib_row_from_result(r, value, chain, (size_t)sive_result_chains(r), &o->r);
    o->lambda_std = sive_result_lambda_std(r);
    o->mcse = sive_result_mcse(r);
    o->chains_ok = sive_result_chains_ok(r);
    o->disp = sive_result_stat(r, SIVE_STAT_RMS_DISP_REL_H, SIVE_SUMMARY);
    o->h = sive_result_stat(r, SIVE_STAT_H, SIVE_SUMMARY);
    o->flags = sive_result_flags(r);
    o->status = sive_result_status(r);
}

/* ---- output ---- */

static const char *model_name(int m)
{
    return m == CAL_MODEL_K1 ? "k1" : m == CAL_MODEL_K2 ? "k2" : "mlp";
}

static void print_table(FILE *f, const cal_args *a, const cal_out_row *rows,
                        const sive_calib_verdict *v, const char *pname)
{
    static const char *const head[] = {"",    NULL, "λ̂ ± std",  "SE",        "MCSE", "ESS",
                                       "R̂", "C ± std", "disp/h", "health"};
    const char *h[10];
    memcpy(h, head, sizeof h);
    h[1] = pname;
    static const int right[] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 0};
    cli_table t;
    cli_table_init(&t, 10, h, right);
    char buf[128], names[256];
    uint32_t all = 0;
    for (size_t i = 0; i < a->n_values; i++) {
        const cal_out_row *o = &rows[i];
        cli_table_row(&t);
        cli_table_set(&t, 0, "%s", v->found && v->pick == i ? "→" : "");
        cli_table_set(&t, 1, "%g", o->r.value);
        cli_table_set(&t, 2, "%s", cli_round_pm(buf, sizeof buf, o->r.lambda, o->lambda_std, 1));
        cli_table_set(&t, 3, "%s", cli_round_pm(buf, sizeof buf, o->r.se, o->r.se, 0));
        cli_table_set(&t, 4, "%s", cli_round_pm(buf, sizeof buf, o->mcse, o->mcse, 0));
        cli_table_set(&t, 5, "%.0f", o->r.ess);
        cli_table_set(&t, 6, "%.3f", o->r.rhat);
        cli_table_set(&t, 7, "%s", cli_round_pm(buf, sizeof buf, o->r.nc, o->r.nc_std, 1));
        cli_table_set(&t, 8, "%.3g", o->disp);
        if (o->flags)
            cli_table_set(&t, 9, CLI_FLAG_MARK " %s",
                          cli_flag_names(names, sizeof names, o->flags));
        else
            cli_table_set(&t, 9, "healthy");
        all |= o->flags;
    }
    cli_table_print(f, &t, "");
    cli_table_free(&t);
    fputs("SE: std over chains / sqrt(chains); C: noise correction; disp/h: tail "
          "||θ−θ*||/(√d h)\n", f);
    if (all) {
        fputs("health flags (" CLI_FLAG_MARK "):\n", f);
        cli_flags_legend(f, all, "  ");
    }
    if (v->found)
        fprintf(f, "\nrecommendation: %s = %g\n  reason: %s\n", pname, rows[v->pick].r.value,
                v->reason);
    else
        fprintf(f, "\n%s\n  try: %s\n", v->reason, v->hint);
}

static void print_csv(FILE *f, const cal_out_row *rows, size_t n, const sive_calib_verdict *v,
                      const char *pname)
{
    fprintf(f, "%s,lambda,lambda_std,se,%s,%s,%s,%s,%s,%s,%s,chains_ok,recommended,flags,"
               "health\n",
            pname, sive_stat_name(SIVE_STAT_MCSE), sive_stat_name(SIVE_STAT_ESS),
            sive_stat_name(SIVE_STAT_RHAT), sive_stat_name(SIVE_STAT_NOISE_CORRECTION),
            sive_stat_name(SIVE_STAT_NOISE_CORRECTION_STD),
            sive_stat_name(SIVE_STAT_RMS_DISP_REL_H), sive_stat_name(SIVE_STAT_H));
    char names[256];
    for (size_t i = 0; i < n; i++) {
        const cal_out_row *o = &rows[i];
        fprintf(f, "%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%d,%d,%u,",
                o->r.value, o->r.lambda, o->lambda_std, o->r.se, o->mcse, o->r.ess, o->r.rhat,
                o->r.nc, o->r.nc_std, o->disp, o->h, (int)o->chains_ok,
                v->found && v->pick == i, (unsigned)o->flags);
        cli_csv_str(f, cli_flag_names(names, sizeof names, o->flags));
        fputc('\n', f);
    }
}

static void print_json(FILE *f, const cal_args *a, const cal_out_row *rows,
                       const sive_calib_verdict *v, const char *pname, const sive_probe *p,
                       double seconds)
{
    fprintf(f, "{\"model\":\"%s\",\"param\":", model_name(a->model));
    cli_json_str(f, pname);
    fputs(",\"checkpoint\":", f);
    if (a->ckpt)
        cli_json_str(f, a->ckpt);
    else
        fputs("null", f);
    fputs(",\"settings\":{", f);
    cli_opts_print(f, p, NULL, 1);
    fprintf(f, "},\"seconds\":%.3f,\"rows\":[", seconds);
    for (size_t i = 0; i < a->n_values; i++) {
        const cal_out_row *o = &rows[i];
        fputs(i ? ",{\"value\":" : "{\"value\":", f);
        cli_json_num(f, o->r.value);
        cli_json_member(f, "lambda", o->r.lambda);
        cli_json_member(f, "lambda_std", o->lambda_std);
        cli_json_member(f, "se", o->r.se);
        cli_json_member(f, sive_stat_name(SIVE_STAT_MCSE), o->mcse);
        cli_json_member(f, sive_stat_name(SIVE_STAT_ESS), o->r.ess);
        cli_json_member(f, sive_stat_name(SIVE_STAT_RHAT), o->r.rhat);
        cli_json_member(f, sive_stat_name(SIVE_STAT_NOISE_CORRECTION), o->r.nc);
        cli_json_member(f, sive_stat_name(SIVE_STAT_NOISE_CORRECTION_STD), o->r.nc_std);
        cli_json_member(f, sive_stat_name(SIVE_STAT_RMS_DISP_REL_H), o->disp);
        cli_json_member(f, sive_stat_name(SIVE_STAT_H), o->h);
        fputs(",\"chain_lambda\":[", f);
        for (size_t c = 0; c < o->r.chains; c++) {
            if (c)
                fputc(',', f);
            cli_json_num(f, o->r.chain[c]);
        }
        fprintf(f, "],\"chains_ok\":%d,\"status\":", (int)o->chains_ok);
        cli_json_str(f, sive_strerror(o->status));
        fprintf(f, ",\"flags\":%u,\"flag_names\":", (unsigned)o->flags);
        cli_json_flags(f, o->flags);
        fputc('}', f);
    }
    fprintf(f, "],\"recommendation\":{\"found\":%s,\"noisy\":%s,\"value\":",
            v->found ? "true" : "false", v->noisy ? "true" : "false");
    if (v->found) {
        cli_json_num(f, rows[v->pick].r.value);
        fputs(",\"range\":[", f);
        cli_json_num(f, rows[v->lo].r.value);
        fputc(',', f);
        cli_json_num(f, rows[v->hi].r.value);
        fputc(']', f);
    } else {
        fputs("null,\"range\":null", f);
    }
    fputs(",\"reason\":", f);
    cli_json_str(f, v->reason);
    fputs(",\"hint\":", f);
    cli_json_str(f, v->hint);
    fputs("}}\n", f);
}

/* traces.csv: per step (thinned to <= 2000 rows) the chain-0 L-bar and
 * ||θ−θ*||/(√d h) of the smallest, the recommended (or middle) and the
 * largest value. */
static int write_traces(FILE *f, sive_result *const *res, const cal_out_row *rows, size_t n,
                        size_t pick, size_t cols[3])
{
    cols[0] = 0, cols[1] = pick, cols[2] = n - 1;
    fputs("step", f);
    for (int k = 0; k < 3; k++)
        fprintf(f, ",lbar_%g,disp_rel_h_%g", rows[cols[k]].r.value, rows[cols[k]].r.value);
    fputc('\n', f);
    size_t len[3], maxlen = 0;
    const double *lb[3], *dp[3];
    for (int k = 0; k < 3; k++) {
        size_t l2;
        lb[k] = sive_result_trace(res[cols[k]], SIVE_TRACE_LBAR, 0, &len[k]);
        dp[k] = sive_result_trace(res[cols[k]], SIVE_TRACE_DISP, 0, &l2);
        if (l2 < len[k])
            len[k] = l2;
        if (len[k] > maxlen)
            maxlen = len[k];
    }
    size_t stride = maxlen > 2000 ? maxlen / 2000 : 1;
    for (size_t m = 0; m < maxlen; m += stride) {
        fprintf(f, "%zu", m);
        for (int k = 0; k < 3; k++) {
            double h = rows[cols[k]].h;
            /* L-bar may be NaN at unevaluated steps: take the next evaluated one */
            double l = NAN;
            for (size_t j = m; j < len[k] && j < m + stride && isnan(l); j++)
                l = lb[k][j];
            if (m < len[k])
                fprintf(f, ",%.10g,%.10g", l, dp[k][m] / h);
            else
                fputs(",nan,nan", f);
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

static int have_gnuplot(void)
{
    const char *path = getenv("PATH");
    char buf[4096];
    if (!path)
        return 0;
    for (const char *s = path; *s;) {
        const char *e = strchr(s, ':');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)l, s);
        if (access(buf, X_OK) == 0)
            return 1;
        if (!e)
            break;
        s = e + 1;
    }
    return 0;
}

/* calibrate.gp in dir, then gnuplot; 0 PNG written, 1 no gnuplot, -1 failed. */
/* src into dst (cap bytes) safe inside a gnuplot string: '_' is a
 * subscript in enhanced text ("\\_" in the script), '"' becomes '\''. */
static void gp_safe(char *dst, size_t cap, const char *src)
{
    size_t k = 0;
    for (const char *c = src; *c && k + 3 < cap; c++) {
        if (*c == '_')
            dst[k++] = '\\', dst[k++] = '\\';
        dst[k++] = *c == '"' ? '\'' : *c;
    }
    dst[k] = '\0';
}

/* The first panel: lambda-hat against the value, the pick and the flags. */
static void gp_lambda_panel(FILE *f, const cal_out_row *rows, size_t n_rows,
                            const sive_calib_verdict *v, const char *pname)
{
    /* a log y axis when the estimates span more than a factor 20 */
    double lmin = INFINITY, lmax = -INFINITY;
    for (size_t i = 0; i < n_rows; i++)
        if (isfinite(rows[i].r.lambda)) {
            lmin = fmin(lmin, rows[i].r.lambda);
            lmax = fmax(lmax, rows[i].r.lambda);
        }
    /* the key in the corner the curve leaves free: estimates that rise with
     * the value (the MLP's c_h) fill the top right */
    if (rows[n_rows - 1].r.lambda > rows[0].r.lambda)
        fputs("set key top left\n", f);
    if (lmin > 0 && lmax > 20 * lmin)
        fputs("set logscale y\nset format y \"%g\"\n"
              "lo(m, s) = (m - s > 0 ? m - s : m / 10)\n"
              "plot \"calibrate.csv\" skip 1 using 1:2:(lo($2,$4)):($2+$4) with yerrorlines "
              "pt 7 lw 2 title \"λ̂ ± SE\"", f);
    else
        fputs("plot \"calibrate.csv\" skip 1 using 1:2:4 with yerrorlines pt 7 lw 2 "
              "title \"λ̂ ± SE\"", f);
    if (v->found)
        fprintf(f, ", \\\n     \"\" skip 1 using 1:($13 > 0 ? $2 : NaN) with points pt 6 ps 4 "
                   "lw 3 lc rgb \"red\" title \"recommended %s = %g\"",
                pname, rows[v->pick].r.value);
    fprintf(f, ", \\\n     \"\" skip 1 using 1:($14 > 0 ? $2 : NaN) with points pt 2 ps 2 "
               "lw 2 lc rgb \"orange\" title \"health flag raised\"\n");
}

/* Render calibrate.gp in dir: 0, 1 without gnuplot, -1 when it failed. */
static int run_gnuplot(const char *dir, const char *path, int quiet)
{
    if (!have_gnuplot()) {
        if (!quiet)
            fprintf(stderr, "sive calibrate: gnuplot not found: wrote %s only\n", path);
        return 1;
    }
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot calibrate.gp 2>gnuplot.log", dir);
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc)) {
        fprintf(stderr, "sive calibrate: gnuplot failed (see %s/gnuplot.log)\n", dir);
        return -1;
    }
    return 0;
}

static int plot_calibrate(const char *dir, const char *pname_raw, const char *title,
                          const cal_out_row *rows, size_t n_rows, const sive_calib_verdict *v,
                          const size_t cols[3], int quiet)
{
    char path[4096], pname[64];
    gp_safe(pname, sizeof pname, pname_raw);
    snprintf(path, sizeof path, "%s/calibrate.gp", dir);
    cli_out *o;
    FILE *f = cli_out_open(&o, "sive calibrate", path);
    if (!f)
        return -1;
    fprintf(f,
            "# `sive calibrate` figure, from calibrate.csv and traces.csv.\n"
            "# Re-render in this directory with: gnuplot calibrate.gp\n"
            "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
            "    set terminal pngcairo size 1000,1100 font \"sans,11\"\n"
            "} else {\n"
            "    set terminal png size 1000,1100\n"
            "}\n"
            "set output \"calibrate.png\"\n"
            "set datafile separator \",\"\n"
            "set datafile missing \"nan\"\n"
            "set multiplot layout 3,1 title \"%s\"\n"
            "set grid\nset logscale x\nset format x \"%%g\"\n"
            "set xlabel \"%s\"\nset ylabel \"LLC estimate λ̂ (± SE)\"\n"
            "set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n"
            "set key top right\n",
            title, pname);
    gp_lambda_panel(f, rows, n_rows, v, pname);
    fputs("unset logscale\nset offsets 0, 0, graph 0.05, graph 0.05\nset autoscale xfix\nset format x \"%g\"\nset format y \"%.7g\"\nset xlabel \"Langevin step (chain 0)\"\n"
          "set ylabel \"L̄ (mean of the N group losses)\"\nset key top right\n", f);
    const char *what[3] = {"smallest", v->found ? "recommended" : "middle", "largest"};
    fputs("plot ", f);
    for (int k = 0; k < 3; k++)
        fprintf(f, "%s\"traces.csv\" skip 1 using 1:%d with lines lw 1 title \"%s = %g (%s)\"",
                k ? ", \\\n     " : "", 2 + 2 * k, pname, rows[cols[k]].r.value, what[k]);
    fputs("\nset ylabel \"||θ−θ*|| / (√d h)\"\nset logscale y\nset format y \"%g\"\nplot ", f);
    for (int k = 0; k < 3; k++)
        fprintf(f, "%s\"traces.csv\" skip 1 using 1:%d with lines lw 1 title \"%s = %g (%s)\"",
                k ? ", \\\n     " : "", 3 + 2 * k, pname, rows[cols[k]].r.value, what[k]);
    fputs("\nunset multiplot\n", f);
    if (cli_out_commit(o))
        return -1;
    return run_gnuplot(dir, path, quiet);
}

static int write_file(const char *dir, const char *name, int which, const cal_args *a,
                      const cal_out_row *rows, const sive_calib_verdict *v, const char *pname,
                      const sive_probe *p, double secs, sive_result *const *res, size_t cols[3])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cli_out *o;
    FILE *f = cli_out_open(&o, "sive calibrate", path);
    if (!f)
        return -1;
    if (which == 0)
        print_csv(f, rows, a->n_values, v, pname);
    else if (which == 1)
        print_json(f, a, rows, v, pname, p, secs);
    else
        write_traces(f, res, rows, a->n_values, v->found ? v->pick : a->n_values / 2, cols);
    return cli_out_commit(o);
}

static int cal_progress(int32_t chain, int64_t step, int64_t total, void *user)
{
    (void)chain, (void)step, (void)total, (void)user;
    return progress_interrupted();
}

/* ---- the command ---- */

/* What a calibration holds while it runs (freed by cal_free). */
typedef struct cal_run {
    sive_probe *p;
    sive_mlp *mlp;
    float *theta_f;
    sive_dataset *train, *test;
    sive_model model;
    toy_model_ctx tctx;
    double centre[2];
    const void *theta;
    sive_result **res;
    cal_out_row *rows;
    double *chain_buf;
    size_t n;
} cal_run;

/* The toys' operating point (toy_defaults), with the command's overrides. */
static void setup_toy(cal_args *a, cal_run *c, sive_option opt, int64_t cpus)
{
    toy_config d;
    toy_defaults(&d, c->tctx.model);
    c->tctx.l0 = d.floor_l0;
    c->tctx.sigma = d.sigma;
    sive_probe_set_double(c->p, SIVE_OPT_T, d.t);
    sive_probe_set_double(c->p, SIVE_OPT_H, d.h);
    sive_probe_set_double(c->p, SIVE_OPT_BASE_LR, d.base_lr);
    sive_probe_set_double(c->p, SIVE_OPT_BURN_IN, d.burn_in);
    sive_probe_set_int(c->p, SIVE_OPT_GROUPS, d.groups);
    sive_probe_set_int(c->p, SIVE_OPT_STEPS, a->steps > 0 ? a->steps : d.steps);
    /* the h rule is an equivalence test: 5 chains (the paper's) leave the
     * paired SE too wide to show flatness within 10 % reliably, 20 do */
    int64_t k = opt == SIVE_OPT_H ? CAL_TOY_H_CHAINS : d.chains;
    sive_probe_set_int(c->p, SIVE_OPT_CHAINS, a->chains > 0 ? a->chains : k);
    sive_probe_set_int(c->p, SIVE_OPT_THREADS, 1);
    toy_model(&c->model, &c->tctx);
    c->theta = c->centre;
    if (a->parallel < 0)
        a->parallel = cpus;
}

/* The checkpoint, the data and the MLP model; -1 after a message. */
static int setup_mlp(cal_args *a, cal_run *c, int64_t cpus)
{
    sive_checkpoint_meta meta;
    int rc;
    if (cli_in_check(a->ckpt))
        return -1;
    if ((rc = sive_checkpoint_load(a->ckpt, &c->mlp, &c->theta_f, &meta))) {
        fprintf(stderr, "sive calibrate: %s (%s)\n", sive_last_errmsg(), sive_strerror(rc));
        return -1;
    }
    if (cli_open_data("sive calibrate", a->data_dir, &c->train, &c->test, a->quiet))
        return -1;
    int64_t k = a->chains > 0 ? a->chains : 2;
    sive_probe_set_int(c->p, SIVE_OPT_STEPS, a->steps > 0 ? a->steps : 1000);
    sive_probe_set_int(c->p, SIVE_OPT_CHAINS, k);
    sive_probe_set_int(c->p, SIVE_OPT_THREADS, k < cpus ? k : cpus);
    /* L-bar every 5th step: the N x B_eval evaluations dominate the cost */
    sive_probe_set_int(c->p, SIVE_OPT_EVAL_STRIDE, 5);
    if (a->parallel < 0)
        a->parallel = 1;
    int64_t per = (k < cpus ? k : cpus) * a->parallel;
    int64_t blis = a->blis > 0 ? a->blis : cpus / (per > 0 ? per : 1);
    if ((rc = sive_mlp_model(&c->model, c->mlp, c->train, (int)(blis < 1 ? 1 : blis)))) {
        fprintf(stderr, "sive calibrate: %s (%s)\n", sive_last_errmsg(), sive_strerror(rc));
        return -1;
    }
    c->theta = c->theta_f;
    return 0;
}

/* The seed and every --set; 0, or EXIT_USAGE after a message. */
static int apply_sets(const cal_args *a, sive_probe *p)
{
    sive_probe_set_int(p, SIVE_OPT_SEED, (int64_t)a->seed); /* the uint64's bits */
    for (int i = 0; i < a->n_sets; i++) {
        char name[128];
        const char *eq = strchr(a->sets[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - a->sets[i]), a->sets[i]);
        if (sive_probe_set_text(p, name, eq + 1)) {
            fprintf(stderr, "sive calibrate: --set %s: %s\n", a->sets[i], sive_probe_errmsg(p));
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* The output directory into dir, and every output file checked before the
 * sweep, so that it cannot end in a failed write; -1 after a message. */
static int prepare_dir(const cal_args *a, const char *pname, char *dir, size_t cap)
{
    char path[3200];
    if (a->out_dir)
        snprintf(dir, cap, "%s", a->out_dir);
    else
        snprintf(dir, cap, "calibrate-%s-%s", model_name(a->model), pname);
    if (cli_mkdirs(dir))
        return -1;
    static const char *const outs[] = {"calibrate.csv", "calibrate.json", "traces.csv"};
    for (int i = 0; i < 3; i++)
        if (snprintf(path, sizeof path, "%s/%s", dir, outs[i]), cli_out_check(path))
            return -1;
    return 0;
}

/* Each value's row; 0, or an exit status after a message when a value's
 * run was interrupted or failed. */
static int fill_rows(cal_run *c, const cal_args *a, const char *pname)
{
    size_t kmax = (size_t)cli_opt_int(c->p, SIVE_OPT_CHAINS);
    if (!(c->chain_buf = calloc(a->n_values * kmax, sizeof *c->chain_buf))) {
        fprintf(stderr, "sive calibrate: out of memory\n");
        return EXIT_RUN;
    }
    for (size_t i = 0; i < a->n_values; i++) {
        fill_row(&c->rows[i], a->values[i], c->res[i], c->chain_buf + i * kmax);
        if (c->rows[i].status == SIVE_E_CANCELLED || c->rows[i].status == SIVE_E_CALLBACK) {
            fprintf(stderr, "sive calibrate: %s = %g: %s\n", pname, a->values[i],
                    progress_interrupted() ? "interrupted" : sive_result_errmsg(c->res[i]));
            return progress_interrupted() ? EXIT_INTERRUPTED : EXIT_RUN;
        }
    }
    return 0;
}

/* The plateau rule of the swept option (the library's). */
static void verdict_of(sive_option opt, const cal_args *a, const cal_out_row *rows,
                       sive_calib_verdict *v)
{
    sive_calib_row cr[CAL_MAX_VALUES];
    sive_calib_rule rule = SIVE_CALIB_RULE_H;
    for (size_t i = 0; i < a->n_values; i++)
        cr[i] = rows[i].r;
    sive_calib_rule_of(opt, &rule); /* --param admits only the four options with a rule */
    sive_calibrate(rule, cr, a->n_values, rule == SIVE_CALIB_RULE_GROUPS ? a->nc_frac : a->h_tol,
                   v);
}

/* calibrate.gp/.png with a gnuplot-safe title; 0 or EXIT_RUN. */
static int plot(const cal_args *a, const cal_run *c, const char *pname, const char *dir,
                const sive_calib_verdict *v, const size_t *cols)
{
    char title[512];
    snprintf(title, sizeof title, "sive calibrate: %s on %s%s%s\\nM = %lld, %lld chains, seed %llu",
             pname, model_name(a->model), a->ckpt ? " " : "", a->ckpt ? a->ckpt : "",
             (long long)cli_opt_int(c->p, SIVE_OPT_STEPS),
             (long long)cli_opt_int(c->p, SIVE_OPT_CHAINS),
             (unsigned long long)(uint64_t)cli_opt_int(c->p, SIVE_OPT_SEED));
    char safe[1100];
    gp_safe(safe, sizeof safe, title); /* no '"', '_' not a subscript */
    return plot_calibrate(dir, pname, safe, c->rows, a->n_values, v, cols, a->quiet) < 0
               ? EXIT_RUN : 0;
}

/* The result on stdout in the chosen format. */
static void print_result(const cal_args *a, const cal_run *c, const sive_calib_verdict *v,
                         const char *pname, double secs, const char *dir)
{
    if (a->fmt == FMT_JSON) {
        print_json(stdout, a, c->rows, v, pname, c->p, secs);
    } else if (a->fmt == FMT_CSV) {
        print_csv(stdout, c->rows, a->n_values, v, pname);
    } else {
        printf("sive calibrate: %s%s%s, sweep of %s (common random numbers: seed %llu)\n",
               model_name(a->model), a->ckpt ? " " : "", a->ckpt ? a->ckpt : "", pname,
               (unsigned long long)(uint64_t)cli_opt_int(c->p, SIVE_OPT_SEED));
        fputs("operating point: ", stdout);
        cli_opts_print(stdout, c->p, NULL, 0);
        printf("\n\n");
        print_table(stdout, a, c->rows, v, pname);
        printf("\n%zu values in %.1f s; files in %s/ (calibrate.csv, calibrate.json, "
               "traces.csv%s)\n",
               a->n_values, secs, dir, a->plot ? ", calibrate.gp, calibrate.png" : "");
    }
}

static void cal_free(cal_run *c)
{
    if (c->res)
        for (size_t i = 0; i < c->n; i++)
            sive_result_free(c->res[i]);
    free(c->res);
    free(c->rows);
    free(c->chain_buf);
    sive_model_destroy(&c->model);
    sive_mlp_free(c->mlp);
    sive_free(c->theta_f);
    sive_dataset_free(c->train);
    sive_dataset_free(c->test);
    sive_probe_free(c->p);
}

/* The sweep and everything after it: rows, verdict, files, plot, output. */
static int sweep_and_report(cal_args *a, cal_run *c, sive_option opt, const char *pname,
                            const char *dir)
{
    progress_catch_sigint();
    sive_probe_set_progress(c->p, cal_progress, NULL);
    if (!a->quiet)
        fprintf(stderr, "sive calibrate: %s, %s over %zu values, %lld chains x %lld steps each, "
                        "%lld at a time...\n",
                model_name(a->model), pname, a->n_values,
                (long long)cli_opt_int(c->p, SIVE_OPT_CHAINS),
                (long long)cli_opt_int(c->p, SIVE_OPT_STEPS), (long long)a->parallel);
    double t0 = cli_now();
    int rc = sive_probe_sweep(c->p, &c->model, c->theta, opt, a->values, a->n_values,
                              (int32_t)a->parallel, c->res);
    double secs = cli_now() - t0;
    if (rc == SIVE_E_CANCELLED && progress_interrupted()) {
        fprintf(stderr, "sive calibrate: interrupted\n");
        return EXIT_INTERRUPTED;
    }
    if (rc) {
        fprintf(stderr, "sive calibrate: %s (%s)\n", sive_probe_errmsg(c->p), sive_strerror(rc));
        return rc == SIVE_E_INVALID_ARG ? EXIT_USAGE : EXIT_RUN;
    }
    int status = fill_rows(c, a, pname);
    if (status)
        return status;
    sive_calib_verdict v;
    verdict_of(opt, a, c->rows, &v);
    /* files (the directory was checked before the sweep) */
    size_t cols[3];
    if (cli_mkdirs(dir) ||
        write_file(dir, "calibrate.csv", 0, a, c->rows, &v, pname, c->p, secs, c->res, cols) ||
        write_file(dir, "calibrate.json", 1, a, c->rows, &v, pname, c->p, secs, c->res, cols) ||
        write_file(dir, "traces.csv", 2, a, c->rows, &v, pname, c->p, secs, c->res, cols))
        return EXIT_RUN;
    if (a->plot)
        status = plot(a, c, pname, dir, &v, cols);
    print_result(a, c, &v, pname, secs, dir);
    return status;
}

int cmd_calibrate(int argc, char **argv)
{
    cal_args a;
    memset(&a, 0, sizeof a);
    a.model = CAL_MODEL_MLP;
    a.fmt = FMT_TABLE;
    a.plot = 1;
    a.steps = a.chains = a.parallel = -1;
    a.param = "c_h";
    int status = parse_args(&a, argc, argv);
    if (status >= 0)
        return status;
    int toy = a.model != CAL_MODEL_MLP;
    /* the swept option */
    const char *pname = a.param;
    if (toy && !strcmp(pname, "c_h"))
        pname = "h"; /* the toys use an absolute radius */
    sive_option opt;
    sive_option_by_name(pname, &opt);
    if (!a.n_values)
        default_values(&a, opt);
    qsort(a.values, a.n_values, sizeof a.values[0], cmp_d);

    cal_run c = {.tctx = {.model = a.model == CAL_MODEL_K1 ? 1 : 2}, .centre = {0.2, 0.2},
                 .n = a.n_values};
    sive_model_init(&c.model, sizeof c.model);
    c.res = calloc(a.n_values, sizeof *c.res);
    c.rows = calloc(a.n_values, sizeof *c.rows);
    status = EXIT_RUN;
    int rc = sive_probe_new(&c.p);
    if (rc || !c.res || !c.rows) {
        fprintf(stderr, "sive calibrate: cannot create a probe: %s\n", sive_strerror(rc));
        goto out;
    }
    int64_t cpus = cli_cpus();
    if (toy)
        setup_toy(&a, &c, opt, cpus);
    else if (setup_mlp(&a, &c, cpus))
        goto out;
    if ((status = apply_sets(&a, c.p)))
        goto out;
    status = EXIT_RUN;
    if (a.nc_frac <= 0)
        a.nc_frac = SIVE_CALIB_NC_FRAC;
    char dir[3072];
    if (prepare_dir(&a, pname, dir, sizeof dir))
        goto out;
    status = sweep_and_report(&a, &c, opt, pname, dir);
out:
    cal_free(&c);
    return status;
}
