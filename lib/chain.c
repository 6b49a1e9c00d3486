/* The tethered Langevin chain (DESIGN.md §2) for float32 and float64
 * parameters, and index sampling for evaluation and gradient batches. */
#include "probe_impl.h"
#include "stats.h"

#include <math.h>
#include <string.h>

/* Fill idx[0..total-1] with batches of `batch` indices in [0, n).  With
 * perm == NULL: uniform with replacement.  Otherwise each batch holds
 * distinct indices: a partial Fisher-Yates shuffle of the persistent
 * permutation perm (any permutation is a valid starting point, so it is
 * never reset between batches). */
static void sive_draw_indices(sive_pcg32 *g, uint64_t *idx, size_t total,
                              size_t batch, uint64_t n, uint64_t *perm)
{
    if (!perm) {
        for (size_t j = 0; j < total; j++)
            idx[j] = sive_pcg32_below(g, n);
        return;
    }
    for (size_t b0 = 0; b0 < total; b0 += batch) {
        for (size_t j = 0; j < batch; j++) {
            uint64_t k = j + sive_pcg32_below(g, n - j);
            uint64_t tmp = perm[j];
            perm[j] = perm[k];
            perm[k] = tmp;
            idx[b0 + j] = perm[j];
        }
    }
}

#define REAL float
#define SFX f32
#define NORMALS sive_pcg32_normals_f32
#include "chain_impl.h"
#undef REAL
#undef SFX
#undef NORMALS

#define REAL double
#define SFX f64
#define NORMALS sive_pcg32_normals
#include "chain_impl.h"
#undef REAL
#undef SFX
#undef NORMALS
