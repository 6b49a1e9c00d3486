/* `sive toy`: the paper's Table 1 on the analytic toy models. */
#include "cli.h"
#include "toy.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *toy_usage =
    "usage: sive toy [--model k1|k2|both] [--chains K] [--seed S] [--steps M]\n"
    "                [--groups N] [--h H] [--base-lr A] [--sigma S] [--t T]\n"
    "                [--burn-in F] [--threads J] [--eval-stride k]\n"
    "                [--format table|json|csv]\n"
    "Probes K1 = u^2 and/or K2 = u^2 v^2 with a hidden floor L0 = 100 and\n"
    "Gaussian evaluation noise (defaults: the paper's Table 1 settings).\n";

static const char *est_key[TOY_EST_COUNT] = {
    "oracle", "naive", "raw", "sive", "sive_unclipped", "oracle_variance", "noise_correction_chains"};

static void print_json(FILE *f, const toy_config *c, const toy_report *r)
{
    fprintf(f, "{\"model\":\"k%d\",\"chains\":%d,\"chains_ok\":%d,\"seed\":%llu,\"steps\":%lld,"
               "\"groups\":%lld,\"h\":%.17g,\"base_lr\":%.17g,\"sigma\":%.17g,\"t\":%.17g",
            c->model, (int)r->chains, (int)r->chains_ok, (unsigned long long)c->seed,
            (long long)c->steps, (long long)c->groups, c->h, c->base_lr, c->sigma, c->t);
    for (int k = 0; k <= TOY_SIVE_UNCLIPPED; k++)
        fprintf(f, ",\"%s\":{\"mean\":%.10g,\"std\":%.10g}", est_key[k], r->mean[k],
                isnan(r->std[k]) ? 0.0 : r->std[k]);
    fprintf(f, ",\"ess\":%.10g,\"noise_correction\":%.10g,\"noise_correction_std\":%.10g,"
               "\"noise_correction_theory\":%.10g,\"mcse\":%.10g,\"oracle_mcse\":%.10g,\"rhat\":%.10g,"
               "\"flags\":%u}",
            r->ess, r->noise_correction, r->noise_correction_std,
            c->t * c->t * c->sigma * c->sigma / (double)c->groups, r->sive_mcse, r->oracle_mcse,
            r->rhat, r->flags);
}

static void print_csv_rows(FILE *f, const toy_config *c, const toy_report *r)
{
    for (int k = 0; k <= TOY_SIVE_UNCLIPPED; k++)
        fprintf(f, "k%d,%s,%.10g,%.10g\n", c->model, est_key[k], r->mean[k], r->std[k]);
}

void toy_print_table(FILE *f, const toy_config *cfg, const toy_report *rep, int n)
{
    const toy_config *c = &cfg[0];
    fprintf(f, "LLC estimates on the noisy toy models (Table 1): mean ± std over %lld chains\n",
            (long long)c->chains);
    fprintf(f, "t = %g, h = %g, base_lr = %g, M = %lld, burn-in = %g, N = %lld, sigma = %g, "
            "L0 = %g, seed = %llu\n\n",
            c->t, c->h, c->base_lr, (long long)c->steps, c->burn_in, (long long)c->groups,
            c->sigma, c->floor_l0, (unsigned long long)c->seed);
    fprintf(f, "%-20s", "Estimator");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-22s", cfg[i].model == 1 ? "K1 = u^2" : "K2 = u^2 v^2");
    fprintf(f, "\n");
    const char *names[] = {"Oracle mean", "Naive mean", "Raw variance", "SIVE",
                           "SIVE (unclipped)"};
    for (int k = 0; k <= TOY_SIVE_UNCLIPPED; k++) {
        fprintf(f, "%-20s", names[k]);
        for (int i = 0; i < n; i++)
            cli_pm(f, rep[i].mean[k], rep[i].std[k], 22);
        fprintf(f, "\n");
    }
    fprintf(f, "\nDiagnostics\n");
    fprintf(f, "%-20s", "noise correction C");
    for (int i = 0; i < n; i++) {
        char b[64];
        snprintf(b, sizeof b, "%.4f ± %.4f", rep[i].noise_correction, rep[i].noise_correction_std);
        fprintf(f, "%-23s", b);
    }
    fprintf(f, "\n%-20s", "  theory t²σ²/N");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-22.4f", cfg[i].t * cfg[i].t * cfg[i].sigma * cfg[i].sigma / (double)cfg[i].groups);
    fprintf(f, "\n%-20s", "MCSE (SIVE)");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-22.4f", rep[i].sive_mcse);
    fprintf(f, "\n%-20s", "ESS (all chains)");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-22.0f", rep[i].ess);
    fprintf(f, "\n%-20s", "split-Rhat");
    for (int i = 0; i < n; i++)
        fprintf(f, "%-22.4f", rep[i].rhat);
    fprintf(f, "\n\nReferences: K1 exact ULA (Appendix B): t·E[K] = %.4f, t²·Var[K] = %.4f at base_lr %g;\n",
            1.0 / (2.0 * (1.0 - c->base_lr)), 1.0 / (2.0 * (1.0 - c->base_lr) * (1.0 - c->base_lr)),
            c->base_lr);
    fprintf(f, "K2 continuous law at t = 1e4, h = 2, centre (0.2, 0.2): t·E[K] = 0.42957, t²·Var[K] = 0.42461.\n");
    for (int i = 0; i < n; i++)
        if (rep[i].flags && rep[i].health)
            fprintf(f, "health (k%d): %s", cfg[i].model, rep[i].health);
}

