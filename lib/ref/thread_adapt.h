/* Choosing, block by block, between one BLIS thread and several for one
 * worker's gradient calls (lib/ref/thread_adapt.c; used by lib/ref/mlp.c
 * and lib/ref/mlp_model.c).  Not installed. */
#ifndef SIVE_THREAD_ADAPT_H
#define SIVE_THREAD_ADAPT_H

#include "internal.h"

#define SIVEI_TRY_COST 0.02 /* tries of the slower setting cost this share */
#define SIVEI_TRY_FIRST 4   /* fewest blocks between tries */
#define SIVEI_TRY_MOST 1024 /* most blocks between tries */
#define SIVEI_TRY_BUSY 64   /* blocks until the load is looked at again */

/* Setting 0 is one BLIS thread, setting 1 the model's blis_threads.
 * Zero-initialise (then set busy and threads); only its owner thread
 * touches it. */
typedef struct sivei_adapt {
    double t[2]; /* seconds per row: smoothed for the setting in use, the
                    last try for the other */
    int seen[2]; /* blocks run with each */
    int cur;     /* setting in use */
    int trying;  /* this block tries the other setting */
    long wait;   /* blocks until the next try */
    int threads; /* setting 1's BLIS thread count */
    /* nonzero: other processes leave no room for setting 1 now, so it is
     * not tried (NULL: always tried) */
    int (*busy)(const struct sivei_adapt *a);
} sivei_adapt;

/* The setting for the next block: one thread first (the safe one), then
 * blis_threads, afterwards the faster, with a try of the other now and
 * then; blis_threads is measured or tried only while busy() says no. */
SIVE_HIDDEN int sivei_adapt_next(sivei_adapt *a);

/* Record the seconds per row that the block run with `set` took. */
SIVE_HIDDEN void sivei_adapt_record(sivei_adapt *a, int set, double per_row);

/* busy() from the load average: 1 when the runnable processes (ours
 * included) leave fewer than a->threads - 1 cores free. */
SIVE_HIDDEN int sivei_adapt_load_busy(const sivei_adapt *a);

#endif
