/* `sive toy`: the paper's Table 1 on the analytic toy models. */
#include "cli.h"
#include "toy.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char toy_usage_text[] =
    "Probes K1 = u^2 and/or K2 = u^2 v^2 with a hidden floor L0 = 100 and\n"
    "Gaussian evaluation noise (defaults: the paper's Table 1 settings).\n"
    "  --model M           k1, k2 or both (default both)\n"
    "  --sigma S           evaluation noise std (default 0.002, in [0, 1e6])\n"
    "  --format F          table (default), json or csv\n";

/* The synopsis (every flag: the toy's probe options are set), then (full)
 * the description of the command's own flags. */
static void toy_usage(FILE *f, const cli_optset *set, int full)
{
    static const char *const pre[] = {"[--model k1|k2|both]", "[--sigma S]", NULL};
    cli_wrap w;
    cli_wrap_start(&w, f, "sive toy");
    cli_wrap_words(&w, pre);
    cli_wrap_opts(&w, set);
    cli_wrap_word(&w, "[--format table|json|csv]");
    cli_wrap_end(&w);
    if (full)
        fputs(toy_usage_text, f);
}

/* The toy_config field behind each probe option the toy offers.  The toy
 * keeps its own defaults (toy_defaults(): h 2, N 64, one thread) and has
 * an absolute radius and no data set, so c_h, the batch sizes,
 * replacement and the anchor do not apply. */
static void *toy_field(toy_config *c, sive_option o)
{
    switch (o) {
    case SIVE_OPT_T: return &c->t;
    case SIVE_OPT_BASE_LR: return &c->base_lr;
    case SIVE_OPT_H: return &c->h;
    case SIVE_OPT_BURN_IN: return &c->burn_in;
    case SIVE_OPT_STEPS: return &c->steps;
    case SIVE_OPT_GROUPS: return &c->groups;
    case SIVE_OPT_CHAINS: return &c->chains;
    case SIVE_OPT_THREADS: return &c->threads;
    case SIVE_OPT_SEED: return &c->seed; /* uint64_t: the same 64 bits */
    case SIVE_OPT_EVAL_STRIDE: return &c->stride;
    default: return NULL;
    }
}

/* The names of the options the toy offers (room for the whole table). */
static void toy_optset(cli_optset *set, const char **names, size_t cap)
{
    toy_config scratch;
    const sive_option_info *in;
    size_t n = 0;
    for (size_t i = 0; (in = sive_option_at(i)) && n + 1 < cap; i++)
        if (toy_field(&scratch, in->id))
            names[n++] = in->name;
    names[n] = NULL;
    set->only = names;
    set->skip = NULL;
}

/* cfg's values into p (from_probe 0) or p's into cfg (1).  The flags are
 * parsed and checked by the library on p; cfg is what toy_run() reads. */
static int toy_sync(toy_config *cfg, sive_probe *p, int from_probe)
{
    const sive_option_info *in;
    for (size_t i = 0; (in = sive_option_at(i)); i++) {
        void *f = toy_field(cfg, in->id);
        int64_t iv;
        int rc = 0;
        if (!f)
            continue;
        if (in->type == SIVE_TYPE_DOUBLE && from_probe)
            rc = sive_probe_get_double(p, in->id, f);
        else if (in->type == SIVE_TYPE_DOUBLE)
            rc = sive_probe_set_double(p, in->id, *(double *)f);
        else if (from_probe && !(rc = sive_probe_get_int(p, in->id, &iv)))
            memcpy(f, &iv, sizeof iv);
        else if (!from_probe && (memcpy(&iv, f, sizeof iv), 1))
            rc = sive_probe_set_int(p, in->id, iv);
        if (rc)
            return rc;
    }
    return SIVE_OK;
}

/* JSON/CSV key of a toy estimator: the library's statistic name where the
 * estimator is one, the program's for the oracle. */
