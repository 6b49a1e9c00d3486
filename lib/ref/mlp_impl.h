/* What mlp.c and mlp_model.c share beyond sive/mlp.h (not installed). */
#ifndef SIVE_MLP_IMPL_H
#define SIVE_MLP_IMPL_H

#include "internal.h"
#include "sive/mlp.h"

/* Change a workspace's BLIS thread count (1 .. 1024, checked by the caller);
 * results do not depend on it (mlp.c). */
SIVE_HIDDEN void sivei_mlp_work_set_blis_threads(sive_mlp_work *w, int blis_threads);
/* Make a workspace run 0.2's layout: forward blocks of block_rows rows and
 * the weights read in place (mlp.c; for the test that the faster layout
 * gives the same bits). */
SIVE_HIDDEN void sivei_mlp_work_plain(sive_mlp_work *w);

#endif
