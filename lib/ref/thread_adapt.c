/* One BLIS thread or several, chosen by timing (lib/ref/thread_adapt.h; why:
 * lib/ref/mlp_model.c).  One thread is timed first, then the other
 * setting; afterwards the faster runs and the other is tried again after
 * a gap sized so that the tries cost at most SIVEI_TRY_COST of the run: a
 * try of a setting r times slower costs r - 1 blocks, so the gap is
 * (r - 1) / TRY_COST blocks (at least SIVEI_TRY_FIRST, at most
 * SIVEI_TRY_MOST, after which a change of load is noticed).  The grain is
 * a block of rows (lib/ref/mlp.c), so a try costs a block, not a call.
 * Several threads are measured or tried only while the load average
 * leaves them cores: on a busy machine each product waits at its barrier
 * for a descheduled thread, and one such try cost seconds. */
#define _DEFAULT_SOURCE /* getloadavg */
#include "thread_adapt.h"

#include <stdlib.h>
#include <unistd.h>

static long gap_for(const sivei_adapt *a, int best)
{
    double r = a->t[!best] / (a->t[best] > 0 ? a->t[best] : 1e-300);
    double g = (r - 1.0) / SIVEI_TRY_COST;
    return g < SIVEI_TRY_FIRST ? SIVEI_TRY_FIRST
           : g > SIVEI_TRY_MOST ? SIVEI_TRY_MOST
                                : (long)g;
}

int sivei_adapt_next(sivei_adapt *a)
{
    a->trying = 0;
    if (!a->seen[0])
        return 0;
    if (a->seen[1] && --a->wait > 0)
        return a->cur;
    if (!a->seen[1] && a->wait > 0) { /* waiting for the load to fall */
        a->wait--;
        return 0;
    }
    const int other = a->seen[1] ? !a->cur : 1;
    if (other == 1 && a->busy && a->busy(a)) {
        a->wait = a->seen[1] ? gap_for(a, a->cur) : SIVEI_TRY_BUSY;
        return a->cur;
    }
    a->trying = a->seen[1] != 0;
    return other;
}

void sivei_adapt_record(sivei_adapt *a, int set, double per_row)
{
    if (a->trying || !a->seen[set])
        a->t[set] = per_row;
    else
        a->t[set] = 0.75 * a->t[set] + 0.25 * per_row;
    a->seen[set]++;
    if (!a->seen[0] || !a->seen[1])
        return;
    int best = a->t[0] < a->t[1] ? 0 : 1;
    if (a->trying || a->wait <= 0 || best != a->cur)
        a->wait = gap_for(a, best);
    a->cur = best;
}

int sivei_adapt_load_busy(const sivei_adapt *a)
{
    double load;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (getloadavg(&load, 1) != 1 || cpus < 1)
        return 0;
    return load + (double)(a->threads - 1) > (double)cpus + 0.5;
}
