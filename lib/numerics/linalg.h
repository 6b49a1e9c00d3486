/* Small dense linear algebra on row-major double matrices of a layer's
 * size (plain loops, no BLIS): a product with optional transposes and
 * one-sided (Hestenes) Jacobi.  Compiled into both libraries like common/
 * (hidden; lib/meson.build), so the core's layer-block Newton move
 * (sampler_kron.c) and the deep linear network's Gibbs move
 * (lib/ref/dln_gibbs.c) share one copy of the source. */
#ifndef SIVE_LINALG_H
#define SIVE_LINALG_H

#include "internal.h"

#include <stddef.h>

/* c (m x n) = op(a) op(b), op(a) m x k, op(b) k x n, row-major; ta/tb: a/b
 * stored transposed (a as k x m, b as n x k).  c aliases neither. */
SIVE_HIDDEN void sivei_gemm(const double *a, int ta, const double *b, int tb, double *c,
                            size_t m, size_t k, size_t n);

/* a (n x n) <- the identity. */
SIVE_HIDDEN void sivei_identity(double *a, size_t n);

/* One-sided (Hestenes) Jacobi: a (m x n) <- a V with mutually orthogonal
 * columns and v (n x n) <- V orthogonal, so a_in = a_out V^T; then
 * a_in^T a_in = V diag(|col_j|^2) V^T, an eigendecomposition of the
 * square whose eigenvalues come from column norms, without the squared
 * condition number of an eigensolver on a^T a.  Sweeps until no pair is
 * rotated (at most 60).  A pair counts as orthogonal at |a_p . a_q| <=
 * m eps |a_p| |a_q| (the rounding of the dot product itself), and a column
 * below m eps |a|_F counts as zero (a rank-deficient a leaves columns of
 * rounding noise that no rotation makes orthogonal).  Returns the sweeps
 * made. */
SIVE_HIDDEN int sivei_jacobi_cols(double *a, size_t m, size_t n, double *v);

/* |column j|^2 of a (m x n). */
SIVE_HIDDEN double sivei_col_norm2(const double *a, size_t m, size_t n, size_t j);

#endif
