/* The plateau rules of a calibration sweep (sive.h, sive_calibrate;
 * docs/calibration.md): pure functions of the rows, libc and libm only.
 * Moved from the CLI (tools/calibrate_rules.c) unchanged in arithmetic, so
 * `sive calibrate` recommends what it did. */
#include "calibrate.h"
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rules' fixed parameters (documented at sive_calibrate in sive.h). */
#define CAL_Z 2.0            /* confidence: 2 standard errors          */
#define CAL_RHAT_MAX 1.05
#define CAL_ESS_MIN 100.0
#define CAL_SE_SPREAD 3.0    /* step rule: se <= 3 x the smallest se   */
#define CAL_NOISY_REL 0.5    /* median se / |lambda| above this: noisy */

static void verdict_clear(sive_calib_verdict *v)
{
    memset(v, 0, sizeof *v);
}

static double comb(const sive_calib_row *a, const sive_calib_row *b)
{
    return sqrt(a->se * a->se + b->se * b->se);
}

static int finite_row(const sive_calib_row *r)
{
    return r->ok && isfinite(r->lambda) && isfinite(r->se);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of se/|lambda| over the finite rows; NaN without any. */
static double median_rel_se(const sive_calib_row *rows, size_t n)
{
    double *x = malloc((n ? n : 1) * sizeof *x);
    size_t k = 0;
    if (!x)
        return NAN;
    for (size_t i = 0; i < n; i++)
        if (finite_row(&rows[i]))
            x[k++] = fabs(rows[i].lambda) > 0 ? rows[i].se / fabs(rows[i].lambda) : INFINITY;
    double m = NAN;
    if (k) {
        qsort(x, k, sizeof *x, cmp_double);
        m = k % 2 ? x[k / 2] : 0.5 * (x[k / 2 - 1] + x[k / 2]);
    }
    free(x);
    return m;
}

static int noisy(const sive_calib_row *rows, size_t n, sive_calib_verdict *v, const char *what)
{
    double m = median_rel_se(rows, n);
    if (!(m > CAL_NOISY_REL))
        return 0;
    v->noisy = 1;
    v->found = 0;
    snprintf(v->reason, sizeof v->reason,
             "too noisy to decide: the median standard error is %.1f %% of lambda-hat "
             "(above %.0f %%), so %s cannot be told apart",
             100.0 * m, 100.0 * CAL_NOISY_REL, what);
    snprintf(v->hint, sizeof v->hint,
             "more steps (--steps) or more chains (--chains) shrink the errors");
    return 1;
}

/* Mean and SE of lambda_a - lambda_b, paired over chains when possible
 * (calibrate.h); returns the number of pairs (0: unpaired). */
static size_t diff_pair(const sive_calib_row *a, const sive_calib_row *b, double *diff, double *se)
{
    size_t m = 0;
    double mean = 0.0, m2 = 0.0;
    if (a->chain && b->chain && a->chains == b->chains)
        for (size_t c = 0; c < a->chains; c++) {
            double d = a->chain[c] - b->chain[c];
            if (!isfinite(d))
                continue;
            double dl = d - mean;
            mean += dl / (double)++m;
            m2 += dl * (d - mean);
        }
    if (m >= 2) {
        *diff = mean;
        *se = sqrt(m2 / (double)(m - 1) / (double)m);
        return m;
    }
    *diff = a->lambda - b->lambda;
    *se = comb(a, b);
    return 0;
}

double sivei_calib_diff_se(const sive_calib_row *a, const sive_calib_row *b, size_t *pairs)
{
    double d, se;
    size_t m = diff_pair(a, b, &d, &se);
    if (pairs)
        *pairs = m;
    return se;
}

double sivei_calib_z(size_t pairs)
{
    /* Student-t 97.5 % quantiles, df 1..30; beyond, z + (z^3 + z)/(4 df) */
    static const double t975[30] = {
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (pairs < 2)
        return CAL_Z;
    size_t df = pairs - 1;
    double q = df <= 30 ? t975[df - 1] : 1.96 + 2.37 / (double)df;
    return q > CAL_Z ? q : CAL_Z;
}

/* Worst end of the confidence interval of lambda_i - lambda_j relative to
 * |lambda_j|: the h rule wants it <= tol.  +inf when lambda_j is 0. */
static double h_gap(const sive_calib_row *ri, const sive_calib_row *rj, size_t *pairs)
{
    double d, se;
    *pairs = diff_pair(ri, rj, &d, &se);
    double g = (fabs(d) + sivei_calib_z(*pairs) * se) / fabs(rj->lambda);
    return isnan(g) ? INFINITY : g;
}

/* How a set of comparisons got their SE: the fewest and most chains
 * paired among the paired ones, how many were unpaired, of how many, and
 * the range of their interval multipliers z. */
typedef struct pairing {
    size_t fewest, most, unpaired, total;
    double zlo, zhi;
} pairing;

static void pairing_add(pairing *p, size_t m)
{
    const double z = sivei_calib_z(m);
    if (!p->total)
        p->zlo = p->zhi = z;
    p->zlo = z < p->zlo ? z : p->zlo;
    p->zhi = z > p->zhi ? z : p->zhi;
    p->total++;
    if (!m)
        p->unpaired++;
    else if (p->unpaired + 1 == p->total || m < p->fewest) /* the first paired one */
        p->fewest = m;
    p->most = m > p->most ? m : p->most;
}

/* Row i starts a plateau: every row from it on is finite and every larger
 * one agrees within tol.  *worst: the largest gap; *pr: how its
 * comparisons were made. */
static int h_plateau_from(const sive_calib_row *rows, size_t n, size_t i, double tol,
                          double *worst, pairing *pr)
{
    *worst = 0.0;
    memset(pr, 0, sizeof *pr);
    if (!finite_row(&rows[i]))
        return 0;
    for (size_t j = i + 1; j < n; j++) {
        size_t m;
        if (!finite_row(&rows[j]))
            return 0;
        double g = h_gap(&rows[i], &rows[j], &m);
        pairing_add(pr, m);
        if (!(g <= tol))
            return 0;
        if (g > *worst)
            *worst = g;
    }
    return 1;
}

/* What SE the comparisons used, in words: paired, unpaired, or which of
 * each when they were mixed (rows with and without per-chain values, or
 * other chain counts). */
static void se_kind(char *buf, size_t len, const pairing *p)
{
    char chains[48];
    if (p->fewest == p->most)
        snprintf(chains, sizeof chains, "%zu chains", p->most);
    else
        snprintf(chains, sizeof chains, "%zu to %zu chains", p->fewest, p->most);
    if (!p->most)
        snprintf(buf, len, "unpaired SE sqrt(SE_i^2 + SE_j^2)");
    else if (!p->unpaired)
        snprintf(buf, len, "SE of the difference paired over %s", chains);
    else
        snprintf(buf, len,
                 "SE of the difference paired over %s in %zu of the %zu comparisons, "
                 "unpaired SE sqrt(SE_i^2 + SE_j^2) in the other %zu", chains,
                 p->total - p->unpaired, p->total, p->unpaired);
}

/* Why the two largest values do not make a plateau, and what to try. */
static void h_no_plateau(const sive_calib_row *rows, size_t n, double tol, sive_calib_verdict *v)
{
    const sive_calib_row *a = &rows[n - 2], *last = &rows[n - 1];
    if (!finite_row(a) || !finite_row(last)) {
        snprintf(v->reason, sizeof v->reason,
                 "no plateau found in this range: the largest values have no estimate (a "
                 "chain diverged or none finished)");
        snprintf(v->hint, sizeof v->hint,
                 "see the health column; a smaller base_lr or smaller values");
        return;
    }
    double d, se;
    size_t m = diff_pair(a, last, &d, &se);
    pairing one = {0};
    pairing_add(&one, m);
    char kind[200];
    se_kind(kind, sizeof kind, &one);
    double rel = fabs(d) / fabs(last->lambda), half = sivei_calib_z(m) * se / fabs(last->lambda);
    double med = median_rel_se(rows, n);
    if (med > CAL_NOISY_REL || (rel <= tol && isfinite(half))) {
        v->noisy = med > CAL_NOISY_REL;
        snprintf(v->reason, sizeof v->reason,
                 "%sno plateau found in this range: flatness within %.0f %% is not shown with "
                 "95 %% confidence; the two largest values differ by %.1f %% +- %.1f %% (%s)%s",
                 v->noisy ? "too noisy to decide, " : "", 100.0 * tol, 100.0 * rel,
                 100.0 * half, kind,
                 v->noisy ? "; the median standard error is above 50 % of lambda-hat" : "");
        snprintf(v->hint, sizeof v->hint,
                 "more chains (--chains) or more steps (--steps) shrink the errors");
        return;
    }
    snprintf(v->reason, sizeof v->reason,
             "no plateau found in this range: lambda-hat still moves, the two largest values "
             "differ by %.1f %% +- %.1f %% (more than %.0f %%; %s)",
             100.0 * rel, 100.0 * half, 100.0 * tol, kind);
    if (!(last->rhat <= CAL_RHAT_MAX) || !(last->ess >= CAL_ESS_MIN))
        snprintf(v->hint, sizeof v->hint,
                 "the largest value does not mix (R-hat %.3g, ESS %.0f): more steps first; if "
                 "lambda-hat keeps rising with the radius the chain is descending away from "
                 "theta* (a checkpoint far from a minimum)",
                 last->rhat, last->ess);
    else
        snprintf(v->hint, sizeof v->hint,
                 "extend the range upwards (larger values) or add values between the last ones");
}

static void rule_h(const sive_calib_row *rows, size_t n, double tol, sive_calib_verdict *v)
{
    verdict_clear(v);
    if (!(tol > 0))
        tol = SIVE_CALIB_H_TOL;
    if (n < 2) {
        snprintf(v->reason, sizeof v->reason,
                 "no plateau found in this range: a plateau needs at least two values");
        snprintf(v->hint, sizeof v->hint, "sweep several values, e.g. 0.25,0.5,1,2,4");
        return;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        double worst;
        pairing pr;
        if (!h_plateau_from(rows, n, i, tol, &worst, &pr))
            continue;
        char kind[200], z[48];
        se_kind(kind, sizeof kind, &pr);
        if (pr.zlo == pr.zhi)
            snprintf(z, sizeof z, "%.3g", pr.zhi);
        else
            snprintf(z, sizeof z, "%.3g to %.3g", pr.zlo, pr.zhi);
        v->found = 1;
        v->pick = v->lo = i;
        v->hi = n - 1;
        snprintf(v->reason, sizeof v->reason,
                 "plateau from %g: lambda-hat = %.4g there is within %.0f %% of every larger "
                 "value's up to %g with 95 %% confidence (|difference| + %s SE <= %.0f %% of "
                 "the larger value; worst %.1f %%; %s); no smaller value is",
                 rows[i].value, rows[i].lambda, 100.0 * tol, rows[n - 1].value, z,
                 100.0 * tol, 100.0 * worst, kind);
        return;
    }
    h_no_plateau(rows, n, tol, v);
}

static int step_good(const sive_calib_row *r, double se_min)
{
    return finite_row(r) && r->rhat <= CAL_RHAT_MAX && r->ess >= CAL_ESS_MIN &&
           r->se <= CAL_SE_SPREAD * se_min;
}

static void rule_step(const sive_calib_row *rows, size_t n, sive_calib_verdict *v)
{
    verdict_clear(v);
    if (noisy(rows, n, v, "neighbouring step sizes"))
        return;
    double se_min = INFINITY;
    for (size_t i = 0; i < n; i++)
        if (finite_row(&rows[i]) && rows[i].rhat <= CAL_RHAT_MAX &&
            rows[i].ess >= CAL_ESS_MIN && rows[i].se < se_min)
            se_min = rows[i].se;
    size_t best_lo = 0, best_len = 0;
    for (size_t i = 0; i < n;) {
        if (!step_good(&rows[i], se_min)) {
            i++;
            continue;
        }
        size_t j = i;
        while (j + 1 < n && step_good(&rows[j + 1], se_min) && rows[j].value > 0 &&
               rows[j + 1].value > rows[j].value) {
            double dbl = log2(rows[j + 1].value / rows[j].value);
            double per = fabs(rows[j + 1].lambda - rows[j].lambda) / (dbl > 0 ? dbl : 1.0);
            if (!(per < CAL_Z * comb(&rows[j], &rows[j + 1])))
                break;
            j++;
        }
        if (j - i + 1 > best_len) {
            best_len = j - i + 1;
            best_lo = i;
        }
        i = j + 1;
    }
    if (best_len < 2) {
        snprintf(v->reason, sizeof v->reason,
                 "no plateau found in this range: no two neighbouring values both mix "
                 "(R-hat <= %.2f, ESS >= %.0f, SE <= %.0fx the smallest) and agree within "
                 "%.0f SE per doubling",
                 CAL_RHAT_MAX, CAL_ESS_MIN, CAL_SE_SPREAD, CAL_Z);
        snprintf(v->hint, sizeof v->hint,
                 "add values between the ones that mix, or more steps if R-hat/ESS fail "
                 "everywhere");
        return;
    }
    v->found = 1;
    v->lo = best_lo;
    v->hi = best_lo + best_len - 1;
    v->pick = v->lo;
    for (size_t i = v->lo; i <= v->hi; i++)
        if (rows[i].se < rows[v->pick].se)
            v->pick = i;
    snprintf(v->reason, sizeof v->reason,
             "stable range %g .. %g: R-hat <= %.2f, ESS >= %.0f and lambda-hat changes by "
             "less than %.0f SE per doubling; %g has the smallest standard error there "
             "(%.3g)",
             rows[v->lo].value, rows[v->hi].value, CAL_RHAT_MAX, CAL_ESS_MIN, CAL_Z,
             rows[v->pick].value, rows[v->pick].se);
}

static void rule_groups(const sive_calib_row *rows, size_t n, double frac, sive_calib_verdict *v)
{
    verdict_clear(v);
    if (!(frac > 0))
        frac = SIVE_CALIB_NC_FRAC;
    size_t from = n;
    for (size_t i = n; i-- > 0;) {
        const sive_calib_row *r = &rows[i];
        if (r->ok && isfinite(r->nc_std) && isfinite(r->lambda) &&
            r->nc_std < frac * fabs(r->lambda))
            from = i;
        else
            break;
    }
    if (from == n) {
        snprintf(v->reason, sizeof v->reason,
                 "no plateau found in this range: the noise correction's std is not below "
                 "%.0f %% of lambda-hat at the largest N",
                 100.0 * frac);
        snprintf(v->hint, sizeof v->hint,
                 "try larger N (--values), or a larger evaluation batch to lower the noise");
        return;
    }
    v->found = 1;
    v->pick = v->lo = from;
    v->hi = n - 1;
    snprintf(v->reason, sizeof v->reason,
             "N = %g is the smallest N from which the noise correction's std (%.3g) stays "
             "below %.0f %% of lambda-hat (%.4g)",
             rows[from].value, rows[from].nc_std, 100.0 * frac, rows[from].lambda);
}

int sive_calib_rule_of(sive_option opt, sive_calib_rule *rule)
{
    if (!rule)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_calib_rule_of: NULL argument");
    switch (opt) {
    case SIVE_OPT_H:
    case SIVE_OPT_C_H: *rule = SIVE_CALIB_RULE_H; return SIVE_OK;
    case SIVE_OPT_BASE_LR: *rule = SIVE_CALIB_RULE_STEP; return SIVE_OK;
    case SIVE_OPT_GROUPS: *rule = SIVE_CALIB_RULE_GROUPS; return SIVE_OK;
    default:
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                          "sive_calib_rule_of: option %d has no calibration rule "
                          "(h, c_h, base_lr and groups have)", (int)opt);
    }
}

int sive_calib_row_from_result(const sive_result *r, double value, double *chain, size_t cap,
                               sive_calib_row *row)
{
    if (!r || !row)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_calib_row_from_result: NULL argument");
    const size_t k = (size_t)sive_result_chains(r);
    if (chain && cap < k)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                          "sive_calib_row_from_result: room for %zu chains, the result has %zu",
                          cap, k);
    memset(row, 0, sizeof *row);
    row->value = value;
    for (size_t c = 0; chain && c < k; c++)
        chain[c] = sive_result_chain_status(r, (int32_t)c, NULL) == SIVE_CHAIN_OK
                       ? sive_result_stat(r, SIVE_STAT_SIVE, (int32_t)c)
                       : NAN;
    row->chain = chain;
    row->chains = chain ? k : 0;
    row->lambda = sive_result_lambda(r);
    const double sd = sive_result_lambda_std(r);
    const int32_t ok = sive_result_chains_ok(r);
    /* the std over chains / sqrt(K) with >= 2 chains, else the pooled MCSE */
    row->se = ok >= 2 && isfinite(sd) ? sd / sqrt(ok) : sive_result_mcse(r);
    row->ess = sive_result_ess(r);
    row->rhat = sive_result_rhat(r);
    row->nc = sive_result_noise_correction(r);
    row->nc_std = sive_result_noise_correction_std(r);
    row->ok = ok > 0 && !(sive_result_flags(r) & (SIVE_FLAG_DIVERGED | SIVE_FLAG_ABORTED));
    return SIVE_OK;
}

int sive_calibrate(sive_calib_rule rule, const sive_calib_row *rows, size_t n, double tol,
                   sive_calib_verdict *v)
{
    if (v)
        memset(v, 0, sizeof *v);
    if (!rows || !v || n == 0)
        return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                          "sive_calibrate: NULL argument or no rows");
    for (size_t i = 0; i < n; i++)
        if (isnan(rows[i].value) || (i && rows[i].value < rows[i - 1].value))
            return sivei_fail(NULL, SIVE_E_INVALID_ARG,
                              "sive_calibrate: row %zu: the values must be sorted ascending "
                              "(%g after %g)", i, rows[i].value, i ? rows[i - 1].value : NAN);
    switch (rule) {
    case SIVE_CALIB_RULE_H: rule_h(rows, n, tol, v); return SIVE_OK;
    case SIVE_CALIB_RULE_STEP: rule_step(rows, n, v); return SIVE_OK;
    case SIVE_CALIB_RULE_GROUPS: rule_groups(rows, n, tol, v); return SIVE_OK;
    default:
        return sivei_fail(NULL, SIVE_E_INVALID_ARG, "sive_calibrate: unknown rule %d",
                          (int)rule);
    }
}
