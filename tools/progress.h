/* A progress bar for probe runs, drawn on stderr only.
 *
 * One progress object follows one probe run (all its chains).  Its callback
 * is registered with sive_probe_set_progress() and is called concurrently by
 * the chain threads, so the state sits behind a mutex.  The bar is drawn only
 * when stderr is a terminal and the caller did not ask for quiet output, at
 * most ~10 times a second; it never writes to stdout.
 *
 * The callback is registered even when nothing is drawn: it is also how an
 * interrupt (Ctrl-C, SIGINT) stops a run cleanly, by returning non-zero
 * (the run then ends with SIVE_E_CANCELLED). */
#ifndef SIVE_TOOLS_PROGRESS_H
#define SIVE_TOOLS_PROGRESS_H

#include <stdint.h>

typedef struct progress progress;

/* show: draw the bar (the caller passes !quiet; the terminal test is done
 * here) and make the duration estimate below.  NULL when out of memory
 * (runs then simply have no bar). */
progress *progress_new(int show);
void progress_free(progress *pg);

/* Long runs tell the user up front.  The object follows `runs` runs of the
 * same cost (default 1), e.g. one per checkpoint.  Once per object, on
 * stderr (terminal or not), when the rest of the work will take longer
 * than a minute, it prints "WHO: this will take about 4 min more (...)",
 * saying how it was timed: from the chain steps done in the first 2 s of
 * the first run (nothing extra is run), or, when the first run is shorter
 * than that, from its duration times the runs left.  what names the runs
 * ("checkpoints"). */
void progress_plan(progress *pg, const char *who, const char *what, int64_t runs);

/* Start following a run of `running` of `chains` chains (those of a
 * --chain-range; chain ids below chains), `steps` steps each; label is
 * printed before the bar (copied, may be NULL). */
void progress_start(progress *pg, const char *label, int32_t chains, int32_t running,
                    int64_t steps);
/* Erase the bar (the run ended); keeps the terminal line clean for what
 * follows. */
void progress_done(progress *pg);

/* The sive_progress_fn to register, with the progress object as user. */
int progress_cb(int32_t chain, int64_t step, int64_t total, void *user);

/* Install a SIGINT handler that makes every progress callback ask the run
 * to stop; progress_interrupted() tells whether it fired. */
void progress_catch_sigint(void);
int progress_interrupted(void);

#endif
