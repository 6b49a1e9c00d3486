/* The plateau rules of `sive calibrate` (docs/calibration.md): pure
 * functions on result rows, libc and libm only (unit-tested on their own by
 * test/test_calibrate_rules.c). */
#ifndef SIVE_TOOLS_CALIBRATE_RULES_H
#define SIVE_TOOLS_CALIBRATE_RULES_H

#include <stddef.h>
#include <stdint.h>

/* One swept value's numbers (NaN where unknown). */
typedef struct cal_row {
    double value;      /* the swept parameter's value                       */
    double lambda;     /* lambda-hat, mean over chains                      */
    double se;         /* its standard error: std over chains / sqrt(K) for
                          K >= 2 chains, else the pooled MCSE               */
    double ess, rhat;  /* multi-chain ESS of L-bar, split-R-hat             */
    double nc, nc_std; /* noise correction C and its std                    */
    int ok;            /* 1: at least one chain finished, nothing diverged  */
    const double *chain; /* per-chain lambda-hat (NaN: chain failed), or NULL */
    size_t k;          /* entries of chain                                  */
} cal_row;

enum { CAL_RULE_H, CAL_RULE_STEP, CAL_RULE_GROUPS };

/* What a rule found. */
typedef struct cal_verdict {
    int found;          /* 1: a recommendation                              */
    int noisy;          /* 1: the errors are too large to decide            */
    size_t pick;        /* the recommended row (when found)                 */
    size_t lo, hi;      /* the plateau / stable range, rows lo..hi          */
    char reason[512];   /* why (or why not), one sentence                    */
    char hint[256];     /* what to try when nothing was found ("" if found) */
} cal_verdict;

/* Default parameters of the rules. */
#define CAL_Z 2.0            /* confidence: 2 standard errors         */
#define CAL_H_TOL 0.10       /* h: lambda-hat within 10 % of larger h's */
#define CAL_RHAT_MAX 1.05
#define CAL_ESS_MIN 100.0
#define CAL_NC_FRAC 0.10     /* noise-correction std < 10 % of lambda */
#define CAL_SE_SPREAD 3.0    /* step rule: se <= 3 x the smallest se  */
#define CAL_NOISY_REL 0.5    /* median se / |lambda| above this: noisy */

/* Standard error of lambda_a - lambda_b.  Paired over chains when both rows
 * carry per-chain values of the same chains and >= 2 chains finished in
 * both: the std of the per-chain differences / sqrt(pairs).  Common random
 * numbers make the rows of one sweep positively correlated, so the unpaired
 * sqrt(se_a^2 + se_b^2), the fallback, overstates it.  *pairs (may be NULL)
 * receives the number of pairs, 0 for the fallback. */
double cal_diff_se(const cal_row *a, const cal_row *b, size_t *pairs);

/* The multiplier of a standard error for a 95 % interval: the Student-t
 * 97.5 % quantile with pairs - 1 degrees of freedom (a paired SE from few
 * chains is itself uncertain), at least CAL_Z; CAL_Z when unpaired (0). */
double cal_z(size_t pairs);

/* The rules.  rows must be sorted by value, ascending (n >= 1).
 *  h (c_h or h): the smallest value i from which lambda-hat agrees with
 *    every larger value j to within tol (default CAL_H_TOL) of lambda_j,
 *    with 95 % confidence: |lambda_i - lambda_j| + cal_z(pairs) se_ij <=
 *    tol |lambda_j| (se_ij, pairs from cal_diff_se), with at least one
 *    larger value and every row from i on ok.  An equivalence test, not
 *    a significance test: too few chains to show flatness give "no
 *    plateau", never an early one.
 *  step (base_lr): rows with R-hat <= CAL_RHAT_MAX, ESS >= CAL_ESS_MIN, ok,
 *    and se <= CAL_SE_SPREAD x the smallest such se; the longest run of
 *    adjacent such rows (>= 2) in which lambda-hat changes by less than
 *    CAL_Z combined SE per doubling of the value is the stable range; the
 *    pick is its row with the smallest se.
 *  groups (N): the smallest N whose nc_std < frac |lambda| and stays so for
 *    every larger N.
 * A sweep whose median se / |lambda| exceeds CAL_NOISY_REL is "noisy": the
 * step rule then refuses to decide (found 0); the h rule says so when it
 * finds no plateau (paired errors can still show one). */
void cal_rule_h(const cal_row *rows, size_t n, double tol, cal_verdict *v);
void cal_rule_step(const cal_row *rows, size_t n, cal_verdict *v);
void cal_rule_groups(const cal_row *rows, size_t n, double frac, cal_verdict *v);

#endif