static const char *toy_key(int k)
{
    switch (k) {
    case TOY_ORACLE: return cli_key_name(CLI_KEY_ORACLE);
    case TOY_ORACLE_VAR: return cli_key_name(CLI_KEY_ORACLE_VARIANCE);
    case TOY_NAIVE: return sive_stat_name(SIVE_STAT_ONLINE_MEAN);
    case TOY_RAW: return sive_stat_name(SIVE_STAT_RAW_VARIANCE);
    case TOY_SIVE: return sive_stat_name(SIVE_STAT_SIVE);
    case TOY_SIVE_UNCLIPPED: return sive_stat_name(SIVE_STAT_SIVE_UNCLIPPED);
    default: return sive_stat_name(SIVE_STAT_NOISE_CORRECTION);
    }
}

static double nc_theory(const toy_config *c)
{
    return c->t * c->t * c->sigma * c->sigma / (double)c->groups;
}

static void print_json(FILE *f, const toy_config *c, const toy_report *r, const sive_probe *p,
                       const cli_optset *set)
{
    fprintf(f, "{\"model\":\"k%d\",", c->model);
    cli_opts_print(f, p, set, 1);
    fprintf(f, ",\"sigma\":%.17g,\"chains_ok\":%d", c->sigma, (int)r->chains_ok);
    for (int k = 0; k <= TOY_SIVE_UNCLIPPED; k++) { /* NaN (no chain, one chain): null */
        fprintf(f, ",\"%s\":{\"mean\":", toy_key(k));
        cli_json_num(f, r->mean[k]);
        fputs(",\"std\":", f);
        cli_json_num(f, r->std[k]);
        fputc('}', f);
    }
    cli_json_member(f, sive_stat_name(SIVE_STAT_ESS), r->ess);
    cli_json_member(f, sive_stat_name(SIVE_STAT_SIVE_ESS), r->sive_ess);
    cli_json_member(f, sive_stat_name(SIVE_STAT_NOISE_CORRECTION), r->noise_correction);
    cli_json_member(f, sive_stat_name(SIVE_STAT_NOISE_CORRECTION_STD), r->noise_correction_std);
    cli_json_member(f, cli_key_name(CLI_KEY_NOISE_CORRECTION_THEORY), nc_theory(c));
    cli_json_member(f, sive_stat_name(SIVE_STAT_MCSE), r->sive_mcse);
    cli_json_member(f, cli_key_name(CLI_KEY_ORACLE_MCSE), r->oracle_mcse);
    cli_json_member(f, sive_stat_name(SIVE_STAT_RHAT), r->rhat);
    fprintf(f, ",\"flags\":%u,\"flag_names\":", r->flags);
    cli_json_flags(f, r->flags);
    fputs(",\"health\":", f);
    cli_json_lines(f, r->health);
    fputc('}', f);
}

static void print_csv_rows(FILE *f, const toy_config *c, const toy_report *r)
{
    char names[256];
    cli_flag_names(names, sizeof names, r->flags);
    for (int k = 0; k <= TOY_SIVE_UNCLIPPED; k++) {
        fprintf(f, "k%d,%s,%.10g,%.10g,%u,", c->model, toy_key(k), r->mean[k], r->std[k],
                (unsigned)r->flags);
        cli_csv_str(f, names);
        fputc('\n', f);
    }
}

/* The rows of the estimators: mean ± std over chains rounded to the std,
 * the SIVE cells of a model that raised a flag marked. */
/* The flags that make a toy number untrustworthy, the ones the table marks.
 * Two are information here, not failures: dominant_correction (the toy's
 * correction t²σ²/N = 6.25 is large against λ ≈ 0.55 but known to ± its
 * std, which the table shows; noisy_correction is raised when that std
 * exceeds the estimate) and step_bias (the toy's reference is the exact
 * ULA law at this base_lr, so the step's share is part of its target). */
static const uint32_t toy_info = SIVE_FLAG_DOMINANT_CORRECTION | SIVE_FLAG_STEP_BIAS;

static uint32_t toy_marked(uint32_t flags)
{
    return flags & ~toy_info;
}

