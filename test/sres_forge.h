/* Result files taken apart and put back together, as a forger would (the
 * FNV-1a hash is a checksum anyone can recompute): the tests that check
 * forged fields are refused and that files of older formats still load
 * share these.  Layout: lib/io/result_file.c and docs/scale.md. */
#ifndef SIVE_TEST_SRES_FORGE_H
#define SIVE_TEST_SRES_FORGE_H

#include <sive/sive.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { SRES_OFF_VERSION = 8, SRES_OFF_PLEN = 16, SRES_OFF_PAYLOAD = 24 };

static inline uint64_t sres_get64(const unsigned char *p, size_t off)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[off + (size_t)i];
    return v;
}

static inline void sres_put64(unsigned char *p, size_t off, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[off + (size_t)i] = (unsigned char)(v >> (8 * i));
}

/* Fix the payload length of an n-byte file and recompute its hash. */
static inline void sres_rehash(unsigned char *p, size_t n)
{
    sres_put64(p, SRES_OFF_PLEN, n - 32);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n - 8; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    sres_put64(p, n - 8, h);
}

/* Format 4: the offset of option id's record (its key word; the value
 * follows), or 0 when the file holds none. */
static inline size_t sres_record(const unsigned char *p, uint32_t id)
{
    const uint64_t n = sres_get64(p, SRES_OFF_PAYLOAD);
    for (uint64_t i = 0; i < n; i++) {
        size_t at = SRES_OFF_PAYLOAD + 8 + 16 * (size_t)i;
        if ((uint32_t)sres_get64(p, at) == id)
            return at;
    }
    return 0;
}

/* Format 4: the offset of the value of option id (0: no record). */
static inline size_t sres_opt(const unsigned char *p, uint32_t id)
{
    size_t at = sres_record(p, id);
    return at ? at + 8 : 0;
}

/* Format 4: where the fields after the options start (h, eta, begin, end,
 * dtype, dim, n_examples, theta_hash, identity, status, callback code,
 * error text length: sres_head(p) + 8 * k). */
static inline size_t sres_head(const unsigned char *p)
{
    return SRES_OFF_PAYLOAD + 8 + 16 * (size_t)sres_get64(p, SRES_OFF_PAYLOAD);
}

enum { SRES_H = 0, SRES_BEGIN = 2, SRES_END = 3, SRES_DTYPE = 4, SRES_IDENTITY = 8,
       SRES_STATUS = 9, SRES_ERRLEN = 11 };

/* Format 4 on: where the length word of the caller's note starts (after
 * the error text); format 5 has the run notes' length word after the
 * note's bytes (sres_run_notes). */
static inline size_t sres_note(const unsigned char *p)
{
    const size_t at = sres_head(p) + 8 * (size_t)SRES_ERRLEN;
    return at + 8 + (size_t)sres_get64(p, at);
}

static inline size_t sres_run_notes(const unsigned char *p)
{
    const size_t at = sres_note(p);
    return at + 8 + (size_t)sres_get64(p, at);
}

/* Where the first chain record starts. */
static inline size_t sres_chains(const unsigned char *p)
{
    size_t at = sres_note(p);
    at += 8 + (size_t)sres_get64(p, at);
    if (sres_get64(p, SRES_OFF_VERSION) >= 5)
        at += 8 + (size_t)sres_get64(p, at);
    return at;
}

/* A format-5 file of n bytes rewritten in place as format 4 (without the
 * run notes), the hash recomputed; returns the new length. */
static inline size_t sres_to_v4(unsigned char *p, size_t n)
{
    if (sres_get64(p, SRES_OFF_VERSION) < 5)
        return n;
    const size_t at = sres_run_notes(p), k = 8 + (size_t)sres_get64(p, at);
    memmove(p + at, p + at + k, n - at - k);
    n -= k;
    sres_put64(p, SRES_OFF_VERSION, 4);
    sres_rehash(p, n);
    return n;
}

/* A format-4 (or 5: sres_to_v4 first) file of n bytes rewritten in place as format 3 (options by
 * position: 6 doubles, the radius mode, 14 integers), the hash recomputed;
 * returns the new length.  Every option of format 3 must have a record. */
static inline size_t sres_to_v3(unsigned char *p, size_t n)
{
    static const uint32_t dbl[] = {SIVE_OPT_T, SIVE_OPT_BASE_LR, SIVE_OPT_H,
                                   SIVE_OPT_C_H, SIVE_OPT_BURN_IN, SIVE_OPT_ANCHOR};
    static const uint32_t ints[] = {
        SIVE_OPT_STEPS, SIVE_OPT_GROUPS, SIVE_OPT_EVAL_BATCH, SIVE_OPT_GRAD_BATCH,
        SIVE_OPT_CHAINS, SIVE_OPT_THREADS, SIVE_OPT_REPLACEMENT, SIVE_OPT_EVAL_STRIDE,
        SIVE_OPT_CHAIN_BEGIN, SIVE_OPT_CHAIN_END, SIVE_OPT_SEED, SIVE_OPT_CONTROL_VARIATE,
        SIVE_OPT_GRAD_CONTROL_VARIATE, SIVE_OPT_PRECONDITION};
    n = sres_to_v4(p, n);
    unsigned char opts[21 * 8];
    size_t k = 0;
    for (size_t i = 0; i < 6; i++, k += 8)
        sres_put64(opts, k, sres_get64(p, sres_opt(p, dbl[i])));
    uint64_t hbits = sres_get64(p, sres_opt(p, SIVE_OPT_H));
    double h;
    memcpy(&h, &hbits, sizeof h);
    sres_put64(opts, k, !isnan(h));
    k += 8;
    for (size_t i = 0; i < 14; i++, k += 8)
        sres_put64(opts, k, sres_get64(p, sres_opt(p, ints[i])));
    const size_t head = sres_head(p), len = n - (head - SRES_OFF_PAYLOAD) + k;
    memmove(p + SRES_OFF_PAYLOAD + k, p + head, n - head);
    memcpy(p + SRES_OFF_PAYLOAD, opts, k);
    sres_put64(p, SRES_OFF_VERSION, 3);
    sres_rehash(p, len);
    return len;
}

#endif
