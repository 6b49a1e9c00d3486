/* The relaxation test (SIVE_FLAG_UNRELAXED candidate; issue 18 part 5):
 * the halves z of each chain's squared displacement over the tail, on
 * saved runs and on stationary toys.
 *
 *   bench_relax FILE.sive...     each saved run (bench_truth --save DIR):
 *                                lambda, error, flags, the largest z over
 *                                the chains and its Bonferroni deviate,
 *                                the split-Rhat of DISP^2 and the chains'
 *                                agreement in lambda-hat (zagree)
 *   bench_relax --null RUNS [--d D] [--k K] [--h H] [--steps M]
 *               [--chains C] [--metropolis 0|1] [--seed0 S]
 *                                RUNS seeds of a stationary model, the
 *                                quadratic (K/2)|x|^2 at 0 (default d 10,
 *                                K 1, h 1), t = 10^4: the per-chain z's
 *                                mean, sd and tails, and the runs beyond
 *                                3 of the Bonferroni deviate or 1.1 of
 *                                the split-Rhat of DISP^2 */
#include "bench_common.h"
#include "probe_impl.h"
#include "quad.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The squared displacement tails DISP^2 of r's finished chains (at most
 * 256): their count, NULL-free x[] and the tail length *n; -1 on NOMEM. */
static int disp2_tails(const sive_result *r, double **x, size_t *n)
{
    int k = 0;
    for (int32_t c = 0; c < sive_result_chains(r) && k < 256; c++) {
        if (sivei_chain(r, c)->status != SIVE_CHAIN_OK)
            continue;
        if (!(x[k] = sivei_tail_copy(r, sivei_chain(r, c), SIVE_TRACE_DISP, n)))
            return -1;
        for (size_t i = 0; i < *n; i++)
            x[k][i] *= x[k][i];
        k++;
    }
    return k;
}

/* The statistic: each chain's halves z of DISP^2, last half minus first
 * over the standard error of the nonstationary flag's halves test
 * (sivei_halves_z: each half's autocorrelation pooled over the chains),
 * positive when the chain still spreads out; the largest over the
 * chains, its Bonferroni deviate (the normal deviate of K times its
 * upper tail probability) and the split-Rhat of DISP^2. */
static int relax_worst(const sive_result *r, double *zmax, double *zb, int *k_out,
                       double *zall, double *rhat)
{
    double *x[256] = {0}, z[256];
    size_t n = 0;
    const int k = disp2_tails(r, x, &n);
    int rc = k > 0 ? sivei_halves_z((const double *const *)x, (size_t)k, n, z) : 1;
    *zmax = NAN;
    *zb = NAN;
    *k_out = k;
    *rhat = rc ? NAN : sivei_split_rhat((const double *const *)x, (size_t)k, n);
    for (int c = 0; c < k && !rc; c++) {
        z[c] = -z[c];
        if (zall)
            zall[c] = z[c];
        if (!(z[c] <= *zmax))
            *zmax = z[c];
    }
    if (!rc)
        *zb = sivei_normal_upper(fmin(0.5, (double)k * 0.5 * erfc(*zmax / sqrt(2.0))));
    for (int c = 0; c < 256 && x[c]; c++)
        free(x[c]);
    return rc;
}

/* The chains' unclipped estimates against each other: sum over chains of
 * (lambda_c - mean)^2 / mcse_c^2, ~ chi-square with K - 1 dof when they
 * sample one law, as the normal deviate of its upper tail (Wilson-
 * Hilferty). */
static double chains_agree_z(const sive_result *r)
{
    double s = 0.0, w = 0.0, q = 0.0;
    int k = 0;
    for (int32_t c = 0; c < sive_result_chains(r); c++) {
        const double v = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c),
                     e = sive_result_stat(r, SIVE_STAT_MCSE, c);
        if (sivei_chain(r, c)->status != SIVE_CHAIN_OK || !(e > 0.0))
            continue;
        s += v / (e * e);
        w += 1.0 / (e * e);
        k++;
    }
    for (int32_t c = 0; c < sive_result_chains(r) && k > 1; c++) {
        const double v = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, c),
                     e = sive_result_stat(r, SIVE_STAT_MCSE, c);
        if (sivei_chain(r, c)->status == SIVE_CHAIN_OK && e > 0.0)
            q += (v - s / w) * (v - s / w) / (e * e);
    }
    const double nu = k - 1.0, a = 2.0 / (9.0 * nu);
    return k > 1 ? (cbrt(q / nu) - (1.0 - a)) / sqrt(a) : NAN;
}

static int one_file(const char *path)
{
    sive_result *r = NULL;
    double lambda, target, zmax, zb, rhat;
    int k;
    if (bench_load_saved(path, &r, &lambda, &target))
        return 1;
    const double est = sive_result_stat(r, SIVE_STAT_SIVE_UNCLIPPED, SIVE_SUMMARY),
                 rel = est / lambda - 1.0;
    relax_worst(r, &zmax, &zb, &k, NULL, &rhat);
    double g = 0.0, disp = 0.0;
    for (int32_t c = 0; c < sive_result_chains(r); c++) {
        if (sivei_chain(r, c)->status != SIVE_CHAIN_OK)
            continue;
        g = fmax(g, sivei_disp_growth(r, sivei_chain(r, c)));
        disp = fmax(disp, sive_result_stat(r, SIVE_STAT_RMS_DISP_REL_H, c));
    }
    const uint32_t f = sive_result_flags(r);
    const char *base = strrchr(path, '/');
    const char *cls = fabs(rel) > 0.10 ? (f & ~(uint32_t)(SIVE_FLAG_NONSTATIONARY |
                                                          SIVE_FLAG_LOW_ESS)
                                              ? "off-caught"
                                              : "OFF-MISSED")
                      : fabs(rel) <= 0.05 ? (f ? "in5-flagged" : "in5-clean")
                                          : "5-10";
    printf("%-40s %8.3f %+7.1f%% %-11s K %2d zmax %+7.2f zB %+6.2f rhat %6.3f zagree %+6.2f dgrow %5.3f disp %6.3f |",
           base ? base + 1 : path, lambda, 100.0 * rel, cls, k, zmax, zb, rhat, chains_agree_z(r), g, disp);
    for (uint32_t bit = 1; bit; bit <<= 1)
        if ((f & bit) && sive_flag_name(bit))
            printf(" %s", sive_flag_name(bit));
    printf("\n");
    sive_result_free(r);
    return 0;
}