static void toy_estimator_rows(cli_table *t, const toy_report *rep, int n)
{
    static const char *const names[] = {"Oracle mean", "Naive mean", "Raw variance", "SIVE",
                                        "SIVE (unclipped)"};
    char buf[96];
    for (int k = 0; k <= TOY_SIVE_UNCLIPPED; k++) {
        cli_table_row(t);
        cli_table_set(t, 0, "%s", names[k]);
        int sive = k == TOY_SIVE || k == TOY_SIVE_UNCLIPPED;
        for (int i = 0; i < n; i++)
            cli_table_set(t, 1 + i, "%s%s",
                          cli_round_pm(buf, sizeof buf, rep[i].mean[k], rep[i].std[k], 1),
                          sive && toy_marked(rep[i].flags) ? " " CLI_FLAG_MARK : "");
    }
}

/* "! nonstationary (dominant_correction)": the marked flags, then the
 * informational ones in parentheses; "healthy" without any. */
static void toy_health_cell(char *buf, size_t len, uint32_t flags)
{
    char marked[200], info[200];
    uint32_t m = toy_marked(flags), i = flags & ~m;
    cli_flag_names(marked, sizeof marked, m);
    cli_flag_names(info, sizeof info, i);
    size_t n = 0;
    if (!flags)
        n += (size_t)snprintf(buf, len, "healthy");
    if (m)
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, CLI_FLAG_MARK " %s", marked);
    if (i && n < len)
        snprintf(buf + n, len - n, "%s(%s)", m ? " " : "", info);
}

static void toy_diagnostic_rows(cli_table *t, const toy_config *cfg, const toy_report *rep, int n)
{
    char buf[256];
    cli_table_row(t);
    cli_table_row(t);
    cli_table_set(t, 0, "Diagnostics");
    static const char *const label[] = {"noise correction C", "  theory t²σ²/N", "MCSE (SIVE)",
                                        "ESS L̄ (all chains)", "ESS λ̂ (mean of chains)",
                                        "split-R̂", "health"};
    for (int row = 0; row < 7; row++) {
        cli_table_row(t);
        cli_table_set(t, 0, "%s", label[row]);
        for (int i = 0; i < n; i++) {
            const toy_report *r = &rep[i];
            if (row == 0)
                cli_round_pm(buf, sizeof buf, r->noise_correction, r->noise_correction_std, 1);
            else if (row == 1)
                snprintf(buf, sizeof buf, "%.4g", nc_theory(&cfg[i]));
            else if (row == 2)
                cli_round_pm(buf, sizeof buf, r->sive_mcse, r->sive_mcse, 0);
            else if (row == 3)
                snprintf(buf, sizeof buf, "%.0f", r->ess);
            else if (row == 4)
                snprintf(buf, sizeof buf, "%.0f", r->sive_ess);
            else if (row == 5)
                snprintf(buf, sizeof buf, "%.4f", r->rhat);
            else
                toy_health_cell(buf, sizeof buf, r->flags);
            cli_table_set(t, 1 + i, "%s", buf);
        }
    }
}

/* Is this health line ("name: why") that of an informational flag? */
static int toy_info_line(const char *line, size_t n)
{
    for (uint32_t bit = 1; bit && bit <= toy_info; bit <<= 1) {
        const char *name = (toy_info & bit) ? sive_flag_name(bit) : NULL;
        size_t len = name ? strlen(name) : 0;
        if (len && n > len && !strncmp(line, name, len) && line[len] == ':')
            return 1;
    }
    return 0;
}

/* The library's health lines, each marked as toy_marked() decides. */
static void toy_health_lines(FILE *f, int model, const char *health)
{
    for (const char *line = health; *line;) {
        size_t n = strcspn(line, "\n");
        if (n)
            fprintf(f, toy_info_line(line, n) ? "  k%d (information): %.*s\n"
                                              : CLI_FLAG_MARK " k%d: %.*s\n",
                    model, (int)n, line);
        line += n + (line[n] == '\n');
    }
}

