/* Per-example pieces of a reference model at theta* for gradient control
 * variates (SIVE_OPT_GRAD_CONTROL_VARIATE; docs/performance.md § 11): the
 * library's pass at theta* (chain and step -1) calls the gradient on every
 * example once; the model keeps what each example's gradient is made of
 * there (activations, deltas), and later gradient calls at exactly that
 * theta (bitwise) on a batch sum the cached pieces instead of running a
 * forward and a backward pass.  Used by lib/ref/dln_model.c and
 * lib/ref/mlp_model.c.
 *
 * The rows are keyed by theta and a tag, the model's data version (a
 * model whose data can change between runs at the same theta* passes a
 * new tag after every change, so that stale rows are never used).
 *
 * Thread safety: fills (the pass) take the write lock, and a pass at
 * another theta or tag starts the cache over; readers hold the read lock
 * from sivei_star_acquire() to sivei_star_release(). */
#ifndef SIVE_STAR_CACHE_H
#define SIVE_STAR_CACHE_H

#include "internal.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Largest cache (bytes); above it the gradient at theta* is computed like
 * any other. */
#define SIVEI_STAR_CACHE_MAX ((size_t)1 << 30)

typedef struct sivei_star_cache {
    pthread_rwlock_t lock;
    size_t theta_bytes, row_bytes;
    uint64_t n;
    void *theta;    /* the theta* of the rows                       */
    uint64_t tag;   /* ... and the data version they were made from */
    void *rows;     /* n x row_bytes                                */
    uint8_t *have;  /* rows filled                                  */
    uint64_t filled;/* UINT64_MAX: no theta* yet                    */
    int off;        /* too large, or out of memory: never used      */
} sivei_star_cache;

/* Rows of pieces for examples idx[0 .. k-1] at theta: row idx[i] of rows. */
typedef void (*sivei_star_fill_fn)(void *ctx, const uint64_t *idx, size_t k, void *rows);

/* Lazy: memory is taken by the first fill.  Non-zero when the lock
 * cannot be made. */
SIVE_HIDDEN int sivei_star_init(sivei_star_cache *c, size_t theta_bytes, uint64_t n,
                                size_t row_bytes);
SIVE_HIDDEN void sivei_star_free(sivei_star_cache *c);
/* In the pass at theta: fill the batch's rows (starting over at a new
 * theta or tag) unless memory is short. */
SIVE_HIDDEN void sivei_star_fill(sivei_star_cache *c, uint64_t tag, const void *theta,
                                 const uint64_t *idx, size_t k, sivei_star_fill_fn fill,
                                 void *ctx);
/* The rows when the cache is complete at exactly theta and tag and every
 * index is below n (read lock held until sivei_star_release()), else NULL
 * (no lock held: compute plainly). */
SIVE_HIDDEN const void *sivei_star_acquire(sivei_star_cache *c, uint64_t tag,
                                           const void *theta, const uint64_t *idx, size_t k);
SIVE_HIDDEN void sivei_star_release(sivei_star_cache *c);

#endif
