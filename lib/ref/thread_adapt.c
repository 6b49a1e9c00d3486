/* One BLIS thread or several, chosen by timing (lib/ref/thread_adapt.h; why:
 * lib/ref/mlp_model.c).  Each setting is timed once at the start; afterwards
 * the faster runs and the other is tried again after a gap sized so that
 * the tries cost at most SIVEI_TRY_COST of the run: a try of a setting
 * r times slower costs r - 1 calls, so the gap is (r - 1) / TRY_COST
 * calls (at least SIVEI_TRY_FIRST, at most SIVEI_TRY_MOST, after which a
 * change of load is noticed). */
#include "thread_adapt.h"

int sivei_adapt_next(sivei_adapt *a)
{
    a->trying = 0;
    if (!a->seen[1])
        return 1;
    if (!a->seen[0])
        return 0;
    if (--a->wait <= 0) {
        a->trying = 1;
        return !a->cur;
    }
    return a->cur;
}

static long gap_for(const sivei_adapt *a, int best)
{
    double r = a->t[!best] / (a->t[best] > 0 ? a->t[best] : 1e-300);
    double g = (r - 1.0) / SIVEI_TRY_COST;
    return g < SIVEI_TRY_FIRST ? SIVEI_TRY_FIRST
           : g > SIVEI_TRY_MOST ? SIVEI_TRY_MOST
                                : (long)g;
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