void toy_print_table(FILE *f, const toy_config *cfg, const toy_report *rep, int n)
{
    const toy_config *c = &cfg[0];
    fprintf(f, "LLC estimates on the noisy toy models (Table 1): mean ± std over %lld chains,\n"
               "rounded to the std; " CLI_FLAG_MARK " marks a number a health flag makes "
               "untrustworthy; a flag in\nparentheses is information (a large correction "
               "known to ± its std, or the step's\nshare of the exact ULA target, is no failure)\n",
            (long long)c->chains);
    fprintf(f, "t = %g, h = %g, base_lr = %g, M = %lld, burn-in = %g, N = %lld, stride = %lld, "
               "chains = %lld, sigma = %g, L0 = %g, seed = %llu\n\n",
            c->t, c->h, c->base_lr, (long long)c->steps, c->burn_in, (long long)c->groups,
            (long long)c->stride, (long long)c->chains, c->sigma, c->floor_l0,
            (unsigned long long)c->seed);
    const char *head[3] = {"Estimator", "", ""};
    for (int i = 0; i < n && i < 2; i++)
        head[1 + i] = cfg[i].model == 1 ? "K1 = u²" : "K2 = u²v²";
    cli_table t;
    cli_table_init(&t, 1 + (n < 2 ? n : 2), head, NULL);
    toy_estimator_rows(&t, rep, n);
    toy_diagnostic_rows(&t, cfg, rep, n);
    cli_table_print(f, &t, "");
    cli_table_free(&t);
    fprintf(f, "\nReferences: K1 exact ULA (Appendix B): t·E[K] = %.4f, t²·Var[K] = %.4f at base_lr %g;\n",
            1.0 / (2.0 * (1.0 - c->base_lr)), 1.0 / (2.0 * (1.0 - c->base_lr) * (1.0 - c->base_lr)),
            c->base_lr);
    fprintf(f, "K2 continuous law at t = 1e4, h = 2, centre (0.2, 0.2): t·E[K] = 0.42957, t²·Var[K] = 0.42461.\n");
    for (int i = 0; i < n; i++)
        if (rep[i].flags && rep[i].health)
            toy_health_lines(f, cfg[i].model, rep[i].health);
}

typedef struct toy_args {
    toy_config base;        /* the settings; the model is set per run   */
    int models[2], n_models, fmt;
    sive_probe *p;          /* parses the probe flags, holds their values */
    cli_optset set;         /* the probe options the toy offers          */
    const char *names[64];
} toy_args;

/* --help with the toy's own defaults. */
static void toy_help(const cli_optset *set)
{
    toy_config d;
    sive_probe *p = NULL;
    toy_defaults(&d, 1);
    toy_usage(stdout, set, 1);
    if (sive_probe_new(&p) == SIVE_OK && toy_sync(&d, p, 0) == SIVE_OK) {
        fputs("probe (from the library's option table; defaults: the paper's Table 1):\n", stdout);
        cli_opts_usage(stdout, p, set, NULL);
    }
    sive_probe_free(p);
}

static int toy_model_arg(toy_args *a, const char *s)
{
    if (!strcmp(s, "k1") || !strcmp(s, "k2")) {
        a->models[0] = s[1] - '0';
        a->n_models = 1;
    } else if (!strcmp(s, "both")) {
        a->models[0] = 1;
        a->n_models = 2;
    } else {
        fprintf(stderr, "%s: --model expects k1, k2 or both, got '%s'\n", cli_cmd, s);
        return -1;
    }
    return 0;
}

