/* The MLP's first layer on BLIS's skx micro-kernel, the examples' bytes
 * packed straight into its panels (lib/ref/mlp_skx.c).  Same bits as
 * BLIS's sgemm with one thread.  Not installed. */
#ifndef SIVE_MLP_SKX_H
#define SIVE_MLP_SKX_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sivei_skx sivei_skx;

/* For a layer of `in` inputs and h1 outputs; NULL when BLIS's kernel is
 * not skx's 32 x 12 one, the CPU lacks AVX-512 VBMI, or out of memory
 * (then the caller uses BLIS's sgemm). */
SIVE_HIDDEN sivei_skx *sivei_skx_new(size_t in, size_t h1);
SIVE_HIDDEN void sivei_skx_free(sivei_skx *k);
/* Pack W1 (h1 x in, row-major) for the following sivei_skx_layer1 calls. */
SIVE_HIDDEN void sivei_skx_pack_w1(sivei_skx *k, const float *w1);
/* c[i * h1 + o] = alpha * sum_l rows[i][l] W1[o][l], i < r: BLIS's
 * sgemm of X W1^T with X the rows' bytes as floats, bit for bit. */
SIVE_HIDDEN void sivei_skx_layer1(sivei_skx *k, const uint8_t *const *rows, size_t r,
                                  float alpha, float *c);

#endif
