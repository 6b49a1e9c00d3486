/* Internal helpers of the calibration rules (lib/core/calibrate.c), hidden;
 * test/test_calibrate_rules.c calls them through the internal archive. */
#ifndef SIVE_LIB_CALIBRATE_H
#define SIVE_LIB_CALIBRATE_H

#include "internal.h"
#include "sive/sive.h"

#include <stddef.h>

/* Standard error of lambda_a - lambda_b.  Paired over chains when both rows
 * carry per-chain values of the same chains and >= 2 chains finished in
 * both: the std of the per-chain differences / sqrt(pairs).  Common random
 * numbers make the rows of one sweep positively correlated, so the unpaired
 * sqrt(se_a^2 + se_b^2), the fallback, overstates it.  *pairs (may be NULL)
 * receives the number of pairs, 0 for the fallback. */
SIVE_HIDDEN double sivei_calib_diff_se(const sive_calib_row *a, const sive_calib_row *b,
                                       size_t *pairs);

/* The multiplier of a standard error for a 95 % interval: the Student-t
 * 97.5 % quantile with pairs - 1 degrees of freedom (a paired SE from few
 * chains is itself uncertain), at least 2; 2 when unpaired (0). */
SIVE_HIDDEN double sivei_calib_z(size_t pairs);

#endif