/* Parse argv into a; returns -1 to go on, else the exit status. */
static int toy_parse(toy_args *a, int argc, char **argv)
{
    static const struct option own[] = {
        {"model", required_argument, 0, 'm'}, {"sigma", required_argument, 0, 'S'},
        {"format", required_argument, 0, 'f'}, {"help", no_argument, 0, 'H'}, {0, 0, 0, 0}};
    struct option opts[64] = {{0}};
    cli_opts_add(cli_opts_cat(opts, 64, own, NULL), 64, &a->set);
    int o;
    optind = 1;
    while ((o = cli_getopt(argc, argv, opts)) != -1) {
        int h = cli_opt_apply(a->p, o, optarg);
        if (h)
            h = h < 0 ? EXIT_USAGE : -1;
        else if (o == 'm')
            h = toy_model_arg(a, optarg) ? EXIT_USAGE : -1;
        else if (o == 'S')
            h = cli_double("--sigma", optarg, 0.0, 1e6, &a->base.sigma) ? EXIT_USAGE : -1;
        else if (o == 'f')
            h = cli_format(optarg, &a->fmt) ? EXIT_USAGE : -1;
        else if (o == 'H')
            toy_help(&a->set), h = 0;
        else
            toy_usage(stderr, &a->set, 0), h = EXIT_USAGE;
        if (h >= 0)
            return h;
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", cli_cmd, argv[optind]);
        toy_usage(stderr, &a->set, 0);
        return EXIT_USAGE;
    }
    toy_sync(&a->base, a->p, 1);
    return -1;
}

static void toy_output(const toy_args *a, const toy_config *cfg, const toy_report *rep)
{
    if (a->fmt == FMT_JSON) {
        if (a->n_models == 1) {
            print_json(stdout, &cfg[0], &rep[0], a->p, &a->set);
        } else {
            fputs("{\"k1\":", stdout);
            print_json(stdout, &cfg[0], &rep[0], a->p, &a->set);
            fputs(",\"k2\":", stdout);
            print_json(stdout, &cfg[1], &rep[1], a->p, &a->set);
            fputs("}", stdout);
        }
        fputc('\n', stdout);
    } else if (a->fmt == FMT_CSV) {
        puts("model,estimator,mean,std,flags,health");
        for (int i = 0; i < a->n_models; i++)
            print_csv_rows(stdout, &cfg[i], &rep[i]);
    } else {
        toy_print_table(stdout, cfg, rep, a->n_models);
    }
}

/* Run every model asked for and print; returns the exit status (1 when a
 * run failed; a run where every chain diverged is still printed). */
static int toy_all(const toy_args *a)
{
    toy_config cfg[2];
    toy_report rep[2];
    memset(rep, 0, sizeof rep);
    int status = 0;
    for (int i = 0; i < a->n_models; i++) {
        cfg[i] = a->base;
        cfg[i].model = a->models[0] + i;
        char err[512] = "";
        int rc = toy_run(&cfg[i], &rep[i], err, sizeof err);
        if (rc && rc != SIVE_E_DIVERGED) {
            fprintf(stderr, "%s: model k%d: %s (%s)\n", cli_cmd, cfg[i].model, err,
                    sive_strerror(rc));
            for (int j = 0; j < i; j++)
                toy_report_free(&rep[j]);
            /* options the library refuses when the run starts: usage */
            return rc == SIVE_E_INVALID_ARG ? EXIT_USAGE : EXIT_RUN;
        }
        if (rc)
            status = EXIT_RUN;
    }
    toy_output(a, cfg, rep);
    for (int i = 0; i < a->n_models; i++)
        toy_report_free(&rep[i]);
    return status;
}

int cmd_toy(int argc, char **argv)
{
    toy_args a;
    memset(&a, 0, sizeof a);
    toy_defaults(&a.base, 1);
    a.models[0] = 1;
    a.n_models = 2;
    a.fmt = FMT_TABLE;
    toy_optset(&a.set, a.names, sizeof a.names / sizeof a.names[0]);
    int rc = sive_probe_new(&a.p);
    if (rc || (rc = toy_sync(&a.base, a.p, 0))) {
        fprintf(stderr, "%s: %s (%s)\n", cli_cmd, a.p ? sive_probe_errmsg(a.p) : sive_last_errmsg(),
                sive_strerror(rc));
        sive_probe_free(a.p);
        return EXIT_RUN;
    }
    int status = toy_parse(&a, argc, argv);
    if (status < 0)
        status = toy_all(&a);
    sive_probe_free(a.p);
    return status;
}
