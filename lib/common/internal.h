/* Internal helpers shared by the library's translation units (not installed). */
#ifndef SIVE_INTERNAL_H
#define SIVE_INTERNAL_H

/* The library implements the experimental tier too (sive/experimental.h). */
#ifndef SIVE_EXPERIMENTAL
#define SIVE_EXPERIMENTAL
#endif
#include "sive/sive.h"
#include "sive/experimental.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define SIVE_HIDDEN __attribute__((visibility("hidden")))

/* Size of every error-message buffer (per handle and per thread). */
#define SIVE_ERRMSG_LEN 512

/* Format into buf (may be NULL) and into the calling thread's last-error
 * message; returns status so callers can write `return sivei_fail(...)`.
 * sivei_vfail is defined once per library: core/error.c for libsive,
 * ref/ref_error.c (through the public sive_set_errmsg()) for libsive-ref;
 * sivei_fail (common/fail.c) calls it. */
SIVE_HIDDEN int sivei_fail(char *buf, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
SIVE_HIDDEN int sivei_vfail(char *buf, int status, const char *fmt, va_list ap);
/* Clear the calling thread's last-error message. */
SIVE_HIDDEN void sivei_clear_error(void);

/* Is size a sive_model's struct_size (0.2's, this header's, or a newer
 * header's: appended 8-byte fields keep the size a multiple of 8, and
 * SIVEI_MODEL_SIZE_MAX = 1 KiB leaves room for many)?  Garbage from an
 * uninitialised model is refused but for a few values.  Inline: both
 * libraries need it (core/model.c, ref/mlp_model.c). */
#define SIVEI_MODEL_SIZE_MAX 1024
static inline int sivei_model_size_ok(size_t size)
{
    const size_t v02 = offsetof(sive_model, destroy) + sizeof(void (*)(void *));
    return size == v02 || size == sizeof(sive_model) ||
           (size > sizeof(sive_model) && size <= SIVEI_MODEL_SIZE_MAX && size % 8 == 0);
}

/* FNV-1a's step on 8-byte little-endian words (8x fewer multiplies than
 * on bytes), then the tail bytes and the length: the content hashes
 * behind sive_model.identity (ref/dataset.c's sive_dataset_hash(),
 * ref/dln_model.c). */
static inline uint64_t sivei_hash_words(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = 0;
        for (int k = 7; k >= 0; k--)
            w = (w << 8) | p[i + (size_t)k];
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return (h ^ (uint64_t)n) * 0x100000001b3ull;
}

#endif
