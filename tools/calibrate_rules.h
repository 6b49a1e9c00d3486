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
#define CAL_Z 2.0            /* "within 2 combined standard errors"   */
#define CAL_RHAT_MAX 1.05
#define CAL_ESS_MIN 100.0
#define CAL_NC_FRAC 0.10     /* noise-correction std < 10 % of lambda */
#define CAL_SE_SPREAD 3.0    /* step rule: se <= 3 x the smallest se  */
#define CAL_NOISY_REL 0.5    /* median se / |lambda| above this: noisy */

/* The rules.  rows must be sorted by value, ascending (n >= 1).
 *  h (c_h or h): the smallest value from which lambda-hat stays within
 *    CAL_Z combined standard errors, sqrt(se_i^2 + se_j^2), of every larger
 *    value's, with at least one larger value and every row from it on ok.
 *  step (base_lr): rows with R-hat <= CAL_RHAT_MAX, ESS >= CAL_ESS_MIN, ok,
 *    and se <= CAL_SE_SPREAD x the smallest such se; the longest run of
 *    adjacent such rows (>= 2) in which lambda-hat changes by less than
 *    CAL_Z combined SE per doubling of the value is the stable range; the
 *    pick is its row with the smallest se.
 *  groups (N): the smallest N whose nc_std < frac |lambda| and stays so for
 *    every larger N.
 * A sweep whose median se / |lambda| exceeds CAL_NOISY_REL is "noisy": the
 * rules still run (h and step) but the verdict says the errors are too
 * large and found is 0. */
void cal_rule_h(const cal_row *rows, size_t n, cal_verdict *v);
void cal_rule_step(const cal_row *rows, size_t n, cal_verdict *v);
void cal_rule_groups(const cal_row *rows, size_t n, double frac, cal_verdict *v);

#endif
