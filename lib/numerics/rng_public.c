/* Public face of the in-tree PCG32.  The state is copied in and out rather
 * than cast, so the two struct types never alias. */
#include "rng.h"

static sivei_pcg32 load(const sive_rng *g) { return (sivei_pcg32){g->state, g->inc}; }

static void store(sive_rng *g, const sivei_pcg32 *s)
{
    g->state = s->state;
    g->inc = s->inc;
}

void sive_rng_seed(sive_rng *g, uint64_t seed, uint64_t stream)
{
    if (!g)
        return;
    sivei_pcg32 s;
    sivei_pcg32_seed(&s, sivei_splitmix64(seed), stream);
    store(g, &s);
}

uint32_t sive_rng_next(sive_rng *g)
{
    if (!g)
        return 0;
    sivei_pcg32 s = load(g);
    uint32_t v = sivei_pcg32_next(&s);
    store(g, &s);
    return v;
}

double sive_rng_uniform(sive_rng *g)
{
    if (!g)
        return 0.0;
    sivei_pcg32 s = load(g);
    double v = sivei_pcg32_uniform(&s);
    store(g, &s);
    return v;
}

void sive_rng_normals(sive_rng *g, double *out, size_t n)
{
    if (!g || !out)
        return;
    sivei_pcg32 s = load(g);
    sivei_pcg32_normals(&s, out, n);
    store(g, &s);
}

void sive_rng_stream(sive_rng *g, uint64_t seed, uint64_t chain, uint64_t purpose)
{
    if (!g)
        return;
    sivei_pcg32 s;
    sivei_pcg32_stream(&s, seed, chain, purpose);
    store(g, &s);
}

uint64_t sive_rng_below(sive_rng *g, uint64_t bound)
{
    if (!g || bound == 0)
        return 0;
    sivei_pcg32 s = load(g);
    uint64_t v = sivei_pcg32_below(&s, bound);
    store(g, &s);
    return v;
}
