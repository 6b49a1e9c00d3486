/* Internals of the reference MLP shared with its probe adapter (not
 * installed). */
#ifndef SIVE_MLP_INTERNAL_H
#define SIVE_MLP_INTERNAL_H

#include "internal.h"
#include "sive/mlp.h"

#include <stddef.h>
#include <stdint.h>

/* Scratch of the evaluation through distinct examples.  slot has one entry
 * per example of the data set (count), all SIVE_MLP_NO_SLOT between calls;
 * uniq and loss hold cap entries. */
#define SIVE_MLP_NO_SLOT UINT32_MAX
typedef struct sive_mlp_dedup {
    size_t count;
    size_t cap;
    uint32_t *slot;
    uint64_t *uniq;
    double *loss;
} sive_mlp_dedup;

/* Grouped evaluation like sive_mlp_group_losses(), but each distinct
 * example of idx goes through the network once: the per-example losses
 * (double) are computed for the distinct examples in ascending order and
 * the group means summed from them in the same order as
 * sive_mlp_group_losses() does.  The slot map is scanned whole on every
 * call, so use this only when the draws are a fair fraction of count.  With indices drawn with replacement from
 * a data set smaller than n_groups*group_size this removes most of the
 * work (32 768 draws from 8000 examples hold about 7870 distinct ones).
 * Needs dd->count == sive_dataset_count(ds) and dd->cap >= the number of
 * distinct indices (min(n_groups*group_size, count) always suffices).
 * Same errors as sive_mlp_group_losses(). */
SIVE_HIDDEN int sive_mlp_group_losses_unique(const sive_mlp *m, sive_mlp_work *w,
                                             const float *theta,
                                             const sive_dataset *ds,
                                             const uint64_t *idx, size_t n_groups,
                                             size_t group_size, double *group_loss,
                                             sive_mlp_dedup *dd);

#endif