int cmd_toy(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},   {"chains", required_argument, 0, 'c'},
        {"seed", required_argument, 0, 's'},    {"steps", required_argument, 0, 'M'},
        {"groups", required_argument, 0, 'N'},  {"h", required_argument, 0, 'h'},
        {"base-lr", required_argument, 0, 'a'}, {"sigma", required_argument, 0, 'S'},
        {"t", required_argument, 0, 't'},       {"burn-in", required_argument, 0, 'b'},
        {"threads", required_argument, 0, 'j'}, {"eval-stride", required_argument, 0, 'k'},
        {"format", required_argument, 0, 'f'},  {"help", no_argument, 0, 'H'},
        {0, 0, 0, 0}};
    toy_config base;
    toy_defaults(&base, 1);
    int models[2] = {1, 2}, n_models = 2, fmt = FMT_TABLE;
    int64_t iv;
    double dv;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (o) {
        case 'm':
            if (!strcmp(optarg, "k1")) { models[0] = 1; n_models = 1; }
            else if (!strcmp(optarg, "k2")) { models[0] = 2; n_models = 1; }
            else if (!strcmp(optarg, "both")) { n_models = 2; }
            else { fprintf(stderr, "sive toy: --model expects k1, k2 or both\n"); return 2; }
            break;
        case 'c': if (cli_int("--chains", optarg, 1, 4096, &iv)) return 2; base.chains = iv; break;
        case 's': if (cli_int("--seed", optarg, 0, INT64_MAX, &iv)) return 2; base.seed = (uint64_t)iv; break;
        case 'M': if (cli_int("--steps", optarg, 8, (int64_t)1 << 40, &iv)) return 2; base.steps = iv; break;
        case 'N': if (cli_int("--groups", optarg, 2, 1 << 20, &iv)) return 2; base.groups = iv; break;
        case 'j': if (cli_int("--threads", optarg, 1, 1024, &iv)) return 2; base.threads = iv; break;
        case 'k': if (cli_int("--eval-stride", optarg, 1, 1 << 20, &iv)) return 2; base.stride = iv; break;
        case 'h': if (cli_double("--h", optarg, 1e-12, 1e12, &dv)) return 2; base.h = dv; break;
        case 'a': if (cli_double("--base-lr", optarg, 1e-12, 1.0, &dv)) return 2; base.base_lr = dv; break;
        case 'S': if (cli_double("--sigma", optarg, 0.0, 1e6, &dv)) return 2; base.sigma = dv; break;
        case 't': if (cli_double("--t", optarg, 1e-12, 1e12, &dv)) return 2; base.t = dv; break;
        case 'b': if (cli_double("--burn-in", optarg, 0.0, 0.99, &dv)) return 2; base.burn_in = dv; break;
        case 'f': if (cli_format(optarg, &fmt)) return 2; break;
        case 'H': fputs(toy_usage, stdout); return 0;
        default: fputs(toy_usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sive toy: unexpected argument '%s'\n%s", argv[optind], toy_usage);
        return 2;
    }

    toy_config cfg[2];
    toy_report rep[2];
    memset(rep, 0, sizeof rep);
    int status = 0;
    for (int i = 0; i < n_models; i++) {
        cfg[i] = base;
        cfg[i].model = models[i];
        char err[512] = "";
        int rc = toy_run(&cfg[i], &rep[i], err, sizeof err);
        if (rc && rc != SIVE_E_DIVERGED) {
            fprintf(stderr, "sive toy: model k%d: %s (%s)\n", models[i], err, sive_strerror(rc));
            for (int j = 0; j < i; j++)
                toy_report_free(&rep[j]);
            return 1;
        }
        if (rc)
            status = 1;
    }

    if (fmt == FMT_JSON) {
        if (n_models == 1) {
            print_json(stdout, &cfg[0], &rep[0]);
        } else {
            fputs("{\"k1\":", stdout);
            print_json(stdout, &cfg[0], &rep[0]);
            fputs(",\"k2\":", stdout);
            print_json(stdout, &cfg[1], &rep[1]);
            fputs("}", stdout);
        }
        fputc('\n', stdout);
    } else if (fmt == FMT_CSV) {
        puts("model,estimator,mean,std");
        for (int i = 0; i < n_models; i++)
            print_csv_rows(stdout, &cfg[i], &rep[i]);
    } else {
        toy_print_table(stdout, cfg, rep, n_models);
    }
    for (int i = 0; i < n_models; i++)
        toy_report_free(&rep[i]);
    return status;
}
