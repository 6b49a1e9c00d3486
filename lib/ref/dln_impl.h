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
};

/* Fill q (rows x cols, row-major, cols <= rows) with orthonormal columns
 * from Gaussian draws of stream (seed, purpose). */
SIVE_HIDDEN void sivei_dln_frame(double *q, size_t rows, size_t cols,
                                 uint64_t seed, uint64_t purpose);

#endif
