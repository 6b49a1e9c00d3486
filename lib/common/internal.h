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

#define SIVE_HIDDEN __attribute__((visibility("hidden")))

/* Size of every error-message buffer (per handle and per thread). */
#define SIVE_ERRMSG_LEN 512

/* Format into buf (may be NULL) and into the calling thread's last-error
 * message; returns status so callers can write `return sivei_fail(...)`. */
SIVE_HIDDEN int sivei_fail(char *buf, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
SIVE_HIDDEN int sivei_vfail(char *buf, int status, const char *fmt, va_list ap);
/* Clear the calling thread's last-error message. */
SIVE_HIDDEN void sivei_clear_error(void);

/* model.c: is size a sive_model's struct_size (0.2's, this header's, or a
 * newer header's: a multiple of 8 up to SIVEI_MODEL_SIZE_MAX)?  Garbage
 * from an uninitialised model is refused but for a few values. */
#define SIVEI_MODEL_SIZE_MAX 1024
SIVE_HIDDEN int sivei_model_size_ok(size_t size);
/* Change a workspace's BLIS thread count (1 .. 1024, checked by the caller);
 * results do not depend on it (lib/ref/mlp.c). */
typedef struct sive_mlp_work sive_mlp_work;
SIVE_HIDDEN void sivei_mlp_work_set_blis_threads(sive_mlp_work *w, int blis_threads);
/* Make a workspace run 0.2's layout: forward blocks of block_rows rows and
 * the weights read in place (lib/ref/mlp.c; for the test that the faster
 * layout gives the same bits). */
SIVE_HIDDEN void sivei_mlp_work_plain(sive_mlp_work *w);

#endif
