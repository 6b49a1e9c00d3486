/* PCG32 generator, stream derivation and fast standard normals (internal). */
#ifndef SIVE_RNG_H
#define SIVE_RNG_H

#include "internal.h"
#include <stdint.h>
#include <stddef.h>

typedef struct sivei_pcg32 {
    uint64_t state;
    uint64_t inc; /* always odd */
} sivei_pcg32;

/* Reference seeding of O'Neill's pcg32_srandom_r(initstate, initseq). */
SIVE_HIDDEN void sivei_pcg32_seed(sivei_pcg32 *g, uint64_t initstate, uint64_t initseq);
/* Independent stream for (seed, chain, purpose): both PCG arguments are
 * derived with splitmix64, so streams differ in state and increment. */
SIVE_HIDDEN void sivei_pcg32_stream(sivei_pcg32 *g, uint64_t seed, uint64_t chain,
                                   uint64_t purpose);
SIVE_HIDDEN uint32_t sivei_pcg32_next(sivei_pcg32 *g);
SIVE_HIDDEN uint64_t sivei_pcg32_next64(sivei_pcg32 *g);
/* Uniform integer in [0, bound), bound >= 1, without modulo bias. */
SIVE_HIDDEN uint64_t sivei_pcg32_below(sivei_pcg32 *g, uint64_t bound);
/* Uniform double in [0, 1) with 53 random bits. */
SIVE_HIDDEN double sivei_pcg32_uniform(sivei_pcg32 *g);
/* One standard normal (ziggurat). */
SIVE_HIDDEN double sivei_pcg32_normal(sivei_pcg32 *g);
/* n standard normals into out (ziggurat; same sequence as n calls of
 * sivei_pcg32_normal). */
SIVE_HIDDEN void sivei_pcg32_normals(sivei_pcg32 *g, double *out, size_t n);
SIVE_HIDDEN void sivei_pcg32_normals_f32(sivei_pcg32 *g, float *out, size_t n);
/* splitmix64 finaliser, used for stream derivation. */
SIVE_HIDDEN uint64_t sivei_splitmix64(uint64_t x);

#endif
