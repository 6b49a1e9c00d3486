/* The start test of the experimental option anneal (docs/theory.md,
 * "Annealed burn-in"; issue 18): its variants on saved runs and their
 * null distribution on stationary toys.
 *
 *   bench_start FILE.sive...      the variants of each saved run
 *                                 (bench_truth --save DIR; the statistics
 *                                 are recomputed by this build)
 *   bench_start --null RUNS [--model quad|k1] [--d D] [--steps M]
 *               [--chains K] [--metropolis 0|1] [--anneal KAPPA]
 *               [--leapfrog L] [--seed0 S] [--k CURVATURE]
 *                                 RUNS seeds of a stationary model
 *                                 (quad: L = |x|^2/2 at 0, t = 10^4, h = 1;
 *                                 k1: L = 1 + x^2 at 0.2, h = 2): mean,
 *                                 standard deviation and tail counts of each
 *                                 variant's z
 *
 * Variants (lib/core/anneal.c, sivei_start_variants): hot minus cold over
 * the combined standard error, of lambda-hat (0-2) and of t times the
 * tail mean loss (3-5), the variances of the chains' means with the
 * autocorrelation pooled over all chains (0, 5), over each group (1, 3),
 * or each chain's own (2, 4), and (6, 7) the test chosen, Welch's with
 * each group pooled, mapped to z by its degrees of freedom. */
#define SIVE_EXPERIMENTAL
#include "bench_common.h"
#include "probe_impl.h"
#include "quad.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vname[SIVEI_START_VARIANTS] = {
    "lam/all", "lam/group", "lam/own", "loss/group", "loss/own", "loss/all", "welch/lam",
    "welch/loss"};

static int one_file(const char *path)
{
    sive_result *r = NULL;
    double z[SIVEI_START_VARIANTS], mean[2][2], lambda, target;
    if (bench_load_saved(path, &r, &lambda, &target))
        return 1;
    int rc = sivei_start_variants(r, z, mean);
    const char *base = strrchr(path, '/');
    printf("%-40s lam %7.3f est %8.4g +- %-7.3g hot %8.4g cold %8.4g  tL hot-cold %+8.4g |",
           base ? base + 1 : path, lambda, sive_result_lambda(r), sive_result_mcse(r),
           mean[0][0], mean[0][1], mean[1][0] - mean[1][1]);
    for (int i = 0; i < SIVEI_START_VARIANTS; i++)
        printf(" %+6.2f", z[i]);
    /* each group's pooled tau of Lbar and of the influence series, and
     * the tail length: the dof of its variance estimate ~ k n / (10 tau) */
    int32_t g[2][64];
    int ng[2] = {0, 0};
    for (int32_t c = 0; c < sive_result_chains(r) && c < 64; c++)
        if (sivei_chain(r, c)->status == SIVE_CHAIN_OK)
            g[c & 1][ng[c & 1]++] = c;
    double v[64], tl[2] = {NAN, NAN}, ty[2] = {NAN, NAN};
    for (int k = 0; k < 2; k++)
        if (ng[k]) {
            sivei_group_var(r, g[k], (size_t)ng[k], 1, v, &tl[k], NULL);
            sivei_group_var(r, g[k], (size_t)ng[k], 0, v, &ty[k], NULL);
        }
    sivei_start st;
    sivei_start_test(r, &st);
    printf(" | welch lam %+6.2f (%4.0f dof) loss %+6.2f (%4.0f dof) start_z %+6.2f%s",
           st.z[0], st.dof[0], st.z[1], st.dof[1], st.zmin,
           sive_result_flags(r) & SIVE_FLAG_START_DEPENDENT ? " FLAG" : "");
    printf(" | flags");
    for (uint32_t bit = 1; bit; bit <<= 1)
        if ((sive_result_flags(r) & bit) && sive_flag_name(bit))
            printf(" %s", sive_flag_name(bit));
    printf(" | n %lld tauL %.0f %.0f tauY %.0f %.0f\n", (long long)sivei_tail_count(&r->opt),
           tl[0], tl[1], ty[0], ty[1]);
    sive_result_free(r);
    return rc != SIVE_OK;
}

static double k1_loss(const double *x) { return 1.0 + x[0] * x[0]; }

static int k1_grad(const void *theta, size_t d, const sive_batch *b, void *grad, double *loss,
                   void *user)
{
    (void)d, (void)b, (void)user;
    const double *x = theta;
    ((double *)grad)[0] = 2.0 * x[0];
    *loss = k1_loss(x);
    return 0;
}

