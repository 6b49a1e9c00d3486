/* Plateau rules of `sive calibrate` (see calibrate_rules.h). */
#include "calibrate_rules.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void verdict_clear(cal_verdict *v)
{
    memset(v, 0, sizeof *v);
}

static double comb(const cal_row *a, const cal_row *b)
{
    return sqrt(a->se * a->se + b->se * b->se);
}

static int finite_row(const cal_row *r)
{
    return r->ok && isfinite(r->lambda) && isfinite(r->se);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of se/|lambda| over the finite rows; NaN without any. */
static double median_rel_se(const cal_row *rows, size_t n)
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

static int noisy(const cal_row *rows, size_t n, cal_verdict *v, const char *what)
{
    double m = median_rel_se(rows, n);
    if (!(m > CAL_NOISY_REL))
        return 0;
    v->noisy = 1;
    v->found = 0;
    snprintf(v->reason, sizeof v->reason,
             "too noisy to decide: the median standard error is %.0f %% of lambda-hat "
             "(above %.0f %%), so %s cannot be told apart",
             100.0 * m, 100.0 * CAL_NOISY_REL, what);
    snprintf(v->hint, sizeof v->hint,
             "more steps (--steps) or more chains (--chains) shrink the errors");
    return 1;
}

void cal_rule_h(const cal_row *rows, size_t n, cal_verdict *v)
{
    verdict_clear(v);
    if (n < 2) {
        snprintf(v->reason, sizeof v->reason,
                 "no plateau found in this range: a plateau needs at least two values");
        snprintf(v->hint, sizeof v->hint, "sweep several values, e.g. 0.25,0.5,1,2,4");
        return;
    }
    if (noisy(rows, n, v, "the values"))
        return;
    for (size_t i = 0; i + 1 < n; i++) {
        int good = 1;
        double worst = 0.0;
        for (size_t j = i; j < n && good; j++) {
            if (!finite_row(&rows[j])) {
                good = 0;
                break;
            }
            if (j == i)
                continue;
            double z = fabs(rows[i].lambda - rows[j].lambda) / comb(&rows[i], &rows[j]);
            if (!(z <= CAL_Z))
                good = 0;
            else if (z > worst)
                worst = z;
        }
        if (good) {
            v->found = 1;
            v->pick = v->lo = i;
            v->hi = n - 1;
            snprintf(v->reason, sizeof v->reason,
                     "plateau from %g: lambda-hat = %.4g there stays within %.0f combined "
                     "standard errors of every larger value up to %g (largest gap %.2f SE)",
                     rows[i].value, rows[i].lambda, CAL_Z, rows[n - 1].value, worst);
            return;
        }
    }
    snprintf(v->reason, sizeof v->reason,
             "no plateau found in this range: lambda-hat still moves by more than %.0f "
             "combined standard errors between the largest values",
             CAL_Z);
    const cal_row *last = &rows[n - 1];
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

static int step_good(const cal_row *r, double se_min)
{
    return finite_row(r) && r->rhat <= CAL_RHAT_MAX && r->ess >= CAL_ESS_MIN &&
           r->se <= CAL_SE_SPREAD * se_min;
}

void cal_rule_step(const cal_row *rows, size_t n, cal_verdict *v)
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

void cal_rule_groups(const cal_row *rows, size_t n, double frac, cal_verdict *v)
{
    verdict_clear(v);
    if (!(frac > 0))
        frac = CAL_NC_FRAC;
    size_t from = n;
    for (size_t i = n; i-- > 0;) {
        const cal_row *r = &rows[i];
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
