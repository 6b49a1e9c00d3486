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

/* The partial products of the layers around layer s (dln_gibbs.c; t:
 * scratch of H_L (H_0) x the widest layer doubles): a <- W_L ... W_{s+1}
 * (H_L x H_s; I when s = L), b <- (W_{s-1} ... W_1)^T (H_0 x H_{s-1}; I
 * when s = 1), each of up to H_L (H_0) x the widest layer doubles. */
SIVE_HIDDEN void sivei_dln_suffix(const sive_dln *m, const double *th, size_t s, double *a,
                                  double *t);
SIVE_HIDDEN void sivei_dln_prefix_t(const sive_dln *m, const double *th, size_t s, double *b,
                                    double *t);
/* The widest layer, H_0 .. H_L. */
SIVE_HIDDEN size_t sivei_dln_max_width(const sive_dln *m);

/* The layer-block Newton move's pieces (dln_kron.c): the blocks (one per
 * layer, W_s at its offset, H_s x H_{s-1}, roots of H_L and H_0 rows), a
 * square root R (H_0 x H_0, R^T R = X^T X / n) of the examples' input
 * second moment (data mode; scratch: n H_0 + H_0^2 doubles, returns 1 when
 * malloc fails), and the exact Gauss-Newton roots of layer s (0-based
 * block s - 1) at theta: F_G = W_L ... W_{s+1}, F_A = (W_{s-1} ... W_1)^T
 * (population) or R (W_{s-1} ... W_1)^T (data, r = R), so that the mean
 * loss's Hessian in W_s is F_G^T F_G (x) F_A^T F_A exactly.  scratch:
 * sivei_dln_kron_scratch(m) doubles. */
SIVE_HIDDEN void sivei_dln_blocks(const sive_dln *m, sive_block *blocks);
SIVE_HIDDEN int sivei_dln_input_root(const sive_dln *m, double *r);
SIVE_HIDDEN size_t sivei_dln_kron_scratch(const sive_dln *m);
SIVE_HIDDEN void sivei_dln_kron_roots(const sive_dln *m, const double *r, double *scratch,
                                      size_t s, const double *theta, double *g_root,
                                      double *a_root);

#endif