/* The null mode's settings, read by name from "--name value" pairs. */
typedef struct null_opts {
    double runs, d, k, h, steps, chains, metropolis, seed0;
} null_opts;

static int null_parse(int argc, char **argv, null_opts *o)
{
    const struct {
        const char *name;
        double *v;
    } keys[] = {{"--d", &o->d},         {"--k", &o->k},           {"--h", &o->h},
                {"--steps", &o->steps}, {"--chains", &o->chains}, {"--metropolis", &o->metropolis},
                {"--seed0", &o->seed0}};
    o->runs = argc > 2 ? atof(argv[2]) : 100;
    for (int i = 3; i < argc; i += 2) {
        size_t j = 0;
        while (j < sizeof keys / sizeof keys[0] && strcmp(argv[i], keys[j].name))
            j++;
        if (j == sizeof keys / sizeof keys[0] || i + 1 >= argc) {
            fprintf(stderr, "unknown or incomplete option %s\n", argv[i]);
            return 2;
        }
        *keys[j].v = atof(argv[i + 1]);
    }
    return 0;
}

/* One run of the isotropic quadratic (k/2)|x|^2 at theta* = 0, t = 10^4. */
static int null_run(const null_opts *o, quad_fixture *q, int seed, sive_result **r)
{
    static const double th[4096];
    sive_model m = quad_fixture_model(q, (size_t)o->d);
    sive_probe *p = NULL;
    if (o->d > 4096 || sive_probe_new(&p))
        return 1;
    sive_probe_set_double(p, SIVE_OPT_T, 1e4);
    sive_probe_set_double(p, SIVE_OPT_H, o->h);
    sive_probe_set_int(p, SIVE_OPT_STEPS, (int64_t)o->steps);
    sive_probe_set_int(p, SIVE_OPT_CHAINS, (int64_t)o->chains);
    sive_probe_set_int(p, SIVE_OPT_GROUPS, 4);
    sive_probe_set_int(p, SIVE_OPT_SEED, seed);
    sive_probe_set_int(p, SIVE_OPT_METROPOLIS, (int64_t)o->metropolis);
    const int rc = sive_probe_run(p, &m, th, r) || sive_result_status(*r);
    sive_probe_free(p);
    return rc;
}

static int null_mode(int argc, char **argv)
{
    null_opts o = {.d = 10, .k = 1, .h = 1, .steps = 4000, .chains = 4, .metropolis = 1,
                   .seed0 = 1};
    if (null_parse(argc, argv, &o))
        return 2;
    static quad_fixture q = {.k = 1.0, .l0 = 0.0, .sigma = 1e-5};
    q.k = o.k;
    double s1 = 0.0, s2 = 0.0;
    int n = 0, runs_b3 = 0, up2 = 0, up3 = 0, lo2 = 0, rhat_big = 0;
    for (int k = 0; k < (int)o.runs; k++) {
        sive_result *r = NULL;
        double zmax, zb, z[256], rhat;
        int kk;
        if (null_run(&o, &q, (int)o.seed0 + k, &r) || relax_worst(r, &zmax, &zb, &kk, z, &rhat)) {
            fprintf(stderr, "run %d failed: %s\n", k, sive_last_errmsg());
            return 1;
        }
        runs_b3 += zb > 3.0;
        rhat_big += rhat > 1.1;
        for (int c = 0; c < kk; c++) {
            s1 += z[c];
            s2 += z[c] * z[c];
            up2 += z[c] > 2.0;
            up3 += z[c] > 3.0;
            lo2 += z[c] < -2.0;
            n++;
        }
        sive_result_free(r);
    }
    const double mu = s1 / n;
    printf("quad d %g k %g h %g, %g runs x %g chains x %g steps, metropolis %g\n", o.d, o.k, o.h,
           o.runs, o.chains, o.steps, o.metropolis);
    printf("per-chain z: %d, mean %+.3f sd %.3f, z > 2: %d (%.2f %%), z > 3: %d, z < -2: %d; "
           "runs with Bonferroni deviate > 3: %d, with Rhat(DISP^2) > 1.1: %d, of %g\n", n, mu,
           sqrt((s2 - n * mu * mu) / (n - 1)), up2, 100.0 * up2 / n, up3, lo2, runs_b3, rhat_big,
           o.runs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_relax FILE... | --null RUNS [options]\n");
        return 2;
    }
    if (!strcmp(argv[1], "--null"))
        return null_mode(argc, argv);
    int bad = 0;
    for (int i = 1; i < argc; i++)
        bad |= one_file(argv[i]);
    return bad;
}
