/* The cache of per-example pieces at theta* (lib/ref/star_cache.h). */
#include "star_cache.h"

#include <stdlib.h>
#include <string.h>

int sivei_star_init(sivei_star_cache *c, size_t theta_bytes, uint64_t n, size_t row_bytes)
{
    memset(c, 0, sizeof *c);
    c->theta_bytes = theta_bytes;
    c->row_bytes = row_bytes;
    c->n = n;
    c->filled = UINT64_MAX;
    c->off = n == 0 || row_bytes == 0 || n > SIVEI_STAR_CACHE_MAX / row_bytes;
    return pthread_rwlock_init(&c->lock, NULL);
}

void sivei_star_free(sivei_star_cache *c)
{
    pthread_rwlock_destroy(&c->lock);
    free(c->theta);
    free(c->rows);
    free(c->have);
}

void sivei_star_fill(sivei_star_cache *c, uint64_t tag, const void *theta, const uint64_t *idx,
                     size_t k, sivei_star_fill_fn fill, void *ctx)
{
    pthread_rwlock_wrlock(&c->lock);
    if (!c->off && !c->theta) {
        c->theta = malloc(c->theta_bytes);
        c->rows = malloc((size_t)c->n * c->row_bytes);
        c->have = malloc((size_t)c->n);
        c->off = !c->theta || !c->rows || !c->have;
    }
    if (!c->off && (c->filled == UINT64_MAX || c->tag != tag ||
                    memcmp(c->theta, theta, c->theta_bytes))) {
        memcpy(c->theta, theta, c->theta_bytes);
        c->tag = tag;
        memset(c->have, 0, (size_t)c->n);
        c->filled = 0;
    }
    if (!c->off && c->filled < c->n) {
        fill(ctx, idx, k, c->rows);
        for (size_t i = 0; i < k; i++)
            if (idx[i] < c->n && !c->have[idx[i]]) {
                c->have[idx[i]] = 1;
                c->filled++;
            }
    }
    pthread_rwlock_unlock(&c->lock);
}

const void *sivei_star_acquire(sivei_star_cache *c, uint64_t tag, const void *theta,
                               const uint64_t *idx, size_t k)
{
    if (!idx || k == 0)
        return NULL;
    pthread_rwlock_rdlock(&c->lock);
    int ok = !c->off && c->filled == c->n && c->tag == tag &&
             !memcmp(c->theta, theta, c->theta_bytes);
    for (size_t i = 0; ok && i < k; i++) /* else the plain path says which */
        ok = idx[i] < c->n;
    if (ok)
        return c->rows;
    pthread_rwlock_unlock(&c->lock);
    return NULL;
}

void sivei_star_release(sivei_star_cache *c) { pthread_rwlock_unlock(&c->lock); }
