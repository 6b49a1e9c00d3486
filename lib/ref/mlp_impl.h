/* What mlp.c and mlp_model.c share beyond sive/mlp.h (not installed). */
#ifndef SIVE_MLP_IMPL_H
#define SIVE_MLP_IMPL_H

#include "internal.h"
#include "sive/mlp.h"

/* Change a workspace's BLIS thread count (1 .. 1024, checked by the caller);
 * results do not depend on it (mlp.c). */
SIVE_HIDDEN void sivei_mlp_work_set_blis_threads(sive_mlp_work *w, int blis_threads);
SIVE_HIDDEN size_t sivei_mlp_work_rows(const sive_mlp_work *w);
/* Let sive_mlp_loss_grad() choose its BLIS thread count block by block
 * with a (lib/ref/thread_adapt.h; NULL: keep the workspace's); a outlives
 * the workspace's use. */
struct sivei_adapt;
SIVE_HIDDEN void sivei_mlp_work_set_adapt(sive_mlp_work *w, struct sivei_adapt *a);
/* Per-example pieces of the MLP's gradient at a fixed theta, for the
 * gradient control variates' gradient at theta* (star_cache.h): a row of
 * sivei_mlp_piece_width() floats per example (activations, deltas, the
 * loss), written at row idx[i] for idx[0 .. n-1] (indices checked like
 * sive_mlp_loss_grad()'s); and the mean loss and gradient over idx[0 ..
 * n-1] summed from them (buf: the workspace's block rows x piece width
 * floats). */
SIVE_HIDDEN size_t sivei_mlp_piece_width(const sive_mlp *m);
SIVE_HIDDEN int sivei_mlp_pieces(const sive_mlp *m, sive_mlp_work *w, const float *theta,
                                 const sive_dataset *ds, const uint64_t *idx, size_t n,
                                 float *rows);
SIVE_HIDDEN int sivei_mlp_pieces_grad(const sive_mlp *m, sive_mlp_work *w, const float *rows,
                                      const sive_dataset *ds, const uint64_t *idx, size_t n,
                                      float *buf, float *grad, double *mean_loss);
/* Make a workspace run 0.2's layout: forward blocks of block_rows rows and
 * the weights read in place (mlp.c; for the test that the faster layout
 * gives the same bits). */
SIVE_HIDDEN void sivei_mlp_work_plain(sive_mlp_work *w);

#endif
