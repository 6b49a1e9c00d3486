/* Choosing, call by call, between one BLIS thread and several for one kind
 * of call of one worker (lib/ref/thread_adapt.c; used by lib/ref/mlp_model.c).
 * Not installed. */
#ifndef SIVE_THREAD_ADAPT_H
#define SIVE_THREAD_ADAPT_H

#include "internal.h"

#define SIVEI_TRY_COST 0.02 /* tries of the slower setting cost this share */
#define SIVEI_TRY_FIRST 4   /* fewest calls between tries */
#define SIVEI_TRY_MOST 1024 /* most calls between tries */

/* Setting 0 is one BLIS thread, setting 1 the model's blis_threads.
 * Zero-initialise; only its owner thread touches it. */
typedef struct sivei_adapt {
    double t[2]; /* seconds per row: smoothed for the setting in use, the
                    last try for the other */
    int seen[2]; /* calls made with each */
    int cur;     /* setting in use */
    int trying;  /* this call tries the other setting */
    long wait;   /* calls until the next try */
} sivei_adapt;

/* The setting for the next call: both measured first (setting 1, then 0),
 * afterwards the faster, with a try of the other now and then. */
SIVE_HIDDEN int sivei_adapt_next(sivei_adapt *a);

/* Record the seconds per row that the call made with `set` took. */
SIVE_HIDDEN void sivei_adapt_record(sivei_adapt *a, int set, double per_row);

#endif
