/* Internal layout of the deep linear network (include/sive/dln.h). */
#ifndef SIVE_DLN_IMPL_H
#define SIVE_DLN_IMPL_H

#include "internal.h"
#include "sive/dln.h"

struct sive_dln {
    size_t layers;                         /* L                            */
    size_t width[SIVE_DLN_MAX_LAYERS + 1]; /* H0 .. HL                     */
    size_t offset[SIVE_DLN_MAX_LAYERS + 1];/* start of W_s in theta, s=1..L */
    size_t dim, rank;
    double *teacher;   /* HL x H0, row-major                               */
    double *u, *v, *sv;/* U (HL x r), V (H0 x r), singular values (r)      */
    uint64_t n;        /* examples; 0 = population mode                    */
    double noise_std;
    double *x, *y;     /* n x H0 and n x HL, row-major                     */
    uint64_t data_version; /* counts sive_dln_set_data() calls: the cache of
                              pieces at theta* (dln_model.c) is keyed by it */
    sive_dln_move move;    /* the move models made from now on supply      */
};

/* Fill q (rows x cols, row-major, cols <= rows) with orthonormal columns
 * from Gaussian draws of stream (seed, purpose). */
SIVE_HIDDEN void sivei_dln_frame(double *q, size_t rows, size_t cols,
                                 uint64_t seed, uint64_t purpose);

/* Per-example pieces at a fixed theta, for the gradient control variates'
 * batch gradient at theta* (lib/ref/dln_model.c caches them): a row of
 * sivei_dln_piece_width(m) doubles per example, the activations A_1 ..
 * A_{L-1}, the unscaled deltas D_1 .. D_L of its loss and the loss.
 * Data mode only; arguments are not checked. */
SIVE_HIDDEN size_t sivei_dln_piece_width(const sive_dln *m);
/* Rows idx[0 .. n-1] of cache at theta. */
SIVE_HIDDEN void sivei_dln_pieces(const sive_dln *m, sive_dln_work *w, const double *theta,
                                  const uint64_t *idx, size_t n, double *cache);
/* The mean loss over idx[0 .. n-1] and its gradient at the pieces' theta;
 * buf: scratch of the workspace's block rows x piece width doubles. */
SIVE_HIDDEN void sivei_dln_pieces_grad(const sive_dln *m, sive_dln_work *w,
                                       const double *cache, const uint64_t *idx, size_t n,
                                       double *buf, double *grad, double *loss);
/* Block rows of a workspace. */
SIVE_HIDDEN size_t sivei_dln_work_rows(const sive_dln_work *w);

/* The Gibbs layer move (dln_gibbs.c; population mode, arguments not
 * checked): a layer drawn from info's key, redrawn exactly from its
 * conditional under the tethered law of info; out = theta elsewhere.
 * scratch: sivei_dln_gibbs_scratch(m) doubles. */
SIVE_HIDDEN size_t sivei_dln_gibbs_scratch(const sive_dln *m);
SIVE_HIDDEN void sivei_dln_gibbs(const sive_dln *m, double *scratch, const sive_move_info *info,
                                 const double *theta, double *out, double *log_ratio);

#endif