static int k1_group(const void *theta, size_t d, const sive_batch *b, double *gl, void *user)
{
    (void)d, (void)user;
    quad_noisy_groups(b, k1_loss(theta), 1e-5, gl);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_start FILE... | --null RUNS [options]\n");
        return 2;
    }
    if (strcmp(argv[1], "--null")) {
        int bad = 0;
        printf("%-40s %-61s   z:", "file", "");
        for (int i = 0; i < SIVEI_START_VARIANTS; i++)
            printf(" %s", vname[i]);
        printf("\n");
        for (int i = 1; i < argc; i++)
            bad |= one_file(argv[i]);
        return bad;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 100, d = 10, metropolis = 1, leapfrog = 0;
    long steps = 4000, chains = 5, seed0 = 1;
    double kappa = 100.0;
    const char *model = "quad";
    static quad_fixture q = {.k = 1.0, .l0 = 0.0, .sigma = 1e-5};
    for (int i = 3; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--d"))
            d = atoi(v);
        else if (!strcmp(a, "--steps"))
            steps = atol(v);
        else if (!strcmp(a, "--chains"))
            chains = atol(v);
        else if (!strcmp(a, "--metropolis"))
            metropolis = atoi(v);
        else if (!strcmp(a, "--leapfrog"))
            leapfrog = atoi(v);
        else if (!strcmp(a, "--anneal"))
            kappa = atof(v);
        else if (!strcmp(a, "--k"))
            q.k = atof(v);
        else if (!strcmp(a, "--seed0"))
            seed0 = atol(v);
        else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    const int k1 = !strcmp(model, "k1");
    sive_model m = quad_fixture_model(&q, (size_t)d);
    double th[64] = {0}, h = 1.0;
    if (k1) {
        m.dim = 1;
        m.grad = k1_grad;
        m.group_loss = k1_group;
        th[0] = 0.2;
        h = 2.0;
    }
    double s1[SIVEI_START_VARIANTS] = {0}, s2[SIVEI_START_VARIANTS] = {0};
    int fin = 0, fin_flag = 0;
    int n = 0, two[SIVEI_START_VARIANTS] = {0}, three[SIVEI_START_VARIANTS] = {0},
        up3[SIVEI_START_VARIANTS] = {0}, up2[SIVEI_START_VARIANTS] = {0};
    for (int k = 0; k < runs; k++) {
        sive_probe *p = NULL;
        sive_result *r = NULL;
        if (sive_probe_new(&p))
            return 1;
        sive_probe_set_double(p, SIVE_OPT_T, 1e4);
        sive_probe_set_double(p, SIVE_OPT_H, h);
        sive_probe_set_int(p, SIVE_OPT_STEPS, steps);
        sive_probe_set_int(p, SIVE_OPT_CHAINS, chains);
        sive_probe_set_int(p, SIVE_OPT_GROUPS, 4);
        sive_probe_set_int(p, SIVE_OPT_SEED, seed0 + k);
        sive_probe_set_int(p, SIVE_OPT_METROPOLIS, metropolis);
        if (leapfrog > 1)
            sive_probe_set_int(p, SIVE_OPT_LEAPFROG, leapfrog);
        sive_probe_set_double(p, SIVE_OPT_ANNEAL, kappa);
        if (sive_probe_run(p, &m, th, &r) || sive_result_status(r)) {
            fprintf(stderr, "run %d failed: %s\n", k, sive_last_errmsg());
            return 1;
        }
        double z[SIVEI_START_VARIANTS], mean[2][2];
        if (sivei_start_variants(r, z, mean))
            return 1;
        sivei_start st;
        if (sivei_start_test(r, &st))
            return 1;
        fin += fabs(st.zmin) > 3.0;
        fin_flag += !!(sive_result_flags(r) & SIVE_FLAG_START_DEPENDENT);
        for (int i = 0; i < SIVEI_START_VARIANTS; i++) {
            s1[i] += z[i];
            s2[i] += z[i] * z[i];
            two[i] += fabs(z[i]) > 2.0;
            three[i] += fabs(z[i]) > 3.0;
            up2[i] += z[i] > 2.0;
            up3[i] += z[i] > 3.0;
        }
        n++;
        sive_probe_free(p);
        sive_result_free(r);
    }
    printf("%s k %g d %d, %d runs x %ld chains x %ld steps, metropolis %d, leapfrog %d, anneal %g\n",
           model, q.k, k1 ? 1 : d, n, chains, steps, metropolis, leapfrog, kappa);
    printf("start_z (Welch, both): |z| > 3 in %d runs, start_dependent raised in %d; "
           "\n", fin, fin_flag);
    printf("%-11s %7s %6s %6s %6s %6s %6s\n", "variant", "mean", "sd", "|z|>2", "|z|>3", "z>2",
           "z>3");
    for (int i = 0; i < SIVEI_START_VARIANTS; i++) {
        const double mu = s1[i] / n;
        printf("%-11s %+7.3f %6.3f %6d %6d %6d %6d\n", vname[i], mu,
               sqrt((s2[i] - n * mu * mu) / (n - 1)), two[i], three[i], up2[i], up3[i]);
    }
    return 0;
}
